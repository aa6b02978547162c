"""Correctness preflight for the GS1 advantage loop (CORR-1..CORR-9, loss path).

On one fixed input (rollouts sampled once from the initial weights, saved with its sha256):

(a) baseline: the new loop with the treatment disabled (GRPO arm through
    ``rl_loop.arm_advantages`` + ``rl_loop.training_datums``) against the stock cookbook
    path (``compute_advantages`` + ``assemble_training_data``): advantages, per-datum
    importance-sampling loss and the full per-token gradient;
(b) reference: the GS1 implementation (``experiment.rl.advantages`` via the loop) against the
    independent float64 reference (``experiment.rl.gs1_reference``), same quantities.

Loss and gradient are computed in float64 from the logprobs the *server* returns for the
exact datums each path would send (``forward(..., "importance_sampling")``); the server's
own ``loss:sum`` is recorded beside them. Acceptance uses only the spec's tolerances.
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import tinker
from tinker_cookbook import renderers
from tinker_cookbook.rl.data_processing import assemble_training_data, compute_advantages

import experiment
import tinker_cookbook
from experiment.data import TaskItem
from experiment.rl import loop as rl_loop
from experiment.rl.advantages import KernelBaselineState, append_batch_to_window, gs1_kernel_advantages
from experiment.rl.gs1_reference import reference_gs1_advantages
from experiment.rl.loop import RLArmSettings
from experiment.rl.restoration import batch_json, canonical_sha256
from experiment.service.capacity import answered
from experiment.stats.correctness import check_tolerances, file_sha256, importance_sampling_loss_and_grad, parity_errors

PACKAGE_DIR = Path(experiment.__file__).parent
IMPLEMENTATION_FILES = ("rl/advantages.py", "rl/loop.py")
REFERENCE_FILE = "rl/gs1_reference.py"


def _cookbook_file(relative: str) -> Path:
    return Path(tinker_cookbook.__file__).parent / relative


def proposed_revisions() -> dict[str, str]:
    """The revisions this run measures against (installed cookbook, file hashes of the
    implementation and of the independent reference). They are reported as measured and checked
    against the spec's pins; while the spec leaves them UNRESOLVED they are the values the
    spec-revision request proposes, never pins the run makes itself."""
    cookbook = importlib.metadata.version("tinker-cookbook")
    stock = file_sha256(_cookbook_file("rl/data_processing.py"))
    implementation = ", ".join(
        f"experiment/{name} sha256:{file_sha256(PACKAGE_DIR / name)}" for name in IMPLEMENTATION_FILES
    )
    return {
        "baseline_revision": f"tinker-cookbook=={cookbook} (rl/data_processing.py sha256:{stock})",
        "reference_revision": f"experiment/{REFERENCE_FILE} sha256:{file_sha256(PACKAGE_DIR / REFERENCE_FILE)}",
        "implementation_revision": implementation,
    }


@dataclass
class PathComparison:
    """Loss and gradient of one path pair, from the same server logprobs."""

    loss_actual: np.ndarray
    loss_reference: np.ndarray
    gradient_actual: np.ndarray
    gradient_reference: np.ndarray
    server_loss_actual: float
    server_loss_reference: float
    advantage_errors: dict[str, float] = field(default_factory=dict)


def _per_datum_loss_and_gradient(datums: Sequence[tinker.Datum], server_logprobs: Sequence[np.ndarray]):
    losses, gradients = [], []
    for datum, logprobs in zip(datums, server_logprobs):
        sampling = datum.loss_fn_inputs["logprobs"].to_numpy()
        advantages = datum.loss_fn_inputs["advantages"].to_numpy()
        loss, gradient = importance_sampling_loss_and_grad(logprobs, sampling, advantages)
        losses.append(loss)
        gradients.append(gradient)
    return np.asarray(losses), np.concatenate(gradients) if gradients else np.zeros(0)


async def _server_forward(training_client: tinker.TrainingClient, datums: Sequence[tinker.Datum]):
    output = await answered(training_client.forward(list(datums), loss_fn="importance_sampling"))
    logprobs = [np.asarray(o["logprobs"].to_numpy(), dtype=np.float64) for o in output.loss_fn_outputs]
    return logprobs, float(output.metrics.get("loss:sum", float("nan")))


async def compare_paths(training_client, actual: Sequence[tinker.Datum],
                        reference: Sequence[tinker.Datum]) -> PathComparison:
    """Both datum lists through the server's forward; loss + per-token gradient in float64."""
    if [r["tokens"] for r in batch_json(actual)] != [r["tokens"] for r in batch_json(reference)]:
        raise ValueError("the two paths built different token sequences from the same rollouts")
    actual_logprobs, actual_server_loss = await _server_forward(training_client, actual)
    reference_logprobs, reference_server_loss = await _server_forward(training_client, reference)
    loss_a, grad_a = _per_datum_loss_and_gradient(actual, actual_logprobs)
    loss_r, grad_r = _per_datum_loss_and_gradient(reference, reference_logprobs)
    return PathComparison(loss_a, loss_r, grad_a, grad_r, actual_server_loss, reference_server_loss)


