"""RunState: what the gates of one run hand to later gates, every field declared once.

Each field says which gate produces it and which gates read it (`producer`, `readers` in the
field's metadata; `RunState.describe()` lists them). Two kinds:

- persisted: JSON values a gate hands on in its verdict (`GateVerdict.state`, a dict of these
  fields). The store records them with the gate's event; a resumed run gets them back for every
  gate it reuses (`RunStore.passed_gates()` -> `RunState.receive`), so they must stay
  JSON-serialisable.
- live: handles of this process (clients, sessions, the step counter). Never persisted: a resumed
  run recreates what it needs (clients from the saved checkpoints, steps from the store's tables).

A gate may also set a field directly while it runs (its own later steps read it); what a resumed
run needs is always in the verdict's `state` too.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Any, Protocol

from experiment.data import TaskItem


class ServiceSession(Protocol):
    """A training-service session this run opened (experiment.run.clients.ClientSession, a layer above,
    which imports this module): the state holds it for the steps and it is closed at the run's end."""

    purpose: str

    def close(self, status: str = "success") -> bool: ...

PERSISTED, LIVE = "persisted", "live"


def _declared(kind: str, producer: str, readers: str, default: Any = MISSING, factory: Any = MISSING) -> Any:
    metadata = {"kind": kind, "producer": producer, "readers": readers}
    if factory is not MISSING:
        return field(default_factory=factory, metadata=metadata)
    return field(default=None if default is MISSING else default, metadata=metadata)


def persisted(producer: str, readers: str, **default: Any) -> Any:
    """A field a gate hands on in its verdict and a resumed run restores (JSON values only)."""
    return _declared(PERSISTED, producer, readers, **default)


def live(producer: str, readers: str, **default: Any) -> Any:
    """A handle of this process; never persisted."""
    return _declared(LIVE, producer, readers, **default)


@dataclass(eq=False)
class RunState:
    """The values one run's gates hand on (persisted) and the handles they share (live)."""

    # ------------------------------------------------------------------ persisted (GateVerdict.state)
    served_model: str | None = persisted(
        "spec_intake", "every gate that creates a client or samples the base model")
    tokenizer_id: str | None = persisted(
        "preflight_probe (RL)", "evaluation (RL), generation_audit (renderer of the served model, offline)")
    service_routing: dict[str, Any] | None = persisted(
        "preflight_probe (SFT)", "decision (SFT: the routing said in the reasoning)")
    correctness_note: str | None = persisted(
        "correctness_preflight (RL)", "decision (a limit of the verdict)")
    init_checkpoint: str | None = persisted(
        "restoration_preflight", "feasibility_pilot, activation_gate, arm_training, evaluation (SFT)")
    seed_init_checkpoints: dict[str, str] = persisted(
        "restoration_preflight (RL: scheduled seed -> that seed's initialization checkpoint)", "arm_training (RL)",
        factory=dict)
    restoration_note: str | None = persisted(
        "restoration_preflight (only when an optimizer check stays unverified)", "decision (SFT)")
    generated_task_rows: list[dict[str, Any]] = persisted(
        "generation_audit (the accepted tasks, TaskItem fields)",
        "activation_gate, feasibility_pilot, arm_training (through generated_tasks())", factory=list)
    generated_tasks_file: str | None = persisted(
        "generation_audit (the frozen dataset file's evidence name)", "none in the run (the record names it)")
    generation_feasibility: dict[str, Any] | None = persisted(
        "generation_audit (measured generation, filter and audit work)", "feasibility_pilot (RL)")
    kernel_bandwidth: float | None = persisted(
        "activation_gate (RL: the bandwidth the pilot passed with)", "arm_training (RL)")
    final_checkpoints: dict[str, str] = persisted(
        "arm_training (arm or run -> sampler checkpoint)", "evaluation", factory=dict)
    final_states: dict[str, str] = persisted(
        "arm_training (SFT: run -> final training state)", "evaluation (SFT)", factory=dict)
    evaluator_id: str | None = persisted(
        "evaluation", "none in the run (the record carries it)")
    prediction_files: dict[str, str] = persisted(
        "evaluation (RL: arm -> retained predictions file)", "decision (RL)", factory=dict)
    heldout_nll: dict[str, float] = persisted(
        "evaluation (SFT: target -> held-out NLL)", "none in the run (the record carries it)", factory=dict)

    # ------------------------------------------------------------------ live (never persisted)
    comparison_steps_completed: int = live(
        "arm_training (steps of the comparison done, resumed ones included)",
        "the flow's capacity policy and capacity stop (CAP-1: the real step count)", default=0)
    arm_clients: dict[str, Any] = live(
        "restoration_preflight (arm or run -> its proven training client)",
        "arm_training, evaluation (SFT: the trained clients)", factory=dict)
    arms_session: ServiceSession | None = live(
        "restoration_preflight (the session of the arms' clients)", "arm_training")
    sessions: list[ServiceSession] = live(
        "experiment.run.clients.open_session (every session this run opened)",
        "experiment.run.clients.release_sessions (run end, capacity stop)", factory=list)

    def receive(self, handed_on: dict[str, Any]) -> None:
        """Take the persisted values a gate handed on (its verdict's `state`, or a reused gate's on resume)."""
        unknown = sorted(set(handed_on) - set(persisted_fields()))
        if unknown:
            raise ValueError(f"a gate handed on undeclared RunState values {unknown}: declare them in "
                             "experiment/run/state.py")
        for name, value in handed_on.items():
            setattr(self, name, value)

    def generated_tasks(self) -> list[TaskItem]:
        """The audited generated training tasks, in generation order ([] before the audit passed)."""
        return [TaskItem(**row) for row in self.generated_task_rows]

    @staticmethod
    def describe() -> list[dict[str, str]]:
        """Every field with its kind, producer and readers (documentation, checked by a test)."""
        return [{"field": f.name, **f.metadata} for f in fields(RunState)]


def persisted_fields() -> list[str]:
    """The names of the fields a gate may hand on in its verdict (and a resumed run restores)."""
    return [f.name for f in fields(RunState) if f.metadata["kind"] == PERSISTED]
