"""End-to-end tests: whole runs through the CLI, a Prefect server, a browser. Every test here is
`slow` (minutes); CI runs them too, `pytest -m "not slow"` leaves them out.

`wiring_rehearsal(family)` is the one clean rehearsal of each seed spec at the wiring scale that several
files check (what it records, what the grader makes of it, what the UI shows, the decision a faulted or
killed run must reach again): it runs once per session, shared by the xdist workers.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from pathlib import Path

import pytest

from suite import FAKE_PROXY_SECRET, GS1_SPEC, GS1_WIRING_ARGS, SELFGEN_SPEC, TRIMUON_SPEC, only_run_dir, run_cli

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    """Every test here is slow, and has the long files' 30 minutes unless its file names a limit of its own: the
    first test of a worker to ask for `wiring_records` runs the shared rehearsals it finds not yet run in its setup,
    one after another (`pytest -m slow` at load 20: the setup of test_grader_traces.py's first test ran the
    self-generated and TriMuon rehearsals and hit the suite's 600 s, and its 21 tests errored)."""
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.slow)
            if item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(1800))


# The clean wiring rehearsals of the three seed specs, each run once per session whichever xdist worker asks
# first (a file lock in the directory the workers share) and read by the others: the grader-trust file, the
# GS1 files, the TriMuon file and the self-generated file check the same runs (a clean clone ran each spec
# twice before, about a fifth of the suite's CPU). The self-generated run's environment holds a fake proxy
# secret, which test_local_selfgen_run.py checks is never stored; the other runs ignore it.
WIRING_SPECS = {"gs1": GS1_SPEC, "selfgen": SELFGEN_SPEC, "trimuon": TRIMUON_SPEC}


def _session_dir(tmp_path_factory) -> Path:
    """A directory of this session that every xdist worker sees (each worker's basetemp sits in it);
    without xdist, the session's own basetemp."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def wiring_rehearsal(prefect_server, tmp_path_factory):
    """family -> {"run_dir", "stdout", "stderr"} of `python -m flows.run <seed spec> --rehearse
    --rehearsal-scale wiring`, clean, on the embedded backend and the session's Prefect server. Tests
    only read the run directory."""
    shared = _session_dir(tmp_path_factory) / "wiring-rehearsals"
    shared.mkdir(exist_ok=True)

    def rehearsal(family: str, wait: bool = True) -> dict | None:
        """With wait=False: None at once where another worker is running it now (see every_wiring_rehearsal)."""
        home = shared / family
        with open(shared / f"{family}.lock", "w") as lock:
            try:  # a second worker waits here while the first one runs it
                fcntl.flock(lock, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return None
            if not (home / "returncode").is_file():
                runs_dir = home / "runs"
                # an attempt that never finished (its test timed out mid-rehearsal): start afresh, not resume it (the
                # shared tests read the record of a run never stopped; a resumed one keeps the stopped attempt's
                # steps and events, and its superseded restores: tests/integration/test_sft_arm_training_resume.py)
                shutil.rmtree(runs_dir, ignore_errors=True)
                runs_dir.mkdir(parents=True)
                done = run_cli("flows.run", str(WIRING_SPECS[family]), *GS1_WIRING_ARGS, "--runs-dir", str(runs_dir),
                               env_extra={**prefect_server.cli_env, "MODAL_PROXY_TOKEN_SECRET": FAKE_PROXY_SECRET},
                               timeout=1500)
                (home / "stdout").write_text(done.stdout)
                (home / "stderr").write_text(done.stderr)
                (home / "returncode").write_text(str(done.returncode))
        stdout, stderr = (home / "stdout").read_text(), (home / "stderr").read_text()
        assert (home / "returncode").read_text() == "0", stdout[-3000:] + stderr[-3000:]
        return {"run_dir": only_run_dir(home / "runs"), "stdout": stdout, "stderr": stderr}

    return rehearsal


@pytest.fixture(scope="session")
def gs1_wiring_rehearsal(wiring_rehearsal, prefect_server) -> dict:
    """The GS1 wiring rehearsal with its flow run on the session's Prefect server."""
    run = wiring_rehearsal("gs1")
    (flow_run,) = prefect_server.flow_runs_of(run["run_dir"].parent)
    return {**run, "flow_run": flow_run}


# ---- the three families' clean wiring records and run dirs, for the grader's tamper and trace tests ----

WIRING_FAMILIES = ("gs1", "selfgen", "trimuon")


def every_wiring_rehearsal(request, families) -> dict[str, dict]:
    """family -> wiring_rehearsal(family) for each of `families`: first those no other worker is running now (run
    here, or read), then the others, waited for. A worker that needs all three runs one that no worker has started
    instead of waiting on another worker's lock first (test_grader_traces.py's setup ran two rehearsals one after
    the other while test_grader_trust.py's worker waited on the first for 476 s)."""
    if not families:
        return {}
    rehearsal = request.getfixturevalue("wiring_rehearsal")
    found = {family: rehearsal(family, wait=False) for family in families}
    return {family: run or rehearsal(family) for family, run in found.items()}


@pytest.fixture(scope="session")
def wiring_records(request) -> dict[str, dict]:
    """Each family's clean wiring record (tests/e2e/conftest.py: wiring_rehearsal, run once per session), or
    the records a directory in RX_WIRING_RECORDS holds (<family>.json), to iterate on the grader without runs."""
    cached = os.environ.get("RX_WIRING_RECORDS")
    kept = {family: Path(cached) / f"{family}.json" for family in WIRING_FAMILIES
            if cached and (Path(cached) / f"{family}.json").is_file()}
    runs = every_wiring_rehearsal(request, [family for family in WIRING_FAMILIES if family not in kept])
    return {family: json.loads((kept[family] if family in kept else runs[family]["run_dir"] / "result.json").read_text())
            for family in WIRING_FAMILIES}


@pytest.fixture(scope="session")
def wiring_findings(wiring_records) -> dict[str, frozenset]:
    """Each family's clean wiring record's findings (tests/leaves.py: findings), graded once per session and worker:
    the tamper tests of test_grader_trust.py and test_grader_traces.py subtract them from a tampered record's
    (111 tests graded the same untouched record again each, about 0.2 CPU-s a grade)."""
    import leaves as L

    return {family: L.findings(record) for family, record in wiring_records.items()}


@pytest.fixture(scope="session")
def wiring_run_dirs(request) -> dict[str, Path]:
    """Each family's clean wiring run directory (or `<family>/` of RX_WIRING_RECORDS)."""
    cached = os.environ.get("RX_WIRING_RECORDS")
    kept = {family: Path(cached) / family for family in WIRING_FAMILIES
            if cached and (Path(cached) / family / "result.json").is_file()}
    runs = every_wiring_rehearsal(request, [family for family in WIRING_FAMILIES if family not in kept])
    return {family: kept[family] if family in kept else runs[family]["run_dir"] for family in WIRING_FAMILIES}


