"""Nothing the CLI starts outlives it: child servers get a parent-death signal; and its exit is quick.

`TemporaryPrefectServer` is the local Prefect server a CLI run needs when no PREFECT_API_URL is
configured: the process Prefect's own temporary server runs (uvicorn on Prefect's `create_app`, UI
off), started without importing Prefect's server module here (4 s of this process's CPU, under the
GIL that the CLI's own imports need while the server boots), and handed to Prefect as its
PREFECT_API_URL. It receives SIGTERM when this process dies, `kill -9` included (Linux
PR_SET_PDEATHSIG). The signal follows the thread that forked the child, so children are forked
from one long-lived spawner thread that ends only with the process. (embedded_tinker/launch.py
does the same for the embedded server; the pipeline may not import its helpers.)

A run goes on when the reader of its console goes away (`survive_closed_console()`): its records are
the result, the console only shows them.

The garbage collector is kept off the imported heap (about 600,000 objects of torch, the tinker SDK,
Prefect, transformers, the cookbook): the CLI imports inside `imports_frozen()`, and ends with
`exit_process(code)`.
"""

from __future__ import annotations

import atexit
import ctypes
import gc
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
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


# `uvicorn --factory prefect.server.api.server:create_app --log-level error --lifespan on` serving the inherited
# listening socket argv[1]. Not uvicorn's --fd: it labels the socket AF_UNIX with protocol 0, and asyncio then leaves
# TCP_NODELAY off every connection, so each answer waited out the client's delayed ACK (45.5 ms per sequential
# /api/health, against 1.3 ms; embedded_tinker/launch.py's serving_socket is the same for the embedded server).
# argv[2] is the server's own PREFECT_HOME (its database), removed when the server ends: SIGTERM from stop(), or the
# parent-death signal after a kill -9 of the CLI.
_PREFECT_SERVER_ON_SOCKET = """import shutil, socket, sys, uvicorn
config = uvicorn.Config("prefect.server.api.server:create_app", factory=True, log_level="error", lifespan="on")
try:
    uvicorn.Server(config).run(sockets=[socket.socket(fileno=int(sys.argv[1]))])
finally:
    shutil.rmtree(sys.argv[2], ignore_errors=True)
"""

# A server's start-up timeout on an idle machine; on a loaded one it grows with the load (startup_budget_s)
STARTUP_BASE_S = 120.0
STARTUP_MAX_S = 900.0  # however loaded the machine: a server that has not answered in 15 minutes is not coming
STARTUP_PROGRESS_S = 30.0  # a line every this many seconds while a server is still starting


def machine_load() -> tuple[float, int]:
    """(1-minute load average, CPUs)."""
    try:
        load = os.getloadavg()[0]
    except OSError:  # not available on this platform
        load = 0.0
    return load, os.cpu_count() or 1


def startup_budget_s(base_s: float = STARTUP_BASE_S) -> float:
    """How long a server the CLI starts may take to answer: `base_s` on an idle machine, times the load per CPU
    when that is above 1 (a wiring rehearsal at load average 15-38 on 2 CPUs outlasted a fixed 120 s), at most
    STARTUP_MAX_S."""
    load, cpus = machine_load()
    return min(STARTUP_MAX_S, base_s * max(1.0, load / cpus))


def startup_progress_line(what: str, waited_s: float, budget_s: float) -> str:
    load, cpus = machine_load()
    return (f"still waiting for {what} to start ({waited_s:.0f} s of at most {budget_s:.0f} s; load average "
            f"{load:.1f} on {cpus} CPUs)")


SERVER_HOME_PREFIX = "rx-prefect-server-"
SERVER_HOME_OWNER = "owner.pid"  # the CLI process that started the server


def remove_abandoned_server_homes() -> list[str]:
    """Remove the temporary servers' homes whose owning process is gone: a server killed with its CLI (kill -9 of
    both) could not remove its own. Returns the removed paths."""
    removed = []
    for home in Path(tempfile.gettempdir()).glob(f"{SERVER_HOME_PREFIX}*"):
        try:
            owner = int((home / SERVER_HOME_OWNER).read_text())
        except (OSError, ValueError):
            continue  # not one of ours, or not yet written: left alone
        if owner != os.getpid() and not _process_alive(owner):
            shutil.rmtree(home, ignore_errors=True)
            removed.append(str(home))
    return removed


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


