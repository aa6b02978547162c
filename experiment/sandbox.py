"""Run model-written `solve()` code in a contained, throw-away process.

Running code a language model wrote is the most dangerous thing this project does, so the
sandbox is conservative: it refuses to run at all where it cannot drop privileges, and it
reports only an integer or a fixed-form error, never text the code produced.

One call = one fresh process:

    [unshare --net --pid --fork --kill-child]  python -I -S <runner>   (code on stdin)

The runner (our code, below) starts as root, then, before any model-written byte runs:
  1. pre-imports a small allow-list of pure-computation modules (math, fractions, ...);
  2. removes socket modules from sys.modules (defence in depth; the network namespace is the
     real barrier where unshare works);
  3. sets hard resource limits: RLIMIT_CPU, RLIMIT_AS (memory), RLIMIT_NPROC = 1 (no fork,
     no threads), RLIMIT_FSIZE (output and file size), RLIMIT_NOFILE, RLIMIT_CORE = 0;
  4. chroots into a fresh, empty, read-only temporary directory (the rest of the file system
     does not exist for the code: no /etc, no /proc, no project files, no python stdlib);
  5. drops to a fresh unprivileged uid/gid used by this call only (so RLIMIT_NPROC binds,
     chroot cannot be escaped, and after the call every process of that uid can be killed).
Then it compiles the code, calls `solve()` and accepts only a plain `int` (bool is not an int).

The parent starts the process with an empty environment (no secrets exist in it), no inherited
file descriptors except stdout/stderr (a capped file the parent never reports) and the result
pipe, a 2 s wall timeout (default; the spec's), and kills the whole process group and every
process of the call's uid afterwards. What holds is recorded in `SandboxResult.containment`.

Not prevented: the code can burn up to its CPU/wall limit, and it can write up to
`max_output_bytes` into an output file that is discarded unread.
"""

from __future__ import annotations

import functools
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_TIMEOUT_S = 2.0
DEFAULT_MEMORY_BYTES = 256 * 1024 * 1024
DEFAULT_MAX_OUTPUT_BYTES = 64 * 1024
MAX_RESULT_BYTES = 4096
MAX_ANSWER_DIGITS = 30  # a label longer than this is refused (it is not a grade-school answer)
# uids used by sandboxed calls: high, unnamed, and fresh per call (so "every process of this uid"
# means "every process of this call").
SANDBOX_UID_BASE = 1_600_000_000
SANDBOX_UID_SPAN = 1 << 24
KILL_BINARY = shutil.which("kill") or "/bin/kill"

# Modules the code may import: loaded before the chroot, nothing else is importable afterwards.
ALLOWED_MODULES = ("math", "fractions", "decimal", "itertools", "functools", "operator", "collections", "statistics")

