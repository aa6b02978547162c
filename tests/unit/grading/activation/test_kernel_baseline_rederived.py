"""The grader's GS1 kernel and group-mean advantages (experiment.grading.kernel_baseline) give what the loop's
estimator gives (issue 45 item 12).

The grader imports no code of experiment.rl (tests/unit/test_import_layers.py): ACT-3 recomputes a pilot's
advantages from the estimators' definitions. These tests hold that restatement, and its pinned constants, to the
loop's own code (experiment/rl/advantages.py) on seeded inputs, so the two can only disagree where one is wrong.
"""

from __future__ import annotations

import numpy as np
import pytest

from experiment.grading import kernel_baseline as mine
from experiment.rl import advantages as loop


def test_the_pinned_constants_are_the_estimators():
    assert (mine.BANDWIDTH, mine.WINDOW_SIZE, mine.MIN_KERNEL_MASS) == (
        loop.DEFAULT_BANDWIDTH, loop.DEFAULT_WINDOW_SIZE, loop.DEFAULT_MIN_KERNEL_MASS)


def test_group_mean_advantages_are_the_loops():
    rng = np.random.default_rng(0)
    groups = [rng.random(rng.integers(1, 6)).tolist() for _ in range(7)]
    assert mine.group_mean_advantages(groups) == pytest.approx(
        [a for g in loop.grpo_group_mean_advantages(groups) for a in g], abs=1e-15)
    with pytest.raises(ValueError):
        mine.group_mean_advantages([[1.0], []])


@pytest.mark.parametrize("case", ["steps", "overflowing history", "fallbacks", "constant features", "one rollout"])
def test_kernel_steps_are_the_loops(case):
    """Several steps with the window carried: advantages, baselines, effective neighbours, fallbacks."""
    rng = np.random.default_rng(len(case))
    batch, steps, window_size, min_mass = 8, 4, 256, 1e-3
    if case == "overflowing history":
        batch, steps, window_size = 6, 5, 13
    if case == "fallbacks":
        min_mass = 1e6  # more than any window can hold: every rollout falls back to the window mean
    if case == "one rollout":
        batch = 1
    history, state = mine.KernelHistory(), loop.KernelBaselineState(capacity=window_size)
    for _ in range(steps):
        rewards = rng.integers(0, 2, batch).astype(float).tolist()
        lengths = rng.integers(5, 80, batch).astype(float).tolist()
        logprobs = (-rng.random(batch) * 3).tolist()
        if case == "constant features":
            lengths, logprobs = [17.0] * batch, [-1.25] * batch
        got = history.kernel_step(rewards, lengths, logprobs, window_size=window_size, min_kernel_mass=min_mass)
        advantages, diagnostics = loop.gs1_kernel_advantages(rewards, lengths, logprobs, state,
                                                             window_size=window_size, min_kernel_mass=min_mass)
        state = loop.append_batch_to_window(state, rewards, lengths, logprobs)
        assert got["advantages"] == pytest.approx(advantages.tolist(), rel=1e-12, abs=1e-12)
        assert got["baseline_values"] == pytest.approx(diagnostics.baseline.tolist(), rel=1e-12, abs=1e-12)
        assert got["effective_neighbors"] == pytest.approx(diagnostics.effective_neighbors.tolist(), rel=1e-12, abs=1e-12)
        assert got["kernel_fallbacks"] == int(diagnostics.fell_back.sum())
    if case == "fallbacks":
        assert got["kernel_fallbacks"] == batch


def test_a_kernel_step_refuses_what_the_loop_refuses():
    with pytest.raises(ValueError):
        mine.KernelHistory().kernel_step([1.0, 0.0], [3.0], [-1.0, -1.0])
    with pytest.raises(ValueError):
        mine.KernelHistory().kernel_step([1.0], [0.5], [-1.0])
    with pytest.raises(ValueError):
        mine.KernelHistory().kernel_step([1.0] * 4, [3.0] * 4, [-1.0] * 4, window_size=2)


