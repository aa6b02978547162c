"""Gate logic for supervised fine-tuning specs (training_type "sft", e.g. the TriMuon spec).

Each gate module in `experiment/gates/` hands an SFT spec to the function of the same name
here. Until a function is built it fails loudly with "not implemented" (never passes).
"""

from __future__ import annotations

from experiment.gates import GateVerdict, RunContext, not_implemented


def preflight_probe(ctx: RunContext) -> GateVerdict:
    return not_implemented("preflight_probe", "SFT probe (one cross_entropy step per arm's optimizer)")


def correctness_preflight(ctx: RunContext) -> GateVerdict:
    return not_implemented("correctness_preflight", "optimizer-path update errors against a pinned reference")


def restoration_preflight(ctx: RunContext) -> GateVerdict:
    return not_implemented("restoration_preflight", "SFT restoration preflight")


def feasibility_pilot(ctx: RunContext) -> GateVerdict:
    return not_implemented("feasibility_pilot", "SFT timing pilot")


def arm_training(ctx: RunContext) -> GateVerdict:
    return not_implemented("arm_training", "SFT loop over the LR grid")


def evaluation(ctx: RunContext) -> GateVerdict:
    return not_implemented("evaluation", "held-out token-mean NLL (loss_eval)")
