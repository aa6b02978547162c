"""General rules (GEN-*), evidence (EVID-*) and secrets (SEC-1): findings go to `problems`.

These rules belong to no single category of the exchange's grading; a broken one still makes the
record untrustworthy, so the CLI fails on any problem. EVID-8 (run directory only) checks that
`events.jsonl`, `tables/` and `evidence/` agree with the record.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime, timezone
from pathlib import PurePath
from typing import Any
from experiment.grading import activation, prose, run_files, spec_anchor, traces
from experiment.grading.common import (
    applied, INVALID, UNKNOWN, UNVERIFIED, GradeContext, Issue, as_dict, as_list, equal_json, is_integer, short,
)
from experiment.grading.secrets import find_secrets, searchable_text
from experiment.contract.result import (
    DEVIATION_FIELDS, DIRECTION_VERDICTS, THREE_WAY_ABSENT_FIELDS, THREE_WAY_REASONS, THREE_WAY_VERDICTS,
)
from experiment.run.store import (
    MAX_EVIDENCE_FILE_BYTES, MAX_EVIDENCE_FILES, MAX_EVIDENCE_TOTAL_BYTES, REQUIRED_EVIDENCE_KINDS,
)
from experiment.report.code_revision import PIPELINE_CODE_DIRS
from experiment.contract.result_models import Result
from experiment.contract.run_layout import GATES_TABLE, RESULT_FILE, evidence_path, manifest_path, table_path
from experiment.grading.registry import implements, rule

EXECUTION_PLAN, PIPELINE_CODE, CODE_REVISION = "execution-plan.json", "pipeline-code.json", "code-revision.json"
MAX_FILE_BYTES, MAX_FILES, MAX_TOTAL_BYTES = MAX_EVIDENCE_FILE_BYTES, MAX_EVIDENCE_FILES, MAX_EVIDENCE_TOTAL_BYTES
REQUIRED_KINDS = REQUIRED_EVIDENCE_KINDS
_SENTENCE_END = re.compile(r"[.!?](?:\s|$)")


def vocabulary(ctx: GradeContext) -> str | None:
    return ctx.plan.vocabulary if ctx.plan is not None else None


@rule("GEN-2", "record", "invalid", "status is running, succeeded or failed")
def GEN_2(ctx: GradeContext) -> list[Issue]:
    if ctx.result.get("status") not in ("running", "succeeded", "failed"):
        return [Issue("GEN-2", INVALID, f"status {short(ctx.result.get('status'))} is not running, succeeded or failed")]
    return []


@rule("GEN-3", "record", "invalid", "direction+confidence vocabulary: verdict only at the end, supported or refuted, with confidence")
def GEN_3(ctx: GradeContext) -> list[Issue]:
    if vocabulary(ctx) != "direction_confidence":
        return []
    result, issues = ctx.result, []
    verdict, status = result.get("verdict"), result.get("status")
    if verdict is not None and status == "running":
        issues.append(Issue("GEN-3", INVALID, "a running result carries a verdict (left out until the final update)"))
    if verdict is not None and verdict not in DIRECTION_VERDICTS:
        issues.append(Issue("GEN-3", INVALID, f"verdict {short(verdict)} is not supported or refuted"))
    if status == "failed" and (verdict is not None or result.get("outcome_reason") != "incomplete_execution"):
        issues.append(Issue("GEN-3", INVALID, "a failed run has no verdict and outcome_reason incomplete_execution"))
    if status == "succeeded" and verdict is None:
        issues.append(Issue("GEN-3", INVALID, "a succeeded run (effect measured) has no verdict"))
    if verdict is not None and result.get("confidence") not in ("strong", "weak"):
        issues.append(Issue("GEN-3", INVALID, "a verdict needs confidence strong or weak"))
    if verdict is None and "confidence" in result:
        issues.append(Issue("GEN-3", INVALID, "confidence is present without a verdict"))
    if result.get("grid_edge") is True and result.get("confidence") == "strong":
        issues.append(Issue("GEN-3", INVALID, "grid_edge is true but confidence is strong"))
    if status != "failed" and "outcome_reason" in result and result["outcome_reason"] != "incomplete_execution":
        issues.append(Issue("GEN-3", INVALID, f"outcome_reason {short(result['outcome_reason'])} is not "
                                              "incomplete_execution, the only value of this vocabulary"))
    return issues


@rule("GEN-4", "record", "invalid", "three-way vocabulary: verdict and outcome_reason agree; none of the direction-only fields")
def GEN_4(ctx: GradeContext) -> list[Issue]:
    if vocabulary(ctx) != "three_way":
        return []
    result, issues = ctx.result, []
    verdict, reason = result.get("verdict"), result.get("outcome_reason")
    if ctx.finished and verdict not in THREE_WAY_VERDICTS:
        issues.append(Issue("GEN-4", INVALID, f"a finished three-way result needs a verdict, got {short(verdict)}"))
    if ctx.finished and reason is None:
        issues.append(Issue("GEN-4", INVALID, "a finished three-way result needs an outcome_reason"))
    if result.get("status") == "failed" and verdict in ("supported", "refuted"):
        issues.append(Issue("GEN-4", INVALID, f"a failed run is inconclusive, not {verdict}"))
    if result.get("status") == "failed" and verdict == "inconclusive" and reason not in (None, "incomplete_execution"):
        issues.append(Issue("GEN-4", INVALID, f"a failed run's outcome_reason is incomplete_execution, not {short(reason)}"))
    if result.get("status") == "running" and verdict is not None:
        issues.append(Issue("GEN-4", INVALID, "a running result carries a verdict (left out until the final update)"))
    if reason is not None:
        if reason not in THREE_WAY_REASONS:
            issues.append(Issue("GEN-4", INVALID, f"outcome_reason {short(reason)} is not a three-way reason"))
        elif reason in ("supported", "refuted") and reason != verdict:
            issues.append(Issue("GEN-4", INVALID, f"outcome_reason {reason} differs from verdict {short(verdict)}"))
        elif reason not in ("supported", "refuted") and verdict != "inconclusive":
            issues.append(Issue("GEN-4", INVALID, f"outcome_reason {reason} requires verdict inconclusive"))
        if not ctx.finished:
            issues.append(Issue("GEN-4", INVALID, "outcome_reason is reported only with a final result"))
    present = [key for key in THREE_WAY_ABSENT_FIELDS if key in result]
    if present:
        issues.append(Issue("GEN-4", INVALID, f"the three-way shape has no {', '.join(present)}"))
    return issues


@rule("GEN-5", "record", "invalid", "per-arm numbers under metrics.arms; completed_arms names each trained arm once")
def GEN_5(ctx: GradeContext) -> list[Issue]:
    issues = []
    if "metrics" in ctx.result and not isinstance(ctx.result["metrics"], dict):
        issues.append(Issue("GEN-5", INVALID, "metrics must be an object"))
    metrics = as_dict(ctx.result.get("metrics"))
    if "arms" in metrics and not isinstance(metrics["arms"], dict):
        issues.append(Issue("GEN-5", INVALID, "metrics.arms must be an object keyed by arm name"))
    if "completed_arms" in ctx.result and not isinstance(ctx.result["completed_arms"], list):
        issues.append(Issue("GEN-5", INVALID, "completed_arms must be a list of arm names"))
    arms = set(as_dict(metrics.get("arms"))) | {a for a in as_list(ctx.result.get("completed_arms")) if isinstance(a, str)}
    if ctx.plan is not None:
        arms |= {arm.name for arm in ctx.plan.arms}
    flat = [key for key in metrics if key != "arms" and any(key.startswith(f"{arm}_") for arm in arms)]
    if flat:
        issues.append(Issue("GEN-5", INVALID, f"per-arm numbers as flat metrics keys: {', '.join(sorted(flat))}"))
    completed = as_list(ctx.result.get("completed_arms"))
    not_objects = sorted(str(arm) for arm, entry in as_dict(metrics.get("arms")).items() if not isinstance(entry, dict))
    if not_objects:
        issues.append(Issue("GEN-5", INVALID, f"metrics.arms entries that are no object: {', '.join(not_objects)}"))
    if len({json.dumps(a) for a in completed}) != len(completed):
        issues.append(Issue("GEN-5", INVALID, "completed_arms names an arm twice"))
    if ctx.plan is not None and ctx.result.get("status") == "succeeded":
        runs = ctx.plan.training_runs
        missing = [arm.name for arm in ctx.plan.trained_arms if arm.name not in completed and not (
            [r for r in runs if r.arm == arm.name] and all(r.name in completed for r in runs if r.arm == arm.name))]
        if missing:
            issues.append(Issue("GEN-5", INVALID, f"a succeeded run did not complete {', '.join(missing)}"))
    if ctx.plan is not None:  # completed arms are trained ones (the base model is scored, never trained)
        trained = {arm.name for arm in ctx.plan.trained_arms} | {run.name for run in ctx.plan.training_runs}
        strangers = [str(a) for a in completed if a not in trained]
        if strangers:
            issues.append(Issue("GEN-5", INVALID, f"completed_arms names what the plan does not train: "
                                                  f"{', '.join(strangers)}"))
    return issues


@rule("GEN-6", "record", "invalid", "deviations recorded before use; a changed experiment says original_hypothesis_tested false")
def GEN_6(ctx: GradeContext) -> list[Issue]:
    issues = []
    deviations = ctx.result.get("deviations")
    if not isinstance(deviations, list):
        return [Issue("GEN-6", INVALID, "deviations must be a list ([] when the spec runs as written)")]
    listed = [json.dumps(d, sort_keys=True) for d in deviations]
    if len(set(listed)) != len(listed):
        issues.append(Issue("GEN-6", INVALID, "a deviation is listed twice"))
    rehearsal = as_dict(ctx.result.get("rehearsal"))
    spec_models = {name for name in (as_dict(ctx.spec).get("base_model"), rehearsal.get("spec_model")) if name}
    for deviation in deviations:
        if isinstance(deviation, dict) and deviation.get("field") in DEVIATION_FIELDS:
            unsaid = [key for key in ("original", "effective", "reason") if not isinstance(deviation.get(key), str)]
            if unsaid:
                issues.append(Issue("GEN-6", INVALID, f"deviation {short(deviation)}: {', '.join(unsaid)} must be strings"))
            if deviation.get("field") == "model" and deviation.get("original") in spec_models and \
                    str(deviation.get("effective")) not in str(ctx.result.get("summary", "")):
                issues.append(Issue("GEN-6", INVALID, f"the served model {short(deviation.get('effective'))} replaces the "
                                                      "spec's model but summary does not say so"))
        if not isinstance(deviation, dict) or deviation.get("field") not in DEVIATION_FIELDS:
            issues.append(Issue("GEN-6", INVALID, f"deviation {short(deviation)} has no valid field"))
        elif deviation["field"] in ("objective", "endpoint") and (
                ctx.result.get("original_hypothesis_tested") is not False or not ctx.result.get("tested_instead")):
            issues.append(Issue("GEN-6", INVALID, f"a {deviation['field']} change sets original_hypothesis_tested "
                                                  "false and fills tested_instead"))
    if ctx.events is not None:
        posted = set()
        for event in ctx.events:
            if event.get("status") == "running" and isinstance(event.get("deviations"), list):
                posted |= {json.dumps(d, sort_keys=True) for d in event["deviations"]}
        late = [d for d in deviations if isinstance(d, dict) and json.dumps(d, sort_keys=True) not in posted]
        if late:
            issues.append(Issue("GEN-6", INVALID, f"{len(late)} deviation(s) were never posted in a running update "
                                                  "before training (unrecorded)"))
    return issues


@implements("GEN-6")
def GEN_6_hypothesis(ctx: GradeContext) -> list[Issue]:
    """GEN-6, the hypothesis a record tests: a rehearsal (RESULT.rehearsal: another model, data and eval
    set) does not test the spec's hypothesis, so it says `original_hypothesis_tested: false` and what it
    tested instead; a direction+confidence verdict on a changed experiment is never `strong` (C-4)."""
    issues = []
    tested, instead = ctx.result.get("original_hypothesis_tested"), ctx.result.get("tested_instead")
    if isinstance(ctx.result.get("rehearsal"), dict) and tested is not False:
        issues.append(Issue("GEN-6", INVALID, "a rehearsal replaces the spec's model, data and eval set but says "
                                              f"original_hypothesis_tested {json.dumps(tested)}"))
    if ctx.finished and not isinstance(tested, bool):
        issues.append(Issue("GEN-6", INVALID, f"original_hypothesis_tested {json.dumps(tested)} is not true or false"))
    if tested is False and not (isinstance(instead, str) and instead.strip()):
        issues.append(Issue("GEN-6", INVALID, "original_hypothesis_tested is false but tested_instead is empty"))
    elif isinstance(ctx.result.get("rehearsal"), dict) and isinstance(instead, str) and \
            str(ctx.result["rehearsal"].get("model")) not in instead:
        issues.append(Issue("GEN-6", INVALID, "a rehearsal's tested_instead does not name the model that ran "
                                              f"({short(ctx.result['rehearsal'].get('model'))})"))
    if tested is False and vocabulary(ctx) == "direction_confidence" and ctx.result.get("confidence") == "strong":
        issues.append(Issue("GEN-6", INVALID, "confidence strong although the run tested a changed experiment "
                                              "(original_hypothesis_tested false)"))
    return issues


@rule("GEN-7", "record", "invalid", "conditional fields (capacity_block, decision, loss_eval, adaptation_manifests) only when they apply")
def GEN_7(ctx: GradeContext) -> list[Issue]:
    issues = []
    block = ctx.result.get("capacity_block")
    if block is not None and "capacity" not in json.dumps(block).lower() and not as_dict(block).get("error"):
        issues.append(Issue("GEN-7", INVALID, "capacity_block appears although capacity did not stop the run"))
    if block is not None and ctx.result.get("status") == "succeeded":
        issues.append(Issue("GEN-7", INVALID, "capacity_block appears in a run that completed"))
    if ctx.plan is not None and "decision" in ctx.result and ctx.plan.decision is None:
        issues.append(Issue("GEN-7", INVALID, "decision is present but the spec has no decision_rule"))
    if ctx.plan is not None and "loss_eval" in ctx.result and not ctx.plan.eval.get("loss_eval"):
        issues.append(Issue("GEN-7", INVALID, "loss_eval is present but the spec's endpoint is not a loss"))
    count, posted = as_dict(block).get("comparison_steps_completed"), _posted_steps(ctx.result)
    if block is not None and is_integer(count) and count < posted:
        issues.append(Issue("GEN-7", INVALID, f"capacity_block says {count} comparison steps completed, the arms "
                                              f"posted {posted}"))
    return issues


def _posted_steps(result: dict[str, Any]) -> int:
    """The comparison steps the record's arms posted (each arm's steps_completed, an LR grid's per run): what a
    capacity stop's real step count (CAP-1) counts at least."""
    total = 0
    for entry in as_dict(as_dict(result.get("metrics")).get("arms")).values():
        runs = as_dict(as_dict(entry).get("runs"))
        for target in runs.values() if runs else [entry]:
            steps = as_dict(target).get("steps_completed")
            total += steps if is_integer(steps) and steps > 0 else 0
    return total


