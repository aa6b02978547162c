"""TRACE-9 (experiment/grading/run_files.py): a run directory's run.json, tables/ and the facts its events restate
say what the record says; PROSE-9 (experiment/grading/prose.py): the method, selected LR and time unit the prose
states are the record's.

On the grading tests' in-process records (conftest.graded_record); each check passes the honest files and finds
the edited one. tests/e2e/test_grader_trust.py runs tests/tampering_sources.py's tamperings on wiring rehearsals.
"""

from __future__ import annotations

import ast
import copy
import json
from pathlib import Path

import pytest

from experiment.grading import prose
from experiment.grading.run_files import PIPELINE_EVENTS, TRACE_9
from grading_contexts.general import attested_context, attested_messages


_ctx, _messages = attested_context, attested_messages


def _evaluator(result):
    return next(iter(result["evaluation"]["evaluators"].items()))


@pytest.fixture
def run(graded_record, tmp_path):
    """The self-generated record in a run directory: run.json as the store writes it, and the events that restate
    the evaluation and the decision, as the run logs them."""
    result, events = graded_record("paired")
    plan = _ctx(result).plan
    meta = {"run_id": tmp_path.name, "spec_title": plan.spec_title, "spec_sha256": plan.spec_sha256,
            "started": "2026-01-01T00:00:00+00:00", "spec": Path(str(plan.spec_path)).name,
            "spec_path": str(plan.spec_path), "scale": "as-written"}
    (tmp_path / "run.json").write_text(json.dumps(meta))
    eid, provenance = _evaluator(result)
    n_items = len(provenance["items"]["ids"])
    scores = {s["arm"]: s["value"] for s in result["evaluation"]["scores"]}
    events = [dict(events[0], spec_sha256=plan.spec_sha256, spec_path=str(plan.spec_path)), *events[1:],
              {"event": "evaluator_frozen", "evaluator_id": eid, "n_items": n_items},
              *({"event": "evaluation_progress", "arm": arm, "done": n_items, "total": n_items} for arm in scores),
              {"event": "gate", "gate": "evaluation", "status": "passed",
               "measured": {"evaluator_id": eid, "n_items": n_items, "accuracy": scores}},
              {"event": "gate", "gate": "decision", "status": "passed",
               "measured": {"verdict": result["verdict"],
                            **{c["id"]: c["effect"] for c in result["decision"]["criteria"]}}}]
    return result, events, tmp_path


def test_an_honest_run_directory_restates_its_record(run):
    result, events, run_dir = run
    assert _messages(TRACE_9, result, events=events, run_dir=run_dir) == []


@pytest.mark.parametrize("key,value,finding", [
    ("scale", "standard", "scale"),
    ("spec_sha256", "0" * 64, "spec_sha256"),
    ("spec", "other.json", "names spec"),
    ("spec_title", "Another experiment", "spec_title"),
])
def test_run_json_names_the_graded_spec_and_the_records_scale(run, key, value, finding):
    result, events, run_dir = run
    meta = json.loads((run_dir / "run.json").read_text())
    meta[key] = value
    (run_dir / "run.json").write_text(json.dumps(meta))
    messages = _messages(TRACE_9, result, events=events, run_dir=run_dir)
    assert any(finding in m for m in messages), messages


def _edited(events, kind, edit, gate=None):
    """The last `kind` event (of `gate`) edited: the one the record's facts are read from."""
    events = copy.deepcopy(events)
    edit([e for e in events if e.get("event") == kind and (gate is None or e.get("gate") == gate)][-1])
    return events


@pytest.mark.parametrize("kind,gate,edit,finding", [
    ("evaluator_frozen", None, lambda e: e.update(n_items=500), "froze 500 items"),
    ("evaluation_progress", None, lambda e: e.update(done=1), "logged 1 of"),
    ("gate", "evaluation", lambda e: e["measured"]["accuracy"].update({k: 0.9 for k in e["measured"]["accuracy"]}),
     "not its score"),
    ("gate", "decision", lambda e: e["measured"].update(verdict="supported"), "verdict 'supported'"),
    ("gate", "decision", lambda e: e["measured"].update({k: 0.5 for k in e["measured"] if k != "verdict"}),
     "the record's effect"),
    ("run_created", None, lambda e: e.update(spec_sha256="1" * 64), "not the run_created event's"),
])
def test_the_events_restate_the_records_evaluation_and_decision(run, kind, gate, edit, finding):
    result, events, run_dir = run
    messages = _messages(TRACE_9, result, events=_edited(events, kind, edit, gate), run_dir=run_dir)
    assert any(finding in m for m in messages), messages


