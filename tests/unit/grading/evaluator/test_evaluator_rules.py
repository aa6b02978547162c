"""The grader's evaluator rules (experiment/grading/evaluator.py; docs/contract-rules.md EVAL-1..EVAL-10),
each on a minimal grading context whose expected finding is worked out in the test from the contract's
text (issue 28 item 7: the complete mutation run of experiment/grading/)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from grading_contexts.evaluator import (
    KEY,
    LOSS_SCORE,
    PROVENANCE,
    ROWS,
    SCORE,
    InlineEvidence as _Evidence,
    context as _ctx,
    loss_entry as _entry,
    eval9_messages as _eval9,
    loss3_findings as _loss3,
    loss_context as _loss_ctx,
    messages as _messages,
    nll_rows as _nll_rows,
    prediction_row as _row,
)

from experiment.grading import evaluator as rules


# ---------------------------------------------------------------- EVAL-1


@pytest.mark.parametrize("evaluation", [None, {}])
def test_no_evaluation_record_is_unknown(evaluation):
    ctx = SimpleNamespace(result={"evaluation": evaluation})
    assert _messages(rules.EVAL_1(ctx)) == [("EVAL-1", "unknown", "RESULT has no evaluation record")]


def test_an_evaluation_without_evaluators_is_invalid():
    ctx = SimpleNamespace(result={"evaluation": {"version": 1, "evaluators": {"x": "not an object"}, "scores": [],
                                                 "comparisons": []}})
    assert ("EVAL-1", "invalid", "evaluation defines no evaluator") in _messages(rules.EVAL_1(ctx))


# ---------------------------------------------------------------- EVAL-2, EVAL-3


def test_an_evaluator_id_is_the_sha256_of_its_canonical_provenance():
    assert rules.EVAL_2(_ctx()) == []
    other = "f" * 64
    assert _messages(rules.EVAL_2(_ctx({other: PROVENANCE}))) == [
        ("EVAL-2", "invalid", f"evaluator id ffffffffffff... is not the sha256 of its provenance ({KEY[:12]}...)")]


def test_a_provenance_that_is_not_canonical_json_is_invalid_and_the_next_evaluator_still_checked():
    nan_key, other = "a" * 64, "f" * 64
    issues = _messages(rules.EVAL_2(_ctx({nan_key: {"temperature": float("nan")}, other: PROVENANCE})))
    assert issues == [("EVAL-2", "invalid", "evaluator aaaaaaaaaaaa: provenance is not canonical JSON"),
                      ("EVAL-2", "invalid", f"evaluator id ffffffffffff... is not the sha256 of its provenance "
                                            f"({KEY[:12]}...)")]


@pytest.mark.parametrize("code_sha256", ["sha256 of the evaluator code", "C" * 64, None], ids=["prose", "upper case", "none"])
def test_a_code_sha256_that_is_not_64_hex_is_invalid(code_sha256):
    issues = _messages(rules.EVAL_3(_ctx({KEY: {**PROVENANCE, "code_sha256": code_sha256}})))
    assert [(rule, status) for rule, status, _ in issues] == [("EVAL-3", "invalid")]
    assert issues[0][2].startswith(f"evaluator {KEY[:12]}: code_sha256 {repr(code_sha256)[:20]}")
    assert rules.EVAL_3(_ctx()) == []


# ---------------------------------------------------------------- EVAL-4


@pytest.mark.parametrize("ids", [[], ["i1", ""], ["i1", 2], "i1..i100", None],
                         ids=["empty", "an empty id", "a number", "a prose range", "none and no manifest"])
def test_items_that_are_not_an_explicit_list_of_id_strings_are_invalid(ids):
    issues = _messages(rules.EVAL_4(_ctx({KEY: {**PROVENANCE, "items": {"ids": ids}}})))
    assert issues == [("EVAL-4", "invalid", f"evaluator {KEY[:12]}: items.ids {ids!r} is not an explicit list of "
                                            "item id strings")]


class _Manifest:
    def __init__(self, state, sha256):
        self._state, self._sha256 = state, sha256

    def state(self, ref):  # as experiment.grading.evidence.Evidence.state: (state, bytes, why)
        return (self._state, b"[]" if self._state == "usable" else None, "" if self._state == "usable" else "why")

    def sha256(self, ref):
        return self._sha256


@pytest.mark.parametrize("state, sha256, flagged", [("usable", "m" * 64, False), ("missing", "m" * 64, True),
                                                    ("usable", "n" * 64, True), ("usable", "l" * 64, True)])
def test_a_manifest_item_list_must_be_retained_inline_under_its_sha256(state, sha256, flagged):
    ctx = _ctx({KEY: {**PROVENANCE, "items": {"manifest_ref": "items.jsonl", "manifest_sha256": "m" * 64}}})
    ctx.evidence = _Manifest(state, sha256)
    expected = [("EVAL-4", "unverified", f"evaluator {KEY[:12]}: item manifest not retained inline with its sha256")]
    assert _messages(rules.EVAL_4(ctx)) == (expected if flagged else [])


# ---------------------------------------------------------------- EVAL-5, EVAL-6


@pytest.mark.parametrize("decoding", [
    {"temperature": "0", "max_tokens": 16, "stop": ["\n"]},
    {"temperature": True, "max_tokens": 16, "stop": ["\n"]},
    {"temperature": 0.0, "max_tokens": 16.0, "stop": ["\n"]},
    {"temperature": 0.0, "max_tokens": 16, "stop": "\n"},
    {"temperature": 0.0, "max_tokens": 16, "stop": ["\n", 3]},
    {"max_tokens": 16, "stop": ["\n"]},
], ids=["text temperature", "bool temperature", "float max_tokens", "stop text", "stop non-string", "no temperature"])
def test_decoding_needs_a_numeric_temperature_integer_max_tokens_and_a_list_of_stop_strings(decoding):
    assert _messages(rules.EVAL_5(_ctx({KEY: {**PROVENANCE, "decoding": decoding}}))) == [
        ("EVAL-5", "invalid", f"evaluator {KEY[:12]}: decoding needs numeric temperature, integer max_tokens and stop "
                              "as a list of strings")]


def test_decoding_as_the_contract_states_it_passes():
    assert rules.EVAL_5(_ctx()) == []
    assert rules.EVAL_5(_ctx({KEY: {**PROVENANCE, "decoding": {"temperature": 1, "max_tokens": 1, "stop": []}}})) == []


@pytest.mark.parametrize("provenance, flagged", [
    ({"model": "m", "arm": "treatment"}, True),
    ({"model": "m", "prompt": {"checkpoint": "tinker://x"}}, True),
    ({"model": "m", "grader": [{"name": "g"}, [{"checkpoint": "tinker://x"}]]}, True),
    ({"model": "m", "prompt": {"template": "arm"}, "items": ["checkpoint"]}, False),  # words as values: not keys
])
def test_a_provenance_naming_the_scored_arm_or_checkpoint_at_any_depth_is_invalid(provenance, flagged):
    expected = [("EVAL-6", "invalid", f"evaluator {KEY[:12]}: provenance names the scored arm or checkpoint")]
    assert _messages(rules.EVAL_6(_ctx({KEY: provenance}))) == (expected if flagged else [])


# ---------------------------------------------------------------- EVAL-7


def test_a_complete_score_passes():
    assert rules.EVAL_7(_ctx(scores=[SCORE])) == []


@pytest.mark.parametrize("change, message", [
    ({"evaluator_id": "e" * 12}, "score T/accuracy names evaluator 'eeeeeeeeeeee' that the record does not define"),
    ({"arm": 3}, "score 3/accuracy needs arm, metric and a finite value"),
    ({"metric": None}, "score T/None needs arm, metric and a finite value"),
    ({"value": float("inf")}, "score T/accuracy needs arm, metric and a finite value"),
    ({"value": "0.5"}, "score T/accuracy needs arm, metric and a finite value"),
    ({"seed": True}, "score T/accuracy has no integer seed"),
    ({"seed": "0"}, "score T/accuracy has no integer seed"),
], ids=["unknown evaluator", "arm", "metric", "infinite value", "text value", "bool seed", "text seed"])
def test_a_score_lacking_a_known_evaluator_arm_metric_finite_value_or_integer_seed_is_invalid(change, message):
    assert _messages(rules.EVAL_7(_ctx(scores=[{**SCORE, **change}]))) == [("EVAL-7", "invalid", message)]


def test_scores_of_arms_the_plan_lacks_are_invalid_the_base_and_training_runs_are_not():
    ctx = _ctx(scores=[SCORE, {**SCORE, "arm": "base"}, {**SCORE, "arm": "T-lr1"}, {**SCORE, "arm": "Z"},
                       {**SCORE, "arm": "Y"}])
    ctx.plan = SimpleNamespace(arms=[SimpleNamespace(name="T")], training_runs=[SimpleNamespace(name="T-lr1")])
    assert _messages(rules.EVAL_7(ctx)) == [
        ("EVAL-7", "invalid", "scores name arms the plan does not have (nor the base model): Y, Z")]


def test_a_score_listed_twice_is_invalid_a_score_differing_in_any_key_is_not():
    twice = _ctx(scores=[SCORE, {**SCORE, "value": 0.25}, {**SCORE, "arm": "B"}, {**SCORE, "arm": "B", "seed": 1}])
    assert _messages(rules.EVAL_7(twice)) == [("EVAL-7", "invalid", "scores listed twice: T")]
    runs = _ctx(scores=[{**SCORE, "run": "T-lr1"}, {**SCORE, "run": "T-lr1"}, {**SCORE, "run": "T-lr2"}])
    assert _messages(rules.EVAL_7(runs)) == [("EVAL-7", "invalid", "scores listed twice: T-lr1")]


@pytest.mark.parametrize("trained, scores, flagged", [(True, [], True), (False, [], False), (True, [SCORE], False)])
def test_trained_arms_without_any_score_are_unknown(trained, scores, flagged):
    ctx = _ctx(scores=scores)
    ctx.trained = trained
    expected = [("EVAL-7", "unknown", "arms were trained but the evaluation record has no scores")]
    assert _messages(rules.EVAL_7(ctx)) == (expected if flagged else [])


# ---------------------------------------------------------------- EVAL-7, the posted numbers


def _posted_ctx(metrics, scores, runs=()):
    ctx = _ctx(scores=scores, metrics=metrics)
    ctx.plan = SimpleNamespace(training_runs=list(runs))
    return ctx


@pytest.mark.parametrize("metrics, flagged", [
    ({"arms": {"T": {"accuracy": 0.5}}}, False),
    ({"arms": {"T": {"accuracy": 0.5 + 1e-13}}}, False),  # within the contract's abs 1e-12
    ({"arms": {"T": {"accuracy": 0.75}}}, True),
    ({"arms": {"T": {"accuracy": "0.5"}}}, True),  # a number posted as text
    ({"arms": {"T": {"loss": 0.75}}}, False),  # another metric: nothing posted for accuracy
    ({}, False),
])
def test_a_posted_arm_metric_is_its_scores_value(metrics, flagged):
    expected = [("EVAL-7", "invalid", f"metrics for T post accuracy {metrics['arms']['T']['accuracy']!r}, its score "
                                      "is 0.5")] if flagged else []
    assert _messages(rules.EVAL_7_metrics(_posted_ctx(metrics, [SCORE]))) == expected


def test_an_arm_scored_once_per_seed_posts_their_summary_which_decision_rules_recompute():
    scores = [SCORE, {**SCORE, "seed": 1, "value": 0.75}]
    assert rules.EVAL_7_metrics(_posted_ctx({"arms": {"T": {"accuracy": 0.625}}}, scores)) == []


def test_an_lr_grid_run_posts_under_its_arms_runs_keyed_by_learning_rate():
    runs = [SimpleNamespace(name="T-lr1", arm="T", lr=0.001)]
    score = {**SCORE, "run": "T-lr1", "arm": "T-lr1"}
    good = {"arms": {"T": {"runs": {"0.001": {"accuracy": 0.5}, "0.01": {"accuracy": 0.9}}}}}
    assert rules.EVAL_7_metrics(_posted_ctx(good, [score], runs)) == []
    bad = {"arms": {"T": {"runs": {"1e-3": {"accuracy": 0.25}}}}}
    assert _messages(rules.EVAL_7_metrics(_posted_ctx(bad, [score], runs))) == [
        ("EVAL-7", "invalid", "metrics for T-lr1 post accuracy 0.25, its score is 0.5")]


@pytest.mark.parametrize("metrics, posted", [
    ({"base_model_accuracy": 0.25}, 0.25), ({"base_accuracy": 0.125}, 0.125),
    ({"base_model_accuracy": 0.25, "base_accuracy": 0.5}, 0.25),  # base_model_ first
])
def test_the_base_models_score_may_be_posted_flat(metrics, posted):
    score = {**SCORE, "arm": "base"}
    assert _messages(rules.EVAL_7_metrics(_posted_ctx(metrics, [score]))) == [
        ("EVAL-7", "invalid", f"metrics for base post accuracy {posted!r}, its score is 0.5")]


# ---------------------------------------------------------------- EVAL-8, EVAL-9


def test_predictions_not_retained_are_unverified_once_per_file():
    ctx = _ctx(scores=[SCORE, {**SCORE, "metric": "f1"}, {**SCORE, "arm": "B", "predictions_ref": "b.jsonl"}],
               files={"b.jsonl": []})
    assert _messages(rules.EVAL_8(ctx)) == [("EVAL-8", "unverified", "predictions 't.jsonl': t.jsonl is not retained")]


def test_one_row_per_evaluator_item_with_the_scores_evaluator_and_seed_passes():
    assert _eval9([_row("i1"), _row("i2")]) == []


@pytest.mark.parametrize("rows, message", [
    ([_row("i1"), {**_row("i2"), "reference": None} | {"prediction": None}], None),  # an invalid output stays a row
    ([_row("i1"), {k: v for k, v in _row("i2").items() if k != "reference"}],
     "t.jsonl: 1 row(s) lack item_id, arm, prediction, reference, metric or evaluator_id"),
    ([_row("i1"), _row("i2", evaluator_id="e" * 64)], "t.jsonl: rows carry another evaluator id than the score"),
    ([_row("i1"), _row("i2", learning_rate=0.01)], "t.jsonl: rows name another learning rate than the score"),
    ([_row("i1"), _row("i2", seed=1)], "t.jsonl: rows carry another seed than the score"),
    ([_row("i1")], "t.jsonl: 1 rows for T but the evaluator lists 2 items (every item stays a row)"),
    ([_row("i1"), _row("i2"), _row("i3")], "t.jsonl: 3 rows for T but the evaluator lists 2 items (every item stays a row)"),
    ([_row("i1"), _row("i1")], "t.jsonl: 2 rows for T but the evaluator lists 2 items (every item stays a row)"),
], ids=["null prediction", "no reference", "other evaluator", "other learning rate", "other seed", "an item short",
        "an item more", "an item twice"])
def test_prediction_rows_are_complete_and_agree_with_their_score(rows, message):
    assert _eval9(rows) == ([("EVAL-9", "invalid", message)] if message else [])


def test_rows_of_a_training_run_name_that_run():
    score = {**SCORE, "arm": "T", "run": "T-lr1", "learning_rate": 0.001}
    rows = [_row("i1", run="T-lr1", learning_rate=0.001), _row("i2", run="T-lr1", learning_rate=0.001)]
    assert _eval9(rows, score) == []
    rows[1]["run"] = "T-lr2"
    assert _eval9(rows, score) == [("EVAL-9", "invalid", "t.jsonl: rows name another training run than the score")]


def test_only_the_scores_own_rows_count_when_a_file_holds_several_arms():
    rows = [_row("i1"), _row("i2"), _row("i1", arm="B", seed=5), _row("i2", arm="B", seed=5)]
    assert _eval9(rows) == []  # B's rows (another seed) are not T's


def test_a_predictions_file_that_is_not_jsonl_rows_is_invalid():
    assert _eval9(None) == [("EVAL-9", "invalid", "t.jsonl is not JSONL prediction rows")]


def test_items_of_another_metric_in_the_same_file_are_not_counted():
    rows = [_row("i1"), _row("i2"), _row("i1", metric="f1")]
    assert _eval9(rows) == []


# ---------------------------------------------------------------- EVAL-9, the score's value


def _values(rows, value=0.5):
    return _messages(rules.EVAL_9_values(_ctx(scores=[{**SCORE, "value": value}], files={"t.jsonl": rows})))


@pytest.mark.parametrize("values, score, flagged", [
    ([1.0, 0.0], 0.5, False), ([1.0, 0.0, 0.0, 1.0, 1.0], 0.6, False), ([1.0, 0.0], 0.5 + 1e-8, True),
    ([1.0, 1.0], 0.5, True),
])
def test_a_score_is_the_mean_of_its_rows_values(values, score, flagged):
    rows = [_row(f"i{k}", value=v) for k, v in enumerate(values)]
    expected = [("EVAL-9", "invalid", f"score T: {score!r} is not the mean of its {len(values)} rows' values")]
    assert _values(rows, score) == (expected if flagged else [])


def test_a_score_counts_only_rows_of_its_metric_seed_and_arm():
    rows = [_row("i1", value=1.0), _row("i2", value=0.0), _row("i1", metric="f1", value=1.0),
            _row("i2", seed=1, value=1.0), _row("i2", arm="B", value=1.0)]
    assert _values(rows) == []


@pytest.mark.parametrize("value", [None, "1", float("nan")])
def test_rows_without_a_numeric_value_are_invalid(value):
    assert _values([_row("i1", value=1.0), _row("i2", value=value)]) == [
        ("EVAL-9", "invalid", "t.jsonl: rows without a numeric value")]


@pytest.mark.parametrize("grading, value, flagged", [
    ("graded", 1.0, False), ("timeout", 0.0, False), ("no_boxed", 0.0, False), ("grader_error", 0.0, False),
    ("timeout", 1.0, True), ("skipped", 0.0, True),
])
def test_a_row_not_graded_scores_0_and_its_grading_is_a_known_outcome(grading, value, flagged):
    rows = [_row("i1", value=1.0 - value, grading="graded"), _row("i2", value=value, grading=grading)]
    expected = [("EVAL-9", "invalid", "t.jsonl: 1 row(s) with an unknown grading outcome or a score although not graded")]
    assert _values(rows) == (expected if flagged else [])


def test_loss_scores_are_not_means_of_row_values():
    score = {**SCORE, "metric": "heldout_nll", "value": 9.0}
    ctx = _ctx(scores=[score], files={"t.jsonl": [_row("i1", metric="heldout_nll", value=1.0)]})
    assert rules.EVAL_9_values(ctx) == []


# ---------------------------------------------------------------- EVAL-10


def _eval10(verdict, scores, arms=("T", "B")):
    ctx = _ctx(scores=scores, verdict=verdict)
    ctx.result["evaluation"]["comparisons"] = [{"metric": "accuracy", "arms": list(arms)}]
    return _messages(rules.EVAL_10(ctx))


@pytest.mark.parametrize("verdict", ["supported", "refuted"])
def test_compared_arms_under_different_evaluators_with_a_definitive_verdict_are_invalid(verdict):
    other = {**SCORE, "arm": "B", "evaluator_id": "e" * 64}
    assert _eval10(verdict, [SCORE, other]) == [
        ("EVAL-10", "invalid", "compared arms of accuracy share no evaluator (re-evaluation pending) but a definitive "
                               "verdict was posted")]
    assert _eval10(verdict, [SCORE, {**SCORE, "arm": "B"}]) == []  # one shared evaluator
    assert _eval10(verdict, [SCORE, other, {**other, "arm": "T"}]) == []  # T re-evaluated with B's evaluator too


def test_an_inconclusive_verdict_may_wait_for_re_evaluation():
    assert _eval10("inconclusive", [SCORE, {**SCORE, "arm": "B", "evaluator_id": "e" * 64}]) == []
    assert _eval10("inconclusive", [SCORE]) == []


def test_a_compared_arm_without_a_score_is_invalid_under_a_definitive_verdict():
    assert _eval10("supported", [SCORE], arms=("T", "B", "base")) == [
        ("EVAL-10", "invalid", "comparison accuracy: no score for B, base")]
    scores_of_another_metric = [{**SCORE, "metric": "f1"}, {**SCORE, "arm": "B", "metric": "f1"}]
    assert _eval10("refuted", scores_of_another_metric) == [
        ("EVAL-10", "invalid", "comparison accuracy: no score for T, B")]


# ---------------------------------------------------------------- EVAL-12


def _eval12(comparisons, weights, scores=None, runs=(), selection=None, verdict="supported", finished=True):
    ctx = _ctx(scores=[SCORE] if scores is None else scores, verdict=verdict)
    ctx.finished = finished
    ctx.result["evaluation"]["comparisons"] = comparisons
    ctx.spec = {"decision_rule": {"criteria": [{"metric": "accuracy", "weights": weights}]}}
    ctx.plan = SimpleNamespace(role_to_arm={"treatment": {"arm": "T"}, "baseline": {"arm": "B"}},
                               training_runs=list(runs), selection=selection)
    return [m for _, _, m in _messages(rules.EVAL_12(ctx))]


def test_a_comparison_names_every_arm_a_criterion_weights_the_base_included():
    weights = {"treatment": 1, "baseline": -1, "base": 0.5}
    assert _eval12([{"metric": "accuracy", "arms": ["T", "B", "base"]}], weights) == []
    assert _eval12([{"metric": "accuracy", "arms": ["T", "B"]}], weights) == [
        "the comparison of accuracy leaves out base, which a criterion weights"]
    assert _eval12([{"metric": "accuracy", "arms": ["T"]}], weights) == [
        "the comparison of accuracy leaves out B, base, which a criterion weights"]


def test_eval12_applies_to_finished_records_with_a_verdict_and_scores():
    missing = [{"metric": "accuracy", "arms": ["T"]}]
    weights = {"treatment": 1, "baseline": -1}
    assert _eval12(missing, weights, finished=False) == []
    assert _eval12(missing, weights, verdict=None) == []
    assert _eval12(missing, weights, scores=[]) == []


def test_a_metric_compared_twice_or_an_arm_named_twice_is_invalid():
    weights = {"treatment": 1, "baseline": -1}
    assert _eval12([{"metric": "accuracy", "arms": ["T", "B", "T"]}], weights) == [
        "the comparison of accuracy names an arm twice"]
    assert _eval12([{"metric": "accuracy", "arms": ["T", "B"]}, {"metric": "accuracy", "arms": ["T", "B"]}],
                   weights) == ["a metric is compared twice"]


def test_a_metric_neither_compared_nor_scored_is_left_to_the_decision_rules():
    assert _eval12([], {"treatment": 1, "baseline": -1}, scores=[{**SCORE, "metric": "f1"}]) == []


def test_an_lr_grid_arm_is_compared_through_all_of_its_runs_or_not_at_all():
    runs = [SimpleNamespace(name="T-lr1", arm="T"), SimpleNamespace(name="T-lr2", arm="T"),
            SimpleNamespace(name="B-lr1", arm="B")]
    weights = {"treatment": 1, "baseline": -1}
    assert _eval12([{"metric": "accuracy", "arms": ["T-lr1", "T-lr2", "B-lr1"]}], weights, runs=runs) == []
    assert _eval12([{"metric": "accuracy", "arms": ["T-lr1", "B-lr1"]}], weights, runs=runs) == [
        "the comparison of accuracy names some runs of an arm's LR grid, not all of them",
        "the comparison of accuracy leaves out T, which a criterion weights"]


def test_with_adaptive_selection_every_candidate_of_the_role_is_compared():
    selection = {"role": "treatment", "candidates": ["T1", "T2"]}
    weights = {"treatment": 1, "baseline": -1}
    assert _eval12([{"metric": "accuracy", "arms": ["T1", "T2", "B"]}], weights, selection=selection) == []
    assert _eval12([{"metric": "accuracy", "arms": ["T1", "B"]}], weights, selection=selection) == [
        "the comparison of accuracy leaves out T2, which a criterion weights"]


# ---------------------------------------------------------------- LOSS-1..LOSS-4


@pytest.mark.parametrize("loss, trained, record, flagged", [
    (True, True, None, True), (True, True, {}, True), (True, False, None, False), (False, True, None, False),
    (True, True, {"aggregation": "token_mean"}, False)])
def test_a_trained_loss_endpoint_without_loss_eval_is_unverified(loss, trained, record, flagged):
    ctx = _loss_ctx(record, loss=loss, trained=trained)
    expected = [("LOSS-1", "unverified", "the endpoint is a loss but RESULT has no loss_eval record")]
    assert _messages(rules.LOSS_1(ctx)) == (expected if flagged else [])


def test_without_a_plan_loss_applies_when_the_record_carries_loss_eval():
    ctx = _loss_ctx(None)
    ctx.plan = None
    assert rules._loss_applies(ctx) is False
    ctx.result["loss_eval"] = {"aggregation": "token_mean"}
    assert rules._loss_applies(ctx) is True


@pytest.mark.parametrize("aggregation", ["token_mean", "example_mean"])
def test_loss_eval_recomputes_from_the_per_example_prediction_rows(aggregation):
    score = {**LOSS_SCORE, "value": 9 / 8 if aggregation == "token_mean" else 1.75}
    assert _loss3(_entry(aggregation), score, aggregation=aggregation) == []


@pytest.mark.parametrize("key, value", [("value", 1.0), ("token_mean", 1.0), ("example_mean", 1.0), ("nll_sum", 9.5),
                                        ("n_tokens", 9), ("n_examples", 3), ("n_empty", 0)])
def test_each_loss_eval_field_that_does_not_recompute_is_invalid(key, value):
    assert _loss3(_entry(**{key: value})) == [
        ("invalid", f"T: loss_eval {key} do not recompute from the retained predictions")]


def test_loss_eval_of_rows_without_nll_totals_or_unreadable_rows():
    assert _loss3(_entry(), rows=[{"prediction": {"nll_sum": 1.0}}]) == [
        ("invalid", "T: prediction rows carry no per-example nll_sum and n_tokens")]
    assert _loss3(_entry(), rows=None) == [
        ("unverified", "T: the predictions behind its held-out NLL cannot be read (t.jsonl is not retained)")]


def test_a_held_out_nll_score_is_its_predictions_aggregation():
    assert _loss3(_entry(), {**LOSS_SCORE, "value": 1.75}) == [
        ("invalid", "score T: 1.75 is not the token_mean of its predictions (1.125)")]


def test_a_trained_arm_scored_without_a_loss_eval_entry_is_invalid_an_untrained_base_is_not():
    loss_eval = {"aggregation": "token_mean", "arms": {}}
    scores = [LOSS_SCORE, {**LOSS_SCORE, "arm": "base", "predictions_ref": "b.jsonl"}]
    ctx = _loss_ctx(loss_eval, scores=scores, files={"t.jsonl": ROWS, "b.jsonl": ROWS})
    assert _messages(rules.LOSS_3(ctx)) == [("LOSS-3", "invalid", "loss_eval has no entry for T")]


def test_an_lr_grid_arm_keeps_each_runs_entry_and_its_own_is_its_selected_runs():
    score = {**LOSS_SCORE, "run": "T@lr=0.001"}
    runs = {"0.001": _entry(), "0.01": _entry(value=2.0)}
    good = {**_entry(), "runs": runs, "selected_run": "0.001"}
    assert _loss3(good, score) == []
    # the run found by its learning rate when its name does not carry it
    assert _loss3(good, {**LOSS_SCORE, "run": "T-first", "learning_rate": 0.001}) == []
    assert _loss3(good, {**LOSS_SCORE, "run": "T@lr=0.1"}) == [("invalid", "loss_eval has no entry for run T@lr=0.1")]
    wrong_selected = {**good, "selected_run": "0.01"}
    assert _loss3(wrong_selected, score) == [("invalid", "loss_eval T is not its selected run's entry")]
    missing_selected = {**good, "selected_run": "0.5"}
    assert _loss3(missing_selected, score) == [("invalid", "loss_eval T is not its selected run's entry")]


@pytest.mark.parametrize("where", ["top", "arm", "run"])
def test_loss_eval_aggregation_at_every_level_is_the_specs(where):
    run = _entry()
    arm = {**_entry(), "runs": {"0.001": run}}
    record = {"aggregation": "token_mean", "arms": {"T": arm}}
    if where == "top":
        record["aggregation"] = "example_mean"
    elif where == "arm":
        arm["aggregation"] = "example_mean"
    else:
        run["aggregation"] = "example_mean"
    ctx = _loss_ctx(record)
    assert _messages(rules.LOSS_4(ctx)) == [
        ("LOSS-4", "invalid", "loss_eval aggregation example_mean is not the spec's token_mean")]
    assert rules.LOSS_4(_loss_ctx({"aggregation": "token_mean", "arms": {"T": _entry()}})) == []
    assert rules.LOSS_4(_loss_ctx(record, aggregation=None)) == []  # the spec states none


# ---------------------------------------------------------------- EVAL-9, the scored checkpoint


def _checkpoints(rows, checkpoints, score=SCORE, **result):
    ctx = _ctx(scores=[score], files={"t.jsonl": rows}, evidence={"checkpoints": checkpoints}, **result)
    ctx.plan = SimpleNamespace(base_model="org/base")
    return [m for _, _, m in _messages(rules.EVAL_9_checkpoints(ctx))]


NOT_FINAL = "t.jsonl: its rows are not all scored on T's final checkpoint"


def test_an_arms_rows_are_scored_on_the_last_checkpoint_listed_for_it():
    listed = [{"arm": "T", "step": 10, "uri": "tinker://t/10"}, {"arm": "T", "step": 20, "uri": "tinker://t/20"},
              {"arm": "T", "step": 5, "uri": "tinker://t/5"}, {"arm": "B", "step": 30, "uri": "tinker://b/30"}]
    assert _checkpoints([_row("i1", checkpoint="tinker://t/20")], listed) == []
    assert _checkpoints([_row("i1", checkpoint="tinker://t/10")], listed) == [NOT_FINAL]
    assert _checkpoints([_row("i1", checkpoint="tinker://t/20"), _row("i2", checkpoint="tinker://t/10")], listed) == [
        NOT_FINAL]
    assert _checkpoints([_row("i1", checkpoint="tinker://t/20")], []) == [NOT_FINAL]  # nothing listed for T


def test_at_equal_steps_the_later_listed_checkpoint_is_the_final_one_and_a_seed_replica_its_own():
    listed = [{"arm": "T", "step": 20, "uri": "tinker://t/a"}, {"arm": "T", "step": 20, "uri": "tinker://t/b"},
              {"arm": "T", "seed": 1, "step": 20, "uri": "tinker://t/seed1"}]
    assert _checkpoints([_row("i1", checkpoint="tinker://t/b")], listed) == []
    seed1 = {**SCORE, "seed": 1}
    assert _checkpoints([_row("i1", checkpoint="tinker://t/seed1", seed=1)], listed, score=seed1) == []
    assert _checkpoints([_row("i1", checkpoint="tinker://t/b", seed=1)], listed, score=seed1) == [NOT_FINAL]


def test_a_checkpoint_without_an_integer_step_is_before_every_stepped_one():
    listed = [{"arm": "T", "step": 0, "uri": "tinker://t/0"}, {"arm": "T", "step": "late", "uri": "tinker://t/x"}]
    assert _checkpoints([_row("i1", checkpoint="tinker://t/0")], listed) == []


def test_the_bases_rows_are_scored_on_the_base_model_as_served_or_the_shared_initialization():
    base = {**SCORE, "arm": "base"}
    served = {"deviations": [{"field": "model", "original": "org/base", "effective": "org/base-served"}],
              "initialization_provenance": {"arms": {"T": {"initialization": {"checkpoint_uri": "tinker://init"}}}}}
    message = "t.jsonl: its rows are not all scored on base's base model"
    for name in ("org/base", "org/base-served", "tinker://init"):
        assert _checkpoints([_row("i1", arm="base", checkpoint=name)], [], score=base, **served) == []
    assert _checkpoints([_row("i1", arm="base", checkpoint="org/other")], [], score=base, **served) == [message]
    other = {"deviations": [{"field": "model", "original": "org/other", "effective": "org/x"},
                            {"field": "lr", "original": "org/base", "effective": "org/y"},
                            {"field": "optimizer", "original": "org/base", "effective": "org/z"}]}
    for name in ("org/x", "org/y", "org/z"):  # another model's deviation, or not a model deviation (fields sorting
        # before and after "model"): not the base as served
        assert _checkpoints([_row("i1", arm="base", checkpoint=name)], [], score=base, **other) == [message]


def test_a_file_without_rows_of_the_scored_arm_is_checked_as_a_whole():
    rows = [_row("i1", arm="X", evaluator_id="e" * 64), _row("i2", arm="X", evaluator_id="e" * 64)]
    assert _eval9(rows) == [("EVAL-9", "invalid", "t.jsonl: rows carry another evaluator id than the score")]


def test_a_runs_rows_may_name_the_run_as_their_arm_or_the_arm_as_their_run():
    score = {**SCORE, "arm": "T", "run": "T-lr1"}
    as_arm = [_row("i1", arm="T-lr1", run="T-lr1"), _row("i2", arm="T-lr1", run="T-lr1")]
    assert _eval9(as_arm, score) == []
    stranger = [_row("i1", arm="X", run="X-lr1"), _row("i2", arm="X", run="X-lr1")]  # none of its rows: all checked
    assert _eval9(stranger, score) == [("EVAL-9", "invalid", "t.jsonl: rows name another training run than the score")]


def test_a_manifest_item_list_is_unverified_only_under_a_decision_rule():
    items = {"manifest_ref": "items.jsonl", "manifest_sha256": "m" * 64}
    ctx = _ctx({KEY: {**PROVENANCE, "items": items}})
    ctx.evidence = _Manifest("usable", "m" * 64)
    ctx.spec = {"verdict_rule": {"method": "best_lr_threshold"}}  # a spec, but no decision_rule
    assert rules.EVAL_4(ctx) == []
    ctx.spec = {"decision_rule": {"method": "paired_hoeffding"}}
    assert _messages(rules.EVAL_4(ctx)) == [
        ("EVAL-4", "unverified", f"evaluator {KEY[:12]}: a manifest-only item list is not yet resolved by the decision "
                                 "validator; list items.ids")]


def test_only_the_scores_own_run_is_looked_up_in_an_lr_grid():
    """Owner m is neither an arm that posts metrics nor a training run: nothing is posted for it, whatever the
    runs named before (a-lr) and after it (z-lr) post."""
    runs = [SimpleNamespace(name="a-lr", arm="A", lr=0.1), SimpleNamespace(name="z-lr", arm="Z", lr=0.1)]
    metrics = {"arms": {"A": {"runs": {"0.1": {"accuracy": 0.9}}}, "Z": {"runs": {"0.1": {"accuracy": 0.9}}}}}
    assert rules.EVAL_7_metrics(_posted_ctx(metrics, [{**SCORE, "arm": "m"}], runs)) == []


def test_only_the_base_posts_flat_metrics():
    metrics = {"base_model_accuracy": 0.25, "base_accuracy": 0.25}
    assert rules.EVAL_7_metrics(_posted_ctx(metrics, [{**SCORE, "arm": "alpha"}, {**SCORE, "arm": "zeta"}])) == []


def test_each_owner_with_one_score_is_checked_whatever_the_other_owners_and_their_order():
    scores = [{**SCORE, "arm": "A"}, {**SCORE, "seed": 1}, SCORE, {**SCORE, "arm": "B"}, {**SCORE, "arm": "Z"}]
    metrics = {"arms": {"A": {"accuracy": 0.5}, "T": {"accuracy": 0.9}, "B": {"accuracy": 0.75}, "Z": {"accuracy": 0.5}}}
    # T has two seeds (its posted number summarises them: not compared); B, after it, is still checked
    assert _messages(rules.EVAL_7_metrics(_posted_ctx(metrics, scores))) == [
        ("EVAL-7", "invalid", "metrics for B post accuracy 0.75, its score is 0.5")]
    single = [{**SCORE, "arm": "A"}, SCORE, {**SCORE, "arm": "Z"}]
    assert _messages(rules.EVAL_7_metrics(_posted_ctx(metrics, single))) == [
        ("EVAL-7", "invalid", "metrics for T post accuracy 0.9, its score is 0.5")]


def test_a_score_whose_predictions_are_not_retained_does_not_stop_the_next_from_being_checked():
    scores = [{**SCORE, "arm": "B", "predictions_ref": "b.jsonl"}, SCORE]
    ctx = _ctx(scores=scores, files={"t.jsonl": [_row("i1")]})
    assert _messages(rules.EVAL_9(ctx)) == [
        ("EVAL-9", "invalid", "t.jsonl: 1 rows for T but the evaluator lists 2 items (every item stays a row)")]


def test_rows_naming_a_run_or_seed_sorting_before_the_scores_are_other_runs_and_seeds():
    score = {**SCORE, "arm": "T", "run": "T-lr1", "seed": 1}
    rows = [_row("i1", run="T-lr1", seed=1), _row("i2", run="T-lr0", seed=1)]
    assert _eval9(rows, score) == [("EVAL-9", "invalid", "t.jsonl: rows name another training run than the score")]
    rows = [_row("i1", run="T-lr1", seed=1), _row("i2", run="T-lr1", seed=0)]
    assert _eval9(rows, score) == [("EVAL-9", "invalid", "t.jsonl: rows carry another seed than the score")]


def test_items_of_a_metric_sorting_before_the_scores_are_not_counted():
    assert _eval9([_row("i1"), _row("i2"), _row("i3", metric="acc")]) == []


# ---------------------------------------------------------------- both sides of each comparison


def test_a_score_counts_only_its_metric_seed_and_arm_sorting_before_or_after_it():
    score = {**SCORE, "seed": 1}
    rows = [_row("i1", value=1.0, seed=1), _row("i2", value=0.0, seed=1),
            _row("i3", value=1.0, seed=1, metric="acc"), _row("i3", value=1.0, seed=1, metric="f1"),
            _row("i4", value=1.0, seed=0), _row("i4", value=1.0, seed=2),
            _row("i5", value=1.0, seed=1, arm="A"), _row("i5", value=1.0, seed=1, arm="Z")]
    ctx = _ctx(scores=[score], files={"t.jsonl": rows})
    assert rules.EVAL_9_values(ctx) == []


def test_a_row_not_graded_scores_exactly_0_not_less():
    rows = [_row("i1", value=1.0, grading="graded"), _row("i2", value=-1.0, grading="timeout")]
    assert _values(rows, 0.0) == [
        ("EVAL-9", "invalid", "t.jsonl: 1 row(s) with an unknown grading outcome or a score although not graded")]


def test_eval10_compares_only_the_comparisons_metric_sorting_before_or_after_it():
    other = {**SCORE, "arm": "B", "evaluator_id": "e" * 64}
    scores = [SCORE, {**SCORE, "arm": "B"}, {**other, "metric": "acc"}, {**other, "metric": "f1"}]
    assert _eval10("supported", scores) == []


def test_the_base_is_scored_on_the_base_model_and_an_arm_named_before_or_after_base_on_its_checkpoint():
    listed = [{"arm": "alpha", "step": 1, "uri": "tinker://alpha"}, {"arm": "zeta", "step": 1, "uri": "tinker://zeta"}]
    for arm in ("alpha", "zeta"):
        score = {**SCORE, "arm": arm}
        assert _checkpoints([_row("i1", arm=arm, checkpoint=f"tinker://{arm}")], listed, score=score) == []
        assert _checkpoints([_row("i1", arm=arm, checkpoint="org/base")], listed, score=score) == [
            f"t.jsonl: its rows are not all scored on {arm}'s final checkpoint"]


def test_an_earlier_step_listed_later_does_not_replace_the_final_checkpoint():
    listed = [{"arm": "T", "step": 20, "uri": "tinker://t/20"}, {"arm": "T", "step": 19, "uri": "tinker://t/19"},
              {"arm": "T", "step": 21, "seed": 1, "uri": "tinker://t/s1"}]
    assert _checkpoints([_row("i1", checkpoint="tinker://t/20")], listed) == []


def test_loss_eval_of_one_token_examples_and_of_an_empty_example():
    rows = _nll_rows((2.0, 1), (0.0, 0))  # one counted example of one token, one empty
    entry = {"aggregation": "token_mean", "value": 2.0, "token_mean": 2.0, "example_mean": 2.0, "nll_sum": 2.0,
             "n_tokens": 1, "n_examples": 1, "n_empty": 1}
    assert _loss3(entry, {**LOSS_SCORE, "value": 2.0}, rows=rows) == []


def test_an_lr_grid_run_is_found_by_its_name_or_its_learning_rate_and_no_other():
    runs = {"0.001": _entry(), "0.01": _entry(value=2.0)}
    good = {**_entry(), "runs": runs, "selected_run": "0.001"}
    # named for another rate, with this score's rate: found by the rate
    assert _loss3(good, {**LOSS_SCORE, "run": "T@lr=0.5", "learning_rate": 0.001}) == []
    # a rate of no run, named for no run
    assert _loss3(good, {**LOSS_SCORE, "run": "T@lr=0.5", "learning_rate": 0.5}) == [
        ("invalid", "loss_eval has no entry for run T@lr=0.5")]


def test_a_loss_score_skipped_does_not_stop_the_next_scores_mean_from_being_checked():
    scores = [{**SCORE, "metric": "heldout_nll", "value": 9.0}, {**SCORE, "value": 0.75}]
    ctx = _ctx(scores=scores, files={"t.jsonl": [_row("i1", value=1.0), _row("i2", value=0.0)]})
    assert _messages(rules.EVAL_9_values(ctx)) == [
        ("EVAL-9", "invalid", "score T: 0.75 is not the mean of its 2 rows' values")]


def test_a_score_without_numeric_row_values_does_not_stop_the_next_scores_check():
    scores = [{**SCORE, "arm": "B", "predictions_ref": "b.jsonl"}, {**SCORE, "value": 0.75}]
    files = {"b.jsonl": [_row("i1", arm="B", value=None)], "t.jsonl": [_row("i1", value=1.0), _row("i2", value=0.0)]}
    assert _messages(rules.EVAL_9_values(_ctx(scores=scores, files=files))) == [
        ("EVAL-9", "invalid", "b.jsonl: rows without a numeric value"),
        ("EVAL-9", "invalid", "score T: 0.75 is not the mean of its 2 rows' values")]


@pytest.mark.parametrize("metric", ["acc", "f1"])
def test_a_score_of_a_metric_sorting_before_or_after_the_comparisons_is_no_score_of_it(metric):
    other = {**SCORE, "arm": "B", "metric": metric, "evaluator_id": "e" * 64}
    assert _eval10("supported", [SCORE, other]) == [("EVAL-10", "invalid", "comparison accuracy: no score for B")]


def test_a_metric_left_to_the_decision_rules_does_not_stop_the_next_metrics_comparison_from_being_checked():
    ctx = _ctx(scores=[SCORE], verdict="supported")
    ctx.result["evaluation"]["comparisons"] = [{"metric": "accuracy", "arms": ["T"]}]
    ctx.spec = {"decision_rule": {"criteria": [{"metric": "median_optim_step_seconds", "weights": {"treatment": 1}},
                                               {"metric": "accuracy", "weights": {"treatment": 1, "baseline": -1}}]}}
    ctx.plan = SimpleNamespace(role_to_arm={"treatment": {"arm": "T"}, "baseline": {"arm": "B"}}, training_runs=[],
                               selection=None)
    assert [m for _, _, m in _messages(rules.EVAL_12(ctx))] == [
        "the comparison of accuracy leaves out B, which a criterion weights"]


def test_a_metric_compared_but_not_scored_is_still_held_to_its_weighted_arms():
    assert _eval12([{"metric": "accuracy", "arms": ["T"]}], {"treatment": 1, "baseline": -1},
                   scores=[{**SCORE, "metric": "f1"}]) == [
        "the comparison of accuracy leaves out B, which a criterion weights"]


def test_a_comparison_of_a_metric_sorting_before_is_not_the_metrics_comparison():
    comparisons = [{"metric": "acc", "arms": ["B"]}, {"metric": "accuracy", "arms": ["T"]}]
    assert _eval12(comparisons, {"treatment": 1, "baseline": -1}) == [
        "the comparison of accuracy leaves out B, which a criterion weights"]


@pytest.mark.parametrize("record", [{}, "none", None])
def test_no_loss_eval_record_has_nothing_for_loss2_and_loss3(record):
    ctx = _loss_ctx(None, scores=[LOSS_SCORE], files={"t.jsonl": ROWS})
    ctx.result["loss_eval"] = record
    assert rules.LOSS_2(ctx) == [] and rules.LOSS_3(ctx) == []


def test_a_run_named_for_a_rate_sorting_before_a_grid_key_is_not_that_keys_run():
    good = {**_entry(), "runs": {"0.001": _entry(), "0.01": _entry(value=2.0)}, "selected_run": "0.001"}
    assert _loss3(good, {**LOSS_SCORE, "run": "T@lr=0.0001"}) == [
        ("invalid", "loss_eval has no entry for run T@lr=0.0001")]


def test_every_score_is_checked_past_one_that_has_no_entry_or_no_readable_predictions():
    runs = {"0.001": _entry()}
    record = {"aggregation": "token_mean", "arms": {"T": {**_entry(), "runs": runs, "selected_run": "0.001"},
                                                    "B": _entry(value=1.0)}}
    scores = [{**LOSS_SCORE, "run": "T@lr=0.5"},  # no entry for this run
              {**LOSS_SCORE, "arm": "C"},  # a trained arm without an entry
              {**LOSS_SCORE, "arm": "B", "predictions_ref": "missing.jsonl"},  # predictions not readable
              {**LOSS_SCORE, "arm": "B", "predictions_ref": "empty.jsonl"},  # rows without nll totals
              {**LOSS_SCORE, "arm": "B"}]  # B's value 1.0 is not the recomputed 9/8
    ctx = _loss_ctx(record, scores=scores, files={"t.jsonl": ROWS, "empty.jsonl": [{"prediction": {}}]},
                    trained_arms=("T", "B", "C"))
    assert [(s, m) for _, s, m in _messages(rules.LOSS_3(ctx))] == [
        ("invalid", "loss_eval has no entry for run T@lr=0.5"),
        ("invalid", "loss_eval has no entry for C"),
        ("unverified", "B: the predictions behind its held-out NLL cannot be read (missing.jsonl is not retained)"),
        ("invalid", "B: prediction rows carry no per-example nll_sum and n_tokens"),
        ("invalid", "B: loss_eval value do not recompute from the retained predictions")]


def test_a_training_run_scored_under_another_arm_name_needs_its_entry():
    ctx = _loss_ctx({"aggregation": "token_mean", "arms": {}}, scores=[{**LOSS_SCORE, "arm": "X", "run": "T-lr1"}],
                    files={"t.jsonl": ROWS}, runs=[SimpleNamespace(name="T-lr1", arm="T", lr=0.01)], trained_arms=("T",))
    assert _messages(rules.LOSS_3(ctx)) == [("LOSS-3", "invalid", "loss_eval has no entry for T-lr1")]


def test_a_held_out_score_is_recomputed_in_the_specs_aggregation_not_the_records():
    record = {"aggregation": "example_mean", "arms": {"T": _entry()}}  # the record's top level says example_mean
    ctx = _loss_ctx(record, scores=[LOSS_SCORE], files={"t.jsonl": ROWS}, aggregation="token_mean")
    assert rules.LOSS_3(ctx) == []  # the score is 9/8, the spec's token_mean (example_mean would be 1.75)


def test_an_arms_entry_is_its_selected_runs_in_its_aggregation_too():
    runs = {"0.001": _entry(aggregation="example_mean", value=9 / 8)}  # differs in its aggregation only
    record = {**_entry(), "runs": runs, "selected_run": "0.001"}  # token_mean sorts after example_mean
    assert ("invalid", "loss_eval T is not its selected run's entry") in _loss3(record, {**LOSS_SCORE, "run": "T@lr=0.001"})


def test_the_loss_summary_counts_examples_with_tokens_and_any_other_aggregation_is_token_weighted():
    """ROWS plus one row of -1 tokens (no count of tokens): counted are (6, 2) and (3, 6); token_mean 9/8,
    example_mean (3 + 0.5) / 2; the empty and the negative one are n_empty. An aggregation other than
    example_mean (batch_mean sorts before it) is the token-weighted default."""
    rows = ROWS + _nll_rows((1.0, -1))
    expected = {"value": 9 / 8, "token_mean": 9 / 8, "example_mean": 1.75, "nll_sum": 9.0, "n_tokens": 8,
                "n_examples": 2, "n_empty": 2}
    assert rules.loss_from_predictions(rows, "token_mean") == expected
    assert rules.loss_from_predictions(rows, "batch_mean") == expected
    assert rules.loss_from_predictions(rows, "example_mean") == {**expected, "value": 1.75}


@pytest.mark.parametrize("record", [{}, "none"])
def test_no_loss_eval_record_has_no_aggregation_to_hold_to_the_spec(record):
    ctx = _loss_ctx(None)
    ctx.result["loss_eval"] = record
    assert rules.LOSS_4(ctx) == []


def test_only_a_model_deviation_of_the_base_itself_or_a_named_initialization_names_the_base():
    base = {**SCORE, "arm": "base"}
    result = {"deviations": [{"field": "model", "original": "org/aaa", "effective": "org/w"}],  # sorts before org/base
              "initialization_provenance": {"arms": {"T": {"initialization": {"checkpoint_uri": ""}},
                                                     "B": {"initialization": {"checkpoint_uri": 7}}}}}
    message = "t.jsonl: its rows are not all scored on base's base model"
    for name in ("org/w", "", 7):
        assert _checkpoints([_row("i1", arm="base", checkpoint=name)], [], score=base, **result) == [message]


def test_a_score_without_retained_rows_does_not_stop_the_next_scores_checkpoint_check():
    listed = [{"arm": "T", "step": 1, "uri": "tinker://t"}]
    scores = [{**SCORE, "arm": "B", "predictions_ref": "b.jsonl"}, SCORE]
    ctx = _ctx(scores=scores, files={"t.jsonl": [_row("i1", checkpoint="tinker://old")]}, evidence={"checkpoints": listed})
    ctx.plan = SimpleNamespace(base_model="org/base")
    assert [m for _, _, m in _messages(rules.EVAL_9_checkpoints(ctx))] == [NOT_FINAL]


def test_a_checkpoint_without_an_integer_step_ranks_as_step_minus_1_the_later_listed_winning_a_tie():
    listed = [{"arm": "T", "step": -1, "uri": "tinker://t/a"}, {"arm": "T", "step": None, "uri": "tinker://t/b"}]
    assert _checkpoints([_row("i1", checkpoint="tinker://t/b")], listed) == []


def test_the_bases_rows_name_one_model_even_when_both_are_names_of_the_base():
    base = {**SCORE, "arm": "base"}
    served = {"deviations": [{"field": "model", "original": "org/base", "effective": "org/base-served"}]}
    rows = [_row("i1", arm="base", checkpoint="org/base"), _row("i2", arm="base", checkpoint="org/base-served")]
    assert _checkpoints(rows, [], score=base, **served) == ["t.jsonl: its rows are not all scored on base's base model"]


@pytest.mark.parametrize("status, trained, still_running", [("running", False, True), ("running", True, False),
                                                            ("succeeded", False, False), ("failed", False, False)])
def test_a_record_is_still_waiting_for_its_evaluation_only_while_running_and_untrained(status, trained, still_running):
    ctx = SimpleNamespace(result={"status": status}, trained=trained, plan=None, spec={}, finished=status != "running",
                          evidence=_Evidence())
    waiting = ("EVAL-1", "unknown", "no evaluation yet (the run is still running)")
    assert (waiting in _messages(rules.grade(ctx).issues)) is still_running


def _checkpoints_without_spec(rows, score, **result):
    ctx = _ctx(scores=[score], files={"t.jsonl": rows}, evidence={"checkpoints": [
        {"arm": "T", "step": 20, "uri": "tinker://t/20"}]}, **result)
    assert ctx.plan is None  # the record carries no spec: no base model is named
    return _messages(rules.EVAL_9_checkpoints(ctx))


def test_without_the_spec_the_bases_rows_on_one_unknown_model_are_unverified_never_invalid():
    # "missing/corrupt files stay unverified": no spec names the base model, so rows that name one model that is
    # neither the shared initialization nor a served deviation cannot be judged
    base = {**SCORE, "arm": "base"}
    unknown = ("EVAL-9", "unverified", "t.jsonl: without the spec, the base model its rows must be scored on is not known")
    assert _checkpoints_without_spec([_row("i1", arm="base", checkpoint="org/base")], base) == [unknown]
    init = {"initialization_provenance": {"arms": {"T": {"initialization": {"checkpoint_uri": "tinker://init"}}}}}
    assert _checkpoints_without_spec([_row("i1", arm="base", checkpoint="tinker://init")], base, **init) == []
    # rows on two models are wrong whatever the spec says: invalid, with or without it
    two = [_row("i1", arm="base", checkpoint="org/base"), _row("i2", arm="base", checkpoint="org/other")]
    assert _checkpoints_without_spec(two, base) == [
        ("EVAL-9", "invalid", "t.jsonl: its rows are not all scored on base's base model")]
    # a trained arm's final checkpoint is the record's own evidence, not the spec's: still invalid without it
    assert _checkpoints_without_spec([_row("i1", checkpoint="tinker://t/10")], SCORE) == [
        ("EVAL-9", "invalid", NOT_FINAL)]
    assert _checkpoints_without_spec([_row("i1", checkpoint="tinker://t/20")], SCORE) == []
    # an arm whose name sorts after "base" as much as one sorting before it ("T" < "base" < "treatment")
    treatment = {**SCORE, "arm": "treatment"}
    assert _checkpoints_without_spec([_row("i1", arm="treatment", checkpoint="org/base")], treatment) == [
        ("EVAL-9", "invalid", "t.jsonl: its rows are not all scored on treatment's final checkpoint")]
