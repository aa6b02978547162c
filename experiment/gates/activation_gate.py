"""Gate `activation_gate`: is the treatment really active in the full-run regime, before full training?

Every check of the spec's `activation_gate.checks` is measured on a short pilot in the exact
full-run regime, on throwaway clients restored from the initialization checkpoint; ranges come from
the spec and never change, and only a calibration the spec pre-registers may be tried. RL (GS1):
kernel-baseline activity and the pre-registered bandwidth calibration. Self-generated tasks: each
arm on its intended data, live reward groups, no evaluation overlap. (Not applicable to SFT specs.)

Rules: ACT-1, ACT-2 (docs/contract-rules.md).
"""

from __future__ import annotations

from experiment.gates import GateVerdict, RunContext, dispatch
from experiment.rl.steps import activation_gate as rl_step
from experiment.selfgen.steps import activation_gate as selfgen_step

GATE = "activation_gate"
STEPS = {"rl": rl_step.run, "selfgen": selfgen_step.run}


def run(ctx: RunContext) -> GateVerdict:
    """This gate with the step of the run's family (experiment.gates.dispatch)."""
    return dispatch(GATE, STEPS, ctx)