def test_a_rehearsals_events_name_its_backend_and_model(run):
    result, events, run_dir = run
    result["rehearsal"] = {"backend": "embedded", "model": "embedded/tiny-arith", "scale": "wiring"}
    meta = json.loads((run_dir / "run.json").read_text())
    meta["scale"] = "wiring"
    (run_dir / "run.json").write_text(json.dumps(meta))
    honest = events + [{"event": "run_config", "backend": {"kind": "embedded"}, "exposure": "embedded"},
                       {"event": "gate", "gate": "spec_intake", "measured": {"served_model": "embedded/tiny-arith"}}]
    assert not [m for m in _messages(TRACE_9, result, events=honest, run_dir=run_dir) if "backend" in m or "served" in m]
    remote = _edited(honest, "run_config", lambda e: e.update(backend={"kind": "tinker"}, exposure="production"))
    remote = _edited(remote, "gate", lambda e: e["measured"].update(served_model="Qwen/Qwen3.5-2B"), "spec_intake")
    messages = _messages(TRACE_9, result, events=remote, run_dir=run_dir)
    assert any("names backend 'tinker'" in m for m in messages), messages
    assert any("served 'Qwen/Qwen3.5-2B'" in m for m in messages), messages


def test_the_last_update_of_a_field_carries_the_records_value(run):
    result, events, run_dir = run
    posted = events + [{"event": "result_updated", "fields": ["verdict"], "verdict": result["verdict"]}]
    assert _messages(TRACE_9, result, events=posted, run_dir=run_dir) == []
    posted[-1]["verdict"] = "supported"
    assert any("last update of verdict" in m for m in _messages(TRACE_9, result, events=posted, run_dir=run_dir))


def test_the_training_steps_table_restates_the_training_step_events(run):
    import pyarrow as pa
    import pyarrow.parquet as pq

    result, events, run_dir = run
    steps = [{"event": "training_step", "arm": "rl_selfgen", "step": s, "mean_reward": 0.25 * (s + 1)} for s in (0, 1)]
    (run_dir / "tables").mkdir()
    rows = [{k: v for k, v in e.items() if k != "event"} for e in steps]
    pq.write_table(pa.Table.from_pylist(rows), run_dir / "tables" / "training_steps.parquet")
    assert _messages(TRACE_9, result, events=events + steps, run_dir=run_dir) == []
    rows[1]["mean_reward"] = 0.9
    pq.write_table(pa.Table.from_pylist(rows), run_dir / "tables" / "training_steps.parquet")
    messages = _messages(TRACE_9, result, events=events + steps, run_dir=run_dir)
    assert any("training_steps.parquet's row" in m for m in messages), messages


def test_a_bare_record_has_no_run_files_to_compare(run):
    result, _, _ = run
    assert _messages(TRACE_9, result) == []


# ---------------------------------------------------------------------------- PROSE-9


@pytest.mark.parametrize("reasoning,finding", [
    ("The paired t-test over 48 items gives an effect of +0.02. The claim is not settled.", "'t-test'"),
    ("A bootstrap interval over 48 items gives an effect of +0.02. The claim is not settled.", "'bootstrap'"),
])
def test_the_prose_names_the_decisions_method(graded_record, reasoning, finding):
    result, _ = graded_record("paired")
    result["reasoning"] = "The paired Hoeffding bound over 48 items gives an effect of +0.02. The claim is not settled."
    assert _messages(prose.PROSE_9, result) == []
    result["reasoning"] = reasoning
    assert any(finding in m for m in _messages(prose.PROSE_9, result))


def test_the_prose_names_each_arms_selected_lr_and_times_in_seconds(graded_record):
    result, _ = graded_record("paired")
    name, entry = "trimuon", {"selected_lr": 0.08, "lr_grid": [0.02, 0.04, 0.08]}
    result["metrics"]["arms"][name] = entry
    other = next(lr for lr in entry["lr_grid"] if lr != entry["selected_lr"])
    honest = (f"Best-LR held-out NLL {name} 12.9021 (LR {entry['selected_lr']:g}); median optimizer step {name} "
              f"0.0993s. Verdict refuted.")
    result["reasoning"] = honest
    assert _messages(prose.PROSE_9, result) == []
    result["reasoning"] = honest.replace(f"(LR {entry['selected_lr']:g})", f"(LR {other:g})")
    assert any("selected_lr" in m for m in _messages(prose.PROSE_9, result))
    result["reasoning"] = honest.replace("0.0993s", "0.0993ms")
    assert any("in ms" in m for m in _messages(prose.PROSE_9, result))