# RESULT's fields beyond the contract's RESULT (experiment.contract.result_models.Result) that this pipeline posts,
# each with the rule that reads it or why none does
PIPELINE_RESULT_FIELDS = frozenset({
    "rehearsal",  # SPEC-2, PROSE-2
    "validation",  # TRACE-8
    "budget_use",  # FEAS-13
    # operators' notes of an unfinished or stopped run, never in a finished record (so not in docs/ungraded-fields.md,
    # which lists leaves of finished records): the wait in progress (cleared when it ends; the waits a run met are
    # events, FEAS-12's floor of the reserve), what stopped a run outside a gate (its status and outcome are GEN-2..4's),
    # the correctness preflight's request to the spec's author (the pins are CORR-6's; the request is evidence)
    "capacity_wait", "interruption", "spec_revision_request",
})
RESULT_FIELDS = frozenset(Result.model_fields) | PIPELINE_RESULT_FIELDS


@rule("GEN-10", "record", "invalid", "RESULT carries only the contract's fields and those the pipeline documents")
def GEN_10(ctx: GradeContext) -> list[Issue]:
    """A top-level field neither the contract's RESULT nor this pipeline's record defines is a claim no rule reads
    (an added `exchange_grade` saying verified, say): the record's fields are a closed list, as its evidence is."""
    unknown = sorted(str(key) for key in ctx.result if key not in RESULT_FIELDS)
    return [Issue("GEN-10", INVALID, f"RESULT.{short(key, 60)} is a field neither the contract's RESULT nor this "
                                     "pipeline's record defines: a claim no rule grades") for key in unknown[:5]]


