"""The deployment, end to end on real parts: a Prefect server on loopback (own PREFECT_HOME, random
port; the session's `prefect_server` of tests/conftest.py, shared with the other tests that need one), deployments/setup.sh, deployments/serve.py in a subprocess, a run triggered with the
`prefect deployment run` CLI (blocked by capacity, re-queued, completed), and the RESULT the run leaves on
disk. Also the re-queue helper scheduling a real run of the served deployment.

Slow (server start ~8 s, one flow run with the embedded backend): `pytest -m slow tests/e2e/test_deployment.py`.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

from suite import REPO_ROOT, TRIMUON_SPEC, stop_process_group

# rehearsed (parameter rehearse=true): TriMuon's wiring run, a third of GS1's CPU (the capacity block, the re-queue and
# the resumed run do not depend on the spec's family; GS1's fan-out under the limit is test_shared_service_limit.py's)
LOCAL_SPEC = TRIMUON_SPEC
DEPLOYMENT = "run-experiment/local"  # @flow(name="run-experiment") / serve.py's DEPLOYMENT_NAME
# (the worker route, run-experiment/worker, with two workers and three queued runs: test_shared_service_limit.py;
# the served run below, blocked by capacity and re-queued, is this file's run through the serve route)

TERMINAL_STATE_TYPES = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}
FLOW_RUN_TIMEOUT_S = 540

pytestmark = pytest.mark.slow


def _wait_for(check, timeout_s: float, what: str, process: subprocess.Popen | None = None, log: Path | None = None):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        if process is not None and process.poll() is not None:
            break
        time.sleep(0.5)
    tail = log.read_text()[-3000:] if log and log.exists() else ""
    pytest.fail(f"{what} not reached within {timeout_s} s\n{tail}")


# This file's service-wide limit (deployments/setup.sh and the runs read RX_SERVICE_LIMIT_NAME): the session's
# Prefect server is shared by every test, and a `training-service` limit would put every later run of the
# session under 2 requests in flight
LIMIT = "training-service-test-deployment"


@pytest.fixture(scope="module")
def deployment_server(prefect_server):
    """The session's real Prefect server on loopback (tests/conftest.py); yields (api_url, env for CLI
    subprocesses: no ambient PREFECT_* setting, only this server's PREFECT_HOME and PREFECT_API_URL)."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("PREFECT_") and key not in ("TINKER_BASE_URL", "RX_RUNS_DIR")
    }
    env.update(
        **prefect_server.cli_env,
        RX_SERVICE_LIMIT_NAME=LIMIT,
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        HF_HUB_OFFLINE="1",
        TINKER_TELEMETRY="0",
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])),
    )
    return prefect_server.api_url, env


@pytest.fixture(scope="module")
def set_up(deployment_server):
    _, env = deployment_server
    for _ in range(2):  # the setup is idempotent
        done = subprocess.run(
            ["bash", str(REPO_ROOT / "deployments" / "setup.sh")],
            env={**env, "RX_SERVICE_CONCURRENCY": "2"}, capture_output=True, text=True, timeout=300, check=False,
        )
        assert done.returncode == 0, done.stderr + done.stdout
    return deployment_server


@pytest.fixture(scope="module")
def served_deployment(set_up, tmp_path_factory):
    """deployments/serve.py running; yields (api_url, env, deployment id, runs dir, serve log)."""
    api_url, env = set_up
    runs_dir = tmp_path_factory.mktemp("runs")
    log = runs_dir.parent / "serve.log"
    # TINKER_API_KEY: runs that name an embedded server by URL (the capacity test) use its local key
    # PREFECT_RUNNER_POLL_FREQUENCY: the serve process looks for runs to start every 2 s (default 10 s)
    serve_env = {**env, "RX_RUNS_DIR": str(runs_dir), "RX_CAPACITY_TIME_SCALE": "0.01", "TINKER_API_KEY": "tml-local",
                 "PREFECT_RUNNER_POLL_FREQUENCY": "2"}
    with open(log, "w") as log_file:
        serving = subprocess.Popen(
            [sys.executable, str(REPO_ROOT / "deployments" / "serve.py")],
            env=serve_env, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True,
        )
    try:
        def deployment_id():
            answer = httpx.get(f"{api_url}/deployments/name/{DEPLOYMENT}", timeout=5)
            return answer.json()["id"] if answer.status_code == 200 else None

        yield api_url, env, _wait_for(deployment_id, 120, "deployment registered", serving, log), runs_dir, log
    finally:
        stop_process_group(serving)


def test_setup_creates_work_pool_and_training_service_limit(set_up):
    api_url, _ = set_up
    pool = httpx.get(f"{api_url}/work_pools/local-process", timeout=5)
    assert pool.status_code == 200 and pool.json()["type"] == "process"
    limit = httpx.get(f"{api_url}/v2/concurrency_limits/{LIMIT}", timeout=5)
    assert limit.status_code == 200
    assert limit.json()["limit"] == 2 and limit.json()["active"] is True


