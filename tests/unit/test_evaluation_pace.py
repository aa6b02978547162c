"""The pilot's evaluation pace (experiment.stats.feasibility.EvaluationPace, issue 31 item 3).

An evaluation call of n items takes a fixed time F (every call) plus n times the service's pace p, and the
first call on a freshly loaded sampler a warm-up W besides. The pilot answers a model's items in three calls
(one item, an eighth of the rest, the remainder) and separates the pace from the fixed time of an evaluation
(W + F), so that a 32-item pilot projects neither (W + F) / 32 onto every item of a 500-item evaluation nor
takes W from the pace. Times here are made from chosen W, F and p, never read off the code.
"""

from __future__ import annotations

import pytest

from experiment.stats.feasibility import EvaluationPace, PhaseTiming, TimeScale


def _calls(n: int, warm: float, fixed: float, pace: float) -> list[tuple[int, float]]:
    """The pilot's calls over n items, each timed as the model says: F + items x p, W more on the first."""
    sizes = EvaluationPace.calls(n)
    return [(size, (warm if index == 0 else 0.0) + fixed + size * pace) for index, size in enumerate(sizes)]


@pytest.mark.parametrize("n,sizes", [(32, [1, 3, 28]), (100, [1, 12, 87]), (17, [1, 2, 14]), (9, [1, 1, 7]),
                                     (5, [1, 1, 3]), (4, [4]), (1, [1])])
def test_the_calls_are_one_item_an_eighth_of_the_rest_and_the_remainder_from_five_items(n, sizes):
    assert EvaluationPace.calls(n) == sizes and sum(sizes) == n


@pytest.mark.parametrize("warm,fixed,pace", [(0.0, 0.17, 0.0197), (0.4, 0.028, 0.0059), (0.0, 0.0, 0.01),
                                             (2.0, 1.5, 0.002)])
def test_the_calls_give_back_the_pace_and_the_fixed_time_of_an_evaluation(warm, fixed, pace):
    measured = EvaluationPace.of_calls(_calls(32, warm, fixed, pace))
    assert measured.seconds_per_item == pytest.approx(pace)
    assert measured.fixed_seconds == pytest.approx(warm + fixed, abs=1e-12)
    assert measured.items == 32 and measured.seconds == pytest.approx(warm + 3 * fixed + 32 * pace)
    assert measured.item_seconds == pytest.approx(32 * pace)


@pytest.mark.parametrize("warm", [0.0, 0.3])
def test_the_pilot_projects_a_long_evaluation_where_one_call_or_a_two_call_split_did_not(warm):
    fixed, pace, full = 0.17, 0.0197, 500
    truth = warm + fixed + full * pace  # one call of the full evaluation on a fresh sampler
    measured = EvaluationPace.of_calls(_calls(32, warm, fixed, pace))
    # the record's projection: the items at the pace (phase evaluation), the fixed time once (evaluation_latency)
    projected = (PhaseTiming(measured.item_seconds, 32, full, 32, None, None).projected_seconds
                 + PhaseTiming(measured.fixed_seconds, 1, 1, 0, None, None).projected_seconds)
    assert projected == pytest.approx(truth)
    one_call = warm + fixed + 32 * pace
    assert one_call / 32 * full / truth > 1.24  # the pilot before the split
    # a two-call split (8 then 24 items) whose first call carried the warm-up took it from the pace
    t1, t2 = warm + fixed + 8 * pace, fixed + 24 * pace
    two_call_pace = (t2 - t1) / 16
    two_call = full * two_call_pace + t1 - 8 * two_call_pace
    assert (two_call / truth < 0.8) is (warm > 0)


@pytest.mark.parametrize("times", [
    (0.05, 0.30, 0.20),   # the larger call was quicker (noise): no positive pace
    (0.001, 0.05, 0.60),  # the one-item call shorter than the pace: a negative fixed time
    (0.05, 0.10, 0.10),   # the same time for more items
])
def test_calls_that_give_no_positive_pace_or_a_negative_fixed_time_count_everything_per_item(times):
    measured = EvaluationPace.of_calls(list(zip([1, 3, 28], times)))
    assert measured.fixed_seconds == 0.0
    assert measured.seconds_per_item == pytest.approx(sum(times) / 32)
    assert measured.item_seconds == pytest.approx(sum(times))


def test_a_fixed_time_of_exactly_zero_is_kept():
    # binary fractions, so the pace is exactly 0.25 and the one-item call less it exactly 0 (not all per item: 9/32)
    measured = EvaluationPace.of_calls([(1, 0.25), (3, 0.5 + 3 * 0.25), (28, 0.5 + 28 * 0.25)])
    assert (measured.seconds_per_item, measured.fixed_seconds) == (0.25, 0.0)