def _appended_event_kinds(root: Path) -> tuple[set[str], list[str]]:
    """Every event kind the pipeline's code appends (`<store>.append_event("<kind>", ...)`), and the calls whose kind
    is not a string literal (a kind no one could list)."""
    kinds, unlisted = set(), []
    for package in ("experiment", "flows", "tasks"):
        for path in sorted((root / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr == "append_event"):
                    first = node.args[0] if node.args else None
                    if isinstance(first, ast.Constant) and isinstance(first.value, str):
                        kinds.add(first.value)
                    else:
                        unlisted.append(f"{path.relative_to(root)}:{node.lineno}")
    return kinds, unlisted


def test_the_graders_event_kinds_are_every_kind_the_pipeline_appends():
    """TRACE-9 reads an event of another kind as a forgery: the grader's list (it may not import the pipeline) is
    exactly the kinds the pipeline's code appends, each named by a literal, so a new event kind cannot turn an honest
    run directory red, and a kind the pipeline stopped writing is not accepted."""
    kinds, unlisted = _appended_event_kinds(Path(__file__).resolve().parents[2])
    assert not unlisted
    assert kinds == set(PIPELINE_EVENTS)


# ---------------------------------------------------------------------------- TRACE-9, check by check


def _write_meta(run_dir, **changes):
    meta = json.loads((run_dir / "run.json").read_text())
    meta.update(changes)
    for key in [k for k, v in changes.items() if v is None]:
        del meta[key]
    (run_dir / "run.json").write_text(json.dumps(meta))
    return meta


def _write_table(run_dir, name, rows):
    import pyarrow as pa
    import pyarrow.parquet as pq

    (run_dir / "tables").mkdir(exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), run_dir / "tables" / f"{name}.parquet")


def test_a_run_directory_without_events_is_not_compared(run):
    result, _, run_dir = run
    _write_meta(run_dir, spec_sha256="0" * 64)
    assert _messages(TRACE_9, result, events=None, run_dir=run_dir) == []


@pytest.mark.parametrize("content,finding", [("{not json", "run.json is missing or not JSON"),
                                             ("[1, 2]", "run.json is not a JSON object")])
def test_run_json_must_be_a_json_object(run, content, finding):
    result, events, run_dir = run
    (run_dir / "run.json").write_text(content)
    assert _messages(TRACE_9, result, events=events, run_dir=run_dir) == [finding]


@pytest.mark.parametrize("sha", ["0" * 64, "f" * 64])
def test_run_json_hash_differs_from_the_graded_specs_either_way(run, sha):
    result, events, run_dir = run
    plan = _ctx(result).plan
    _write_meta(run_dir, spec_sha256=sha)
    messages = _messages(TRACE_9, result, events=events, run_dir=run_dir)
    assert f"run.json's spec_sha256 {repr(sha)[:13]}... is not the hash of the spec graded against " \
           f"({plan.spec_sha256[:12]}...)" in messages, messages
    assert "run.json's spec_sha256 is not the run_created event's" in messages


@pytest.mark.parametrize("sha", ["0" * 64, "f" * 64])
def test_the_run_created_events_hash_differs_from_run_json_either_way(run, sha):
    result, events, run_dir = run
    messages = _messages(TRACE_9, result, events=_edited(events, "run_created", lambda e: e.update(spec_sha256=sha)),
                         run_dir=run_dir)
    assert messages == ["run.json's spec_sha256 is not the run_created event's"]


@pytest.mark.parametrize("name", ["a.json", "z.json"])
def test_run_json_names_the_file_of_its_spec_path(run, name):
    result, events, run_dir = run
    meta = _write_meta(run_dir, spec_path=f"/elsewhere/{name}")
    messages = _messages(TRACE_9, result, events=events, run_dir=run_dir)
    assert f"run.json names spec {meta['spec']!r} but spec_path '/elsewhere/{name}'" in messages, messages


def test_run_json_without_a_spec_name_is_not_compared_with_its_spec_path(run):
    result, events, run_dir = run
    _write_meta(run_dir, spec=None)
    messages = _messages(TRACE_9, result, events=events, run_dir=run_dir)
    assert not [m for m in messages if "but spec_path" in m], messages


@pytest.mark.parametrize("name", ["a.json", "z.json"])
def test_run_json_names_the_graded_spec_either_way(run, name):
    result, events, run_dir = run
    plan = _ctx(result).plan
    _write_meta(run_dir, spec=name, spec_path=f"/elsewhere/{name}")
    messages = _messages(TRACE_9, result, events=events, run_dir=run_dir)
    assert f"run.json names spec {name!r}, not {Path(str(plan.spec_path)).name}" in messages, messages


