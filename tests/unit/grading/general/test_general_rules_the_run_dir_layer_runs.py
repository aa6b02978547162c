"""GEN-3, GEN-4, GEN-5, GEN-6, GEN-7 and ACT-1 hold, in their one implementation (experiment/grading/general.py, activation.py), the
checks the run-directory layer once restated in copies of its own (result.*, vocabulary.*, deviations.*,
activation.*): each case is tried on a minimal grading context, and on a consistent GS1 run directory whose RESULT
breaks it, where the run-dir layer reports the same finding under its id."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from grading_contexts.general import context as _ctx
from records import build_gs1_run, copy_run, edit_result, found

from experiment.grading import activation, general as rules

DIRECTION = SimpleNamespace(vocabulary="direction_confidence", arms=[], trained_arms=[], training_runs=[],
                            decision=None, eval={})
THREE_WAY = SimpleNamespace(vocabulary="three_way", arms=[], trained_arms=[], training_runs=[], decision=None, eval={})
FINAL = {"status": "succeeded", "verdict": "supported", "confidence": "weak", "grid_edge": False}


def messages(issues) -> list[str]:
    return [issue.message for issue in issues]


@pytest.mark.parametrize("result, expected", [
    (dict(FINAL), []),
    ({"status": "running", "confidence": "weak"}, ["confidence is present without a verdict"]),
    (dict(FINAL, grid_edge=True, confidence="strong"), ["grid_edge is true but confidence is strong"]),
    (dict(FINAL, grid_edge=True), []),
    (dict(FINAL, outcome_reason="zero_effect"),
     ["outcome_reason 'zero_effect' is not incomplete_execution, the only value of this vocabulary"]),
])
def test_direction_confidence_holds_confidence_grid_edge_and_outcome_reason(result, expected):
    assert messages(rules.GEN_3(_ctx(result, DIRECTION))) == expected


@pytest.mark.parametrize("result, expected", [
    ({"status": "failed", "verdict": "inconclusive", "outcome_reason": "incomplete_execution"}, []),
    ({"status": "failed", "verdict": "supported", "outcome_reason": "supported"},
     ["a failed run is inconclusive, not supported"]),
    ({"status": "failed", "verdict": "inconclusive", "outcome_reason": "tie"},
     ["a failed run's outcome_reason is incomplete_execution, not 'tie'"]),
    ({"status": "running", "verdict": "inconclusive"},
     ["a running result carries a verdict (left out until the final update)"]),
])
def test_three_way_a_failed_run_is_inconclusive_and_a_running_one_has_no_verdict(result, expected):
    assert messages(rules.GEN_4(_ctx(result, THREE_WAY))) == expected


@pytest.mark.parametrize("result, expected", [
    ({"metrics": [], "completed_arms": []}, ["metrics must be an object"]),
    ({"metrics": {"arms": []}, "completed_arms": []}, ["metrics.arms must be an object keyed by arm name"]),
    ({"metrics": {"arms": {}}, "completed_arms": "a"}, ["completed_arms must be a list of arm names"]),
    ({"metrics": {"arms": {"a": 1, "b": {}}}, "completed_arms": []}, ["metrics.arms entries that are no object: a"]),
    ({"metrics": {"arms": {}}, "completed_arms": []}, []),
])
def test_metrics_and_completed_arms_have_their_shapes(result, expected):
    assert messages(rules.GEN_5(_ctx(result))) == expected


@pytest.mark.parametrize("result, expected", [
    ({"decision": {}}, ["decision is present but the spec has no decision_rule"]),
    ({"loss_eval": {}}, ["loss_eval is present but the spec's endpoint is not a loss"]),
    ({}, []),
])
def test_decision_and_loss_eval_only_when_the_spec_asks_for_them(result, expected):
    assert messages(rules.GEN_7(_ctx(result, DIRECTION))) == expected


def deviation(field_name="steps", **changes):
    return {"field": field_name, "original": "40", "effective": "20", "reason": "budget", **changes}


@pytest.mark.parametrize("deviations, summary, expected", [
    ([deviation()], "", []),
    ([deviation(reason=3)], "", ["deviation {'field': 'steps', 'original': '40', 'effective': '20', '...: reason must "
                                 "be strings"]),
    ([deviation("model", original="org/spec-model", effective="org/served")], "Ran on org/served.", []),
    ([deviation("model", original="org/spec-model", effective="org/served")], "Ran.",
     ["the served model 'org/served' replaces the spec's model but summary does not say so"]),
    ([deviation("model", original="org/other", effective="org/served")], "Ran.", []),
])
def test_a_deviation_says_its_values_as_strings_and_a_substituted_spec_model_in_summary(deviations, summary, expected):
    ctx = _ctx({"deviations": deviations, "summary": summary})
    ctx.spec = {"base_model": "org/spec-model"}
    assert messages(rules.GEN_6(ctx)) == expected


def test_an_activation_value_posted_in_metrics_too_is_reported():
    check = {"metric": "frac_nonzero", "min": 0.1}
    gate = SimpleNamespace(applicable=True, details={"checks": [check]})
    ctx = SimpleNamespace(plan=SimpleNamespace(gate=lambda name: gate), trained=True,
                          result={"activation_calibration": {"values": {"frac_nonzero": 0.5}},
                                  "metrics": {"frac_nonzero": 0.5}})
    assert messages(activation.ACT_1(ctx)) == [
        "frac_nonzero is in metrics; activation values belong only in activation_calibration"]
    del ctx.result["metrics"]["frac_nonzero"]
    assert messages(activation.ACT_1(ctx)) == []


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    return build_gs1_run(tmp_path_factory.mktemp("general-run-dir") / "runs")


@pytest.mark.parametrize("edit, check, message", [
    (lambda result: result.update(confidence="strong", grid_edge=True), "vocabulary.verdict",
     "grid_edge is true but confidence is strong"),
    (lambda result: result.update(capacity_block={"error": "capacity"}), "result.conditional",
     "capacity_block appears in a run that completed"),
    (lambda result: result["metrics"].update(arms=[]), "result.metrics",
     "metrics.arms must be an object keyed by arm name"),
])
def test_the_run_dir_layer_reports_the_contract_rules_finding_under_its_id(template, tmp_path, edit, check, message):
    run_dir = copy_run(template, tmp_path)
    assert found(run_dir, check) == []
    edit_result(run_dir, edit)
    assert (check, message) in found(run_dir, check)
