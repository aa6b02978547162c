"""The CLI's temporary Prefect server (flows.lifetime.TemporaryPrefectServer): a real server that records
the process's flow runs, started without importing Prefect's server module in the starting process (4 s of
its CPU while the CLI imports the flow), serving on a port that is its own from the moment it is started, and
gone when the process exits.

Before the port was bound here and handed over (`uvicorn --fd`), it was probed free and bound by the server
seconds later: another process's server could take it meanwhile and answer this one's health check (the
embedded launcher had the same window, tests/integration/test_launch_owns_its_port.py). The rival below
bound the port on that code."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest
from suite import REPO_ROOT, alive

pytestmark = pytest.mark.slow  # it starts a Prefect server, as the tests using the session's server do (conftest)

# Run in a fresh interpreter with no PREFECT_API_URL: a rival tries the port as soon as start() returns.
SCRIPT = """
import errno, json, socket, sys
import flows.lifetime as lifetime

server = lifetime.TemporaryPrefectServer(timeout_s=120).start()
with socket.socket() as rival:
    rival.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        rival.bind(("127.0.0.1", server.port))
        rival_bind = "bound"
    except OSError as error:
        rival_bind = errno.errorcode[error.errno]
server.wait_until_healthy()
server.use()

from prefect import flow
from prefect.client.orchestration import get_client
from prefect.settings import PREFECT_API_URL
from prefect.utilities.urls import url_for

@flow(name="temporary-server-ping")
def ping() -> int:
    return 7

answer = ping()
with get_client(sync_client=True) as client:
    runs = client.read_flow_runs()
print(json.dumps({
    "answer": answer, "rival_bind": rival_bind, "port": server.port, "api_url": PREFECT_API_URL.value(),
    "flow_runs": [run.name for run in runs], "states": [run.state_type.value for run in runs],
    "ui_link": url_for("flow-run", obj_id=str(runs[0].id)),
    "server_module_imported": "prefect.server.api.server" in sys.modules,
    "server_pid": server.process.pid,
    "server_home": server.home,
    "server_database": [line.split("=", 1)[1] for line in open(f"/proc/{server.process.pid}/environ").read().split(chr(0))
                        if line.startswith("PREFECT_API_DATABASE_CONNECTION_URL=")],
}))
"""


def test_the_temporary_server_records_the_flow_runs_and_ends_with_the_process(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(PREFECT_HOME=str(tmp_path / "prefect-home"), PREFECT_SERVER_ANALYTICS_ENABLED="false",
               PYTHONPATH=str(REPO_ROOT))
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])

    assert report["answer"] == 7
    assert report["rival_bind"] == "EADDRINUSE"  # the port was the server's before it started
    assert report["api_url"] == f"http://127.0.0.1:{report['port']}/api"
    assert report["states"] == ["COMPLETED"]  # the flow run is on this server, finished
    assert report["ui_link"] is None  # the server has no UI: no dead "View at" link
    assert not report["server_module_imported"]
    deadline = time.monotonic() + 10
    while alive(report["server_pid"]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(report["server_pid"]), "the temporary server outlived its process"
    with socket.socket() as probe:  # nothing listens on its port any more (SO_REUSEADDR: closed connections do not count)
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", report["port"]))
    # its runs were in a database of its own (issue 47, O1): two runs side by side never share one, and the user's
    # PREFECT_HOME holds none of them (a later `prefect server start` there shows none); gone with the server
    assert report["server_database"] == [f"sqlite+aiosqlite:///{report['server_home']}/prefect.db"]
    assert not (tmp_path / "prefect-home").exists() or not list((tmp_path / "prefect-home").glob("*.db*"))
    assert not os.path.exists(report["server_home"])
