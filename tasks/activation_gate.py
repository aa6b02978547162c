"""Prefect task for the `activation_gate` gate; the logic is in experiment/gates/activation_gate.py."""

from prefect import task
from prefect.cache_policies import NO_CACHE

from experiment.gates import GateVerdict, RunContext, run_gate


@task(name="activation-gate", cache_policy=NO_CACHE)
def activation_gate(ctx: RunContext) -> GateVerdict:
    return run_gate("activation_gate", ctx)
