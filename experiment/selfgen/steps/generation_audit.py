"""Self-generated-tasks step of gate `generation_audit` (GA-1..GA-9).

Runs before any optimizer update (the gate order puts it before every pilot):
  1. generation: the generator (the spec's, or a trained generator checkpoint the local spec
     names) sampled through the sampling client with the fixed instruction at the spec's T;
     each completion parsed, solve() run in the sandbox, the spec's filters in its order, the
     solvability filter on the frozen base model through the cookbook math env;
  2. audit: candidates and the full held-out set frozen as generated_tasks evidence, the
     deterministic sample re-solved blind by the independent solver (a model, sampling only, or an exact
     solver of the task family; refused before generating when it is the generator, the filter model
     or the trained base model), the
     `generation_audit` record (GA-2) posted to RESULT.generation_audit and validated; label errors or overlaps
     reject tasks, top the set up, freeze new file versions and re-audit.
Passes only when the validation says `passed`. Then RunState.generated_task_rows holds the first
n_accept accepted tasks (TaskItem rows) for training, and ctx.state.generation_feasibility
the measured generation, filter and audit work (units: candidates, filter rollouts, re-solves).
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from experiment.contract.verdict import GateVerdict
from experiment.data import TaskItem, load_gsm8k, load_task_file, resolve_data_path
from experiment.run.clients import open_session
from experiment.run.context import RunContext
from experiment.selfgen.exact_solver import SOLVERS, is_exact_solver
from experiment.selfgen.exact_solver import solver_identity as exact_solver_identity
from experiment.selfgen.generation_audit import (AuditOutcome, ProgramResolver, Resolver, audit_with_repair,
                                                 independence_problems)
from experiment import PROJECT_ROOT
from experiment.rl.recipe import (
    renderer_named,
    rollout_settings,
    run_async,
)
from experiment.selfgen.sandbox import Sandbox, SandboxError, SandboxLimits, SandboxUnavailable
from experiment.contract.spec import SpecError
from experiment.selfgen.task_generation import (
    GenerationSettings,
    TaskGenerator,
    evaluation_prompt_index,
    filter_settings,
)
from experiment.contract.generation import generation_settings

GATE = "generation_audit"
EVIDENCE_KIND = "generated_tasks"


def run(ctx: RunContext) -> GateVerdict:
    raw = ctx.spec.to_dict()
    spec_audit = dict(raw.get("generation_audit") or {})
    try:
        settings = generation_settings(ctx.spec)
        rollout = rollout_settings(ctx.spec)
    except (SpecError, ValueError) as err:
        return _failed([str(err)], "state the generation design in the spec (a `generation` block or the method prose)")
    if spec_audit.get("answer_comparison") not in ("numeric_exact", "categorical_exact"):
        why = (f"generation_audit.answer_comparison {spec_audit.get('answer_comparison')!r} is missing or "
               "unsupported; the audit stays unverified")
        # the record says so (missing evidence is unverified, never absent or passed; GA-7)
        ctx.store.update_result(generation_audit={"version": 1, "stage": "before_training", "status": "unverified",
                                                  "reason": why})
        return _failed([why], "set generation_audit.answer_comparison in the spec")
    try:
        sandbox = Sandbox(SandboxLimits(timeout_s=settings.sandbox_timeout_s))
    except SandboxUnavailable as err:
        return _failed([f"no sandbox for model-written code: {err}"],
                       "run as root where `unshare --net --pid --ipc --fork` works (model-written code never runs "
                       "without those walls)")
    evaluation = full_evaluation_set(raw)
    base_model = ctx.state.served_model or ctx.spec.base_model
    if settings.generator_model == ctx.spec.base_model and not settings.generator_path:
        settings = replace(settings, generator_model=base_model)  # "frozen base": the served (resolved) model
    compared = {"generator": model_identity(settings.generator_id), "filter_base_model": model_identity(base_model),
                "trained_base_model": model_identity(base_model)}  # the arms train LoRA on the served base model
    try:
        resolver_identity = solver_identity(settings.solver_id)
    except ValueError as err:
        return _failed([str(err)], "name a served solver_model or a known exact solver in the generation block")
    identities = {**compared, "solver": resolver_identity}
    ctx.store.append_event("generation_started", identities=identities, settings=asdict(settings),
                           sandbox=sandbox.containment())
    dependent = independence_problems(resolver_identity, compared)
    if dependent:  # before any candidate is generated: an audit by a dependent solver proves nothing
        return _failed([f"the generation audit's re-solver is not independent: {'; '.join(dependent)}"],
                       "name a solver_model (or an exact solver) that is neither the generator, the filter model "
                       "nor the trained base model")

    try:
        generator, outcome = _generate_and_audit(ctx, settings, rollout, sandbox, evaluation, base_model, spec_audit,
                                                 compared, resolver_identity)
    except SandboxError as err:  # the sandbox could not confirm containment: nothing more runs
        return _failed([f"sandbox failure while running model-written code: {err}"],
                       "look for processes of the sandbox's uids and at the host's namespace support before rerunning")

    feasibility = generation_feasibility(settings, generator, outcome)
    ctx.state.generation_feasibility = feasibility
    ctx.store.append_event("generation_measured", **feasibility)
    measured = {"counts": generator.counts(), "rounds": outcome.rounds, "feasibility": feasibility,
                "identities": identities}
    if outcome.report is not None:
        measured.update(label_error_count=outcome.report["label_error_count"],
                        overlap_count=outcome.report["overlap_count"], sample_size=outcome.report["sample_size"],
                        duplicate_count=outcome.report["duplicate_count"])
    if not outcome.passed:
        return GateVerdict(gate=GATE, status="failed", reasons=outcome.reasons or ["the audit did not pass"],
                           measured=measured,
                           next_diagnostic="read the candidates file (dispositions and errors) and the audit file")
    tasks = generator.training_tasks()
    ctx.state.generated_task_rows = [asdict(task) for task in tasks]
    report = outcome.report
    return GateVerdict(
        gate=GATE, status="passed", measured=measured,
        # JSON rows, for a resumed run too (the flow hands them to RunState.receive); generated_tasks() rebuilds them
        state={"generated_task_rows": ctx.state.generated_task_rows,
               "generated_tasks_file": report["dataset_file"], "generation_feasibility": feasibility},
        reasons=[(f"{len(tasks)} tasks from {report['counts']['generated']} candidates; "
                  f"audit round {outcome.rounds}: {report['label_error_count']} label errors in "
                  f"{report['sample_size']} blind re-solves by {_resolver_id(settings, resolver_identity)}, "
                  f"{report['overlap_count']} evaluation overlaps; validated passed")],
    )


def _generate_and_audit(ctx: RunContext, settings: GenerationSettings, rollout: Any, sandbox: Sandbox,
                        evaluation: list[TaskItem], base_model: str, spec_audit: dict[str, Any],
                        compared: dict[str, dict[str, Any]],
                        resolver_identity: dict[str, Any]) -> tuple[TaskGenerator, AuditOutcome]:
    with open_session(ctx, "generation") as session:
        generator_sampler = (session.sampler_from_path(settings.generator_path) if settings.generator_path
                             else session.base_sampler(_model_reference(settings.generator_model)))
        filter_sampler = session.base_sampler(base_model)  # "the base model solves it from text alone"
        generator = TaskGenerator(
            settings=settings, generator=generator_sampler, filter_sampler=filter_sampler,
            renderer=_renderer(ctx, filter_sampler, rollout.renderer_name),
            evaluation_prompts=evaluation_prompt_index(evaluation), sandbox=sandbox,
            filter_arm=filter_settings(settings, rollout.renderer_name, rollout.few_shot),
            on_progress=lambda counts: ctx.store.append_event("generation_progress", **counts),
            generator_renderer=_renderer(ctx, generator_sampler, rollout.renderer_name),
        )
        resolver = _resolver(ctx, session, settings, rollout, resolver_identity)
        outcome = ctx.wait_for_service(lambda: run_async(audit_with_repair(
            generator, resolver, evaluation, spec_audit, seed=settings.audit_seed,
            max_rounds=settings.max_audit_rounds,
            freeze=lambda name, text: ctx.store.add_evidence(name, EVIDENCE_KIND, text),
            post=lambda report: ctx.store.update_result(generation_audit=_contract_record(report)),
            identities=compared,
        )))
    return generator, outcome


def _resolver(ctx: RunContext, session: Any, settings: GenerationSettings, rollout: Any,
              identity: dict[str, Any]) -> Resolver | ProgramResolver:
    """The independent re-solver the spec names: an exact solver of the task family (a program), or a
    model through a sampling client (sampling only)."""
    if is_exact_solver(settings.solver_id):
        return ProgramResolver(SOLVERS[settings.solver_id], resolver_id=_resolver_id(settings, identity),
                               identity=identity)
    sampler = (session.sampler_from_path(settings.solver_path) if settings.solver_path
               else session.base_sampler(_model_reference(settings.solver_model)))
    return Resolver(sampler, _renderer(ctx, sampler, rollout.renderer_name), resolver_id=_resolver_id(settings, identity),
                    max_tokens=settings.solver_max_tokens, few_shot=rollout.few_shot, identity=identity)


def solver_identity(name: str) -> dict[str, Any]:
    """The re-solver's identity: an exact solver's code hash, or a model's name (and weights hash when local)."""
    if is_exact_solver(name):
        return exact_solver_identity(name)
    return model_identity(name)


