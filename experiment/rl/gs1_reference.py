"""Independent float64 reference of the GS1 kernel baseline (plain Python loops).

Pinned reference for the correctness preflight: written separately from
``experiment/rl/advantages.py`` and sharing no code with it (only the ``math`` module
is used).  Its file sha256 is recorded at run time.

Definition (the same text as the implementation's docstring, restated):

* Window of rollout i: every other rollout of the current batch, then rollouts of
  previous steps taken newest first (the history is ordered oldest -> newest, so the
  newest are its last entries), until the window holds ``window_size`` (256)
  rollouts.  Batch of 64 with a full history: 63 current + 193 previous.
* Raw feature: (log prompt-token length, sampling-policy mean prompt-token logprob).
* Standardization over "the window of i plus i": per column, subtract the mean and
  divide by the population standard deviation (divide by the count); a column whose
  values are all equal (checked exactly) becomes 0 everywhere.
* Kernel: w_ij = exp(-||phi_i - phi_j||^2 / (2 * bandwidth^2)).
* Baseline: sum_j w_ij r_j / sum_j w_ij; if sum_j w_ij < min_kernel_mass (1e-3),
  the plain mean reward of the window instead; an empty window gives 0 (a fallback).
* Advantage: r_i - b_i.
* Effective neighbors: (sum w)^2 / sum w^2, or 0 when sum w^2 is 0.
"""

import math


def reference_gs1_advantages(
    rewards,
    prompt_token_lengths,
    prompt_mean_logprobs,
    history_rewards,
    history_prompt_token_lengths,
    history_prompt_mean_logprobs,
    bandwidth=0.5,
    window_size=256,
    min_kernel_mass=1e-3,
):
    """Return (advantages, diagnostics) for one batch, as plain Python floats.

    ``history_*`` are the previous steps' rollouts, oldest first (as appended).
    ``diagnostics`` is a dict of lists keyed ``baseline``, ``kernel_mass``,
    ``effective_neighbors``, ``fell_back``, ``window_length``.

    Long because: the independent reference writes the spec's estimator out step by step and shares no helper with the
    pipeline's, by design.
    """
    batch_size = len(rewards)
    if len(prompt_token_lengths) != batch_size or len(prompt_mean_logprobs) != batch_size:
        raise ValueError("batch lists differ in length")
    history_size = len(history_rewards)
    if (len(history_prompt_token_lengths) != history_size
            or len(history_prompt_mean_logprobs) != history_size):
        raise ValueError("history lists differ in length")
    if batch_size - 1 > window_size:
        raise ValueError("batch does not fit the window")

    advantages = []
    diagnostics = {
        "baseline": [],
        "kernel_mass": [],
        "effective_neighbors": [],
        "fell_back": [],
        "window_length": [],
    }
    for i in range(batch_size):
        # (reward, length, logprob) of every window member, current batch first.
        members = []
        for j in range(batch_size):
            if j != i:
                members.append((float(rewards[j]), float(prompt_token_lengths[j]),
                                float(prompt_mean_logprobs[j])))
        position = history_size - 1
        while len(members) < window_size and position >= 0:
            members.append((float(history_rewards[position]),
                            float(history_prompt_token_lengths[position]),
                            float(history_prompt_mean_logprobs[position])))
            position -= 1

        # Standardize over the window plus i.
        own = (float(rewards[i]), float(prompt_token_lengths[i]), float(prompt_mean_logprobs[i]))
        everyone = members + [own]
        column_x = [math.log(length) for (_, length, _) in everyone]
        column_y = [logprob for (_, _, logprob) in everyone]
        standardized_x = _standardize(column_x)
        standardized_y = _standardize(column_y)
        own_x = standardized_x[-1]
        own_y = standardized_y[-1]

        mass = 0.0
        squared_mass = 0.0
        weighted_rewards = 0.0
        reward_total = 0.0
        for k in range(len(members)):
            dx = own_x - standardized_x[k]
            dy = own_y - standardized_y[k]
            weight = math.exp(-(dx * dx + dy * dy) / (2.0 * bandwidth * bandwidth))
            mass += weight
            squared_mass += weight * weight
            weighted_rewards += weight * members[k][0]
            reward_total += members[k][0]

        if mass < min_kernel_mass:
            fell_back = True
            baseline = reward_total / len(members) if members else 0.0
        else:
            fell_back = False
            baseline = weighted_rewards / mass
        if squared_mass > 0.0:
            effective = mass * mass / squared_mass
        else:
            effective = 0.0

        advantages.append(float(rewards[i]) - baseline)
        diagnostics["baseline"].append(baseline)
        diagnostics["kernel_mass"].append(mass)
        diagnostics["effective_neighbors"].append(effective)
        diagnostics["fell_back"].append(fell_back)
        diagnostics["window_length"].append(len(members))
    return advantages, diagnostics


def _standardize(values):
    if all(value == values[0] for value in values):
        return [0.0 for _ in values]
    count = len(values)
    mean = 0.0
    for value in values:
        mean += value
    mean /= count
    variance = 0.0
    for value in values:
        variance += (value - mean) * (value - mean)
    variance /= count
    deviation = math.sqrt(variance)
    return [(value - mean) / deviation for value in values]
