"""Start the embedded service on loopback: ``start_server(...) -> RunningServer``.

    with start_server() as server:                       # subprocess on a port the kernel picks
        client = tinker.ServiceClient(base_url=server.base_url, api_key="tml-local")

By default the server runs as ``python -m embedded_tinker serve`` in a subprocess (its own GIL and
torch threads); ``in_process=True`` runs uvicorn in a thread of this process instead. Pass the
same ``checkpoint_dir`` to a new server to find the checkpoints of a stopped one. Without one, the
server gets a temporary directory of its own, which ``stop()`` removes (checkpoints, log and all).

The listening socket is bound here, before the server starts, and handed to it (``serve --fd``;
uvicorn's ``sockets``). A port found free and then bound by the server seconds later could be
taken meanwhile by another process's server, whose health answer was then taken for ours (seen in
the parallel test suite: a production-exposure server's URL answered "embedded").

The subprocess dies with the process that started it, ``kill -9`` included: it gets SIGTERM
through Linux's parent-death signal (PR_SET_PDEATHSIG). That signal follows the *thread* that
forked the child, so the child is forked from one spawner thread that lives as long as the process.

``exit_process`` ends the optimizer probe's command: without it, CPython's teardown spends a second
of CPU collecting the torch heap (flows/lifetime.py does the same for the pipeline's commands, which
may not import this package's helpers). The server itself ends by the SIGTERM it is stopped with.
"""

from __future__ import annotations

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import httpx

from .access import API_KEYS_ENV, DEFAULT_API_KEY
from .exposure import DEFAULT_EXPOSURE, check_exposure
from .faults import FaultConfig
from .service_profile import ServiceProfile

STARTUP_TIMEOUT_SECONDS = 120.0
GRACEFUL_SHUTDOWN_SECONDS = 3  # on stop, do not wait out the clients' 25 s long polls
LOCAL_API_KEY = DEFAULT_API_KEY  # the key the server accepts unless started with others (access.py)


PR_SET_PDEATHSIG = 1
_spawn_jobs: queue.Queue = queue.Queue()
_spawner: threading.Thread | None = None
_spawner_lock = threading.Lock()