@rule("GEN-8", "record", "invalid", "summary at most two sentences, reasoning two to four")
def GEN_8(ctx: GradeContext) -> list[Issue]:
    issues = []
    summary = ctx.result.get("summary")
    if ctx.finished and not (isinstance(summary, str) and summary.strip()):
        issues.append(Issue("GEN-8", INVALID, "a finished run has no summary"))
    if isinstance(summary, str) and len(_SENTENCE_END.findall(summary.strip())) > 2:
        issues.append(Issue("GEN-8", INVALID, "summary is longer than two sentences"))
    reasoning = ctx.result.get("reasoning")
    if ctx.finished and vocabulary(ctx) == "direction_confidence" and ctx.result.get("verdict") is not None \
            and not isinstance(reasoning, str):
        issues.append(Issue("GEN-8", INVALID, "a direction verdict has no reasoning"))
    if isinstance(reasoning, str) and not 2 <= len(_SENTENCE_END.findall(reasoning.strip())) <= 4:
        issues.append(Issue("GEN-8", INVALID, "reasoning is not two to four sentences"))
    return issues


# ---------------------------------------------------------------------------- evidence


@rule("EVID-1", "record", "invalid|unverified|unknown", "every evidence file carries its bytes inline (or an /attachments/ URL)")
def EVID_1(ctx: GradeContext) -> list[Issue]:
    issues = []
    evidence = ctx.result.get("evidence")
    if not isinstance(evidence, dict) or not equal_json(evidence.get("version"), 1):
        return [Issue("EVID-1", UNKNOWN, "evidence must be an object with version 1")]
    partial = []
    unnamed = sum(1 for entry in ctx.evidence.entries if not isinstance(entry.get("name"), str) or not entry["name"])
    if unnamed:  # nothing can reference it, and what it held cannot be told from what was left out
        issues.append(Issue("EVID-1", UNVERIFIED, f"{unnamed} evidence file(s) without a name"))
    for entry in ctx.evidence.entries:
        url = entry.get("source_url")
        if isinstance(url, str) and not (url.startswith("https://") and "/attachments/" in url):
            issues.append(Issue("EVID-1", INVALID, f"{entry.get('name')}: source_url is not an HTTPS /attachments/ URL"))
        if not isinstance(entry.get("content"), str) and not url:
            partial.append(str(entry.get("name")))
    status = evidence.get("status")
    if status is not None and status != ("partial" if partial or evidence.get("partial") else "complete"):
        issues.append(Issue("EVID-1", INVALID, f"evidence.status {short(status)} is not what its files are "
                                               f"({'partial' if partial or evidence.get('partial') else 'complete'})"))
    if partial:
        issues.append(Issue("EVID-1", UNVERIFIED, f"{len(partial)} of {len(ctx.evidence.entries)} evidence files carry "
                                                  f"no inline content (partial): {', '.join(partial[:6])}"
                                                  + (" ..." if len(partial) > 6 else "")))
    return issues