@pytest.mark.parametrize("title", ["", "zzz"])
def test_run_json_title_differs_from_the_specs_either_way(run, title):
    result, events, run_dir = run
    _write_meta(run_dir, spec_title=title)
    assert _messages(TRACE_9, result, events=events, run_dir=run_dir) == ["run.json's spec_title is not the spec's title"]


def test_run_json_is_held_to_a_spec_only_when_one_is_graded_against(run):
    result, events, run_dir = run
    _write_meta(run_dir, spec_sha256="0" * 64, spec_title="Another", spec="a.json", spec_path="/x/a.json")
    ctx = _ctx(result, events=events, run_dir=run_dir)
    ctx.plan = None
    assert [issue.message for issue in TRACE_9(ctx)] == ["run.json's spec_sha256 is not the run_created event's",
                                                         "run.json's spec_path is not the run_created event's"]


def test_run_json_is_not_held_to_a_plan_drawn_from_the_recorded_spec(run):
    import dataclasses

    result, events, run_dir = run
    _write_meta(run_dir, spec_title="Another")
    ctx = _ctx(result, events=events, run_dir=run_dir)
    ctx.plan = dataclasses.replace(ctx.plan, spec_path="recorded:result.json")
    assert [issue.message for issue in TRACE_9(ctx)] == []


def _rehearsal(result, events, run_dir, run_id="run-rehearsal-1", scale="wiring"):
    """The record made a rehearsal's, with run.json and run_created naming the rehearsal's spec."""
    result["rehearsal"] = {"backend": "embedded", "model": "embedded/tiny-arith", "scale": scale}
    plan = _ctx(result).plan
    _write_meta(run_dir, run_id=run_id, scale=scale, spec_sha256=plan.spec_sha256, spec_title=plan.spec_title)
    return _edited(events, "run_created", lambda e: e.update(spec_sha256=plan.spec_sha256))


def test_an_honest_rehearsals_run_json_restates_it(run):
    result, events, run_dir = run
    events = _rehearsal(result, events, run_dir)
    assert _messages(TRACE_9, result, events=events, run_dir=run_dir) == []


def test_a_rehearsals_run_id_carries_the_rehearsal_mark(run):
    result, events, run_dir = run
    run_id = "run-" + "x" * 60
    events = _rehearsal(result, events, run_dir, run_id=run_id)
    assert _messages(TRACE_9, result, events=events, run_dir=run_dir) == [
        f"run.json's run_id {repr(run_id)[:37]}... lacks the rehearsal mark the record's rehearsal gives it"]


def test_a_run_as_written_has_no_rehearsal_mark(run):
    result, events, run_dir = run
    run_id = "run-rehearsal-" + "x" * 60
    _write_meta(run_dir, run_id=run_id)
    assert _messages(TRACE_9, result, events=events, run_dir=run_dir) == [
        f"run.json's run_id {repr(run_id)[:37]}... has the rehearsal mark the record's rehearsal gives it"]


@pytest.mark.parametrize("written,recorded", [("standard", "wiring"), ("wiring", "standard")])
def test_run_json_states_the_rehearsals_scale_either_way(run, written, recorded):
    result, events, run_dir = run
    events = _rehearsal(result, events, run_dir, scale=recorded)
    _write_meta(run_dir, scale=written)
    assert _messages(TRACE_9, result, events=events, run_dir=run_dir) == [
        f"run.json says scale {written!r}, the record {recorded}"]


def _steps(arm="rl_selfgen", n=2):
    return [{"event": "training_step", "arm": arm, "step": s, "mean_reward": 0.25 * (s + 1)} for s in range(n)]


def _rows(steps):
    return [{k: v for k, v in e.items() if k != "event"} for e in steps]


@pytest.mark.parametrize("table_rows,logged", [(3, 2), (1, 2)])
def test_the_training_steps_table_has_as_many_rows_as_logged_steps(run, table_rows, logged):
    result, events, run_dir = run
    _write_table(run_dir, "training_steps", _rows(_steps(n=table_rows)))
    messages = _messages(TRACE_9, result, events=events + _steps(n=logged), run_dir=run_dir)
    assert f"tables/training_steps.parquet has {table_rows} row(s), events.jsonl (training_step) {logged}" in messages


def test_an_unreadable_table_of_logged_steps_is_a_finding(run):
    result, events, run_dir = run
    (run_dir / "tables").mkdir()
    (run_dir / "tables" / "training_steps.parquet").write_bytes(b"not parquet")
    assert _messages(TRACE_9, result, events=events + _steps(), run_dir=run_dir) == [
        "tables/training_steps.parquet cannot be read or is empty, but events.jsonl (training_step) logs 2 row(s)"]


