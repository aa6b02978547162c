"""Prefect task for the `feasibility_pilot` gate; the logic is in experiment/gates/feasibility_pilot.py."""

from prefect import task
from prefect.cache_policies import NO_CACHE

from experiment.gates import GateVerdict, RunContext, run_gate


@task(name="feasibility-pilot", cache_policy=NO_CACHE)
def feasibility_pilot(ctx: RunContext) -> GateVerdict:
    return run_gate("feasibility_pilot", ctx)
