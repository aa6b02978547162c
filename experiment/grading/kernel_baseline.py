"""The pilot's advantages re-derived by the grader (ACT-3), from the estimators' definitions, not the pipeline's code.

The grader imports no code of experiment.rl: a bug in the loop's estimator (experiment/rl/advantages.py) would
otherwise be reproduced by the check that is meant to catch it. This module restates the two definitions the
spec's `arms[].advantage` names (the GS1 definition as the estimator's docstring and the independent reference
experiment/rl/gs1_reference.py pin it):

- `group_mean`: each reward minus the mean reward of its group;
- `kernel_cross_prompt_baseline`: for rollout i, the window is every other rollout of the step, then previous
  steps' rollouts newest first, up to `window_size`; features (log prompt-token length, mean prompt logprob) are
  standardized per column over "window of i plus i" (population std; a column whose values are all equal is 0);
  w_ij = exp(-|phi_i - phi_j|^2 / (2 h^2)); the baseline is sum w r / sum w, or the window's plain mean reward
  when sum w < `min_kernel_mass` (0 for an empty window, a fallback too); the advantage is r_i minus it. Effective
  neighbours: (sum w)^2 / sum w^2, 0 when every weight is 0.

`KernelHistory` carries the previous steps' rollouts from step to step, oldest first, as the loop carries them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

# The definition's pinned values (the spec leaves them open; the estimator and the reference pin the same ones).
BANDWIDTH, WINDOW_SIZE, MIN_KERNEL_MASS = 0.5, 256, 1e-3


def group_mean_advantages(groups: list[list[float]]) -> list[float]:
    """Every rollout's reward minus its group's mean reward, groups in order."""
    if any(not group for group in groups):
        raise ValueError("a group has no rewards")
    return [reward - math.fsum(group) / len(group) for group in groups for reward in group]


@dataclass
class KernelHistory:
    """Previous steps' rollouts, oldest first: (reward, log prompt length, mean prompt logprob) each."""

    rollouts: list[tuple[float, float, float]] = field(default_factory=list)

    def kernel_step(self, rewards: list[float], lengths: list[float], logprobs: list[float],
                    bandwidth: float = BANDWIDTH, window_size: int = WINDOW_SIZE,
                    min_kernel_mass: float = MIN_KERNEL_MASS) -> dict[str, list[float] | int]:
        """One step's advantages, baselines, effective neighbours and fallback count; the step then joins the
        history."""
        if not (len(rewards) == len(lengths) == len(logprobs)) or len(rewards) - 1 > window_size:
            raise ValueError("a step's rewards and features differ in length or overflow the window")
        if any(length < 1 for length in lengths) or not all(map(math.isfinite, [*rewards, *lengths, *logprobs])):
            raise ValueError("prompt lengths below 1 or a value that is not finite")
        step = [(float(r), math.log(n), float(lp)) for r, n, lp in zip(rewards, lengths, logprobs)]
        previous = self.rollouts[len(self.rollouts) - min(len(self.rollouts), window_size - (len(step) - 1)):]
        pool = np.array(step + previous, dtype=np.float64).reshape(-1, 3)  # rows: the step, then previous
        features = pool[:, 1:]
        constant = np.array([features[:, c].max() == features[:, c].min() for c in range(2)])
        spread = np.where(constant, 1.0, features.std(axis=0))
        phi = np.where(constant, 0.0, (features - features.mean(axis=0)) / spread)
        advantages, baselines, neighbours, fallbacks = [], [], [], 0
        for i in range(len(step)):
            others = [j for j in range(len(pool)) if j != i]
            # |phi_i - phi_j|^2 of every j at once (the two squares added as np.sum adds them), exp by math.exp
            distances = ((phi[others] - phi[i]) ** 2).sum(axis=1)
            weights = np.array([math.exp(-distance / (2.0 * bandwidth ** 2)) for distance in distances.tolist()])
            window_rewards = pool[others, 0]
            mass = float(weights.sum())
            if not others:
                baseline, fallbacks = 0.0, fallbacks + 1
            elif mass < min_kernel_mass:
                baseline, fallbacks = float(window_rewards.mean()), fallbacks + 1
            else:
                baseline = float(weights @ window_rewards) / mass
            squares = float((weights ** 2).sum())
            baselines.append(baseline)
            advantages.append(step[i][0] - baseline)
            neighbours.append(mass ** 2 / squares if squares > 0 else 0.0)
        self.rollouts = (self.rollouts + step)[-window_size:]
        return {"advantages": advantages, "baseline_values": baselines, "effective_neighbors": neighbours,
                "kernel_fallbacks": fallbacks}
