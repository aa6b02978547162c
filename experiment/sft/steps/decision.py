"""SFT step of gate `decision`: the best-LR comparison against the plan's thresholds, then the verdict.

A spec without a decision_rule posts no decision object; the plan file's `verdict_rule` (method
best_lr_threshold, fixed before training) says how the prose success criterion is measured. A spec with a
decision_rule (paired_hoeffding on per-conversation held-out NLL) gets the contract's decision object
(`paired_decision`).
The record is validated before the verdict; the step returns the final fields (the verdict) to the gate, which
grades the record and posts them (experiment.gates.decision.decided).
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any, Callable

from experiment.contract.result import THREE_WAY_ABSENT_FIELDS, changed_experiment_limit
from experiment.contract.run_layout import evidence_path
from experiment.contract.verdict import GateVerdict
from experiment.run.context import RunContext
from experiment.sft.adaptation import pair_mismatches
from experiment.sft.runs import service_routing, sft_runs
from experiment.stats.decision import (OBSERVATIONS_FILE_NAME, best_lr_threshold, decision_record, decision_summary,
                                       observations_jsonl_bytes)
from experiment.stats.evaluation import observations_from_predictions

# (run directory) -> RESULT.validation: the grader's run-dir checks (experiment.grading.run_dir), handed down by the gate
RunDirValidator = Callable[[Path], dict[str, Any]]


def run(ctx: RunContext, validate: RunDirValidator) -> tuple[GateVerdict, dict[str, Any] | None]:
    """The verdict of a spec WITHOUT a decision_rule (the TriMuon spec): no decision object
    (DEC-1); the verdict follows the effect
    against the margin (GEN-3, direction+confidence; DEC-8 best_lr_threshold): "supported" when every criterion of the
    success criterion is met, "refuted" otherwise; "strong" confidence only when an interval or at
    least two seeds settle the margin, so one seed and point estimates keep it "weak". How the
    prose criterion is measured (selection, metrics, margins) is the plan file's `verdict_rule`,
    fixed before training. Returns the gate's verdict and the final RESULT fields the gate grades and posts (None
    where the step failed before a verdict).

    Long because: the verdict's record is assembled field by field in the order the contract lists it; splitting it
    would scatter one record.
    """
    if ctx.spec.decision_rule is not None:
        return paired_decision(ctx, validate)
    rule = ctx.spec.section("verdict_rule") or None  # the plan file's rule (no typed field)
    if not rule or rule.get("method") != "best_lr_threshold":
        return GateVerdict(gate="decision", status="failed",
                           reasons=[f"no verdict_rule with method best_lr_threshold in the plan file (got {rule!r})"]), None
    runs = sft_runs(ctx)
    result = ctx.store.read_result()
    per_arm = result.get("metrics", {}).get("arms", {})
    aggregation = ctx.plan.eval.get("aggregation") or "token_mean"
    nll_key = f"heldout_nll_{aggregation}"
    missing = [run.name for run in runs if nll_key not in per_arm.get(run.arm, {}).get("runs", {}).get(run.label, {})]
    if missing:
        return GateVerdict(gate="decision", status="failed", reasons=[f"no held-out NLL for {missing}"]), None

    # one value per training run and criterion metric (the rule names the held-out NLL by its token-mean key)
    metric_values = {"heldout_nll_token_mean": nll_key, "median_optim_step_seconds": "median_optim_step_seconds"}
    wanted = {criterion["metric"] for criterion in rule["criteria"]} | set(metric_values)
    run_values = {run.name: {metric: per_arm[run.arm]["runs"][run.label][metric_values.get(metric, metric)]
                             for metric in wanted} for run in runs}
    computed = best_lr_threshold(run_values, {run.name: run.arm for run in runs},
                                 {run.name: run.learning_rate for run in runs}, rule["criteria"],
                                 "heldout_nll_token_mean", {run.name: run.seed for run in runs})
    seeds = computed["seeds"]
    arms: dict[str, dict[str, Any]] = {}
    for arm, entry in computed["per_arm"].items():
        measured = per_arm[arm]["runs"]
        arm_runs = [run for run in runs if run.arm == arm]
        arms[arm] = {
            "selected_lr": entry["selected_lr"], "selected_run": entry["selected_run"],
            nll_key: entry["values"]["heldout_nll_token_mean"],
            "median_optim_step_seconds": entry["values"]["median_optim_step_seconds"],  # the seeds' mean
            "median_optim_step_seconds_all_runs": statistics.median(
                measured[run.label]["median_optim_step_seconds"] for run in arm_runs),
            "lr_grid": entry["lr_grid"], "grid_edge": entry["grid_edge"],
            **({"selected_runs": entry["selected_runs"]} if len(seeds) > 1 else {}),
        }
    criteria = computed["criteria"]
    mismatches = pair_mismatches(result.get("adaptation_manifests") or [])  # before any verdict
    grid_edge = computed["grid_edge"]
    supported = computed["verdict"] == "supported"
    limits = [] if computed["settled_by_seeds"] else [
        "one seed and no interval: the best-LR comparison is a point estimate" if len(seeds) == 1 else
        f"no interval, and the {len(seeds)} seeds do not settle every margin: "
        + "; ".join(f"{c['id']} per-seed effects {', '.join(f'{v:+.4g}' for v in c['per_seed_effects'].values())}"
                    for c in criteria if not c["settled_by_seeds"])]
    limits += [f"grid-edge LR selected for {a} ({v['selected_lr']:g})" for a, v in arms.items() if v["grid_edge"]]
    limits += mismatches
    limits += changed_experiment_limit(result)
    for note in (ctx.state.correctness_note, ctx.state.restoration_note):
        if note:
            limits.append(note)
    routing = ctx.state.service_routing or service_routing(ctx)
    primary = criteria[0]
    summary_arms = {arm: {nll_key: v[nll_key], "selected_lr": v["selected_lr"], "selected_run": v["selected_run"],
                          "median_optim_step_seconds": v["median_optim_step_seconds"],
                          "median_optim_step_seconds_all_runs": v["median_optim_step_seconds_all_runs"],
                          "grid_edge": v["grid_edge"],
                          **({"selected_runs": v["selected_runs"]} if "selected_runs" in v else {})}
                    for arm, v in arms.items()}
    verdict_record = {"rule": "GEN-3 (no decision_rule): effect against margin, per criterion",
                      "selection": selection_ran(per_arm, aggregation),
                      "selection_as_planned": rule.get("select"), "criteria": criteria, "per_arm": summary_arms}
    ctx.store.add_evidence("verdict-criteria.json", "metrics", json.dumps(verdict_record, indent=2, sort_keys=True))
    # everything but the verdict first (no decision object: the spec has no decision_rule)
    ctx.store.update_result(decision=None, metrics={"arms": summary_arms}, effect=primary["effect"],
                            margin=primary["margin"], ci=None, seeds=len(seeds), grid_edge=grid_edge)
    validation = validate(ctx.store.run_dir)  # the run-dir checks, before the verdict
    problem_count = validation["problem_count"]
    if problem_count:
        limits.append(f"validation found {problem_count} problem(s): {', '.join(validation['failed_checks'])}")
    reasoning = (
        "Best-LR held-out NLL " + ", ".join(f"{arm} {v[nll_key]:.4f} (LR {v['selected_lr']:g})" for arm, v in arms.items())
        + "; median optimizer step " + ", ".join(f"{arm} {v['median_optim_step_seconds']:.4f}s" for arm, v in arms.items())
        + ". "
        f"Verdict {'supported' if supported else 'refuted'}: "
        + "; ".join(f"{c['id']} effect {c['effect']:+.4g} {'meets' if c['met'] else 'misses'} margin {c['margin']:g}"
                    for c in criteria)
        + (f". Confidence is weak: {'; '.join(limits)}." if limits else
           f". Confidence is strong: each of the {len(seeds)} seeds settles every margin.")
        + f" Routing: {routing['reason']}."
    )
    final = dict(
        validation=validation,
        status="succeeded",
        summary=(f"Trained {len(runs)} LoRA SFT runs ({', '.join(arms)} x LR grid"
                 f"{f' x {len(seeds)} seeds' if len(seeds) > 1 else ''}) from one proven initial state on "
                 f"identical batches and scored held-out {aggregation} NLL on {ctx.plan.eval['n_examples']} conversations. "
                 f"Best-LR {primary['id']} ({contrast(rule['criteria'][0]['weights'])}) {primary['effect']:+.4f}; verdict "
                 f"{'supported' if supported else 'refuted'}."),
        verdict="supported" if supported else "refuted", confidence="weak" if limits else "strong",
        reasoning=reasoning, outcome_reason=None,
    )
    return GateVerdict(
        gate="decision", status="passed",
        reasons=[f"{c['id']}: effect {c['effect']:+.4g} vs margin {c['margin']:g} ({'met' if c['met'] else 'not met'})"
                 for c in criteria] + mismatches,
        measured={"verdict": "supported" if supported else "refuted", "grid_edge": grid_edge,
                  "validation_problems": problem_count,
                  **{c["id"]: c["effect"] for c in criteria}},
    ), final


def contrast(weights: dict[str, float]) -> str:
    """A criterion's weights as the contrast they compute ("dimuon_lite minus trimuon")."""
    plus = [arm if weight == 1 else f"{weight:g} x {arm}" for arm, weight in weights.items() if weight > 0]
    minus = [arm if weight == -1 else f"{-weight:g} x {arm}" for arm, weight in weights.items() if weight < 0]
    return " + ".join(plus) + (" minus " + " + ".join(minus) if minus else "")


