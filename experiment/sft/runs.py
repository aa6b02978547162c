"""Gate logic for supervised fine-tuning specs (training_type "sft": the TriMuon spec).

Each gate module in `experiment/gates/` hands an SFT spec to the function of the same name here.
The comparison is a set of training runs (plan.training_runs: every arm x its LR grid), all from
one proven initial state and all on the same batches in the same order:

- preflight_probe        one client per arm with its exact optimizer and config, one optim_step on
                         one example (finite loss), the family verified from get_info; fork routing
- correctness_preflight  the optimizer path's update errors against the independent float64
                         reference (experiment/stats/optim_reference.py) under the plan's tolerances; the
                         treatment-disabled path against the baseline; LR scaling from fresh state
- restoration_preflight  one saved initialization state; every run's client created from it,
                         adapter hash, optimizer check and initial output compared; a
                         create-save-restore update checked against the uninterrupted client
- feasibility_pilot      one measured step per arm and a held-out slice, projected sequentially
- arm_training           the runs one after another (so optimizer step times are not shared
                         CPU time), each its own task run (`ctx.run_each("train", ...)`), per-step
                         optimizer wall time, adaptation manifests; a resumed sweep keeps its
                         finished runs and restarts an unfinished one from the initialization
                         state (optimizer re-verified)
- evaluation             frozen evaluator, then the held-out token-mean NLL of the base state and
                         every run on exactly eval.n_examples conversations (loss_eval, section 8),
                         one after another, each its own task run (`ctx.run_each("evaluate", ...)`)
- decision               best LR per arm, the plan's thresholds, grid edges, pair hashes checked
                         before the verdict

Fork routing (issue: a forked optimizer): the plan marks the arms whose optimizer needs a fork.
On the embedded backend both families are served by the one server, so no fork is needed and
every arm runs on it; on a remote service every arm of the comparison runs on the fork
(`ServiceTarget.service_client(fork=True)`: the RUNS_PROXY_TOKEN_* credentials) as soon as one
arm needs it. An optimizer is never swapped: a rejected arm stops the run.
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from experiment.sft import loss_eval
from experiment.rl import restoration as r
from experiment.sft.adaptation import adaptation_manifest, pair_mismatches
from experiment.run.capacity import is_capacity_refusal
from experiment.run.clients import ClientSession, open_session, session_weights_info
from experiment.stats.correctness import check_tolerances, parity_errors
from experiment.stats.evaluation import evaluation_record, evaluator_id, evaluator_provenance, score_entry
from experiment.stats.feasibility import PhaseTiming, feasibility_record, projection_config, service_allocation
from experiment.contract.verdict import GateVerdict
from experiment.run.context import RunContext
from experiment.stats.optim_reference import reference_step
from experiment.stats.update_tolerance import FIXED_INPUT_SEED, check_key, fixed_optimizer_input
from experiment.rl.recipe import renderer_for
from experiment.report.validation import validate_run, validation_summary
from experiment.sft.optimizer_probe import implementation_updates, probe_job
from experiment.sft.loop import (
    ChatExample, SFTSettings, batch_id, heldout_examples, optim_params, score_heldout, sft_settings,
    step_batches, to_datum, train_step, training_examples,
)

from experiment import PROJECT_ROOT
PAIR = "lr_grid_comparison"  # every run of the comparison consumes the same batches
FIXED_BATCH_SIZE = 4
RESTORE_UPDATE_ATOL = 1e-6  # fixed before measuring: a restored client must reproduce the update
STEPS_TABLE = "sft_steps"
RUNS_TABLE = "sft_finished_runs"  # one row per finished training run: what a resumed sweep reuses
FEASIBILITY_EVAL_EXAMPLES = 16


# ---------------------------------------------------------------- runs and routing


@dataclass(frozen=True)
class SFTRun:
    name: str  # "<arm>@lr=<lr>"
    arm: str
    family: str
    config: dict[str, Any]  # the arm's optimizer config from the plan (beta1, grad_clip_norm, ...)
    learning_rate: float
    seed: int

    @property
    def label(self) -> str:
        """The run's key beneath its arm (metrics.arms.<arm>.runs, loss_eval.arms.<arm>.runs): its LR."""
        return f"{self.learning_rate:g}"

    @property
    def slug(self) -> str:
        """The name as checkpoint and file names allow it ("trimuon-lr0.04")."""
        return self.name.replace("@lr=", "-lr")

    @property
    def requested(self) -> dict[str, Any]:
        """Family plus every setting declared at creation (the LR included), for the server to echo."""
        return r.requested_optimizer(self.family, {**self.config, "learning_rate": self.learning_rate})

    def params(self) -> Any:
        return optim_params(self.family, self.learning_rate, self.config)


def sft_runs(ctx: RunContext) -> list[SFTRun]:
    runs = []
    for planned in ctx.plan.training_runs:
        arm = ctx.plan.arm(planned.arm)
        optimizer = arm.optimizer or {"family": "adamw", "config": {}}
        runs.append(SFTRun(planned.name, arm.name, r.optimizer_family(optimizer["family"]), dict(optimizer["config"]),
                           float(planned.lr), int(planned.seed or 0)))
    return runs


