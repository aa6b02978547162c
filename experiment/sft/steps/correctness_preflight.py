"""SFT step of gate `correctness_preflight`: the forked optimizer path against an independent reference.

The optimizer path's update errors on one fixed input (seed FIXED_INPUT_SEED) against the independent
float64 reference (experiment/stats/optim_reference.py) at every learning rate of the sweep, under the
plan's tolerances (fixed before measuring); the treatment-disabled path against the baseline
optimizer; LR scaling of the update norm from fresh state. The backend's optimizer runs as a command
(experiment.sft.optimizer_probe), never by import. The probe code, the reference, the tolerance
derivation and the fixed input are kept as evidence. A missing check blocks like a failed one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from experiment import PROJECT_ROOT
from experiment.contract.verdict import GateVerdict
from experiment.rl import restoration as r
from experiment.run.context import RunContext
from experiment.sft.optimizer_probe import implementation_updates, probe_job
from experiment.sft.runs import sft_runs
from experiment.stats.correctness import check_tolerances, file_sha256, parity_errors
from experiment.stats.optim_reference import reference_step
from experiment.stats.update_tolerance import FIXED_INPUT_SEED, check_key, fixed_optimizer_input


REFERENCE_FILE = "experiment/stats/optim_reference.py"
IMPLEMENTATION_FILE = "embedded_tinker/muon.py"
TOLERANCE_FILE = "experiment/stats/update_tolerance.py"
PROBE_FILE = "experiment/sft/steps/correctness_preflight.py"  # this step: the probe, kept as evidence


def _implementation_updates(fixed: dict[str, Any], family: str, config: dict[str, Any], learning_rate: float,
                            hyper: dict[str, float], fresh: bool = False) -> list[np.ndarray]:
    """One step of the backend's own optimizer on the fixed input (experiment.sft.optimizer_probe)."""
    return implementation_updates(fixed, [probe_job(family, config, learning_rate, hyper, fresh)])[0]


def _reference_updates(fixed: dict[str, Any], learning_rate: float, hyper: dict[str, float],
                       polar_step: str) -> list[np.ndarray]:
    factors = [(p["A"].astype(np.float64), p["B"].astype(np.float64)) for p in fixed["pairs"]]
    grads = [(p["grad_A"], p["grad_B"]) for p in fixed["pairs"]]
    momenta = [(p["momentum_A"], p["momentum_B"]) for p in fixed["pairs"]]
    _, _, updates = reference_step(factors, grads, momenta, learning_rate, beta1=hyper["beta1"],
                                   grad_clip_norm=hyper["grad_clip_norm"], polar_step=polar_step)
    # the server stores float32 factors: its update is float32(A + dA) - A, so round the same way
    rounded = []
    for (A, B), (dA, dB) in zip(factors, updates):
        rounded += [(A + dA).astype(np.float32).astype(np.float64) - A, (B + dB).astype(np.float32).astype(np.float64) - B]
    return rounded


def update_errors(actual: list[np.ndarray], reference: list[np.ndarray]) -> dict[str, float]:
    """The CORR-3 errors of a whole update (every factor concatenated)."""
    return parity_errors(np.concatenate([x.ravel() for x in actual]), np.concatenate([x.ravel() for x in reference]))


