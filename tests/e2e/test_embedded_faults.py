"""A backend that breaks mid-run, end to end (issue 32): the run fails with one line and a resumable record.

The GS1 rehearsal at the wiring scale runs through the CLI against an embedded server started with a
fault (embedded_tinker/faults.py, `stop_answering_after`): its first `save_weights` call (the
restoration preflight's save of the initialization state, a wait that used to call the SDK directly)
is held open ("hang"), has its connection closed mid-answer ("close", which the SDK retries) or is
answered with a body that is not JSON ("garbage"). Before issue 32 the hang
held the run for the SDK's own timeouts (a rehearsal stalled 383 s) and the garbage answer crashed
the run (a traceback, exit 3). Now the run stops within the answer deadline (RX_SERVICE_ANSWER_DEADLINE,
5 s here): exit 2 (the backend, as at its preconditions), one line naming the call and the answer, no
traceback, a record that is failed (never "running") and says why, and a re-run resumes it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from embedded_tinker.faults import FaultConfig
from embedded_tinker.launch import LOCAL_API_KEY, start_server
from experiment.contract.plan import build_plan
from experiment.contract.spec import load_spec
from experiment.run.store import RunStore
from suite import GS1_SPEC, GS1_WIRING_ARGS, REPO_ROOT, only_run_dir

pytestmark = pytest.mark.slow
DEADLINE_SECONDS = 5
STOPPED = "the service stopped answering: run (the call at experiment/rl/steps/restoration_preflight.py:"
UNREADABLE = "the service's answer to run (the call at experiment/rl/steps/restoration_preflight.py:"
# "close": the SDK retries a connection closed mid-answer (RemoteProtocolError) for longer than the deadline
REASONS = {"hang": STOPPED, "close": STOPPED, "garbage": UNREADABLE}


@pytest.mark.parametrize("mode", ["hang", "close", "garbage"])
def test_a_backend_that_breaks_mid_run_fails_it_with_one_line_and_a_resumable_record(tmp_path, prefect_server, mode):
    runs_dir = tmp_path / "runs"
    faults = FaultConfig(stop_answering_after=0, endpoints=("save_weights",), stop_answering_mode=mode)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), **prefect_server.cli_env,
           "RX_SERVICE_ANSWER_DEADLINE": str(DEADLINE_SECONDS), "TINKER_API_KEY": LOCAL_API_KEY}
    with start_server(faults=faults) as server:
        done = subprocess.run([sys.executable, "-m", "flows.run", str(GS1_SPEC), *GS1_WIRING_ARGS, "--runs-dir",
                               str(runs_dir)], cwd=REPO_ROOT, env={**env, "TINKER_BASE_URL": server.base_url},
                              capture_output=True, text=True, timeout=900)
    output = done.stdout[-3000:] + done.stderr[-3000:]
    assert done.returncode == 2, output
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("the run stopped: " + REASONS[mode]), output
    assert last.endswith("its record says so (failed, resumable): run the same command again once the service answers")
    assert (f"had no answer for {DEADLINE_SECONDS} s" if REASONS[mode] == STOPPED else "could not be read (JSONDecodeError") in last
    assert "Traceback" not in done.stderr, output
    print(last)  # shown with -rP

    run_dir = only_run_dir(runs_dir)
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "failed" and result["outcome_reason"] == "incomplete_execution"
    assert result["capacity_block"]["error"] in last
    assert result["summary"].startswith("REHEARSAL") and "The service failed during restoration_preflight" in result["summary"]
    (row,) = pd.read_parquet(runs_dir / "index.parquet").to_dict("records")
    assert row["status"] == "failed"

    spec = load_spec(GS1_SPEC, rehearse=True, rehearsal_scale="wiring")
    store, how = RunStore.claim(runs_dir, spec, build_plan(spec))  # what a re-run of the command does first
    try:
        assert (how, store.run_dir) == ("resumed", run_dir)
        assert {"spec_intake", "preflight_probe"} <= set(store.passed_gates())
    finally:
        store.release()
