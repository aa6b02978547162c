"""experiment.stats.activation's measurements and range checks (issue 28 item 7, the complete mutation
run): every value computed here independently (the statistics module, by-hand counts) from small
pilot steps, and every range boundary checked on both sides."""

from __future__ import annotations

import math
import statistics
from types import SimpleNamespace

import pytest

from experiment.stats.activation import (
    CheckOutcome, as_one_of_string, check_range, evaluate_checks, fraction_nonzero, gs1_activation_values,
    json_safe, pearson, selfgen_activation_values,
)


def _step(item_ids=(), rewards=(), advantages=(), executed_group_size=4.0, baseline_values=(),
          effective_neighbors=()):
    return SimpleNamespace(item_ids=list(item_ids), rewards=list(rewards), advantages=list(advantages),
                           executed_group_size=executed_group_size, baseline_values=list(baseline_values),
                           effective_neighbors=list(effective_neighbors))


def test_fraction_nonzero_counts_values_farther_than_tol_from_zero():
    values = [0.0, 1e-7, -2e-6, 3.0, 1e-6]  # 1e-6 itself is not farther than the tolerance
    assert fraction_nonzero(values) == 2 / 5
    assert fraction_nonzero(values, tol=1e-8) == 4 / 5
    assert fraction_nonzero([-1.0]) == 1.0
    assert fraction_nonzero([]) == 0.0


@pytest.mark.parametrize("value,text", [(1.0, "1"), (2, "2"), (-3.0, "-3"), (0.0, "0"), (0.5, "0.5"), (1.25, "1.25")])
def test_one_of_strings_print_integral_values_as_integers(value, text):
    assert as_one_of_string(value) == text


@pytest.mark.parametrize("value", [None, float("nan"), float("inf"), -float("inf")])
def test_a_missing_or_non_finite_value_is_not_measured(value):
    outcome = check_range({"metric": "m", "min": 0}, value)
    assert (outcome.metric, outcome.passed, outcome.reason) == ("m", False, "m: not measured")
    assert outcome.value is value


def test_the_range_includes_its_ends():
    check = {"metric": "m", "min": 0.25, "max": 0.75}
    assert check_range(check, 0.25) == CheckOutcome("m", 0.25, True, "m: 0.25 within range")
    assert check_range(check, 0.75).passed
    assert check_range(check, 0.5).passed
    below = check_range(check, 0.125)
    assert below == CheckOutcome("m", 0.125, False, "m: 0.125 < min 0.25")
    above = check_range(check, 1)  # an integer value is compared as it is
    assert above == CheckOutcome("m", 1, False, "m: 1 > max 0.75")


def test_an_unset_end_leaves_that_side_open():
    assert check_range({"metric": "m", "min": None, "max": 1.0}, -1e9).passed
    assert check_range({"metric": "m", "min": 0.0, "max": None}, 1e9).passed
    assert check_range({"metric": "m"}, 123.0).passed


def test_one_of_accepts_only_the_listed_values_and_every_problem_is_listed():
    assert check_range({"metric": "g", "one_of": ["1", "4"]}, 4.0).passed
    assert check_range({"metric": "g", "one_of": [1]}, 1.0).passed
    assert check_range({"metric": "g", "one_of": None}, 5.0).passed
    wrong = check_range({"metric": "g", "one_of": ["1"]}, 2.0)
    assert wrong == CheckOutcome("g", 2.0, False, "g: 2 not in one_of ['1']")
    both = check_range({"metric": "g", "min": 3, "one_of": ["1"]}, 2.0)
    assert both.reason == "g: 2 < min 3; 2 not in one_of ['1']"
    assert both.to_dict() == {"metric": "g", "value": 2.0, "passed": False, "reason": both.reason}


def test_pearson_is_the_sample_correlation_and_undefined_for_a_constant_side():
    x, y = [1.0, 2.0, 4.0, 7.0], [0.5, 0.0, 1.5, 2.0]
    assert pearson(x, y) == pytest.approx(statistics.correlation(x, y), rel=1e-12)
    assert pearson([1.0, 2.0], [3.0, 1.0]) == pytest.approx(-1.0)
    assert pearson([1.0, 1.0, 1.0], y[:3]) is None
    assert pearson(x[:3], [2.0, 2.0, 2.0]) is None
    assert pearson([1.0], [2.0]) is None


def test_evaluate_checks_fails_a_metric_that_was_not_measured():
    outcomes = evaluate_checks([{"metric": "a", "max": 1}, {"metric": "b", "min": 0}], {"a": 0.5})
    assert [o.passed for o in outcomes] == [True, False]
    assert outcomes[1].reason == "b: not measured"


def test_json_safe_nulls_only_non_finite_values():
    assert json_safe({"a": 1.5, "b": None, "c": float("nan"), "d": float("inf"), "e": 0.0}) == {
        "a": 1.5, "b": None, "c": None, "d": None, "e": 0.0}


