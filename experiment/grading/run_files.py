"""TRACE-9: a run directory's other files restate the record, and must say what it says.

Besides result.json and evidence/, a run directory holds run.json (which spec, at which scale), tables/ (the
training log and gate verdicts as parquet) and events.jsonl, whose events repeat facts the record posts: the
evaluator's item count, each arm's score, the verdict, the backend the run used, the spec it ran. A submitter who
edits result.json and evidence/ consistently but leaves these behind, or edits these alone, leaves two accounts of
one run; a reviewer reads both. Each is compared here with the record (and with the spec graded against), never
with another copy of itself:

- run.json: the spec's file name, title and hash (the plan's), the rehearsal scale and the run id's rehearsal mark,
  the run_created event's copy;
- tables/training_steps.parquet and tables/sft_steps.parquet: each row is a logged step (a `training_step` event,
  an sft-steps.jsonl row), the same count; tables/arm_checkpoints.parquet: each row a checkpoint a `training_step`
  event logged; tables/sft_finished_runs.parquet: each run's final sampler is its listed checkpoint;
- events.jsonl: `evaluator_frozen` froze the evaluator's own item count, every `evaluation_progress` of a finished
  run reached it, the `evaluation` gate's per-arm numbers are the scores, the `decision` gate's verdict and per
  criterion effects are the record's, a rehearsal's `run_config`/`service_exposure` name the embedded backend and
  its `spec_intake` served the rehearsal's model, the activation values posted are a logged pilot's, the `probe`
  event's results are those its gate judged, every event is of a kind the pipeline writes, and a value a
  `result_updated` event carries is RESULT's.

Findings are record-level (`Grade.problems`), invalid.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from experiment.contract.run_layout import RUN_META, run_meta_path, table_path
from experiment.grading.common import INVALID, GradeContext, Issue, as_dict, as_list, close, equal_json, is_number, short
from experiment.grading.registry import rule

# every event the pipeline appends (experiment/, flows/: RunStore.append_event); another kind is read by no rule,
# so it could say anything (a resume the record does not show, a gate no table has)
PIPELINE_EVENTS = frozenset({
    "activation_pilot_reused", "activation_pilots", "capacity_block", "capacity_wait", "checkpoint",
    "correctness_input_tolerances_fixed", "correctness_revisions_pinned", "designed_restore", "evaluation_progress",
    "evaluator_frozen", "evidence_added", "gate", "gate_beside_stop", "gate_schedule", "generation_measured",
    "generation_progress", "generation_started", "interrupted", "probe", "requeue", "result_updated", "run_config",
    "run_created", "run_resumed", "selection_frozen", "service_exposure", "service_routing", "training_step",
})


def _same(a: Any, b: Any) -> bool:
    if is_number(a) and is_number(b):
        return close(a, b)
    return equal_json(a, b)


def _table_rows(run_dir: Path, name: str) -> list[dict[str, Any]] | None:
    path = table_path(run_dir, name)
    if not path.is_file():
        return None
    try:
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    except Exception:  # noqa: BLE001 - an unreadable table is reported below, never a traceback
        return []


def _events(ctx: GradeContext, kind: str) -> list[dict[str, Any]]:
    return [e for e in ctx.events or [] if isinstance(e, dict) and e.get("event") == kind]


def _gate(ctx: GradeContext, gate: str) -> dict[str, Any] | None:
    found = [e for e in _events(ctx, "gate") if e.get("gate") == gate]
    return found[-1] if found else None


# ---------------------------------------------------------------------------- run.json


def _run_meta_problems(ctx: GradeContext) -> list[str]:
    try:
        meta = json.loads(run_meta_path(ctx.run_dir).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return [f"{RUN_META} is missing or not JSON"]
    if not isinstance(meta, dict):
        return [f"{RUN_META} is not a JSON object"]
    problems = []
    created = next(iter(_events(ctx, "run_created")), None)
    if created is not None:
        for key in ("spec_sha256", "spec_path"):
            if key in created and created.get(key) != meta.get(key):
                problems.append(f"{RUN_META}'s {key} is not the run_created event's")
    if meta.get("spec") is not None and Path(str(meta.get("spec_path"))).name != meta.get("spec"):
        problems.append(f"{RUN_META} names spec {short(meta.get('spec'))} but spec_path {short(meta.get('spec_path'))}")
    rehearsal = ctx.result.get("rehearsal") if isinstance(ctx.result.get("rehearsal"), dict) else None
    if isinstance(meta.get("run_id"), str) and ("-rehearsal-" in meta["run_id"]) != (rehearsal is not None):
        problems.append(f"{RUN_META}'s run_id {short(meta['run_id'], 40)} "
                        f"{'lacks' if rehearsal else 'has'} the rehearsal mark the record's rehearsal gives it")
    scale = rehearsal.get("scale", "standard") if rehearsal else "as-written"
    if "scale" in meta and meta.get("scale") != scale:
        problems.append(f"{RUN_META} says scale {short(meta.get('scale'))}, the record {scale}")
    plan = ctx.plan
    attested = plan is not None and not str(getattr(plan, "spec_path", "")).startswith(("recorded:", "given"))
    if attested:
        if meta.get("spec_sha256") != plan.spec_sha256:
            problems.append(f"{RUN_META}'s spec_sha256 {short(meta.get('spec_sha256'), 16)} is not the hash of the spec "
                            f"graded against ({plan.spec_sha256[:12]}...)")
        if meta.get("spec") != Path(str(plan.spec_path)).name:
            problems.append(f"{RUN_META} names spec {short(meta.get('spec'))}, not {Path(str(plan.spec_path)).name}")
        if "spec_title" in meta and meta.get("spec_title") != plan.spec_title:
            problems.append(f"{RUN_META}'s spec_title is not the spec's title")
    return problems


# ---------------------------------------------------------------------------- tables/


def _rows_match(table: str, rows: list[dict[str, Any]], logged: list[dict[str, Any]], keys: tuple[str, ...],
                source: str) -> list[str]:
    """Every table row is a logged row (same `keys`, every shared field equal), as many as logged."""
    if not rows and logged:
        return [f"tables/{table}.parquet cannot be read or is empty, but {source} logs {len(logged)} row(s)"]
    problems = []
    if len(rows) != len(logged):
        problems.append(f"tables/{table}.parquet has {len(rows)} row(s), {source} {len(logged)}")
    for row in rows:
        same_key = [e for e in logged if all(_same(e.get(k), row.get(k)) for k in keys)]
        if not any(all(_same(row[k], e[k]) for k in row if k in e) for e in same_key):
            where = ", ".join(f"{k} {short(row.get(k), 30)}" for k in keys)
            problems.append(f"tables/{table}.parquet's row ({where}) is not what {source} logged")
            break
    return problems


def _table_problems(ctx: GradeContext) -> list[str]:
    problems = []
    steps = _table_rows(ctx.run_dir, "training_steps")
    if steps is not None:
        problems += _rows_match("training_steps", steps, _events(ctx, "training_step"), ("arm", "step"),
                                "events.jsonl (training_step)")
    sft = _table_rows(ctx.run_dir, "sft_steps")
    if sft is not None and ctx.evidence.usable("sft-steps.jsonl"):
        problems += _rows_match("sft_steps", sft, ctx.evidence.jsonl("sft-steps.jsonl") or [],
                                ("run", "step", "attempt"), "sft-steps.jsonl")
    saved = _table_rows(ctx.run_dir, "arm_checkpoints")
    logged = {(e.get("arm"), e.get("checkpoint")) for e in _events(ctx, "training_step") if e.get("checkpoint")}
    for row in saved or []:
        if logged and row.get("uri") is not None and (row.get("arm"), row.get("uri")) not in logged:
            problems.append(f"tables/arm_checkpoints.parquet: {short(row.get('arm'), 30)} step {short(row.get('step'))}'s "
                            f"{short(row.get('uri'), 50)} is no checkpoint its training_step events logged")
            break
    finished = _table_rows(ctx.run_dir, "sft_finished_runs")
    if finished:
        listed = {str(c.get("arm")): c.get("uri") for c in as_list(as_dict(ctx.result.get("evidence")).get("checkpoints"))
                  if isinstance(c, dict)}
        for row in finished:
            run, path = str(row.get("run")), row.get("sampler_path")
            if run in listed and path is not None and path != listed[run]:
                problems.append(f"tables/sft_finished_runs.parquet: run {short(run, 30)}'s sampler {short(path, 40)} is not "
                                "its listed final checkpoint")
    return problems


# ---------------------------------------------------------------------------- events.jsonl


def _evaluators(ctx: GradeContext) -> dict[str, Any]:
    return as_dict(as_dict(ctx.result.get("evaluation")).get("evaluators"))


def _item_count(provenance: Any) -> int | None:
    ids = as_dict(as_dict(provenance).get("items")).get("ids")
    return len(ids) if isinstance(ids, list) else None


def _evaluation_problems(ctx: GradeContext) -> list[str]:
    problems = []
    evaluators = _evaluators(ctx)
    for event in _events(ctx, "evaluator_frozen"):
        count = _item_count(evaluators.get(str(event.get("evaluator_id"))))
        if count is not None and "n_items" in event and event.get("n_items") != count:
            problems.append(f"the evaluator_frozen event froze {short(event.get('n_items'))} items, the evaluator "
                            f"lists {count}")
    counts = {c for c in (_item_count(p) for p in evaluators.values()) if c is not None}
    if ctx.result.get("status") == "succeeded" and len(counts) == 1:
        (count,) = counts
        last: dict[str, dict[str, Any]] = {}
        for event in _events(ctx, "evaluation_progress"):
            last[str(event.get("arm"))] = event
        for arm, event in last.items():
            if event.get("done") != count or event.get("total") != count:
                problems.append(f"the evaluation of {short(arm, 30)} logged {short(event.get('done'))} of "
                                f"{short(event.get('total'))} items, the evaluator lists {count}")
    gate = _gate(ctx, "evaluation")
    scores: dict[str, list[Any]] = {}
    for score in as_list(as_dict(ctx.result.get("evaluation")).get("scores")):
        if isinstance(score, dict):
            scores.setdefault(str(score.get("arm")), []).append(score.get("value"))
    for key, values in as_dict((gate or {}).get("measured")).items():
        if key in ("n_items", "evaluator_id", "grading_failures") or not isinstance(values, dict):
            continue
        for arm, value in values.items():
            if arm in scores and is_number(value) and not any(is_number(v) and close(v, value) for v in scores[arm]):
                problems.append(f"the evaluation gate measured {key} {short(value)} for {short(arm, 30)}, not its score")
    if gate is not None and counts and "n_items" in as_dict(gate.get("measured")) \
            and as_dict(gate.get("measured")).get("n_items") not in counts:
        problems.append("the evaluation gate's item count is not the evaluator's")
    return problems


def _decision_problems(ctx: GradeContext) -> list[str]:
    gate = _gate(ctx, "decision")
    measured = as_dict((gate or {}).get("measured"))
    problems = []
    if "verdict" in measured and ctx.result.get("verdict") is not None and measured["verdict"] != ctx.result.get("verdict"):
        problems.append(f"the decision gate says verdict {short(measured['verdict'])}, the record "
                        f"{short(ctx.result.get('verdict'))}")
    if "grid_edge" in measured and "grid_edge" in ctx.result and measured["grid_edge"] != ctx.result.get("grid_edge"):
        problems.append("the decision gate's grid_edge is not the record's")
    for criterion in as_list(as_dict(ctx.result.get("decision")).get("criteria")):
        cid = as_dict(criterion).get("id")
        if isinstance(cid, str) and cid in measured and is_number(measured[cid]) \
                and is_number(criterion.get("effect")) and not close(measured[cid], criterion["effect"]):
            problems.append(f"the decision gate measured {short(cid, 30)} {short(measured[cid])}, the record's effect "
                            f"{short(criterion['effect'])}")
    return problems


def _backend_problems(ctx: GradeContext) -> list[str]:
    rehearsal = ctx.result.get("rehearsal") if isinstance(ctx.result.get("rehearsal"), dict) else None
    if rehearsal is None:
        return []
    problems = []
    backend = rehearsal.get("backend")
    for event in _events(ctx, "run_config"):
        kind = as_dict(event.get("backend")).get("kind")
        if kind is not None and kind != backend:
            problems.append(f"the run_config event names backend {short(kind)}, the rehearsal {short(backend)}")
        if backend == "embedded" and event.get("exposure") not in (None, "embedded"):
            problems.append(f"the run_config event names exposure {short(event.get('exposure'))} on the embedded backend")
    for event in _events(ctx, "service_exposure"):
        if event.get("kind") is not None and event.get("kind") != backend:
            problems.append(f"the service_exposure event names {short(event.get('kind'))}, the rehearsal {short(backend)}")
        if backend == "embedded" and event.get("exposure") not in (None, "embedded"):
            problems.append(f"the service_exposure event names exposure {short(event.get('exposure'))} on the "
                            "embedded backend")
    intake = as_dict(as_dict(_gate(ctx, "spec_intake")).get("measured"))
    if "served_model" in intake and rehearsal.get("model") is not None and intake["served_model"] != rehearsal["model"]:
        problems.append(f"the spec_intake gate served {short(intake['served_model'])}, the rehearsal's model is "
                        f"{short(rehearsal['model'])}")
    return problems


def _pilot_problems(ctx: GradeContext) -> list[str]:
    """The values the record posts from its activation pilot are one logged pilot's."""
    values = as_dict(as_dict(ctx.result.get("activation_calibration")).get("values"))
    logged = [as_dict(as_dict(p).get("values")) for e in _events(ctx, "activation_pilots") for p in as_list(e.get("pilots"))]
    if not values or not logged:
        return []
    if not any(set(p) == set(values) and all(_same(p[k], values[k]) for k in values) for p in logged):
        return ["activation_calibration.values are no pilot's values that the activation_pilots event logged"]
    return []


