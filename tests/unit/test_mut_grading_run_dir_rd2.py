"""The run-directory validator's deviations, correctness, provenance and evaluation checks tested from each side
(experiment/grading/run_dir.py, `_check_deviations_recorded_before_use` to `check_evaluation`;
docs/contract-rules.md GEN-6, CORR-1..6, REST-1..7, EVAL-1/7/8 and the run-dir table's check ids).

One consistent GS1 run (test_validation.build_gs1_run) is built and loaded once per module; each test takes
deep copies of its RESULT, events, plan and spec, breaks one thing and validates the copy in memory (the
evidence files stay the built ones, read-only). Expected findings are worked out from the rules' text: a
value on each side of a comparison, each operand of a condition, a later entry after one that is skipped
(issue 28 item 7: the survivors of the complete mutation run)."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest
from test_validation import BASELINE, RESTORATION_EVIDENCE, TREATMENT, build_gs1_run, optimizer_check, provenance_entry

from experiment.grading.run_dir import _RunFiles, _Validator

HEX_A, HEX_B = "a" * 64, "b" * 64


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> _RunFiles:
    store = build_gs1_run(tmp_path_factory.mktemp("run-dir-rd2") / "runs")
    return _RunFiles.load(store.run_dir)


class Run:
    """Deep copies of one built run's records, to break; `problems(prefix)` validates them."""

    def __init__(self, files: _RunFiles):
        self._files = files
        self.result: dict[str, Any] = copy.deepcopy(files.result)
        self.events: list[dict[str, Any]] = copy.deepcopy(files.events)
        self.plan: dict[str, Any] = copy.deepcopy(files.plan)
        self.spec: dict[str, Any] = copy.deepcopy(files.spec)

    def problems(self, *prefixes: str) -> list[tuple[str, str]]:
        files = dataclasses.replace(self._files, result=self.result, events=self.events, plan=self.plan,
                                    spec=self.spec, setup_problems=[])
        return [(p.check, p.message) for p in _Validator(files).run().problems if p.check.startswith(prefixes)]

    def checks(self, *prefixes: str) -> list[str]:
        return [check for check, _ in self.problems(*prefixes)]

    def plan_gate(self, name: str) -> dict[str, Any]:
        return next(gate for gate in self.plan["gates"] if gate["name"] == name)

    def set_gate_status(self, name: str, status: str) -> None:
        for event in self.events:
            if event.get("event") == "gate" and event.get("gate") == name:
                event["status"] = status


@pytest.fixture
def run(built) -> Run:
    return Run(built)


def test_the_built_run_has_no_problem(run):
    assert run.problems() == []


# ---------------------------------------------------------------- GEN-6: deviations posted in a running update

STEPS = {"field": "steps", "original": "40", "effective": "20", "reason": "the budget allows 20 steps"}
UNRECORDED_STEPS = ("deviations.unrecorded",
                    "the steps deviation first appears outside a status running update (unrecorded)")


def _update(status: str, deviations: list[Any]) -> dict[str, Any]:
    return {"event": "result_updated", "fields": ["deviations", "status"], "status": status, "deviations": deviations}


def test_a_deviation_posted_in_a_running_update_is_recorded(run):
    run.result["deviations"] = [STEPS]
    run.events.insert(5, _update("running", [STEPS]))
    assert run.problems("deviations.") == []


def test_a_deviation_first_posted_in_a_failed_final_update_is_unrecorded(run):
    """"failed" sorts before "running": only a running update records a deviation."""
    run.result.update(status="failed", deviations=[STEPS])
    run.events.append(_update("failed", [STEPS]))
    assert run.problems("deviations.") == [UNRECORDED_STEPS]


def test_a_deviation_first_posted_in_the_succeeded_update_is_unrecorded(run):
    run.result["deviations"] = [STEPS]
    run.events.append(_update("succeeded", [STEPS]))
    assert run.problems("deviations.") == [UNRECORDED_STEPS]


def test_an_unrecorded_deviation_that_is_no_object_is_named_by_a_question_mark(run):
    run.result["deviations"] = ["steps 40 -> 20"]
    assert run.problems("deviations.") == [
        ("deviations.shape", "deviations[0] is not an object"),
        ("deviations.unrecorded", "the ? deviation first appears outside a status running update (unrecorded)"),
    ]


def _without_update_deviations(run: Run) -> None:
    """An events log whose updates carry no deviations list: the spec_intake gate's count is the evidence."""
    for event in run.events:
        event.pop("deviations", None)


def _intake_count(run: Run, count: Any) -> None:
    for event in run.events:
        if event.get("event") == "gate" and event.get("gate") == "spec_intake":
            event["measured"] = {"deviations": count}


@pytest.mark.parametrize("counted", [1, 2], ids=["as many", "more"])
def test_deviations_counted_by_the_intake_gate_are_recorded(run, counted):
    """Events with a status but no deviations list are no updates; the last spec_intake gate counted >= them."""
    _without_update_deviations(run)
    _intake_count(run, counted)
    run.result["deviations"] = [STEPS]
    assert run.problems("deviations.") == []


def test_more_deviations_than_the_intake_gate_counted_are_unrecorded(run):
    _without_update_deviations(run)
    _intake_count(run, 1)
    run.result["deviations"] = [STEPS, {**STEPS, "field": "dataset"}]
    assert run.problems("deviations.") == [
        ("deviations.unrecorded", "2 deviations but only 1 were posted in the running update of spec_intake")]


def test_no_intake_count_leaves_the_deviations_unrecorded(run):
    _without_update_deviations(run)
    _intake_count(run, None)
    run.result["deviations"] = [STEPS]
    assert run.problems("deviations.") == [
        ("deviations.unrecorded", "1 deviations but events.jsonl records no running update carrying them")]


@pytest.mark.parametrize("other", [
    {"event": "capacity_block", "gate": "spec_intake", "waited_seconds": 30},  # an event kind before "gate"
    {"event": "run_resumed", "gate": "spec_intake", "reused_gates": ["spec_intake"]},  # one after "gate"
    {"event": "gate", "gate": "spec_revision", "status": "passed", "measured": {}},  # a gate named after it
    {"event": "gate", "gate": "preflight_probe", "status": "passed", "measured": {}},  # a gate named before it
], ids=["capacity_block event", "run_resumed event", "gate sorting after", "gate sorting before"])
def test_only_the_spec_intake_gate_event_counts_the_deviations(run, other):
    """An event that is not the spec_intake gate's verdict, logged after it, does not replace its count."""
    _without_update_deviations(run)
    _intake_count(run, 1)
    run.events.append(other)
    run.result["deviations"] = [STEPS]
    assert run.problems("deviations.") == []


def test_the_last_spec_intake_verdict_counts_the_deviations(run):
    """A spec_intake gate recorded again (after a spec revision) counts the deviations of the run that went on."""
    _without_update_deviations(run)
    _intake_count(run, 0)
    run.events.append({"event": "gate", "gate": "spec_intake", "status": "passed", "measured": {"deviations": 1}})
    run.result["deviations"] = [STEPS]
    assert run.problems("deviations.") == []
    run.events[-1]["measured"]["deviations"] = 0
    assert run.problems("deviations.") == [
        ("deviations.unrecorded", "1 deviations but only 0 were posted in the running update of spec_intake")]
