"""Activation gate: the spec's checks measured on a short pilot, ranges never moved.

Pure functions only: the pilot itself (training steps on throwaway clients) runs in the
activation steps (``experiment.rl.steps.activation_gate``, ``experiment.selfgen.steps.activation_gate``);
this module turns its measured StepRecords into the spec's metrics and compares them against the spec's fixed ranges.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol, Sequence

import numpy as np


class StepRecord(Protocol):
    """What the checks read of a measured training step (experiment.rl.loop.StepRecord has it): this
    module sits below the RL loop, which imports it, so it names the fields instead of the class."""

    item_ids: list[str]
    rewards: list[float]
    advantages: list[float]
    executed_group_size: float
    baseline_values: list[float]
    effective_neighbors: list[float]


@dataclass(frozen=True)
class CheckOutcome:
    metric: str
    value: float | None
    passed: bool
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "value": self.value, "passed": self.passed, "reason": self.reason}


def fraction_nonzero(values: Sequence[float], tol: float = 1e-6) -> float:
    """The share of values farther than `tol` from zero (0.0 for none)."""
    return sum(1 for v in values if abs(v) > tol) / len(values) if values else 0.0


def as_one_of_string(value: float) -> str:
    """`one_of` values are strings in the specs (e.g. ["1"]): integral values print as ints."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


# The metrics each activation pilot measures (the keys of gs1_activation_values / selfgen_activation_values):
# a spec check on any other metric could only fail as "not measured" after the pilot, so intake refuses it.
GS1_ACTIVATION_METRICS = ("executed_group_size_treatment", "executed_group_size_baseline", "pilot_mean_reward",
                          "kernel_effective_neighbors_p10", "frac_nonzero_advantage_treatment", "baseline_reward_corr")
PILOT_STEPS = 2  # treatment steps of an activation pilot (then one baseline step); the grader checks logs by it
HELDOUT_SAMPLES = 8  # extra samples per step-0 prompt of the first GS1 treatment pilot (never trained on)

SELFGEN_ACTIVATION_METRICS = ("treatment_fraction_batches_from_generated_set",
                              "baseline_fraction_batches_from_gsm8k_train",
                              "selfgen_frac_groups_nonzero_reward_variance_pilot", "selfgen_mean_train_reward_pilot",
                              "generated_eval_exact_overlaps")


def check_range(check: dict[str, Any], value: float | None) -> CheckOutcome:
    """Compare one measured value with the spec's fixed range (min, max, one_of)."""
    metric = check["metric"]
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return CheckOutcome(metric, value, False, f"{metric}: not measured")
    problems = []
    if "min" in check and check["min"] is not None and value < float(check["min"]):
        problems.append(f"{value:.4g} < min {check['min']}")
    if "max" in check and check["max"] is not None and value > float(check["max"]):
        problems.append(f"{value:.4g} > max {check['max']}")
    if "one_of" in check and check["one_of"] is not None:
        allowed = [str(v) for v in check["one_of"]]
        if as_one_of_string(value) not in allowed:
            problems.append(f"{as_one_of_string(value)} not in one_of {allowed}")
    if problems:
        return CheckOutcome(metric, value, False, f"{metric}: " + "; ".join(problems))
    return CheckOutcome(metric, value, True, f"{metric}: {value:.4g} within range")


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson correlation; None when either side is constant (undefined, not 0)."""
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if len(a) < 2 or a.std() == 0 or b.std() == 0:
        return None
    return float(np.corrcoef(a, b)[0, 1])


def gs1_activation_values(
    treatment_steps: Sequence[StepRecord],
    baseline_steps: Sequence[StepRecord],
    heldout_mean_reward: dict[str, float],
    corr_step: StepRecord,
) -> dict[str, float | None]:
    """The six GS1 checks (spec gs1_kernel_vs_grpo_gsm8k `activation_gate.checks`).

    heldout_mean_reward maps item id -> mean reward of 8 extra samples of that prompt from
    the same weights the step sampled from (never used for training); corr_step is the
    treatment step whose b_i are correlated with it.
    """
    rewards = [r for s in treatment_steps for r in s.rewards]
    advantages = [a for s in treatment_steps for a in s.advantages]
    neighbors = [n for s in treatment_steps for n in s.effective_neighbors]
    pairs = [
        (b, heldout_mean_reward[item])
        for item, b in zip(corr_step.item_ids, corr_step.baseline_values)
        if item in heldout_mean_reward
    ]
    return {
        "executed_group_size_treatment": _single_value(
            [s.executed_group_size for s in treatment_steps]
        ),
        "executed_group_size_baseline": _single_value(
            [s.executed_group_size for s in baseline_steps]
        ),
        "pilot_mean_reward": float(np.mean(rewards)) if rewards else None,
        "kernel_effective_neighbors_p10": (
            float(np.percentile(neighbors, 10)) if neighbors else None
        ),
        "frac_nonzero_advantage_treatment": fraction_nonzero(advantages) if advantages else None,
        "baseline_reward_corr": pearson([p[0] for p in pairs], [p[1] for p in pairs]),
    }


def _single_value(values: Sequence[float]) -> float | None:
    """Executed group size must be one number across logged batches; a mix is reported as nan."""
    if not values:
        return None
    return float(values[0]) if all(v == values[0] for v in values) else float("nan")


def evaluate_checks(checks: Sequence[dict[str, Any]], values: dict[str, float | None]) -> list[CheckOutcome]:
    """Every spec check against its measured value; a check with no value fails as missing."""
    return [check_range(check, values.get(check["metric"])) for check in checks]


def json_safe(values: dict[str, float | None]) -> dict[str, float | None]:
    """RESULT is strict JSON: a non-finite measurement (e.g. a mixed group size) is reported as null."""
    return {k: (v if v is None or math.isfinite(v) else None) for k, v in values.items()}


def selfgen_activation_values(
    treatment_steps: Sequence[StepRecord],
    baseline_steps: Sequence[StepRecord],
    generated_ids: set[str],
    train_ids: set[str],
    eval_overlaps: int,
) -> dict[str, float | None]:
    """The self-generated spec's checks, from the batches the pilot actually consumed."""
    treatment_ids = [i for s in treatment_steps for i in s.item_ids]
    baseline_ids = [i for s in baseline_steps for i in s.item_ids]
    groups = []
    for step in treatment_steps:
        size = len(step.rewards) // len(step.item_ids)
        groups += [step.rewards[k * size:(k + 1) * size] for k in range(len(step.item_ids))]
    rewards = [r for s in treatment_steps for r in s.rewards]
    return {
        "treatment_fraction_batches_from_generated_set": (
            sum(i in generated_ids for i in treatment_ids) / len(treatment_ids) if treatment_ids else None),
        "baseline_fraction_batches_from_gsm8k_train": (
            sum(i in train_ids for i in baseline_ids) / len(baseline_ids) if baseline_ids else None),
        "selfgen_frac_groups_nonzero_reward_variance_pilot": (
            sum(1 for g in groups if max(g) != min(g)) / len(groups) if groups else None),
        "selfgen_mean_train_reward_pilot": float(np.mean(rewards)) if rewards else None,
        "generated_eval_exact_overlaps": float(eval_overlaps),
    }
