"""The run-directory layer's record rules (experiment/grading/run_dir.py, its first 651 lines: events, RESULT
shape, vocabulary, deviations and the small helpers), each on an in-memory run: a `_RunFiles` built from a RESULT,
events and the real GS1 / self-generation plans, with no file read. Each expected finding is worked out from
docs/contract-rules.md (events.*, result.*, vocabulary.*, deviations.*: RUN-1, GEN-2..GEN-8) and each comparison
is tried with a wrong value on each side of the right one (issue 28 item 7: the mutation run of grading/)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from suite import GS1_SPEC, SELFGEN_SPEC

from experiment.contract.plan import build_plan
from experiment.contract.spec import load_spec
from experiment.grading.run_dir import (
    Problem,
    ValidationReport,
    _explicit_item_ids,
    _jsonl_rows,
    _RunFiles,
    _text_key,
    _Validator,
    validation_summary,
)

GS1_PLAN = build_plan(load_spec(GS1_SPEC)).to_dict()  # direction_confidence; arms grpo_gs8, gs1_kernel (trained)
THREE_WAY_PLAN = build_plan(load_spec(SELFGEN_SPEC)).to_dict()  # three_way; arms base (untrained), rl_*
GS1_SPEC_DICT = load_spec(GS1_SPEC).to_dict()
BASE_MODEL = GS1_SPEC_DICT["base_model"]
BASELINE, TREATMENT = "grpo_gs8", "gs1_kernel"


def validator(result: dict[str, Any], *, events=(), plan=GS1_PLAN, spec=GS1_SPEC_DICT, bad_lines=(),
              run_dir: Path = Path("/nonexistent-run-dir")) -> _Validator:
    files = _RunFiles(run_dir, result, list(events), list(bad_lines), None, plan, spec, [])
    return _Validator(files)


def found(v: _Validator, check: str, prefix: str = "") -> list[tuple[str, str]]:
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
    assert _text_key("arm") == "arm"
    assert _text_key({"b": 1, "a": 2}) == _text_key({"a": 2, "b": 1})
    assert _text_key([1, 2]) != _text_key([2, 1])


def test_explicit_item_ids_only_for_a_list_of_strings():
    assert _explicit_item_ids({"items": {"ids": ["a", "b"]}}) == ["a", "b"]
    assert _explicit_item_ids({"items": {"ids": ["a", 2]}}) is None  # one id is no string
    assert _explicit_item_ids({"items": {"ids": "items 0-23"}}) is None  # a prose range, no list
    assert _explicit_item_ids({"items": {"ids": {"a": "b"}}}) is None
    assert _explicit_item_ids(None) is None


def test_jsonl_rows_reads_objects_skipping_blank_lines():
    assert _jsonl_rows(b'\n{"a": 1}\n\n{"b": 2}\n', "f.jsonl") == ([{"a": 1}, {"b": 2}], None)


def test_jsonl_rows_names_the_first_bad_line_counting_from_one():
    assert _jsonl_rows(b'{"a": 1}\nnot json\n{"c": 3}\n', "f.jsonl") == ([{"a": 1}], "f.jsonl line 2 is not valid JSON")
    assert _jsonl_rows(b'[1]\n', "f.jsonl") == ([], "f.jsonl line 1 is not a JSON object")
    assert _jsonl_rows(b'{"a": 1}\n\xff\xfe\n', "f.jsonl") == ([], "f.jsonl is not UTF-8")


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


# ---------------------------------------------------------------------------------------------
# RESULT shape (GEN-5..GEN-7)

SHAPE = {
    "status": "succeeded",
    "summary": "Both arms ran.",
    "metrics": {"arms": {BASELINE: {"accuracy": 0.6}, TREATMENT: {"accuracy": 0.7}}},
    "completed_arms": [BASELINE, TREATMENT],
    "decision": {},
}


def shape(result: dict[str, Any], plan=GS1_PLAN) -> list[tuple[str, str]]:
    return found(validator(result, plan=plan), "check_result_shape")


def test_the_base_shape_has_no_problem():
    assert shape(dict(SHAPE)) == []


def test_every_completed_arms_entry_is_checked_after_a_bad_one():
    problems = shape(dict(SHAPE, completed_arms=[7, "other_arm", BASELINE]))
    assert problems == [
        ("result.completed_arms", "completed_arms entry 7 is not an arm name"),
        ("result.completed_arms", "arm other_arm is completed but has no metrics under metrics.arms"),
        ("result.completed_arms", "completed arm other_arm is not an arm of the plan"),
    ]


def test_flat_key_of_a_plan_arm_without_metrics_arms_entry():
    result = dict(SHAPE, metrics={"arms": {}, f"{TREATMENT}_accuracy": 0.7}, completed_arms=[])
    assert shape(result) == [
        ("result.flat_arm_keys", f"metrics.{TREATMENT}_accuracy is a flat per-arm key; put it under "
                                 f"metrics.arms.{TREATMENT}")]


def test_tested_instead_is_needed_only_when_the_original_hypothesis_was_not_tested():
    message = ("result.tested_instead", "original_hypothesis_tested is false but tested_instead is empty")
    assert shape(dict(SHAPE, original_hypothesis_tested=False, tested_instead="a shorter schedule")) == []
    assert shape(dict(SHAPE, original_hypothesis_tested=False, tested_instead="  ")) == [message]
    assert shape(dict(SHAPE, original_hypothesis_tested=False)) == [message]
    assert shape(dict(SHAPE, original_hypothesis_tested=True)) == []


def test_decision_only_when_the_spec_has_a_decision_rule():
    no_rule = dict(GS1_PLAN, decision=None)
    message = ("result.conditional", "decision is present but the spec has no decision_rule")
    assert shape(dict(SHAPE), plan=no_rule) == [message]
    without = {k: v for k, v in SHAPE.items() if k != "decision"}
    assert shape(without, plan=no_rule) == []
    assert shape(dict(SHAPE)) == []


def test_loss_eval_only_when_the_endpoint_is_a_loss():
    loss_plan = dict(GS1_PLAN, eval=dict(GS1_PLAN["eval"], loss_eval=True))
    assert shape(dict(SHAPE, loss_eval={}), plan=loss_plan) == []
    assert shape(dict(SHAPE, loss_eval={})) == [
        ("result.conditional", "loss_eval is present but the spec's endpoint is not a loss")]


CAPACITY = {"error": "capacity exhausted", "comparison_steps_completed": 3, "released_clients": True}
FAILED = dict(SHAPE, status="failed")


def capacity(block: Any, status: str = "failed") -> list[tuple[str, str]]:
    return shape(dict(SHAPE, status=status, capacity_block=block))


@pytest.mark.parametrize("steps", [0, 1, 40])
def test_a_well_formed_capacity_block_of_a_failed_run(steps):
    assert capacity(dict(CAPACITY, comparison_steps_completed=steps)) == []
    assert capacity(dict(CAPACITY, released_clients=False)) == []


def test_capacity_block_must_be_an_object():
    assert capacity(["capacity exhausted"]) == [("result.capacity_block", "capacity_block must be an object")]


def test_capacity_block_error_must_be_a_string():
    assert capacity(dict(CAPACITY, error=None)) == [
        ("result.capacity_block", "capacity_block.error must be a string")]


@pytest.mark.parametrize("steps", [-1, -2, 1.5, "3", True, None])
def test_capacity_block_steps_must_be_a_non_negative_integer(steps):
    assert capacity(dict(CAPACITY, comparison_steps_completed=steps)) == [
        ("result.capacity_block", "capacity_block.comparison_steps_completed must be a non-negative integer")]


@pytest.mark.parametrize("released", ["yes", 1, None])
def test_capacity_block_released_clients_must_be_a_boolean(released):
    assert capacity(dict(CAPACITY, released_clients=released)) == [
        ("result.capacity_block", "capacity_block.released_clients must be true or false")]


@pytest.mark.parametrize("status", ["running", "succeeded", "cancelled"])
def test_capacity_block_only_in_a_failed_run(status):
    problems = [p for p in capacity(dict(CAPACITY), status=status) if p[0] == "result.capacity_block"]
    assert problems == [
        ("result.capacity_block", f"capacity_block appears only when capacity stopped the run (status is {status})")]


# ---------------------------------------------------------------------------------------------
# vocabulary: every arm ran (GEN-5)


def test_a_verdict_needs_every_trained_arm_but_not_the_untrained_ones():
    plan = dict(GS1_PLAN, arms=list(GS1_PLAN["arms"]) + [{"name": "base", "trained": False}])
    result = {"status": "succeeded", "verdict": "supported", "completed_arms": [BASELINE, TREATMENT]}
    assert found(validator(result, plan=plan), "check_vocabulary", "vocabulary.every_arm_ran") == []
    result["completed_arms"] = [BASELINE]
    assert found(validator(result, plan=plan), "check_vocabulary", "vocabulary.every_arm_ran") == [
        ("vocabulary.every_arm_ran", f"verdict supported but arms {TREATMENT} are not in completed_arms")]


# ---------------------------------------------------------------------------------------------
# vocabulary: direction + confidence (GEN-3, GEN-4, GEN-8)

DIRECTION = {"status": "succeeded", "verdict": "supported", "confidence": "weak", "grid_edge": False,
             "reasoning": "The effect was measured on fixed items. One seed limits confidence."}


def direction(result: dict[str, Any], plan=GS1_PLAN) -> list[tuple[str, str]]:
    return found(validator(result, plan=plan), "_check_direction_confidence")


def test_the_base_direction_record_has_no_problem():
    assert direction(dict(DIRECTION)) == []
    assert direction(dict(DIRECTION, confidence="strong")) == []


@pytest.mark.parametrize("status", ["running", "failed", "unknown"])
def test_a_verdict_belongs_only_in_the_succeeded_update(status):
    problems = [p for p in direction(dict(DIRECTION, status=status)) if p[0] == "vocabulary.verdict_timing"]
    assert problems == [("vocabulary.verdict_timing",
                         f"verdict is present while status is {status}; it belongs only in the final succeeded update")]


GRID_EDGE = ("vocabulary.confidence", "grid_edge is true but confidence is strong")


@pytest.mark.parametrize("confidence, grid_edge, flagged", [
    ("strong", True, True),
    ("strong", False, False),
    ("strong", None, False),
    ("weak", True, False),
    ("moderate", True, False),  # "moderate" < "strong" < "weak"; moderate is its own confidence problem
])
def test_a_grid_edge_only_forbids_strong_confidence(confidence, grid_edge, flagged):
    problems = direction(dict(DIRECTION, confidence=confidence, grid_edge=grid_edge))
    assert (GRID_EDGE in problems) is flagged
    assert [p for p in problems if p[0] == "vocabulary.confidence" and p != GRID_EDGE] == (
        [("vocabulary.confidence", "confidence 'moderate' is not strong or weak")] if confidence == "moderate" else [])


@pytest.mark.parametrize("reasoning", [None, "", "   "])
def test_a_verdict_needs_reasoning(reasoning):
    result = dict(DIRECTION, reasoning=reasoning)
    if reasoning is None:
        del result["reasoning"]
    assert direction(result) == [("vocabulary.reasoning", "a verdict needs reasoning (2-4 sentences)")]


@pytest.mark.parametrize("reason", ["aborted", "zero_effect", "supported"])
def test_incomplete_execution_is_the_only_outcome_reason(reason):
    # "aborted" sorts before incomplete_execution, "zero_effect" and "supported" after
    problems = direction({"status": "failed", "outcome_reason": reason})
    assert problems == [("vocabulary.outcome_reason", f"outcome_reason {reason!r} is not incomplete_execution, "
                                                      "the only value of this vocabulary")]
    assert direction({"status": "failed", "outcome_reason": "incomplete_execution"}) == []


@pytest.mark.parametrize("status, flagged", [("failed", True), ("cancelled", False), ("running", False),
                                             ("succeeded", False)])
def test_only_a_failed_run_needs_an_outcome_reason(status, flagged):
    plan = dict(GS1_PLAN, decision=None)  # no verdict required of a succeeded run
    assert direction({"status": status}, plan=plan) == (
        [("vocabulary.outcome_reason", "a failed run needs outcome_reason incomplete_execution")] if flagged else [])


@pytest.mark.parametrize("status, flagged", [("succeeded", True), ("running", False), ("failed", False),
                                             ("unknown", False)])
def test_a_succeeded_run_with_a_decision_rule_needs_a_verdict(status, flagged):
    result = {"status": status, "outcome_reason": "incomplete_execution"}
    message = ("vocabulary.verdict", "status is succeeded and the spec has a decision_rule, but there is no verdict")
    assert (message in direction(result)) is flagged
    assert message not in direction(result, plan=dict(GS1_PLAN, decision=None))


# ---------------------------------------------------------------------------------------------
# vocabulary: three-way (GEN-3, GEN-4)


def three_way(result: dict[str, Any]) -> list[tuple[str, str]]:
    return found(validator(result, plan=THREE_WAY_PLAN), "_check_three_way")


def test_a_running_three_way_record_has_no_verdict_yet():
    assert three_way({"status": "running"}) == []
    assert three_way({"status": "running", "verdict": "supported", "outcome_reason": "supported"}) == [
        ("vocabulary.verdict_timing", "verdict is present while status is running; it belongs only in the final update"),
        ("vocabulary.verdict_timing",
         "outcome_reason is present while status is running; it belongs only in the final update"),
    ]
    assert three_way({"status": "running", "outcome_reason": "tie"}) == [
        ("vocabulary.verdict_timing",
         "outcome_reason is present while status is running; it belongs only in the final update")]


def test_a_final_three_way_update_needs_a_verdict():
    missing = ("vocabulary.verdict", "the final update needs verdict supported, refuted or inconclusive (got None)")
    assert three_way({"status": "succeeded"}) == [missing]
    assert three_way({"status": "failed"}) == [missing, ("vocabulary.verdict", "a failed run is inconclusive (got None)")]


@pytest.mark.parametrize("verdict", ["supported", "refuted"])
def test_a_succeeded_run_may_have_a_direction_and_its_reason(verdict):
    assert three_way({"status": "succeeded", "verdict": verdict, "outcome_reason": verdict}) == []
    assert three_way({"status": "succeeded", "verdict": verdict}) == []


@pytest.mark.parametrize("verdict", ["supported", "refuted", "abstain"])
def test_a_failed_run_is_inconclusive(verdict):
    problems = [p for p in three_way({"status": "failed", "verdict": verdict}) if "failed run is" in p[1]]
    assert problems == [("vocabulary.verdict", f"a failed run is inconclusive (got {verdict!r})")]
    assert three_way({"status": "failed", "verdict": "inconclusive", "outcome_reason": "incomplete_execution"}) == []


def test_a_verdict_given_while_the_status_is_not_failed_is_not_called_a_failed_runs():
    problems = three_way({"status": "cancelled", "verdict": "supported"})
    assert [p for p in problems if "failed run" in p[1]] == []


@pytest.mark.parametrize("reason, verdict", [("supported", "refuted"), ("refuted", "supported"),
                                             ("supported", "inconclusive")])
def test_a_direction_reason_equals_the_verdict(reason, verdict):
    assert three_way({"status": "succeeded", "verdict": verdict, "outcome_reason": reason}) == [
        ("vocabulary.outcome_reason", f"outcome_reason {reason} must equal the verdict ({verdict!r})")]


@pytest.mark.parametrize("reason", ["tie", "mixed_criteria", "insufficient_evidence"])
def test_other_reasons_require_inconclusive(reason):
    assert three_way({"status": "succeeded", "verdict": "inconclusive", "outcome_reason": reason}) == []
    assert three_way({"status": "succeeded", "verdict": "supported", "outcome_reason": reason}) == [
        ("vocabulary.outcome_reason", f"outcome_reason {reason} requires verdict inconclusive (got 'supported')")]


@pytest.mark.parametrize("verdict", [None, "abstain"])  # both sort before "inconclusive" (None: missing)
def test_other_reasons_without_inconclusive_verdict(verdict):
    result = {"status": "succeeded", "outcome_reason": "tie"}
    if verdict is not None:
        result["verdict"] = verdict
    problems = [p for p in three_way(result) if p[0] == "vocabulary.outcome_reason"]
    assert problems == [("vocabulary.outcome_reason", f"outcome_reason tie requires verdict inconclusive (got {verdict!r})")]


@pytest.mark.parametrize("status, flagged", [("failed", True), ("succeeded", False), ("cancelled", False)])
def test_a_failed_runs_reason_is_incomplete_execution(status, flagged):
    result = {"status": status, "verdict": "supported", "outcome_reason": "supported"}
    message = ("vocabulary.outcome_reason", "a failed run's outcome_reason is incomplete_execution (got 'supported')")
    assert (message in three_way(result)) is flagged


# ---------------------------------------------------------------------------------------------
# deviations (GEN-6)


def deviation(field_name: str, original: Any = "40", effective: Any = "20", reason: Any = "budget") -> dict[str, Any]:
    return {"field": field_name, "original": original, "effective": effective, "reason": reason}


def deviations(result: dict[str, Any], spec=GS1_SPEC_DICT) -> list[tuple[str, str]]:
    return found(validator(result, spec=spec), "check_deviations", "deviations.")


def test_every_deviation_is_checked_after_one_that_is_no_object():
    problems = deviations({"summary": "s", "deviations": [5, deviation("speed")]})
    assert [p for p in problems if p[0] == "deviations.shape"] == [
        ("deviations.shape", "deviations[0] is not an object"),
        ("deviations.shape", "deviations[1].field 'speed' is not one of "
                             "model, objective, effective_batch, steps, dataset, evaluator, endpoint, "
                             "learning_rate, lora_rank, max_seq_len, rollout, budget, tolerance"),
    ]


@pytest.mark.parametrize("key", ["original", "effective", "reason"])
def test_each_deviation_value_is_a_string(key):
    entry = deviation("steps")
    entry[key] = 40
    problems = deviations({"summary": "s", "deviations": [entry]})
    assert [p for p in problems if p[0] == "deviations.shape"] == [
        ("deviations.shape", f"deviations[0].{key} must be a string")]


@pytest.mark.parametrize("field_name", ["endpoint", "objective", "steps"])  # sorting before and after "model"
def test_only_a_model_deviation_must_be_said_in_summary(field_name):
    entry = deviation(field_name, original=BASE_MODEL, effective="Qwen/Qwen3-4B")
    problems = deviations({"summary": "ran as written", "deviations": [entry], "original_hypothesis_tested": False,
                           "tested_instead": "x"})
    assert [p for p in problems if p[0] == "deviations.model_in_summary"] == []
    entry["field"] = "model"
    problems = deviations({"summary": "ran as written", "deviations": [entry]})
    assert [p[0] for p in problems if p[0] == "deviations.model_in_summary"] == ["deviations.model_in_summary"]


@pytest.mark.parametrize("field_name", ["objective", "endpoint"])
def test_a_changed_objective_or_endpoint_means_the_original_hypothesis_was_not_tested(field_name):
    message = ("deviations.hypothesis",
               f"a changed {field_name} means original_hypothesis_tested false with tested_instead")
    entry = deviation(field_name, original="a", effective="b")
    for tested, flagged in ((False, False), (True, True), (None, True)):
        result = {"summary": "s", "deviations": [entry]}
        if tested is not None:
            result["original_hypothesis_tested"] = tested
        assert (message in deviations(result)) is flagged, tested
