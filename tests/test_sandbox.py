"""Adversarial tests of the solve() sandbox: every attack runs for real in a real subprocess.

Each attack must end as an execution error (ok False, a fixed-form error), leave no process of
the sandbox's uids alive, and leave the host (this test process, its files, its environment)
unaffected. Text the attack produced never reaches the result.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from experiment import sandbox as sandbox_module
from experiment.sandbox import (
    SANDBOX_UID_BASE,
    SANDBOX_UID_SPAN,
    Sandbox,
    SandboxLimits,
    SandboxUnavailable,
    namespaces_available,
)

pytestmark = pytest.mark.skipif(
    os.name != "posix" or os.geteuid() != 0,
    reason="the sandbox runs only where it can chroot and drop to a fresh uid (root); elsewhere it refuses",
)

FAKE_SECRET = "rx-fake-secret-7f3a9c1e5b"
MODES = [pytest.param(True, id="namespaces"), pytest.param(False, id="no-namespaces")]


def sandbox_processes(uid: int | None = None) -> list[int]:
    """Pids of live processes owned by `uid`, or by any sandbox uid (other runs may hold some)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("Uid:"):
                real_uid = int(line.split()[1])
                if real_uid == uid or (uid is None and SANDBOX_UID_BASE <= real_uid < SANDBOX_UID_BASE + SANDBOX_UID_SPAN):
                    found.append(int(entry.name))
    return found


def result_text(result) -> str:
    return json.dumps(result.to_dict())


def assert_contained(result, kind: str | None = None) -> None:
    assert result.ok is False and result.value is None, result.to_dict()
    assert result.error and len(result.error) <= 200
    if kind is not None:
        assert result.error_kind == kind, result.to_dict()
    assert SANDBOX_UID_BASE <= result.uid < SANDBOX_UID_BASE + SANDBOX_UID_SPAN
    assert sandbox_processes(result.uid) == [], "a sandboxed process outlived its call"


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox()


def test_a_plain_solve_returns_its_integer(sandbox):
    result = sandbox.run("import math\n\ndef solve():\n    apples = 12\n    return math.gcd(apples, 18) * 4 - 30\n")
    assert result.ok and result.value == -6 and result.error is None
    assert result.containment["environment"] == "empty"
    assert result.containment["rlimits"]["nproc"] == 1


@pytest.mark.parametrize("use_namespaces", MODES)
def test_infinite_loop_is_killed_at_the_wall_timeout(use_namespaces):
    if use_namespaces and not namespaces_available():
        pytest.skip("unshare --net --pid is not available here")
    box = Sandbox(SandboxLimits(timeout_s=1.0), use_namespaces=use_namespaces)
    started = time.monotonic()
    result = box.run("def solve():\n    while True:\n        pass\n")
    assert_contained(result, "timeout")
    assert time.monotonic() - started < 3.0


@pytest.mark.parametrize("use_namespaces", MODES)
def test_fork_bomb_cannot_fork_and_leaves_no_process(use_namespaces):
    if use_namespaces and not namespaces_available():
        pytest.skip("unshare --net --pid is not available here")
    box = Sandbox(SandboxLimits(timeout_s=1.0), use_namespaces=use_namespaces)
    # without the except it fails at the first fork; with it, it spins until the timeout
    raising = box.run("import os\n\ndef solve():\n    while True:\n        os.fork()\n")
    assert_contained(raising, "exception")
    assert "BlockingIOError" in raising.error  # RLIMIT_NPROC = 1 binds for the fresh uid
    spinning = box.run("import os\n\ndef solve():\n    while True:\n        try:\n            os.fork()\n"
                       "        except OSError:\n            pass\n")
    assert_contained(spinning, "timeout")


def test_memory_bomb_hits_the_address_space_limit(sandbox):
    assert_contained(sandbox.run("def solve():\n    block = bytearray(4 * 1024**3)\n    return 1\n"), "memory_limit")
    growing = sandbox.run("def solve():\n    chunks = []\n    while True:\n        chunks.append(bytearray(16 * 1024**2))\n")
    assert_contained(growing, "memory_limit")


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
    if namespaces_available():
        assert Sandbox().containment()["network"].startswith("empty network namespace")


def test_the_namespace_command_itself_has_no_network(tmp_path):
    """Even with a socket module (our runner removes it), the sandbox's unshare command line sees no
    network: a plain Python script run through it cannot reach a listener on the host's loopback."""
    if not namespaces_available():
        pytest.skip("unshare --net --pid is not available here")
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.setblocking(False)
    probe = tmp_path / "probe.py"
    probe.write_text("import socket\nconnection = socket.socket()\nconnection.settimeout(1)\ntry:\n"
                     f"    connection.connect(('127.0.0.1', {listener.getsockname()[1]}))\n    print('connected')\n"
                     "except OSError as err:\n    print('refused', type(err).__name__)\n")
    try:
        completed = subprocess.run(Sandbox(use_namespaces=True)._command(probe), capture_output=True, env={},
                                   timeout=20, check=False)
        assert completed.stdout.startswith(b"refused"), completed
        with pytest.raises(BlockingIOError):
            listener.accept()
    finally:
        listener.close()


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
            assert sandbox_processes(result.uid) == []
        else:
            assert_contained(result)
    assert not marker.exists()


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
    assert_contained(sandbox.run("def solve(:\n    return 1\n"), "compile_error")
    assert_contained(sandbox.run("def answer():\n    return 1\n"), "no_solve")
    assert_contained(sandbox.run("def solve():\n    return 10**40\n"), "integer_too_large")
    assert_contained(sandbox.run("import os\n\ndef solve():\n    os._exit(0)\n"), "no_result")


def test_the_host_is_unaffected_after_the_attacks(sandbox, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # this test's calls make their directories here
    bomb = sandbox.run("import os\n\ndef solve():\n    while True:\n        try:\n            os.fork()\n"
                       "        except OSError:\n            pass\n")
    assert_contained(bomb, "timeout")
    after = sandbox.run("def solve():\n    return 2 + 2\n")
    assert after.ok and after.value == 4 and sandbox_processes(after.uid) == []
    assert list(tmp_path.iterdir()) == []  # every call's directory was removed


def test_the_sandbox_refuses_to_run_without_privilege_drop(monkeypatch):
    monkeypatch.setattr(sandbox_module.os, "geteuid", lambda: 1000)
    with pytest.raises(SandboxUnavailable, match="needs root"):
        Sandbox()