def _contract_record(report: dict[str, Any]) -> dict[str, Any]:
    """RESULT.generation_audit: the GA-2 record (each sample's label and agreement stay in the audit file)."""
    record = {key: value for key, value in report.items() if key != "samples"}
    record["samples"] = [{key: sample[key] for key in ("item_id", "independent_answer", "resolver_id", "method",
                                                       "reasoning", "blind_to_label")}
                         for sample in report["samples"]]
    return record


def _model_reference(name: str) -> str:
    """A local model directory named relative to the project (the local spec's generator) is sent to
    the service as an absolute path; service model names pass through unchanged."""
    local = PROJECT_ROOT / name
    return str(local) if not Path(name).is_absolute() and (local / "config.json").is_file() else name


def model_identity(name: str) -> dict[str, Any]:
    """What the run records about a model: its name, and for a local directory its weights' sha256."""
    identity: dict[str, Any] = {"name": name}
    weights = Path(_model_reference(name)) / "model.safetensors"
    if weights.is_file():
        identity["weights_sha256"] = hashlib.sha256(weights.read_bytes()).hexdigest()
        identity["kind"] = "local checkpoint directory"
    return identity


def _resolver_id(settings: GenerationSettings, identity: dict[str, Any]) -> str:
    if is_exact_solver(settings.solver_id):
        return (f"{settings.solver_id} ({identity['kind']} {identity['code']} sha256:{identity['code_sha256'][:12]}; "
                "problem text only)")
    return f"{settings.solver_id} (sampling client, greedy, math-env prompt; sampling only)"