def test_a_table_row_must_name_its_logged_step(run):
    """Without the `step` key a row cannot be matched to the step it restates, even when its other fields are one
    logged step's."""
    result, events, run_dir = run
    _write_table(run_dir, "training_steps", [{k: v for k, v in r.items() if k != "step"} for r in _rows(_steps())])
    messages = _messages(TRACE_9, result, events=events + _steps(), run_dir=run_dir)
    assert messages == ["tables/training_steps.parquet's row (arm 'rl_selfgen', step None) is not what events.jsonl "
                        "(training_step) logged"]


def test_one_finding_names_the_first_table_row_no_step_logged(run):
    result, events, run_dir = run
    arm = "rl_" + "s" * 40
    steps = _steps(arm=arm)
    rows = _rows(steps)
    for row in rows:
        row["mean_reward"] = 9.0
    _write_table(run_dir, "training_steps", rows)
    messages = _messages(TRACE_9, result, events=events + steps, run_dir=run_dir)
    assert messages == [f"tables/training_steps.parquet's row (arm {repr(arm)[:27]}..., step 0) is not what "
                        "events.jsonl (training_step) logged"]


def test_an_sft_steps_table_is_compared_only_with_a_retained_sft_log(run):
    result, events, run_dir = run
    _write_table(run_dir, "sft_steps", [{"run": "r0", "step": 0, "attempt": 1, "loss": 1.0}])
    assert _messages(TRACE_9, result, events=events, run_dir=run_dir) == []


def test_each_checkpoint_row_is_one_a_training_step_logged(run):
    result, events, run_dir = run
    arm = "rl_" + "s" * 40
    uri = "tinker://s:train:x/sampler_weights/" + "c" * 60
    steps = [dict(e, arm=arm, checkpoint=f"{uri}-{e['step']}") for e in _steps(arm=arm)]
    honest = [{"arm": arm, "step": e["step"], "uri": e["checkpoint"]} for e in steps]
    _write_table(run_dir, "arm_checkpoints", honest)
    assert _messages(TRACE_9, result, events=events + steps, run_dir=run_dir) == []
    _write_table(run_dir, "arm_checkpoints", [dict(r, uri=r["uri"] + "x") for r in honest])
    assert _messages(TRACE_9, result, events=events + steps, run_dir=run_dir) == [
        f"tables/arm_checkpoints.parquet: {repr(arm)[:27]}... step 0's {repr(honest[0]['uri'] + 'x')[:47]}... "
        "is no checkpoint its training_step events logged"]


@pytest.mark.parametrize("n_items", [1, 10_000])
def test_the_evaluator_frozen_event_froze_the_evaluators_count_either_way(run, n_items):
    result, events, run_dir = run
    count = len(_evaluator(result)[1]["items"]["ids"])
    messages = _messages(TRACE_9, result, events=_edited(events, "evaluator_frozen", lambda e: e.update(n_items=n_items)),
                         run_dir=run_dir)
    assert messages == [f"the evaluator_frozen event froze {n_items} items, the evaluator lists {count}"]


@pytest.mark.parametrize("field,delta", [("done", 1), ("total", 1), ("total", -1)])
def test_a_finished_evaluation_logged_every_item(run, field, delta):
    result, events, run_dir = run
    count = len(_evaluator(result)[1]["items"]["ids"])
    messages = _messages(TRACE_9, result, events=_edited(events, "evaluation_progress",
                                                         lambda e: e.update({field: count + delta})), run_dir=run_dir)
    arm = [e for e in events if e.get("event") == "evaluation_progress"][-1]["arm"]
    done, total = (count + delta, count) if field == "done" else (count, count + delta)
    assert messages == [f"the evaluation of {arm!r} logged {done} of {total} items, the evaluator lists {count}"]


def test_the_evaluation_progress_of_a_long_arm_name_is_quoted_to_30_characters(run):
    result, events, run_dir = run
    arm = "rl_" + "a" * 40
    count = len(_evaluator(result)[1]["items"]["ids"])
    logged = events + [{"event": "evaluation_progress", "arm": arm, "done": 1, "total": count}]
    assert _messages(TRACE_9, result, events=logged, run_dir=run_dir) == [
        f"the evaluation of {repr(arm)[:27]}... logged 1 of {count} items, the evaluator lists {count}"]