def stock_grpo_datums(groups) -> list[tinker.Datum]:
    """The stock cookbook path: compute_advantages -> assemble_training_data (mask removed)."""
    data, _ = assemble_training_data(groups, compute_advantages(groups))
    return [
        tinker.Datum(model_input=d.model_input,
                     loss_fn_inputs={k: v for k, v in d.loss_fn_inputs.items() if k != "mask"})
        for d in data
    ]


def reference_gs1_datums(groups, features, window: KernelBaselineState, arm: RLArmSettings):
    advantages, _ = reference_gs1_advantages(
        *rl_loop.kernel_batch(groups, features),
        list(window.rewards), list(window.prompt_token_lengths), list(window.prompt_mean_logprobs),
        bandwidth=arm.kernel_bandwidth, window_size=arm.kernel_window, min_kernel_mass=arm.kernel_min_mass,
    )
    per_group, offset = [], 0
    for g in groups:
        n = len(g.get_total_rewards())
        per_group.append([float(a) for a in advantages[offset : offset + n]])
        offset += n
    return rl_loop.training_datums(groups, per_group), per_group


def offline_activation_checks(bandwidth: float, seed: int = 0) -> dict[str, Any]:
    """Deterministic inputs that must and must not activate the kernel (float64, no server).

    forced activation: heterogeneous phi with rewards tied to phi gives a non-constant b_i that
    differs from the plain leave-one-out window mean (the kernel, not the exclusion of i, moves it);
    forced non-activation: a huge bandwidth gives b_i equal to the window mean (the batch-mean
    REINFORCE baseline).
    """
    rng = np.random.default_rng(seed)
    lengths = rng.integers(10, 200, size=32).astype(float)
    logprobs = rng.normal(-2.0, 0.7, size=32)
    rewards = (np.log(lengths) > np.median(np.log(lengths))).astype(float)
    empty = KernelBaselineState()
    window_means = np.array([(rewards.sum() - r) / (len(rewards) - 1) for r in rewards])
    _, active = gs1_kernel_advantages(rewards, lengths, logprobs, empty, bandwidth=bandwidth)
    _, flat = gs1_kernel_advantages(rewards, lengths, logprobs, empty, bandwidth=1e6)
    kernel_shift = float(np.max(np.abs(active.baseline - window_means)))
    nonactivation_error = float(np.max(np.abs(flat.baseline - window_means)))
    return {
        "forced_activation": {"baseline_std": float(np.std(active.baseline)),
                              "max_abs_shift_from_window_mean": kernel_shift,
                              "passed": float(np.std(active.baseline)) > 1e-3 and kernel_shift > 1e-3},
        "forced_nonactivation": {"max_abs_error_vs_window_mean": nonactivation_error,
                                 "passed": nonactivation_error < 1e-9},
    }


@dataclass
class PreflightOutcome:
    record: dict[str, Any]  # one entry of correctness_preflight.paths
    passed: bool
    reasons: list[str]
    fixed_input: dict[str, Any]  # retained as evidence; its sha256 is in the record


