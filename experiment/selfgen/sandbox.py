"""Run model-written `solve()` code in a contained, throw-away process tree.

Running code a language model wrote is the most dangerous thing this project does, so the
sandbox is conservative: it refuses to run at all where it cannot give its guarantees (root to
chroot and drop to a fresh uid, and network/pid/ipc namespaces), it never falls back to weaker
walls, and every word it reports is its own.

One call = one fresh pid namespace:

    parent ── unshare --net --pid --ipc --fork --kill-child ── init (pid 1, root, our runner)
                                                                 └── worker (fresh uid, chroot) runs solve()

init (the runner below, started with `python -I -S`, code and limits on stdin) never runs a byte
of model code. It forks the worker, which, before any model-written byte runs:
  1. removes socket/subprocess/ctypes modules from sys.modules and keeps only a small allow-list
     of pre-imported pure-computation modules (math, fractions, ...);
  2. sets hard resource limits: RLIMIT_CPU, RLIMIT_AS (memory), RLIMIT_NPROC (1: no fork, no
     threads), RLIMIT_FSIZE (output size), RLIMIT_NOFILE, RLIMIT_CORE = 0;
  3. chroots into a fresh, empty, read-only temporary directory;
  4. drops to a fresh unprivileged uid/gid used by this call only and checks that root cannot be
     regained;
  5. compiles the code and writes its status (privileges dropped; compiled, or which builtin
     exception at which line) to the *status pipe*, then closes it. The code never holds it.
Then the worker runs the module and `solve()`, and writes one record of three integers to the
*result pipe*: the code can write there too, so the parent reads nothing but integers from it.
init waits for the worker, relays both pipes and the worker's wait status to the parent over
the *report pipe* (closed in the worker right after the fork), and exits: when a pid namespace's
init exits, the kernel kills every process left in it (setsid, double fork, stopped, signals
ignored: none of it matters). On the wall timeout the parent kills init itself.

After every call the parent scans the process table for the call's uid; a process of it that
survives SIGKILL is a `SandboxError` (the run stops), never a result. Every `SandboxResult.error`
is built by the parent from `MESSAGES` with values from fixed vocabularies (builtin exception
and type names, line numbers within the code, the sandbox's own limits).

Not prevented: the code can burn up to its CPU/wall limit, and it can write up to
`max_output_bytes` into an output file that is discarded unread. It chooses its own outcome
(which integer, which builtin exception at which line), as it could by behaving that way.
"""

from __future__ import annotations

import builtins
import functools
import importlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

DEFAULT_TIMEOUT_S = 2.0
DEFAULT_MEMORY_BYTES = 256 * 1024 * 1024
DEFAULT_MAX_OUTPUT_BYTES = 64 * 1024
MAX_STATUS_BYTES = 256
MAX_RESULT_BYTES = 4096
MAX_REPORT_BYTES = 4 * (MAX_STATUS_BYTES + MAX_RESULT_BYTES)
MAX_ANSWER_DIGITS = 30  # a label longer than this is refused (it is not a grade-school answer)
KILL_WAIT_S = 5.0  # after SIGKILL: how long the parent waits for the call's processes to be gone
# uids used by sandboxed calls: high, unnamed, and fresh per call (so "every process of this uid"
# means "every process of this call").
SANDBOX_UID_BASE = 1_600_000_000
SANDBOX_UID_SPAN = 1 << 24
NAMESPACE_FLAGS = ("--net", "--pid", "--ipc", "--fork", "--kill-child")

# Modules the code may import: loaded before the chroot, nothing else is importable afterwards.
ALLOWED_MODULES = ("math", "fractions", "decimal", "itertools", "functools", "operator", "collections", "statistics")

# What a result record (three integers) may say; the index is what travels.
RESULT_KINDS = ("ok", "no_solve", "memory_limit", "exception", "not_an_integer", "integer_too_large")

# Every error text a SandboxResult can carry. Fields are filled by the parent only: {exception} from
# EXCEPTION_NAMES (or the non-builtin phrase), {type} from TYPE_NAMES (or the non-builtin phrase),
# {line} is "" or " (line N)" with N within the code, the rest are this sandbox's own limits.
MESSAGES = {
    "timeout": "timed out after {timeout_s:g} s (every process of the call killed)",
    "output_limit": "output limit reached ({max_output_bytes} bytes)",
    "no_result": "the process ended without a result (killed by a limit or exited early)",
    "invalid_report": "the result channel held no valid report",
    "compile_error": "code does not compile: {exception}{line}",
    "no_solve": "the code defines no callable solve()",
    "memory_limit": "memory limit reached (MemoryError)",
    "exception": "solve() raised {exception}{line}",
    "not_an_integer": "solve() returned {type}, not int",
    "integer_too_large": "solve() returned an integer with more than {max_digits} digits",
}
NON_BUILTIN_EXCEPTION = "an exception of a non-builtin class"
NON_BUILTIN_TYPE = "a non-builtin type"