def test_the_gs1_values_are_the_pilots_means_percentile_shares_and_correlation():
    treatment = [
        _step(["p", "q", "r"], rewards=[1.0, 0.0, 1.0, 1.0], advantages=[0.5, 0.0, -0.5, 0.0],
              executed_group_size=4.0, baseline_values=[0.2, 0.6, 0.9], effective_neighbors=[1, 2, 3, 4, 5, 6]),
        _step(["s"], rewards=[0.0, 0.0], advantages=[0.0, 1e-3], executed_group_size=4.0,
              baseline_values=[0.1], effective_neighbors=[7, 8, 9, 10, 11]),
    ]
    baseline = [_step(["t"], executed_group_size=8.0), _step(["u"], executed_group_size=8.0)]
    heldout = {"p": 0.25, "q": 0.5, "r": 1.0, "x": 0.0}  # "x" was not in the correlated step
    values = gs1_activation_values(treatment, baseline, heldout, treatment[0])
    assert values["executed_group_size_treatment"] == 4.0
    assert values["executed_group_size_baseline"] == 8.0
    assert values["pilot_mean_reward"] == pytest.approx(statistics.fmean([1.0, 0.0, 1.0, 1.0, 0.0, 0.0]))
    # 10th percentile of 1..11, linear interpolation: rank 0.1 * 10 = 1 -> the second value
    assert values["kernel_effective_neighbors_p10"] == pytest.approx(
        statistics.quantiles(range(1, 12), n=10, method="inclusive")[0])
    assert values["frac_nonzero_advantage_treatment"] == 3 / 6
    assert values["baseline_reward_corr"] == pytest.approx(statistics.correlation([0.2, 0.6, 0.9], [0.25, 0.5, 1.0]))


def test_a_mixed_group_size_is_nan_and_an_empty_pilot_measures_nothing():
    mixed = gs1_activation_values([_step(executed_group_size=4.0), _step(executed_group_size=2.0)],
                                  [_step(executed_group_size=8.0), _step(executed_group_size=7.0)], {}, _step())
    assert math.isnan(mixed["executed_group_size_treatment"]) and math.isnan(mixed["executed_group_size_baseline"])
    empty = gs1_activation_values([], [], {"p": 1.0}, _step(["p"], baseline_values=[0.5]))
    assert empty == {"executed_group_size_treatment": None, "executed_group_size_baseline": None,
                     "pilot_mean_reward": None, "kernel_effective_neighbors_p10": None,
                     "frac_nonzero_advantage_treatment": None, "baseline_reward_corr": None}


def test_the_selfgen_values_are_shares_of_the_consumed_batches_and_groups():
    treatment = [
        # two items, groups of 3: [1, 1, 1] constant, [0, 1, 0] varies
        _step(["g1", "g2"], rewards=[1.0, 1.0, 1.0, 0.0, 1.0, 0.0]),
        # four items, groups of 2: [0, 0], [1, 0], [0.5, 0.5], [1, 1]
        _step(["g3", "t1", "g1", "g4"], rewards=[0.0, 0.0, 1.0, 0.0, 0.5, 0.5, 1.0, 1.0]),
    ]
    baseline = [_step(["t1", "t2", "g9"]), _step(["t3"])]
    values = selfgen_activation_values(treatment, baseline, {"g1", "g2", "g3", "g4"}, {"t1", "t2", "t3"}, 2)
    assert values == {
        "treatment_fraction_batches_from_generated_set": 5 / 6,
        "baseline_fraction_batches_from_gsm8k_train": 3 / 4,
        "selfgen_frac_groups_nonzero_reward_variance_pilot": 2 / 6,
        "selfgen_mean_train_reward_pilot": pytest.approx(statistics.fmean(
            [1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.5, 0.5, 1.0, 1.0])),
        "generated_eval_exact_overlaps": 2.0,
    }
    assert isinstance(values["generated_eval_exact_overlaps"], float)


def test_an_empty_selfgen_pilot_measures_nothing_but_the_overlaps():
    assert selfgen_activation_values([], [], set(), set(), 0) == {
        "treatment_fraction_batches_from_generated_set": None,
        "baseline_fraction_batches_from_gsm8k_train": None,
        "selfgen_frac_groups_nonzero_reward_variance_pilot": None,
        "selfgen_mean_train_reward_pilot": None,
        "generated_eval_exact_overlaps": 0.0,
    }


def test_one_logged_batch_gives_its_group_size_and_a_rising_mix_is_still_a_mix():
    single = gs1_activation_values([_step(executed_group_size=4.0)], [_step(executed_group_size=8.0)], {}, _step())
    assert single["executed_group_size_treatment"] == 4.0 and single["executed_group_size_baseline"] == 8.0
    rising = gs1_activation_values([_step(executed_group_size=2.0), _step(executed_group_size=4.0)],
                                   [_step(executed_group_size=8.0), _step(executed_group_size=16.0)], {}, _step())
    assert math.isnan(rising["executed_group_size_treatment"]) and math.isnan(rising["executed_group_size_baseline"])