def service_routing(ctx: RunContext) -> dict[str, Any]:
    """Where every arm runs: all on one target, the fork as soon as one arm needs it."""
    planned = {arm.name: arm.service for arm in ctx.plan.trained_arms}
    needs_fork = sorted(name for name, service in planned.items() if service == "fork")
    if ctx.service.kind == "embedded":
        return {"fork": False, "planned_services": planned, "target": ctx.service.describe(),
                "reason": "the embedded backend implements every arm's optimizer family (dimuon and trimuon) "
                          "in one server, so no fork is needed: every arm runs on that server"}
    if needs_fork:
        return {"fork": True, "planned_services": planned, "target": ctx.service.describe(),
                "reason": f"arms {needs_fork} need a forked optimizer, so every arm of the comparison runs on the "
                          "fork at this URL with the RUNS_PROXY_TOKEN_* credentials"}
    return {"fork": False, "planned_services": planned, "target": ctx.service.describe(),
            "reason": "every arm's optimizer is served by the shared service"}


def _session(ctx: RunContext, purpose: str) -> ClientSession:
    return open_session(ctx, purpose, fork=service_routing(ctx)["fork"])


def _served_model(ctx: RunContext) -> tuple[str, int]:
    return ctx.state["served_model"], int(ctx.spec.to_dict()["lora_rank"])


def _datums(examples: list[ChatExample], renderer: Any, settings: SFTSettings) -> list[Any]:
    return [to_datum(example, renderer, settings.max_seq_len) for example in examples]


def _file_sha256(relative: str) -> str:
    return hashlib.sha256((PROJECT_ROOT / relative).read_bytes()).hexdigest()


# ---------------------------------------------------------------- preflight probe


def preflight_probe(ctx: RunContext) -> GateVerdict:
    routing = service_routing(ctx)
    ctx.store.append_event("service_routing", **routing)
    ctx.store.add_evidence("service-routing.json", "effective_config", json.dumps(routing, indent=2, sort_keys=True))
    model, rank = _served_model(ctx)
    settings = sft_settings(ctx.spec)
    example = training_examples(ctx.spec)[0]
    spec_lr = ctx.spec.to_dict().get("optimizer", {}).get("lr")
    runs_by_arm: dict[str, list[SFTRun]] = {}
    for run in sft_runs(ctx):
        runs_by_arm.setdefault(run.arm, []).append(run)
    measured, reasons, failed = {"routing": routing}, [routing["reason"]], False
    with _session(ctx, "probe") as session:
        for arm, runs in runs_by_arm.items():
            run = next((x for x in runs if spec_lr is not None and math.isclose(x.learning_rate, spec_lr)), runs[0])
            try:
                client = session.lora_client(model, rank, run.seed, run.requested)
            except Exception as err:  # the service rejected the arm's optimizer or options
                if is_capacity_refusal(err):
                    raise  # a busy service is no rejection: the flow stops or waits per section 3
                failed = True
                reasons.append(f"{arm}: create_model with {run.family} rejected ({type(err).__name__}: {err}); "
                               "this arm needs a fork, and then every arm runs on it (never a swapped optimizer)")
                continue
            check = r.optimizer_check(client.get_info(), run.requested, after_restore=0, evidence_ref="events.jsonl")
            renderer = renderer_for(client, settings.renderer_name)
            datum = to_datum(example, renderer, settings.max_seq_len)
            record = train_step(client, [datum], run.params(), run.name, 0, batch_id(0, [example]))
            ok = math.isfinite(record.loss_sum) and check["matches"]
            failed |= not ok
            measured[arm] = {"run": run.name, "loss_sum": record.loss_sum, "finite_loss": math.isfinite(record.loss_sum),
                             "optim_seconds": record.optim_seconds, "actual_family": check["actual_family"],
                             "verified_keys": check["verified_keys"], "mismatches": check["mismatches"]}
            reasons.append(f"{arm}: forward_backward(cross_entropy) loss {record.loss_sum:.4g}, optim_step ok, "
                           f"optimizer {check['actual_family']} verified {check['verified_keys']}"
                           + ("" if ok else f" (NOT OK: {check['mismatches']})"))
        released = session.close()
    measured["probe_clients_released"] = released
    ctx.store.append_event("probe", arms=measured)
    return GateVerdict(
        gate="preflight_probe", status="failed" if failed else "passed", reasons=reasons, measured=measured,
        next_diagnostic="run the failing arm on the fork URL (--backend <fork>) with RUNS_PROXY_TOKEN_* set" if failed else None,
        state={"service_routing": routing},
    )


# ---------------------------------------------------------------- correctness preflight (optimizer path)

REFERENCE_FILE = "experiment/stats/optim_reference.py"
IMPLEMENTATION_FILE = "embedded_tinker/muon.py"
TOLERANCE_FILE = "experiment/stats/update_tolerance.py"


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
    """Section-4 errors of a whole update (every factor concatenated)."""
    return parity_errors(np.concatenate([x.ravel() for x in actual]), np.concatenate([x.ravel() for x in reference]))


