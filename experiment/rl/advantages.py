"""Advantage estimators for the GS1-vs-GRPO experiment (implementation).

Two estimators, both plain functions over rewards:

* ``grpo_group_mean_advantages``: reward minus the mean reward of its group, the
  same arithmetic as ``tinker_cookbook.rl.data_processing.compute_advantages``.
* ``gs1_kernel_advantages``: reward minus a Gaussian-kernel-weighted mean of the
  rewards of *other* rollouts (the GS1 kernel baseline of the spec
  ``gs1_kernel_vs_grpo_gsm8k``).

The GS1 definition, with every choice the spec leaves open pinned down here (the
independent reference ``experiment/rl/gs1_reference.py`` implements the same text):

1. Window of rollout i.  The current batch minus i (all other rollouts of this
   step, in batch order), then rollouts of previous steps, newest first, until the
   window holds ``window_size`` (256) rollouts.  "Newest" is the order in which
   rollouts were appended to the state: the state is a list, steps appended in
   order and rollouts of one step in batch order, so the newest previous rollouts
   are the *last* entries of that list.  With a batch of 64 and a full history the
   window is 63 current + 193 previous rollouts.  A batch larger than
   ``window_size + 1`` is rejected (the current batch alone would overflow it).
2. Raw feature of a rollout: (log prompt-token length, sampling-policy mean
   prompt-token logprob), the logprob computed by the sampling client before the
   rollout.
3. Standardization: over the set "window of i plus i itself", each column minus its
   mean, divided by its population standard deviation (ddof=0).  A column whose
   values are all equal (checked exactly, max == min) becomes all zeros.  That set
   is the same for every i of one batch: the whole batch plus the same previous
   rollouts.
4. Weights: w_ij = exp(-||phi_i - phi_j||^2 / (2 h^2)), h = bandwidth (0.5).
5. Baseline: b_i = sum_j w_ij r_j / sum_j w_ij.  When the kernel mass sum_j w_ij is
   below ``min_kernel_mass`` (1e-3) the baseline falls back to the plain mean reward
   of the window.  An empty window (a batch of one rollout and no history) gives
   b_i = 0 and counts as a fallback.
6. Advantage: r_i - b_i.

Diagnostics per rollout: the baseline, the kernel mass, the effective number of
neighbors (sum w)^2 / sum w^2 (0 when every weight is 0), whether the fallback was
used, and the window length.

After a step, ``append_batch_to_window`` returns the state with that step's
rollouts appended (only the newest ``capacity`` rollouts are kept).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

GROUP_MEAN = "group_mean"  # the spec's `arms[].advantage` names of the two estimators
KERNEL_BASELINE = "kernel_cross_prompt_baseline"
DEFAULT_BANDWIDTH = 0.5
DEFAULT_WINDOW_SIZE = 256
DEFAULT_MIN_KERNEL_MASS = 1e-3


def grpo_group_mean_advantages(rewards_per_group: list[list[float]]) -> list[list[float]]:
    """Reward minus its group's mean reward, per group (no std normalisation).

    Same arithmetic as the cookbook's ``compute_advantages``; that function uses
    torch's default dtype (float32 unless changed), this one float64.
    """
    advantages = []
    for group in rewards_per_group:
        rewards = np.asarray(group, dtype=np.float64)
        if rewards.ndim != 1 or rewards.size == 0:
            raise ValueError("each group must be a non-empty list of rewards")
        advantages.append((rewards - rewards.mean()).tolist())
    return advantages


@dataclass(frozen=True)
class KernelBaselineState:
    """Rollouts of previous steps, oldest first: reward and raw feature parts.

    ``prompt_token_lengths`` are raw token counts (the log is taken when the
    feature is built); ``prompt_mean_logprobs`` are the sampling policy's mean
    prompt-token logprobs.  Only the newest ``capacity`` rollouts are kept.
    """

    rewards: tuple[float, ...] = ()
    prompt_token_lengths: tuple[float, ...] = ()
    prompt_mean_logprobs: tuple[float, ...] = ()
    capacity: int = DEFAULT_WINDOW_SIZE

    def __len__(self) -> int:
        return len(self.rewards)


@dataclass
class KernelDiagnostics:
    """Per-rollout diagnostics of one ``gs1_kernel_advantages`` call (float64 arrays)."""

    baseline: np.ndarray
    kernel_mass: np.ndarray
    effective_neighbors: np.ndarray
    fell_back: np.ndarray  # bool
    window_length: np.ndarray  # int
    bandwidth: float = DEFAULT_BANDWIDTH

    def as_dict(self) -> dict:
        return {
            "baseline": self.baseline.tolist(),
            "kernel_mass": self.kernel_mass.tolist(),
            "effective_neighbors": self.effective_neighbors.tolist(),
            "fell_back": self.fell_back.tolist(),
            "window_length": self.window_length.tolist(),
            "bandwidth": self.bandwidth,
        }


def _checked_batch(rewards, prompt_token_lengths, prompt_mean_logprobs):
    rewards = np.asarray(rewards, dtype=np.float64)
    lengths = np.asarray(prompt_token_lengths, dtype=np.float64)
    logprobs = np.asarray(prompt_mean_logprobs, dtype=np.float64)
    if not (rewards.ndim == lengths.ndim == logprobs.ndim == 1):
        raise ValueError("rewards, prompt_token_lengths and prompt_mean_logprobs must be 1-d")
    if not (rewards.size == lengths.size == logprobs.size):
        raise ValueError("rewards, prompt_token_lengths and prompt_mean_logprobs differ in length")
    for name, values in (("rewards", rewards), ("prompt_token_lengths", lengths),
                         ("prompt_mean_logprobs", logprobs)):
        if not np.all(np.isfinite(values)):
            raise ValueError(f"{name} contains a non-finite value")
    if np.any(lengths < 1):
        raise ValueError("prompt_token_lengths must be >= 1")
    return rewards, lengths, logprobs


def append_batch_to_window(
    state: KernelBaselineState,
    rewards,
    prompt_token_lengths,
    prompt_mean_logprobs,
) -> KernelBaselineState:
    """Return ``state`` with one finished step appended (call after the step)."""
    rewards, lengths, logprobs = _checked_batch(rewards, prompt_token_lengths, prompt_mean_logprobs)
    keep = state.capacity
    if keep < 1:
        raise ValueError("KernelBaselineState.capacity must be >= 1")
    return KernelBaselineState(
        rewards=(state.rewards + tuple(rewards.tolist()))[-keep:],
        prompt_token_lengths=(state.prompt_token_lengths + tuple(lengths.tolist()))[-keep:],
        prompt_mean_logprobs=(state.prompt_mean_logprobs + tuple(logprobs.tolist()))[-keep:],
        capacity=keep,
    )


def _standardize_columns(features: np.ndarray) -> np.ndarray:
    """Column-wise (x - mean) / population std; a constant column becomes zeros.

    "Constant" is tested exactly (max == min), not as std == 0: the float mean of
    identical values can differ from them in the last bit, leaving a std of ~1e-17.
    """
    constant = features.max(axis=0) == features.min(axis=0)
    mean = features.mean(axis=0)
    std = features.std(axis=0)  # ddof=0
    safe_std = np.where(constant, 1.0, std)
    return np.where(constant, 0.0, (features - mean) / safe_std)


def gs1_kernel_advantages(
    rewards,
    prompt_token_lengths,
    prompt_mean_logprobs,
    window: KernelBaselineState,
    bandwidth: float = DEFAULT_BANDWIDTH,
    window_size: int = DEFAULT_WINDOW_SIZE,
    min_kernel_mass: float = DEFAULT_MIN_KERNEL_MASS,
    exclude_self: bool = True,
) -> tuple[np.ndarray, KernelDiagnostics]:
    """GS1 kernel-baseline advantages for one batch (see the module docstring).

    ``window`` holds previous steps only; it is not modified.  ``exclude_self``
    exists only so tests can show that a wrong window (one that contains rollout i
    itself: the whole batch, then previous rollouts up to ``window_size``) is caught
    by the correctness preflight; a run never sets it to False.
    """
    rewards, lengths, logprobs = _checked_batch(rewards, prompt_token_lengths, prompt_mean_logprobs)
    if not (bandwidth > 0 and np.isfinite(bandwidth)):
        raise ValueError("bandwidth must be a positive finite number")
    if window_size < 1:
        raise ValueError("window_size must be >= 1")
    if not min_kernel_mass > 0:
        raise ValueError("min_kernel_mass must be positive")
    batch_size = rewards.size
    current_in_window = batch_size - 1 if exclude_self else batch_size
    if current_in_window > window_size:
        raise ValueError(
            f"batch of {batch_size} rollouts does not fit a window of {window_size}"
        )

    # Previous rollouts used: the newest ones (end of the state), as many as fit.
    n_previous = min(len(window), window_size - current_in_window)
    if n_previous > 0:
        prev_rewards = np.asarray(window.rewards[-n_previous:], dtype=np.float64)
        prev_lengths = np.asarray(window.prompt_token_lengths[-n_previous:], dtype=np.float64)
        prev_logprobs = np.asarray(window.prompt_mean_logprobs[-n_previous:], dtype=np.float64)
    else:
        prev_rewards = prev_lengths = prev_logprobs = np.zeros(0)

    # Rows 0..B-1: current batch, rows B..: previous rollouts used.
    all_rewards = np.concatenate([rewards, prev_rewards])
    raw_features = np.column_stack([
        np.log(np.concatenate([lengths, prev_lengths])),
        np.concatenate([logprobs, prev_logprobs]),
    ])
    phi = _standardize_columns(raw_features)

    squared_distance = ((phi[:batch_size, None, :] - phi[None, :, :]) ** 2).sum(axis=2)
    weights = np.exp(-squared_distance / (2.0 * bandwidth**2))  # shape (B, B + n_previous)
    in_window = np.ones_like(weights, dtype=bool)
    if exclude_self:
        in_window[np.arange(batch_size), np.arange(batch_size)] = False
    weights = np.where(in_window, weights, 0.0)

    window_length = in_window.sum(axis=1)
    kernel_mass = weights.sum(axis=1)
    sum_squared_weights = (weights**2).sum(axis=1)
    effective_neighbors = np.divide(
        kernel_mass**2, sum_squared_weights,
        out=np.zeros(batch_size), where=sum_squared_weights > 0,
    )
    weighted_reward_sum = weights @ all_rewards
    window_reward_sum = in_window.astype(np.float64) @ all_rewards
    window_mean = np.divide(window_reward_sum, window_length,
                            out=np.zeros(batch_size), where=window_length > 0)
    fell_back = kernel_mass < min_kernel_mass
    kernel_mean = np.divide(weighted_reward_sum, kernel_mass,
                            out=np.zeros(batch_size), where=~fell_back)
    baseline = np.where(fell_back, window_mean, kernel_mean)
    advantages = rewards - baseline
    diagnostics = KernelDiagnostics(
        baseline=baseline,
        kernel_mass=kernel_mass,
        effective_neighbors=effective_neighbors,
        fell_back=fell_back,
        window_length=window_length,
        bandwidth=float(bandwidth),
    )
    return advantages, diagnostics