@rule("EVID-2", "record", "unverified", "an evidence file's sha256 is the sha256 of its bytes")
def EVID_2(ctx: GradeContext) -> list[Issue]:
    bad = [entry.get("name") for entry in ctx.evidence.entries
           if isinstance(entry.get("content"), str) and ctx.evidence.state(entry.get("name"))[0] == "corrupt"]
    issues = [Issue("EVID-2", UNVERIFIED, f"content does not match its sha256 or encoding: {', '.join(map(str, bad))}")] if bad else []
    unhashed = [str(entry.get("name")) for entry in ctx.evidence.entries if not entry.get("sha256")]
    if unhashed:  # optional for the exchange; a reviewer cannot tell these bytes from edited ones
        issues.append(Issue("EVID-2", UNVERIFIED, f"no sha256 for {', '.join(unhashed[:6])}: their bytes cannot be checked"))
    return issues


@rule("EVID-3", "record", "invalid", "evidence caps: 10 MiB a file, 64 files, 40 MiB a run")
def EVID_3(ctx: GradeContext) -> list[Issue]:
    issues, total = [], 0
    entries = ctx.evidence.entries
    if len(entries) > MAX_FILES:
        issues.append(Issue("EVID-3", INVALID, f"{len(entries)} evidence files exceed the cap of {MAX_FILES}"))
    for entry in entries:
        data = ctx.evidence.bytes(entry.get("name"))
        size = len(data) if data is not None else 0
        total += size
        if size > MAX_FILE_BYTES:
            issues.append(Issue("EVID-3", INVALID, f"{entry.get('name')} is {size} bytes, over the 10 MiB cap"))
    if total > MAX_TOTAL_BYTES:
        issues.append(Issue("EVID-3", INVALID, f"evidence totals {total} bytes, over the 40 MiB cap"))
    return issues


