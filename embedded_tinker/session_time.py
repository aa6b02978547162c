"""Each session's service time, as the service measured it: ``GET /api/v1/service_time/{session_id}``.

A call is *in service* from the moment the server registered it (its request arrived and was accepted) to the
moment its result was ready (under a service profile: held until the profile's time for it had passed), whatever
the client did meanwhile: when it polled, how fast it read the answer, how long its own CPU kept it from asking.
A session's ``busy_seconds`` is the time during which at least one of its calls was in service (calls that
overlap count once), so a client can read, around work of its own session, what the service spent on it while
other sessions (another gate beside it, another run) use the same server. Calls are attributed by the ids the
stock SDK gives them: a training model's ``{session}:train:{n}`` and a sampling session's
``sample-{session}-{n}``; a request sampled from a bare model path or base model names no session.

The Tinker protocol's answers carry no such time and the production service has no such route (the production
exposure answers 404), so a client must treat it as optional (experiment/service/service_time.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future

TRAINING_MODEL_MARK = ":train:"
SAMPLING_SESSION_PREFIX = "sample-"
BASIS = ("time during which at least one of the session's calls was in service: from its request's arrival to its "
         "result being ready (a service profile's hold included), overlapping calls counted once; the client's "
         "polling and reading excluded")


def session_of(lane: str | None) -> str | None:
    """The session a call's lane (a training model id or a sampling session id) belongs to, or None."""
    if not lane:
        return None
    if TRAINING_MODEL_MARK in lane:
        session, _, seq = lane.rpartition(TRAINING_MODEL_MARK)
        return session if session and seq.isdigit() and ":" not in session else None
    if lane.startswith(SAMPLING_SESSION_PREFIX):
        session, _, seq = lane[len(SAMPLING_SESSION_PREFIX):].rpartition("-")
        return session if session and seq.isdigit() else None
    return None


class _Busy:
    __slots__ = ("in_service", "since", "seconds", "calls")

    def __init__(self) -> None:
        self.in_service = 0
        self.since = 0.0
        self.seconds = 0.0
        self.calls = 0


class SessionClock:
    """Busy seconds of each session's calls in service (threads: calls end on worker and engine threads)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._lock = threading.Lock()
        self._sessions: dict[str, _Busy] = {}

    def started(self, session: str) -> None:
        with self._lock:
            busy = self._sessions.setdefault(session, _Busy())
            busy.calls += 1
            if busy.in_service == 0:
                busy.since = self._clock()
            busy.in_service += 1

    def ended(self, session: str) -> None:
        with self._lock:
            busy = self._sessions[session]
            busy.in_service -= 1
            if busy.in_service == 0:
                busy.seconds += self._clock() - busy.since

    def track(self, lane: str | None, future: Future) -> Future:
        """Count `future` (a call of `lane`) in service until it is done; a lane of no session is not counted."""
        session = session_of(lane)
        if session is not None:
            self.started(session)
            future.add_done_callback(lambda _: self.ended(session))
        return future

    def report(self, session: str) -> dict:
        """The session's busy seconds so far (a call still in service counts up to now), calls and calls in service."""
        with self._lock:
            busy = self._sessions.get(session) or _Busy()
            open_interval = self._clock() - busy.since if busy.in_service else 0.0
            return {"session_id": session, "busy_seconds": round(busy.seconds + open_interval, 6),
                    "calls": busy.calls, "in_service": busy.in_service, "basis": BASIS}
