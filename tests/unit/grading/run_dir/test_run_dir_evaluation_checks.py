"""The run-dir grader's evaluation checks (experiment/grading/run_dir/evaluation.py `_check_evaluators`, which runs
EVAL-2..6's one implementation, experiment/grading/evaluator.py, on the run directory's files, and
`_check_predictions_cover`; docs/contract-rules.md EVAL-2..6 and EVAL-9), each condition from both sides on a
consistent GS1 run with one record or file broken (issue 28 item 7: survivors of lines 1058-1175).

Expected findings are worked out from the rule: the consistent run has 24 items, two arms and seed 0; the
baseline solves 16 of 24 items, the treatment 18 of 24."""

from __future__ import annotations

import json

import pytest
from records import (
    BASELINE,
    EVAL_ID,
    ITEM_IDS,
    PLAN,
    SPEC,
    PROVENANCE,
    TREATMENT,
    append_gate_event,
    build_gs1_run,
    copy_run,
    edit_json_evidence,
    edit_result,
    found,
    jsonl,
    put_evidence,
    read_jsonl,
)

from experiment.grading import grade_record
from experiment.stats.evaluation import evaluator_id, prediction_row

GRPO_FILE, KERNEL_FILE = f"predictions-{BASELINE}.jsonl", f"predictions-{TREATMENT}.jsonl"
WHO = f"evaluator {EVAL_ID[:12]}"  # how a message names the evaluator: its id's first 12 characters


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    return build_gs1_run(tmp_path_factory.mktemp("rd3-evaluation") / "runs")


@pytest.fixture
def run(template, tmp_path):
    return copy_run(template, tmp_path)


def set_provenance(run, provenance):
    edit_result(run, lambda result: result["evaluation"]["evaluators"].__setitem__(EVAL_ID, provenance))


def with_provenance(**changes):
    provenance = json.loads(json.dumps(PROVENANCE))
    provenance.update(changes)
    return provenance


def plan_arms(run):
    return [arm["name"] for arm in json.loads((run / "evidence" / PLAN).read_text())["arms"]]


def drop_prediction(run, name, item):
    put_evidence(run, name, jsonl([row for row in read_jsonl(run, name) if row["item_id"] != item]), "predictions")


def test_the_consistent_run_has_no_evaluation_problem(run):
    assert found(run, "evaluation.") == []


# ---------------------------------------------------------------- EVAL-1/2: provenance object and its hash


def test_a_provenance_that_is_no_object_is_a_shape_problem(run):
    set_provenance(run, "see grade.py")
    assert found(run, "evaluation.shape") == [
        ("evaluation.shape", f"evaluation.evaluators.{EVAL_ID}: Input should be a valid dictionary or instance of "
                             "EvaluatorRecord"),
        ("evaluation.shape", "evaluation defines no evaluator")]


def test_a_provenance_that_is_not_canonical_json_is_reported_not_raised(run):
    """A NaN temperature has no canonical JSON form: the id cannot be recomputed (EVAL-2), and a NaN is no numeric
    temperature (EVAL-5)."""
    provenance = with_provenance(decoding={"temperature": float("nan"), "max_tokens": 512, "stop": ["<|im_end|>"]})
    with pytest.raises(ValueError):
        evaluator_id(provenance)
    set_provenance(run, provenance)
    assert found(run, "evaluation.") == [
        ("evaluation.evaluator_id", f"{WHO}: provenance is not canonical JSON"),
        ("evaluation.decoding", f"{WHO}: {DECODING}")]


@pytest.mark.parametrize("side", ["below", "above"])
def test_a_provenance_whose_hash_is_not_the_id_is_reported_whichever_way_it_sorts(run, side):
    """EVAL-2 is equality: a provenance edited (a note added) so that its hash sorts below, or above, the
    recorded id is reported either way."""
    for note in range(100):
        provenance = with_provenance(note=note)
        recomputed = evaluator_id(provenance)
        if (recomputed < EVAL_ID) == (side == "below"):
            break
    else:
        pytest.fail(f"no note in 0..99 gives a hash {side} the recorded id")
    set_provenance(run, provenance)
    assert found(run, "evaluation.evaluator_id") == [
        ("evaluation.evaluator_id",
         f"evaluator id {EVAL_ID[:12]}... is not the sha256 of its provenance ({recomputed[:12]}...)")]


