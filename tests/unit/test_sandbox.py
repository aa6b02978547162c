"""Adversarial tests of the solve() sandbox: every attack runs for real in a real subprocess.

Each attack must end as an execution error (ok False, an error from the parent's vocabulary),
leave no process of the call's uid alive, and leave the host (this test process, its files, its
environment) unaffected. Text the attack produced never reaches the result. The attacks that the
sandbox's newer walls stop are first shown succeeding against a sandbox with that wall taken out
(monkeypatched), so a sandbox that silently does nothing cannot pass.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from experiment.selfgen import sandbox as sandbox_module
from experiment.selfgen.sandbox import (
    EXCEPTION_NAMES,
    SANDBOX_UID_BASE,
    SANDBOX_UID_SPAN,
    Sandbox,
    SandboxError,
    SandboxLimits,
    SandboxUnavailable,
)

pytestmark = pytest.mark.skipif(
    os.name != "posix" or os.geteuid() != 0,
    reason="the sandbox runs only where it can chroot and drop to a fresh uid (root); elsewhere it refuses",
)

FAKE_SECRET = "rx-fake-secret-7f3a9c1e5b"
MARKER = "tml-forged-\x1b[31m-rx-marker"


def table(uid: int) -> list[tuple[int, str]]:
    """(pid, state) of every process in the process table (zombies included) with `uid` as any of its uids."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            lines = (entry / "status").read_text().splitlines()
        except OSError:
            continue
        fields = {line.split(":", 1)[0]: line.split(":", 1)[1].split() for line in lines if ":" in line}
        if str(uid) in fields.get("Uid", []):
            found.append((int(entry.name), fields.get("State", ["?"])[0]))
    return found


