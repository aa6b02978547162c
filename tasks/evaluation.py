"""Prefect task for the `evaluation` gate; the logic is in experiment/gates/evaluation.py."""

from prefect import task
from prefect.cache_policies import NO_CACHE

from experiment.gates import GateVerdict, RunContext, run_gate


@task(name="evaluation", cache_policy=NO_CACHE)
def evaluation(ctx: RunContext) -> GateVerdict:
    return run_gate("evaluation", ctx)
