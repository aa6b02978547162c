"""SFT step of gate `correctness_preflight`: the forked optimizer path, measured through the service.

On the service the arms run on (the fork, or any backend URL), with the stock SDK only
(experiment/sft/service_probe.py): one fixed batch (the first FIXED_BATCH_SIZE training examples),
a start state saved after WARMUP_STEPS, the batch's gradient there recovered through the service's
AdamW, and per learning rate of the sweep one forward_backward + optim_step of the treatment
(TriMuon), the treatment disabled (polar_step polar_express) and the baseline family (DiMuon-lite),
each from the start state with a fresh optimizer, the weights read back through the service's
export routes. Checks:

- reference_update@lr: TriMuon's update against the independent float64 reference
  (experiment/stats/optim_reference.py) on the same start state and gradient;
- baseline_update@lr: treatment-disabled TriMuon against the service's DiMuon-lite. Where both sides
  are the same code (the embedded backend runs both from embedded_tinker/muon.py; or the two updates
  are bitwise identical) this is no parity check: it is reported so, with what actually ran as its
  baseline, and stays unverified;
- lr_scaling: update_norm / LR of TriMuon's updates (fresh state) across the learning rates.

The float64 references need only the read-back input: they are computed in a worker thread from the
moment it is read (references_in_background) while the service runs the update jobs, and compared once
both are in.

Tolerances: the plan's (fixed before measuring) and the same a-priori analysis evaluated on the
read-back input (experiment/stats/update_tolerance.input_tolerances), computed after the input is read
and before any update is; a check passes only under both. A service that cannot show its weights
leaves the path required/unverified with the way to expose them.
"""

from __future__ import annotations

import hashlib
import io
import json
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import numpy as np

from experiment import PROJECT_ROOT
from experiment.contract.support import TRIMUON_DISABLED, sft_correctness_pair
from experiment.contract.verdict import GateVerdict
from experiment.rl import restoration as r
from experiment.rl.recipe import renderer_for
from experiment.run.context import RunContext
from experiment.sft.loop import FIXED_BATCH_SIZE, sft_settings, training_examples
from experiment.sft.runs import open_sft_session, served_model_and_rank, sft_runs, to_datums
from experiment.contract.readback import HOW_TO_EXPOSE
from experiment.sft.service_probe import (
    WARMUP_STEPS, ServiceObservation, UpdateJob, WeightsNotExposed, factors, observe_updates,
)
from experiment.stats.correctness import accepts, file_sha256, parity_errors
from experiment.stats.optim_reference import reference_step
from experiment.stats.update_tolerance import check_key, input_tolerances

REFERENCE_FILE = "experiment/stats/optim_reference.py"
TOLERANCE_FILE = "experiment/stats/update_tolerance.py"
PROBE_FILES = ("experiment/sft/steps/correctness_preflight.py", "experiment/sft/service_probe.py")
EMBEDDED_IMPLEMENTATION = "embedded_tinker/muon.py"
FIXED_BATCH_EVIDENCE = "correctness-fixed-batch.json"
START_STATE_EVIDENCE = "correctness-start-state.npz"  # read by the grader (experiment/grading/correctness.py)
DISABLED = TRIMUON_DISABLED  # TriMuon with its polar step switched back to DiMuon-lite's (intake checks the pair)


