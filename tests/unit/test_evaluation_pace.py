"""The pilot's evaluation pace (experiment.stats.feasibility.EvaluationPace, issue 31 item 3).

An evaluation call of n items takes a fixed time F plus n times the service's pace p. The pilot answers
its items in two calls (a quarter, then the rest) and separates F from p, so that a 32-item pilot does
not project F / 32 onto every item of a 500-item evaluation. Times here are made from chosen F and p,
never read off the code.
"""

from __future__ import annotations

import pytest

from experiment.stats.feasibility import EvaluationPace, PhaseTiming


@pytest.mark.parametrize("n,first", [(32, 8), (100, 25), (7, 1), (4, 1), (3, 1), (2, 2), (1, 1)])
def test_the_first_call_takes_a_quarter_at_least_one_and_every_item_below_three(n, first):
    assert EvaluationPace.first_call_items(n) == first


@pytest.mark.parametrize("fixed,pace", [(0.17, 0.0197), (0.028, 0.0059), (0.0, 0.01), (1.5, 0.002)])
def test_two_calls_give_back_the_fixed_time_and_the_pace_they_were_made_of(fixed, pace):
    n1, n2 = 8, 24
    measured = EvaluationPace.of_calls(n1, fixed + n1 * pace, n2, fixed + n2 * pace)
    assert measured.seconds_per_item == pytest.approx(pace)
    assert measured.fixed_seconds == pytest.approx(fixed, abs=1e-12)
    assert measured.items == 32 and measured.seconds == pytest.approx(2 * fixed + 32 * pace)
    assert measured.item_seconds == pytest.approx(32 * pace)


def test_the_split_projects_a_long_evaluation_where_the_whole_time_per_item_overstates_it():
    fixed, pace, full = 0.17, 0.0197, 500
    truth = fixed + full * pace  # one call of the full evaluation
    split = EvaluationPace.of_calls(8, fixed + 8 * pace, 24, fixed + 24 * pace)
    one_call = fixed + 32 * pace  # the pilot before the split: one call, all of it per item
    # the projection the record makes: items at the pace (phase evaluation), once the fixed time (evaluation_latency)
    projected = (PhaseTiming(split.item_seconds, 32, full, 32, None, None).projected_seconds
                 + PhaseTiming(split.fixed_seconds, 1, 1, 0, None, None).projected_seconds)
    assert projected == pytest.approx(truth)
    assert one_call / 32 * full / truth > 1.24  # what it said before: 25% over


@pytest.mark.parametrize("first_seconds,rest_seconds", [
    (0.30, 0.20),   # the larger call was quicker (noise): no positive pace
    (0.05, 0.40),   # a negative fixed time: the first call's items were quicker than the pace
    (0.10, 0.10),   # the same time for three times the items
])
def test_a_split_that_gives_no_positive_pace_or_a_negative_fixed_time_counts_everything_per_item(
        first_seconds, rest_seconds):
    measured = EvaluationPace.of_calls(8, first_seconds, 24, rest_seconds)
    assert measured.fixed_seconds == 0.0
    assert measured.seconds_per_item == pytest.approx((first_seconds + rest_seconds) / 32)
    assert measured.item_seconds == pytest.approx(first_seconds + rest_seconds)


def test_a_fixed_time_of_exactly_zero_is_kept_as_a_split():
    measured = EvaluationPace.of_calls(8, 8 * 0.01, 24, 24 * 0.01)
    assert measured.seconds_per_item == pytest.approx(0.01) and measured.fixed_seconds == pytest.approx(0.0, abs=1e-15)


@pytest.mark.parametrize("n1,n2", [(2, 0), (1, 1), (3, 2), (0, 5)])
def test_calls_that_cannot_be_told_apart_count_everything_per_item(n1, n2):
    # one call (nothing in the second), equal sizes, a first call larger than the rest, or an empty first call
    measured = EvaluationPace.of_calls(n1, 0.1 + n1 * 0.01, n2, 0.1 + n2 * 0.01 if n2 else 0.0)
    total = 0.1 + n1 * 0.01 + (0.1 + n2 * 0.01 if n2 else 0.0)
    assert measured.fixed_seconds == 0.0
    assert measured.seconds_per_item == pytest.approx(total / (n1 + n2))


@pytest.mark.parametrize("n1,n2", [(0, 0), (-1, 24), (8, -1)])
def test_an_evaluation_of_no_items_or_a_negative_count_is_refused(n1, n2):
    with pytest.raises(ValueError, match="has no pace"):
        EvaluationPace.of_calls(n1, 0.1, n2, 0.3)


def test_a_first_call_of_one_item_still_splits():
    measured = EvaluationPace.of_calls(1, 0.05 + 0.01, 3, 0.05 + 3 * 0.01)
    assert measured.seconds_per_item == pytest.approx(0.01) and measured.fixed_seconds == pytest.approx(0.05)


def test_the_pilots_evaluation_parts_sum_over_models_and_share_each_runs_wall_time():
    from experiment.rl.steps.feasibility_pilot import Timed, evaluation_part

    base_pace = EvaluationPace.of_calls(8, 0.2 + 8 * 0.01, 24, 0.2 + 24 * 0.01)  # F 0.2, p 0.01: 0.72 s
    arm_paces = {"a": EvaluationPace.of_calls(8, 0.1 + 8 * 0.02, 24, 0.1 + 24 * 0.02),  # F 0.1, p 0.02: 0.84 s
                 "b": EvaluationPace.of_calls(8, 0.3 + 8 * 0.02, 24, 0.3 + 24 * 0.02)}  # F 0.3, p 0.02: 1.24 s
    base = Timed({"base": ([], base_pace)}, {"base": base_pace.seconds}, wall_seconds=0.72)
    arms = Timed({name: ([], pace) for name, pace in arm_paces.items()},
                 {name: pace.seconds for name, pace in arm_paces.items()}, wall_seconds=1.3)  # side by side
    items = evaluation_part(lambda pace: pace.item_seconds, base, arms)
    fixed = evaluation_part(lambda pace: pace.fixed_seconds, base, arms)
    assert items[0] == pytest.approx(32 * 0.01 + 2 * 32 * 0.02)
    assert fixed[0] == pytest.approx(0.2 + 0.1 + 0.3)  # one fixed time per model, not the split's two
    # wall: the base model's run alone, then the arms' run, each in the share of its models' time
    assert items[1] == pytest.approx(0.72 * 0.32 / 0.72 + 1.3 * (0.64 / 0.84 + 0.64 / 1.24) / 2)
    assert fixed[1] == pytest.approx(0.72 * 0.2 / 0.72 + 1.3 * (0.1 / 0.84 + 0.3 / 1.24) / 2)
