"""The run-dir grader's decision checks (experiment/grading/run_dir/decision.py `check_decision`, `_observations_from_file`,
`_observations_inline`, `_check_observation_evaluators`, `_compare_decision`, `_compare_arm_means`;
docs/contract-rules.md DEC-1..10), each condition from both sides on a consistent GS1 run with one record or file
broken (issue 28 item 7: survivors of lines 1180-1395).

The consistent run: 24 items, seed 0, baseline 16 of 24 correct, treatment 18 of 24, so the paired effect is
1/12 and its Hoeffding interval (half-width about 0.50) straddles the spec margin -0.03: the observations give
"refuted" with weak confidence. Three more runs change the spec: margin -0.99 (the interval clears it:
"supported", strong), three_way with margin 0.99 ("refuted"), and a second criterion (margin -0.5) under the
plan's bonferroni adjustment."""

from __future__ import annotations

import json

import pytest
from records import (
    BASELINE,
    BASELINE_MEAN,
    EVAL_ID,
    OBSERVATIONS,
    PLAN,
    PROVENANCE,
    SPEC,
    TREATMENT,
    TREATMENT_MEAN,
    append_gate_event,
    build_gs1_run,
    copy_run,
    edit_json_evidence,
    edit_manifest_entry,
    edit_result,
    found,
    put_evidence,
    read_jsonl,
    read_result,
)
from grading_contexts.run_dir import spec_with_rule as _spec, two_criteria as _two_criteria, record_decision

from experiment.grading import decision as grader  # the decision rules and the caps they read
from experiment.stats.decision import decision_summary, read_observations_jsonl

MANIFEST_REF = "eval-items.json#sha256=" + "a" * 64


def _margin(value):
    return lambda spec: spec["decision_rule"]["criteria"][0].update(margin=value)


def _three_way(spec):
    spec["verdict_vocabulary"] = "three_way"
    spec["decision_rule"]["criteria"][0]["margin"] = 0.99