def run(ctx: RunContext) -> GateVerdict:
    """Long because: a gate step reads top to bottom as the correctness protocol (fixed input, both paths, tolerances,
    read-back, LR scaling); its parts share the probe's clients.
    """
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

    treatment_arm, baseline_arm = sft_correctness_pair(ctx.plan)  # the one path measured, whatever other arms run
    runs = [run for run in sft_runs(ctx) if run.arm in (treatment_arm, baseline_arm)]
    treatment = next(run for run in runs if run.arm == treatment_arm)
    baseline = next(run for run in runs if run.arm == baseline_arm)
    model, rank = served_model_and_rank(ctx)
    hyper = {"beta1": float(treatment.config.get("beta1", 0.9)),
             "grad_clip_norm": float(treatment.config.get("grad_clip_norm", 0.0))}
    # every LR the sweep trains the two arms at, and every LR the path's plan names (its tolerances are keyed by them)
    update_lrs = sorted({run.learning_rate for run in runs} | {float(lr) for lr in path.get("update_learning_rates") or []})
    scaling_plan = path.get("lr_scaling") or {}
    scaling_lrs = [float(lr) for lr in scaling_plan.get("learning_rates", [])]
    jobs = _jobs(treatment.family, baseline.family, treatment.config, baseline.config, hyper,
                 sorted(set(update_lrs) | set(scaling_lrs)))
    pins = {"reference_file_sha256": file_sha256(PROJECT_ROOT / REFERENCE_FILE),
            "tolerance_file_sha256": file_sha256(PROJECT_ROOT / TOLERANCE_FILE)}
    ctx.store.append_event("correctness_revisions_pinned", **pins)  # before the first probe

    fixed_tolerances: dict[str, Any] = {}
    references: list[Future] = []

    def fix_tolerances(observation: ServiceObservation) -> None:  # after the input is read, before any update
        fixed_tolerances.update(input_tolerances(_pairs(observation), update_lrs, hyper["beta1"],
                                                 observation.gradient_errors))
        ctx.store.append_event("correctness_input_tolerances_fixed", checks=sorted(fixed_tolerances))
        # the float64 references need only this input: computed while the service runs the jobs
        references.append(references_in_background(observation, update_lrs, hyper))

    settings = sft_settings(ctx.spec)
    examples = training_examples(ctx.spec)[:FIXED_BATCH_SIZE]

    def fixed_batch(client: Any) -> list[Any]:
        return to_datums(examples, renderer_for(client, settings.renderer_name), settings)

    with open_sft_session(ctx, "correctness") as session:
        try:
            observation = observe_updates(session, model, rank, treatment.seed, _setup_job(treatment), fixed_batch,
                                          f"correctness-{ctx.store.run_id}", on_input=fix_tolerances, jobs=jobs)
        except WeightsNotExposed as err:
            return _not_exposed(ctx, str(err))

    errors, informative = _errors_by_check(observation, update_lrs, _computed(references[0]))
    same_code = _same_code(ctx, errors)
    scaling = [_scaling_entry(lr, observation.updates[_label("treatment", lr)]) for lr in scaling_lrs]
    changes = [abs(s["update_norm"] / s["learning_rate"] / (scaling[0]["update_norm"] / scaling[0]["learning_rate"]) - 1)
               for s in scaling]
    for entry, change in zip(scaling, changes):
        entry["relative_change"] = change
    batch_json = json.dumps(r.batch_json(observation.batch), sort_keys=True)
    input_npz = _input_npz(observation)
    record_path = {
        "id": path["id"],
        "fixed_input": {
            "sha256": hashlib.sha256(batch_json.encode()).hexdigest(),  # of the evidence file's bytes
            "description": f"the first {FIXED_BATCH_SIZE} training examples in seed-0 order ({FIXED_BATCH_EVIDENCE}); "
                           f"start state after {WARMUP_STEPS} {treatment.family} steps on it, read back through the "
                           f"service ({START_STATE_EVIDENCE}, sha256 {hashlib.sha256(input_npz).hexdigest()}), "
                           f"with the batch's gradient there recovered through the service's AdamW",
            "start_checkpoint": observation.start_path,
        },
        "measured_through": {"service": ctx.service.describe(),
                             "api": "stock tinker SDK: forward_backward, optim_step, save_weights_external + "
                                    "external_weights_urls (weights read back)",
                             "families_reported": dict(observation.families_reported)},
        # the pins the record is held to; the plan's texts say what they should be (CORR-6)
        "reference_revision": path.get("reference_revision", ""),
        "reference_file_sha256": pins["reference_file_sha256"],
        **_baseline_fields(ctx, path, baseline, errors, same_code),
        "implementation_revision": _implementation_revision(ctx),
        "precision": path.get("precision", ""),
        "normalization": "update = factor after minus before one optim_step, both read back from the service "
                         "(float32); reference float64 from the same start state and gradient, rounded through float32 "
                         "factors the same way",
        "errors": errors,
        "update_learning_rates": update_lrs,
        "input_tolerances": fixed_tolerances,
        "tolerance_source": f"the plan's tolerances ({path.get('error_analysis', {}).get('derivation', 'the plan file')}, "
                            f"fixed before measuring) and the same analysis on the read-back input "
                            f"(sha256:{pins['tolerance_file_sha256']} {TOLERANCE_FILE}, input_tolerances), computed "
                            "before the first update was read; a check passes under both",
        "gradient_recovery": _gradient_recovery(observation),
        "informative_errors": informative,
        "lr_scaling": scaling,
    }
    wrong_family = [f"{job.label}: service reports {observation.families_reported.get(job.label)!r}" for job in jobs
                    if observation.families_reported.get(job.label) not in (None, job.family)]
    ctx.store.add_evidence(FIXED_BATCH_EVIDENCE, "metrics", batch_json)
    ctx.store.add_evidence(START_STATE_EVIDENCE, "metrics", input_npz)
    ctx.store.add_evidence("correctness-preflight.json", "metrics", json.dumps(record_path, indent=2, sort_keys=True))
    for relative in (REFERENCE_FILE, TOLERANCE_FILE, *PROBE_FILES):
        ctx.store.add_evidence(f"script-{Path(relative).name}", "script", (PROJECT_ROOT / relative).read_bytes(),
                               source=relative)
    ctx.store.update_result(correctness_preflight={"required": True, "paths": [record_path]})
    ctx.state.correctness_note = _parity_note(same_code)
    return _verdict(path, errors, fixed_tolerances, same_code, scaling, changes, float(scaling_plan.get(
        "max_relative_change", 0.0)), informative, wrong_family)