def correctness_preflight(ctx: RunContext) -> GateVerdict:
    details = ctx.plan.gate("correctness_preflight").details
    paths = details.get("paths") or []
    if not paths:  # contract section 4: a custom path with no accepted plan is required/unverified
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
                     "(experiment/sft/gates.py correctness functions) in the fork's checkout and record its commit"],
            next_diagnostic="run the optimizer update probe against the fork's code and attach its record",
        )
    runs = sft_runs(ctx)
    treatment = next(run for run in runs if run.arm == ctx.plan.role_to_arm["treatment"]["arm"])
    baseline = next(run for run in runs if run.arm == ctx.plan.role_to_arm["baseline"]["arm"])
    rank = int(ctx.spec.to_dict()["lora_rank"])
    hyper = {"beta1": float(treatment.config.get("beta1", 0.9)),
             "grad_clip_norm": float(treatment.config.get("grad_clip_norm", 0.0))}
    # every learning rate the sweep trains (both arms' grids), each checked under its own tolerance
    learning_rates = sorted({run.learning_rate for run in runs})
    tolerances = path.get("tolerances", {})
    fixed = fixed_optimizer_input(rank)
    revisions = {"reference_revision": f"sha256:{_file_sha256(REFERENCE_FILE)} ({REFERENCE_FILE})",
                 "implementation_revision": f"sha256:{_file_sha256(IMPLEMENTATION_FILE)} ({IMPLEMENTATION_FILE})"}
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
        "reference_file_sha256": _file_sha256(REFERENCE_FILE),
        "implementation_revision": revisions["implementation_revision"],
        "baseline_implementation": f"dimuon-lite (polar_step polar_express) of {revisions['implementation_revision']}",
        "precision": path.get("precision", ""),
        "normalization": "update = factor after minus before one optim_step (float32 factors); reference float64, "
                         "its update rounded through float32 factors the same way",
        "errors": errors,
        "update_learning_rates": learning_rates,
        "tolerance_source": f"{path.get('error_analysis', {}).get('derivation', 'the plan file')} "
                            f"(sha256:{_file_sha256(TOLERANCE_FILE)} {TOLERANCE_FILE}), fixed in the plan file "
                            "before any measurement",
        "informative_errors": informative,
        "lr_scaling": scaling,
    }
    ctx.store.add_evidence("correctness-fixed-input.json", "metrics", json.dumps(_fixed_input_json(fixed)))
    ctx.store.add_evidence("correctness-preflight.json", "metrics", json.dumps(record_path, indent=2, sort_keys=True))
    for relative in (REFERENCE_FILE, "experiment/sft/gates.py", TOLERANCE_FILE):
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


# ---------------------------------------------------------------- restoration preflight


def restoration_preflight(ctx: RunContext) -> GateVerdict:
    runs = sft_runs(ctx)
    model, rank = _served_model(ctx)
    settings = sft_settings(ctx.spec)
    examples = training_examples(ctx.spec)
    with _session(ctx, "restoration-setup") as setup:
        init_client = setup.lora_client(model, rank, runs[0].seed, runs[0].requested)
        exposure = record_exposure(ctx, init_client.get_info())
        renderer = renderer_for(init_client, settings.renderer_name)
        batch = _datums(examples[:FIXED_BATCH_SIZE], renderer, settings)
        init_uri = init_client.save_state(f"init-full-{ctx.store.run_id}").result().path
        checkpoint_info = session_weights_info(setup, init_uri)
        first_run_per_arm = {run.arm: run for run in reversed(runs)}
        restore_checks = {arm: r.restore_update_check(setup, init_uri, run.requested, batch, run.params(),
                                                      run.arm, RESTORE_UPDATE_ATOL)
                          for arm, run in first_run_per_arm.items()}
        setup.close()
    ctx.store.add_evidence("restoration-fixed-batch.json", "metrics", json.dumps(r.batch_json(batch), sort_keys=True))
    ctx.store.add_evidence("restoration-update-check.json", "metrics", json.dumps(restore_checks, indent=2))

    arms_session = _session(ctx, "arms")
    entries, clients = {}, {}
    for run in runs:
        entries[run.name], clients[run.name] = r.restore_member(
            ctx.store, arms_session, run.name, model, rank, run.seed, run.requested, init_uri, checkpoint_info,
            batch, adapter_proof=exposure["adapter_sha256"])
    ctx.store.update_result(initialization_provenance=_provenance_by_arm(runs, entries))

    problems, unverified = r.provenance_findings(entries)
    for arm, check in restore_checks.items():
        if check["config_unverified"]:
            unverified.append(f"{arm} create-save-restore: {check['optimizer_check_after_restore']['unverified_reason']}")
        if not check["passed"]:
            problems.append(f"{arm}: create-save-restore update differs from the uninterrupted client "
                            f"(max |diff| {check['max_abs_difference']:.3g} > {RESTORE_UPDATE_ATOL}; {check['problems']})")
    if problems:
        arms_session.close("errored")
        return GateVerdict(gate="restoration_preflight", status="failed", reasons=problems,
                           next_diagnostic="compare the per-run restoration-*.json evidence and initial-output hashes")
    ctx.state["arm_clients"] = clients
    ctx.state["arms_session"] = arms_session
    differences = {arm: check["max_abs_difference"] for arm, check in restore_checks.items()}
    proof = ("adapter hashes equal the checkpoint's" if exposure["adapter_sha256"]
             else "every client loaded the immutable initialization checkpoint (load responses name it)")
    note = restoration_note(unverified)
    return GateVerdict(
        gate="restoration_preflight", status="passed",
        reasons=[f"{len(entries)} runs created from {init_uri}: {proof}; initial-output hashes and optimizer "
                 f"families agree; create-save-restore updates (optimizer state saved after one step) match the "
                 f"uninterrupted clients ({', '.join(f'{arm} {value:.3g}' for arm, value in differences.items())})"]
        + ([note] if note else []),
        measured={"init_checkpoint": init_uri, "exposure": exposure,
                  "restore_update_max_abs_difference": differences, "unverified": unverified},
        state={"init_checkpoint": init_uri, **({"restoration_note": note} if note else {})},
    )


