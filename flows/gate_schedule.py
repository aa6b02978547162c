"""One wave of gates (experiment.contract.schedule.gate_waves, `--overlap-gates`) as Prefect task runs side by side.

Every gate of the wave is submitted at once (`task.submit`, the flow's task runner). The first outcome that ends
the run (a failed verdict, a capacity refusal, a crash) stops the others: from then on each of their service
calls and waits (`RunContext.call_service`, `wait_for_service`, through which every service wait goes) raises
GateStoppedBeside, so they end at their next call, and the wave returns only when every gate of it has ended:
nothing is left running. The flow then records the wave in contract order up to the gate that ended the run; a
gate that ran beside it and is listed after it (or was stopped) is recorded as a `gate_beside_stop` event, not as
a gate (it would not have run one gate at a time; the record's gate trail stops at the failure).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from prefect.futures import as_completed
from prefect.utilities.annotations import quote

from experiment.gates import GateVerdict, RunContext


class GateStoppedBeside(Exception):
    """A gate stopped at a service call because a gate beside it in its wave ended the run."""


def ends_the_run(outcome: Any) -> bool:
    """A failed verdict, a capacity refusal (a task's non-verdict value) or an exception: no later gate starts."""
    return not isinstance(outcome, GateVerdict) or outcome.failed


@contextmanager
def stopped_when_set(ctx: RunContext, stop: threading.Event) -> Iterator[None]:
    """While inside: every service call and wait of `ctx` raises GateStoppedBeside once `stop` is set."""
    call, wait = ctx.call_service, ctx.wait_for_service

    def guarded(through):
        def go(fn):
            if stop.is_set():
                raise GateStoppedBeside("stopped: a gate beside it in its wave ended the run")
            return through(fn)
        return go

    ctx.call_service, ctx.wait_for_service = guarded(call), guarded(wait)
    try:
        yield
    finally:
        ctx.call_service, ctx.wait_for_service = call, wait


def run_wave(tasks: Mapping[str, Any], wave: tuple[str, ...], ctx: RunContext,
             wait_for: list | None) -> tuple[dict[str, Any], list]:
    """The gates of `wave` side by side, each its own task run. Returns every gate's outcome (a verdict, a capacity
    refusal, or the exception its task raised), in wave order, once all have ended, and their futures (the next
    wave's `wait_for`: the UI draws the waves)."""
    stop = threading.Event()
    outcomes: dict[str, Any] = {}
    with stopped_when_set(ctx, stop):
        futures = {tasks[name].submit(quote(ctx), wait_for=wait_for): name for name in wave}
        try:
            for future in as_completed(list(futures)):
                name = futures[future]
                try:
                    outcomes[name] = future.result()
                except Exception as err:  # noqa: BLE001 - the flow settles it (crash, capacity, storage) in order
                    outcomes[name] = err
                if ends_the_run(outcomes[name]):
                    stop.set()
        finally:
            stop.set()  # an interrupt of the flow: the gates still running stop at their next service call
    return {name: outcomes[name] for name in wave}, list(futures)


def record_beside_stop(ctx: RunContext, gate: str, outcome: Any, ended_by: str) -> None:
    """A gate that ran beside the gate that ended the run, listed after it or stopped by it: an event, no gate row."""
    if isinstance(outcome, GateVerdict):
        status, reasons, seconds = outcome.status, list(outcome.reasons), outcome.duration_s
    else:
        status = "stopped" if isinstance(outcome, GateStoppedBeside) else "ended without a verdict"
        reasons, seconds = [f"{type(outcome).__name__}: {outcome}"], None
    ctx.store.append_event("gate_beside_stop", gate=gate, status=status, ended_by=ended_by, reasons=reasons,
                           duration_s=seconds)
