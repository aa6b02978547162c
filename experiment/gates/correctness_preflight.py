"""Gate `correctness_preflight`: is the run's new loss or optimizer path correct, before any full sweep?

The path is measured on one fixed input against an independent reference under the spec's
tolerances, fixed before measuring, with the probe scripts and the fixed input kept as evidence; a
missing or failed check, or a revision that is not pinned, stops the run before full training.
RL (GS1): the loss path against the stock cookbook GRPO path and a float64 reference. SFT
(TriMuon): the forked optimizer's update against the independent float64 TriMuon reference.

Rules: CORR-1..CORR-9 (docs/contract-rules.md).
"""

from __future__ import annotations

from experiment.gates import GateVerdict, RunContext, dispatch
from experiment.rl.steps import correctness_preflight as rl_step
from experiment.sft.steps import correctness_preflight as sft_step

GATE = "correctness_preflight"
STEPS = {"rl": rl_step.run, "sft": sft_step.run}


def run(ctx: RunContext) -> GateVerdict:
    """This gate with the step of the run's family (experiment.gates.dispatch)."""
    return dispatch(GATE, STEPS, ctx)
