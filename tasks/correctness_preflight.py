"""Prefect task for the `correctness_preflight` gate; the logic is in experiment/gates/correctness_preflight.py."""

from prefect import task
from prefect.cache_policies import NO_CACHE

from experiment.gates import GateVerdict, RunContext, run_gate


@task(name="correctness-preflight", cache_policy=NO_CACHE)
def correctness_preflight(ctx: RunContext) -> GateVerdict:
    return run_gate("correctness_preflight", ctx)
