"""Gates: names in contract order, the verdict every gate returns, and the context it runs in.

Each gate is a module `experiment.gates.<name>` with `run(ctx: RunContext) -> GateVerdict`.
A gate the plan marks not applicable is never run: `run_gate` returns `not_applicable` with the
plan's reason. A gate whose logic is not built yet returns `failed` ("not implemented: ...").
"""

from __future__ import annotations

import importlib
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Literal

if TYPE_CHECKING:  # imported for type hints only; plan.py imports GATE_ORDER from here
    from experiment.contract.plan import ExecutionPlan
    from experiment.run.service import ServiceTarget
    from experiment.contract.spec import Spec
    from experiment.run.store import RunStore

# contract section 1 / contract-details Part E, with the generation audit before any training pilot
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


def run_side_by_side(kind: str, work: dict[str, Callable[[], Any]]) -> dict[str, Any]:
    """Run independent per-arm work at once (one thread each); each name maps to its result or exception."""

    def safely(fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except BaseException as err:  # reported per arm; the other arms keep going
            return err

    with ThreadPoolExecutor(max_workers=max(1, len(work)), thread_name_prefix=kind) as pool:
        return dict(zip(work, pool.map(safely, work.values())))


@dataclass(eq=False)
class RunContext:
    """Everything a gate needs. `state` carries values downstream (checkpoints, timings, ...)."""

    spec: Spec
    plan: ExecutionPlan
    store: RunStore
    service: ServiceTarget
    requeue_count: int = 0
    state: dict[str, Any] = field(default_factory=dict)
    # (key, done, total): long work reports progress here; the flow shows it in the Prefect UI.
    on_progress: Callable[[str, int, int], None] = lambda key, done, total: None
    # call_service(fn) -> fn(): the flow installs the capacity policy here (contract section 3):
    # capacity refusals are retried with backoff and end in CapacityBlocked past the limit.
    call_service: Callable[[Callable[[], Any]], Any] = lambda fn: fn()
    # run_each(kind, {arm: fn}) -> {arm: result or exception}: per-arm work ("train", "evaluate") side by
    # side. The flow runs each as its own Prefect task run (own progress, own retries).
    run_each: Callable[[str, dict[str, Callable[[], Any]]], dict[str, Any]] = run_side_by_side

    def __repr__(self) -> str:  # keeps Prefect logs short; the store is the record
        return f"RunContext(run_id={self.store.run_id!r}, spec={self.plan.spec_title!r})"


def not_implemented(gate: str, missing: str, next_diagnostic: str | None = None) -> GateVerdict:
    """The verdict of a gate whose logic does not exist yet: failed, never passed."""
    return GateVerdict(
        gate=gate,
        status="failed",
        reasons=[f"not implemented: {missing}"],
        next_diagnostic=next_diagnostic or f"implement experiment/gates/{gate}.py ({missing})",
    )


def run_gate(name: str, ctx: RunContext) -> GateVerdict:
    """Run one gate with its plan entry honoured and its duration measured."""
    planned = ctx.plan.gate(name)
    if not planned.blocks:
        return GateVerdict(gate=name, status="not_applicable", reasons=[planned.reason])
    started = time.monotonic()
    module = importlib.import_module(f"experiment.gates.{name}")
    verdict = module.run(ctx)
    verdict.duration_s = round(time.monotonic() - started, 3)
    return verdict
