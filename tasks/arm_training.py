"""Prefect task for the `arm_training` gate; the logic is in experiment/gates/arm_training.py."""

from prefect import task
from prefect.cache_policies import NO_CACHE

from experiment.gates import GateVerdict, RunContext, run_gate


@task(name="arm-training", cache_policy=NO_CACHE)
def arm_training(ctx: RunContext) -> GateVerdict:
    return run_gate("arm_training", ctx)
