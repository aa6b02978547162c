"""Prefect task for the `preflight_probe` gate; the logic is in experiment/gates/preflight_probe.py."""

from prefect import task
from prefect.cache_policies import NO_CACHE

from experiment.gates import GateVerdict, RunContext, run_gate


@task(name="preflight-probe", cache_policy=NO_CACHE)
def preflight_probe(ctx: RunContext) -> GateVerdict:
    return run_gate("preflight_probe", ctx)