@rule("EVID-4", "record", "unverified", "a finished run retains script, effective config, code revision, predictions and metrics")
def EVID_4(ctx: GradeContext) -> list[Issue]:
    if ctx.result.get("status") != "succeeded":
        return []
    kinds = {entry.get("kind") for entry in ctx.evidence.entries}
    required = list(REQUIRED_KINDS)
    if ctx.gate_applicable("generation_audit") is True:
        required.append("generated_tasks")
    missing = [kind for kind in required if kind not in kinds]
    return [Issue("EVID-4", UNVERIFIED, f"a finished run retains no evidence of kind {', '.join(missing)}")] if missing else []


@rule("EVID-5", "record", "invalid|unverified", "evidence.per_arm_metrics is metrics.arms")
def EVID_5(ctx: GradeContext) -> list[Issue]:
    per_arm = as_dict(as_dict(ctx.result.get("evidence")).get("per_arm_metrics"))
    missing = [arm for arm in as_list(ctx.result.get("completed_arms")) if arm not in per_arm]
    issues = [Issue("EVID-5", UNVERIFIED, f"evidence.per_arm_metrics lacks {', '.join(map(str, missing))}")] if missing else []
    metrics = as_dict(as_dict(ctx.result.get("metrics")).get("arms"))
    differ = sorted(str(arm) for arm in per_arm if arm in metrics and per_arm[arm] != metrics[arm])
    extra = sorted(str(arm) for arm in per_arm if arm not in metrics)
    if differ or extra:
        issues.append(Issue("EVID-5", INVALID, f"evidence.per_arm_metrics is not metrics.arms for "
                                               f"{', '.join(differ + extra)}"))
    return issues


