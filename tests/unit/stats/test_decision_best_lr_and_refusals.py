"""experiment.stats.decision beyond test_decision_paired_hoeffding.py (issue 28 item 7, the complete mutation run's
survivors): the best-LR threshold rule (DEC-8 of the TriMuon recorded revision), the defaults of the
simultaneous adjustment, which observation a missing-observation error names, the seed rule of
direction+confidence, and the refusals of unknown methods and vocabularies. Expected values are
literals or the contract's formulas, never taken from the code under test."""

from __future__ import annotations

import math

import pytest

from experiment.stats.decision import (
    CriterionResult,
    DecisionError,
    DecisionResult,
    Observation,
    best_lr_threshold,
    decision_summary,
    direction_confidence_verdict,
    observations_jsonl_bytes,
    paired_hoeffding,
)


def _obs(values: dict, metric="accuracy", seed=0):
    return [Observation(item_id=f"i{index}", arm=arm, seed=seed, metric=metric, value=float(v))
            for arm, row in values.items() for index, v in enumerate(row)]


def _criterion(cid="c", metric="accuracy", margin=0.0):
    return {"id": cid, "metric": metric, "margin": margin, "weights": {"t": 1.0, "b": -1.0}, "bounds": [0.0, 1.0]}


# ---- best_lr_threshold

# three arms, so a run of a neighbouring arm (alphabetically before or after) is never taken for its own
RUN_ARM = {"a1": "a", "a2": "a", "a3": "a", "b1": "b", "b2": "b", "c1": "c", "c2": "c"}
RUN_LR = {"a1": 1e-4, "a2": 2e-4, "a3": 4e-4, "b1": 1e-4, "b2": 2e-4, "c1": 1e-4, "c2": 2e-4}
RUN_VALUES = {
    "a1": {"loss": 2.0, "acc": 0.10}, "a2": {"loss": 1.5, "acc": 0.75}, "a3": {"loss": 1.8, "acc": 0.20},
    "b1": {"loss": 1.0, "acc": 0.25}, "b2": {"loss": 0.5, "acc": 0.50},   # b's losses are the lowest of all
    "c1": {"loss": 1.2, "acc": 0.30}, "c2": {"loss": 1.4, "acc": 0.40},
}


def _best(criteria, values=RUN_VALUES, run_arm=RUN_ARM, run_lr=RUN_LR):
    return best_lr_threshold(values, run_arm, run_lr, criteria, "loss")


def test_each_arm_selects_its_own_lowest_loss_run():
    result = _best([])
    assert {arm: entry["selected_run"] for arm, entry in result["per_arm"].items()} == {"a": "a2", "b": "b2", "c": "c1"}
    assert result["per_arm"]["a"]["selected_lr"] == 2e-4
    assert result["per_arm"]["a"]["lr_grid"] == [1e-4, 2e-4, 4e-4]
    assert result["per_arm"]["a"]["values"] == {"loss": 1.5, "acc": 0.75}


def test_a_run_without_values_is_left_out_and_an_arm_without_any_is_refused():
    run_arm = {**RUN_ARM, "a4": "a"}
    result = _best([], run_arm=run_arm, run_lr={**RUN_LR, "a4": 8e-4})
    assert result["per_arm"]["a"]["lr_grid"] == [1e-4, 2e-4, 4e-4]
    with pytest.raises(DecisionError, match="no values for any run of arm 'd'"):
        _best([], run_arm={**RUN_ARM, "d1": "d"}, run_lr={**RUN_LR, "d1": 1e-4})


@pytest.mark.parametrize("bad", [math.nan, math.inf, "1.0", None])
def test_a_selection_metric_that_is_not_a_finite_number_is_refused(bad):
    values = {**RUN_VALUES, "a3": {"loss": bad, "acc": 0.2}}
    with pytest.raises(DecisionError, match="loss of a3"):
        _best([], values=values)


def test_grid_edge_is_set_only_when_the_selected_lr_is_an_edge_of_a_grid_of_two_or_more():
    result = _best([])
    # a: middle of three; b: the top of two; c: the bottom of two
    assert [result["per_arm"][arm]["grid_edge"] for arm in "abc"] == [False, True, True]
    assert result["grid_edge"] is True
    single = _best([], values={"a1": {"loss": 1.0}}, run_arm={"a1": "a"}, run_lr={"a1": 1e-4})
    assert single["per_arm"]["a"]["grid_edge"] is False and single["grid_edge"] is False
    middle = _best([], values={r: RUN_VALUES[r] for r in ("a1", "a2", "a3")},
                   run_arm={r: "a" for r in ("a1", "a2", "a3")}, run_lr=RUN_LR)
    assert middle["grid_edge"] is False


def test_the_effect_is_the_weighted_sum_of_the_selected_runs_values():
    # 2 * acc(a2) - 1 * acc(b2) = 2 * 0.75 - 0.5 = 1.0
    criterion = {"id": "c1", "metric": "acc", "weights": {"a": 2.0, "b": -1.0}, "margin": 0.0}
    result = _best([criterion])
    assert result["criteria"] == [{"id": "c1", "metric": "acc", "effect": 1.0, "margin": 0.0, "met": True}]


@pytest.mark.parametrize("comparison, effect_minus_margin, met", [
    ("at_least", 0.0, True), ("at_least", 0.25, True), ("at_least", -0.25, False),
    ("exceeds", 0.0, False), ("exceeds", 0.25, True), ("exceeds", -0.25, False),
])
def test_a_criterion_is_met_at_its_margin_only_with_at_least(comparison, effect_minus_margin, met):
    # effect = acc(a2) - acc(b2) = 0.25, exactly representable
    criterion = {"id": "c", "metric": "acc", "weights": {"a": 1.0, "b": -1.0},
                 "margin": 0.25 - effect_minus_margin, "comparison": comparison}
    assert _best([criterion])["criteria"][0]["met"] is met


