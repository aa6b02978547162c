"""The grader's evaluator rules (experiment/grading/evaluator.py; docs/contract-rules.md EVAL-1..EVAL-10),
each on a minimal grading context whose expected finding is worked out in the test from the contract's
text (issue 28 item 7: the complete mutation run of experiment/grading/)."""

from __future__ import annotations

import hashlib
import json
from types import SimpleNamespace

import pytest

from experiment.grading import evaluator as rules

PROVENANCE = {"code_sha256": "c" * 64, "items": {"ids": ["i1", "i2"]},
              "decoding": {"temperature": 0.0, "max_tokens": 16, "stop": ["\n"]}}


def _id(provenance) -> str:
    """EVAL-2's formula, written out: sha256 of the canonical JSON."""
    text = json.dumps(provenance, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


KEY = _id(PROVENANCE)


class _Evidence:
    """Inline files by name: each a list of JSONL rows (None: retained but not JSONL); a name not listed is
    not retained."""

    def __init__(self, files=None):
        self.files = files or {}

    def usable(self, name):
        return name in self.files

    def why(self, name):
        return f"{name} is not retained"

    def jsonl(self, name):
        return self.files.get(name)


def _ctx(evaluators=None, scores=None, files=None, **result):
    evaluation = {"evaluators": {KEY: PROVENANCE} if evaluators is None else evaluators, "scores": scores or []}
    return SimpleNamespace(result={"evaluation": evaluation, **result}, spec={}, plan=None, trained=False,
                           finished=True, evidence=_Evidence(files))


def _messages(issues):
    return [(issue.rule, issue.status, issue.message) for issue in issues]


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

    def state(self, ref):
        return (self._state,)

    def sha256(self, ref):
        return self._sha256


@pytest.mark.parametrize("state, sha256, flagged", [("usable", "m" * 64, False), ("missing", "m" * 64, True),
                                                    ("usable", "n" * 64, True)])
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


SCORE = {"arm": "T", "metric": "accuracy", "value": 0.5, "seed": 0, "evaluator_id": KEY, "predictions_ref": "t.jsonl"}


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


def _row(item, **extra):
    return {"item_id": item, "arm": "T", "prediction": "4", "reference": "4", "metric": "accuracy",
            "evaluator_id": KEY, "seed": 0, "value": 1.0, **extra}


def _eval9(rows, score=SCORE, evaluators=None):
    return _messages(rules.EVAL_9(_ctx(evaluators, scores=[score], files={"t.jsonl": rows})))


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