@rule("EVID-9", "record", "invalid|unverified", "the retained execution plan is the plan of the spec graded against")
def EVID_9(ctx: GradeContext) -> list[Issue]:
    """The retained execution plan (kind effective_config, execution-plan.json) is the plan of the
    spec graded against (experiment.contract.plan.build_plan, serialised as the run keeps it)."""
    if ctx.plan is None or EXECUTION_PLAN not in ctx.evidence.by_name:
        return [Issue("EVID-9", UNVERIFIED, f"no {EXECUTION_PLAN} is retained")] if ctx.plan is not None and \
            ctx.result.get("status") == "succeeded" else []
    recorded = ctx.evidence.json(EXECUTION_PLAN)
    if recorded is None:
        return [Issue("EVID-9", UNVERIFIED, f"{EXECUTION_PLAN}: {ctx.evidence.why(EXECUTION_PLAN) or 'not JSON'}")]
    if ctx.spec_source == "the given spec":
        return []  # a spec object or dict has no file and no revision of its own: nothing to compare the plan with
    if _located(recorded) != _located(json.loads(json.dumps(ctx.plan.to_dict(), default=str))):
        return [Issue("EVID-9", INVALID, f"{EXECUTION_PLAN} is not the plan of the spec graded against")]
    return []


def _located(plan: Any) -> Any:
    """The plan with its spec and revision paths cut to their file names (where a checkout lies is no
    part of the plan)."""
    if not isinstance(plan, dict):
        return plan
    plan = dict(plan)
    if isinstance(plan.get("spec_path"), str):
        plan["spec_path"] = PurePath(plan["spec_path"]).name
    if isinstance(plan.get("spec_revision"), dict) and isinstance(plan["spec_revision"].get("path"), str):
        plan["spec_revision"] = {**plan["spec_revision"], "path": PurePath(plan["spec_revision"]["path"]).name}
    return plan


@rule("EVID-10", "record", "invalid", "the retained pipeline code is the code code-revision.json names")
def EVID_10(ctx: GradeContext) -> list[Issue]:
    """The retained pipeline code (kind script, pipeline-code.json) is the code the code revision
    names: every file's content hashes to its sha256, and the files and commit are code-revision.json's."""
    code, revision = ctx.evidence.json(PIPELINE_CODE), ctx.evidence.json(CODE_REVISION)
    if not isinstance(code, dict) or not isinstance(revision, dict):
        return []
    files = as_dict(code.get("files"))
    listed = as_dict(revision.get("files_sha256"))
    wrong = sorted(path for path, entry in files.items() if not isinstance(as_dict(entry).get("content"), str)
                   or hashlib.sha256(entry["content"].encode("utf-8")).hexdigest() != entry.get("sha256")
                   or listed.get(path) != entry.get("sha256"))
    # the embedded backend's sources are retained only when it served the run (its process is the service's
    # otherwise); every pipeline directory is always retained
    retained_dirs = set(PIPELINE_CODE_DIRS) | {d for d in code.get("directories") or [] if isinstance(d, str)}
    wrong += sorted(path for path in set(listed) - set(files) if path.split("/", 1)[0] in retained_dirs)
    if code.get("git_commit") != revision.get("git_commit"):
        wrong.insert(0, "git_commit")
    return [Issue("EVID-10", INVALID, f"{PIPELINE_CODE} is not the code {CODE_REVISION} names "
                                      f"({', '.join(wrong[:4])}{' ...' if len(wrong) > 4 else ''})")] if wrong else []


@rule("EVID-6", "record", "invalid", "checkpoints are tinker:// references, listed once, every scored one listed")
def EVID_6(ctx: GradeContext) -> list[Issue]:
    issues = []
    checkpoints = as_list(as_dict(ctx.result.get("evidence")).get("checkpoints"))
    for checkpoint in checkpoints:
        uri = as_dict(checkpoint).get("uri")
        if not (isinstance(uri, str) and uri.startswith("tinker://") and "?" not in uri):
            issues.append(Issue("EVID-6", INVALID, f"checkpoint {short(uri)} is not a tinker:// reference without a query"))
    listed = [json.dumps(c, sort_keys=True) for c in checkpoints]
    if len(set(listed)) != len(listed):
        issues.append(Issue("EVID-6", INVALID, "evidence.checkpoints lists a checkpoint twice"))
    uris = {as_dict(c).get("uri") for c in checkpoints}
    for arm in as_dict(as_dict(ctx.result.get("initialization_provenance")).get("arms")).values():
        init = as_dict(as_dict(arm).get("initialization"))  # the shared initial state (the base scored from it)
        uris |= {init.get("checkpoint_uri"), init.get("loaded_checkpoint_uri")}
    arm_of = {as_dict(c).get("uri"): as_dict(c).get("arm") for c in checkpoints}
    seed_of = {as_dict(c).get("uri"): as_dict(c).get("seed") for c in checkpoints if "seed" in as_dict(c)}
    scored = set()  # every tinker:// checkpoint a prediction row was scored on is a listed checkpoint
    for score in as_list(as_dict(ctx.result.get("evaluation")).get("scores")):
        for row in ctx.evidence.jsonl(as_dict(score).get("predictions_ref")) or []:
            if isinstance(row.get("checkpoint"), str) and row["checkpoint"].startswith("tinker://"):
                scored.add(row["checkpoint"])
    missing = sorted(scored - uris)
    for score in as_list(as_dict(ctx.result.get("evaluation")).get("scores")):
        score = as_dict(score)
        owner = score.get("run") or score.get("arm")
        for row in ctx.evidence.jsonl(score.get("predictions_ref")) or []:
            if row.get("checkpoint") in arm_of and arm_of[row["checkpoint"]] != owner:
                issues.append(Issue("EVID-6", INVALID, f"checkpoint {short(row['checkpoint'])} is listed for "
                                                       f"{short(arm_of[row['checkpoint']])}, but {owner} was scored on it"))
                break
            # a listed seed (a boolean is no seed: equal_json)
            if row.get("checkpoint") in seed_of and not equal_json(seed_of[row["checkpoint"]], score.get("seed")):
                issues.append(Issue("EVID-6", INVALID, f"checkpoint {short(row['checkpoint'])} is listed for seed "
                                                       f"{short(seed_of[row['checkpoint']])}, but {owner} was scored on "
                                                       f"it at seed {short(score.get('seed'))}"))
                break
    if missing:
        issues.append(Issue("EVID-6", INVALID, f"scored checkpoint(s) not in evidence.checkpoints: {short(missing[0])}"))
    return issues + _final_checkpoint_steps(ctx, checkpoints)