def _dies_with_parent():
    """A preexec_fn: SIGTERM to the child when this process dies (None off Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    prctl, parent = ctypes.CDLL(None, use_errno=True).prctl, os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:  # the parent died between fork and prctl
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


def _spawn_loop() -> None:
    while True:
        start, box, done = _spawn_jobs.get()
        try:
            box["process"] = start()
        except BaseException as err:  # re-raised in the caller's thread
            box["error"] = err
        done.set()


def _popen_tied_to_process(command: list[str], **kwargs) -> subprocess.Popen:
    """Popen from the process-long spawner thread, with the parent-death signal set."""
    global _spawner
    with _spawner_lock:
        if _spawner is None:
            _spawner = threading.Thread(target=_spawn_loop, name="embedded-tinker-spawner", daemon=True)
            _spawner.start()
    preexec = _dies_with_parent()
    box: dict = {}
    done = threading.Event()
    _spawn_jobs.put((lambda: subprocess.Popen(command, preexec_fn=preexec, **kwargs), box, done))
    done.wait()
    if "error" in box:
        raise box["error"]
    return box["process"]


def _listening_socket(host: str, port: int) -> socket.socket:
    """Bound to (host, port) and listening (port 0: one the kernel picks); OSError when the port is
    taken. SO_REUSEADDR, as uvicorn binds: a restart on the port of a stopped server is not refused
    for its connections in TIME_WAIT (Linux never lets two sockets listen on one port with it)."""
    # IPPROTO_TCP, not 0: the connections it accepts inherit the protocol number, and asyncio sets
    # TCP_NODELAY only on a connection that says TCP (see serving_socket)
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
        listener.listen(2048)  # uvicorn's default backlog
    except BaseException:
        listener.close()
        raise
    return listener


def serving_socket(fd: int) -> socket.socket:
    """The listening socket a server process inherited (``serve --fd``), as the socket it is: family, type and
    protocol read from the descriptor. uvicorn's own ``fd`` option labels it AF_UNIX with protocol 0, and
    asyncio then leaves TCP_NODELAY off every connection: each answer waited out the client's delayed ACK
    (46 ms per sequential healthz, against 0.8 ms)."""
    return socket.socket(fileno=fd)


def exit_process(code: int | None) -> NoReturn:
    """sys.exit(code) without the teardown's garbage collections of the whole heap (1.0-1.2 s of
    CPU with torch imported, 0.2 s frozen): collect once now, then freeze what survives."""
    gc.collect()
    gc.freeze()
    sys.exit(code)


@dataclass
class RunningServer:
    base_url: str
    checkpoint_dir: Path
    port: int
    process: subprocess.Popen | None = None
    exposure: str = DEFAULT_EXPOSURE
    _uvicorn_server: object | None = None
    _thread: threading.Thread | None = None
    _log_file: object | None = field(default=None, repr=False)
    _owns_checkpoint_dir: bool = False  # a temporary directory start_server made: removed by stop()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._uvicorn_server is not None:
            self._uvicorn_server.should_exit = True
            if self._thread is not None:
                self._thread.join(timeout=15)
        if self._log_file is not None:
            self._log_file.close()
        if self._owns_checkpoint_dir:
            shutil.rmtree(self.checkpoint_dir, ignore_errors=True)

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()


def _wait_until_healthy(base_url: str, alive, log_path: Path | None) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
    # One client for every poll: each new httpx client builds an SSL context (~50 ms of CPU and GIL
    # on a loaded 2-core machine), which at 10 polls a second starved the imports running beside it.
    with httpx.Client(timeout=2) as client:
        while time.monotonic() < deadline:
            if not alive():
                log = log_path.read_text()[-4000:] if log_path and log_path.exists() else ""
                raise RuntimeError(f"embedded tinker server exited during startup\n{log}")
            try:
                if client.get(f"{base_url}/api/v1/healthz").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
    raise TimeoutError(f"embedded tinker server at {base_url} not healthy after {STARTUP_TIMEOUT_SECONDS}s")


def start_server(
    port: int = 0,
    host: str = "127.0.0.1",
    checkpoint_dir: str | os.PathLike | None = None,
    faults: FaultConfig | None = None,
    in_process: bool = False,
    exposure: str = DEFAULT_EXPOSURE,
    profile: ServiceProfile | None = None,
    api_keys: tuple[str, ...] | None = None,
) -> RunningServer:
    """``exposure="production"`` answers as the production service does (see exposure.py);
    ``profile`` gives each call a service time (service_profile.py; the subprocess is started with
    its name and time factor). Without one, a subprocess server still takes the profile from the
    environment (EMBEDDED_TINKER_SERVICE_PROFILE, EMBEDDED_TINKER_TIME_FACTOR). ``api_keys``: the keys its
    clients must send, each key one client (access.py); None: EMBEDDED_TINKER_API_KEYS, else LOCAL_API_KEY.
    They reach a subprocess through its environment, never its command line (which other users can read).

    Long because: the server's start-up (socket, process or thread, health wait, cleanup on failure) is one sequence
    whose failure paths share its handles.
    """
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise ValueError("the embedded backend serves loopback only")
    check_exposure(exposure)
    owns_checkpoint_dir = not checkpoint_dir
    checkpoint_dir = Path(checkpoint_dir or tempfile.mkdtemp(prefix="embedded-tinker-ckpt-")).resolve()
    checkpoint_dir.mkdir(parents=True, exist_ok=True)
    listener = _listening_socket(host, port)
    port = listener.getsockname()[1]
    base_url = f"http://{host}:{port}"

    if in_process:
        import uvicorn

        from .connections import uvicorn_options
        from .server import create_app

        try:
            config = uvicorn.Config(
                create_app(checkpoint_dir, faults, exposure, profile, api_keys),
                log_level="warning",
                timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
                **uvicorn_options(),
            )
        except BaseException:
            listener.close()
            raise
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, name="embedded-tinker-http",
                                  daemon=True)
        running = RunningServer(base_url, checkpoint_dir, port, exposure=exposure, _uvicorn_server=server,
                                _thread=thread, _owns_checkpoint_dir=owns_checkpoint_dir)
        thread.start()
        try:
            _wait_until_healthy(base_url, thread.is_alive, None)
        except BaseException:
            running.stop()
            listener.close()
            raise
        return running

    log_path = checkpoint_dir / f"server-{port}.log"
    log_file = open(log_path, "a")
    command = [
        sys.executable,
        "-m",
        "embedded_tinker",
        "serve",
        f"--fd={listener.fileno()}",
        f"--checkpoint-dir={checkpoint_dir}",
        f"--exposure={exposure}",
    ]
    command += (faults or FaultConfig()).to_cli_args()
    if profile is not None:
        command += [f"--service-profile={profile.name}", f"--time-factor={profile.time_factor}"]
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "TINKER_TELEMETRY": "0"}
    if api_keys:
        environment[API_KEYS_ENV] = ",".join(api_keys)
    repo_root = str(Path(__file__).resolve().parent.parent)
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [repo_root, environment.get("PYTHONPATH")]))
    try:
        process = _popen_tied_to_process(command, stdout=log_file, stderr=subprocess.STDOUT, env=environment,
                                         pass_fds=(listener.fileno(),))
    finally:
        listener.close()  # the server's copy serves; a server that dies leaves the port closed
    running = RunningServer(base_url, checkpoint_dir, port, process=process, exposure=exposure,
                            _log_file=log_file, _owns_checkpoint_dir=owns_checkpoint_dir)
    try:
        _wait_until_healthy(base_url, lambda: process.poll() is None, log_path)
    except BaseException:
        running.stop()
        raise
    return running