def test_the_run_dir_layer_gives_the_bare_records_eval_2_finding(run):
    """One implementation: the run-dir check evaluation.evaluator_id is EVAL-2 run on the run directory's files, so
    it says what grading the same result.json bare says."""
    set_provenance(run, with_provenance(note="edited after the id was taken"))
    bare = grade_record(json.loads((run / "result.json").read_text())).categories["evaluator"].issues
    assert [message for _, message in found(run, "evaluation.evaluator_id")] == \
        [issue.message for issue in bare if issue.rule == "EVAL-2"] != []


def test_a_prose_code_sha256_is_named_clipped_to_60_characters(run):
    code = "sha256:" + "0" * 60  # 67 characters, not 64 hex
    set_provenance(run, with_provenance(code_sha256=code))
    # the value's repr (69 characters) clipped to 60: its first 57 and "..."
    assert found(run, "evaluation.code_sha256") == [
        ("evaluation.code_sha256", f"{WHO}: code_sha256 'sha256:{'0' * 49}... is not a 64-hex hash")]


# ---------------------------------------------------------------- EVAL-4: explicit, unique item ids

MANIFEST_REF = "eval-items.json#sha256=" + "a" * 64
NOT_RETAINED = ("evaluation.item_ids", f"{WHO}: item manifest not retained inline with its sha256")
DECISION_NEEDS_IDS = ("evaluation.item_ids", f"{WHO}: a manifest-only item list is not yet resolved by the decision "
                                             "validator; list items.ids")
DECODING = "decoding needs numeric temperature, integer max_tokens and stop as a list of strings"


def test_a_manifest_instead_of_item_ids_is_refused_when_the_spec_has_a_decision_rule(run):
    set_provenance(run, with_provenance(items={"manifest_ref": MANIFEST_REF}))
    assert found(run, "evaluation.item_ids") == [NOT_RETAINED, DECISION_NEEDS_IDS]


def test_a_retained_manifest_instead_of_item_ids_is_still_refused_under_a_decision_rule(run):
    """EVAL-4 reads the manifest from the run's evidence/ (the run-dir layer supplies its files): retained with
    its sha256, only the decision rule's need for explicit ids is left."""
    digest = put_evidence(run, "eval-items.json", json.dumps(list(ITEM_IDS)), "eval_items")
    set_provenance(run, with_provenance(items={"manifest_ref": "eval-items.json", "manifest_sha256": digest}))
    assert found(run, "evaluation.item_ids") == [DECISION_NEEDS_IDS]


def test_a_manifest_beside_explicit_item_ids_is_checked_as_the_ids(run):
    set_provenance(run, with_provenance(items={"manifest_ref": MANIFEST_REF, "ids": list(ITEM_IDS)}))
    assert found(run, "evaluation.item_ids") == []


def test_items_without_ids_or_manifest_are_no_explicit_list(run):
    set_provenance(run, with_provenance(items={}))
    assert found(run, "evaluation.item_ids") == [
        ("evaluation.item_ids", f"{WHO}: items.ids None is not an explicit list of item id strings")]


PROSE = "items gsm8k-test-0000 to gsm8k-test-0023"  # 40 characters, its repr 42 (under the 60 a value is clipped to)


