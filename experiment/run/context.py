"""The context a gate runs in: typed spec and plan, the run's store, the service, and the run's typed state."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from experiment.run.state import RunState

if TYPE_CHECKING:  # imported for type hints only
    from experiment.contract.plan import ExecutionPlan
    from experiment.contract.spec import Spec
    from experiment.service.target import ServiceTarget
    from experiment.run.store import RunStore


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
    """Everything a gate needs. `state` (RunState) carries what gates hand downstream: the values a resumed
    run restores (checkpoints, notes, ...) and this process's handles (clients, sessions)."""

    spec: Spec
    plan: ExecutionPlan
    store: RunStore
    service: ServiceTarget
    state: RunState = field(default_factory=RunState)
    # (key, done, total): long work reports progress here; the flow shows it in the Prefect UI.
    on_progress: Callable[[str, int, int], None] = lambda key, done, total: None
    # call_service(fn) -> fn(): the flow installs the capacity policy here (CAP-1):
    # capacity refusals are retried with backoff and end in CapacityBlocked past the limit.
    call_service: Callable[[Callable[[], Any]], Any] = lambda fn: fn()
    # wait_for_service(fn) -> fn(): work that waits on the service through many calls at once (an async
    # rollout batch, a pilot, an evaluation), bounded by the run's answer deadline without capacity retries
    # (experiment.service.capacity.answer_bounded; the flow installs it). Every service wait goes through one of the two.
    wait_for_service: Callable[[Callable[[], Any]], Any] = lambda fn: fn()
    # run_each(kind, {arm: fn}) -> {arm: result or exception}: per-arm work ("train", "evaluate") side by
    # side. The flow runs each as its own Prefect task run (own progress, own retries).
    run_each: Callable[[str, dict[str, Callable[[], Any]]], dict[str, Any]] = run_side_by_side

    def __repr__(self) -> str:  # keeps Prefect logs short; the store is the record
        return f"RunContext(run_id={self.store.run_id!r}, spec={self.plan.spec_title!r})"