def _renderer(ctx: RunContext, sampler: Any, renderer_name: str) -> Any:
    """The cookbook renderer over the sampler's tokenizer. A sampler on the run's served model
    reuses the tokenizer id the probe recorded (offline-safe); any other model asks the SDK."""
    from tinker_cookbook import renderers

    if sampler.get_base_model() == ctx.state.served_model and ctx.state.tokenizer_id:
        return renderer_named(ctx.state.tokenizer_id, renderer_name)
    return renderers.get_renderer(renderer_name, sampler.get_tokenizer())


def _failed(reasons: list[str], next_diagnostic: str) -> GateVerdict:
    return GateVerdict(gate=GATE, status="failed", reasons=reasons, next_diagnostic=next_diagnostic)


def full_evaluation_set(raw_spec: dict[str, Any]) -> list[TaskItem]:
    """Every held-out item (not only the scored prefix): overlap is checked against all of them."""
    path = (raw_spec.get("eval") or {}).get("path")
    if path:
        return load_task_file(resolve_data_path(path))
    return load_gsm8k("test")


def generation_feasibility(settings: GenerationSettings, generator: TaskGenerator, outcome: AuditOutcome) -> dict[str, Any]:
    """Measured generation/filter/audit work for the feasibility record (FEAS-7)."""
    counts = generator.counts()
    m = generator.measurements
    return {
        "attempted": counts["generated"], "accepted": counts["accepted"], "target_accepted": settings.n_accept,
        "filter_samples_per_candidate": settings.filter_samples,
        "yield": round(counts["accepted"] / counts["generated"], 4) if counts["generated"] else 0.0,
        "measurements": {
            "generation": {"seconds": round(m.generation_seconds + m.execution_seconds, 3), "units": counts["generated"],
                           "unit": "candidates", "sandbox_seconds": round(m.execution_seconds, 3)},
            "filter": {"seconds": round(m.filter_seconds, 3), "units": m.filter_rollouts, "unit": "filter rollouts"},
            "audit": {"seconds": round(outcome.resolve_seconds, 3), "units": outcome.resolves,
                      "unit": "independent re-solves"},
        },
    }