@pytest.mark.parametrize("ids, shown", [
    ([], "[]"),
    (PROSE, repr(PROSE)),
    (ITEM_IDS[:2] + [""], repr(ITEM_IDS[:2] + [""])),
    (["gsm8k-test-0000", 7], "['gsm8k-test-0000', 7]"),
], ids=["empty", "prose", "an empty id", "a number"])
def test_item_ids_that_are_not_a_nonempty_list_of_nonempty_strings(run, ids, shown):
    set_provenance(run, with_provenance(items={"ids": ids}))
    assert found(run, "evaluation.item_ids") == [
        ("evaluation.item_ids", f"{WHO}: items.ids {shown} is not an explicit list of item id strings")]


def test_duplicate_item_ids(run):
    set_provenance(run, with_provenance(items={"ids": ITEM_IDS + ITEM_IDS[:1]}))
    assert found(run, "evaluation.item_ids") == [("evaluation.item_ids", f"{WHO}: items.ids has duplicates")]


# ---------------------------------------------------------------- EVAL-5/6: decoding.stop, no arm or checkpoint


@pytest.mark.parametrize("stop, bad", [
    ("<|im_end|>", True), ([1], True), (None, True), ([], False), (["<|im_end|>", "\n\n"], False),
], ids=["a string", "a number in the list", "none", "empty list", "two strings"])
def test_decoding_stop_must_be_a_list_of_strings(run, stop, bad):
    set_provenance(run, with_provenance(decoding={"temperature": 0, "max_tokens": 512, "stop": stop}))
    expected = [("evaluation.decoding", f"{WHO}: {DECODING}")] if bad else []
    assert found(run, "evaluation.decoding") == expected


def test_a_provenance_naming_the_scored_arm_and_checkpoint_is_reported_for_each(run):
    set_provenance(run, with_provenance(arm=BASELINE, checkpoint="tinker://run/grpo_gs8/final"))
    assert found(run, "evaluation.provenance") == [
        ("evaluation.provenance", f"{WHO}: provenance names the scored arm or checkpoint")]


@pytest.mark.parametrize("key", ["arm", "checkpoint"])
def test_a_provenance_naming_either_deep_inside_is_reported(run, key):
    set_provenance(run, with_provenance(parser={"name": "gsm8k", "options": [{key: "x"}]}))
    assert found(run, "evaluation.provenance") == [
        ("evaluation.provenance", f"{WHO}: provenance names the scored arm or checkpoint")]


# ---------------------------------------------------------------- EVAL-9: prediction rows cover items, arms, seeds


def cover(arm, seed, missing, of, first):
    return ("evaluation.predictions_cover",
            f"arm {arm} seed {seed}: {missing} of {of} items have no prediction row (first: {first})")


def test_the_plans_scheduled_seeds_are_covered_not_only_the_scored_ones(run):
    """The spec's decision rule (so the plan derived from it) schedules seeds 0 and 1; rows and scores exist for seed 0
    only."""
    edit_json_evidence(run, SPEC, lambda spec: spec["decision_rule"].update(seeds=[0, 1]))
    assert found(run, "evaluation.predictions_cover") == [
        cover(arm, 1, 24, 24, "'gsm8k-test-0000'") for arm in plan_arms(run)]


@pytest.mark.parametrize("decision", [{"seeds": []}, None], ids=["no scheduled seed", "no plan decision"])
def test_without_scheduled_seeds_the_scored_seeds_are_covered(run, decision):
    """No seed scheduled: the scores' seed 0 is; a baseline row missing for it is reported."""
    def edit(plan):
        if decision is None:
            plan.pop("decision")
        else:
            plan["decision"].update(decision)
    edit_json_evidence(run, PLAN, edit)
    drop_prediction(run, GRPO_FILE, "gsm8k-test-0005")
    assert found(run, "evaluation.predictions_cover") == [cover(BASELINE, 0, 1, 24, "'gsm8k-test-0005'")]


def not_about_scores(run):
    """The evaluation problems besides EVAL-7's (whether a score that is no object is one: test_run_dir_decision_adjustment_and_method)."""
    return [problem for problem in found(run, "evaluation.") if problem[0] != "evaluation.scores"]


