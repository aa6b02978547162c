"""RESULT builders: the RESULT object (GEN-2..GEN-8) in both verdict vocabularies.

These are pure functions that return fields; `RunStore.update_result(**fields)` writes them.
A field whose value is None is removed from RESULT (e.g. no `verdict` before the final update in
the direction+confidence vocabulary).

- direction_confidence (GS1, TriMuon): `verdict` only in the final update; a run whose effect was
  never measured ends `status: failed`, no verdict, `outcome_reason: incomplete_execution`.
- three_way (self-generated): the final update carries `verdict` (inconclusive when the effect was
  never measured) and has no confidence/effect/margin/ci/seeds/grid_edge/reasoning.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from experiment.contract.verdict import GateVerdict
from experiment.contract.plan import ExecutionPlan

def adaptation_batch_hash(batch_ids: list[Any]) -> str:
    """sha256(json.dumps(adaptation_batch_ids)) with default separators (ADAPT-1)."""
    return hashlib.sha256(json.dumps(batch_ids).encode()).hexdigest()


THREE_WAY_ABSENT_FIELDS = ("confidence", "effect", "margin", "ci", "seeds", "grid_edge", "reasoning")
# The words RESULT's fields may take (GEN-2, GEN-3, GEN-4, C-2)
RESULT_STATUSES = ("running", "succeeded", "failed")
DIRECTION_VERDICTS = ("supported", "refuted")
THREE_WAY_VERDICTS = ("supported", "refuted", "inconclusive")
THREE_WAY_REASONS = ("supported", "refuted", "tie", "mixed_criteria", "insufficient_evidence", "incomplete_execution")
# The contract's deviation fields, then the settings outside them a rehearsal changes, each named for what changed
# (experiment.contract.rehearsal.deviation_field; project reading, issue 45).
CONTRACT_DEVIATION_FIELDS = ("model", "objective", "effective_batch", "steps", "dataset", "evaluator", "endpoint")
DEVIATION_FIELDS = CONTRACT_DEVIATION_FIELDS + ("learning_rate", "lora_rank", "max_seq_len", "rollout", "budget",
                                                "tolerance")


def initial_result(plan: ExecutionPlan) -> dict[str, Any]:
    """RESULT at run creation: running, nothing measured, no verdict."""
    return {
        "status": "running",
        "summary": f"Run started for '{plan.spec_title}'; no comparison has been measured yet.",
        "metrics": {"arms": {}},
        "completed_arms": [],
        "deviations": [],
        "original_hypothesis_tested": True,
        "evidence": {"version": 1, "status": "complete", "files": [], "checkpoints": [], "per_arm_metrics": {}},
    }


def changed_experiment_limit(result: dict[str, Any]) -> list[str]:
    """A direction+confidence verdict on a changed experiment is weak, with the limit named in reasoning
    (contract C-4: the verdict judges the changed experiment); [] when the run tests the spec's hypothesis."""
    if result.get("original_hypothesis_tested") is False:
        return ["the run tested a changed experiment, not the spec's hypothesis (original_hypothesis_tested false; "
                "tested_instead says what ran)"]
    return []


def model_deviation(original: str, effective: str, reason: str) -> dict[str, str]:
    return {"field": "model", "original": original, "effective": effective, "reason": reason}


def fork_deviation(plan: ExecutionPlan, service_kind: str) -> dict[str, str] | None:
    """The `model` deviation of a run whose plan routes arms to a forked service while no fork is deployed
    (the embedded backend, started by the run or served on its own for a rehearsal, implements every
    optimizer family itself); None when nothing is forked or a service URL (the fork) is the target."""
    forked = [arm.name for arm in plan.trained_arms if arm.service == "fork"]
    if not forked or (service_kind != "embedded" and not plan.rehearsal):
        return None
    return {"field": "model",
            "original": f"arms {', '.join(forked)} on a deployed fork of the service (the spec's forked optimizer path)",
            "effective": "no fork deployed: the embedded backend's own implementation of every arm's optimizer family, "
                         "one server",
            "reason": "the fork named in the hypothesis is not deployed for this run, so the run measures the embedded "
                      "backend's implementation of the method, not the fork's"}


def intake_update(plan: ExecutionPlan, served_model: str, deviations: list[dict[str, str]]) -> dict[str, Any]:
    """The `status: running` update of spec intake: deviations recorded before any training."""
    summary = f"Running '{plan.spec_title}' on {served_model}"
    if any(d["field"] == "model" and d["effective"] == served_model for d in deviations):
        summary += f" instead of {plan.base_model}, which the service does not serve"
    summary += "."
    if plan.spec_revision:
        summary += f" Spec revision {plan.spec_revision['path']} supplies {', '.join(plan.spec_revision['supplied'])}."
    return {"status": "running", "summary": summary, "deviations": deviations}