# ---------------------------------------------------------------- jobs and measurements

def _label(kind: str, lr: float) -> str:
    return f"{kind}@lr={lr:g}"


def _setup_job(treatment: Any) -> UpdateJob:
    return UpdateJob("setup", treatment.family, dict(treatment.config), treatment.learning_rate, {})


def _jobs(treatment_family: str, baseline_family: str, treatment_config: dict[str, Any],
          baseline_config: dict[str, Any], hyper: dict[str, float], lrs: list[float]) -> list[UpdateJob]:
    jobs = []
    for lr in lrs:
        jobs += [UpdateJob(_label("treatment", lr), treatment_family, dict(treatment_config), lr, hyper),
                 UpdateJob(_label("treatment_disabled", lr), treatment_family, {**treatment_config, **DISABLED}, lr, hyper),
                 UpdateJob(_label("baseline", lr), baseline_family, dict(baseline_config), lr, hyper)]
    return jobs


REFERENCE_POLAR_STEPS = ("polar_switch", "polar_express")  # TriMuon's (the checked update), DiMuon-lite's (informative)


def references_in_background(observation: ServiceObservation, lrs: list[float], hyper: dict[str, float]) -> Future:
    """The float64 reference update (_reference) of every learning rate and polar step, {(lr, polar_step):
    factors}, computed in a worker thread from the read-back input alone while the service runs the update
    jobs; the Future holds it (or the error, raised where it is read)."""
    future: Future = Future()

    def compute() -> None:
        try:
            future.set_result({(lr, polar_step): _reference(observation, lr, hyper, polar_step)
                               for lr in lrs for polar_step in REFERENCE_POLAR_STEPS})
        except BaseException as err:  # noqa: BLE001 - raised again where the references are compared
            future.set_exception(err)

    threading.Thread(target=compute, name="correctness-reference", daemon=True).start()
    return future


def _computed(references: Future) -> dict[tuple[float, str], list[np.ndarray]]:
    """The float64 references once computed (a local Future of client-side work: no wait on the service)."""
    return references.result()


def _errors_by_check(observation: ServiceObservation, lrs: list[float],
                     references: dict[tuple[float, str], list[np.ndarray]]
                     ) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    """(the gated checks' errors, the informative stock-vs-reference errors), keyed `<check>@lr=<lr>`."""
    errors, informative = {}, {}
    for lr in lrs:
        errors[check_key("reference_update", lr)] = update_errors(
            observation.updates[_label("treatment", lr)], references[(lr, "polar_switch")])
        errors[check_key("baseline_update", lr)] = update_errors(
            observation.updates[_label("treatment_disabled", lr)], observation.updates[_label("baseline", lr)])
        informative[check_key("baseline_vs_reference_update", lr)] = update_errors(
            observation.updates[_label("baseline", lr)], references[(lr, "polar_express")])
    return errors, informative


def _baseline_fields(ctx: RunContext, path: dict[str, Any], baseline: Any, errors: dict[str, Any],
                     same_code: dict[str, Any]) -> dict[str, Any]:
    """The baseline revision as it ran and, per baseline check, its two sides: a same-code check is said
    to be one, with what ran as its baseline, never the plan's revision (it stays unverified, CORR-3)."""
    target = ctx.service.describe()
    ran = f"{baseline.family} ({baseline.arm}) on {target['kind']} service {target.get('base_url')}: the same service " \
          "as the treatment"
    revision = (f"not the planned baseline revision: {ran}, the same code as the treatment-disabled side"
                if same_code["same"] else path.get("baseline_revision", ""))
    sides = {key: {"same_code": same_code["same"], "reason": same_code["reason"],
                   "treatment_side": "the treatment's family with polar_step polar_express on the same service",
                   "baseline_side": ran, "status": "unverified" if same_code["same"] else "measured"}
             for key in errors if key.startswith("baseline_update")}
    return {"baseline_revision": revision, "parity_sides": sides}