NO_SCORE = ("evaluation.shape", "evaluation.scores.2: Input should be a valid dictionary or instance of Score")  # EVAL-1


def test_a_score_that_is_no_object_is_skipped_when_seeds_and_files_are_gathered(run):
    edit_json_evidence(run, PLAN, lambda plan: plan.pop("decision"))
    edit_result(run, lambda result: result["evaluation"]["scores"].append("not a score"))
    assert not_about_scores(run) == [NO_SCORE]


def test_a_predictions_ref_with_a_fragment_reads_the_named_file(run):
    edit_result(run, lambda result: result["evaluation"]["scores"][0].update(predictions_ref=f"{GRPO_FILE}#rows"))
    assert found(run, "evaluation.") == []


def test_a_lost_predictions_file_is_reported_as_lost_not_as_rows_missing(run):
    """The baseline's predictions_ref names no retained file: EVAL-8 says so (predictions_missing); rows that cannot be
    read are not held against the cover (missing evidence is unverified, never a second, invalid finding)."""
    edit_result(run, lambda result: result["evaluation"]["scores"][0].update(predictions_ref="a-lost-file.jsonl"))
    assert found(run, "evaluation.predictions_cover") == []
    assert [check for check, _ in found(run, "evaluation.predictions_missing")] == ["evaluation.predictions_missing"]


def test_no_scores_after_a_passed_evaluation_gate_means_no_prediction_rows(run):
    edit_result(run, lambda result: result["evaluation"].update(scores=[]))
    assert found(run, "evaluation.scores") == [
        ("evaluation.scores", "arms were trained but the evaluation record has no scores")]


def test_no_scores_and_no_passed_evaluation_gate_asks_for_no_prediction_rows(run):
    append_gate_event(run, "evaluation", "failed")
    edit_result(run, lambda result: result["evaluation"].update(scores=[]))
    assert found(run, "evaluation.predictions_missing") == []


def test_scores_without_any_retained_rows_are_reported_even_without_a_passed_gate(run):
    append_gate_event(run, "evaluation", "failed")

    def lose(result):
        for score in result["evaluation"]["scores"]:
            score["predictions_ref"] = "a-lost-file.jsonl"
    edit_result(run, lose)
    assert found(run, "evaluation.predictions_missing") == [
        ("evaluation.predictions_missing", "predictions 'a-lost-file.jsonl': a-lost-file.jsonl is not a retained "
                                           "evidence file")]


def test_rows_lacking_fields_are_counted_and_the_first_ones_lacks_named(run):
    rows = read_jsonl(run, GRPO_FILE)
    del rows[0]["reference"]
    del rows[5]["metric"], rows[5]["evaluator_id"]
    put_evidence(run, GRPO_FILE, jsonl(rows), "predictions")
    assert found(run, "evaluation.predictions_format") == [
        ("evaluation.predictions_format", f"{GRPO_FILE}: 2 row(s) lack item_id, arm, prediction, reference, metric or "
                                          "evaluator_id"),
        ("evaluation.predictions_format", f"{GRPO_FILE}: rows carry another evaluator id than the score")]


def test_without_plan_arms_the_scored_arms_are_covered(run):
    edit_json_evidence(run, PLAN, lambda plan: plan.update(arms=[]))
    drop_prediction(run, KERNEL_FILE, "gsm8k-test-0007")
    assert found(run, "evaluation.predictions_cover") == [cover(TREATMENT, 0, 1, 24, "'gsm8k-test-0007'")]


def test_without_plan_arms_a_score_that_is_no_object_names_no_arm(run):
    edit_json_evidence(run, PLAN, lambda plan: plan.update(arms=[]))
    edit_result(run, lambda result: result["evaluation"]["scores"].append("not a score"))
    assert not_about_scores(run) == [NO_SCORE]