@pytest.mark.parametrize("timed", [
    [(4, 0.2)],                          # one call: too few items to split
    [(2, 0.1), (3, 0.2), (28, 0.5)],     # a first call of more than one item
    [(1, 0.1), (0, 0.0), (28, 0.5)],     # an empty middle call
    [(1, 0.1), (28, 0.5), (3, 0.2)],     # the larger call before the smaller
    [(1, 0.1), (14, 0.3), (14, 0.3)],    # two calls of one size
    [(1, 0.1), (31, 0.6)],               # two calls
    [(1, 0.1), (3, 0.2), (28, 0.5), (4, 0.1)],  # four calls
    [(0, 0.1), (3, 0.2), (28, 0.5)],     # no one-item call first (a split would give pace 0.012, fixed 0.088)
])
def test_calls_that_are_not_the_pilots_three_count_everything_per_item(timed):
    measured = EvaluationPace.of_calls(timed)
    total = sum(t for _, t in timed)
    assert measured.fixed_seconds == 0.0
    assert measured.seconds_per_item == pytest.approx(total / sum(n for n, _ in timed))


@pytest.mark.parametrize("timed,counts", [([], r"\[\]"), ([(0, 0.0)], r"\[0\]"),
                                          ([(-1, 0.1), (3, 0.2), (28, 0.5)], r"\[-1, 3, 28\]"),
                                          ([(1, 0.1), (3, 0.2), (-2, 0.5)], r"\[1, 3, -2\]")])
def test_an_evaluation_of_no_items_or_a_negative_count_is_refused_naming_the_counts(timed, counts):
    with pytest.raises(ValueError, match=f"an evaluation of {counts} items has no pace"):
        EvaluationPace.of_calls(timed)


def test_a_middle_call_of_one_item_still_splits():  # nine items: [1, 1, 7]
    measured = EvaluationPace.of_calls(_calls(9, 0.1, 0.05, 0.01))
    assert EvaluationPace.calls(9)[1] == 1
    assert measured.seconds_per_item == pytest.approx(0.01) and measured.fixed_seconds == pytest.approx(0.15)


def test_the_pilots_evaluation_parts_sum_over_models_and_share_each_runs_wall_time():
    from experiment.rl.steps.feasibility_pilot import Timed, evaluation_part

    base_pace = EvaluationPace.of_calls(_calls(32, 0.0, 0.2, 0.01))  # W + F 0.2, p 0.01; 0.6 + 0.32 s
    arm_paces = {"a": EvaluationPace.of_calls(_calls(32, 0.1, 0.1, 0.02)),  # W + F 0.2, p 0.02
                 "b": EvaluationPace.of_calls(_calls(32, 0.0, 0.3, 0.02))}  # W + F 0.3, p 0.02
    base = Timed({"base": ([], base_pace)}, {"base": base_pace.seconds}, wall_seconds=base_pace.seconds)
    arms = Timed({name: ([], pace) for name, pace in arm_paces.items()},
                 {name: pace.seconds for name, pace in arm_paces.items()}, wall_seconds=1.7)  # side by side
    uncorrected = TimeScale.of(1.0)  # client-side, as measured
    items = evaluation_part(lambda pace: pace.item_seconds, (base, uncorrected), (arms, uncorrected))
    fixed = evaluation_part(lambda pace: pace.fixed_seconds, (base, uncorrected), (arms, uncorrected))
    assert items[0] == pytest.approx(32 * 0.01 + 2 * 32 * 0.02)
    assert fixed[0] == pytest.approx(0.2 + 0.2 + 0.3)  # one fixed time per model, not one per call
    # wall: the base model's run alone, then the arms' run, each in the share of its models' time
    seconds = {name: pace.seconds for name, pace in arm_paces.items()}
    assert items[1] == pytest.approx(0.32 + 1.7 * (0.64 / seconds["a"] + 0.64 / seconds["b"]) / 2)
    assert fixed[1] == pytest.approx(0.2 + 1.7 * (0.2 / seconds["a"] + 0.3 / seconds["b"]) / 2)


def test_the_pilots_evaluation_service_seconds_take_each_runs_share_of_the_service_and_keep_the_measured_wall():
    from experiment.rl.steps.feasibility_pilot import Timed, evaluation_part

    pace = EvaluationPace.of_calls(_calls(32, 0.0, 0.2, 0.01))
    base = Timed({"base": ([], pace)}, {"base": pace.seconds}, wall_seconds=pace.seconds)
    arms = Timed({"a": ([], pace), "b": ([], pace)}, {"a": pace.seconds, "b": pace.seconds}, wall_seconds=1.0)
    reported = TimeScale.of(pace.seconds, service_seconds=0.75 * pace.seconds)  # the service: 3/4 of the client's
    contended = TimeScale.of(1.0, runqueue_wait_seconds=0.5)  # half the arms' run the client waited for a CPU
    items = evaluation_part(lambda p: p.item_seconds, (base, reported), (arms, contended))
    assert items[0] == pytest.approx(0.75 * pace.item_seconds + 0.5 * 2 * pace.item_seconds)
    unscaled = evaluation_part(lambda p: p.item_seconds, (base, TimeScale.of(1.0)), (arms, TimeScale.of(1.0)))
    assert items[1] == pytest.approx(unscaled[1])  # the wall time stays the client's
