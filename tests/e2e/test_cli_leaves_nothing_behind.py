"""Nothing outlives `python -m flows.run`: after `kill -9` of the CLI, the embedded server and Prefect's
temporary server it started exit too (parent-death signal). A backend refusing connections fails the
run at start within about 30 s with one line (exit 2), not as a capacity wait."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from suite import alive, children_of


REPO_ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]  # a full local run on a loaded 2-core machine
LOCAL_GS1 = REPO_ROOT / "specs" / "gs1_kernel_vs_grpo_gsm8k.json"  # rehearsed
CHILD_MARKERS = {"embedded": "embedded_tinker", "prefect": "prefect.server.api.server:create_app"}


def cli_env(tmp_path: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PREFECT_HOME": str(tmp_path / "prefect-home")}
    for name in ("PREFECT_API_URL", "TINKER_BASE_URL", "TINKER_API_KEY"):
        env.pop(name, None)
    return env


def test_kill_9_of_the_cli_takes_its_servers_down(tmp_path):
    cli = subprocess.Popen([sys.executable, "-m", "flows.run", str(LOCAL_GS1), "--rehearse", "--rehearsal-scale", "wiring", "--runs-dir", str(tmp_path / "runs")],
                           cwd=REPO_ROOT, env=cli_env(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    servers: dict[str, int] = {}
    try:
        deadline = time.monotonic() + 400
        while len(servers) < len(CHILD_MARKERS) and time.monotonic() < deadline and cli.poll() is None:
            for pid, command in children_of(cli.pid).items():
                for name, marker in CHILD_MARKERS.items():
                    if marker in command:
                        servers[name] = pid
            time.sleep(0.5)
        assert set(servers) == set(CHILD_MARKERS), f"servers seen before the kill: {servers}"
        time.sleep(2)  # both have passed their start-up
    finally:
        os.kill(cli.pid, signal.SIGKILL)
        cli.wait()
    deadline = time.monotonic() + 60
    while any(alive(pid) for pid in servers.values()) and time.monotonic() < deadline:
        time.sleep(0.5)
    survivors = {name: pid for name, pid in servers.items() if alive(pid)}
    for pid in survivors.values():  # clean up before failing
        os.kill(pid, signal.SIGKILL)
    assert not survivors, f"outlived kill -9 of the CLI: {survivors}"


def test_a_refusing_backend_fails_at_start_with_one_line(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    runs = tmp_path / "runs"
    done = subprocess.run([sys.executable, "-m", "flows.run", str(LOCAL_GS1), "--backend", f"http://127.0.0.1:{port}",
                           "--runs-dir", str(runs)], cwd=REPO_ROOT, env=cli_env(tmp_path),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    # refused at start, before the claim: no run directory was made (no timed bound: the machine's load decides time)
    assert not any(path.is_dir() for path in runs.glob("*")) if runs.exists() else True
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "unreachable" in lines[0] and f"127.0.0.1:{port}" in lines[0]
