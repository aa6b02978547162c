"""A run whose directory is deleted, or whose Prefect server is lost, mid-run ends with one line and exit 2
(flows.run_guard; issue 47, S5 and O3). Real store, real parquet, a real HTTP health endpoint that goes away;
the process's end is recorded instead of made (the guard's `end`), so the test process goes on.

Each case first shows the failure without the guard, then that the guard holds.
"""

from __future__ import annotations

import json
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from suite import GS1_SPEC
from experiment.contract.plan import build_plan
from experiment.contract.spec import load_spec
from experiment.run.store import RunDirectoryGone, RunIndex, RunStore, run_finished
from flows.run_guard import RunGuard


@pytest.fixture
def claimed(tmp_path):
    spec = load_spec(GS1_SPEC)
    plan = build_plan(spec)
    store, how = RunStore.claim(tmp_path / "runs", spec, plan)
    assert how == "new"
    yield spec, plan, store
    store.release()


class Ended:
    """Stands in for the process's end: records the exit code."""

    def __init__(self):
        self.codes: list[int] = []
        self.event = threading.Event()

    def __call__(self, code: int) -> None:
        self.codes.append(code)
        self.event.set()


def _index_status(store: RunStore):
    rows = RunIndex(store.run_dir.parent).read().set_index("run_id")
    return rows.loc[store.run_id, "status"] if store.run_id in rows.index else None


def test_a_run_directory_deleted_mid_run_ends_with_one_line_and_no_running_row(claimed, capsys):
    spec, plan, store = claimed
    shutil.rmtree(store.run_dir)  # attack first: without the guard the write fails and the row says running
    with pytest.raises(RunDirectoryGone):
        store.update_result(metrics={"arms": {"grpo_gs8": {"accuracy": 0.5}}})
    assert _index_status(store) == "running"

    ended = Ended()
    second, _ = RunStore.claim(store.run_dir.parent, spec, plan, fresh=True)
    with RunGuard(second, plan, prefect_api_url=None, end=ended, poll_s=60):
        shutil.rmtree(second.run_dir)
        with pytest.raises(RunDirectoryGone):  # the store told the guard before raising
            second.append_event("progress")
    second.release()
    assert ended.codes == [2]
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"run {second.run_id}: its directory {second.run_dir} was deleted while the run was in progress; "
                   "the run stopped, and nothing of it is left to resume: running the same command again starts it anew"]
    assert _index_status(second) is None  # no "running" row for a run that is gone


def test_a_run_directory_deleted_between_writes_is_seen_by_the_guard(claimed, capsys):
    spec, plan, store = claimed
    ended = Ended()
    with RunGuard(store, plan, prefect_api_url=None, end=ended, poll_s=0.05):
        shutil.rmtree(store.run_dir)
        assert ended.event.wait(timeout=60)
    assert ended.codes == [2] and _index_status(store) is None
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


class _Health(BaseHTTPRequestHandler):
    answered = threading.Semaphore(0)  # one release per health answer sent

    def do_GET(self):
        self.send_response(200 if self.path == "/api/health" else 404)
        self.end_headers()
        self.wfile.write(b"true")
        _Health.answered.release()

    def log_message(self, *args):
        pass


def test_a_prefect_server_lost_mid_run_stops_it_resumable(claimed, capsys):
    spec, plan, store = claimed
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Health)  # stands for the run's Prefect server
    threading.Thread(target=server.serve_forever, daemon=True).start()
    api_url = f"http://127.0.0.1:{server.server_address[1]}/api"
    ended = Ended()
    # lost only after 5 s without an answer: a loaded machine's slow answers are not taken for a lost server
    with RunGuard(store, plan, prefect_api_url=api_url, end=ended, poll_s=0.05, lost_after_s=5.0):
        for _ in range(3):  # a server that answers three health checks: the run goes on (counted, not timed)
            assert _Health.answered.acquire(timeout=30)
        assert not ended.event.is_set()
        # attack first: the record of a run whose server is gone says nothing of it until the guard acts
        assert json.loads((store.run_dir / "result.json").read_text())["status"] == "running"
        server.shutdown()
        server.server_close()
        assert ended.event.wait(timeout=30)
    assert ended.codes == [2]
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"run {store.run_id} stopped: the Prefect server at {api_url} stopped answering (")
    assert line.endswith("its record says so, and running the same command again once a Prefect server answers "
                         "resumes it")
    result = store.read_result()
    assert result["status"] == "failed" and result["interruption"]["reason"].startswith(
        f"stopped: the Prefect server at {api_url} stopped answering")
    assert not run_finished(result)  # resumable: not "already finished (failed)"
    store.release()
    again, how = RunStore.claim(store.run_dir.parent, spec, plan)
    assert (how, again.run_dir) == ("resumed", store.run_dir)
    again.release()


def test_a_server_that_only_answers_slowly_is_told_from_one_that_is_gone(monkeypatch):
    import socket

    import flows.run_guard as run_guard

    monkeypatch.setattr(run_guard, "HEALTH_ANSWER_S", 0.2)
    with socket.socket() as silent:  # accepts connections (the kernel's backlog) and never answers: a busy server
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        problem, slow = run_guard.prefect_health_problem(f"http://127.0.0.1:{silent.getsockname()[1]}/api")
        assert slow, problem  # waited for longer (SLOW_ANSWER_FACTOR) before it is taken for lost
        port = silent.getsockname()[1]
    problem, slow = run_guard.prefect_health_problem(f"http://127.0.0.1:{port}/api")  # nothing listens any more
    assert (problem, slow) == ("Connection refused", False)