RUNNER_SOURCE = r'''
import sys, os, json, resource, builtins
config = json.loads(sys.stdin.buffer.read().decode("utf-8"))
result_fd = config["result_fd"]

def report(payload):
    data = json.dumps(payload).encode("utf-8")
    os.write(result_fd, data)
    os._exit(0)

for name in config["allowed_modules"]:
    __import__(name)
for name in ("socket", "_socket", "ssl", "_ssl", "select", "selectors", "subprocess", "_posixsubprocess", "ctypes", "_ctypes"):
    sys.modules[name] = None  # "import socket" now raises ImportError
null_fd = os.open(os.devnull, os.O_RDONLY)
os.dup2(null_fd, 0)
os.close(null_fd)

limits = config["limits"]
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_s"], limits["cpu_s"] + 1))
resource.setrlimit(resource.RLIMIT_FSIZE, (limits["fsize"], limits["fsize"]))
resource.setrlimit(resource.RLIMIT_NOFILE, (limits["nofile"], limits["nofile"]))
resource.setrlimit(resource.RLIMIT_NPROC, (limits["nproc"], limits["nproc"]))
resource.setrlimit(resource.RLIMIT_AS, (limits["as_bytes"], limits["as_bytes"]))

uid = config["uid"]
os.chroot(config["root"])
os.chdir("/")
os.setgroups([])
os.setgid(uid)
os.setuid(uid)
try:
    os.setuid(0)
except PermissionError:
    pass
else:
    report({"ok": False, "kind": "sandbox_error", "error": "privileges were not dropped"})

def where(tb):
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<solve>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return "" if line is None else f" (line {line})"

def exception_name(err):
    kind = type(err)
    if getattr(builtins, kind.__name__, None) is kind:
        return kind.__name__
    return "an exception of a non-builtin class"

code = config["code"]
allowed_modules = tuple(config["allowed_modules"])
config = None
try:
    compiled = compile(code, "<solve>", "exec")
except BaseException as err:
    report({"ok": False, "kind": "compile_error", "error": f"code does not compile: {exception_name(err)}{where(err.__traceback__)}"})
namespace = {"__name__": "solution", "__builtins__": builtins}
try:
    exec(compiled, namespace)
    solve = namespace.get("solve")
    if not callable(solve):
        report({"ok": False, "kind": "no_solve", "error": "the code defines no callable solve()"})
    value = solve()
except MemoryError:
    report({"ok": False, "kind": "memory_limit", "error": "memory limit reached (MemoryError)"})
except RecursionError:
    report({"ok": False, "kind": "exception", "error": "solve() raised RecursionError"})
except BaseException as err:
    report({"ok": False, "kind": "exception", "error": f"solve() raised {exception_name(err)}{where(err.__traceback__)}"})
if type(value) is not int:
    kind = type(value)
    home = sys.modules.get(kind.__module__) if kind.__module__ in ("builtins", *allowed_modules) else None
    if kind is type(None):
        name = "NoneType"
    elif home is not None and getattr(home, kind.__qualname__, None) is kind:
        name = kind.__qualname__
    else:
        name = "a non-builtin type"
    report({"ok": False, "kind": "not_an_integer", "error": f"solve() returned {name}, not int"})
if abs(value) >= 10 ** limits["max_digits"]:
    report({"ok": False, "kind": "integer_too_large", "error": f"solve() returned an integer with more than {limits['max_digits']} digits"})
report({"ok": True, "value": str(value)})
'''


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot give its guarantees here (one line saying which one is missing)."""


@dataclass(frozen=True)
class SandboxLimits:
    timeout_s: float = DEFAULT_TIMEOUT_S
    memory_bytes: int = DEFAULT_MEMORY_BYTES
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    max_open_files: int = 16
    max_processes: int = 1  # the sandboxed process itself: no fork, no thread

    @property
    def cpu_seconds(self) -> int:
        return max(1, round(self.timeout_s))


@dataclass
class SandboxResult:
    """What one call produced: an integer, or a fixed-form error. Never the code's output text."""

    ok: bool
    value: int | None
    error: str | None
    error_kind: str | None
    seconds: float
    output_bytes: int  # bytes the code wrote to stdout/stderr (discarded unread)
    containment: dict[str, Any] = field(default_factory=dict)
    uid: int | None = None  # the fresh uid this call ran as (every process of it was killed afterwards)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@functools.lru_cache(maxsize=1)
