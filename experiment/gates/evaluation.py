"""Gate `evaluation`: score the base model and every trained arm with one frozen evaluator.

The evaluator (code hash, prompt template, decoding, parser, explicit item ids) is frozen and posted
before any score; then the untrained base and every trained arm are scored, each as its own task
run, with one retained prediction row per item. RL: greedy accuracy on the held-out items. SFT: the
held-out token-mean NLL.

Rules: EVAL-1..EVAL-11, LOSS-1, LOSS-2 (docs/contract-rules.md).
"""

from __future__ import annotations

from experiment.gates import GateVerdict, RunContext, dispatch
from experiment.rl.steps import evaluation as rl_step
from experiment.sft.steps import evaluation as sft_step

GATE = "evaluation"
STEPS = {"rl": rl_step.run, "sft": sft_step.run}


def run(ctx: RunContext) -> GateVerdict:
    """This gate with the step of the run's family (experiment.gates.dispatch)."""
    return dispatch(GATE, STEPS, ctx)
