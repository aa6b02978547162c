"""The run-directory layer's own record rules (experiment/grading/run_dir/record.py: events; the small helpers), each
on an in-memory run: a `RunFiles` built from a RESULT, events and the real GS1 / self-generation plans, with no file
read. Each expected finding is worked out from docs/contract-rules.md (events.*: RUN-1) and each comparison is tried
with a wrong value on each side of the right one (issue 28 item 7: the mutation run of grading/). The result.*,
vocabulary.* and deviations.* checks run GEN-2..8's one implementation (tests/unit/grading/general/)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from suite import GS1_SPEC

from experiment.contract.plan import build_plan
from experiment.contract.spec import load_spec
from experiment.grading.run_dir import (
    Problem,
    ValidationReport,
    explicit_item_ids,
    jsonl_rows,
    RunFiles,
    text_key,
    Validator,
    validation_summary,
)

GS1_PLAN = build_plan(load_spec(GS1_SPEC)).to_dict()  # direction_confidence; arms grpo_gs8, gs1_kernel (trained)
GS1_SPEC_DICT = load_spec(GS1_SPEC).to_dict()
BASELINE, TREATMENT = "grpo_gs8", "gs1_kernel"


def validator(result: dict[str, Any], *, events=(), plan=GS1_PLAN, spec=GS1_SPEC_DICT, bad_lines=(),
              run_dir: Path = Path("/nonexistent-run-dir")) -> Validator:
    files = RunFiles(run_dir, result, list(events), list(bad_lines), None, plan, spec, [])
    return Validator(files)


def found(v: Validator, check: str, prefix: str = "") -> list[tuple[str, str]]:
    """Run one check method of the validator and return its (check id, message) pairs under `prefix`."""
    getattr(v, check)()
    return [(p.check, p.message) for p in v.report.problems if p.check.startswith(prefix)]


def gate(name: str, status: str = "passed", event: str = "gate") -> dict[str, Any]:
    return {"event": event, "gate": name, "status": status}


# ---------------------------------------------------------------------------------------------
# Problem, ValidationReport, validation_summary


def test_problems_are_values_that_can_be_deduplicated_and_not_changed():
    a, b = Problem("events.format", "line 3"), Problem("events.format", "line 3")
    assert len({a, b, Problem("events.format", "line 4")}) == 2  # a value: equal problems hash alike
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.message = "other"


def test_report_is_ok_only_without_problems():
    assert ValidationReport().ok is True
    assert ValidationReport(problems=[Problem("result.status", "bad")]).ok is False


def test_validation_summary_is_the_version_1_shape():
    problems = [Problem("result.status", "x"), Problem("events.format", "y"), Problem("result.status", "z")]
    summary = validation_summary(problems)
    assert summary == {
        "version": 1,
        "status": "failed",
        "problem_count": 3,
        "failed_checks": ["events.format", "result.status"],
        "problems": ["result.status: x", "events.format: y", "result.status: z"],
    }
    assert validation_summary([])["version"] == 1 and validation_summary([])["status"] == "passed"


# ---------------------------------------------------------------------------------------------
# helpers


def test_text_key_gives_equal_json_values_one_key():
    assert text_key("arm") == "arm"
    assert text_key({"b": 1, "a": 2}) == text_key({"a": 2, "b": 1})
    assert text_key([1, 2]) != text_key([2, 1])


def test_explicit_item_ids_only_for_a_list_of_strings():
    assert explicit_item_ids({"items": {"ids": ["a", "b"]}}) == ["a", "b"]
    assert explicit_item_ids({"items": {"ids": ["a", 2]}}) is None  # one id is no string
    assert explicit_item_ids({"items": {"ids": "items 0-23"}}) is None  # a prose range, no list
    assert explicit_item_ids({"items": {"ids": {"a": "b"}}}) is None
    assert explicit_item_ids(None) is None


def test_jsonl_rows_reads_objects_skipping_blank_lines():
    assert jsonl_rows(b'\n{"a": 1}\n\n{"b": 2}\n', "f.jsonl") == ([{"a": 1}, {"b": 2}], None)


def test_jsonl_rows_names_the_first_bad_line_counting_from_one():
    assert jsonl_rows(b'{"a": 1}\nnot json\n{"c": 3}\n', "f.jsonl") == ([{"a": 1}], "f.jsonl line 2 is not valid JSON")
    assert jsonl_rows(b'[1]\n', "f.jsonl") == ([], "f.jsonl line 1 is not a JSON object")
    assert jsonl_rows(b'{"a": 1}\n\xff\xfe\n', "f.jsonl") == ([], "f.jsonl is not UTF-8")


def test_final_means_succeeded_or_failed():
    assert validator({"status": "succeeded"}).final is True
    assert validator({"status": "failed"}).final is True
    assert validator({"status": "running"}).final is False
    assert validator({}).final is False


def test_plan_arm_names_are_the_named_arm_objects_of_the_plan():
    assert validator({}).plan_arm_names() == [BASELINE, TREATMENT]
    plan = dict(GS1_PLAN, arms=[{"name": "a"}, {"trained": True}, "name", {"name": "b"}])
    assert validator({}, plan=plan).plan_arm_names() == ["a", "b"]


def test_plan_gate_finds_each_gate_by_its_exact_name():
    v = validator({})
    for name in [g["name"] for g in GS1_PLAN["gates"]]:
        assert v.plan_gate(name)["name"] == name
    assert v.plan_gate("no_such_gate") == {}


# ---------------------------------------------------------------------------------------------
# events (RUN-1)


def test_bad_event_lines_are_named_the_first_five():
    problems = found(validator({}, bad_lines=[2, 3, 5, 7, 11, 13]), "check_events")
    assert problems == [("events.format", "events.jsonl lines [2, 3, 5, 7, 11] are not JSON objects")]
    assert found(validator({}, bad_lines=[4, 9]), "check_events") == [
        ("events.format", "events.jsonl lines [4, 9] are not JSON objects")]


def test_gates_in_contract_order_pass_and_out_of_order_are_reported():
    in_order = [gate("spec_intake"), gate("preflight_probe"), gate("correctness_preflight")]
    assert found(validator({"status": "running"}, events=in_order), "check_events") == []
    swapped = [gate("spec_intake"), gate("correctness_preflight"), gate("preflight_probe")]
    assert found(validator({"status": "running"}, events=swapped), "check_events") == [
        ("events.gate_order",
         "gates were recorded out of contract order: spec_intake, correctness_preflight, preflight_probe")]


def test_gates_run_after_a_failed_one_are_each_named():
    # later gates on both sides of the failed one in alphabetical order: correctness_ < preflight_ < restoration_
    events = [gate("spec_intake"), gate("preflight_probe", "failed"), gate("correctness_preflight"),
              gate("restoration_preflight")]
    assert found(validator({"status": "failed"}, events=events), "check_events") == [
        ("events.stop_on_failure",
         "gate preflight_probe failed but later gates ran: correctness_preflight, restoration_preflight")]


def test_a_single_gate_after_the_failed_one_is_named():
    events = [gate("spec_intake"), gate("preflight_probe", "failed"), gate("generation_audit")]
    assert found(validator({"status": "failed"}, events=events), "check_events") == [
        ("events.stop_on_failure", "gate preflight_probe failed but later gates ran: generation_audit")]


def test_a_failed_gate_recorded_again_is_no_later_gate():
    events = [gate("spec_intake"), gate("preflight_probe", "failed"), gate("preflight_probe", "failed")]
    assert found(validator({"status": "failed"}, events=events), "check_events") == []


def test_the_first_failed_gate_is_the_one_blamed():
    events = [gate("spec_intake"), gate("preflight_probe", "failed"), gate("correctness_preflight", "failed")]
    assert found(validator({"status": "failed"}, events=events), "check_events") == [
        ("events.stop_on_failure", "gate preflight_probe failed but later gates ran: correctness_preflight")]
    assert found(validator({"status": "succeeded"}, events=events), "check_events") == [
        ("events.stop_on_failure", "gate preflight_probe failed but later gates ran: correctness_preflight"),
        ("events.stop_on_failure", "gate preflight_probe failed but RESULT status is succeeded"),
    ]


@pytest.mark.parametrize("status", ["running", "failed", "unknown"])
def test_only_a_succeeded_result_contradicts_a_failed_gate(status):
    events = [gate("spec_intake"), gate("preflight_probe", "failed")]
    assert found(validator({"status": status}, events=events), "check_events") == []
    assert found(validator({"status": "succeeded"}, events=events), "check_events") == [
        ("events.stop_on_failure", "gate preflight_probe failed but RESULT status is succeeded")]


def test_events_other_than_gate_verdicts_are_not_gates():
    # a note that names a gate and a status (before and after "gate" alphabetically) is no gate verdict
    events = [gate("spec_intake"), gate("evaluation", "failed", event="a_note"), gate("preflight_probe"),
              gate("spec_intake", "failed", event="z_note"), gate("generation_audit")]
    assert found(validator({"status": "succeeded"}, events=events), "check_events") == []


def test_only_status_failed_is_a_failed_gate():
    # "error" and "blocked" sort before "failed", "passed" after: none of them stops the run
    events = [gate("spec_intake"), gate("preflight_probe", "error"), gate("generation_audit", "blocked"),
              gate("correctness_preflight")]
    assert found(validator({"status": "succeeded"}, events=events), "check_events") == []