def _gradient_recovery(observation: ServiceObservation) -> dict[str, Any]:
    recovered = float(np.sqrt(sum(np.sum(g**2) for pair in observation.gradients for g in pair)))
    return {"reported_grad_norm": observation.gradient_norm_reported, "recovered_grad_norm": recovered,
            "max_error_bound_frobenius": max(max(e) for e in observation.gradient_errors)}


def _pairs(observation: ServiceObservation) -> list[dict[str, np.ndarray]]:
    """The read-back input as the tolerance analysis takes it (momentum zero: a fresh optimizer)."""
    return [{"A": p.A, "B": p.B, "momentum_A": np.zeros_like(p.A), "momentum_B": np.zeros_like(p.B),
             "grad_A": gA, "grad_B": gB} for p, (gA, gB) in zip(observation.start, observation.gradients)]


def _reference(observation: ServiceObservation, lr: float, hyper: dict[str, float], polar_step: str) -> list[np.ndarray]:
    start = [(p.A, p.B) for p in observation.start]
    momenta = [(np.zeros_like(A, dtype=np.float64), np.zeros_like(B, dtype=np.float64)) for A, B in start]
    return reference_updates(start, observation.gradients, momenta, lr, hyper, polar_step)


def reference_updates(start: list[tuple[np.ndarray, np.ndarray]], gradients: list[tuple[np.ndarray, np.ndarray]],
                      momenta: list[tuple[np.ndarray, np.ndarray]], lr: float, hyper: dict[str, float],
                      polar_step: str) -> list[np.ndarray]:
    """The float64 reference update of every factor (A0, B0, ...), rounded through float32 factors as the
    service stores them: its update is float32(A + dA) - A."""
    start64 = [(np.asarray(A, np.float64), np.asarray(B, np.float64)) for A, B in start]
    _, _, updates = reference_step(start64, gradients, momenta, lr, beta1=hyper["beta1"],
                                   grad_clip_norm=hyper["grad_clip_norm"], polar_step=polar_step)
    rounded = []
    for (A, B), (dA, dB) in zip(start64, updates):
        rounded += [(A + dA).astype(np.float32).astype(np.float64) - A, (B + dB).astype(np.float32).astype(np.float64) - B]
    return rounded


def update_errors(actual: list[np.ndarray], reference: list[np.ndarray]) -> dict[str, float]:
    """The CORR-3 errors of a whole update (every factor concatenated)."""
    return parity_errors(np.concatenate([x.ravel() for x in actual]), np.concatenate([x.ravel() for x in reference]))


def _scaling_entry(lr: float, update: list[np.ndarray]) -> dict[str, Any]:
    return {"learning_rate": lr, "update_norm": float(np.sqrt(sum(np.sum(u**2) for u in update))),
            "update_norm_per_factor": [float(np.linalg.norm(u)) for u in update]}


def _same_code(ctx: RunContext, errors: dict[str, dict[str, float]]) -> dict[str, Any]:
    """Whether the baseline check's two sides are the same code, and how that is known."""
    if ctx.service.kind == "embedded":
        return {"same": True, "reason": f"the embedded backend runs both from {EMBEDDED_IMPLEMENTATION}: TriMuon with "
                                        "polar_step polar_express calls DiMuon-lite's own polar step, so the check "
                                        "compares one code path with itself"}
    identical = [key for key, e in errors.items() if key.startswith("baseline_update") and e["max_abs_error"] == 0.0]
    if identical:
        return {"same": True, "reason": f"bitwise-identical updates ({', '.join(identical)}): both sides ran the same "
                                        "computation on the same service"}
    return {"same": False, "reason": "the two sides' updates differ, so they are distinct computations"}


def _uninformative(tolerance: dict[str, float]) -> bool:
    """A bound that admits an orthogonal or opposite update (min_cosine <= 0): it says nothing on this input."""
    return tolerance.get("min_cosine", 1.0) <= 0.0


def _parity_note(same_code: dict[str, Any]) -> str | None:
    return f"correctness: the baseline parity check is unverified ({same_code['reason']})" if same_code["same"] else None


def _implementation_revision(ctx: RunContext) -> str:
    if ctx.service.kind == "embedded":
        return f"sha256:{file_sha256(PROJECT_ROOT / EMBEDDED_IMPLEMENTATION)} ({EMBEDDED_IMPLEMENTATION})"
    return f"the service at {ctx.service.describe().get('base_url')} (its code is not visible through the API)"


