"""Prefect task for the `decision` gate; the logic is in experiment/gates/decision.py."""

from prefect import task
from prefect.cache_policies import NO_CACHE

from experiment.gates import GateVerdict, RunContext, run_gate


@task(name="decision", cache_policy=NO_CACHE)
def decision(ctx: RunContext) -> GateVerdict:
    return run_gate("decision", ctx)
