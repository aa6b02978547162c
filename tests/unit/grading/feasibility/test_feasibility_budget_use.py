"""FEAS-13: RESULT.budget_use (the run's wall time against the spec's wall budget, added with the intake's budget
check, issue 46) is graded against the spec's budget and the record's own timings.

The e2e every-leaf property found it neither graded nor listed (its strict xfail for GS1 and the self-generated
record: `budget_use.measured` swapped for another string left the grade green). Each tampering below left the
grade as it was on the parent grader (shown by running this file there: every "caught" case failed) and is
caught here; the honest budget_use, as the run writes it, stays green.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from experiment.contract.plan import build_plan
from experiment.contract.spec import load_spec
from experiment.grading import feasibility, grade_record
from experiment.grading.evidence import EvidenceAccess
from experiment.stats.feasibility import budget_use
from suite import SELFGEN_SPEC

STARTED = "2026-12-07T17:11:15+00:00"


def _honest(elapsed_end: str = "2026-12-07T17:13:15+00:00") -> dict:
    plan = build_plan(load_spec(SELFGEN_SPEC))
    return budget_use(plan.budget, STARTED, elapsed_end)


def _feas13(record: dict) -> list[str]:
    graded = grade_record(record)
    return [issue.message for issue in graded.categories["feasibility"].issues if issue.rule == "FEAS-13"]


@pytest.fixture
def paired(graded_record):
    return graded_record("paired")[0]


def test_the_budget_use_the_run_writes_grades_green(paired):
    paired["budget_use"] = _honest()
    assert _feas13(paired) == []
    over = _honest("2026-12-07T20:11:15+00:00")  # 3 h of a 2 h budget: the note says so
    assert over["within_budget"] is False and "note" in over
    paired["budget_use"] = over
    assert _feas13(paired) == []


@pytest.mark.parametrize("edit", [
    lambda u: u.update(measured="wall time of the training phase only"),
    lambda u: u.update(budget_wall_seconds=u["budget_wall_seconds"] * 2),
    lambda u: u.update(within_budget=False),
    lambda u: u.update(note="the run overran its wall budget"),
    lambda u: u.pop("measured"),
    lambda u: u.update(elapsed_wall_seconds=-1.0),
    lambda u: u.update(elapsed_wall_seconds="120"),
    lambda u: u.update(elapsed_wall_seconds=9000.0),  # over the budget, yet within_budget and no note
    lambda u: u.update(elapsed_wall_seconds=1e300),  # no wall time at all (and no crash)
], ids=["measured", "budget", "within", "note", "no measured", "negative", "text", "overrun hidden", "huge"])
def test_a_budget_use_the_budget_and_its_elapsed_time_do_not_give_is_invalid(paired, edit):
    use = _honest()
    edit(use)
    paired["budget_use"] = use
    assert _feas13(paired), use


def test_the_elapsed_time_is_at_least_the_wall_time_the_pilot_measured(paired):
    use = _honest()
    measurements = paired["feasibility"]["measurements"]
    measurements["training"]["wall_seconds"] = use["elapsed_wall_seconds"] + 30.0
    paired["budget_use"] = use
    assert any("less than the wall time the feasibility pilot measured" in m for m in _feas13(paired))


def _run_dir_ctx(tmp_path, elapsed: float, posted_at: str) -> SimpleNamespace:
    (tmp_path / "run.json").write_text(json.dumps({"started": STARTED}))
    events = [{"ts": STARTED, "event": "run_created"},
              {"ts": posted_at, "event": "result_updated", "fields": ["budget_use"]}]
    return SimpleNamespace(run_dir=tmp_path, events=events, result={}, evidence=EvidenceAccess({}))


def test_in_a_run_directory_the_elapsed_time_is_from_the_start_to_the_event_that_posted_it(tmp_path):
    assert feasibility._budget_use_posted(_run_dir_ctx(tmp_path, 120.0, "2026-12-07T17:13:15+00:00"), 120.0) == []
    assert feasibility._budget_use_posted(_run_dir_ctx(tmp_path, 120.0, "2026-12-07T17:13:16+00:00"), 120.0) == []
    found = feasibility._budget_use_posted(_run_dir_ctx(tmp_path, 180.0, "2026-12-07T17:13:15+00:00"), 180.0)
    assert [issue.rule for issue in found] == ["FEAS-13"]
    found = feasibility._budget_use_posted(_run_dir_ctx(tmp_path, 60.0, "2026-12-07T17:13:15+00:00"), 60.0)
    assert [issue.rule for issue in found] == ["FEAS-13"]
