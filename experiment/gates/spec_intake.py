"""Gate `spec_intake`: what will this run execute, on which model (RUN-1, GEN-6)?

The spec and plan were parsed before the run was created (a bad spec never gets a run). Here the
run records what it will execute, before any training:
- the spec file, the companion plan file (a spec revision) and the execution plan, as evidence;
- the served model, resolved against the service: outside a rehearsal the spec's model or the gate fails
  (a substitute would test another hypothesis); in a rehearsal a substitute is a `model` deviation, said
  in `summary`; arms planned on a fork while no fork is
  deployed (the embedded backend) are a `model` deviation too;
- a `status: running` RESULT update carrying every deviation.
"""

from __future__ import annotations

import json
from pathlib import Path

from experiment.contract.result import fork_deviation, intake_update, model_deviation
from experiment.contract.verdict import GateVerdict
from experiment.data import unreadable_data
from experiment.report.code_revision import ENTRY_POINT, PIPELINE_CODE_EVIDENCE, code_revision, pipeline_code_bundle
from experiment.run.context import RunContext
from experiment.service.capacity import is_capacity_refusal
from experiment.service.target import closest_served_model, not_served


def run(ctx: RunContext) -> GateVerdict:
    _record_spec_evidence(ctx)
    try:
        served = ctx.call_service(ctx.service.served_models)
    except Exception as err:  # any failure to reach the service stops here, named, with no secrets
        if is_capacity_refusal(err):
            raise  # busy, or stopped answering: the flow stops the run resumable (CAP-1), no verdict on the spec
        return _service_failure(ctx, f"could not list served models at {ctx.service.describe()['base_url']}: "
                                     f"{type(err).__name__}: {err}")
    if not served:
        return _service_failure(ctx, "the service lists no served models")
    if ctx.plan.base_model not in served and not ctx.plan.rehearsal:  # a substitute tests another hypothesis
        return _service_failure(ctx, not_served(ctx.plan.base_model, f"the service at "
                                                f"{ctx.service.describe()['base_url']}", served))
    unreadable = unreadable_data(ctx.spec, rehearse=bool(ctx.plan.rehearsal))  # a deployment run's check (the CLI's
    if unreadable:                                                              # is before the claim)
        return GateVerdict(gate="spec_intake", status="failed", reasons=[unreadable],
                           next_diagnostic="make the spec's data readable where the run runs, or name local files")
    model, deviation_reason = closest_served_model(ctx.plan.base_model, served)
    deviations = [model_deviation(ctx.plan.base_model, model, deviation_reason)] if deviation_reason else []
    fork = fork_deviation(ctx.plan, ctx.service.kind)
    deviations += [fork] if fork else []
    earlier = ctx.store.read_result().get("deviations", [])  # e.g. a rehearsal's substitutions, posted at creation
    merged = earlier + [d for d in deviations if d not in earlier]
    update = intake_update(ctx.plan, model, merged)  # a rehearsal's summary gets its mark from the store
    if not ctx.plan.gate("correctness_preflight").blocks:  # stock-only execution (CORR-1)
        update["correctness_preflight"] = {"required": False, "paths": []}
    ctx.store.update_result(**update)
    ctx.state.served_model = model
    return GateVerdict(
        gate="spec_intake",
        status="passed",
        reasons=[deviation_reason or f"{model} is served"],
        measured={
            "served_model": model,
            "spec_sha256": ctx.plan.spec_sha256,
            "spec_revision": ctx.plan.spec_revision,
            "deviations": len(deviations),
            "service": ctx.service.describe(),
        },
        state={"served_model": model},
    )


def _service_failure(ctx: RunContext, reason: str) -> GateVerdict:
    return GateVerdict(
        gate="spec_intake",
        status="failed",
        reasons=[reason],
        next_diagnostic="check that the service answers get_server_capabilities (backend URL and credentials)",
    )


def _record_spec_evidence(ctx: RunContext) -> None:
    source = ctx.spec.source
    ctx.store.add_evidence("spec.json", "spec", Path(source.path).read_bytes(), source=source.path)
    if source.revision:
        ctx.store.add_evidence("spec-revision.plan.json", "spec_revision", Path(source.revision.path).read_bytes(),
                               source=source.revision.path)
    ctx.store.add_evidence("code-revision.json", "code_revision", json.dumps(code_revision(), indent=2, sort_keys=True))
    ctx.store.add_evidence(PIPELINE_CODE_EVIDENCE, "script", pipeline_code_bundle(ctx.service.kind == "embedded"),
                           source=ENTRY_POINT)
    plan_json = json.dumps(ctx.plan.to_dict(), indent=2, sort_keys=True)
    ctx.store.add_evidence("execution-plan.json", "effective_config", plan_json)