class TemporaryPrefectServer:
    """Prefect's temporary server for this process: `start()` launches it and returns at once,
    `wait_until_healthy()` waits for its API, `use()` makes it this process's PREFECT_API_URL, and it
    stops when this process exits (atexit; the parent-death signal if the exit is a kill).

    The command and environment are those of Prefect's `SubprocessASGIServer` (prefect 3.9), with the
    settings of the active profile passed down as environment variables, as Prefect passes them, except
    that the server is handed a socket already listening instead of a port to bind. (The
    embedded server is waited for the same way in embedded_tinker/launch.py; the import boundary keeps
    the pipeline from using the backend's helpers.)"""

    def __init__(self, timeout_s: float, progress: Callable[[str], None] | None = None):
        self.timeout_s = timeout_s
        self.progress = progress  # told a line every STARTUP_PROGRESS_S while the server starts
        self.port = 0
        self.process: subprocess.Popen | None = None
        self.home: str | None = None
        atexit.register(self.stop)

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    def start(self) -> TemporaryPrefectServer:
        from prefect.settings import get_current_settings

        # Its own PREFECT_HOME and database, in a directory of this process's: two runs started side by side never
        # share (or migrate at once) one database, and the user's own `prefect server start` shows none of its runs.
        remove_abandoned_server_homes()
        self.home = tempfile.mkdtemp(prefix=SERVER_HOME_PREFIX)
        Path(self.home, SERVER_HOME_OWNER).write_text(f"{os.getpid()}\n")
        environment = {**os.environ, "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1",
                       "PREFECT__SERVER_FINAL": "1",
                       **get_current_settings().to_environment_variables(exclude_unset=True),
                       "PREFECT_HOME": self.home,
                       "PREFECT_API_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{self.home}/prefect.db"}
        # The port is bound here and the socket handed to the server: a port probed free and bound by the server
        # seconds later could be taken meanwhile, and another process's server would answer this one's health check.
        with socket.socket() as listener:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("127.0.0.1", 0))
            listener.listen(2048)
            self.port = listener.getsockname()[1]
            command = [sys.executable, "-c", _PREFECT_SERVER_ON_SOCKET, str(listener.fileno()), self.home]
            self.process = popen_dying_with_parent(command, env=environment, pass_fds=(listener.fileno(),))
        return self

    def wait_until_healthy(self) -> None:
        """Until GET /api/health answers 200; RuntimeError when the server exits or stays unhealthy past
        the timeout."""
        import httpx

        started = time.monotonic()
        deadline, said = started + self.timeout_s, started
        with httpx.Client(timeout=5) as client:
            while time.monotonic() < deadline:
                if self.progress is not None and time.monotonic() - said >= STARTUP_PROGRESS_S:
                    said = time.monotonic()
                    self.progress(startup_progress_line("the temporary Prefect server", said - started, self.timeout_s))
                code = self.process.poll()
                if code is not None:
                    raise RuntimeError(f"the temporary Prefect server exited with code {code} while starting")
                try:
                    if client.get(f"{self.api_url}/health").status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                time.sleep(0.1)
        raise RuntimeError(f"the temporary Prefect server did not answer within {self.timeout_s:.0f} s")

    def use(self) -> None:
        """Make this server the API of every Prefect client of this process (and of its children).
        It serves no UI (as Prefect's own temporary server), so Prefect prints no "View at" links."""
        from prefect.context import refresh_global_settings_context

        os.environ["PREFECT_API_URL"] = self.api_url
        os.environ["PREFECT_UI_URL"] = ""
        refresh_global_settings_context()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.home is not None:  # the server removes it as it ends; not when it was killed
            shutil.rmtree(self.home, ignore_errors=True)


class _ConsoleStream:
    """sys.stdout or sys.stderr whose reader may go away (`... 2>&1 | head`, a closed terminal pipe): the
    first write or flush that finds the pipe closed points the stream's file descriptor at /dev/null,
    and that write and every later one succeed there. Everything else is the wrapped stream's."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._to_devnull()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._to_devnull()

    def _to_devnull(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())
        finally:
            os.close(devnull)
        self._stream.flush()  # what the failed write left in the buffer goes to /dev/null too

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def survive_closed_console() -> None:
    """A run goes on when its console goes away: without this, the first Prefect log line after the
    reader of stderr closed raised SystemExit(1) inside the flow (rich's console exits on a broken pipe,
    and Prefect's handler catches only Exception), leaving RESULT at status "running" and the exit code
    that means "a gate failed". Call before Prefect configures logging (its console handler keeps the
    sys.stderr of that moment)."""
    if not isinstance(sys.stdout, _ConsoleStream):
        sys.stdout = _ConsoleStream(sys.stdout)
    if not isinstance(sys.stderr, _ConsoleStream):
        sys.stderr = _ConsoleStream(sys.stderr)


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