def record_exposure(ctx: RunContext, info: Any) -> dict[str, Any]:
    """What the service exposes, from its get_info response (evidence service-exposure.json)."""
    exposure = r.service_exposure(info)
    ctx.service.observed.update(exposure)
    ctx.store.add_evidence("service-exposure.json", "metrics", json.dumps(
        {"observed": ctx.service.describe(), "get_info": info.model_dump(mode="json")}, indent=2, sort_keys=True))
    ctx.store.append_event("service_exposure", **ctx.service.describe())
    return exposure


def restoration_note(unverified: list[str]) -> str | None:
    """The limit an unverifiable optimizer configuration puts on the verdict (said in reasoning)."""
    if not unverified:
        return None
    return (f"restoration unverified: the service exposes no optimizer configuration in any response, so "
            f"{len(unverified)} optimizer check(s) report the requested configuration as declared, not verified "
            f"(initialization is proven; families match)")


def _provenance_by_arm(runs: list[SFTRun], entries: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Section 5's record, one entry per named arm. An arm with an LR grid is several clients, each
    created from the same initialization state: the arm's entry is its first run's, and `runs` keeps
    every run's own entry (its creation check carries that run's learning rate)."""
    arms: dict[str, Any] = {}
    for run in runs:
        if run.arm not in arms:
            arms[run.arm] = {**entries[run.name], "runs": {}}
        arms[run.arm]["runs"][run.label] = entries[run.name]
    return {"version": 1, "arms": arms}


# ---------------------------------------------------------------- feasibility pilot


def feasibility_pilot(ctx: RunContext) -> GateVerdict:
    spec = ctx.spec.to_dict()
    runs = sft_runs(ctx)
    settings = sft_settings(ctx.spec)
    examples, heldout = training_examples(ctx.spec), heldout_examples(ctx.spec)
    gpu_count, allocation = service_allocation(ctx.service.kind)
    first_run_per_arm = {run.arm: run for run in reversed(runs)}
    setup_seconds = step_seconds = eval_seconds = 0.0
    with _session(ctx, "feasibility") as session:
        for run in first_run_per_arm.values():
            started = time.perf_counter()
            client = session.client_from_state(ctx.state["init_checkpoint"], run.requested)
            setup_seconds += time.perf_counter() - started
            renderer = renderer_for(client, settings.renderer_name)
            batch = step_batches(examples, settings.batch_size, 1)[0]
            started = time.perf_counter()
            train_step(client, _datums(batch, renderer, settings), run.params(), run.name, 0, batch_id(0, batch))
            step_seconds += time.perf_counter() - started
        pilot = heldout[:FEASIBILITY_EVAL_EXAMPLES]
        started = time.perf_counter()
        score_heldout(client, _datums(pilot, renderer, settings), [e.id for e in pilot])
        eval_seconds = time.perf_counter() - started
    n_arms, n_runs = len(first_run_per_arm), len(runs)
    full_run = projection_config(  # config == effective_config: the full run (the pilot's size is in measurements)
        base_model=ctx.state["served_model"], lora_rank=spec["lora_rank"], dataset=spec["dataset"], steps=settings.steps,
        batch_size=settings.batch_size, max_seq_len=settings.max_seq_len, max_tokens=0,
        arms=[run.name for run in runs], n_examples=spec["dataset"].get("n_examples"), n_eval=settings.n_eval,
    )
    record = feasibility_record(
        config=full_run, effective_config=dict(full_run),
        primary_endpoint=ctx.plan.primary_endpoint,
        source=f"timing pilot of this run (events.jsonl, gate feasibility_pilot) on {ctx.service.describe()['base_url']}",
        setup=PhaseTiming(setup_seconds, n_arms, n_runs, 0, gpu_count, allocation),
        training=PhaseTiming(step_seconds, n_arms, n_runs * settings.steps, n_arms * settings.batch_size,
                             gpu_count, allocation),
        evaluation=PhaseTiming(eval_seconds, len(pilot), settings.n_eval * (n_runs + 1), len(pilot),
                               gpu_count, allocation),
        budget=ctx.plan.budget,
    )
    ctx.store.update_result(feasibility=record)
    projection = record["projection"]
    fits = projection["fits"] or not ctx.plan.gate("feasibility_pilot").enforced
    return GateVerdict(
        gate="feasibility_pilot", status="passed" if fits else "failed",
        reasons=[f"projected {projection['wall_seconds']:.0f}s for {n_runs} runs of {settings.steps} steps and "
                 f"{n_runs + 1} held-out scorings, of a {projection['budget_wall_seconds']:.0f}s budget"]
        + projection["problems"],
        measured={"setup_seconds": setup_seconds, "step_seconds_per_arm": step_seconds / n_arms,
                  "eval_seconds_per_example": eval_seconds / len(pilot),
                  "projected_wall_seconds": projection["wall_seconds"]},
        next_diagnostic=None if fits else "downsize per contract section 11: drop LR points or the optional seed first",
    )


# ---------------------------------------------------------------- arm training (every run of every grid)


def arm_training(ctx: RunContext) -> GateVerdict:
    runs = sft_runs(ctx)
    settings = sft_settings(ctx.spec)
    examples = training_examples(ctx.spec)
    batches = step_batches(examples, settings.batch_size, settings.steps)
    ids = [batch_id(step, batch) for step, batch in enumerate(batches)]
    session = ctx.state.get("arms_session") or _session(ctx, "arms")
    finished = {row["run"]: row for row in ctx.store.read_table(RUNS_TABLE)}  # a resumed run keeps these
    manifests, final_states, sampler_paths = [], {}, {}
    tokenized: list[list[Any]] = []  # every step's datums, tokenized once: identical for every run
    ctx.state["comparison_steps_completed"] = settings.steps * len(finished)
    for run in runs:
        if run.name in finished:
            row = finished[run.name]
            final_states[run.name], sampler_paths[run.name] = row["final_state"], row["sampler_path"]
            manifests.append(adaptation_manifest(run.name, PAIR, json.loads(row["batch_ids"])))
            continue
        # one run after another (each run's optimizer time is measured on an otherwise idle server), each
        # its own task run under the flow (ctx.run_each: own progress, own retry)
        outcome = ctx.run_each("train", {run.slug: _run_trainer(ctx, session, run, batches, ids, tokenized)})[run.slug]
        if isinstance(outcome, BaseException):
            raise outcome
        records, final_states[run.name], sampler_paths[run.name] = outcome
        manifests.append(adaptation_manifest(run.name, PAIR, [rec.batch_id for rec in records]))
        optim = [rec.optim_seconds for rec in records]
        arm_runs = [other for other in runs if other.arm == run.arm]
        done = run is arm_runs[-1]  # the arm finished: its whole LR grid trained
        ctx.store.update_result(
            adaptation_manifests=arm_manifests(runs, manifests),
            metrics={"arms": {run.arm: {
                **({"runs_completed": len(arm_runs), "lr_grid": [other.learning_rate for other in arm_runs]}
                   if done else {}),
                "runs": {run.label: {
                    "optimizer_family": run.family, "learning_rate": run.learning_rate,
                    "steps_completed": len(records),
                    "median_optim_step_seconds": statistics.median(optim),
                    "mean_optim_step_seconds": statistics.fmean(optim),
                    "first_step_train_nll_token_mean": records[0].train_nll_token_mean,
                    "last_step_train_nll_token_mean": records[-1].train_nll_token_mean,
                }}}}},
            completed_arms=[run.arm] if done else [],
        )
    ctx.store.add_evidence("sft-steps.jsonl", "metrics",
                           "".join(json.dumps(row, sort_keys=True) + "\n" for row in ctx.store.read_table(STEPS_TABLE)))
    mismatches = pair_mismatches(manifests)
    return GateVerdict(
        gate="arm_training", status="failed" if mismatches else "passed",
        reasons=[f"{len(runs)} runs x {settings.steps} steps on the same {len(ids)} batches "
                 f"(adaptation hash {manifests[0]['adaptation_batch_hash'][:12]})"] + mismatches,
        measured={"runs": len(runs), "steps_per_run": settings.steps,
                  "comparison_steps_completed": ctx.state["comparison_steps_completed"]},
        state={"final_checkpoints": sampler_paths, "final_states": final_states},
    )


def _run_trainer(ctx: RunContext, session: ClientSession, run: SFTRun, batches: list[list[ChatExample]],
                 ids: list[str], tokenized: list[list[Any]]):
    """One training run's work for `ctx.run_each`: every step, then its final state and sampler weights
    saved and the run recorded as finished. Returns (step records, final state, sampler path). A retry
    (a crash of this run) starts the run over from the initialization state, never from a half-trained
    client, like a resumed sweep."""
    settings = sft_settings(ctx.spec)
    attempts: list[int] = []  # steps counted by each attempt

    def train() -> tuple[list[Any], str, str]:
        if attempts:  # evaluation must not score the crashed attempt's client: it loads the final state
            ctx.state["comparison_steps_completed"] -= attempts[-1]
            ctx.state.get("arm_clients", {}).pop(run.name, None)
        attempts.append(0)
        client = (ctx.state.get("arm_clients") or {}).get(run.name) or _client_from_initial_state(ctx, session, run)
        if not tokenized:
            renderer = renderer_for(client, settings.renderer_name)
            tokenized[:] = [_datums(batch, renderer, settings) for batch in batches]  # whole, or not at all
        records = []
        for step in range(settings.steps):
            record = train_step(client, tokenized[step], run.params(), run.name, step, ids[step])
            records.append(record)
            ctx.store.append_rows(STEPS_TABLE, [{**record.summary(), "model_id": client.model_id}])
            ctx.store.append_event("training_step", **record.summary())
            ctx.state["comparison_steps_completed"] += 1
            attempts[-1] += 1
            ctx.on_progress(f"training-{run.slug}", step + 1, settings.steps)
        final_state = client.save_state(f"{run.slug}-final-state").result().path
        sampler_path = client.save_weights_for_sampler(name=f"{run.slug}-final").result().path
        ctx.store.append_rows(RUNS_TABLE, [{"run": run.name, "final_state": final_state, "sampler_path": sampler_path,
                                            "batch_ids": json.dumps([rec.batch_id for rec in records])}])
        ctx.store.add_checkpoint(run.name, settings.steps, sampler_path)
        return records, final_state, sampler_path

    return train


def arm_manifests(runs: list[SFTRun], run_manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Section 9's adaptation manifests, one entry per arm: the batches its runs actually consumed
    (every run of the arm's grid consumes the same ones; a run that did not is a pair mismatch,
    reported from the per-run manifests), with the runs it covers."""
    by_run = {manifest["arm"]: manifest for manifest in run_manifests}
    out = []
    for arm in dict.fromkeys(run.arm for run in runs):
        done = [run for run in runs if run.arm == arm and run.name in by_run]
        if not done:
            continue
        first = by_run[done[0].name]
        out.append({**first, "arm": arm, "runs": [run.name for run in done]})
    return out