# A stand-in for a second setup racing this one (a fault the real parts do not produce on demand): the first
# `inspect` of the work pool and of the limit has the real CLI create the thing, as the other setup would right
# after this one's check, then answers "not found"; every other call is the real `prefect`.
RACING_SETUP = """#!/usr/bin/env bash
kind="$1 $2"
if [[ "$kind" == "work-pool inspect" || "$kind" == "gcl inspect" ]] && [[ ! -e "$RACE_DIR/${1}" ]]; then
  touch "$RACE_DIR/${1}"
  if [[ "$1" == work-pool ]]; then "$REAL_PREFECT" work-pool create "$3" --type process >/dev/null
  else "$REAL_PREFECT" gcl create "$3" --limit 5 >/dev/null; fi
  exit 1
fi
exec "$REAL_PREFECT" "$@"
"""


def _setup_racing_another(script: Path, env: dict, tmp_path: Path, name: str) -> subprocess.CompletedProcess:
    """deployments/setup.sh (or `script`) run while another setup creates its work pool and limit between its
    check and its create (RACING_SETUP), on fresh names."""
    race_dir = tmp_path / name
    race_dir.mkdir()
    shim = race_dir / "prefect"
    shim.write_text(RACING_SETUP)
    shim.chmod(0o755)
    real = subprocess.run(["bash", "-c", "command -v prefect"], env=env, capture_output=True, text=True, check=True)
    return subprocess.run(
        ["bash", str(script)], capture_output=True, text=True, timeout=300, check=False,
        env={**env, "PATH": f"{race_dir}{os.pathsep}{env['PATH']}", "RACE_DIR": str(race_dir),
             "REAL_PREFECT": real.stdout.strip(), "RX_WORK_POOL": f"pool-{name}",
             "RX_SERVICE_LIMIT_NAME": f"limit-{name}", "RX_SERVICE_CONCURRENCY": "2"})


def test_setup_survives_another_setup_creating_the_same_things(deployment_server, tmp_path):
    """Two setups against one server (two terminals, two worker hosts): the one that loses the race between
    its check and its create still exits 0 and leaves the pool and its own slot count."""
    api_url, env = deployment_server
    setup = REPO_ROOT / "deployments" / "setup.sh"
    # without the fallback after a failed create, the race fails the setup (the check-then-create it replaces)
    weakened = tmp_path / "setup-check-then-create.sh"
    fallback = ('elif prefect work-pool inspect "$WORK_POOL" >/dev/null 2>&1; then\n'
                '  echo "work pool $WORK_POOL exists (another setup created it meanwhile)"\n')
    assert fallback in setup.read_text()
    weakened.write_text(setup.read_text().replace(fallback, ""))
    lost = _setup_racing_another(weakened, env, tmp_path, f"weak-{uuid.uuid4().hex[:8]}")
    assert lost.returncode != 0 and "already exists" in lost.stdout + lost.stderr, lost.stdout + lost.stderr

    name = f"race-{uuid.uuid4().hex[:8]}"
    done = _setup_racing_another(setup, env, tmp_path, name)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "another setup created it meanwhile" in done.stdout
    assert httpx.get(f"{api_url}/work_pools/pool-{name}", timeout=5).json()["type"] == "process"
    assert httpx.get(f"{api_url}/v2/concurrency_limits/limit-{name}", timeout=5).json()["limit"] == 2


def _flow_run(api_url: str, flow_run_id: str) -> dict:
    return httpx.get(f"{api_url}/flow_runs/{flow_run_id}", timeout=5).json()


def test_requeue_schedules_a_new_run_of_the_same_deployment(served_deployment, monkeypatch):
    """The helper as a blocked deployment run calls it: runtime ids of a run of the served deployment."""
    api_url, _, deployment_id, _, _ = served_deployment
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from flows.requeue import requeue_after_capacity_block

    blocked_run_id = str(uuid.uuid4())
    monkeypatch.setenv("PREFECT__RUNTIME__DEPLOYMENT__ID", deployment_id)
    monkeypatch.setenv("PREFECT__RUNTIME__FLOW_RUN__ID", blocked_run_id)
    started = dt.datetime.now(dt.UTC)
    params = {"backend": "local", "runs_dir": None, "rehearse": True}
    with temporary_settings({PREFECT_API_URL: api_url}):
        # an hour out, so the serve process leaves it alone during the test
        decision = requeue_after_capacity_block(str(LOCAL_SPEC), params, 1, 3, 3600, 24 * 60, started)
        again = requeue_after_capacity_block(str(LOCAL_SPEC), params, 1, 3, 3600, 24 * 60, started)
        over_budget = requeue_after_capacity_block(str(LOCAL_SPEC), params, 1, 3, 3600, 30, started)
        over_maximum = requeue_after_capacity_block(str(LOCAL_SPEC), params, 3, 3, 60, 24 * 60, started)
    try:
        assert decision.requeued and decision.requeue_count == 2, decision.reason
        assert again.flow_run_id == decision.flow_run_id  # idempotency key: one re-queue per blocked run
        scheduled = _flow_run(api_url, decision.flow_run_id)
        assert scheduled["deployment_id"] == deployment_id
        assert scheduled["state"]["type"] == "SCHEDULED" and scheduled["idempotency_key"] == f"{blocked_run_id}:requeue"
        assert scheduled["parameters"] == {"backend": "local", "runs_dir": None, "rehearse": True, "spec_path": str(LOCAL_SPEC),
                                           "requeue_count": 2}
        expected_start = dt.datetime.fromisoformat(scheduled["expected_start_time"])
        assert abs((expected_start - started).total_seconds() - 3600) < 60
        assert not over_budget.requeued and "wall budget" in over_budget.reason
        assert not over_maximum.requeued and "maximum 3" in over_maximum.reason
    finally:
        if decision.flow_run_id:
            httpx.delete(f"{api_url}/flow_runs/{decision.flow_run_id}", timeout=5)