@pytest.fixture(scope="module")
def templates(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rd3-decision")
    built = {
        "gs1": build_gs1_run(tmp / "gs1"),
        "clear": build_gs1_run(tmp / "clear", _spec(tmp, "clear", _margin(-0.99))),
        "three_way": build_gs1_run(tmp / "three_way", _spec(tmp, "three_way", _three_way)),
        "two": build_gs1_run(tmp / "two", _spec(tmp, "two", _two_criteria)),
    }
    three_way = built["three_way"].run_dir
    edit_result(three_way, lambda result: (result.pop("confidence", None),
                                           result.update(verdict="refuted", outcome_reason="refuted")))
    record_decision(built["two"].run_dir, simultaneous=True)
    return built


@pytest.fixture
def run(templates, tmp_path):
    return copy_run(templates["gs1"], tmp_path)


@pytest.fixture
def clear(templates, tmp_path):
    return copy_run(templates["clear"], tmp_path, "clear")


@pytest.fixture
def three_way(templates, tmp_path):
    return copy_run(templates["three_way"], tmp_path, "three_way")


@pytest.fixture
def two(templates, tmp_path):
    return copy_run(templates["two"], tmp_path, "two")


def criterion(run_dir, index=0):
    return read_result(run_dir)["decision"]["criteria"][index]


def test_every_template_run_is_consistent(run, clear, three_way, two):
    assert [found(run_dir, "decision.", "evaluation.") for run_dir in (run, clear, three_way, two)] == [[]] * 4
    assert [read_result(run_dir)["verdict"] for run_dir in (run, clear, three_way, two)] == [
        "refuted", "supported", "refuted", "refuted"]
    assert json.loads((two / "evidence" / PLAN).read_text())["decision"]["adjustment"] == "bonferroni"


# ---------------------------------------------------------------- DEC-1/2: a decision once due, its shape

MISSING = ("decision.missing", "a verdict was posted but RESULT has no decision object")  # DEC-1


def test_no_decision_rule_asks_for_no_decision(run):
    edit_json_evidence(run, SPEC, lambda spec: spec.pop("decision_rule"))
    edit_result(run, lambda result: result.pop("decision"))
    assert found(run, "decision.") == []


@pytest.mark.parametrize("gate, status, due", [
    ("failed", "succeeded", True),  # the run finished: the decision is due although its gate did not pass
    ("passed", "failed", True),  # the decision gate passed
    ("passed", "running", True),
    ("failed", "failed", False),  # neither
    ("failed", "running", False),
    ("failed", "timed_out", False),  # a status other than succeeded, whichever way it sorts
], ids=["finished, gate failed", "gate passed, failed run", "gate passed, running", "failed run, gate failed",
        "running, gate failed", "odd status, gate failed"])
def test_a_missing_decision_is_reported_once_the_gate_passed_or_the_run_succeeded(run, gate, status, due):
    if gate != "passed":
        append_gate_event(run, "decision", gate)
    edit_result(run, lambda result: (result.pop("decision"), result.update(status=status)))
    assert found(run, "decision.missing") == ([MISSING] if due else [])


@pytest.mark.parametrize("decision", [[], "refuted", {"version": 0}, {"version": 2}],
                         ids=["a list", "a string", "version 0", "version 2"])
def test_a_decision_that_is_no_version_1_object(run, decision):
    edit_result(run, lambda result: result.update(decision=decision))
    version = "Input should be 1" if isinstance(decision, dict) else "Field required"  # DEC-2's typed model
    assert found(run, "decision.") == [
        ("decision.shape", f"decision.version: {version}"),
        ("decision.shape", "decision carries both or neither of observations and observations_file")]


def inline(run_dir, rows):
    """RESULT's decision with its observations inline instead of the observations file."""
    def edit(result):
        result["decision"].pop("observations_file")
        result["decision"]["observations"] = rows
    edit_result(run_dir, edit)


def observation_rows(run_dir):
    return read_jsonl(run_dir, OBSERVATIONS)


def test_inline_observations_alone_are_recomputed_like_the_file(run):
    inline(run, observation_rows(run))
    assert found(run, "decision.") == []


@pytest.mark.parametrize("both", [True, False], ids=["both", "neither"])
def test_a_decision_needs_exactly_one_of_inline_observations_and_the_file(run, both):
    def edit(result):
        if both:
            result["decision"]["observations"] = observation_rows(run)
        else:
            result["decision"].pop("observations_file")
    edit_result(run, edit)
    assert found(run, "decision.") == [
        ("decision.shape", "decision carries both or neither of observations and observations_file")]


def test_a_decision_under_a_spec_without_a_rule_is_left_to_the_retained_spec_check(run):
    """A retained spec without its decision_rule does not plan: run.spec says so, and no decision rule is recomputed
    (its verdict is not compared with a paired recomputation)."""
    edit_json_evidence(run, SPEC, lambda spec: spec.pop("decision_rule"))
    edit_result(run, lambda result: result.update(verdict="supported"))
    assert found(run, "decision.") == [] and [check for check, _ in found(run, "run.spec")] == ["run.spec"]


def test_a_decision_under_best_lr_threshold_is_recomputed_as_one(run):
    """The contract's DEC-8 recomputes the spec's method, best_lr_threshold too (the run-dir layer once recomputed
    paired_hoeffding only); a paired GS1 record under it does not recompute. An unknown method name is
    test_run_dir_decision_adjustment_and_method's."""
    edit_json_evidence(run, SPEC, lambda spec: spec["decision_rule"].update(method="best_lr_threshold"))
    edit_result(run, lambda result: result.update(verdict="supported"))
    assert found(run, "decision.") == [("decision.recompute", "the decision cannot be recomputed from the observations: "
                                                              "criterion primary: no runs of arm 'baseline'")]


def test_a_rule_the_observations_cannot_be_recomputed_under_is_reported(run):
    edit_json_evidence(run, SPEC, lambda spec: spec["decision_rule"].pop("alpha"))
    assert found(run, "decision.") == [
        ("decision.recompute", "the decision cannot be recomputed from the observations: "
                               "decision_rule has no alpha")]


# ---------------------------------------------------------------- bonferroni over two criteria (DEC-8)


def test_two_criteria_are_recomputed_with_the_plans_bonferroni_adjustment(two):
    """The record holds the adjusted intervals: recomputed unadjusted they would differ."""
    unadjusted = decision_summary(json.loads((two / "evidence" / SPEC).read_text())["decision_rule"],
                                  read_observations_jsonl(two / "evidence" / OBSERVATIONS), "direction_confidence",
                                  role_to_arm={"treatment": TREATMENT, "baseline": BASELINE})
    assert unadjusted["criteria"][0]["lower"] != criterion(two)["lower"]
    assert found(two, "decision.") == []


def test_an_unadjusted_record_under_bonferroni_is_reported(two):
    record_decision(two, simultaneous=False)
    assert {check for check, _ in found(two, "decision.")} == {"decision.recompute", "decision.ci"}


def test_a_recorded_second_criterion_is_compared_when_the_first_is_not_recorded(two):
    effect = criterion(two, 1)["effect"]

    def edit(result):
        second = result["decision"]["criteria"][1]
        result["decision"]["criteria"] = [{**second, "effect": 0.5}]
    edit_result(two, edit)
    assert found(two, "decision.recompute") == [
        ("decision.recompute", "criterion primary is not in the decision object"),
        ("decision.recompute", f"criterion secondary: recorded effect 0.5 is not the recomputed {effect}")]


def test_results_effect_ci_and_margin_are_the_first_criterions(two):
    """The second criterion has margin -0.5; RESULT reports the primary's -0.03."""
    assert read_result(two)["margin"] == -0.03 and criterion(two, 1)["margin"] == -0.5
    assert found(two, "decision.margin", "decision.effect", "decision.ci") == []


def test_a_score_off_its_observations_mean_is_reported_once_not_per_criterion(two):
    edit_result(two, lambda result: result["evaluation"]["scores"][0].update(value=0.5))
    assert found(two, "decision.arm_means") == [
        ("decision.arm_means", f"arm {BASELINE}: score 0.5 does not reproduce from the observations (mean {BASELINE_MEAN})")]


# ---------------------------------------------------------------- vocabularies (DEC-8, DEC-9)


def test_a_three_way_verdict_the_observations_do_not_give_names_their_outcome_reason(three_way):
    edit_result(three_way, lambda result: result.update(verdict="supported", outcome_reason="supported"))
    assert found(three_way, "decision.") == [
        ("decision.verdict", "verdict supported is not the recomputed refuted")]


def test_a_three_way_inconclusive_verdict_is_not_compared(three_way):
    edit_result(three_way, lambda result: result.update(verdict="inconclusive", outcome_reason="insufficient_evidence"))
    assert found(three_way, "decision.") == []


def test_a_three_way_record_with_a_direction_effect_is_not_compared_on_it(three_way):
    """The three-way shape has no effect (vocabulary.three_way_fields says so); DEC-8 compares none."""
    edit_result(three_way, lambda result: result.update(effect=0.5))
    assert found(three_way, "decision.") == []


def test_a_plan_without_a_vocabulary_leaves_the_specs_vocabulary_and_the_decision_recomputes(run):
    """No vocabulary in the retained plan: the vocabulary GEN-3 applies is the plan's derived from the retained spec
    (run_dir.evidence.typed_spec, never the retained plan's word: EVID-9 compares the two); the decision recomputes
    under the default (direction_confidence) and no decision check fails on the missing word."""
    edit_json_evidence(run, PLAN, lambda plan: plan.pop("vocabulary"))
    assert found(run, "") == []


# ---------------------------------------------------------------- DEC-3/4/5: the observations file


@pytest.mark.parametrize("reference, message", [
    (OBSERVATIONS, "Input should be a valid dictionary or instance of ObservationsFile"),
    ({"sha256": "0" * 64}, "name: Field required"),
    ({"name": 7}, "name: Input should be a valid string (and 1 more)"),
], ids=["a bare name", "no name", "a number"])
def test_an_observations_file_reference_that_is_no_name_sha256_object(run, reference, message):
    """DEC-2's typed model of the decision object holds the reference's shape."""
    edit_result(run, lambda result: result["decision"].update(observations_file=reference))
    assert found(run, "decision.") == [("decision.shape", f"decision.observations_file{'' if message.startswith('Input') else '.'}"
                                                          f"{': ' if message.startswith('Input') else ''}{message}")]


UNDER_ANOTHER_SHA256 = ("decision.observations_sha256", "observations cannot be read from the record: observations_file "
                                                        f"{OBSERVATIONS} is not retained under the sha256 the decision names")


@pytest.mark.parametrize("digest", ["0" * 64, "f" * 64], ids=["sorts below", "sorts above"])
def test_a_recorded_sha256_other_than_the_files(run, digest):
    edit_result(run, lambda result: result["decision"]["observations_file"].update(sha256=digest))
    assert found(run, "decision.") == [UNDER_ANOTHER_SHA256]


@pytest.mark.parametrize("digest", ["0" * 64, "f" * 64], ids=["sorts below", "sorts above"])
def test_a_manifest_sha256_other_than_the_files(run, digest):
    edit_manifest_entry(run, OBSERVATIONS, sha256=digest)
    assert found(run, "decision.") == [UNDER_ANOTHER_SHA256]


@pytest.mark.parametrize("kind", ["predictions", "code_revision"], ids=["sorts after", "sorts before"])
def test_an_observations_file_retained_as_another_kind(run, kind):
    edit_manifest_entry(run, OBSERVATIONS, kind=kind)
    assert found(run, "decision.") == [
        ("decision.observations_file", f"observations file {OBSERVATIONS} is retained as kind '{kind}', not metrics")]


CAP = ("decision.observations_cap", "observations exceed 10 MiB or 100 000 rows")  # DEC-4


def test_an_observations_file_exactly_at_the_byte_cap_is_within_it(run, monkeypatch):
    size = len((run / "evidence" / OBSERVATIONS).read_bytes())
    monkeypatch.setattr(grader, "MAX_FILE_BYTES", size)
    assert found(run, "decision.") == []
    monkeypatch.setattr(grader, "MAX_FILE_BYTES", size - 1)
    assert found(run, "decision.") == [CAP]


def test_exactly_the_cap_of_observations_is_within_it(run, monkeypatch):
    count = len(observation_rows(run))  # 48: 24 items, 2 arms
    monkeypatch.setattr(grader, "MAX_OBSERVATIONS", count)
    assert found(run, "decision.") == []
    monkeypatch.setattr(grader, "MAX_OBSERVATIONS", count - 1)
    assert found(run, "decision.") == [CAP]


def test_an_observations_file_that_does_not_parse_is_reported_by_name(run):
    lines = (run / "evidence" / OBSERVATIONS).read_text().splitlines(keepends=True)
    lines[2] = "not json\n"
    digest = put_evidence(run, OBSERVATIONS, "".join(lines))
    edit_result(run, lambda result: result["decision"]["observations_file"].update(sha256=digest))
    assert found(run, "decision.") == [("decision.observations_file", "observations cannot be read from the record: "
                                                                       f"{OBSERVATIONS} is not JSONL observations")]


# ---------------------------------------------------------------- DEC-5: inline observations


@pytest.mark.parametrize("rows, expected", [
    ([], ("decision.observations_cover", "criterion primary: all observations missing (first: any arm, any item, seed "
                                         "any seed)")),
    ("see the observations file", ("decision.shape", "decision.observations: Input should be a valid list")),
    ({"item_id": "gsm8k-test-0000"}, ("decision.shape", "decision.observations: Input should be a valid list")),
], ids=["empty", "a string", "an object"])
def test_inline_observations_that_are_no_nonempty_list(run, rows, expected):
    """DEC-2's typed model holds a list; an empty one covers nothing (DEC-6)."""
    inline(run, rows)
    assert found(run, "decision.") == [expected]


def test_an_inline_observation_lacking_its_value_is_reported_by_index(run):
    rows = observation_rows(run)
    del rows[2]["value"]
    inline(run, rows)
    assert found(run, "decision.") == [("decision.shape", "decision.observations.2.value: Field required")]


# ---------------------------------------------------------------- DEC-6/7: evaluators and items of the observations


def extra_observations(rows, item, evaluator):
    """Both arms' observations of `item` under `evaluator`, of a metric no criterion reads (a criterion's
    observations must come from one evaluator, so the recomputation still stands)."""
    return [{**row, "item_id": item, "metric": "format_ok", "evaluator_id": evaluator} for row in rows[:1] + rows[24:25]]


def unknown(*evaluators):
    return ("decision.evaluator", "observations name evaluator(s) the evaluation record lacks: "
                                  f"{', '.join(evaluator[:12] for evaluator in evaluators)}")


def no_prediction(count):
    return ("decision.evaluator", f"{count} observation(s) have no retained prediction row")


def test_observations_naming_unknown_evaluators_name_the_first_by_sort(run):
    rows = observation_rows(run)
    inline(run, rows + extra_observations(rows, "gsm8k-test-0000", "b" * 64)
           + extra_observations(rows, "gsm8k-test-0001", "a" * 64))
    assert found(run, "decision.") == [unknown("a" * 64, "b" * 64), no_prediction(4)]


def test_without_an_evaluation_record_every_evaluator_the_observations_name_is_unknown(run):
    """DEC-7: the evaluators observations name are those of the evaluation record; with none, every one is unknown."""
    rows = observation_rows(run)
    inline(run, rows + extra_observations(rows, "gsm8k-test-0000", "b" * 64))
    edit_result(run, lambda result: result.pop("evaluation"))
    assert found(run, "decision.evaluator", "decision.observations_cover") == [unknown("b" * 64, EVAL_ID)]


def cover(missing, first="gsm8k-test-0003"):
    return ("decision.observations_cover", f"criterion primary: {missing} observations missing (first: {BASELINE}, "
                                           f"{first}, seed 0)")


def test_observations_missing_an_item_of_the_evaluator(run):
    inline(run, [row for row in observation_rows(run) if row["item_id"] != "gsm8k-test-0003"])
    assert found(run, "decision.observations_cover") == [cover(2)]


def test_observations_of_an_item_the_evaluator_does_not_list(run):
    rows = observation_rows(run)
    inline(run, rows + [{**row, "item_id": "gsm8k-test-9999"} for row in rows[:1] + rows[24:25]])
    assert found(run, "decision.observations_cover") == [
        ("decision.observations_cover", "criterion primary: observations of 1 item(s) the evaluator does not list "
                                        "(first: 'gsm8k-test-9999')")]


@pytest.mark.parametrize("other", ["0" * 64, "f" * 64], ids=["sorts below", "sorts above"])
def test_only_the_evaluators_own_observations_count_for_its_items(run, other):
    """An extra item observed under another evaluator (unknown: DEC-7) is not one of this evaluator's items."""
    rows = observation_rows(run)
    inline(run, rows + extra_observations(rows, "gsm8k-test-9999", other))
    assert found(run, "decision.evaluator", "decision.observations_cover") == [unknown(other), no_prediction(2)]


def test_an_evaluator_without_explicit_ids_does_not_stop_the_next_ones_cover_check(run):
    edit_result(run, lambda result: result["evaluation"].update(evaluators={
        "0" * 64: {**PROVENANCE, "items": {"manifest_ref": MANIFEST_REF}}, EVAL_ID: PROVENANCE}))
    inline(run, [row for row in observation_rows(run) if row["item_id"] != "gsm8k-test-0003"])
    assert found(run, "decision.observations_cover") == [cover(2)]


# ---------------------------------------------------------------- DEC-8: recorded criteria, effect, ci, margin


@pytest.mark.parametrize("key", ["effect", "lower", "upper"])
def test_a_recorded_criterion_value_the_observations_do_not_give(run, key):
    value = criterion(run)[key]
    edit_result(run, lambda result: result["decision"]["criteria"][0].update({key: 0.5}))
    assert found(run, "decision.") == [
        ("decision.recompute", f"criterion primary: recorded {key} 0.5 is not the recomputed {value}")]


def test_a_direction_result_without_an_effect_is_not_reported_as_a_wrong_effect(run):
    """No effect to compare (its ci and margin are the recomputed ones): DEC-8 reports no wrong effect, only that a
    verdict carries none."""
    edit_result(run, lambda result: result.pop("effect"))
    assert found(run, "decision.") == [("decision.recompute", "a refuted verdict without RESULT.effect")]


@pytest.mark.parametrize("extra", [True, False], ids=["three numbers", "one number"])
def test_a_ci_that_is_not_a_lower_upper_pair(run, extra):
    lower, upper = criterion(run)["lower"], criterion(run)["upper"]
    ci = [lower, upper, 0.9] if extra else [lower]
    edit_result(run, lambda result: result.update(ci=ci))
    problems = found(run, "decision.")
    assert [check for check, _ in problems] == ["decision.ci"]
    assert problems[0][1].startswith("RESULT.ci [") and problems[0][1].endswith(" is not the recomputed interval")


def test_a_margin_other_than_the_criterions(run):
    edit_result(run, lambda result: result.update(margin=0.5))
    assert found(run, "decision.") == [("decision.margin", "RESULT.margin 0.5 is not the spec's -0.03")]


def test_a_result_without_a_margin_is_not_compared_on_it(run):
    edit_result(run, lambda result: result.pop("margin"))
    assert found(run, "decision.") == [("decision.recompute", "a refuted verdict without RESULT.margin")]


# ---------------------------------------------------------------- DEC-9: verdict and confidence


def test_a_refuted_verdict_where_the_observations_support_is_reported(clear):
    edit_result(clear, lambda result: result.update(verdict="refuted"))
    assert found(clear, "decision.") == [
        ("decision.verdict", "verdict refuted is not the recomputed supported")]


STRADDLES = ("decision.confidence", "confidence strong although a criterion's interval does not settle its margin")


@pytest.mark.parametrize("fixture, confidence, expected", [
    ("run", "strong", [STRADDLES]),  # the interval straddles -0.03: strong is wrong
    ("run", "weak", []),
    ("run", None, []),  # no confidence: nothing to compare (the vocabulary check asks for one)
    ("clear", "strong", []),  # the interval clears -0.99: strong is right
    ("clear", "weak", []),  # weak is always allowed (limits such as one seed)
])
def test_strong_confidence_only_where_no_interval_straddles(request, fixture, confidence, expected):
    run_dir = request.getfixturevalue(fixture)
    edit_result(run_dir, lambda result: result.update(confidence=confidence))
    assert found(run_dir, "decision.") == expected


# ---------------------------------------------------------------- DEC-10: arm means are the scores


def test_a_score_that_is_no_object_is_skipped(run):
    edit_result(run, lambda result: result["evaluation"]["scores"].append("not a score"))
    assert found(run, "decision.") == []


def test_a_score_without_a_value_does_not_stop_the_next_scores_check(run):
    def edit(result):
        result["evaluation"]["scores"][0]["value"] = None
        result["evaluation"]["scores"][1]["value"] = 0.5
    edit_result(run, edit)
    assert found(run, "decision.arm_means") == [  # a score without a value does not reproduce its mean either (DEC-10)
        ("decision.arm_means", f"arm {TREATMENT}: score 0.5 does not reproduce from the observations (mean {TREATMENT_MEAN})"),
        ("decision.arm_means", f"arm {BASELINE}: score None does not reproduce from the observations (mean {BASELINE_MEAN})")]


@pytest.mark.parametrize("metric", ["aaa_format", "zz_format"], ids=["sorts below", "sorts above"])
def test_a_score_of_another_metric_is_not_compared_with_the_criterions_means(run, metric):
    edit_result(run, lambda result: result["evaluation"]["scores"].append(
        {**result["evaluation"]["scores"][0], "metric": metric, "value": 0.0}))
    assert found(run, "decision.arm_means") == []
