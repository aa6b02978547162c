"""A run whose Prefect server is killed mid-run stops with exit 2 and one line, its record resumable, and a re-run
once a server answers resumes it (flows.run_guard; issue 47, O3). A real temporary Prefect server (flows.lifetime),
really killed (SIGKILL) while a stand-in flow of real tasks writes to a real run store; the run's CLI wiring
(flows.run wraps the flow in the same RunGuard) is not started, for its backend's weight.

Without the guard the same run hung: its tasks' state updates retried for about 100 s, and its log and event
workers then waited at exit for the server that was gone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from suite import GS1_SPEC, REPO_ROOT

pytestmark = pytest.mark.slow  # it starts Prefect servers (pyproject.toml: markers)

STAND_IN_RUN = textwrap.dedent("""
    import contextlib, os, signal, sys, time
    from pathlib import Path
    import flows.lifetime as lifetime
    from experiment.contract.plan import build_plan
    from experiment.contract.spec import load_spec
    from experiment.run.store import RunStore
    from flows.run_guard import RunGuard

    spec_path, runs, guarded = sys.argv[1], Path(sys.argv[2]), sys.argv[3] == "guarded"
    spec = load_spec(spec_path)
    plan = build_plan(spec)
    server = lifetime.TemporaryPrefectServer(300).start()
    server.wait_until_healthy()
    server.use()
    store, how = RunStore.claim(runs, spec, plan)
    print(how, store.run_id, flush=True)
    from prefect import flow, task

    @task
    def step(number):
        store.append_event("progress", step=number)
        time.sleep(0.2)
        return number

    @flow(name="stand-in-run")
    def stand_in():
        for number in range(3 if how == "resumed" else 1000):
            step(number)
            if number == 3:
                os.kill(server.process.pid, signal.SIGKILL)  # the Prefect server is lost mid-run

    guard = RunGuard(store, plan, server.api_url, server.home, lost_after_s=10) if guarded else contextlib.nullcontext()
    with guard:
        stand_in()
    store.update_result(status="succeeded", verdict="supported", summary="stand-in run finished")
    print("finished", flush=True)
""")


def _run(runs, mode, timeout):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(PYTHONPATH=str(REPO_ROOT), PREFECT_HOME=str(runs.parent / "prefect-home"),
               PREFECT_SERVER_ANALYTICS_ENABLED="false")
    return subprocess.run([sys.executable, "-c", STAND_IN_RUN, str(GS1_SPEC), str(runs), mode], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_a_prefect_server_lost_mid_run_stops_it_resumable_and_a_rerun_resumes(tmp_path):
    with pytest.raises(subprocess.TimeoutExpired):  # attack first: unguarded, the run neither ends nor says why
        _run(tmp_path / "weak", "unguarded", timeout=150)

    runs = tmp_path / "runs"
    stopped = _run(runs, "guarded", timeout=300)
    assert stopped.returncode == 2, stopped.stderr[-3000:]
    how, run_id = stopped.stdout.split()[:2]
    assert how == "new" and "Traceback" not in stopped.stderr
    # one line says why (beside the flow's own log lines, which go on until the process ends)
    (said,) = [line for line in stopped.stderr.splitlines() if line.startswith(f"run {run_id} stopped: ")]
    assert said.startswith(f"run {run_id} stopped: the Prefect server at http://127.0.0.1:") and said.endswith(
        "its record says so, and running the same command again once a Prefect server answers resumes it")
    result = json.loads((runs / run_id / "result.json").read_text())
    assert result["status"] == "failed" and "stopped answering" in result["interruption"]["reason"]

    resumed = _run(runs, "guarded", timeout=300)  # a new temporary server answers
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert resumed.stdout.split()[:2] == ["resumed", run_id] and "finished" in resumed.stdout
    events = [json.loads(line) for line in (runs / run_id / "events.jsonl").read_text().splitlines()]
    assert [e["event"] for e in events].count("interrupted") == 1
