"""Gate `feasibility_pilot`: does the full run fit the spec's budget, by a measured pilot?

A representative timing pilot in the full run's regime (client setup from the initialization
checkpoint, real training steps per arm on throwaway clients, evaluation of a held-out slice),
never scaled, projects the full run (arms one after another) plus a recovery reserve against the
budget; the record is published before continuing and the run stops when the comparison cannot fit.

Rules: FEAS-1..FEAS-11 (docs/contract-rules.md).
"""

from __future__ import annotations

from experiment.gates import GateVerdict, RunContext, dispatch
from experiment.rl.steps import feasibility_pilot as rl_step
from experiment.sft.steps import feasibility_pilot as sft_step

GATE = "feasibility_pilot"
STEPS = {"rl": rl_step.run, "sft": sft_step.run}


def run(ctx: RunContext) -> GateVerdict:
    """This gate with the step of the run's family (experiment.gates.dispatch)."""
    return dispatch(GATE, STEPS, ctx)
