"""Gate `arm_training`: train every arm of the comparison, resumable step by step.

Every arm (SFT: every run of every arm's LR grid) trains from the proven initial state on the same
prompts or batches in the same order, each as its own task run (`ctx.run_each`); progress is saved
so that a capacity stop, a crash or a re-run continues instead of starting over, with every restore
verified like a creation. Each arm's metrics and final checkpoint are posted as it finishes.

Rules: RUN-1, ADAPT-1, CAP-1, REST-4 (docs/contract-rules.md).
"""

from __future__ import annotations

from experiment.gates import GateVerdict, RunContext, dispatch
from experiment.rl.steps import arm_training as rl_step
from experiment.sft.steps import arm_training as sft_step

GATE = "arm_training"
STEPS = {"rl": rl_step.run, "sft": sft_step.run}


def run(ctx: RunContext) -> GateVerdict:
    """This gate with the step of the run's family (experiment.gates.dispatch)."""
    return dispatch(GATE, STEPS, ctx)
