"""A run whose ground goes away mid-run ends at once with one line, exit 2, and never hangs (issue 47, S5 and O3).

Two things a CLI run stands on can vanish while its flow runs:
- its run directory (deleted by hand): the store's next write fails; left to the flow, each layer the error
  crossed printed a traceback (four), the run exited 3 and the index kept a "running" row for a run that no
  longer exists;
- its Prefect server (the temporary one killed, or the configured one stopped): the flow's next state update
  retried for about 100 s, the gate then recorded a crash (the run "already finished (failed)", needing
  --fresh), and the process hung at exit until Prefect came back, its log and event workers draining to it.

`RunGuard` watches both from a daemon thread while the flow runs (every POLL_S), and the store tells it at once
when a write finds the directory gone (experiment.run.store.when_directory_gone). Either way the guard writes
what can be written and ends the process there (os._exit, as a kill would, after one line): the flow and
Prefect's workers are not unwound, since each step of that unwinding would wait on the server that is gone.
- directory gone: the run's index row is removed (nothing of the run is left to resume or show);
- Prefect server lost (GET /health refused for PREFECT_LOST_AFTER_S, 30 s, or only timing out for six times as
  long: a loaded machine's server may answer slowly): the record gets its interruption
  entry (failed, resumable), and running the same command again once a server answers resumes the run.
Child servers go with the process (the parent-death signal, flows.lifetime).
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
import urllib.request
from typing import Callable

from experiment.contract.text import printable
from experiment.run.store import RunDirectoryGone, RunStore, when_directory_gone
from flows.backend_url import public_backend_url

POLL_S = 2.0
PREFECT_LOST_AFTER_S = 30.0  # a Prefect server that has refused its health check this long is gone ...
SLOW_ANSWER_FACTOR = 6  # ... and one that only timed out, this many times as long (a loaded machine's may be slow)
HEALTH_ANSWER_S = 5.0
EXIT_STOPPED = 2  # as a backend lost mid-run: the run's environment failed, not the run (flows.run.EXIT_BAD_INPUT)


def end_process(code: int) -> None:
    """Flush the console and end the process now (no unwinding, no atexit handlers, no worker drains)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed console: nothing more to say
            pass
    os._exit(code)


def prefect_health_problem(api_url: str) -> tuple[str, bool] | None:
    """(why GET <api_url>/health did not answer 200, whether it only timed out), or None when it answered."""
    try:
        with urllib.request.urlopen(api_url.rstrip("/") + "/health", timeout=HEALTH_ANSWER_S) as answer:
            return None if answer.status == 200 else (f"HTTP {answer.status}", False)
    except (OSError, ValueError) as err:
        reason = getattr(err, "reason", err)
        slow = isinstance(reason, TimeoutError)
        return (getattr(reason, "strerror", None) or str(reason) or type(err).__name__), slow


class RunGuard:
    """Watches a claimed run's directory and its Prefect server while the flow runs (module doc).

    `prefect_api_url`: the server the flow reports to (None: none to watch). `server_home`: a temporary server's
    own directory, removed when the guard ends the process (the server, killed, could not). `end`: how the
    process ends (end_process; tests replace it)."""

    def __init__(self, store: RunStore, plan, prefect_api_url: str | None, server_home: str | None = None,
                 end: Callable[[int], None] = end_process, poll_s: float = POLL_S,
                 lost_after_s: float = PREFECT_LOST_AFTER_S):
        self.store, self.plan = store, plan
        self.prefect_api_url = prefect_api_url
        self.server_home = server_home
        self.end = end
        self.poll_s, self.lost_after_s = poll_s, lost_after_s
        self._stopped = threading.Event()
        self._tripped = threading.Lock()
        self._thread = threading.Thread(target=self._watch, name="run-guard", daemon=True)

    def __enter__(self) -> RunGuard:
        when_directory_gone(self.store.run_dir, self.directory_gone)
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stopped.set()
        when_directory_gone(self.store.run_dir, None)
        self._thread.join(timeout=HEALTH_ANSWER_S + self.poll_s)

    def _watch(self) -> None:
        failing_since, last = None, ""
        while not self._stopped.wait(self.poll_s):
            if not self.store.run_dir.is_dir():
                self.directory_gone(None)
                return
            if self.prefect_api_url is None:
                continue
            problem = prefect_health_problem(self.prefect_api_url)
            if problem is None:
                failing_since = None
                continue
            now = time.monotonic()
            (last, slow), failing_since = problem, failing_since or now
            bound = self.lost_after_s * (SLOW_ANSWER_FACTOR if slow else 1)
            if now - failing_since >= bound and not self._stopped.is_set():
                self.prefect_lost(last, now - failing_since)
                return

    def directory_gone(self, gone: RunDirectoryGone | None) -> None:
        """The run's directory was deleted: its index row goes, one line, the process ends."""
        if not self._tripped.acquire(blocking=False):
            return
        self.store.forget_index_row()
        said = str(gone) if gone else (f"run {self.store.run_id}: its directory {self.store.run_dir} was deleted while "
                                       "the run was in progress")
        self._stop(f"{said}; the run stopped, and nothing of it is left to resume: running the same command again "
                   "starts it anew")

    def prefect_lost(self, problem: str, for_s: float) -> None:
        """The Prefect server stopped answering: the record says so (resumable), one line, the process ends."""
        if not self._tripped.acquire(blocking=False):
            return
        url = public_backend_url(self.prefect_api_url)
        reason = f"stopped: the Prefect server at {url} stopped answering ({problem}, for {for_s:.0f} s)"
        recorded = self.store.settle_unfinished(self.plan, reason)
        self._stop(f"run {self.store.run_id} {reason}; "
                   + ("its record says so, and running the same command again once a Prefect server answers resumes it"
                      if recorded else "running the same command again once a Prefect server answers resumes it"))

    def _stop(self, line: str) -> None:
        print(printable(line), file=sys.stderr, flush=True)
        if self.server_home:
            shutil.rmtree(self.server_home, ignore_errors=True)
        self.end(EXIT_STOPPED)


def guarded_api_url(prefect_server) -> str | None:
    """The Prefect API the flow will report to: the temporary server's, or the configured PREFECT_API_URL."""
    if prefect_server is not None:
        return prefect_server.api_url
    from prefect.settings import PREFECT_API_URL

    return PREFECT_API_URL.value() or None


def server_home_of(prefect_server) -> str | None:
    return getattr(prefect_server, "home", None)