def kill_leftovers(uid: int) -> list[tuple[int, str]]:
    """Test cleanup after a weakened run: kill what the weakened sandbox left; returns what was there."""
    left = table(uid)
    for pid, _ in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 10
    while living(uid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert living(uid) == [], "the test could not clean up after the weakened sandbox"
    return left  # zombies left are reaped by the host's init (the session-end check waits for that)


def living(uid: int) -> list[tuple[int, str]]:
    return [(pid, state) for pid, state in table(uid) if state != "Z"]


def result_text(result) -> str:
    return json.dumps(result.to_dict())


def assert_contained(result, kind: str | None = None) -> None:
    assert result.ok is False and result.value is None, result.to_dict()
    assert result.error and len(result.error) <= 200
    if kind is not None:
        assert result.error_kind == kind, result.to_dict()
    assert SANDBOX_UID_BASE <= result.uid < SANDBOX_UID_BASE + SANDBOX_UID_SPAN
    assert table(result.uid) == [], "a sandboxed process outlived its call"


# Calls that must not time out get a wall limit far beyond what they need, so that a loaded machine (the
# cores are shared) cannot turn their outcome into a timeout; calls meant to time out get 1 s.
PATIENT = SandboxLimits(timeout_s=30.0)
PATIENT_FORKING = SandboxLimits(timeout_s=30.0, max_processes=4)
IMPATIENT = SandboxLimits(timeout_s=1.0)


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox(PATIENT)


@pytest.fixture
def weakened_walls(monkeypatch):
    """Take out the walls that end a call's processes: no pid namespace (init's exit kills nothing) and
    no check of the call's uid afterwards. What remains is killing init, as a group kill would."""
    monkeypatch.setattr(sandbox_module, "NAMESPACE_FLAGS", ("--net", "--ipc", "--fork", "--kill-child"))
    monkeypatch.setattr(sandbox_module, "ensure_no_process_of", lambda uid, wait_s=None: None)


def test_a_plain_solve_returns_its_integer(sandbox):
    result = sandbox.run("import math\n\ndef solve():\n    apples = 12\n    return math.gcd(apples, 18) * 4 - 30\n")
    assert result.ok and result.value == -6 and result.error is None
    assert result.containment["environment"] == "empty" and result.containment["pid_namespace"] is True
    assert result.containment["rlimits"]["nproc"] == 1
    assert table(result.uid) == []


# ---- nothing outlives a call ----

SLEEPER = ("import os, time, _signal\n\n"
           "def sleep_forever():\n"
           "    os.setsid()\n"
           "    for number in (1, 2, 15):\n"  # SIGHUP, SIGINT, SIGTERM ignored (SIGKILL cannot be)
           "        _signal.signal(number, _signal.SIG_IGN)\n"
           "    time.sleep(120)\n\n")
ESCAPES = {
    # the attack: leave the process group and sleep (a busy loop would hit the CPU limit)
    "setsid_and_sleep": SLEEPER + "def solve():\n    sleep_forever()\n",
    # double fork: the grandchild, in a new session, is orphaned while the call returns at once
    "double_fork_and_sleep": SLEEPER + (
        "def solve():\n    child = os.fork()\n    if child == 0:\n        if os.fork() == 0:\n"
        "            sleep_forever()\n        os._exit(0)\n    os.waitpid(child, 0)\n    return 7\n"),
    # a stopped process does not even run to be signalled with anything but SIGKILL
    "stopped_child": ("import os\n\ndef solve():\n    if os.fork() == 0:\n        os.setsid()\n"
                      "        os.kill(os.getpid(), 19)\n        os._exit(0)\n    return 7\n"),
    # the worker itself stops: the call ends at the wall timeout with the process stopped
    "stopped_self": "import os\n\ndef solve():\n    os.setsid()\n    os.kill(os.getpid(), 19)\n    return 1\n",
}


@pytest.mark.parametrize("attack", list(ESCAPES))
def test_no_process_of_a_call_outlives_it(attack, weakened_walls, monkeypatch):
    # several processes allowed, so that the double fork can happen at all
    times_out = attack in ("setsid_and_sleep", "stopped_self")
    limits = SandboxLimits(timeout_s=1.0, max_processes=4) if times_out else PATIENT_FORKING
    # the weakened call gets time to reach its attack on a loaded machine (else nothing could survive it)
    weak = Sandbox(SandboxLimits(timeout_s=3.0, max_processes=4) if times_out else limits).run(ESCAPES[attack])
    if attack.startswith("stopped"):  # it stops itself a moment later on a loaded machine
        deadline = time.monotonic() + 20
        while not any(state == "T" for _, state in table(weak.uid)) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert any(state == "T" for _, state in table(weak.uid)), table(weak.uid)
    survivors = kill_leftovers(weak.uid)
    assert survivors, f"{attack}: the attack should outlive a call without the pid namespace and the uid check"

    monkeypatch.undo()
    result = Sandbox(limits).run(ESCAPES[attack])
    assert table(result.uid) == [], f"{attack}: a process of the call outlived it"
    if not times_out:
        assert result.ok and result.value == 7  # the call itself returned at once; its leftovers died with it
    else:
        assert_contained(result, "timeout")


def test_the_uid_check_alone_kills_what_survives_the_call(monkeypatch):
    """Without the pid namespace, the check of the call's uid still finds and kills the leftovers."""
    monkeypatch.setattr(sandbox_module, "NAMESPACE_FLAGS", ("--net", "--ipc", "--fork", "--kill-child"))
    result = Sandbox(PATIENT_FORKING).run(ESCAPES["double_fork_and_sleep"])
    assert result.ok and result.value == 7
    assert table(result.uid) == []


def test_a_process_that_survives_sigkill_stops_the_run(monkeypatch):
    """A process that survives SIGKILL cannot be produced for real, so SIGKILL is replaced by a no-op (a
    named fake) and the pid namespace is taken out: the leftover of the call is then a SandboxError that
    stops the run, never a result."""
    monkeypatch.setattr(sandbox_module, "NAMESPACE_FLAGS", ("--net", "--ipc", "--fork", "--kill-child"))
    monkeypatch.setattr(sandbox_module, "KILL_WAIT_S", 0.3)
    monkeypatch.setattr(sandbox_module.signal, "pidfd_send_signal", lambda *args: None)  # fake: SIGKILL does nothing
    box = Sandbox(PATIENT_FORKING)
    before = sandbox_module.uids_used()
    with pytest.raises(SandboxError, match="survived SIGKILL"):
        box.run(ESCAPES["double_fork_and_sleep"])
    (uid,) = sandbox_module.uids_used() - before
    assert kill_leftovers(uid)


def test_infinite_loop_is_killed_at_the_wall_timeout():
    box = Sandbox(IMPATIENT)
    started = time.monotonic()
    result = box.run("def solve():\n    while True:\n        pass\n")
    assert_contained(result, "timeout")
    assert time.monotonic() - started < 30  # not a speed check: the call does not wait for the loop


def test_fork_bomb_cannot_fork_and_leaves_no_process(sandbox):
    box = Sandbox(IMPATIENT)
    # without the except it fails at the first fork; with it, it spins until the timeout
    raising = sandbox.run("import os\n\ndef solve():\n    while True:\n        os.fork()\n")
    assert_contained(raising, "exception")
    assert "BlockingIOError" in raising.error  # RLIMIT_NPROC = 1 binds for the fresh uid
    spinning = box.run("import os\n\ndef solve():\n    while True:\n        try:\n            os.fork()\n"
                       "        except OSError:\n            pass\n")
    assert_contained(spinning, "timeout")


def test_memory_bomb_hits_the_address_space_limit(sandbox):
    assert_contained(sandbox.run("def solve():\n    block = bytearray(4 * 1024**3)\n    return 1\n"), "memory_limit")
    growing = sandbox.run("def solve():\n    chunks = []\n    while True:\n        chunks.append(bytearray(16 * 1024**2))\n")
    assert_contained(growing, "memory_limit")


# ---- only our words reach the records ----

def echoing_interpret(report, timed_out, output_bytes, seconds, code, limits):
    """A weakened parent that passes what the code's process wrote into the error text (as the sandbox
    once did with its JSON reports)."""
    relayed = json.loads(report.decode())
    raw = bytes.fromhex(relayed["result"]) or bytes.fromhex(relayed["status"])
    return sandbox_module.SandboxResult(False, None, raw.decode("utf-8", "replace")[:200], "exception",
                                        seconds, output_bytes)


def writing(payload: bytes) -> str:
    """Code that writes `payload` into the result pipe (found through the runner's globals) and exits."""
    return ("import os, sys\n\ndef solve():\n    fd = sys.modules['__main__'].result_w\n"
            f"    os.write(fd, {payload!r})\n    os._exit(0)\n")


FORGERIES = {
    "result_pipe": writing(MARKER.encode()),
    # the sandbox's old JSON report, claiming a sandbox failure
    "old_report_format": writing(json.dumps({"ok": False, "kind": "sandbox_error",
                                             "error": "privileges were not dropped " + MARKER}).encode()),
    # a valid record followed by text
    "record_and_text": writing(b"0 5 0\n" + MARKER.encode()),
    # the runner's own reporting patched: the write its record uses now writes the code's text
    "patched_reporting": ("import os, sys\n\ndef solve():\n    record = sys._getframe(1).f_locals['record']\n"
                          "    for cell in record.__closure__:\n"
                          "        if cell.cell_contents is os.write:\n"
                          f"            cell.cell_contents = lambda fd, data: os.write(fd, {MARKER.encode()!r})\n"
                          "    return 5\n"),
}


@pytest.mark.parametrize("attack", list(FORGERIES))
def test_text_the_code_writes_never_becomes_the_error(sandbox, attack, monkeypatch):
    monkeypatch.setattr(sandbox_module, "interpret", echoing_interpret)
    weak = sandbox.run(FORGERIES[attack])
    assert "tml-forged-" in weak.error, f"{attack}: the forgery should reach a parent that echoes the channel"
    monkeypatch.undo()

    result = sandbox.run(FORGERIES[attack])
    assert_contained(result, "no_result")
    assert result.error == "the result channel held no valid report"
    assert "tml-" not in result_text(result) and "\\u001b" not in result_text(result)


def test_a_forged_exception_name_is_not_believed(sandbox, monkeypatch):
    """The code patches builtins and the runner's list of names so that its own class passes the runner's
    check: the runner is fooled (it sends a number past the real list), the parent's list is not."""
    seen = []
    real_interpret = sandbox_module.interpret
    monkeypatch.setattr(sandbox_module, "interpret",
                        lambda report, *rest: seen.append(json.loads(report)) or real_interpret(report, *rest))
    code = ("import builtins, sys\n\nclass Forged(Exception):\n    pass\n\n"
            f"Forged.__name__ = {MARKER!r}\nsetattr(builtins, {MARKER!r}, Forged)\n\n"
            "def solve():\n    sys._getframe(1).f_locals['exception_names'].append(" f"{MARKER!r})\n"
            "    raise Forged('rx-text')\n")
    result = sandbox.run(code)
    forged_record = bytes.fromhex(seen[-1]["result"])
    assert forged_record == b"3 %d 11\n" % len(EXCEPTION_NAMES), "the runner's own name check was fooled"
    assert_contained(result, "exception")
    assert result.error == "solve() raised an exception of a non-builtin class (line 11)"


def test_a_forged_privilege_failure_is_not_believed(sandbox, monkeypatch):
    """'privileges were not dropped' travels on the status pipe, which the worker closes before the code
    runs. Left open (weakened), the code writes to it and forges a sandbox failure that stops the run."""
    attack = ("import os\n\ndef solve():\n    for fd in range(3, 64):\n        try:\n"
              "            os.write(fd, b'P')\n        except OSError:\n            pass\n    return 5\n")
    closing = "    write(status_w, b\"C\")\n    os.close(status_w)\n"
    assert closing in sandbox_module.RUNNER_SOURCE
    monkeypatch.setattr(sandbox_module, "RUNNER_SOURCE",
                        sandbox_module.RUNNER_SOURCE.replace(closing, "    write(status_w, b\"C\")\n"))
    with pytest.raises(SandboxError):
        sandbox.run(attack)
    monkeypatch.undo()

    result = sandbox.run(attack)
    assert result.ok is False and result.error_kind == "no_result"  # it wrote 'P' into its own result pipe
    assert table(result.uid) == []
    honest = sandbox.run("def solve():\n    return 5\n")
    assert honest.ok and honest.value == 5


def test_environment_secrets_never_reach_the_result(sandbox, monkeypatch):
    monkeypatch.setenv("RX_FAKE_SECRET", FAKE_SECRET)
    monkeypatch.setenv("TINKER_API_KEY", FAKE_SECRET)
    encoded = str(int.from_bytes(FAKE_SECRET.encode(), "big"))
    attacks = [
        # what the environment holds, as an integer the label would carry
        "import os\n\ndef solve():\n    return int.from_bytes(os.environ.get('RX_FAKE_SECRET', '').encode(), 'big')\n",
        # printed and raised: output is discarded, exception text is never reported
        "import os\n\ndef solve():\n    print(dict(os.environ))\n    raise ValueError(repr(dict(os.environ)))\n",
        # the parent's environment through /proc (absent in the chroot, other uid anyway)
        ("import os\n\ndef solve():\n    data = open(f'/proc/{os.getppid()}/environ', 'rb').read()\n"
         "    return int.from_bytes(data[:12], 'big')\n"),
        "def solve():\n    return int.from_bytes(open('/proc/self/environ', 'rb').read()[:12], 'big')\n",
    ]
    results = [sandbox.run(code) for code in attacks]
    assert results[0].ok and results[0].value == 0  # the variable does not exist inside
    for result in results[1:]:
        assert_contained(result)
    for result in results:
        assert FAKE_SECRET not in result_text(result) and encoded not in result_text(result)
    assert os.environ["RX_FAKE_SECRET"] == FAKE_SECRET  # the host environment is untouched


def test_files_outside_the_sandbox_do_not_exist_for_the_code(sandbox, tmp_path):
    marker = "rx-private-marker-4be1"
    private = tmp_path / "private.txt"
    private.write_text(marker)
    private.chmod(0o644)  # world-readable: only the chroot keeps it away
    for path in (str(private), "/etc/passwd", "/proc/self/status", str(Path(__file__).resolve()), "../runner.py"):
        code = (f"def solve():\n    data = open({path!r}, 'rb').read()\n"
                "    raise RuntimeError(data[:80])\n")
        result = sandbox.run(code)
        assert_contained(result, "exception")
        assert "FileNotFoundError" in result.error, (path, result.error)
        assert marker not in result_text(result) and "root:" not in result_text(result)
    listing = sandbox.run("import os\n\ndef solve():\n    return len(os.listdir('/')) + len(os.listdir('..'))\n")
    assert listing.ok and listing.value == 0  # the whole visible file system is one empty directory


def test_privileges_cannot_be_regained(sandbox):
    result = sandbox.run("import os\n\ndef solve():\n    os.setuid(0)\n    return 1\n")
    assert_contained(result, "exception")
    assert result.error == "solve() raised PermissionError (line 4)"
    escape = sandbox.run("import os\n\ndef solve():\n    os.chroot('/')\n    return 1\n")  # the first step of a chroot escape
    assert_contained(escape, "exception")
    assert escape.error == "solve() raised PermissionError (line 4)"
    ids = sandbox.run("import os\n\ndef solve():\n    return len(set(os.getresuid() + os.getresgid())) * 1000 + "
                      "len(os.getgroups()) * 10 + (os.getuid() == 0)\n")
    assert ids.ok and ids.value == 1000  # one fresh id for everything, no groups, not root


def test_no_network(sandbox):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    try:
        attempts = [
            f"import socket\n\ndef solve():\n    socket.create_connection(('127.0.0.1', {port})).send(b'x')\n    return 1\n",
            f"def solve():\n    s = __import__('_socket').socket()\n    s.connect(('127.0.0.1', {port}))\n    return 1\n",
            "import sys\n\ndef solve():\n    return 1 if sys.modules.get('_socket') is not None else 0\n",
        ]
        first, second, third = (sandbox.run(code) for code in attempts)
        assert_contained(first, "exception")
        assert_contained(second, "exception")
        assert "ModuleNotFoundError" in first.error and "ModuleNotFoundError" in second.error
        assert third.ok and third.value == 0
        with pytest.raises(BlockingIOError):
            listener.accept()  # nothing ever connected
    finally:
        listener.close()
    assert sandbox.containment()["network"].startswith("empty network namespace")


def test_the_namespace_command_itself_has_no_network(sandbox, tmp_path):
    """Even with a socket module and native code (what memfd_create + execve would give), a process started
    the way the sandbox starts its runner cannot reach a listener on the host's loopback or an abstract
    unix socket. Without `--net` (weakened) the same probe connects."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract_name = f"\0rx-sandbox-test-{os.getpid()}"
    abstract.bind(abstract_name)
    abstract.listen(4)
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import socket\nreached = []\n"
        f"for family, address in ((socket.AF_INET, ('127.0.0.1', {listener.getsockname()[1]})), "
        f"(socket.AF_UNIX, {abstract_name!r})):\n"
        "    connection = socket.socket(family)\n    connection.settimeout(2)\n"
        "    try:\n        connection.connect(address)\n        reached.append(family.name)\n"
        "    except OSError:\n        pass\nprint('reached', *reached)\n")
    try:
        def reach(flags) -> bytes:
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(sandbox_module, "NAMESPACE_FLAGS", flags)
                completed = subprocess.run(sandbox._command(probe), capture_output=True, env={}, timeout=30,
                                           check=False)
            return completed.stdout.strip()

        assert reach(("--pid", "--fork")) == b"reached AF_INET AF_UNIX"  # weakened: no network namespace
        assert reach(sandbox_module.NAMESPACE_FLAGS) == b"reached"
    finally:
        listener.close()
        abstract.close()


def test_writing_files_is_refused_and_nothing_lands_on_the_host(sandbox, tmp_path):
    name = f"rx-sandbox-write-{os.getpid()}"
    for target in (name, f"/{name}", f"/tmp/{name}", f"../{name}", str(tmp_path / name)):
        result = sandbox.run(f"def solve():\n    open({target!r}, 'w').write('x')\n    return 1\n")
        assert_contained(result, "exception")
        assert "PermissionError" in result.error or "FileNotFoundError" in result.error
    assert not (tmp_path / name).exists() and not Path(f"/tmp/{name}").exists()


def test_subprocesses_cannot_be_spawned(sandbox, tmp_path):
    marker = tmp_path / "spawned"
    tmp_path.chmod(0o777)  # even if a shell ran as the sandbox uid it could write here
    attacks = [
        f"import os\n\ndef solve():\n    return os.system('touch {marker}')\n",
        f"import os\n\ndef solve():\n    os.posix_spawn('/bin/sh', ['sh', '-c', 'touch {marker}'], {{}})\n    return 1\n",
        f"import os\n\ndef solve():\n    os.execv('/bin/sh', ['sh', '-c', 'touch {marker}'])\n",
        "import subprocess\n\ndef solve():\n    return subprocess.run(['true']).returncode\n",
        "import _thread\n\ndef solve():\n    _thread.start_new_thread(print, ())\n    return 1\n",
    ]
    for code in attacks:
        result = sandbox.run(code)
        if result.ok:  # os.system reports a failed spawn as exit status 127, it runs nothing
            assert result.value == 127 << 8
            assert table(result.uid) == []
        else:
            assert_contained(result)
    assert not marker.exists()


def test_inherited_file_descriptors_reach_nothing_of_the_host(sandbox, tmp_path):
    secret_file = tmp_path / "held-open.txt"
    secret_file.write_text(FAKE_SECRET)
    held = os.open(secret_file, os.O_RDONLY)  # open in the parent: close_fds must keep it out
    try:
        code = ("import os\n\ndef solve():\n    found = 0\n    for fd in range(64):\n        try:\n"
                "            os.lseek(fd, 0, 0)\n            if os.read(fd, 64).startswith(b'rx-fake'):\n"
                "                found += 1\n        except OSError:\n            pass\n    return found\n")
        result = sandbox.run(code)
        assert result.ok and result.value == 0
    finally:
        os.close(held)


def test_signals_reach_nothing_outside_the_call(sandbox):
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        code = (f"import os\n\ndef solve():\n    hits = 0\n    for pid in (-1, 1, {os.getpid()}, {sleeper.pid}):\n"
                "        try:\n            os.kill(pid, 9)\n            hits += 1\n        except OSError:\n"
                "            pass\n    return hits\n")
        result = sandbox.run(code)
        # kill(-1) reaches only the caller's own uid (none but itself); its namespace's init is root
        assert result.ok and result.value == 0, result.to_dict()
        assert sleeper.poll() is None
    finally:
        sleeper.kill()
        sleeper.wait()


def test_huge_output_is_capped_and_never_reported(sandbox):
    result = sandbox.run("def solve():\n    print('rx-noise ' * 10**7)\n    return 1\n")
    assert_contained(result, "output_limit")
    assert result.output_bytes == sandbox.limits.max_output_bytes
    assert "rx-noise" not in result_text(result)
    quiet = sandbox.run("def solve():\n    print('rx-noise')\n    return 7\n")
    assert quiet.ok and quiet.value == 7 and "rx-noise" not in result_text(quiet)


@pytest.mark.parametrize(
    "returned, type_name",
    [("True", "bool"), ("3.0", "float"), ("'42'", "str"), ("None", "NoneType"),
     ("__import__('fractions').Fraction(4, 1)", "Fraction"), ("[1]", "list"), ("MyInt(5)", "a non-builtin type")],
)
def test_only_a_plain_int_is_accepted(sandbox, returned, type_name):
    result = sandbox.run(f"class MyInt(int):\n    pass\n\ndef solve():\n    return {returned}\n")
    assert_contained(result, "not_an_integer")
    assert result.error == f"solve() returned {type_name}, not int"


def test_errors_are_fixed_form_and_carry_no_code_text(sandbox):
    leaking = sandbox.run("class Leak(Exception):\n    pass\n\ndef solve():\n    raise Leak('rx-leak-text')\n")
    assert_contained(leaking, "exception")
    assert leaking.error == "solve() raised an exception of a non-builtin class (line 5)"
    assert "rx-leak-text" not in result_text(leaking)
    broken = sandbox.run("x = 1\n\ndef solve(:\n    return 1\n")
    assert_contained(broken, "compile_error")
    assert broken.error == "code does not compile: SyntaxError (line 3)"
    assert_contained(sandbox.run("def answer():\n    return 1\n"), "no_solve")
    assert_contained(sandbox.run("def solve():\n    return 10**40\n"), "integer_too_large")
    assert_contained(sandbox.run("import os\n\ndef solve():\n    os._exit(0)\n"), "no_result")


def test_the_host_is_unaffected_after_the_attacks(sandbox, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # this test's calls make their directories here
    bomb = Sandbox(IMPATIENT).run(
        "import os\n\ndef solve():\n    while True:\n        try:\n            os.fork()\n"
        "        except OSError:\n            pass\n")
    assert_contained(bomb, "timeout")
    after = sandbox.run("def solve():\n    return 2 + 2\n")
    assert after.ok and after.value == 4 and table(after.uid) == []
    assert list(tmp_path.iterdir()) == []  # every call's directory was removed


# ---- no fallback without walls ----

def test_the_sandbox_refuses_to_run_without_privilege_drop(monkeypatch):
    monkeypatch.setattr(sandbox_module.os, "geteuid", lambda: 1000)
    with pytest.raises(SandboxUnavailable, match="needs root"):
        Sandbox()


def test_without_unshare_the_sandbox_refuses_and_starts_nothing(monkeypatch, tmp_path):
    started = []
    real_popen = subprocess.Popen

    def recording_popen(*args, **kwargs):
        started.append(args)
        return real_popen(*args, **kwargs)

    monkeypatch.setattr(sandbox_module.subprocess, "Popen", recording_popen)
    monkeypatch.setenv("PATH", str(tmp_path))  # a PATH without `unshare`
    assert sandbox_module.namespaces_available() is False
    with pytest.raises(SandboxUnavailable, match="no `unshare` program"):
        Sandbox()
    assert started == []


def test_when_unshare_fails_the_sandbox_refuses(monkeypatch, tmp_path):
    fake = tmp_path / "unshare"
    fake.write_text("#!/bin/sh\necho 'unshare: unshare failed: Operation not permitted' >&2\nexit 1\n")
    fake.chmod(0o755)  # a named fake: namespaces refused, as in an unprivileged container
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SandboxUnavailable, match="fails here"):
        Sandbox()