def namespaces_available() -> bool:
    """True when `unshare --net --pid --fork` works here (root, or equivalent capabilities)."""
    if not Path("/usr/bin/unshare").exists() and shutil.which("unshare") is None:
        return False
    try:
        probe = subprocess.run(
            [shutil.which("unshare") or "/usr/bin/unshare", "--net", "--pid", "--fork", "--kill-child", "true"],
            env={}, capture_output=True, timeout=10, check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def containment_available() -> tuple[bool, str]:
    """(True, "") when the sandbox can drop privileges here; else (False, why not)."""
    if os.name != "posix":
        return False, "the sandbox needs Linux"
    if os.geteuid() != 0:
        return False, f"the sandbox needs root to chroot and drop to a fresh uid (running as uid {os.geteuid()})"
    return True, ""


class Sandbox:
    """Runs `solve()` code, one process per call. `Sandbox().run(code) -> SandboxResult`."""

    def __init__(self, limits: SandboxLimits | None = None, use_namespaces: bool | None = None):
        ok, why = containment_available()
        if not ok:
            raise SandboxUnavailable(why)
        self.limits = limits or SandboxLimits()
        self.use_namespaces = namespaces_available() if use_namespaces is None else use_namespaces
        if self.use_namespaces and not namespaces_available():
            raise SandboxUnavailable("network/pid namespaces were asked for but `unshare --net --pid` fails here")

    def containment(self) -> dict[str, Any]:
        """What holds for every call of this sandbox (recorded with each result)."""
        return {
            "process": "one fresh process per call, new session, killed with its process group and uid",
            "filesystem": "chroot into an empty read-only temporary directory",
            "user": "fresh unprivileged uid/gid per call, no supplementary groups",
            "network": "empty network namespace (unshare --net)" if self.use_namespaces
            else "best effort only: socket modules removed before the code runs",
            "pid_namespace": self.use_namespaces,
            "environment": "empty",
            "timeout_s": self.limits.timeout_s,
            "rlimits": {
                "cpu_s": self.limits.cpu_seconds, "as_bytes": self.limits.memory_bytes,
                "nproc": self.limits.max_processes, "fsize_bytes": self.limits.max_output_bytes,
                "nofile": self.limits.max_open_files, "core": 0,
            },
            "imports": list(ALLOWED_MODULES),
        }

    def run(self, code: str) -> SandboxResult:
        uid = SANDBOX_UID_BASE + secrets.randbelow(SANDBOX_UID_SPAN)
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="rx-sandbox-") as private:
            private_dir = Path(private)  # 0700 root: holds the runner, the output file and the root dir
            root = private_dir / "root"
            root.mkdir(mode=0o555)
            os.chmod(private_dir, 0o711)  # the uid may traverse into root/, nothing else
            runner = private_dir / "runner.py"
            runner.write_text(RUNNER_SOURCE, encoding="utf-8")
            os.chmod(runner, 0o600)
            output_path = private_dir / "output"
            read_end, write_end = os.pipe()
            try:
                with open(output_path, "wb") as output:
                    outcome = self._execute(code, uid, root, runner, output, write_end)
                os.close(write_end)
                write_end = -1
                raw = _read_at_most(read_end, MAX_RESULT_BYTES)
            finally:
                if write_end >= 0:
                    os.close(write_end)
                os.close(read_end)
                _kill_uid(uid)
            output_bytes = output_path.stat().st_size
        seconds = time.perf_counter() - started
        result = self._result(raw, outcome, output_bytes, seconds)
        result.uid = uid
        return result

    def _command(self, runner: Path) -> list[str]:
        python = [sys.executable, "-I", "-S", str(runner)]
        if not self.use_namespaces:
            return python
        return [shutil.which("unshare") or "/usr/bin/unshare", "--net", "--pid", "--fork", "--kill-child", *python]

    def _execute(self, code: str, uid: int, root: Path, runner: Path, output: Any, result_fd: int) -> str:
        config = {
            "code": code, "uid": uid, "root": str(root), "result_fd": result_fd,
            "allowed_modules": list(ALLOWED_MODULES),
            "limits": {
                "cpu_s": self.limits.cpu_seconds, "as_bytes": self.limits.memory_bytes,
                "fsize": self.limits.max_output_bytes, "nofile": self.limits.max_open_files,
                "nproc": self.limits.max_processes, "max_digits": MAX_ANSWER_DIGITS,
            },
        }
        process = subprocess.Popen(
            self._command(runner), stdin=subprocess.PIPE, stdout=output, stderr=output,
            env={}, close_fds=True, pass_fds=(result_fd,), start_new_session=True, cwd=str(root),
        )
        try:
            process.stdin.write(json.dumps(config).encode("utf-8"))
            process.stdin.close()
        except BrokenPipeError:
            pass
        try:
            process.wait(timeout=self.limits.timeout_s)
            # RLIMIT_CPU (about the wall timeout) can stop a busy loop a moment before the wall timer
            # fires, on a loaded machine: the same time limit, so it is reported as one
            if process.returncode in (-signal.SIGXCPU, 128 + signal.SIGXCPU):
                return "timed_out"
            return "exited"
        except subprocess.TimeoutExpired:
            # kill the code's processes first so that their parent (unshare, or we) reaps them: killing
            # unshare first would leave the runner a zombie for the host's init to reap
            _kill_uid(uid)
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                _kill_group(process.pid)
                process.wait()
            return "timed_out"
        finally:
            _kill_group(process.pid)

    def _result(self, raw: bytes, outcome: str, output_bytes: int, seconds: float) -> SandboxResult:
        containment = self.containment()

        def failure(kind: str, error: str) -> SandboxResult:
            return SandboxResult(False, None, error, kind, round(seconds, 4), output_bytes, containment)

        if outcome == "timed_out":
            return failure("timeout", f"timed out after {self.limits.timeout_s:g} s (process group killed)")
        if output_bytes >= self.limits.max_output_bytes:
            return failure("output_limit", f"output limit reached ({self.limits.max_output_bytes} bytes)")
        try:
            payload = json.loads(raw.decode("utf-8")) if raw else None
        except (UnicodeDecodeError, json.JSONDecodeError):
            payload = None
        if not isinstance(payload, dict):
            return failure("no_result", "the process ended without a result (killed by a limit or exited early)")
        if payload.get("ok") is True:
            value = payload.get("value")
            if isinstance(value, str) and value.lstrip("-").isdigit() and len(value) <= MAX_ANSWER_DIGITS + 1:
                return SandboxResult(True, int(value), None, None, round(seconds, 4), output_bytes, containment)
            return failure("no_result", "the result channel held no valid integer")
        kind = payload.get("kind")
        error = payload.get("error")
        # only the runner's own fixed-form messages are kept (short, from a known list of kinds)
        if kind in RUNNER_ERROR_KINDS and isinstance(error, str) and len(error) <= 200:
            return failure(kind, error)
        return failure("no_result", "the result channel held no valid report")


RUNNER_ERROR_KINDS = ("compile_error", "no_solve", "memory_limit", "exception", "not_an_integer",
                      "integer_too_large", "sandbox_error")


def _read_at_most(fd: int, limit: int) -> bytes:
    os.set_blocking(fd, False)
    chunks, total = [], 0
    while total < limit:
        try:
            chunk = os.read(fd, limit - total)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_uid(uid: int) -> None:
    """Kill every process of the call's uid (a process that left the group included)."""
    subprocess.run([KILL_BINARY, "-s", "KILL", "--", "-1"], user=uid, group=uid, extra_groups=[],
                   env={}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True, check=False)