def _event_kind_problems(ctx: GradeContext) -> list[str]:
    unknown = sorted({str(e.get("event")) for e in ctx.events or [] if isinstance(e, dict)} - PIPELINE_EVENTS)
    return [f"events.jsonl holds event(s) the pipeline never writes: {', '.join(unknown[:3])}"] if unknown else []


def _probe_problems(ctx: GradeContext) -> list[str]:
    """The probe event's per-arm results are the ones the preflight_probe gate judged."""
    measured = as_dict(as_dict(_gate(ctx, "preflight_probe")).get("measured"))
    for event in _events(ctx, "probe"):
        for arm, entry in as_dict(event.get("arms")).items():
            judged = measured.get(arm)
            if isinstance(entry, dict) and isinstance(judged, dict) \
                    and not all(_same(entry[k], judged[k]) for k in entry if k in judged):
                return [f"the probe event's {short(arm, 30)} is not what the preflight_probe gate judged"]
    return []


def _posted_problems(ctx: GradeContext) -> list[str]:
    """A value the last event posting a field carries is RESULT's value of that field."""
    carried: dict[str, Any] = {}
    for event in _events(ctx, "result_updated"):
        for key in as_list(event.get("fields")):
            if isinstance(key, str):
                carried.pop(key, None)
                if key in event:
                    carried[key] = event[key]
        for key in ("verdict", "outcome_reason", "effect", "confidence"):
            if key in event and key not in as_list(event.get("fields")):
                carried[key] = event[key]
    return [f"events.jsonl's last update of {key} carries {short(value)}, RESULT {short(ctx.result.get(key))}"
            for key, value in carried.items() if key in ctx.result and not _same(value, ctx.result.get(key))]


@rule("TRACE-9", "record", "invalid",
      "in a run directory, run.json, tables/ and the facts events.jsonl restates agree with RESULT and its spec")
def TRACE_9(ctx: GradeContext) -> list[Issue]:
    if ctx.run_dir is None or ctx.events is None:
        return []
    problems = (_run_meta_problems(ctx) + _table_problems(ctx) + _evaluation_problems(ctx) + _decision_problems(ctx)
                + _backend_problems(ctx) + _pilot_problems(ctx) + _probe_problems(ctx) + _event_kind_problems(ctx)
                + _posted_problems(ctx))
    return [Issue("TRACE-9", INVALID, problem) for problem in problems]


CHECKS = [TRACE_9]