@pytest.mark.parametrize("status", ["failed", "stopped", "unknown"])
def test_an_unfinished_runs_evaluation_may_stop_partway(run, status):
    result, events, run_dir = run
    result["status"] = status
    partial = _edited(events, "evaluation_progress", lambda e: e.update(done=1))
    assert not [m for m in _messages(TRACE_9, result, events=partial, run_dir=run_dir) if "logged 1 of" in m]


def test_evaluators_of_different_sizes_leave_the_progress_uncompared(run):
    result, events, run_dir = run
    eid, provenance = _evaluator(result)
    other = copy.deepcopy(provenance)
    other["items"]["ids"] = other["items"]["ids"][:1]
    result["evaluation"]["evaluators"]["other"] = other
    partial = _edited(events, "evaluation_progress", lambda e: e.update(done=1))
    assert not [m for m in _messages(TRACE_9, result, events=partial, run_dir=run_dir) if "logged 1 of" in m]


def test_evaluators_without_item_lists_leave_the_progress_uncompared(run):
    result, events, run_dir = run
    for provenance in result["evaluation"]["evaluators"].values():
        del provenance["items"]["ids"]
    partial = _edited(events, "evaluation_progress", lambda e: e.update(done=1))
    assert not [m for m in _messages(TRACE_9, result, events=partial, run_dir=run_dir) if "logged" in m]


def test_the_evaluation_gates_counts_and_failures_are_no_scores(run):
    result, events, run_dir = run
    arms = [s["arm"] for s in result["evaluation"]["scores"]]
    measured = _edited(events, "gate", lambda e: e["measured"].update(grading_failures={a: 7 for a in arms},
                                                                      seconds=12.5), "evaluation")
    assert _messages(TRACE_9, result, events=measured, run_dir=run_dir) == []


def test_the_evaluation_gate_measured_each_arms_score(run):
    result, events, run_dir = run
    arm = "rl_" + "a" * 40
    result["evaluation"]["scores"].append({"arm": arm, "value": 0.5})
    measured = _edited(events, "gate", lambda e: e["measured"]["accuracy"].update({arm: 0.123456789012345678}),
                       "evaluation")
    assert _messages(TRACE_9, result, events=measured, run_dir=run_dir) == [
        f"the evaluation gate measured accuracy 0.12345678901234568 for {repr(arm)[:27]}..., not its score"]


def test_the_evaluation_gates_item_count_is_the_evaluators(run):
    result, events, run_dir = run
    measured = _edited(events, "gate", lambda e: e["measured"].update(n_items=3), "evaluation")
    assert _messages(TRACE_9, result, events=measured, run_dir=run_dir) == [
        "the evaluation gate's item count is not the evaluator's"]


def test_a_run_directory_without_an_evaluation_gate_has_no_count_to_compare(run):
    result, events, run_dir = run
    events = [e for e in events if not (e.get("event") == "gate" and e.get("gate") == "evaluation")]
    assert _messages(TRACE_9, result, events=events, run_dir=run_dir) == []


def test_the_decision_gate_is_its_own_last_event_whatever_gates_follow(run):
    result, events, run_dir = run
    tampered = _edited(events, "gate", lambda e: e["measured"].update(verdict="supported"), "decision")
    tampered.append({"event": "gate", "gate": "restoration_preflight", "status": "passed"})
    assert any("verdict 'supported'" in m for m in _messages(TRACE_9, result, events=tampered, run_dir=run_dir))


@pytest.mark.parametrize("verdict", ["a", "z"])
def test_the_decision_gates_verdict_differs_from_the_records_either_way(run, verdict):
    result, events, run_dir = run
    tampered = _edited(events, "gate", lambda e: e["measured"].update(verdict=verdict), "decision")
    assert _messages(TRACE_9, result, events=tampered, run_dir=run_dir) == [
        f"the decision gate says verdict {verdict!r}, the record {result['verdict']!r}"]


@pytest.mark.parametrize("gate_edge,record_edge", [(True, False), (False, True)])
def test_the_decision_gates_grid_edge_is_the_records(run, gate_edge, record_edge):
    result, events, run_dir = run
    result["grid_edge"] = record_edge
    honest = _edited(events, "gate", lambda e: e["measured"].update(grid_edge=record_edge), "decision")
    assert _messages(TRACE_9, result, events=honest, run_dir=run_dir) == []
    tampered = _edited(events, "gate", lambda e: e["measured"].update(grid_edge=gate_edge), "decision")
    assert _messages(TRACE_9, result, events=tampered, run_dir=run_dir) == ["the decision gate's grid_edge is not the record's"]
    del result["grid_edge"]
    assert _messages(TRACE_9, result, events=tampered, run_dir=run_dir) == []


