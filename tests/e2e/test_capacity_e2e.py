"""Runs that survive a busy service and a killed process (issue 5), end to end on real parts.

The GS1 rehearsal at the wiring scale (2 steps per arm, 48 eval items; `flows.run SPEC --rehearse
--rehearsal-scale wiring`) is run:
- cleanly, on the embedded backend: the session's one run (tests/e2e/conftest.py,
  gs1_wiring_rehearsal, shared by the files and xdist workers that check it);
- against an embedded server (TINKER_BASE_URL) answering 0.4% of all calls with 429 and 0.4% with 503 (seeded; about
  a dozen of each in a run of about 3,200 calls, on every endpoint, checked from the server's healthz): the SDK's own retries
  and the run's capacity policy (time-scaled) carry it to the same decision. (The stock SDK pauses
  all sampling for 1 s after a 429 on a sample and throttles it for 10 s more, and waits at least
  1 s before retrying a 503, whatever Retry-After says: a higher rate only buys a slower run.);
- killed in the middle of arm training and run again with the same command: the re-run resumes
  the same run directory (passed gates reused, arms continued from their last saved step) and
  reaches the same decision, with no optimizer step applied twice.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pandas as pd
import pytest

from embedded_tinker.launch import LOCAL_API_KEY
from experiment.contract.spec import load_spec
from suite import GS1_SPEC, GS1_WIRING_ARGS, REPO_ROOT, only_run_dir

pytestmark = pytest.mark.slow
WIRING = load_spec(GS1_SPEC, rehearse=True, rehearsal_scale="wiring")  # the sizes of the runs below


def flow_command(runs_dir: Path) -> list[str]:
    return [sys.executable, "-m", "flows.run", str(GS1_SPEC), *GS1_WIRING_ARGS, "--runs-dir", str(runs_dir)]


@pytest.fixture(scope="module")
def prefect_env(prefect_server) -> dict[str, str]:
    """The runs of this module record their flow runs on the session's Prefect server (no temporary server each)."""
    return prefect_server.cli_env


def flow_env(prefect_env: dict[str, str], **extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "RX_CAPACITY_TIME_SCALE": "0.01", **prefect_env, **extra}
    if "TINKER_BASE_URL" not in extra:
        env.pop("TINKER_BASE_URL", None)
    return env


def decision_of(run_dir: Path) -> dict:
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "succeeded", result.get("summary")
    return {key: result[key] for key in ("verdict", "confidence", "effect", "ci")} | {
        "accuracy": {arm: metrics["accuracy"] for arm, metrics in result["metrics"]["arms"].items()}}


@pytest.fixture(scope="module")
def clean_decision(gs1_wiring_rehearsal) -> dict:
    return decision_of(gs1_wiring_rehearsal["run_dir"])


def test_injected_429_and_503_reach_the_same_decision(clean_decision, tmp_path, prefect_env):
    from embedded_tinker.faults import FaultConfig
    from embedded_tinker.launch import start_server

    faults = FaultConfig(rate_429=0.004, rate_503=0.004, retry_after_ms=1, seed=1)
    with start_server(faults=faults) as server:
        done = subprocess.run(flow_command(tmp_path), cwd=REPO_ROOT,
                              env=flow_env(prefect_env, TINKER_BASE_URL=server.base_url, TINKER_API_KEY=LOCAL_API_KEY),
                              capture_output=True, text=True, timeout=1500)
        injected = httpx.get(f"{server.base_url}/api/v1/healthz", timeout=10).json()["faults_injected"]
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert injected["429"] >= 3 and injected["503"] >= 3, injected  # the run met refusals of both kinds
    faulty = decision_of(only_run_dir(tmp_path))
    assert (faulty["verdict"], faulty["confidence"]) == (clean_decision["verdict"], clean_decision["confidence"])
    print(f"clean {clean_decision} / with faults {faulty}, injected {injected}")  # shown with -rP


def test_killed_run_resumes_to_the_same_decision(clean_decision, tmp_path, prefect_env):
    process = subprocess.Popen(flow_command(tmp_path), cwd=REPO_ROOT, env=flow_env(prefect_env),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    table = None
    deadline = time.monotonic() + 600
    try:
        while time.monotonic() < deadline and process.poll() is None:
            tables = list(tmp_path.glob("*/tables/arm_checkpoints.parquet"))
            if tables and len(pd.read_parquet(tables[0])) >= 2:  # each arm has saved at least one step
                table = tables[0]
                break
            time.sleep(0.5)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)  # the flow and its embedded server, mid-training
        process.wait()
    assert table is not None, "the run never reached arm training"
    killed_at = pd.read_parquet(table)
    run_dir = table.parent.parent
    assert json.loads((run_dir / "result.json").read_text())["status"] == "running"

    done = subprocess.run(flow_command(tmp_path), cwd=REPO_ROOT, env=flow_env(prefect_env), capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    resumed_decision = decision_of(run_dir)
    assert (resumed_decision["verdict"], resumed_decision["confidence"]) == (
        clean_decision["verdict"], clean_decision["confidence"])
    print(f"clean {clean_decision} / killed and resumed {resumed_decision}")  # shown with -rP
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    resumed = next(e for e in events if e["event"] == "run_resumed")
    assert {"spec_intake", "preflight_probe", "restoration_preflight", "activation_gate"} <= set(resumed["reused_gates"])
    # every saved step is there exactly once per arm: no optimizer step was applied twice
    final = pd.read_parquet(table)
    steps_per_arm = WIRING.steps
    assert sorted(final.groupby("arm")["step"].apply(list).sum()) == sorted(list(range(1, steps_per_arm + 1)) * 2)
    assert len(final) == 2 * steps_per_arm and 2 <= len(killed_at) < len(final)  # the resumed run trained the rest
    steps = pd.read_parquet(run_dir / "tables" / "training_steps.parquet")
    assert not steps.duplicated(["arm", "step"]).any()
