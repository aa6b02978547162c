"""Offline float64 tests of the advantage estimators (experiment/rl/advantages.py)."""

import math

import numpy as np
import pytest
import tinker
import torch
from tinker_cookbook.rl.data_processing import compute_advantages
from tinker_cookbook.rl.types import Trajectory, TrajectoryGroup

from experiment.rl.advantages import (
    KernelBaselineState,
    append_batch_to_window,
    grpo_group_mean_advantages,
    gs1_kernel_advantages,
)
from experiment.stats.correctness import accepts, parity_errors
from experiment.rl.gs1_reference import reference_gs1_advantages

SPEC_REFERENCE_TOLERANCE = {"atol": 1e-06, "rtol": 1e-05}  # reference_loss in the GS1 spec


def _trajectory_group(rewards):
    """A cookbook TrajectoryGroup whose total rewards are ``rewards`` (no transitions)."""
    return TrajectoryGroup(
        trajectories_G=[Trajectory(transitions=[], final_ob=tinker.ModelInput.empty()) for _ in rewards],
        final_rewards_G=list(rewards),
        metrics_G=[{} for _ in rewards],
    )


def _random_batch(rng, size, lengths=(10, 400)):
    rewards = rng.integers(0, 2, size).astype(np.float64) + rng.choice([0.0, -0.1], size)
    prompt_lengths = rng.integers(lengths[0], lengths[1], size).astype(np.float64)
    mean_logprobs = rng.normal(-2.0, 0.7, size)
    return rewards, prompt_lengths, mean_logprobs


def _reference(rewards, lengths, logprobs, state, **kwargs):
    return reference_gs1_advantages(rewards, lengths, logprobs, list(state.rewards),
                                    list(state.prompt_token_lengths), list(state.prompt_mean_logprobs),
                                    **kwargs)


# --- GRPO -------------------------------------------------------------------------

def test_grpo_equals_cookbook_compute_advantages_in_float64():
    rng = np.random.default_rng(1)
    groups = [rng.choice([0.0, 0.9, 1.0, -0.1], 8).tolist() for _ in range(8)] + [[1.0], [0.3, 0.7]]
    previous_dtype = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        cookbook = compute_advantages([_trajectory_group(group) for group in groups])
    finally:
        torch.set_default_dtype(previous_dtype)
    ours = grpo_group_mean_advantages(groups)
    assert len(ours) == len(cookbook)
    for mine, theirs in zip(ours, cookbook):
        assert theirs.dtype == torch.float64
        np.testing.assert_allclose(mine, theirs.numpy(), rtol=0, atol=1e-15)


def test_grpo_matches_cookbook_default_float32_within_float32_precision():
    groups = [[0.0, 1.0, 1.0, 0.9, -0.1, 0.0, 1.0, 0.0]]
    cookbook = compute_advantages([_trajectory_group(group) for group in groups])
    np.testing.assert_allclose(grpo_group_mean_advantages(groups)[0], cookbook[0].double().numpy(), atol=1e-6)


def test_grpo_group_of_one_has_zero_advantage_and_rejects_empty_group():
    assert grpo_group_mean_advantages([[0.7]]) == [[0.0]]
    with pytest.raises(ValueError):
        grpo_group_mean_advantages([[]])


# --- GS1 kernel baseline: implementation == independent reference ----------------

@pytest.mark.parametrize("batch_size,steps", [(64, 7), (8, 5), (1, 3), (257, 2)])
def test_kernel_matches_reference_over_steps_past_a_full_window(batch_size, steps):
    rng = np.random.default_rng(batch_size)
    state = KernelBaselineState()
    for _ in range(steps):
        rewards, lengths, logprobs = _random_batch(rng, batch_size)
        advantages, diagnostics = gs1_kernel_advantages(rewards, lengths, logprobs, state)
        expected, expected_diagnostics = _reference(rewards, lengths, logprobs, state)
        np.testing.assert_allclose(advantages, expected, rtol=0, atol=1e-12)
        for key in ("baseline", "kernel_mass", "effective_neighbors"):
            np.testing.assert_allclose(getattr(diagnostics, key), expected_diagnostics[key], rtol=1e-12, atol=1e-12)
        assert diagnostics.fell_back.tolist() == expected_diagnostics["fell_back"]
        assert diagnostics.window_length.tolist() == expected_diagnostics["window_length"]
        state = append_batch_to_window(state, rewards, lengths, logprobs)
    assert len(state) == min(256, batch_size * steps)


