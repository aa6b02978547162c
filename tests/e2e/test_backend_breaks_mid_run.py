"""A backend that breaks mid-run, end to end (issue 32): the run fails with one line and a resumable record.

The GS1 rehearsal at the wiring scale runs through the CLI against an embedded server started with a
fault (embedded_tinker/faults.py, `stop_answering_after`): its first `save_weights` call (the
restoration preflight's save of the initialization state, a wait that used to call the SDK directly)
is held open ("hang"), has its connection closed mid-answer ("close", which the SDK retries) or is
answered with a body that is not JSON ("garbage"). Before issue 32 the hang
held the run for the SDK's own timeouts (a rehearsal stalled 383 s) and the garbage answer crashed
the run (a traceback, exit 3). Now the run stops within the answer deadline (RX_SERVICE_ANSWER_DEADLINE,
5 s here): exit 2 (the backend, as at its preconditions), one line naming the call and the answer, no
traceback, a record that is failed (never "running") and says why, and a re-run resumes it. The TriMuon
(SFT) rehearsal whose first forward_backward is held open (the SFT loop also called `.result()` itself)
stops the same way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from embedded_tinker.faults import FaultConfig
from embedded_tinker.launch import LOCAL_API_KEY, start_server
from experiment.contract.plan import build_plan
from experiment.contract.spec import load_spec
from experiment.run.store import RunStore
from suite import GS1_SPEC, GS1_WIRING_ARGS, REPO_ROOT, TRIMUON_SPEC, only_run_dir

pytestmark = pytest.mark.slow
DEADLINE_SECONDS = 5
STOPPED = "the service stopped answering: run (the call at experiment/rl/steps/restoration_preflight.py:"
UNREADABLE = "the service's answer to run (the call at experiment/rl/steps/restoration_preflight.py:"
# "close": the SDK retries a connection closed mid-answer (RemoteProtocolError) for longer than the deadline
REASONS = {"hang": STOPPED, "close": STOPPED, "garbage": UNREADABLE}


def wiring_rehearsal_against(faults: FaultConfig, spec_path: Path, runs_dir: Path, cli_env: dict) -> tuple[int, str, str]:
    """(exit code, last stderr line, output tail) of `flows.run SPEC --rehearse --rehearsal-scale wiring` against an
    embedded server started with `faults`, under a short answer deadline."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), **cli_env,
           "RX_SERVICE_ANSWER_DEADLINE": str(DEADLINE_SECONDS), "TINKER_API_KEY": LOCAL_API_KEY}
    with start_server(faults=faults) as server:
        done = subprocess.run([sys.executable, "-m", "flows.run", str(spec_path), *GS1_WIRING_ARGS, "--runs-dir",
                               str(runs_dir)], cwd=REPO_ROOT, env={**env, "TINKER_BASE_URL": server.base_url},
                              capture_output=True, text=True, timeout=900)
    output = done.stdout[-3000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stderr, output
    lines = done.stderr.strip().splitlines()
    return done.returncode, (lines[-1] if lines else ""), output


def assert_failed_and_resumable(runs_dir: Path, spec_path: Path, gate: str, last: str, reused: set[str]) -> None:
    """The record says failed (never running) and why; the index agrees; a re-run claims the same run as resumed."""
    run_dir = only_run_dir(runs_dir)
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "failed" and result["outcome_reason"] == "incomplete_execution"
    assert result["capacity_block"]["error"] in last
    assert result["summary"].startswith("REHEARSAL") and f"The service failed during {gate}" in result["summary"]
    (row,) = pd.read_parquet(runs_dir / "index.parquet").to_dict("records")
    assert row["status"] == "failed"
    spec = load_spec(spec_path, rehearse=True, rehearsal_scale="wiring")
    store, how = RunStore.claim(runs_dir, spec, build_plan(spec))  # what a re-run of the command does first
    try:
        assert (how, store.run_dir) == ("resumed", run_dir)
        assert reused <= set(store.passed_gates())
    finally:
        store.release()


@pytest.mark.parametrize("mode", ["hang", "close", "garbage"])
def test_a_backend_that_breaks_mid_run_fails_it_with_one_line_and_a_resumable_record(tmp_path, prefect_server, mode):
    runs_dir = tmp_path / "runs"
    faults = FaultConfig(stop_answering_after=0, endpoints=("save_weights",), stop_answering_mode=mode)
    code, last, output = wiring_rehearsal_against(faults, GS1_SPEC, runs_dir, prefect_server.cli_env)
    assert code == 2, output
    assert last.startswith("the run stopped: " + REASONS[mode]), output
    assert last.endswith("its record says so (failed, resumable): run the same command again once the service answers")
    assert (f"had no answer for {DEADLINE_SECONDS} s" if REASONS[mode] == STOPPED else "could not be read (JSONDecodeError") in last
    print(last)  # shown with -rP
    assert_failed_and_resumable(runs_dir, GS1_SPEC, "restoration_preflight", last, {"spec_intake", "preflight_probe"})


def test_an_sft_training_step_the_backend_never_answers_fails_the_run_the_same_way(tmp_path, prefect_server):
    """The SFT loop's forward_backward (experiment/sft/loop.py, which used to call `.result()` itself): the
    TriMuon rehearsal's first one, in the preflight probe, is held open."""
    runs_dir = tmp_path / "runs"
    faults = FaultConfig(stop_answering_after=0, endpoints=("forward_backward",), stop_answering_mode="hang")
    code, last, output = wiring_rehearsal_against(faults, TRIMUON_SPEC, runs_dir, prefect_server.cli_env)
    assert code == 2, output
    assert last.startswith("the run stopped: the service stopped answering: train_step (the call at "
                           "experiment/sft/loop.py:"), output
    print(last)  # shown with -rP
    assert_failed_and_resumable(runs_dir, TRIMUON_SPEC, "preflight_probe", last, {"spec_intake"})