def _client_from_initial_state(ctx: RunContext, session: ClientSession, run: SFTRun) -> Any:
    """A resumed sweep: the run starts over from the proven initialization state (never from a
    half-trained one), recorded as a restore of its arm with the optimizer verified from the
    server's response before the first update."""
    client = session.client_from_state(ctx.state["init_checkpoint"], run.requested)
    check = r.record_restore(ctx.store, run.arm, client.get_info(), run.requested, ctx.state["init_checkpoint"],
                             with_optimizer=False, run=run.name)
    if check["mismatches"]:
        raise RuntimeError(f"{run.name}: the recreated client's optimizer does not match: {check['mismatches']}")
    return client


# ---------------------------------------------------------------- evaluation (held-out token-mean NLL)

EVALUATOR_CODE = ("experiment/sft/loss_eval.py", "experiment/sft/loop.py")
PARSER = "NLL = -logprob summed over tokens with loss weight > 0, totals per example (experiment/sft/loss_eval.py)"
TEACHER_FORCED = {"temperature": 0.0, "max_tokens": 0, "stop": []}  # scored by forward(): nothing is sampled
BASE_LABEL = "base"


def evaluation(ctx: RunContext) -> GateVerdict:
    runs = sft_runs(ctx)
    final_states = ctx.state.get("final_states", {})
    missing = [run.name for run in runs if run.name not in final_states]
    if missing:
        return GateVerdict(gate="evaluation", status="failed", reasons=[f"no trained final state for {missing}"])
    settings = sft_settings(ctx.spec)
    aggregation = ctx.plan.eval.get("aggregation") or "token_mean"
    items = heldout_examples(ctx.spec)  # exactly eval.n_examples, never floor-divided by a batch size
    eval_session = _session(ctx, "evaluation")
    base_client = eval_session.client_from_state(ctx.state["init_checkpoint"], runs[0].requested)
    renderer = renderer_for(base_client, settings.renderer_name)
    datums, ids = _datums(items, renderer, settings), [item.id for item in items]
    template = (f"renderer {settings.renderer_name}; conversation_to_datum(train_on_what=all_assistant_messages, "
                f"reduction=none, max_length={settings.max_seq_len}); forward(..., cross_entropy)")
    provenance = evaluator_provenance([PROJECT_ROOT / f for f in EVALUATOR_CODE], template, TEACHER_FORCED,
                                      f"{PARSER}; aggregation {aggregation}", ids)
    evaluator = evaluator_id(provenance)
    arms = list(dict.fromkeys(run.arm for run in runs))
    comparisons = [{"metric": f"heldout_nll_{aggregation}", "arms": arms}]
    record = evaluation_record({evaluator: provenance}, [], comparisons)
    ctx.store.update_result(evaluation=record)  # frozen before the first score of anything
    ctx.store.append_event("evaluator_frozen", evaluator_id=evaluator, n_items=len(items))

    # the untrained initial state first, then every run, one after another: each scoring is its own task
    # run under the flow (ctx.run_each: own progress, own retry), posted as soon as it is known
    clients = ctx.state.get("arm_clients") or {}  # the trained clients, unless this process resumed
    scored_runs: dict[str, dict[str, loss_eval.LossEval]] = {}
    values: dict[str, float] = {}
    for run in [None, *runs]:
        label = run.slug if run else BASE_LABEL

        def score(run: SFTRun | None = run, key: str = f"evaluation-{label}") -> loss_eval.LossEval:
            client = base_client if run is None else (
                clients.get(run.name) or eval_session.client_from_state(final_states[run.name], run.requested))
            return score_heldout(client, datums, ids, aggregation,
                                 on_progress=lambda done, total: ctx.on_progress(key, done, total))

        scored = ctx.run_each("evaluate", {label: score})[label]
        if isinstance(scored, BaseException):
            raise scored
        if run is None:
            values[BASE_LABEL] = scored.summary()["value"]
            _post_score(ctx, record, None, scored, evaluator, ctx.state["init_checkpoint"], aggregation)
            continue
        scored_runs.setdefault(run.arm, {})[run.label] = scored
        values[run.name] = scored.summary()["value"]
        checkpoint = ctx.state.get("final_checkpoints", {}).get(run.name)
        _post_score(ctx, record, run, scored, evaluator, checkpoint, aggregation)
        ctx.store.update_result(loss_eval=loss_eval.report_by_arm(aggregation, scored_runs,
                                                                  selected_runs(runs, scored_runs)))
    eval_session.close()
    record_eval = loss_eval.report_by_arm(aggregation, scored_runs, selected_runs(runs, scored_runs))
    problems = loss_eval.check(record_eval)
    first_arm = record_eval["arms"][arms[0]]
    return GateVerdict(
        gate="evaluation", status="failed" if problems else "passed",
        reasons=[f"evaluator {evaluator[:12]} frozen on {len(items)} held-out conversations "
                 f"({first_arm.get('n_tokens')} counted tokens); {aggregation}: "
                 + ", ".join(f"{k} {v:.4f}" for k, v in values.items())] + problems,
        measured={"evaluator_id": evaluator, "n_items": len(items), aggregation: values},
        state={"evaluator_id": evaluator, "heldout_nll": values},
    )