def test_kernel_matches_reference_with_ties_and_a_constant_feature_column():
    rng = np.random.default_rng(7)
    state = KernelBaselineState()
    for step in range(5):
        rewards = rng.integers(0, 2, 64).astype(np.float64)
        lengths = np.full(64, 37.0)  # constant column: standardized to 0
        logprobs = np.repeat(rng.normal(-1.5, 0.3, 16), 4)  # ties: 4 rollouts per value
        if step == 4:
            logprobs = np.full(64, -0.1)  # both columns constant in this batch (history differs)
        advantages, diagnostics = gs1_kernel_advantages(rewards, lengths, logprobs, state)
        expected, expected_diagnostics = _reference(rewards, lengths, logprobs, state)
        np.testing.assert_allclose(advantages, expected, rtol=0, atol=1e-12)
        np.testing.assert_allclose(diagnostics.effective_neighbors, expected_diagnostics["effective_neighbors"],
                                   rtol=1e-12)
        state = append_batch_to_window(state, rewards, lengths, logprobs)


def test_every_feature_identical_gives_equal_weights_and_the_window_mean():
    rewards = np.array([1.0, 0.0, 0.0, 1.0, 1.0])
    advantages, diagnostics = gs1_kernel_advantages(rewards, [3.3] * 5, [0.1] * 5, KernelBaselineState())
    others_mean = (rewards.sum() - rewards) / 4
    np.testing.assert_allclose(diagnostics.baseline, others_mean, rtol=0, atol=1e-15)
    np.testing.assert_allclose(diagnostics.kernel_mass, 4.0, rtol=0, atol=1e-15)
    np.testing.assert_allclose(diagnostics.effective_neighbors, 4.0, rtol=1e-15)


# --- forced activation / non-activation / fallback ---------------------------------

def test_forced_activation_heterogeneous_features_give_nonconstant_predictive_baseline():
    # Two clusters of prompts: short & likely prompts always rewarded, long & unlikely never.
    rng = np.random.default_rng(3)
    easy = rng.random(64) < 0.5
    lengths = np.where(easy, 20.0, 300.0) * rng.uniform(0.95, 1.05, 64)
    logprobs = np.where(easy, -0.5, -3.0) + rng.normal(0, 0.05, 64)
    rewards = easy.astype(np.float64)
    advantages, diagnostics = gs1_kernel_advantages(rewards, lengths, logprobs, KernelBaselineState())
    assert np.std(diagnostics.baseline) > 0.3
    assert np.corrcoef(diagnostics.baseline, rewards)[0, 1] > 0.9
    assert not diagnostics.fell_back.any()
    # The kernel baseline predicts the reward: advantages are much smaller than with a batch mean.
    assert np.abs(advantages).mean() < 0.5 * np.abs(rewards - rewards.mean()).mean()


def test_forced_nonactivation_huge_bandwidth_gives_the_window_mean():
    rng = np.random.default_rng(4)
    history = _random_batch(rng, 300)
    state = append_batch_to_window(KernelBaselineState(), *history)
    rewards, lengths, logprobs = _random_batch(rng, 64)
    advantages, diagnostics = gs1_kernel_advantages(rewards, lengths, logprobs, state, bandwidth=1e6)
    previous_used = np.asarray(history[0][-193:])  # 256 - 63 newest previous rollouts
    window_mean = (rewards.sum() - rewards + previous_used.sum()) / 256
    np.testing.assert_allclose(diagnostics.baseline, window_mean, rtol=0, atol=1e-10)
    np.testing.assert_allclose(advantages, rewards - window_mean, rtol=0, atol=1e-10)
    np.testing.assert_allclose(diagnostics.effective_neighbors, 256.0, rtol=1e-9)


def test_kernel_mass_below_threshold_falls_back_to_window_mean():
    rng = np.random.default_rng(5)
    rewards, _, _ = _random_batch(rng, 16)
    lengths = np.arange(1, 17, dtype=np.float64) ** 2  # distinct, well separated after standardizing
    logprobs = -np.arange(16, dtype=np.float64)
    advantages, diagnostics = gs1_kernel_advantages(rewards, lengths, logprobs, KernelBaselineState(),
                                                    bandwidth=1e-3)
    assert diagnostics.fell_back.all()
    assert (diagnostics.kernel_mass < 1e-3).all()
    window_mean = (rewards.sum() - rewards) / 15
    np.testing.assert_allclose(advantages, rewards - window_mean, rtol=0, atol=1e-14)


