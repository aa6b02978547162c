"""Prefect task for the `generation_audit` gate; the logic is in experiment/gates/generation_audit.py."""

from prefect import task
from prefect.cache_policies import NO_CACHE

from experiment.gates import GateVerdict, RunContext, run_gate


@task(name="generation-audit", cache_policy=NO_CACHE)
def generation_audit(ctx: RunContext) -> GateVerdict:
    return run_gate("generation_audit", ctx)