def selected_runs(runs: list[SFTRun], scored: dict[str, dict[str, loss_eval.LossEval]]) -> dict[str, str]:
    """The plan's selection rule, fixed before training: per arm, the LR with the lowest held-out
    NLL, once every run of the arm's grid is scored."""
    selected = {}
    for arm, by_label in scored.items():
        if len(by_label) == sum(1 for run in runs if run.arm == arm):
            selected[arm] = min(by_label, key=lambda label: by_label[label].summary()["value"])
    return selected


def _post_score(ctx, record, run: SFTRun | None, scored, evaluator, checkpoint, aggregation) -> None:
    """One scored target (a training run, or the untrained base when `run` is None): its per-example
    prediction rows as evidence, its score, its metrics under its arm."""
    summary = scored.summary()
    arm = run.arm if run else BASE_LABEL
    extra = {"run": run.name, "learning_rate": run.learning_rate} if run else {}
    rows = [{"item_id": item_id, "arm": arm, **extra,
             "prediction": {"nll_sum": total.nll_sum, "n_tokens": total.n_tokens},
             "reference": "the held-out row's assistant messages (teacher-forced)", "metric": f"heldout_nll_{aggregation}",
             "evaluator_id": evaluator, "seed": 0, "checkpoint": checkpoint}
            for item_id, total in zip(scored.example_ids, scored.examples)]
    name = f"predictions-{run.slug if run else BASE_LABEL}.jsonl"
    ctx.store.add_evidence(name, "predictions", "".join(json.dumps(row) + "\n" for row in rows))
    record["scores"].append({**score_entry(arm, summary["value"], evaluator, 0, name,
                                           metric=f"heldout_nll_{aggregation}"), **extra})
    if run is None:
        metrics = {f"base_heldout_nll_{aggregation}": summary["value"]}
    else:
        metrics = {"arms": {run.arm: {"runs": {run.label: {
            f"heldout_nll_{aggregation}": summary["value"], "heldout_nll_example_mean": summary["example_mean"],
            "heldout_n_tokens": summary["n_tokens"]}}}}}
    ctx.store.update_result(evaluation=record, metrics=metrics)


