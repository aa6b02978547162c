"""SIGINT and SIGTERM during a run: the run unwinds, its record says it was interrupted, and a re-run resumes.

`interrupts_raised()` (the CLI, around the flow) turns both signals into `RunInterrupted`, a
BaseException like KeyboardInterrupt; SIGTERM's default would end the process at once and leave
the record "running". Inside a flow run Prefect puts its own SIGTERM handler first (it raises
`TerminationSignal`, then sends the signal again to the handler before it); `stop_reason` names
the signal whichever of them arrives, and a write the machine refused (a full disk) as such.
"""

from __future__ import annotations

import signal
from contextlib import contextmanager
from typing import Any, Iterator

from experiment.run.store import storage_failure

INTERRUPTING_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class RunInterrupted(BaseException):
    """SIGINT or SIGTERM arrived while a run was in progress (nothing that handles ordinary errors swallows it)."""

    def __init__(self, signal_number: int):
        self.signal_number = signal_number
        self.signal_name = signal.Signals(signal_number).name
        super().__init__(self.signal_name)


def interrupting_signal(err: BaseException) -> int | None:
    """The signal number when `err` is how SIGINT or SIGTERM surfaced (ours, Python's, Prefect's), else None."""
    if isinstance(err, RunInterrupted):
        return err.signal_number
    if isinstance(err, KeyboardInterrupt):
        return int(signal.SIGINT)
    number = getattr(err, "signal", None)  # prefect.exceptions.TerminationSignal
    return number if isinstance(number, int) and number in {int(each) for each in INTERRUPTING_SIGNALS} else None


def stop_reason(err: BaseException) -> str:
    """Why a run stopped outside any gate's verdict, in the words its record keeps."""
    number = interrupting_signal(err)
    if number is not None:
        return f"interrupted by {signal.Signals(number).name}"
    if storage_failure(err):
        return f"stopped: a write failed ({err.strerror}{f': {err.filename}' if err.filename else ''}); free space and re-run"
    return f"crashed: {type(err).__name__}: {err}"


@contextmanager
def interrupts_raised() -> Iterator[None]:
    """While the block runs, SIGINT and SIGTERM raise RunInterrupted in the main thread; the handlers
    before are restored after. A second signal while the first unwinds is ignored, so the record can
    still be written."""

    def raise_interrupted(number: int, frame: Any) -> None:
        for each in INTERRUPTING_SIGNALS:
            signal.signal(each, signal.SIG_IGN)
        raise RunInterrupted(number)

    before = {number: signal.getsignal(number) for number in INTERRUPTING_SIGNALS}
    for number in before:
        signal.signal(number, raise_interrupted)
    try:
        yield
    finally:
        for number, handler in before.items():
            signal.signal(number, handler)