@pytest.mark.parametrize("comparison", ["above", "exceeds", "greater_than"])
def test_any_comparison_but_at_least_is_strict(comparison):
    criterion = {"id": "c", "metric": "acc", "weights": {"a": 1.0, "b": -1.0}, "margin": 0.25, "comparison": comparison}
    assert _best([criterion])["criteria"][0]["met"] is False


def test_at_least_is_the_default_comparison():
    criterion = {"id": "c", "metric": "acc", "weights": {"a": 1.0, "b": -1.0}, "margin": 0.25}
    assert _best([criterion])["criteria"][0]["met"] is True


def test_the_verdict_is_supported_only_when_every_criterion_is_met():
    met = {"id": "m", "metric": "acc", "weights": {"a": 1.0}, "margin": 0.75}
    missed = {"id": "x", "metric": "acc", "weights": {"a": 1.0}, "margin": 0.8}
    assert _best([met])["verdict"] == "supported"
    assert _best([met, missed])["verdict"] == "refuted"
    assert _best([missed, met])["verdict"] == "refuted"
    assert _best([])["verdict"] == "refuted"  # no criterion supports nothing
    assert _best([])["method"] == "best_lr_threshold" and _best([])["criteria"] == []


def test_a_criterion_weighting_an_arm_without_runs_is_refused():
    with pytest.raises(DecisionError, match="no runs of arm 'z'"):
        _best([{"id": "c", "metric": "acc", "weights": {"z": 1.0}, "margin": 0.0}])


# ---- paired Hoeffding: defaults and messages

def test_without_simultaneous_two_criteria_keep_the_full_alpha():
    obs = _obs({"t": [1, 1, 0, 1], "b": [0, 1, 0, 0]})
    result = paired_hoeffding(obs, [_criterion("c1"), _criterion("c2")], alpha=0.1)
    assert result.adjustment == "none" and result.simultaneous is False
    assert [c.alpha for c in result.criteria] == [0.1, 0.1]
    summary = decision_summary({"alpha": 0.1, "criteria": [_criterion("c1"), _criterion("c2")]}, obs, "three_way")
    assert summary["adjustment"] == "none"


def test_observations_of_another_metric_before_the_criterions_are_skipped_not_the_end():
    other = _obs({"t": [0.5, 0.5, 0.5, 0.5], "b": [0.5, 0.5, 0.5, 0.5]}, metric="loss")
    obs = other + _obs({"t": [1, 1, 0, 1], "b": [0, 1, 0, 0]})
    result = paired_hoeffding(obs, [_criterion()], alpha=0.05)
    assert result.criteria[0].effect == pytest.approx(0.5, abs=1e-15)


def test_the_missing_observation_error_names_the_first_missing_one():
    obs = [o for o in _obs({"t": [1, 1, 0, 1], "b": [0, 1, 0, 0]}) if (o.arm, o.item_id) not in {("t", "i1"), ("b", "i3")}]
    with pytest.raises(DecisionError, match=r"2 missing observations \(first: arm 't', item 'i1', seed 0\)"):
        paired_hoeffding(obs, [_criterion()], alpha=0.05)


# ---- direction + confidence: seeds settle a straddling interval only strictly below the margin

def _straddling(per_seed_effects: dict, margin=0.1) -> DecisionResult:
    criterion = CriterionResult(
        id="c", metric="accuracy", weights={}, arm_weights={}, margin=margin, bounds=[0.0, 1.0], n=4, effect=0.05,
        range=2.0, alpha=0.05, half_width=0.2, lower=-0.15, upper=0.25, per_arm_means={}, per_arm_seed_means={},
        evaluator_ids=[], status="unsettled", per_seed_effects=per_seed_effects)
    return DecisionResult(method="paired_hoeffding", alpha=0.05, simultaneous=False, adjustment="none",
                          role_to_arm={}, seeds=[0, 1, 2], criteria=[criterion])


def test_three_seeds_all_below_the_margin_settle_it():
    verdict = direction_confidence_verdict(_straddling({"0": 0.0, "1": 0.05, "2": 0.09}))
    assert verdict == {"verdict": "refuted", "confidence": "strong", "limits": []}


def test_a_seed_exactly_at_the_margin_does_not_settle_it():
    verdict = direction_confidence_verdict(_straddling({"0": 0.0, "1": 0.1}))
    assert verdict["confidence"] == "weak" and "straddles the margin" in verdict["limits"][0]


# ---- refusals

def test_an_unknown_decision_method_is_refused_whatever_its_name():
    obs = _obs({"t": [1, 1, 0, 1], "b": [0, 1, 0, 0]})
    for method in ("best_lr_threshold", "t_test", "wilcoxon"):
        with pytest.raises(DecisionError, match="unsupported decision method"):
            decision_summary({"method": method, "alpha": 0.05, "criteria": [_criterion()]}, obs, "three_way")


def test_an_unknown_vocabulary_is_refused_whatever_its_name():
    obs = _obs({"t": [1, 1, 0, 1], "b": [0, 1, 0, 0]})
    for vocabulary in ("binary", "direction", "yes_no"):
        with pytest.raises(DecisionError, match="unknown verdict vocabulary"):
            decision_summary({"alpha": 0.05, "criteria": [_criterion()]}, obs, vocabulary)


def test_the_observations_file_refuses_a_value_that_is_not_finite():
    with pytest.raises(ValueError):
        observations_jsonl_bytes([Observation(item_id="i0", arm="t", seed=0, metric="accuracy", value=math.nan)])
