"""What a pilot run cost the service: the service's own reported time where it reports one, else the client's CPU
contention to take off the client-side time (experiment.stats.feasibility.TimeScale says how each is used).

- The service's own time: ``GET /api/v1/service_time/{session}``, the busy seconds of one session's calls as the
  service measured them (embedded_tinker/session_time.py). The embedded backend serves it; the Tinker protocol's
  answers carry no time, and the production service has no such route (404, and the embedded backend's
  production exposure answers the same), so it is read as optional: a service that does not answer it is not
  asked again, and a reading that fails counts as none.
- The client's contention: how long this process's threads waited on a run queue (``/proc/self/task/*/schedstat``,
  the second field, nanoseconds), the largest wait of one thread over the run.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx

from experiment.service.target import ServiceTarget

SERVICE_TIME_PATH = "/api/v1/service_time/"
READ_TIMEOUT_SECONDS = 5.0
TASKS = Path("/proc/self/task")

T = TypeVar("T")


def session_id_of(service_client: Any) -> str | None:
    """The SDK session id of a stock ``tinker.ServiceClient`` (its holder's), None when it does not say."""
    holder = getattr(service_client, "holder", None)
    try:
        return holder.get_session_id() if holder is not None else None
    except Exception:  # noqa: BLE001 - an SDK without it: no session to ask about
        return None


class SessionServiceTime:
    """The service's busy seconds for one session so far (None: the service reports none)."""

    def __init__(self, target: ServiceTarget, session_id: str | None, get: Callable[..., Any] = httpx.get,
                 fork: bool = False):
        self.target = target
        self.session_id = session_id
        self.fork = fork  # the session's client talks to the fork (its credentials)
        self._get = get
        self.unsupported = session_id is None or target.base_url is None

    def busy_seconds(self) -> float | None:
        if self.unsupported:
            return None
        url = self.target.base_url.rstrip("/") + SERVICE_TIME_PATH + str(self.session_id)
        try:
            response = self._get(url, headers=self.target.request_headers(self.fork), timeout=READ_TIMEOUT_SECONDS)
        except httpx.HTTPError:
            return None
        if response.status_code in (404, 405, 501):  # no such route: Spindle, the production exposure
            self.unsupported = True
            return None
        try:
            value = response.json().get("busy_seconds") if response.status_code == 200 else None
        except (ValueError, AttributeError):
            return None
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def runqueue_waits(tasks: Path = TASKS) -> dict[str, float] | None:
    """Seconds each thread of this process has waited on a run queue so far; None where the kernel does not say."""
    if not tasks.is_dir():
        return None
    waits = {}
    for task in tasks.iterdir():
        try:
            waits[task.name] = int((task / "schedstat").read_text().split()[1]) / 1e9
        except (OSError, IndexError, ValueError):
            continue  # a thread that ended meanwhile
    return waits or None


def largest_wait(before: dict[str, float], after: dict[str, float]) -> float:
    """The most one thread waited on a run queue between two readings (a thread started meanwhile from 0)."""
    return max((wait - before.get(thread, 0.0) for thread, wait in after.items()), default=0.0)


def measured_run(run: Callable[[], T], service_time: SessionServiceTime | None,
                 read_waits: Callable[[], dict[str, float] | None] = runqueue_waits) -> tuple[T, float | None, float | None]:
    """`run()`, the service's busy seconds for the session over it (None: the service reports none) and the most one
    of this client's threads waited on a run queue over it (None: the kernel does not say)."""
    service_before = service_time.busy_seconds() if service_time is not None else None
    waits_before = read_waits()
    result = run()
    waits_after = read_waits()
    service_after = service_time.busy_seconds() if service_time is not None and service_before is not None else None
    service = service_after - service_before if service_before is not None and service_after is not None else None
    wait = largest_wait(waits_before, waits_after) if waits_before is not None and waits_after is not None else None
    return result, service, wait