def test_a_plan_arm_without_a_score_still_needs_its_prediction_rows(run):
    """The treatment's score is gone, so its predictions file is named by no score: the plan's arm has no row."""
    edit_result(run, lambda result: result["evaluation"]["scores"].pop(1))
    assert found(run, "evaluation.predictions_cover") == [cover(TREATMENT, 0, 24, 24, "'gsm8k-test-0000'")]


def test_an_evaluator_without_explicit_ids_does_not_stop_the_next_ones_cover_check(run):
    """A manifest-only evaluator listed first has no ids to cover; the GS1 evaluator after it still does."""
    def two(result):
        result["evaluation"]["evaluators"] = {
            "0" * 64: with_provenance(items={"manifest_ref": MANIFEST_REF}), EVAL_ID: PROVENANCE}
    edit_result(run, two)
    drop_prediction(run, GRPO_FILE, "gsm8k-test-0011")
    assert found(run, "evaluation.predictions_cover") == [cover(BASELINE, 0, 1, 24, "'gsm8k-test-0011'")]


LONG = ["gsm8k-test-extra-item-with-a-long-name-1", "gsm8k-test-extra-item-with-a-long-name-2"]


def test_items_without_rows_are_counted_and_the_first_named_clipped_to_30_characters(run):
    set_provenance(run, with_provenance(items={"ids": ITEM_IDS + LONG}))
    first = repr(LONG[0])[:27] + "..."  # a repr over 30 characters: its first 27 and "..."
    assert found(run, "evaluation.predictions_cover") == [cover(arm, 0, 2, 26, first) for arm in plan_arms(run)]


# ---------------------------------------------------------------- EVAL-9: scores are the mean of their rows


def test_a_score_without_a_value_does_not_stop_the_next_scores_check(run):
    def edit(result):
        result["evaluation"]["scores"][0]["value"] = None
        result["evaluation"]["scores"][1]["value"] = 0.5
    edit_result(run, edit)
    assert found(run, "evaluation.score_reproduces") == [
        ("evaluation.score_reproduces", f"score {TREATMENT}: 0.5 is not the mean of its 24 rows' values")]


def test_a_baseline_score_other_than_its_rows_mean_is_reported(run):
    edit_result(run, lambda result: result["evaluation"]["scores"][0].update(value=0.5))
    assert found(run, "evaluation.score_reproduces") == [
        ("evaluation.score_reproduces", f"score {BASELINE}: 0.5 is not the mean of its 24 rows' values")]


def test_a_score_is_the_mean_of_the_rows_of_its_own_seed_metric_and_evaluator_only(run):
    """Extra baseline rows, all wrong (value 0), each with a score 0: for seed 1, for another metric, for
    another evaluator. Each score is the mean of its own rows, so nothing is reported."""
    other = "f" * 64
    rows = []
    for seed, metric, evaluator in ((1, "accuracy", EVAL_ID), (0, "zz_format", EVAL_ID), (0, "accuracy", other)):
        rows += [prediction_row(item, BASELINE, "8", "7", False, evaluator, seed, "tinker://run/grpo_gs8/final",
                                metric=metric) for item in ITEM_IDS]
    put_evidence(run, "predictions-extra.jsonl", jsonl(rows), "predictions")

    def scores(result):
        for seed, metric, evaluator in ((1, "accuracy", EVAL_ID), (0, "zz_format", EVAL_ID), (0, "accuracy", other)):
            result["evaluation"]["scores"].append({"arm": BASELINE, "metric": metric, "value": 0.0,
                                                   "evaluator_id": evaluator, "seed": seed,
                                                   "predictions_ref": "predictions-extra.jsonl"})
    edit_result(run, scores)
    assert found(run, "evaluation.score_reproduces") == []


def test_rows_whose_values_are_not_all_numbers_are_not_averaged(run):
    """A row without a numeric value: no mean is taken (the check does not fail on the sum)."""
    rows = read_jsonl(run, GRPO_FILE)
    rows[3]["value"] = None
    put_evidence(run, GRPO_FILE, jsonl(rows), "predictions")
    assert found(run, "evaluation.shape") == []