def test_the_decision_gates_effect_message_quotes_the_criterion(run):
    result, events, run_dir = run
    cid = "c_" + "x" * 40
    result["decision"]["criteria"].append({"id": cid, "effect": 0.25})
    tampered = _edited(events, "gate", lambda e: e["measured"].update({cid: 0.75}), "decision")
    assert _messages(TRACE_9, result, events=tampered, run_dir=run_dir) == [
        f"the decision gate measured {repr(cid)[:27]}... 0.75, the record's effect 0.25"]


@pytest.mark.parametrize("backend,kind,exposure,findings", [
    ("embedded", "cpu", None, ["the run_config event names backend 'cpu', the rehearsal 'embedded'"]),
    ("embedded", None, "production", ["the run_config event names exposure 'production' on the embedded backend"]),
    ("custom", None, "production", []),
    ("tinker", None, "production", []),
])
def test_a_rehearsals_run_config_names_its_backend(run, backend, kind, exposure, findings):
    result, events, run_dir = run
    events = _rehearsal(result, events, run_dir)
    result["rehearsal"]["backend"] = backend
    config = {"event": "run_config", "exposure": exposure, **({"backend": {"kind": kind}} if kind else {})}
    assert _messages(TRACE_9, result, events=events + [config], run_dir=run_dir) == findings


@pytest.mark.parametrize("kind,exposure,findings", [
    ("tinker", None, ["the service_exposure event names 'tinker', the rehearsal 'embedded'"]),
    (None, "production", ["the service_exposure event names exposure 'production' on the embedded backend"]),
    ("embedded", "embedded", []),
])
def test_a_rehearsals_service_exposure_names_its_backend(run, kind, exposure, findings):
    result, events, run_dir = run
    events = _rehearsal(result, events, run_dir)
    exposure_event = {"event": "service_exposure", "kind": kind, "exposure": exposure}
    assert _messages(TRACE_9, result, events=events + [exposure_event], run_dir=run_dir) == findings


def test_the_spec_intake_gate_served_the_rehearsals_model_either_way(run):
    result, events, run_dir = run
    events = _rehearsal(result, events, run_dir)
    served = events + [{"event": "gate", "gate": "spec_intake", "measured": {"served_model": "zzz/model"}}]
    assert _messages(TRACE_9, result, events=served, run_dir=run_dir) == [
        "the spec_intake gate served 'zzz/model', the rehearsal's model is 'embedded/tiny-arith'"]


def test_the_posted_activation_values_are_a_logged_pilots(run):
    result, events, run_dir = run
    values = result["activation_calibration"]["values"]
    other = {k: v + 1 for k, v in values.items()}
    logged = events + [{"event": "activation_pilots", "pilots": [{"values": other}, {"values": dict(values)}]}]
    assert _messages(TRACE_9, result, events=logged, run_dir=run_dir) == []
    logged[-1]["pilots"] = logged[-1]["pilots"][:1]
    assert _messages(TRACE_9, result, events=logged, run_dir=run_dir) == [
        "activation_calibration.values are no pilot's values that the activation_pilots event logged"]


def test_every_event_is_of_a_kind_the_pipeline_writes(run):
    result, events, run_dir = run
    added = events + [{"event": kind} for kind in ("zz_d", "zz_a", "zz_c", "zz_b")]
    assert _messages(TRACE_9, result, events=added, run_dir=run_dir) == [
        "events.jsonl holds event(s) the pipeline never writes: zz_a, zz_b, zz_c"]


def test_the_probe_event_is_what_the_probe_gate_judged(run):
    result, events, run_dir = run
    judged = {"event": "gate", "gate": "preflight_probe", "measured": {"rl_selfgen": {"ok": True, "seconds": 1.5}}}
    probe = {"event": "probe", "arms": {"rl_selfgen": {"ok": True, "seconds": 1.5}}}
    assert _messages(TRACE_9, result, events=events + [judged, probe], run_dir=run_dir) == []
    probe["arms"]["rl_selfgen"]["seconds"] = 0.1
    assert _messages(TRACE_9, result, events=events + [judged, probe], run_dir=run_dir) == [
        "the probe event's 'rl_selfgen' is not what the preflight_probe gate judged"]


def test_an_update_carries_its_verdict_whether_or_not_it_lists_it(run):
    result, events, run_dir = run
    posted = events + [{"event": "result_updated", "fields": ["status"], "status": result["status"],
                        "verdict": "supported"}]
    assert _messages(TRACE_9, result, events=posted, run_dir=run_dir) == [
        f"events.jsonl's last update of verdict carries 'supported', RESULT {result['verdict']!r}"]