def _final_checkpoint_steps(ctx: GradeContext, checkpoints: list[Any]) -> list[Issue]:
    """*(project reading)* Each listed checkpoint is a trained arm's (or run's) of the plan, and the one its
    predictions were scored on is at the arm's planned step (a finished, succeeded run trains every step)."""
    if ctx.plan is None:
        return []
    steps = {run.name: run.steps for run in ctx.plan.training_runs} | {arm.name: arm.steps for arm in ctx.plan.trained_arms}
    issues = []
    scored = {row.get("checkpoint") for score in as_list(as_dict(ctx.result.get("evaluation")).get("scores"))
              for row in ctx.evidence.jsonl(as_dict(score).get("predictions_ref")) or []}
    for checkpoint in map(as_dict, checkpoints):
        owner, step = checkpoint.get("arm"), checkpoint.get("step")
        if owner not in steps:
            issues.append(Issue("EVID-6", INVALID, f"checkpoint {short(checkpoint.get('uri'))} names {short(owner)}, "
                                                   "which the plan does not train"))
        elif not is_integer(step) or step < 0:
            issues.append(Issue("EVID-6", INVALID, f"checkpoint of {owner} has no step"))
        elif ctx.result.get("status") == "succeeded" and checkpoint.get("uri") in scored and steps[owner] \
                and step != steps[owner]:
            issues.append(Issue("EVID-6", INVALID, f"{owner} was scored on its checkpoint at step {step}, "
                                                   f"not at its planned {steps[owner]} steps"))
    return issues


@rule("EVID-7", "record", "invalid", "evidence file names are immutable: one name, one content")
def EVID_7(ctx: GradeContext) -> list[Issue]:
    names = [entry.get("name") for entry in ctx.evidence.entries]
    dup = sorted({str(name) for name in names if names.count(name) > 1})  # listed twice, same content or not
    return [Issue("EVID-7", INVALID, f"evidence names listed more than once: {', '.join(dup)}")] if dup else []


@rule("EVID-8", "record", "invalid|unverified|problem", "a run directory's events, tables and evidence agree with RESULT")
def EVID_8(ctx: GradeContext) -> list[Issue]:
    """Run directory only: events, tables and evidence/ agree with RESULT."""
    if ctx.run_dir is None:
        return []
    issues = []
    events = ctx.events or []
    if not events:
        return [Issue("EVID-8", UNVERIFIED, "events.jsonl is missing or empty, so the record's history cannot be checked")]
    if events[0].get("event") != "run_created":
        issues.append(Issue("EVID-8", INVALID, "events.jsonl does not start with run_created"))
    logged = {e.get("name"): e.get("sha256") for e in events if e.get("event") == "evidence_added"}
    for entry in ctx.evidence.entries:
        name = entry.get("name")
        if name not in logged:
            issues.append(Issue("EVID-8", INVALID, f"{name} is in RESULT.evidence but no evidence_added event logs it"))
        elif logged[name] != entry.get("sha256"):
            issues.append(Issue("EVID-8", INVALID, f"{name}: RESULT's sha256 differs from the one events.jsonl logged"))
        path = evidence_path(ctx.run_dir, str(name))
        if path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() != entry.get("sha256"):
            issues.append(Issue("EVID-8", INVALID, f"evidence/{name} on disk does not hash to RESULT's sha256"))
        data = ctx.evidence.bytes(name)
        if path.is_file() and data is not None and path.read_bytes() != data:
            issues.append(Issue("EVID-8", INVALID, f"evidence/{name} on disk differs from its inline content"))
    issues += _kept_but_not_in_result(ctx, events) + _times_going_back(events)
    gates = {}
    for event in events:
        if event.get("event") == "gate":
            gates[event.get("gate")] = event.get("status")
    table = table_path(ctx.run_dir, GATES_TABLE)
    if table.is_file():
        try:
            import pandas as pd

            rows = pd.read_parquet(table).to_dict("records")
        except (OSError, ValueError, ImportError):
            rows = None
            issues.append(Issue("EVID-8", INVALID, "tables/gates.parquet cannot be read"))
        table_gates = {row.get("gate"): row.get("status") for row in rows or []}
        for gate, status in table_gates.items():
            if gates.get(gate) != status:
                issues.append(Issue("EVID-8", INVALID, f"tables/gates.parquet says gate {gate} {status}, events.jsonl "
                                                       f"says {gates.get(gate)}"))
    if ctx.finished and ctx.result.get("verdict") is not None and gates.get("decision") not in ("passed", None) \
            and ctx.gate_applicable("decision") is True:
        issues.append(Issue("EVID-8", INVALID, "RESULT has a verdict but the decision gate did not pass in events.jsonl"))
    return issues