def gate_failure_update(plan: ExecutionPlan, verdict: GateVerdict,
                        deviations: list[dict[str, str]] = ()) -> dict[str, Any]:
    """Final fields for a run stopped by a failed gate (the effect was never measured).

    A substituted model (a `model` deviation) stays named in `summary`, as the contract asks."""
    why = "; ".join(verdict.reasons) or "no reason recorded"
    next_step = verdict.next_diagnostic or "inspect the gate's events and evidence"
    substitute = next((d for d in deviations if d.get("field") == "model"), None)
    on_model = f" on {substitute['effective']} instead of {substitute['original']}" if substitute else ""
    summary = f"The run{on_model} stopped at the {verdict.gate} gate before the comparison was measured ({why})."
    if plan.vocabulary == "three_way":
        return {
            "status": "failed",
            "summary": f"{summary} Cheapest next diagnostic: {next_step}.",
            "verdict": "inconclusive",
            "outcome_reason": "incomplete_execution",
            **{field: None for field in THREE_WAY_ABSENT_FIELDS},
        }
    return {
        "status": "failed",
        "summary": summary + " No verdict is reported.",
        "verdict": None,
        "confidence": None,
        "outcome_reason": "incomplete_execution",
        "reasoning": (
            f"Gate {verdict.gate} failed: {why}. The effect was never measured, so there is no verdict. "
            f"Cheapest next diagnostic: {next_step}."
        ),
    }


def interruption_update(plan: ExecutionPlan, reason: str, at: str) -> dict[str, Any]:
    """RESULT fields of a run stopped outside any gate's verdict (a signal, a crash of the machinery):
    failed, no verdict, and an `interruption` record that says why; like a capacity block, it is
    unfinished work that a re-run of the same spec resumes (RunStore.claim)."""
    update: dict[str, Any] = {
        "status": "failed", "outcome_reason": "incomplete_execution",
        "interruption": {"reason": reason, "at": at, "resumable": True},
        "summary": f"The run stopped before its verdict ({reason}); re-running the same command resumes it from "
                   "its passed gates and saved arm steps."}
    if plan.vocabulary == "three_way":
        update.update(verdict="inconclusive", **{field: None for field in THREE_WAY_ABSENT_FIELDS})
    else:
        update.update(verdict=None, confidence=None,
                      reasoning="The run was stopped before the comparison was measured; completed gates and arm "
                                "checkpoints stay in the store and a re-run of the same spec resumes from them.")
    return update


def resumed_update() -> dict[str, Any]:
    """RESULT fields of a run a re-run resumes (after a capacity block or an interruption): running again, and none
    of what the stop posted as final (its verdict, outcome_reason and reasoning, the stop records). A stop's
    `inconclusive` left in a running record fails the run's own check at the decision (vocabulary.verdict_timing:
    a verdict only in the final update), so a resumed run would post validation failed for its crashed attempt."""
    return {"status": "running", "verdict": None, "outcome_reason": None, "reasoning": None, "capacity_block": None,
            "capacity_wait": None, "interruption": None}


def gate_failure_message(verdict: GateVerdict) -> str:
    """One line for logs and the Failed state's message."""
    return f"gate {verdict.gate} failed: {'; '.join(verdict.reasons) or 'no reason recorded'}"


def capacity_block_update(plan: ExecutionPlan, gate: str, block: dict[str, Any], waited_seconds: float,
                          steps_completed: int) -> dict[str, Any]:
    """RESULT fields of a run that capacity stopped during `gate` (CAP-1): no verdict, why, and
    the capacity_block record (the wait it ends is no longer posted: the events keep its history); the vocabulary
    decides how the absent verdict is spelled."""
    update: dict[str, Any] = {
        "capacity_wait": None, "status": "failed", "outcome_reason": "incomplete_execution", "capacity_block": block,
        "summary": f"The service refused capacity during {gate} for {waited_seconds:.0f} s after "
                   f"{steps_completed} comparison steps; the run stopped without a verdict."}
    if plan.vocabulary == "three_way":
        update.update(verdict="inconclusive", **{field: None for field in THREE_WAY_ABSENT_FIELDS})
    else:
        update.update(verdict=None, confidence=None,
                      reasoning="Capacity stopped the run before the comparison was measured; completed gates and "
                                "arm checkpoints stay in the store and a re-run of the same spec resumes from them.")
    return update
