"""What a stock-SDK client process leaves running when it exits (issue 47, the flaky SIGABRT at exit).

The embedded server's client/config answer `use_pyqwest_transport: true` makes the SDK send through pyqwest,
whose Rust (tokio) runtime threads stay alive until the process ends, ServiceClient.close() or not, beside the
SDK's own daemon thread. A runtime thread that reaches into Python while the interpreter finalizes aborts the
process (SIGABRT) after every call succeeded: the named cause. `EMBEDDED_TINKER_CLIENT_PYQWEST=0` on the
server makes clients use plain httpx, and no such thread is left (the workaround).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from embedded_tinker.launch import LOCAL_API_KEY, start_server
from embedded_tinker.server import PYQWEST_ENV

CLIENT = textwrap.dedent("""
    import atexit, os, sys
    import tinker

    def native_threads():
        names = []
        for task in os.listdir("/proc/self/task"):
            try:
                names.append(open(f"/proc/self/task/{task}/comm").read().strip())
            except OSError:
                pass
        print("threads at exit:", ",".join(sorted(names)), flush=True)

    atexit.register(native_threads)
    service = tinker.ServiceClient(base_url=sys.argv[1], api_key=sys.argv[2])
    sampler = service.create_sampling_client(base_model="embedded/tiny-random")
    sampler = sampler.result() if hasattr(sampler, "result") else sampler
    sampler.sample(tinker.ModelInput.from_ints([1, 2, 3]), 1, tinker.SamplingParams(max_tokens=2)).result()
    service.close("success").result()
""")


def threads_left_at_exit(tmp_path, monkeypatch, pyqwest: str) -> list[str]:
    monkeypatch.setenv(PYQWEST_ENV, pyqwest)  # the server subprocess inherits it
    with start_server(checkpoint_dir=tmp_path / f"ckpt-{pyqwest}") as server:
        completed = subprocess.run([sys.executable, "-c", CLIENT, server.base_url, LOCAL_API_KEY], capture_output=True,
                                   text=True, timeout=300, env={**os.environ, "TINKER_TELEMETRY": "0"})
    assert completed.returncode == 0, completed.stderr[-2000:]
    line = next(line for line in completed.stdout.splitlines() if line.startswith("threads at exit:"))
    return line.split(":", 1)[1].strip().split(",")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/task")
def test_rust_runtime_threads_outlive_a_pyqwest_client_and_not_an_httpx_one(tmp_path, monkeypatch):
    assert "tokio-rt-worker" in threads_left_at_exit(tmp_path, monkeypatch, "1")
    assert "tokio-rt-worker" not in threads_left_at_exit(tmp_path, monkeypatch, "0")
