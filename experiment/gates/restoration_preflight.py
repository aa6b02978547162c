"""Gate `restoration_preflight`: does every arm start from one proven initial state?

One immutable initialization checkpoint is saved and every arm's (SFT: every training run's) client
is created from it; adapter hashes or the load responses, optimizer checks from server responses
and initial outputs on a fixed batch must agree, and a create-save-restore update must reproduce the
uninterrupted client's. The arms' clients go on to arm training.

Rules: REST-1..REST-10 (docs/contract-rules.md).
"""

from __future__ import annotations

from experiment.gates import GateVerdict, RunContext, dispatch
from experiment.rl.steps import restoration_preflight as rl_step
from experiment.sft.steps import restoration_preflight as sft_step

GATE = "restoration_preflight"
STEPS = {"rl": rl_step.run, "sft": sft_step.run}


def run(ctx: RunContext) -> GateVerdict:
    """This gate with the step of the run's family (experiment.gates.dispatch)."""
    return dispatch(GATE, STEPS, ctx)
