"""Refused before any spending (issue 46): what intake knows a run cannot get past is refused at `--plan`, with
exit 2 and one line, before any service contact; a budget that may not hold the run is predicted so; data files
are read at intake one line at a time; a run that overran its budget says so in its record.

Each rule is shown to be the intake check's work, not luck: with `check_before_spending` switched off (the parent
commit's intake) the same variant is planned and predicted verified, and the run then stopped after spending
(the GS1 spec without its revision file at the correctness preflight after 350 s; a 6 s budget at the feasibility
pilot; bounds [0, 100] deciding nothing). The variants themselves are in tests/spec_variants.py (BEFORE_SPENDING).
"""

from __future__ import annotations

import json
import tracemalloc

import pytest
from spec_variants import variant, write_variant

import experiment.contract.support as support_module
from experiment.contract import cost
from experiment.contract.plan import build_plan
from experiment.contract.spec import SpecError, load_spec
from experiment.data import DATA_DIRS_ENV, count_task_file
from experiment.grading.predict import predict_grades
from experiment.stats.feasibility import budget_use


@pytest.mark.parametrize("name,seed,refusal", [
    ("pins-unresolved-no-revision", "gs1", "--draft-revision"),
    ("budget-six-seconds", "gs1", "cannot hold the run"),
    ("bounds-percent", "gs1", "is not the range of accuracy"),
    ("max-seq-len-64", "gs1", "leaves no room for the prompt"),
])
def test_each_refusal_is_the_intake_check_and_not_luck(name, seed, refusal, tmp_path, monkeypatch):
    path = write_variant(variant(name, seed), tmp_path)
    monkeypatch.setattr(support_module, "check_before_spending", lambda spec, plan: None)
    weakened = build_plan(load_spec(path))  # the parent's intake: planned, and evaluator predicted verified
    assert predict_grades(weakened)["evaluator"]["grade"] == "verified"
    monkeypatch.undo()
    with pytest.raises(SpecError, match=refusal.replace("-", r"\-")) as refused:
        build_plan(load_spec(path))
    assert "\n" not in str(refused.value)


def test_a_spec_with_unresolved_pins_is_refused_with_what_to_pin_and_how():
    """The exchange's GS1 spec as written, without its revision file: both pins named, and the draft command."""
    from suite import GS1_SPEC

    raw = json.loads(GS1_SPEC.read_text())
    with pytest.raises(SpecError) as refused:
        build_plan(load_spec(_alone(raw)))
    message = str(refused.value)
    assert "gs1_kernel_advantage_loop.baseline_revision" in message and "reference_revision" in message
    assert "the spec has no revision file" in message and "--draft-revision" in message


def _alone(raw: dict, directory=None):
    import tempfile
    from pathlib import Path

    folder = Path(directory or tempfile.mkdtemp())
    path = folder / "gs1_alone.json"
    path.write_text(json.dumps(raw))
    return path


def test_a_budget_that_may_not_hold_the_run_is_predicted_to_stop_at_feasibility(tmp_path):
    plan = build_plan(load_spec(write_variant(variant("budget-may-not-fit"), tmp_path)))
    estimate = plan.gate("feasibility_pilot").details["static_estimate"]
    assert estimate["floor_seconds"] < estimate["budget_seconds"] < estimate["estimate_seconds"]
    grades = predict_grades(plan, "production")
    assert grades["feasibility"]["may_stop_at_feasibility"] is True
    assert "may stop at feasibility" in grades["feasibility"]["reason"]
    assert grades["evaluator"]["if_stopped_at_feasibility"] == "unknown"
    seed = build_plan(load_spec(write_variant(variant("eval-ten-items"), tmp_path)))  # 120 min: it holds
    assert "may_stop_at_feasibility" not in predict_grades(seed)["feasibility"]


def test_a_budget_not_enforced_is_predicted_to_be_overrun_not_refused(tmp_path):
    plan = build_plan(load_spec(write_variant(variant("budget-one-minute", "trimuon"), tmp_path)))
    feasibility = predict_grades(plan)["feasibility"]
    assert "may be overrun" in feasibility["reason"] and "budget_use" in feasibility["reason"]
    assert "may_stop_at_feasibility" not in feasibility


def test_the_static_estimate_uses_the_production_service_profile_rates():
    """cost.py states the production service's rates (the pipeline may not import the embedded backend); they are
    the ones the embedded backend's Spindle-shaped profile reproduces (docs/service-profile.md)."""
    from embedded_tinker.service_profile import profile_named

    profile = profile_named("spindle-qwen3.5-2b", 1.0)
    assert (cost.CREATE_MODEL_S, cost.LOAD_WEIGHTS_S, cost.SAMPLER_WEIGHTS_S, cost.OPTIM_STEP_S, cost.ROLLOUT_S,
            cost.FORWARD_BACKWARD_S, cost.FORWARD_S, cost.GREEDY_ITEM_S) == (
        profile.create_model_s, profile.load_checkpoint_s, profile.sampler_weights_s, profile.optim_step_s,
        profile.sampled_sequence_s, profile.forward_backward_per_sequence_s, profile.forward_per_sequence_s,
        profile.greedy_sequence_s)


def test_a_task_file_is_checked_one_line_at_a_time(tmp_path):
    """Intake counts and checks a task file without holding it: the peak allocation stays a small part of the
    file (before: the whole file read, decoded, split and parsed at once, 926 MB of RSS for 150 MB)."""
    path = tmp_path / "tasks.jsonl"
    question = "How many apples? " + "x" * 2000
    with path.open("w") as handle:
        for index in range(3000):
            handle.write(json.dumps({"id": f"t{index}", "question": question, "answer": str(index)}) + "\n")
    size = path.stat().st_size
    tracemalloc.start()
    try:
        assert count_task_file(path) == 3000
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < size / 10, (peak, size)


def test_a_data_file_nested_past_the_parser_is_one_line_not_a_traceback(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_DIRS_ENV, str(tmp_path))
    path = write_variant(variant("dataset-nested-past-the-parser"), tmp_path)
    with pytest.raises(SpecError, match="nested deeper than 16 levels"):
        build_plan(load_spec(path))


def test_a_run_that_overran_its_budget_says_so():
    over = budget_use({"max_wall_minutes": 1}, "2026-12-07T10:00:00+00:00", "2026-12-07T10:03:00+00:00")
    assert over["within_budget"] is False and over["elapsed_wall_seconds"] == 180
    assert over["note"].startswith("the run overran its wall budget: 180 s of a 60 s budget (3.0x)")
    within = budget_use({"max_wall_minutes": 5}, "2026-12-07T10:00:00+00:00", "2026-12-07T10:03:00+00:00")
    assert within["within_budget"] is True and "note" not in within
    assert budget_use({}, "2026-12-07T10:00:00+00:00", "2026-12-07T10:03:00+00:00") is None


def test_a_line_past_the_row_cap_is_refused_without_reading_it_whole(tmp_path, monkeypatch):
    from experiment import data

    monkeypatch.setattr(data, "MAX_DATA_LINE_BYTES", 64)
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps({"id": "t0", "question": "q" * 200, "answer": "1"}) + "\n")
    with pytest.raises(data.DataError, match=r"tasks.jsonl:1: a line longer than 64 bytes"):
        count_task_file(path)
