"""The GS1 kernel window and the reference's exclusion of rollout i (issue 17 mutation survivors)."""

from __future__ import annotations

import numpy as np
import pytest

from experiment.rl.advantages import KernelBaselineState, append_batch_to_window
from experiment.rl.gs1_reference import reference_gs1_advantages


@pytest.mark.parametrize("capacity", [0, -1])
def test_a_window_without_room_is_refused(capacity):
    with pytest.raises(ValueError, match="capacity must be >= 1"):
        append_batch_to_window(KernelBaselineState(capacity=capacity), [1.0], [10.0], [-1.0])


def test_a_window_of_one_keeps_the_newest_rollout():
    state = append_batch_to_window(KernelBaselineState(capacity=1), [1.0, 0.0], [10.0, 20.0], [-1.0, -2.0])
    assert state.rewards == (0.0,) and state.prompt_token_lengths == (20.0,) and state.prompt_mean_logprobs == (-2.0,)
    state = append_batch_to_window(KernelBaselineState(capacity=3), [1.0, 0.0], [10.0, 20.0], [-1.0, -2.0])
    state = append_batch_to_window(state, [0.5, 0.25], [30.0, 40.0], [-3.0, -4.0])
    assert state.rewards == (0.0, 0.5, 0.25) and state.capacity == 3


def test_reference_excludes_item_i_also_in_batches_beyond_the_small_int_cache():
    # 300 rollouts with identical prompt features: every kernel weight is exp(0) = 1, so the baseline
    # of rollout i is the plain mean of the OTHER 299 rewards (computed here by hand)
    n = 300
    rewards = [float(j % 7) / 7.0 for j in range(n)]
    advantages, _ = reference_gs1_advantages(rewards, [50.0] * n, [-1.0] * n, [], [], [], window_size=512)
    total = sum(rewards)
    expected = [r - (total - r) / (n - 1) for r in rewards]
    assert advantages == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("shape", ["scalar", "matrix"])
def test_batch_inputs_must_be_one_dimensional(shape):
    make = (lambda v: np.float64(v)) if shape == "scalar" else (lambda v: np.full((2, 2), v))
    with pytest.raises(ValueError):
        append_batch_to_window(KernelBaselineState(capacity=4), make(1.0), make(10.0), make(-1.0))