def test_mass_just_above_and_below_threshold_decides_the_fallback():
    # Two rollouts, no history: each has one neighbor with weight exp(-8 / (2 h^2))
    # (two standardized points sit at +-1 in both columns, distance^2 = 8).
    rewards = [1.0, 0.0]
    lengths, logprobs = [10.0, 20.0], [-1.0, -2.0]
    weight = math.exp(-8 / (2 * 0.5**2))
    _, below = gs1_kernel_advantages(rewards, lengths, logprobs, KernelBaselineState(), min_kernel_mass=weight * 1.01)
    _, above = gs1_kernel_advantages(rewards, lengths, logprobs, KernelBaselineState(), min_kernel_mass=weight * 0.99)
    assert below.fell_back.all() and not above.fell_back.any()
    np.testing.assert_allclose(above.kernel_mass, weight, rtol=1e-12)
    np.testing.assert_allclose(below.baseline, [0.0, 1.0])  # the single neighbor either way
    np.testing.assert_allclose(above.baseline, [0.0, 1.0])


def test_empty_window_gives_zero_baseline():
    advantages, diagnostics = gs1_kernel_advantages([0.9], [12], [-1.0], KernelBaselineState())
    assert advantages.tolist() == [0.9]
    assert diagnostics.fell_back.tolist() == [True]
    assert diagnostics.window_length.tolist() == [0]


# --- the window ----------------------------------------------------------------

def test_window_uses_exactly_the_newest_previous_rollouts_that_fit():
    rng = np.random.default_rng(6)
    history = [np.asarray(part) for part in _random_batch(rng, 256)]
    rewards, lengths, logprobs = _random_batch(rng, 64)

    def run(history_rewards):
        state = append_batch_to_window(KernelBaselineState(), history_rewards, history[1], history[2])
        return gs1_kernel_advantages(rewards, lengths, logprobs, state)

    base_advantages, diagnostics = run(history[0])
    assert diagnostics.window_length.tolist() == [256] * 64
    older = history[0].copy()
    older[-194] += 5.0  # the 194th newest previous rollout is outside the window
    np.testing.assert_array_equal(run(older)[0], base_advantages)
    newer = history[0].copy()
    newer[-193] += 5.0  # the 193rd newest is inside
    assert np.abs(run(newer)[0] - base_advantages).max() > 1e-6


def test_flipping_the_exclusion_of_item_i_is_caught_by_the_preflight_tolerance():
    rng = np.random.default_rng(8)
    state = append_batch_to_window(KernelBaselineState(), *_random_batch(rng, 128))
    rewards, lengths, logprobs = _random_batch(rng, 64)
    expected, _ = _reference(rewards, lengths, logprobs, state)
    correct, _ = gs1_kernel_advantages(rewards, lengths, logprobs, state)
    perturbed, _ = gs1_kernel_advantages(rewards, lengths, logprobs, state, exclude_self=False)
    assert accepts(parity_errors(correct, expected), SPEC_REFERENCE_TOLERANCE)[0]
    accepted, reason = accepts(parity_errors(perturbed, expected), SPEC_REFERENCE_TOLERANCE)
    assert not accepted and "max_abs_error" in reason


def test_append_keeps_the_newest_rollouts_in_order():
    state = KernelBaselineState(capacity=5)
    state = append_batch_to_window(state, [0, 1, 2], [1, 2, 3], [0.0, -1.0, -2.0])
    state = append_batch_to_window(state, [3, 4, 5, 6], [4, 5, 6, 7], [-3.0, -4.0, -5.0, -6.0])
    assert state.rewards == (2.0, 3.0, 4.0, 5.0, 6.0)
    assert state.prompt_token_lengths == (3.0, 4.0, 5.0, 6.0, 7.0)
    assert state.prompt_mean_logprobs == (-2.0, -3.0, -4.0, -5.0, -6.0)


def test_bad_inputs_are_rejected():
    state = KernelBaselineState()
    with pytest.raises(ValueError, match="non-finite"):
        gs1_kernel_advantages([1.0, float("nan")], [3, 4], [-1, -1], state)
    with pytest.raises(ValueError, match=">= 1"):
        gs1_kernel_advantages([1.0, 0.0], [0, 4], [-1, -1], state)
    with pytest.raises(ValueError, match="differ in length"):
        gs1_kernel_advantages([1.0, 0.0], [3], [-1, -1], state)
    with pytest.raises(ValueError, match="does not fit"):
        gs1_kernel_advantages(np.zeros(258), np.ones(258), np.zeros(258), state)
    with pytest.raises(ValueError, match="bandwidth"):
        gs1_kernel_advantages([1.0, 0.0], [3, 4], [-1, -1], state, bandwidth=0.0)