def selection_ran(per_arm: dict[str, Any], aggregation: str) -> str:
    """How the best LR was selected, with the step counts the runs completed (the plan's text names the
    spec's steps, which a rehearsal or a stopped run does not train)."""
    steps = sorted({int(run.get("steps_completed", 0)) for arm in per_arm.values() for run in arm.get("runs", {}).values()})
    trained = " or ".join(str(n) for n in steps) or "no"
    return (f"per arm, the LR grid point with the lowest held-out {aggregation.replace('_', '-')} NLL after the "
            f"{trained} steps each run completed")



def paired_decision(ctx: RunContext, validate: RunDirValidator) -> tuple[GateVerdict, dict[str, Any] | None]:
    """A spec WITH a decision_rule (paired_hoeffding on per-item held-out NLL; intake allows it for arms of one
    learning rate each, aggregation example_mean): the contract's section 7 decision on the retained prediction
    rows, one observation per (arm, held-out conversation, scheduled seed) whose value is that conversation's
    mean NLL over its counted tokens, retained as scored-observations.jsonl, with the same computation as RL and
    `python -m flows.decide` (experiment.stats.decision), role labels mapped to arms and recorded. Returns the gate's
    verdict and the final RESULT fields, as `run` does."""
    rule = ctx.spec.section("decision_rule")
    role_to_arm = {role: entry["arm"] for role, entry in ctx.plan.role_to_arm.items()}
    compared = {role_to_arm.get(key, key) for criterion in rule["criteria"] for key in criterion["weights"]}
    evaluation = ctx.store.read_result().get("evaluation") or {}
    rows = []
    for score in evaluation.get("scores") or []:
        if score.get("arm") in compared:
            text = evidence_path(ctx.store.run_dir, score["predictions_ref"]).read_text()
            rows += [json.loads(line) for line in text.splitlines() if line.strip()]
    empty = [f"{row['arm']}/{row['item_id']}" for row in rows if "value" not in row]
    if empty:
        return GateVerdict(gate="decision", status="failed",
                           reasons=[f"held-out conversations with no counted token have no per-item NLL for the "
                                    f"paired decision: {', '.join(empty[:5])}"]), None
    observations = observations_from_predictions(rows)
    entry = ctx.store.add_evidence(OBSERVATIONS_FILE_NAME, "metrics", observations_jsonl_bytes(observations))
    result = ctx.store.read_result()
    limits = [note for note in (ctx.state.correctness_note, ctx.state.restoration_note) if note]
    limits += pair_mismatches(result.get("adaptation_manifests") or [])
    if ctx.plan.vocabulary == "direction_confidence":  # three-way: the exchange keeps the verdict for the changed experiment
        limits += changed_experiment_limit(result)
    simultaneous = (ctx.plan.decision or {}).get("adjustment") == "bonferroni"

    def decide(extra: list[str]) -> dict[str, Any]:
        return decision_summary(rule, observations, ctx.plan.vocabulary, role_to_arm=role_to_arm,
                                simultaneous=simultaneous, limits=limits + extra)

    summary = decide([])
    primary = summary["criteria"][0]
    measured = ({} if ctx.plan.vocabulary == "three_way" else
                {"effect": primary["effect"], "margin": primary["margin"], "ci": [primary["lower"], primary["upper"]],
                 "seeds": len(summary["seeds"]), "grid_edge": False})
    ctx.store.update_result(decision=decision_record(summary, OBSERVATIONS_FILE_NAME, entry["sha256"]), **measured)
    validation = validate(ctx.store.run_dir)  # the run-dir checks, before the verdict
    if validation["problem_count"]:
        summary = decide([f"validation failed: {', '.join(validation['failed_checks'])}"])
    means = ", ".join(f"{arm} {mean:.4f}" for arm, mean in primary["per_arm_means"].items())
    bounds = "; ".join(f"{c['id']} {c['effect']:+.4f} [{c['lower']:.4f}, {c['upper']:.4f}] vs margin {c['margin']:g}"
                       for c in summary["criteria"])
    ran = (f"Trained {len(sft_runs(ctx))} LoRA SFT runs and scored per-conversation held-out NLL on {primary['n']} "
           f"conversations ({means}).")
    if ctx.plan.vocabulary == "three_way":
        final = {"verdict": summary["verdict"], "outcome_reason": summary["outcome_reason"],
                 "summary": f"{ran} Verdict {summary['verdict']} ({summary['outcome_reason']}): {bounds}.",
                 **{field: None for field in THREE_WAY_ABSENT_FIELDS}}
    else:
        limits_text = "; ".join(limit.rstrip(". ") for limit in summary["limits"])
        final = {"verdict": summary["verdict"], "confidence": summary["confidence"],
                 "summary": f"{ran} The {primary['id']} effect is {primary['effect']:+.4f} (interval "
                            f"[{primary['lower']:.4f}, {primary['upper']:.4f}], margin {primary['margin']:g}).",
                 "reasoning": (f"The paired Hoeffding bound over {primary['n']} held-out conversations: {bounds}. "
                               f"Verdict {summary['verdict']}. "
                               + (f"Confidence is weak because of: {limits_text}." if limits_text
                                  else "Nothing else limits the result.")),
                 "outcome_reason": None}
    return GateVerdict(
        gate="decision", status="passed",
        reasons=[f"verdict {summary['verdict']}"] + [f"{c['id']}: effect {c['effect']:+.4g} [{c['lower']:.4g}, "
                                                     f"{c['upper']:.4g}] vs margin {c['margin']:g}"
                                                     for c in summary["criteria"]],
        measured={"verdict": summary["verdict"], "validation_problems": validation["problem_count"],
                  **{c["id"]: c["effect"] for c in summary["criteria"]}},
    ), {"validation": validation, "status": "succeeded", **final}