def test_a_service_slot_holds_one_training_service_slot(set_up, monkeypatch):
    """Under a deployment a run's requests take slots of the limit setup.sh created, sized by it; one slot
    taken is one active slot until given back; strict: a limit that does not exist is an error."""
    api_url, _ = set_up
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from flows.concurrency import service_request_slots, take_prefect_slot

    monkeypatch.setenv("PREFECT__RUNTIME__DEPLOYMENT__ID", str(uuid.uuid4()))
    monkeypatch.setenv("RX_SERVICE_LIMIT_NAME", LIMIT)

    def active_slots():
        return httpx.get(f"{api_url}/v2/concurrency_limits/{LIMIT}", timeout=5).json()["active_slots"]

    with temporary_settings({PREFECT_API_URL: api_url}):
        assert service_request_slots().capacity == httpx.get(
            f"{api_url}/v2/concurrency_limits/{LIMIT}", timeout=5).json()["limit"]
        give_back = take_prefect_slot()
        assert active_slots() == 1
        give_back()
        assert active_slots() == 0
        with pytest.raises(Exception, match="no-such-limit"):
            take_prefect_slot("no-such-limit")


def test_capacity_block_is_requeued_and_the_requeued_run_completes(served_deployment):
    """An embedded server that refuses model creation ("trainer capacity exhausted") for a while:
    the deployment run ends CapacityBlocked with a capacity_block record and schedules a re-queued
    run of the same deployment, which resumes the run once capacity is back and completes it.
    (RX_CAPACITY_TIME_SCALE=0.01: the contract's 10 minutes of refusals become 6 s, its re-queue delay 6 s.
    The server refuses for 12 s from the first create_model call: long enough to block the first run,
    over before the re-queued run, which starts at least 6 s after the block, asks.)"""
    from embedded_tinker.faults import FaultConfig
    from embedded_tinker.launch import start_server

    api_url, env, deployment_id, runs_dir, serve_log = served_deployment
    with start_server(faults=FaultConfig(capacity_exhausted_seconds=12)) as server:
        triggered = subprocess.run(
            ["prefect", "deployment", "run", DEPLOYMENT, "--param", f"spec_path={LOCAL_SPEC}",
             "--param", "rehearse=true", "--param", "rehearsal_scale=wiring", "--param", "fresh=true",  # a new replicate, whatever this runs dir already holds
             "--param", f"backend={server.base_url}"],
            env=env, capture_output=True, text=True, timeout=120, check=False,
        )
        assert triggered.returncode == 0, triggered.stderr + triggered.stdout
        first_id = re.search(r"UUID: ([0-9a-f-]{36})", triggered.stdout).group(1)

        def finished(run_id):
            run = _flow_run(api_url, run_id)
            return run if run["state"]["type"] in TERMINAL_STATE_TYPES else None

        first = _wait_for(lambda: finished(first_id), 240, "blocked run final state", log=serve_log)
        assert first["state"]["name"] == "CapacityBlocked", first["state"].get("message")
        assert first["state"]["type"] == "FAILED"  # no decision: not a green Completed badge in the UI
        assert "re-queued as flow run" in first["state"]["message"]

        def requeued_run():
            runs = httpx.post(f"{api_url}/flow_runs/filter", json={"flow_runs": {
                "idempotency_key": {"any_": [f"{first_id}:requeue"]}}}, timeout=5).json()
            return runs[0] if runs else None

        second = _wait_for(requeued_run, 30, "re-queued run")
        assert second["deployment_id"] == deployment_id and second["parameters"]["requeue_count"] == 1
        second = _wait_for(lambda: finished(second["id"]), FLOW_RUN_TIMEOUT_S, "re-queued run final state",
                           log=serve_log)
        assert second["state"]["name"] == "Completed", second["state"].get("message")

    run_dir = next(p.parent for p in runs_dir.glob("*/result.json")
                   if any(json.loads(line).get("event") == "capacity_block"
                          for line in (p.parent / "events.jsonl").read_text().splitlines()))
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    block = next(e for e in events if e["event"] == "capacity_block")
    assert block["comparison_steps_completed"] == 0 and block["released_clients"] is True
    assert "capacity exhausted" in block["error"]
    assert any(e["event"] == "run_resumed" for e in events)
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "succeeded" and result["verdict"] in ("supported", "refuted")
    assert any(e["event"] == "capacity_wait" for e in events) and "capacity_wait" not in result  # no stale wait
