"""Nothing the CLI starts outlives it: child servers get a parent-death signal; and its exit is quick.

`tie_prefect_temporary_server()` makes the temporary Prefect server that a flow call starts (no
PREFECT_API_URL) receive SIGTERM when this process dies, `kill -9` included (Linux
PR_SET_PDEATHSIG). The signal follows the thread that forked the child, so children are forked
from one long-lived spawner thread that ends only with the process. (embedded_tinker/launch.py
does the same for the embedded server; the pipeline may not import its helpers.)

The garbage collector is kept off the imported heap (about 600,000 objects of torch, the tinker SDK,
Prefect, transformers, the cookbook): the CLI imports inside `imports_frozen()`, and ends with
`exit_process(code)`.
"""

from __future__ import annotations

import ctypes
import gc
import os
import queue
import signal
import subprocess
import sys
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator, NoReturn

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


@contextmanager
def imports_frozen() -> Iterator[None]:
    """No automatic garbage collection inside the block; on leaving it normally, every object alive is
    frozen (gc.freeze(): out of the collector's reach), and collection resumes either way.

    Imports make almost no garbage, but each full collection while they run walks everything imported
    so far: a GS1 wiring rehearsal's CLI ran 9 of them in its first 15 s, over 50,000 to 624,000
    objects. After the freeze, the run's collections walk what it made, not the modules it imported
    (in that rehearsal, 8 collections of 70,000-114,000 objects, where each would have walked 630,000)."""
    gc.disable()
    try:
        yield
        gc.freeze()
    finally:
        gc.enable()


def exit_process(code: int | None) -> NoReturn:
    """sys.exit(code), minus the 1 to 2.5 s of CPU that CPython's teardown spends in garbage collection.

    With torch, the tinker SDK and Prefect imported (about 270,000 tracked objects), the collections
    of the interpreter's finalization took 1.0-1.3 s after the imports alone and 2.5 s after a flow
    run, against 0.2 s once the heap is frozen. One collection here still finalizes whatever is
    garbage now; gc.freeze() then puts every survivor out of the collector's reach. Non-daemon
    threads, Prefect's log and event drains and atexit handlers run as they always do."""
    gc.collect()
    gc.freeze()
    sys.exit(code)
