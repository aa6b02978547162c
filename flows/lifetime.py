"""Nothing the CLI starts outlives it: child servers get a parent-death signal.

`tie_prefect_temporary_server()` makes the temporary Prefect server that a flow call starts (no
PREFECT_API_URL) receive SIGTERM when this process dies, `kill -9` included (Linux
PR_SET_PDEATHSIG). The signal follows the thread that forked the child, so children are forked
from one long-lived spawner thread that ends only with the process. (embedded_tinker/launch.py
does the same for the embedded server; the pipeline may not import its helpers.)
"""

from __future__ import annotations

import ctypes
import os
import queue
import signal
import subprocess
import sys
import threading
from typing import Any, Callable

PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
_jobs: queue.Queue = queue.Queue()
_spawner: threading.Thread | None = None
_spawner_lock = threading.Lock()


def die_with_parent(sig: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A `preexec_fn` that makes the child get `sig` when this process dies (None off Linux)."""
    if _libc is None:
        return None
    parent = os.getpid()
    prctl = _libc.prctl

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent:  # the parent died between fork and prctl
            os.kill(os.getpid(), int(sig))

    return preexec


def _spawner_loop() -> None:
    while True:
        fn, box, done = _jobs.get()
        try:
            box["value"] = fn()
        except BaseException as err:  # re-raised in the caller's thread
            box["error"] = err
        done.set()


def on_spawner_thread(fn: Callable[[], Any]) -> Any:
    """Run `fn` (a Popen) on the process-long spawner thread, so the parent-death signal follows the process."""
    global _spawner
    with _spawner_lock:
        if _spawner is None:
            _spawner = threading.Thread(target=_spawner_loop, name="child-spawner", daemon=True)
            _spawner.start()
    box: dict[str, Any] = {}
    done = threading.Event()
    _jobs.put((fn, box, done))
    done.wait()
    if "error" in box:
        raise box["error"]
    return box["value"]


def popen_dying_with_parent(*args: Any, **kwargs: Any) -> subprocess.Popen:
    preexec = die_with_parent()
    return on_spawner_thread(lambda: subprocess.Popen(*args, preexec_fn=preexec, **kwargs))


class _SubprocessWithParentDeath:
    """The `subprocess` module as Prefect's server module sees it, with Popen tied to this process."""

    Popen = staticmethod(popen_dying_with_parent)

    def __getattr__(self, name: str) -> Any:
        return getattr(subprocess, name)


def tie_prefect_temporary_server() -> None:
    """Children started by Prefect's temporary-server launcher die with this process."""
    import prefect.server.api.server as server_module

    if not isinstance(server_module.subprocess, _SubprocessWithParentDeath):
        server_module.subprocess = _SubprocessWithParentDeath()
