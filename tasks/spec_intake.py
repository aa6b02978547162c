"""Prefect task for the `spec_intake` gate; the logic is in experiment/gates/spec_intake.py."""

from prefect import task
from prefect.cache_policies import NO_CACHE

from experiment.gates import GateVerdict, RunContext, run_gate


@task(name="spec-intake", cache_policy=NO_CACHE)
def spec_intake(ctx: RunContext) -> GateVerdict:
    return run_gate("spec_intake", ctx)
