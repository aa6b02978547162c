"""Gate `generation_audit`: not built yet; it fails loudly instead of passing."""

from experiment.gates import GateVerdict, RunContext, not_implemented


def run(ctx: RunContext) -> GateVerdict:
    return not_implemented(
        "generation_audit",
        "freeze candidate and eval files, sample deterministically, blind re-solve, label-error and overlap counts",
        next_diagnostic="build the generated-task audit (contract section 10)",
    )
