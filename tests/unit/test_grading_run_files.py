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

from experiment.contract.plan import draft_plan
from experiment.grading import grade, prose
from experiment.grading.common import GradeContext
from experiment.grading.evidence import EvidenceAccess
from experiment.grading.run_files import PIPELINE_EVENTS, TRACE_9


def _ctx(result, events=None, run_dir=None):
    evidence = EvidenceAccess(result)
    spec = grade._attested(result, evidence, None).spec
    return GradeContext(result=result, evidence=evidence, spec=spec.to_dict(), spec_model=spec, plan=draft_plan(spec),
                        run_dir=run_dir, events=events)


def _messages(check, result, **kwargs):
    return [issue.message for issue in check(_ctx(result, **kwargs))]


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
