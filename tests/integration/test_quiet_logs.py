"""Quiet, honest logs (issue 30.4): what an operator reads for the expected outcomes of a run.

- A capacity block (an embedded server refusing model creation, "trainer capacity exhausted", past
  the time-scaled capacity policy) logs one WARNING line: no ERROR task failure, no traceback, no SDK
  internals ("self.request_id=..."). Shown first against a weakened task that raises the refusal.
- A run resumed after a block and finished carries no stale RESULT.capacity_wait.
- Progress of a long loop prints at most about ten console lines.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager

import pytest
from suite import GS1_SPEC

from embedded_tinker.faults import FaultConfig
from embedded_tinker.launch import LOCAL_API_KEY, start_server
from experiment.run.store import RunStore


class Collected(logging.Handler):
    """Every record the run's loggers emit (Prefect's loggers do not propagate to pytest's caplog)."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def collected(level: int = logging.INFO):
    handler = Collected()
    loggers = [logging.getLogger(name) for name in ("prefect", "flows")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(min(level, logger.level or level))
    try:
        yield handler.records
    finally:
        for logger, old in zip(loggers, levels):
            logger.removeHandler(handler)
            logger.setLevel(old)


def _blocked_run(tmp_path, monkeypatch, runs: str):
    from flows.experiment_flow import run_experiment

    monkeypatch.setenv("RX_CAPACITY_TIME_SCALE", "0.001")  # the contract's 10 minutes of refusals: 0.6 s
    monkeypatch.setenv("TINKER_API_KEY", LOCAL_API_KEY)
    with collected() as records, start_server(faults=FaultConfig(capacity_exhausted_seconds=600)) as server:
        state = run_experiment(str(GS1_SPEC), backend=server.base_url, runs_dir=str(tmp_path / runs), rehearse=True,
                               rehearsal_scale="wiring", return_state=True)
    return state, records


def test_a_capacity_block_logs_one_warning_line(tmp_path, prefect_harness, no_service_env, monkeypatch):
    import tasks.capacity

    # weakened: the gate task raises the refusal as a task failure, as it once did
    with monkeypatch.context() as weakened:
        def raise_it(err):
            raise err

        weakened.setattr(tasks.capacity, "capacity_refusal_state", raise_it)
        weakened.setattr("tasks.capacity_refusal_state", raise_it)
        state, records = _blocked_run(tmp_path, monkeypatch, "weak")
    assert state.name == "CapacityBlocked"
    assert any(record.levelno >= logging.ERROR for record in records)
    assert any(record.exc_info or "Traceback" in record.getMessage() for record in records)

    state, records = _blocked_run(tmp_path, monkeypatch, "real")
    assert state.name == "CapacityBlocked", state.message
    assert state.is_failed() and not state.is_completed()  # no decision: never a green Completed in the UI
    assert [record.levelname for record in records if record.levelno >= logging.ERROR] == []
    assert not any(record.exc_info or "Traceback" in record.getMessage() for record in records)
    warnings = [record.getMessage() for record in records if record.levelno == logging.WARNING]
    assert len(warnings) == 1 and warnings[0].startswith("capacity block after"), warnings
    assert "capacity exhausted" in warnings[0]
    (run_dir,) = [path for path in (tmp_path / "real").iterdir() if path.is_dir() and not path.name.startswith(".")]
    result = RunStore.open(run_dir).read_result()
    for text in (*warnings, state.message, result["capacity_block"]["error"]):
        assert "self." not in text and "model_cls" not in text and "request_id" not in text, text
    assert "capacity_wait" not in result  # the block record says it; the last wait is over


def test_progress_prints_at_most_about_ten_lines(prefect_harness):
    from prefect import flow

    from flows.artifacts import progress_reporter

    @flow
    def evaluate(total: int) -> None:
        report = progress_reporter("spec-20261202T000000-abcdef")
        for done in range(1, total + 1):
            report(f"evaluation-arm-{total}", done, total)

    for total in (48, 1000):
        with collected() as records:
            evaluate(total)
        lines = [record.getMessage() for record in records if f"evaluation-arm-{total}:" in record.getMessage()]
        assert 5 <= len(lines) <= 11, lines
        assert lines[-1] == f"evaluation-arm-{total}: {total}/{total} (100%)"


@pytest.mark.parametrize("steps", [3])
def test_progress_of_a_short_loop_prints_every_step(prefect_harness, steps):
    from prefect import flow

    from flows.artifacts import progress_reporter

    @flow
    def train() -> None:
        report = progress_reporter("spec-20261202T000000-abcdef")
        for done in range(1, steps + 1):
            report("training-arm", done, steps)

    with collected() as records:
        train()
    assert [r.getMessage() for r in records if r.getMessage().startswith("training-arm:")] == [
        f"training-arm: {done}/{steps} ({100 * done / steps:.0f}%)" for done in range(1, steps + 1)]


HOLDER = """
import sys, time
from experiment.contract.plan import build_plan
from experiment.contract.spec import load_spec
from experiment.run.store import RunStore
spec = load_spec(sys.argv[1])
store, how = RunStore.claim(sys.argv[2], spec, build_plan(spec), exposure="embedded")
print(how, store.run_id, flush=True)
time.sleep(120)
"""


def test_a_run_in_progress_refusal_logs_no_traceback(tmp_path, prefect_harness, no_service_env, monkeypatch):
    """A deployment run of a spec another process is running: the engine raises the Failed state's
    RunInProgress and logs it with a traceback ("Engine execution exited with unexpected exception")
    unless the expected-outcome filter leaves it out; the flow's own one-line refusal stays."""
    import os
    import subprocess
    import sys

    from prefect.flow_engine import run_flow
    from suite import REPO_ROOT

    from experiment.run.store import RunInProgress
    from flows.experiment_flow import run_experiment
    from flows.expected_outcomes import ENGINE_LOGGER, ExpectedOutcomeFilter

    runs = tmp_path / "runs"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(GS1_SPEC), str(runs)], cwd=REPO_ROOT,
                              env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, stdout=subprocess.PIPE, text=True)
    try:
        how, run_id = holder.stdout.readline().split()
        assert how == "new"

        def deployment_like_run() -> list[logging.LogRecord]:
            """The engine as a worker's flow-run process runs it: raising, with an error logger."""
            with collected() as records, pytest.raises(RunInProgress):
                run_flow(run_experiment, parameters={"spec_path": str(GS1_SPEC), "runs_dir": str(runs)},
                         error_logger=logging.getLogger(ENGINE_LOGGER))
            return records

        engine_logger = logging.getLogger(ENGINE_LOGGER)
        with monkeypatch.context() as weakened:  # without the filter: the refusal's traceback
            weakened.setattr(engine_logger, "filters",
                             [f for f in engine_logger.filters if not isinstance(f, ExpectedOutcomeFilter)])
            records = deployment_like_run()
        assert any(record.exc_info and isinstance(record.exc_info[1], RunInProgress) for record in records)

        records = deployment_like_run()
        assert not any(record.exc_info for record in records)
        errors = [record.getMessage() for record in records if record.levelno >= logging.ERROR]
        assert len(errors) == 1 and errors[0].startswith(f"run {run_id} is in progress")  # the flow's one line
    finally:
        holder.kill()
        holder.wait()
