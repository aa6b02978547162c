"""Prefect task for the `restoration_preflight` gate; the logic is in experiment/gates/restoration_preflight.py."""

from prefect import task
from prefect.cache_policies import NO_CACHE

from experiment.gates import GateVerdict, RunContext, run_gate


@task(name="restoration-preflight", cache_policy=NO_CACHE)
def restoration_preflight(ctx: RunContext) -> GateVerdict:
    return run_gate("restoration_preflight", ctx)