# ---------------------------------------------------------------- decision (best LR per arm, thresholds)


def decision(ctx: RunContext) -> GateVerdict:
    """The verdict of a spec WITHOUT a decision_rule (the TriMuon spec): no decision object
    (contract section 7, contract-details A-7.1 and Part D); the verdict follows the effect
    against the margin (section 2, direction+confidence): "supported" when every criterion of the
    success criterion is met, "refuted" otherwise; "strong" confidence only when an interval or at
    least two seeds settle the margin, so one seed and point estimates keep it "weak". How the
    prose criterion is measured (selection, metrics, margins) is the plan file's `verdict_rule`,
    fixed before training."""
    spec = ctx.spec.to_dict()
    if spec.get("decision_rule") is not None:
        return GateVerdict(gate="decision", status="failed",
                           reasons=["an SFT spec with a decision_rule needs its decision object; only the "
                                    "no-decision_rule verdict (verdict_rule) is built for SFT specs"])
    rule = spec.get("verdict_rule")
    if not rule or rule.get("method") != "best_lr_threshold":
        return GateVerdict(gate="decision", status="failed",
                           reasons=[f"no verdict_rule with method best_lr_threshold in the plan file (got {rule!r})"])
    runs = sft_runs(ctx)
    result = ctx.store.read_result()
    per_arm = result.get("metrics", {}).get("arms", {})
    aggregation = ctx.plan.eval.get("aggregation") or "token_mean"
    nll_key = f"heldout_nll_{aggregation}"
    missing = [run.name for run in runs if nll_key not in per_arm.get(run.arm, {}).get("runs", {}).get(run.label, {})]
    if missing:
        return GateVerdict(gate="decision", status="failed", reasons=[f"no held-out NLL for {missing}"])

    arms: dict[str, dict[str, Any]] = {}
    for arm in ctx.plan.trained_arms:
        arm_runs = [run for run in runs if run.arm == arm.name]
        grid = sorted(run.learning_rate for run in arm_runs)
        measured = per_arm[arm.name]["runs"]
        best = min(arm_runs, key=lambda run: measured[run.label][nll_key])
        arms[arm.name] = {
            "selected_lr": best.learning_rate, "selected_run": best.name,
            nll_key: measured[best.label][nll_key],
            "median_optim_step_seconds": measured[best.label]["median_optim_step_seconds"],
            "median_optim_step_seconds_all_runs": statistics.median(
                measured[run.label]["median_optim_step_seconds"] for run in arm_runs),
            "lr_grid": grid, "grid_edge": best.learning_rate in (grid[0], grid[-1]),
        }
    metric_values = {"heldout_nll_token_mean": nll_key, "median_optim_step_seconds": "median_optim_step_seconds"}
    criteria = []
    for criterion in rule["criteria"]:
        key = metric_values.get(criterion["metric"], criterion["metric"])
        effect = sum(weight * arms[arm][key] for arm, weight in criterion["weights"].items())
        met = effect >= criterion["margin"] if criterion.get("comparison", "at_least") == "at_least" else effect > criterion["margin"]
        criteria.append({"id": criterion["id"], "metric": criterion["metric"], "effect": effect,
                         "margin": criterion["margin"], "met": met})
    mismatches = pair_mismatches(result.get("adaptation_manifests") or [])  # before any verdict
    grid_edge = any(entry["grid_edge"] for entry in arms.values())
    supported = all(c["met"] for c in criteria)
    limits = ["one seed and no interval: the best-LR comparison is a point estimate"]
    limits += [f"grid-edge LR selected for {a} ({v['selected_lr']:g})" for a, v in arms.items() if v["grid_edge"]]
    limits += mismatches
    for note in (ctx.state.get("correctness_note"), ctx.state.get("restoration_note")):
        if note:
            limits.append(note)
    routing = ctx.state.get("service_routing") or service_routing(ctx)
    treatment = ctx.plan.role_to_arm["treatment"]["arm"]
    baseline = ctx.plan.role_to_arm["baseline"]["arm"]
    primary = criteria[0]
    summary_arms = {arm: {nll_key: v[nll_key], "selected_lr": v["selected_lr"], "selected_run": v["selected_run"],
                          "median_optim_step_seconds": v["median_optim_step_seconds"],
                          "median_optim_step_seconds_all_runs": v["median_optim_step_seconds_all_runs"],
                          "grid_edge": v["grid_edge"]}
                    for arm, v in arms.items()}
    verdict_record = {"rule": "contract section 2 (no decision_rule): effect against margin, per criterion",
                      "selection": rule.get("select"), "criteria": criteria, "per_arm": summary_arms}
    ctx.store.add_evidence("verdict-criteria.json", "metrics", json.dumps(verdict_record, indent=2, sort_keys=True))
    # everything but the verdict first (no decision object: the spec has no decision_rule)
    ctx.store.update_result(decision=None, metrics={"arms": summary_arms}, effect=primary["effect"],
                            margin=primary["margin"], seeds=1, grid_edge=grid_edge)
    problems = validate_run(ctx.store.run_dir)
    if problems:
        limits.append(f"validation found {len(problems)} problem(s): {', '.join(sorted({p.check for p in problems}))}")
    reasoning = (
        f"Best-LR {treatment} held-out NLL {arms[treatment][nll_key]:.4f} (LR {arms[treatment]['selected_lr']:g}) vs "
        f"{baseline} {arms[baseline][nll_key]:.4f} (LR {arms[baseline]['selected_lr']:g}); median optimizer step "
        f"{arms[treatment]['median_optim_step_seconds']:.4f}s vs {arms[baseline]['median_optim_step_seconds']:.4f}s. "
        f"Verdict {'supported' if supported else 'refuted'}: "
        + "; ".join(f"{c['id']} effect {c['effect']:+.4g} {'meets' if c['met'] else 'misses'} margin {c['margin']:g}"
                    for c in criteria)
        + f". Confidence is weak: {'; '.join(limits)}. Routing: {routing['reason']}."
    )
    ctx.store.update_result(
        validation=validation_summary(problems),
        status="succeeded",
        summary=(f"Trained {len(runs)} LoRA SFT runs ({', '.join(arms)} x LR grid) from one proven initial state on "
                 f"identical batches and scored held-out {aggregation} NLL on {ctx.plan.eval['n_examples']} conversations. "
                 f"Best-LR gap ({baseline} minus {treatment}) {primary['effect']:+.4f} nats; verdict "
                 f"{'supported' if supported else 'refuted'}."),
        verdict="supported" if supported else "refuted", confidence="weak",
        effect=primary["effect"], margin=primary["margin"], ci=None, seeds=1, grid_edge=grid_edge,
        reasoning=reasoning, outcome_reason=None,
    )
    return GateVerdict(
        gate="decision", status="passed",
        reasons=[f"{c['id']}: effect {c['effect']:+.4g} vs margin {c['margin']:g} ({'met' if c['met'] else 'not met'})"
                 for c in criteria] + mismatches,
        measured={"verdict": "supported" if supported else "refuted", "grid_edge": grid_edge,
                  "validation_problems": len(problems),
                  **{c["id"]: c["effect"] for c in criteria}},
    )
