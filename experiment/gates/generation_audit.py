"""Gate `generation_audit`: are the self-generated training tasks sound, before any update on them?

Tasks are generated, run in the sandbox and filtered, frozen as evidence with the full evaluation
set, and a deterministic sample is re-solved blind by an independent solver; label errors and
evaluation overlaps must stay within the spec's limits (repaired, re-frozen and re-audited
otherwise). Runs before every pilot, for any spec the plan applies it to; the one step is the
self-generated-tasks family's.

Rules: GA-1..GA-9 (docs/contract-rules.md).
"""

from __future__ import annotations

from experiment.gates import GateVerdict, RunContext
from experiment.selfgen.steps import generation_audit as selfgen_step

GATE = "generation_audit"


def run(ctx: RunContext) -> GateVerdict:
    """The generation audit, the same step for every spec it applies to (experiment/selfgen/steps/)."""
    return selfgen_step.run(ctx)