@implements("EVID-8")
def _kept_but_not_in_result(ctx: GradeContext, events: list[dict[str, Any]]) -> list[Issue]:
    """Every file the run kept (its manifest lists it, an evidence_added event logs it) is in RESULT.evidence: one
    that is not is read by no rule, so it could say anything."""
    listed = {entry.get("name") for entry in ctx.evidence.entries}
    try:
        manifest = json.loads(manifest_path(ctx.run_dir).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        manifest = None  # missing or unreadable: the run-dir layer reports it (evidence.manifest)
    kept = {str(e.get("name")): "manifest" for e in as_list(as_dict(manifest).get("files")) if isinstance(e, dict)}
    for event in events:
        if event.get("event") == "evidence_added" and event.get("name") is not None:
            kept.setdefault(str(event.get("name")), "events.jsonl")
    return [Issue("EVID-8", INVALID, f"{name} is kept in the run directory ({where}) but not in RESULT.evidence")
            for name, where in kept.items() if name not in listed]


@implements("EVID-8")
def _times_going_back(events: list[dict[str, Any]], resolution_seconds: float = 2.0) -> list[Issue]:
    """The store appends each event with the time of its append, one at a time (experiment.run.store.append_event):
    the log's times never go back by more than the clock's resolution."""
    latest: tuple[datetime, str] | None = None
    for number, event in enumerate(events, 1):
        if "ts" not in event:
            continue
        try:
            at = datetime.fromisoformat(str(event["ts"]))
            at = at if at.tzinfo else at.replace(tzinfo=timezone.utc)
        except ValueError:
            return [Issue("EVID-8", INVALID, f"events.jsonl event {number} ({event.get('event')}) has no ISO time: "
                                             f"{str(event['ts'])[:40]!r}")]
        if latest is not None and (latest[0] - at).total_seconds() > resolution_seconds:
            return [Issue("EVID-8", INVALID, f"events.jsonl goes back in time: event {number} ({event.get('event')}) "
                                             f"at {event['ts']} follows {latest[1]}")]
        if latest is None or at > latest[0]:
            latest = (at, str(event["ts"]))
    return []


@rule("SEC-1", "record", "invalid", "no credentials stored: keys, tokens, credential headers, signed URLs")
def SEC_1(ctx: GradeContext) -> list[Issue]:
    issues = []
    texts = {RESULT_FILE: json.dumps(ctx.result)}
    for entry in ctx.evidence.entries:
        data = ctx.evidence.bytes(entry.get("name"))
        if data is not None:
            texts[f"evidence {entry.get('name')}"] = data.decode("utf-8", errors="replace")
    if ctx.run_dir is not None:
        for path in sorted(ctx.run_dir.rglob("*")):
            if path.is_file() and path.name != RESULT_FILE and path.stat().st_size <= 64 * 1024 * 1024:
                texts[str(path.relative_to(ctx.run_dir))] = searchable_text(path.read_bytes())
    for where, text in texts.items():
        found = find_secrets(text)
        if found:
            issues.append(Issue("SEC-1", INVALID, f"{where} contains {', '.join(sorted(set(found)))}"))
    return issues


CHECKS = [GEN_2, GEN_3, GEN_4, GEN_5, GEN_6, GEN_6_hypothesis, GEN_7, GEN_8, GEN_10, *activation.CHECKS,
          EVID_1, EVID_2, EVID_3, EVID_4, EVID_5, EVID_6, EVID_7, EVID_8, EVID_9, EVID_10, *traces.CHECKS, SEC_1,
          *spec_anchor.RECORD_CHECKS, *prose.CHECKS, *run_files.CHECKS]


def general_issues(ctx: GradeContext) -> list[Issue]:
    issues: list[Issue] = []
    for check in CHECKS:
        issues.extend(applied(check, ctx))
    return issues