@pytest.fixture
def sft_run(graded_record, tmp_path):
    """The TriMuon record (an LR grid of SFT runs, sft-steps.jsonl retained) in a run directory without tables yet."""
    result, events = graded_record("best_lr")
    return result, events, tmp_path


def _table_findings(result, events, run_dir):
    return [m for m in _messages(TRACE_9, result, events=events, run_dir=run_dir) if m.startswith("tables/")]


def test_a_run_directory_without_tables_has_none_to_compare(sft_run):
    result, events, run_dir = sft_run
    assert _table_findings(result, events, run_dir) == []


def test_the_sft_steps_table_restates_sft_steps_jsonl(sft_run):
    from experiment.grading.evidence import EvidenceAccess

    result, events, run_dir = sft_run
    rows = EvidenceAccess(result).jsonl("sft-steps.jsonl")
    _write_table(run_dir, "sft_steps", rows)
    assert _table_findings(result, events, run_dir) == []
    run = rows[1]["run"]
    _write_table(run_dir, "sft_steps", [rows[0], dict(rows[1], optim_seconds=9.0), *rows[2:]])
    assert _table_findings(result, events, run_dir) == [
        f"tables/sft_steps.parquet's row (run {run!r}, step {rows[1]['step']}, attempt None) is not what "
        "sft-steps.jsonl logged"]


def test_each_finished_sft_runs_sampler_is_its_listed_final_checkpoint(sft_run):
    result, events, run_dir = sft_run
    run, uri = "trimuon@lr=" + "1" * 40, "tinker://s:train:trimuon/sampler_weights/" + "f" * 40
    result["evidence"]["checkpoints"].append({"arm": run, "step": 80, "uri": uri})
    honest = [{"run": c["arm"], "sampler_path": c["uri"]} for c in result["evidence"]["checkpoints"]]
    unlisted = [{"run": "dimuon_lite@lr=9", "sampler_path": "tinker://elsewhere"}, {"run": run, "sampler_path": None}]
    _write_table(run_dir, "sft_finished_runs", honest + unlisted)
    assert _table_findings(result, events, run_dir) == []
    for path in (uri[:-1] + "0", uri + "0"):  # sorting before and after the listed one
        _write_table(run_dir, "sft_finished_runs", honest[:-1] + [{"run": run, "sampler_path": path}])
        assert _table_findings(result, events, run_dir) == [
            f"tables/sft_finished_runs.parquet: run {repr(run)[:27]}...'s sampler {repr(path)[:37]}... is not its "
            "listed final checkpoint"]


@pytest.mark.parametrize("backend,kind,exposure,findings", [
    ("embedded", "cpu", None, ["the service_exposure event names 'cpu', the rehearsal 'embedded'"]),
    ("custom", None, "production", []),
    ("tinker", None, "production", []),
])
def test_a_rehearsals_service_exposure_is_held_to_the_embedded_exposure_only_on_that_backend(
        run, backend, kind, exposure, findings):
    result, events, run_dir = run
    events = _rehearsal(result, events, run_dir)
    result["rehearsal"]["backend"] = backend
    exposure_event = {"event": "service_exposure", "kind": kind, "exposure": exposure}
    assert _messages(TRACE_9, result, events=events + [exposure_event], run_dir=run_dir) == findings


@pytest.mark.parametrize("change", ["a value more", "a value fewer"])
def test_a_logged_pilot_with_other_values_than_posted_is_not_the_posted_one(run, change):
    result, events, run_dir = run
    values = dict(result["activation_calibration"]["values"])
    if change == "a value more":
        pilot = {**values, "another_measurement": 0.5}
    else:
        pilot = {k: v for k, v in list(values.items())[1:]}
    logged = events + [{"event": "activation_pilots", "pilots": [{"values": pilot}]}]
    assert _messages(TRACE_9, result, events=logged, run_dir=run_dir) == [
        "activation_calibration.values are no pilot's values that the activation_pilots event logged"]


def test_the_probe_finding_quotes_the_arm_to_30_characters(run):
    result, events, run_dir = run
    arm = "rl_" + "p" * 40
    judged = {"event": "gate", "gate": "preflight_probe", "measured": {arm: {"ok": True}}}
    probe = {"event": "probe", "arms": {arm: {"ok": False}}}
    assert _messages(TRACE_9, result, events=events + [judged, probe], run_dir=run_dir) == [
        f"the probe event's {repr(arm)[:27]}... is not what the preflight_probe gate judged"]
