"""Gate `preflight_probe`: does the service accept every arm exactly as the spec states it?

For each arm: a training client with the arm's optimizer, rank and seed, one forward_backward with
the arm's loss on one example and one optim_step; both must succeed with a finite loss and the
optimizer family the server reports must be the one requested. A rejected optimizer means the arm
needs a fork: it is never swapped silently. Probe clients live in a setup session finished afterwards.

Rules: RUN-2 (docs/contract-rules.md).
"""

from __future__ import annotations

from experiment.gates import GateVerdict, RunContext, dispatch
from experiment.rl.steps import preflight_probe as rl_step
from experiment.sft.steps import preflight_probe as sft_step

GATE = "preflight_probe"
STEPS = {"rl": rl_step.run, "sft": sft_step.run}


def run(ctx: RunContext) -> GateVerdict:
    """This gate with the step of the run's family (experiment.gates.dispatch)."""
    return dispatch(GATE, STEPS, ctx)