def run(ctx: RunContext) -> GateVerdict:
    details = ctx.plan.gate("correctness_preflight").details
    paths = details.get("paths") or []
    if not paths:  # CORR-7: a custom path with no accepted plan is required/unverified
        ctx.store.update_result(correctness_preflight={"required": True, "status": "unverified", "paths": []})
        return GateVerdict(
            gate="correctness_preflight", status="failed",
            reasons=["required/unverified: the spec has no accepted correctness plan for its forked optimizer path; "
                     "a spec revision is requested (pinned reference, tolerances fixed before anything is measured)"],
            next_diagnostic="add the correctness plan to the spec's plan file (specs/<name>.plan.json), then rerun",
        )
    path = paths[0]
    if path.get("kind") != "optimizer":
        return GateVerdict(gate="correctness_preflight", status="failed",
                           reasons=[f"path {path.get('id')}: kind {path.get('kind')!r} is not an optimizer path"])
    if ctx.service.kind != "embedded":
        return GateVerdict(
            gate="correctness_preflight", status="failed",
            reasons=["required/unverified: the fork's optimizer code is not reachable from this run; run the probe "
                     "(experiment/sft/steps/correctness_preflight.py) in the fork's checkout and record its commit"],
            next_diagnostic="run the optimizer update probe against the fork's code and attach its record",
        )
    runs = sft_runs(ctx)
    treatment = next(run for run in runs if run.arm == ctx.plan.role_to_arm["treatment"]["arm"])
    baseline = next(run for run in runs if run.arm == ctx.plan.role_to_arm["baseline"]["arm"])
    rank = int(ctx.spec.lora_rank)
    hyper = {"beta1": float(treatment.config.get("beta1", 0.9)),
             "grad_clip_norm": float(treatment.config.get("grad_clip_norm", 0.0))}
    # every learning rate the sweep trains (both arms' grids), each checked under its own tolerance
    learning_rates = sorted({run.learning_rate for run in runs})
    tolerances = path.get("tolerances", {})
    fixed = fixed_optimizer_input(rank)
    revisions = {"reference_revision": f"sha256:{file_sha256(PROJECT_ROOT / REFERENCE_FILE)} ({REFERENCE_FILE})",
                 "implementation_revision": f"sha256:{file_sha256(PROJECT_ROOT / IMPLEMENTATION_FILE)} ({IMPLEMENTATION_FILE})"}
    ctx.store.append_event("correctness_revisions_pinned", **revisions)  # before the first probe

    errors, informative = {}, {}
    for lr in learning_rates:
        enabled, disabled, stock = implementation_updates(fixed, [  # one backend command for the three steps
            probe_job(treatment.family, {}, lr, hyper),
            probe_job(treatment.family, {"polar_step": "polar_express"}, lr, hyper),
            probe_job(baseline.family, {}, lr, hyper)])
        errors[check_key("reference_update", lr)] = update_errors(
            enabled, _reference_updates(fixed, lr, hyper, "polar_switch"))
        errors[check_key("baseline_update", lr)] = update_errors(disabled, stock)
        # not gating (no tolerance in the plan names it): the stock path against the reference
        informative[check_key("baseline_vs_reference_update", lr)] = update_errors(
            stock, _reference_updates(fixed, lr, hyper, "polar_express"))
    missing = [key for key in errors if key not in tolerances]  # a missing check blocks like a failed one
    scaling_plan = path.get("lr_scaling") or {}
    scaling = []
    for lr in scaling_plan.get("learning_rates", []):
        updates = _implementation_updates(fixed, treatment.family, {}, lr, hyper, fresh=True)
        scaling.append({"learning_rate": lr, "update_norm": float(np.sqrt(sum(np.sum(u**2) for u in updates))),
                        "update_norm_per_factor": [float(np.linalg.norm(u)) for u in updates]})
    changes = [abs(s["update_norm"] / s["learning_rate"] / (scaling[0]["update_norm"] / scaling[0]["learning_rate"]) - 1)
               for s in scaling]
    for entry, change in zip(scaling, changes):
        entry["relative_change"] = change

    record_path = {
        "id": path["id"],
        "fixed_input": {"sha256": r.canonical_sha256(_fixed_input_json(fixed)),
                        "description": f"seed {FIXED_INPUT_SEED}: 3 LoRA pairs of rank {rank} (128->128, 128->512, "
                                       f"512->128), B and momentum nonzero (step 3 state), one gradient per factor; "
                                       f"update checks at every learning rate of the sweep "
                                       f"{[float(lr) for lr in learning_rates]}"},
        # the plan's revision texts verbatim (they delegate the pinning to the run); the pins themselves:
        "baseline_revision": path.get("baseline_revision", ""),
        "reference_revision": path.get("reference_revision", ""),
        "reference_file_sha256": file_sha256(PROJECT_ROOT / REFERENCE_FILE),
        "implementation_revision": revisions["implementation_revision"],
        "baseline_implementation": f"dimuon-lite (polar_step polar_express) of {revisions['implementation_revision']}",
        "precision": path.get("precision", ""),
        "normalization": "update = factor after minus before one optim_step (float32 factors); reference float64, "
                         "its update rounded through float32 factors the same way",
        "errors": errors,
        "update_learning_rates": learning_rates,
        "tolerance_source": f"{path.get('error_analysis', {}).get('derivation', 'the plan file')} "
                            f"(sha256:{file_sha256(PROJECT_ROOT / TOLERANCE_FILE)} {TOLERANCE_FILE}), fixed in the plan file "
                            "before any measurement",
        "informative_errors": informative,
        "lr_scaling": scaling,
    }
    ctx.store.add_evidence("correctness-fixed-input.json", "metrics", json.dumps(_fixed_input_json(fixed)))
    ctx.store.add_evidence("correctness-preflight.json", "metrics", json.dumps(record_path, indent=2, sort_keys=True))
    for relative in (REFERENCE_FILE, PROBE_FILE, TOLERANCE_FILE):
        ctx.store.add_evidence(f"script-{Path(relative).name}", "script", (PROJECT_ROOT / relative).read_bytes(),
                               source=relative)
    ctx.store.update_result(correctness_preflight={"required": True, "paths": [record_path]})

    passed, reasons = check_tolerances(errors, {key: tolerances[key] for key in errors if key in tolerances})
    if missing:
        passed = False
        reasons.append(f"no tolerance fixed in the plan for {missing}: a missing check blocks like a failed one")
    max_change = float(scaling_plan.get("max_relative_change", 0.0))
    scaling_ok = bool(scaling) and max(changes) <= max_change
    passed &= scaling_ok
    reasons.append(f"lr_scaling: max relative change of update_norm/LR {max(changes, default=float('nan')):.3g} "
                   f"(max {max_change}) over LRs {[s['learning_rate'] for s in scaling]} from fresh state -> "
                   f"{'passed' if scaling_ok else 'FAILED'}")
    for key, e in informative.items():
        reasons.append(f"informative {key}: max_abs_error {e['max_abs_error']:.3g} (reference max "
                       f"{e['reference_max_abs']:.3g}), cosine {e['cosine_similarity']:.10f}")
    return GateVerdict(
        gate="correctness_preflight", status="passed" if passed else "failed", reasons=reasons,
        measured={key: {"max_abs_error": value["max_abs_error"], "atol": tolerances.get(key, {}).get("atol"),
                        "cosine_similarity": value["cosine_similarity"],
                        "min_cosine": tolerances.get(key, {}).get("min_cosine")}
                  for key, value in errors.items()},
        next_diagnostic=None if passed else "compare the per-factor updates in evidence correctness-preflight.json; "
                                            "check the polar step and the preconditioner against docs/optimizers.md",
    )


def _fixed_input_json(fixed: dict[str, Any]) -> dict[str, Any]:
    return {"seed": fixed["seed"], "steps_taken": fixed["steps_taken"],
            "pairs": [{k: v.tolist() for k, v in pair.items()} for pair in fixed["pairs"]]}
