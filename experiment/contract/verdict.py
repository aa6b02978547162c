"""Gate names in contract order and the verdict every gate returns (no gate logic here)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

# RUN-1, with the generation audit before any training pilot (GA-9)
GATE_ORDER = (
    "spec_intake",
    "preflight_probe",
    "generation_audit",
    "correctness_preflight",
    "restoration_preflight",
    "feasibility_pilot",
    "activation_gate",
    "arm_training",  # LR grids are part of arm training
    "evaluation",
    "decision",
)

GateStatus = Literal["passed", "failed", "not_applicable"]


@dataclass
class GateVerdict:
    gate: str
    status: GateStatus
    reasons: list[str] = field(default_factory=list)
    measured: dict[str, Any] = field(default_factory=dict)
    duration_s: float = 0.0
    next_diagnostic: str | None = None
    # JSON values later gates need (e.g. the initialization checkpoint). The flow merges them into
    # RunContext.state and records them, so a resumed run can skip this gate once it passed.
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        """A failed gate stops everything downstream."""
        return self.status == "failed"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def not_implemented(gate: str, missing: str, next_diagnostic: str | None = None) -> GateVerdict:
    """The verdict of a gate whose logic does not exist yet: failed, never passed."""
    return GateVerdict(
        gate=gate,
        status="failed",
        reasons=[f"not implemented: {missing}"],
        next_diagnostic=next_diagnostic or f"implement the step in experiment.gates.GATES[{gate!r}] ({missing})",
    )