def _both_steps(rewards, lengths, logprobs, **settings):
    got = mine.KernelHistory().kernel_step(rewards, lengths, logprobs, **settings)
    advantages, diagnostics = loop.gs1_kernel_advantages(rewards, lengths, logprobs, loop.KernelBaselineState(),
                                                         **settings)
    return got, advantages.tolist(), int(diagnostics.fell_back.sum())


def test_a_kernel_mass_at_the_threshold_is_no_fallback():
    """Two rollouts with the same features: each weighs the other 1, exactly the minimum mass asked for."""
    got, advantages, fallbacks = _both_steps([1.0, 0.0], [9.0, 9.0], [-1.0, -1.0], min_kernel_mass=1.0)
    assert got["kernel_fallbacks"] == fallbacks == 0 and got["advantages"] == pytest.approx(advantages)


def test_a_step_one_larger_than_the_window_fits_it():
    """Each rollout's window is the step's other rollouts: window_size + 1 rollouts fill it exactly."""
    got, advantages, _ = _both_steps([1.0, 0.0, 1.0], [5.0, 9.0, 14.0], [-1.0, -0.5, -2.0], window_size=2)
    assert got["advantages"] == pytest.approx(advantages, abs=1e-12)


@pytest.mark.parametrize("rewards, lengths, logprobs", [
    ([1.0, 0.0, 1.0], [3.0, 4.0], [-1.0, -1.0]),  # more rewards than features
    ([1.0], [3.0, 4.0], [-1.0, -1.0]),  # fewer rewards than features
    ([1.0, 0.0], [3.0, 4.0], [-1.0]),  # more lengths than logprobs
    ([1.0, 0.0], [3.0, 4.0], [-1.0, -1.0, -2.0]),  # fewer lengths than logprobs
], ids=["rewards longer", "rewards shorter", "lengths longer", "lengths shorter"])
def test_a_kernel_step_refuses_features_of_another_length_on_either_side(rewards, lengths, logprobs):
    with pytest.raises(ValueError):
        mine.KernelHistory().kernel_step(rewards, lengths, logprobs)
    with pytest.raises(ValueError):
        loop.gs1_kernel_advantages(rewards, lengths, logprobs, loop.KernelBaselineState())


def test_a_one_token_prompt_is_a_valid_length():
    """log 1 = 0 is a feature like any other: the smallest length the definition allows."""
    got, advantages, _ = _both_steps([1.0, 0.0, 1.0], [1.0, 1.0, 6.0], [-1.0, -0.5, -2.0])
    assert got["advantages"] == pytest.approx(advantages, abs=1e-12)


@pytest.mark.parametrize("lengths, logprobs", [([17.0] * 4, [-0.2, -1.0, -2.5, -0.7]),
                                               ([5.0, 9.0, 30.0, 12.0], [-1.25] * 4)],
                         ids=["constant lengths", "constant logprobs"])
def test_one_constant_feature_column_leaves_the_other_standardized(lengths, logprobs):
    rewards = [1.0, 0.0, 0.0, 1.0]
    got, advantages, _ = _both_steps(rewards, lengths, logprobs)
    assert got["advantages"] == pytest.approx(advantages, rel=1e-12, abs=1e-12)
    assert len(set(np.round(got["baseline_values"], 12))) > 1  # the varying column still weighs the rollouts apart


@pytest.mark.parametrize("bandwidth", [0.3, 1.0, 2.0])
def test_kernel_steps_at_other_bandwidths_are_the_loops(bandwidth):
    """The pinned bandwidth 0.5 has 0.5 ** 2 == 0.5 / 2; other bandwidths tell the kernel's h^2 apart."""
    got, advantages, _ = _both_steps([1.0, 0.0, 1.0, 0.0], [5.0, 9.0, 30.0, 12.0], [-0.2, -1.0, -2.5, -0.7],
                                     bandwidth=bandwidth)
    assert got["advantages"] == pytest.approx(advantages, rel=1e-12, abs=1e-12)