def _exception_names() -> tuple[str, ...]:
    return tuple(sorted(name for name, obj in vars(builtins).items()
                        if isinstance(obj, type) and issubclass(obj, BaseException)))


def _type_names() -> tuple[str, ...]:
    names = {"NoneType"}
    for module in (builtins, *(importlib.import_module(name) for name in ALLOWED_MODULES)):
        names.update(name for name, obj in vars(module).items()
                     if isinstance(obj, type) and not name.startswith("_") and not issubclass(obj, BaseException))
    return tuple(sorted(names))


EXCEPTION_NAMES = _exception_names()
TYPE_NAMES = _type_names()

RUNNER_SOURCE = r'''
# pid 1 of the call's pid namespace, root. Never runs model code: it forks the worker that does.
import sys, os, json, resource, builtins
config = json.loads(sys.stdin.buffer.read().decode("utf-8"))
for name in config["allowed_modules"]:
    __import__(name)
null_fd = os.open(os.devnull, os.O_RDONLY)
os.dup2(null_fd, 0)
os.close(null_fd)
report_fd = config["report_fd"]
status_r, status_w = os.pipe()
result_r, result_w = os.pipe()


def read_all(fd, limit):
    """Up to `limit` bytes: until EOF, or (non-blocking fd) until nothing more is there."""
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


def worker():
    os.close(report_fd)
    os.close(status_r)
    os.close(result_r)
    kinds = {name: number for number, name in enumerate(config["result_kinds"])}
    exception_names = config["exception_names"]
    type_names = config["type_names"]
    allowed_modules = tuple(config["allowed_modules"])
    limits = config["limits"]
    code = config["code"]
    uid = config["uid"]
    write, exit_now = os.write, os._exit

    for name in ("socket", "_socket", "ssl", "_ssl", "select", "selectors", "subprocess", "_posixsubprocess",
                 "ctypes", "_ctypes"):
        sys.modules[name] = None  # "import socket" now raises ImportError
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_s"], limits["cpu_s"] + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["fsize"], limits["fsize"]))
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits["nofile"], limits["nofile"]))
    resource.setrlimit(resource.RLIMIT_NPROC, (limits["nproc"], limits["nproc"]))
    resource.setrlimit(resource.RLIMIT_AS, (limits["as_bytes"], limits["as_bytes"]))
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
        write(status_w, b"P")
        exit_now(1)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (uid, uid, uid) or os.getgroups():
        write(status_w, b"P")
        exit_now(1)
    write(status_w, b"R")

    def line_of(err):
        line, tb = 0, err.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == "<solve>":
                line = tb.tb_lineno
            tb = tb.tb_next
        if not line and isinstance(err, SyntaxError) and type(err.lineno) is int:
            line = err.lineno
        return line

    def exception_number(err):
        kind = type(err)
        name = kind.__name__
        if getattr(builtins, name, None) is kind and name in exception_names:
            return exception_names.index(name)
        return -1

    try:
        compiled = compile(code, "<solve>", "exec")
    except BaseException as err:
        write(status_w, b"E %d %d\n" % (exception_number(err), line_of(err)))
        exit_now(0)
    write(status_w, b"C")
    os.close(status_w)
    # From here on model code runs: it can write to result_w itself, and patch anything in this
    # process. Whatever it does, only three integers are read from result_w.

    def record(kind, first=0, second=0):
        write(result_w, b"%d %d %d\n" % (kinds[kind], first, second))
        exit_now(0)

    namespace = {"__name__": "solution", "__builtins__": builtins}
    try:
        exec(compiled, namespace)
        solve = namespace.get("solve")
        if not callable(solve):
            record("no_solve")
        value = solve()
    except MemoryError:
        record("memory_limit")
    except BaseException as err:
        record("exception", exception_number(err), line_of(err))
    if type(value) is not int:
        kind = type(value)
        home = sys.modules.get(kind.__module__) if kind.__module__ in ("builtins", *allowed_modules) else None
        if kind is type(None):
            name = "NoneType"
        elif home is not None and getattr(home, kind.__qualname__, None) is kind:
            name = kind.__qualname__
        else:
            name = None
        record("not_an_integer", type_names.index(name) if name in type_names else -1)
    if abs(value) >= 10 ** limits["max_digits"]:
        record("integer_too_large")
    record("ok", value)


pid = os.fork()
if pid == 0:
    try:
        worker()
    finally:
        os._exit(1)
os.close(status_w)
os.close(result_w)
status = read_all(status_r, config["max_status_bytes"])  # EOF: the worker closed it before the code ran, or died
_, wait_status = os.waitpid(pid, 0)
os.set_blocking(result_r, False)  # a process the worker left behind may still hold the pipe open
result = read_all(result_r, config["max_result_bytes"])
os.write(report_fd, json.dumps({"status": status.hex(), "result": result.hex(), "wait": wait_status}).encode())
os._exit(0)  # the namespace's init exits: the kernel kills every process left in it
'''