def _input_npz(observation: ServiceObservation) -> bytes:
    """The read-back input, exact and compact, without pickled objects: per factor k (A0, B0, A1, ...)
    `start_<k>` (float32 as stored) and `gradient_<k>` (recovered, float64), and `gradient_error_bounds`
    (what the grader recomputes the bound from; experiment/grading/correctness.py)."""
    arrays = {f"start_{k}": x.astype(np.float32) for k, x in enumerate(factors(observation.start))}
    arrays.update({f"gradient_{k}": g for k, g in enumerate(g for pair in observation.gradients for g in pair)})
    buffer = io.BytesIO()
    np.savez(buffer, gradient_error_bounds=np.array([e for pair in observation.gradient_errors for e in pair]),
             **arrays)
    return buffer.getvalue()


# ---------------------------------------------------------------- verdicts

def _not_exposed(ctx: RunContext, why: str) -> GateVerdict:
    reason = (f"required/unverified: the service cannot show a client its adapter weights, so the forked optimizer's "
              f"update cannot be measured: {why}")
    ctx.store.update_result(correctness_preflight={"required": True, "status": "unverified", "paths": [],
                                                   "unverified_reason": reason})
    return GateVerdict(gate="correctness_preflight", status="failed", reasons=[reason],
                       next_diagnostic=HOW_TO_EXPOSE)


def _verdict(path: dict[str, Any], errors: dict[str, Any], input_tol: dict[str, Any], same_code: dict[str, Any],
             scaling: list[dict[str, Any]], changes: list[float], max_change: float, informative: dict[str, Any],
             wrong_family: list[str]) -> GateVerdict:
    planned = path.get("tolerances", {})
    passed, reasons = not wrong_family, [f"optimizer not created as requested: {w}" for w in wrong_family]
    ill_posed: list[str] = []
    for key, measured in errors.items():
        if key not in planned:
            passed = False
            reasons.append(f"{key}: no tolerance fixed in the plan (a missing check blocks like a failed one)")
            continue
        ok_plan, why_plan = accepts(measured, planned[key])
        ok_input, why_input = accepts(measured, input_tol[key])
        passed &= ok_plan and ok_input
        reasons.append(f"{key}: plan {why_plan}; on the read-back input {why_input}")
        if _uninformative(input_tol[key]):
            ill_posed.append(key)
    if ill_posed:
        reasons.append(f"{', '.join(ill_posed)}: the a-priori bound on the read-back input is wider than the update "
                       "itself (its min_cosine is <= 0: it admits an orthogonal update): on this input a correct "
                       "implementation may differ from the reference by that much, so these checks cannot tell a "
                       "correct implementation from a wrong one; a failure here is not evidence of a defect")
    if same_code["same"]:
        reasons.append(f"baseline_update: no parity check, unverified: {same_code['reason']}")
    scaling_ok = bool(scaling) and max(changes) <= max_change
    passed &= scaling_ok
    reasons.append(f"lr_scaling: max relative change of update_norm/LR {max(changes, default=float('nan')):.3g} "
                   f"(max {max_change}) over LRs {[s['learning_rate'] for s in scaling]} from fresh state -> "
                   f"{'passed' if scaling_ok else 'FAILED'}")
    for key, e in informative.items():
        reasons.append(f"informative {key}: max_abs_error {e['max_abs_error']:.3g} (reference max "
                       f"{e['reference_max_abs']:.3g}), cosine {e['cosine_similarity']:.10f}")
    note = _parity_note(same_code)
    return GateVerdict(
        gate="correctness_preflight", status="passed" if passed else "failed", reasons=reasons,
        measured={key: {"max_abs_error": value["max_abs_error"], "atol": planned.get(key, {}).get("atol"),
                        "atol_on_input": input_tol.get(key, {}).get("atol"),
                        "cosine_similarity": value["cosine_similarity"],
                        "min_cosine": planned.get(key, {}).get("min_cosine")}
                  for key, value in errors.items()},
        state={"correctness_note": note} if note else {},
        next_diagnostic=None if passed else (
            "the read-back input is ill-conditioned for the update check: start from a later, better-conditioned state "
            "(more warm-up steps or a larger fixed batch, experiment/sft/service_probe.py) before reading a failure as "
            "a defect" if ill_posed else
            "compare the per-factor updates in evidence correctness-preflight.json; check the polar step and the "
            "preconditioner against docs/optimizers.md"),
    )
