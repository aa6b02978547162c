"""One capacity for the whole service (issue 30.1), end to end on real parts: the session's Prefect server,
deployments/setup.sh (service limit of 2, under a name of its own), `prefect deploy` of deployments/prefect.yaml
(`run-experiment/worker`, a name of its own), three runs queued with `prefect deployment run` against one
embedded backend (by URL), then two process workers (`--limit 1` each) started to execute them.

Checked: each queued run executes exactly once (one flow run each, run_count 1, one run directory each,
one index row each, every index row a directory), both workers took runs (the deployment's own limit no
longer serialises them), the backend never had more than 2 requests in flight at once (its own count,
healthz `max_in_flight`: the limit holds per request, experiment/service/request_slots.py), every run's requests
took slots of the shared limit (its log says so, and no slot is left held), each flow run is named after its
run id. Printed: runs per worker, the backend's most requests in flight, the test's time.

While the workers run them, TriMuon's wiring rehearsal runs from the CLI (`python -m flows.run` with
PREFECT_API_URL naming the same server) against the same backend: its requests take the same slots (its output
says so), and the backend's count of requests in flight covers the CLI run and the queued runs together. (A
second test ran GS1's wiring rehearsal from the CLI against a backend of its own, with a setup of its own: 55 of
the file's 207 CPU-s.)

Which worker ran a run is read from the workers' logs: "submitting flow run 'ID'" minus "Aborted submission
of flow run 'ID'". Two workers that poll while a run is scheduled may both pick it; both log "submitting",
the server lets one set it Pending and the other logs the abort (prefect/workers/base.py). Counting
"submitting" alone once listed one run under both workers: one more id than dispatched.

The runs: wiring rehearsals against the backend by URL, GS1's (its evaluation samples every item at once
and each RL step every group: 65 requests in flight at once without the limit) and TriMuon's twice (one
request at a time each). Alone on 2 cores a GS1 wiring run takes about a minute, a TriMuon one half that.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import httpx
import pandas as pd
import pytest

from embedded_tinker.launch import LOCAL_API_KEY, start_server
from suite import GS1_SPEC, REPO_ROOT, TRIMUON_SPEC, stop_process_group

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
DEPLOYMENT = "run-experiment/worker"
SERVICE_LIMIT = 2
# this file's own service-wide limit (RX_SERVICE_LIMIT_NAME, read by setup.sh and the runs): a `training-service`
# limit on the session's shared Prefect server would hold every later run of the session to 2 requests in flight
LIMIT = "training-service-test-shared-limit"
SPECS = (GS1_SPEC, TRIMUON_SPEC, TRIMUON_SPEC)  # GS1's evaluation and RL steps fan out most
RUNS = len(SPECS)
WORKERS = ("worker-a", "worker-b")
FINAL_STATES = {"Completed", "GateFailed"}


@pytest.fixture(scope="module")
def cli_env(prefect_server) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("PREFECT_") and key not in ("TINKER_BASE_URL", "RX_RUNS_DIR")}
    env.update(**prefect_server.cli_env, RX_SERVICE_LIMIT_NAME=LIMIT, PREFECT_SERVER_ANALYTICS_ENABLED="false", HF_HUB_OFFLINE="1",
               TINKER_TELEMETRY="0",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])))
    return env


def _ran(flow_run_id: str, worker_log: str) -> bool:
    """The worker started the flow run: it submitted it, and the server did not abort the submission (another
    worker had set it Pending first)."""
    return (f"submitting flow run '{flow_run_id}'" in worker_log
            and f"Aborted submission of flow run '{flow_run_id}'" not in worker_log)


def _cli(args: list[str], env: dict[str, str], **extra) -> subprocess.CompletedProcess:
    done = subprocess.run(args, env={**env, **extra}, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def test_two_workers_three_queued_runs_and_a_cli_run_share_one_service_limit(prefect_server, cli_env, tmp_path):
    started = time.monotonic()
    _cli(["bash", "deployments/setup.sh"], cli_env, RX_SERVICE_CONCURRENCY=str(SERVICE_LIMIT))
    _cli(["prefect", "--no-prompt", "deploy", "--all", "--prefect-file", "deployments/prefect.yaml"], cli_env)
    runs_dir = tmp_path / "runs"
    workers: list[subprocess.Popen] = []
    cli_run: subprocess.Popen | None = None
    with start_server() as backend:
        flow_run_ids = []
        for spec in SPECS:  # queued before any worker runs: three runs waiting
            done = _cli(["prefect", "deployment", "run", DEPLOYMENT, "--param", f"spec_path={spec}",
                         "--param", "rehearse=true", "--param", "rehearsal_scale=wiring", "--param", "fresh=true",
                         "--param", f"backend={backend.base_url}", "--param", f"runs_dir={runs_dir}"], cli_env)
            flow_run_ids.append(re.search(r"UUID: ([0-9a-f-]{36})", done.stdout).group(1))
        worker_env = {**cli_env, "TINKER_API_KEY": LOCAL_API_KEY, "PREFECT_WORKER_QUERY_SECONDS": "1"}
        try:
            for name in WORKERS:
                with open(tmp_path / f"{name}.log", "w") as log:
                    workers.append(subprocess.Popen(
                        ["prefect", "worker", "start", "--pool", "local-process", "--limit", "1", "--name", name],
                        env=worker_env, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
            # a CLI run in a terminal whose PREFECT_API_URL names the shared server, on the same backend meanwhile
            with open(tmp_path / "cli.log", "w") as log:
                cli_run = subprocess.Popen(
                    [sys.executable, "-m", "flows.run", str(TRIMUON_SPEC), "--rehearse", "--rehearsal-scale", "wiring",
                     "--fresh", "--runs-dir", str(tmp_path / "cli-runs")],
                    env={**cli_env, "TINKER_BASE_URL": backend.base_url, "TINKER_API_KEY": LOCAL_API_KEY},
                    cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT)
            deadline = time.monotonic() + 720
            while True:
                runs = [prefect_server.api("GET", f"/flow_runs/{run_id}") for run_id in flow_run_ids]
                if all(run["state"]["type"] in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED") for run in runs):
                    break
                assert time.monotonic() < deadline, [run["state"]["name"] for run in runs]
                time.sleep(2)
            cli_code = cli_run.wait(timeout=max(deadline - time.monotonic(), 60))
        finally:
            if cli_run is not None and cli_run.poll() is None:
                cli_run.kill()
                cli_run.wait()
            for worker in workers:
                stop_process_group(worker)
        backend_health = httpx.get(f"{backend.base_url}/api/v1/healthz", timeout=10).json()

    logs = {name: (tmp_path / f"{name}.log").read_text() for name in WORKERS}
    per_worker = {name: sorted(run_id for run_id in flow_run_ids if _ran(run_id, log)) for name, log in logs.items()}
    aborted = sum(f"Aborted submission of flow run '{run_id}'" in log for log in logs.values() for run_id in flow_run_ids)
    print(f"runs per worker: { {name: len(ids) for name, ids in per_worker.items()} } ({aborted} submissions aborted); "
          f"backend: {backend_health['api_calls']} API calls, at most {backend_health['max_in_flight']} in flight at "
          f"once (service limit {SERVICE_LIMIT}); {time.monotonic() - started:.0f} s")
    assert backend_health["max_in_flight"] <= SERVICE_LIMIT
    cli_output = (tmp_path / "cli.log").read_text()
    assert cli_code in (0, 1), cli_output[-3000:]  # a verdict or a gate's failure: the CLI run went through
    assert f"take a slot of the service-wide limit '{LIMIT}'" in cli_output, cli_output[-3000:]
    # each queued run executed exactly once, by one worker; both workers took runs
    assert sorted(run_id for ids in per_worker.values() for run_id in ids) == sorted(flow_run_ids), logs
    assert all(per_worker.values()), per_worker
    for run in runs:
        assert run["state"]["name"] in FINAL_STATES, (run["state"]["name"], run["state"].get("message"))
        assert run["run_count"] == 1
    # one run directory per flow run, named as the flow run; the index lists exactly those
    run_dirs = sorted(path.name for path in runs_dir.iterdir() if path.is_dir() and not path.name.startswith("."))
    assert sorted(run["name"] for run in runs) == run_dirs and len(run_dirs) == RUNS
    index = pd.read_parquet(runs_dir / "index.parquet")
    assert sorted(index["run_id"]) == run_dirs
    for run_id in run_dirs:
        result = json.loads((runs_dir / run_id / "result.json").read_text())
        status = index.loc[index["run_id"] == run_id, "status"].item()
        assert result["status"] in ("succeeded", "failed") and status == result["status"]
        events = [json.loads(line) for line in (runs_dir / run_id / "events.jsonl").read_text().splitlines()]
        assert [event["event"] for event in events].count("run_created") == 1
    # every run's service calls took slots of the shared limit, and none is left held
    for run in runs:
        # a run's last log lines reach the server after the run's state (Prefect ships logs in batches): wait for them
        lines, deadline = [], time.monotonic() + 60
        while not any("service requests: at most" in line["message"] for line in lines) and time.monotonic() < deadline:
            time.sleep(0.5 if lines else 0)
            lines = prefect_server.api("POST", "/logs/filter", json={"logs": {"flow_run_id": {"any_": [run["id"]]}}})
        assert any(f"take a slot of the service-wide limit '{LIMIT}'" in line["message"] for line in lines)
        assert any("service requests: at most" in line["message"] for line in lines)
    limit = prefect_server.api("GET", f"/v2/concurrency_limits/{LIMIT}")
    assert limit["limit"] == SERVICE_LIMIT and limit["active_slots"] == 0