class SandboxError(RuntimeError):
    """The sandbox failed at its own job (a process survived, the runner gave no report): stop the run."""


class SandboxUnavailable(SandboxError):
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
    """What one call produced: an integer, or an error from MESSAGES. Never the code's output text."""

    ok: bool
    value: int | None
    error: str | None
    error_kind: str | None
    seconds: float
    output_bytes: int  # bytes the code wrote to stdout/stderr (discarded unread)
    containment: dict[str, Any] = field(default_factory=dict)
    uid: int | None = None  # the fresh uid this call ran as (no process of it outlived the call)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def unshare_binary() -> str | None:
    """The `unshare` program on this process's PATH, or None."""
    return shutil.which("unshare")


@functools.lru_cache(maxsize=8)
def _namespaces_work(binary: str) -> bool:
    try:
        probe = subprocess.run([binary, *NAMESPACE_FLAGS, "true"], env={}, capture_output=True, timeout=20,
                               check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def namespaces_available() -> bool:
    """True when `unshare --net --pid --ipc --fork` works here (root, or equivalent capabilities)."""
    binary = unshare_binary()
    return binary is not None and _namespaces_work(binary)


def containment_available() -> tuple[bool, str]:
    """(True, "") when the sandbox can give its guarantees here; else (False, why not)."""
    if os.name != "posix" or not sys.platform.startswith("linux"):
        return False, "the sandbox needs Linux"
    if os.geteuid() != 0:
        return False, f"the sandbox needs root to chroot and drop to a fresh uid (running as uid {os.geteuid()})"
    binary = unshare_binary()
    if binary is None:
        return False, "the sandbox needs network and pid namespaces, and no `unshare` program is on PATH"
    if not _namespaces_work(binary):
        return False, f"the sandbox needs network and pid namespaces, and `{binary} {' '.join(NAMESPACE_FLAGS)}` fails here"
    return True, ""


_UIDS_USED: set[int] = set()


def uids_used() -> frozenset[int]:
    """Every uid a sandbox call of this process ran as (for end-of-session process-table checks)."""
    return frozenset(_UIDS_USED)


class Sandbox:
    """Runs `solve()` code, one pid namespace per call. `Sandbox().run(code) -> SandboxResult`."""

    def __init__(self, limits: SandboxLimits | None = None):
        ok, why = containment_available()
        if not ok:
            raise SandboxUnavailable(why)
        self.limits = limits or SandboxLimits()
        self.unshare = unshare_binary()

    def containment(self) -> dict[str, Any]:
        """What holds for every call of this sandbox (recorded with each result)."""
        return {
            "process": "fresh pid namespace per call; its init is killed at the end, which kills every process in it; "
                       "the call's uid is checked to have no process left",
            "filesystem": "chroot into an empty read-only temporary directory",
            "user": "fresh unprivileged uid/gid per call, no supplementary groups",
            "network": "empty network namespace (unshare --net)",
            "pid_namespace": True,
            "ipc_namespace": True,
            "environment": "empty",
            "timeout_s": self.limits.timeout_s,
            "rlimits": {
                "cpu_s": self.limits.cpu_seconds, "as_bytes": self.limits.memory_bytes,
                "nproc": self.limits.max_processes, "fsize_bytes": self.limits.max_output_bytes,
                "nofile": self.limits.max_open_files, "core": 0,
            },
            "imports": list(ALLOWED_MODULES),
            "errors": "built by the parent from a fixed vocabulary; only integers are read from the code's process",
        }

    def run(self, code: str) -> SandboxResult:
        """Run `code`; raises SandboxError when the sandbox itself failed (nothing of the call is trusted then)."""
        uid = SANDBOX_UID_BASE + secrets.randbelow(SANDBOX_UID_SPAN)
        _UIDS_USED.add(uid)
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
                    timed_out = self._execute(code, uid, root, runner, output, write_end)
                os.close(write_end)
                write_end = -1
                report = _read_at_most(read_end, MAX_REPORT_BYTES)
            finally:
                if write_end >= 0:
                    os.close(write_end)
                os.close(read_end)
                ensure_no_process_of(uid)
            output_bytes = output_path.stat().st_size
        seconds = time.perf_counter() - started
        result = interpret(report, timed_out, output_bytes, seconds, code, self.limits)
        result.containment = self.containment()
        result.uid = uid
        return result

    def _command(self, runner: Path) -> list[str]:
        return [self.unshare, *NAMESPACE_FLAGS, sys.executable, "-I", "-S", str(runner)]

    def _execute(self, code: str, uid: int, root: Path, runner: Path, output: Any, report_fd: int) -> bool:
        """Run one call; True when it hit the wall timeout (every process of it killed)."""
        config = {
            "code": code, "uid": uid, "root": str(root), "report_fd": report_fd,
            "allowed_modules": list(ALLOWED_MODULES), "result_kinds": list(RESULT_KINDS),
            "exception_names": list(EXCEPTION_NAMES), "type_names": list(TYPE_NAMES),
            "max_status_bytes": MAX_STATUS_BYTES, "max_result_bytes": MAX_RESULT_BYTES,
            "limits": {
                "cpu_s": self.limits.cpu_seconds, "as_bytes": self.limits.memory_bytes,
                "fsize": self.limits.max_output_bytes, "nofile": self.limits.max_open_files,
                "nproc": self.limits.max_processes, "max_digits": MAX_ANSWER_DIGITS,
            },
        }
        process = subprocess.Popen(
            self._command(runner), stdin=subprocess.PIPE, stdout=output, stderr=output,
            env={}, close_fds=True, pass_fds=(report_fd,), start_new_session=True, cwd=str(root),
        )
        try:
            try:
                process.stdin.write(json.dumps(config).encode("utf-8"))
                process.stdin.close()
            except BrokenPipeError:
                pass
            process.wait(timeout=self.limits.timeout_s)
            return False
        except subprocess.TimeoutExpired:
            _kill_namespace(process)
            return True
        except BaseException:
            _kill_namespace(process)
            raise


def _kill_namespace(process: subprocess.Popen) -> None:
    """Kill the namespace's init (the kernel then kills everything in the namespace); unshare reaps it."""
    children = _children_of(process.pid)
    for pid in children:
        _signal_if(pid, lambda status: _field(status, "PPid") == str(process.pid))
    if not children:  # unshare has not forked init yet (or init is gone): end unshare itself
        _kill_group(process.pid)
    try:
        process.wait(timeout=KILL_WAIT_S)
    except subprocess.TimeoutExpired:
        # unshare did not exit: kill it and its group (--kill-child kills init with it)
        _kill_group(process.pid)
        process.wait()


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _children_of(pid: int) -> list[int]:
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except (OSError, ValueError):
        pass
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if _field((entry / "status").read_text(), "PPid") == str(pid):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _field(status: str, name: str) -> str | None:
    for line in status.splitlines():
        if line.startswith(name + ":"):
            return line.split(":", 1)[1].strip()
    return None


def _uids_of(status: str) -> set[int]:
    value = _field(status, "Uid")
    return {int(part) for part in value.split()} if value else set()


def processes_of(uids: int | Iterable[int]) -> list[tuple[int, int, str]]:
    """(pid, uid, state letter) of every process whose real, effective, saved or fs uid is one of `uids`."""
    wanted = {uids} if isinstance(uids, int) else set(uids)
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        for uid in sorted(_uids_of(status) & wanted)[:1]:
            found.append((int(entry.name), uid, (_field(status, "State") or "?")[:1]))
    return found


def _signal_if(pid: int, still_ours) -> None:
    """SIGKILL `pid` if its /proc status (read after pinning the process with a pidfd) passes `still_ours`."""
    try:
        handle = os.pidfd_open(pid)
    except (ProcessLookupError, OSError):
        return
    try:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return
        if still_ours(status):
            try:
                signal.pidfd_send_signal(handle, signal.SIGKILL)
            except ProcessLookupError:
                pass
    finally:
        os.close(handle)


def ensure_no_process_of(uid: int, wait_s: float | None = None) -> None:
    """Kill every live process of `uid` and confirm none is left; SandboxError when one survives."""
    deadline = time.monotonic() + (KILL_WAIT_S if wait_s is None else wait_s)
    while True:
        listed = processes_of(uid)
        alive = [pid for pid, _, state in listed if state != "Z"]
        if not alive and (not listed or time.monotonic() > deadline):
            return  # a zombie is dead already: it is waited for while there is time, its reaper removes it
        for pid in alive:
            _signal_if(pid, lambda status: uid in _uids_of(status))
        if time.monotonic() > deadline:
            raise SandboxError(f"{len(alive)} process(es) of a sandboxed call (uid {uid}) survived SIGKILL; "
                               "the sandbox cannot confirm containment")
        time.sleep(0.01)


RECORD = re.compile(rb"(\d) (-?\d{1,31}) (-?\d{1,7})\n")
COMPILE_ERROR = re.compile(rb"RE (-?\d{1,4}) (\d{1,7})\n")


def interpret(report: bytes, timed_out: bool, output_bytes: int, seconds: float, code: str,
              limits: SandboxLimits) -> SandboxResult:
    """The call's result, from init's report: every error text is one of MESSAGES, filled in here."""

    def failure(kind: str, message: str | None = None, **fields: Any) -> SandboxResult:
        text = MESSAGES[message or kind].format(
            timeout_s=limits.timeout_s, max_output_bytes=limits.max_output_bytes, max_digits=MAX_ANSWER_DIGITS,
            **fields)
        return SandboxResult(False, None, text, kind, round(seconds, 4), output_bytes)

    lines = code.count("\n") + 1

    def where(number: int) -> str:
        return f" (line {number})" if 1 <= number <= lines else ""

    def exception(number: int) -> str:
        return EXCEPTION_NAMES[number] if 0 <= number < len(EXCEPTION_NAMES) else NON_BUILTIN_EXCEPTION

    if timed_out:
        return failure("timeout")
    try:
        relayed = json.loads(report.decode("ascii"))
        status = bytes.fromhex(relayed["status"])
        result = bytes.fromhex(relayed["result"])
        wait_status = relayed["wait"]
        if type(wait_status) is not int or not 0 <= wait_status < 1 << 16:
            raise TypeError
    except (UnicodeDecodeError, ValueError, KeyError, TypeError):
        # init is our code and the worker cannot reach its pipe: no report means the sandbox broke
        raise SandboxError("the sandbox's init gave no valid report (the runner failed)") from None
    if status[:1] == b"P":
        raise SandboxError("the sandboxed process could regain root: privileges were not dropped")
    if status[:1] != b"R":
        raise SandboxError("the sandboxed process never confirmed that it dropped privileges (its setup failed)")
    if output_bytes >= limits.max_output_bytes:
        return failure("output_limit")
    if os.WIFSIGNALED(wait_status) and os.WTERMSIG(wait_status) == signal.SIGXCPU:
        return failure("timeout")  # RLIMIT_CPU: the same time limit as the wall timer
    compile_error = COMPILE_ERROR.fullmatch(status)
    if compile_error:
        return failure("compile_error", exception=exception(int(compile_error[1])), line=where(int(compile_error[2])))
    if status != b"RC":
        if status == b"R":
            return failure("no_result")  # died while compiling (a limit)
        raise SandboxError("the sandbox's status channel held an unexpected record")
    if not result:
        return failure("no_result")
    record = RECORD.fullmatch(result)
    if not record or int(record[1]) >= len(RESULT_KINDS):
        return failure("no_result", "invalid_report")
    kind, first, second = RESULT_KINDS[int(record[1])], int(record[2]), int(record[3])
    if kind == "ok":
        if abs(first) >= 10 ** MAX_ANSWER_DIGITS:
            return failure("integer_too_large")
        return SandboxResult(True, first, None, None, round(seconds, 4), output_bytes)
    if kind == "exception":
        return failure("exception", exception=exception(first), line=where(second))
    if kind == "not_an_integer":
        return failure("not_an_integer", type=TYPE_NAMES[first] if 0 <= first < len(TYPE_NAMES) else NON_BUILTIN_TYPE)
    return failure(kind)


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