async def run_gs1_loss_path_preflight(
    training_client: tinker.TrainingClient,
    renderer: renderers.Renderer,
    order: Sequence[TaskItem],
    grpo_arm: RLArmSettings,
    gs1_arm: RLArmSettings,
    spec_path: dict[str, Any],
) -> PreflightOutcome:
    """Sample the fixed input once, compare both path pairs, accept only within tolerances.

    Long because: one measurement protocol (sample the fixed input once, compare both path pairs, accept within
    tolerances) whose steps share the sampled input.
    """
    sampler = await answered(training_client.save_weights_and_get_sampling_client())

    # Fixed input: one GRPO batch and two consecutive GS1 batches (window, then current).
    grpo_problems = rl_loop.step_problems(order, grpo_arm, 0)
    gs1_window_problems = rl_loop.step_problems(order, gs1_arm, 0)
    gs1_problems = rl_loop.step_problems(order, gs1_arm, 1)
    grpo_groups = await rl_loop.collect_rollouts(sampler, renderer, grpo_problems, grpo_arm, base_seed=11)
    window_groups = await rl_loop.collect_rollouts(sampler, renderer, gs1_window_problems, gs1_arm, base_seed=22)
    gs1_groups = await rl_loop.collect_rollouts(sampler, renderer, gs1_problems, gs1_arm, base_seed=33)
    window_features = await rl_loop.prompt_features(sampler, renderer, gs1_window_problems, gs1_arm.few_shot)
    gs1_features = await rl_loop.prompt_features(sampler, renderer, gs1_problems, gs1_arm.few_shot)
    window = append_batch_to_window(KernelBaselineState(capacity=gs1_arm.kernel_window),
                                    *rl_loop.kernel_batch(window_groups, window_features))

    # (a) treatment disabled: the new loop's GRPO path vs the stock cookbook path.
    new_advantages, _ = rl_loop.arm_advantages(grpo_arm, grpo_groups, [], None)
    stock_advantages = [a.tolist() for a in compute_advantages(grpo_groups)]
    baseline = await compare_paths(
        training_client, rl_loop.training_datums(grpo_groups, new_advantages), stock_grpo_datums(grpo_groups)
    )
    # (b) treatment enabled: implementation vs the independent float64 reference.
    impl_advantages, _ = rl_loop.arm_advantages(gs1_arm, gs1_groups, gs1_features, window)
    ref_datums, ref_advantages = reference_gs1_datums(gs1_groups, gs1_features, window, gs1_arm)
    treatment = await compare_paths(
        training_client, rl_loop.training_datums(gs1_groups, impl_advantages), ref_datums
    )

    errors = {
        "baseline_loss": parity_errors(baseline.loss_actual, baseline.loss_reference),
        "baseline_gradient": parity_errors(baseline.gradient_actual, baseline.gradient_reference),
        "reference_loss": parity_errors(treatment.loss_actual, treatment.loss_reference),
        "reference_gradient": parity_errors(treatment.gradient_actual, treatment.gradient_reference),
    }
    passed, reasons = check_tolerances(errors, spec_path.get("tolerances", {}))
    offline = offline_activation_checks(gs1_arm.kernel_bandwidth)
    for name, check in offline.items():
        passed &= check["passed"]
        reasons.append(f"{name}: {'passed' if check['passed'] else 'FAILED'} {check}")

    fixed_input = {
        "grpo_batch": _rollout_json(grpo_problems, grpo_groups),
        "gs1_window_batch": _rollout_json(gs1_window_problems, window_groups, window_features),
        "gs1_batch": _rollout_json(gs1_problems, gs1_groups, gs1_features),
        "advantages": {
            "new_loop_grpo": new_advantages, "stock_cookbook_grpo": stock_advantages,
            "gs1_implementation": impl_advantages, "gs1_reference": ref_advantages,
        },
        "kernel": {"bandwidth": gs1_arm.kernel_bandwidth, "window_size": gs1_arm.kernel_window,
                   "min_kernel_mass": gs1_arm.kernel_min_mass},
    }
    record = {
        "id": spec_path.get("id", "gs1_kernel_advantage_loop"),
        "kind": spec_path.get("kind", "loss"),
        "fixed_input": {
            "sha256": canonical_sha256(fixed_input),
            "description": (
                f"rollouts sampled once from the initial weights: one GRPO batch "
                f"({len(grpo_problems)} prompts x {grpo_arm.group_size}) and two GS1 batches "
                f"({len(gs1_problems)} prompts x {gs1_arm.group_size}; the first fills the kernel window)"
            ),
        },
        **proposed_revisions(),
        "precision": "float64 advantages, loss and gradient; server logprobs float32",
        "normalization": "importance_sampling loss summed over tokens, no per-sequence normalization",
        "errors": errors,
        "server_loss_sum": {
            "baseline": {"new_loop": baseline.server_loss_actual, "stock": baseline.server_loss_reference},
            "reference": {"implementation": treatment.server_loss_actual,
                          "reference": treatment.server_loss_reference},
        },
        "advantage_errors": {
            "baseline": parity_errors(_flat(new_advantages), _flat(stock_advantages)),
            "reference": parity_errors(_flat(impl_advantages), _flat(ref_advantages)),
        },
        "offline_checks": offline,
        "lr_scaling": [],
    }
    return PreflightOutcome(record=record, passed=bool(passed), reasons=reasons, fixed_input=fixed_input)


def _flat(per_group: Sequence[Sequence[float]]) -> list[float]:
    return [float(a) for group in per_group for a in group]


def _rollout_json(problems, groups, features=None) -> list[dict[str, Any]]:
    rows = []
    for index, (problem, group) in enumerate(zip(problems, groups)):
        rows.append({
            "item_id": problem.id,
            "rewards": list(group.get_total_rewards()),
            "trajectories": [
                {"ob": t.ob.to_ints(), "ac": list(t.ac.tokens), "logprobs": list(t.ac.logprobs)}
                for traj in group.trajectories_G for t in traj.transitions
            ],
            "features": list(features[index]) if features else None,
        })
    return rows
