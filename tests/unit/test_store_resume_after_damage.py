"""Resume survives what an operator's machine leaves in the store (issue 47): a deleted index, a torn last
line of events.jsonl, `recover` run on a healthy run, two `--fresh` runs of one spec side by side.

Each case first shows the failure against a weakened version (the guard taken out), then that the real code
holds. Real store, real parquet, real locks; no fakes.
"""

from __future__ import annotations

import fcntl
import json
from pathlib import Path

import pytest

from suite import GS1_SPEC
import experiment.run.store as store_module
from experiment.contract.plan import build_plan
from experiment.contract.spec import load_spec
from experiment.run.store import CorruptRecord, RunIndex, RunInProgress, RunStore
from flows import run as run_cli
from flows import runs as runs_cli


@pytest.fixture
def spec_and_plan():
    spec = load_spec(GS1_SPEC)
    return spec, build_plan(spec)


def _run_dirs(runs_dir: Path) -> list[Path]:
    return sorted(p for p in runs_dir.iterdir() if p.is_dir() and not p.name.startswith("."))


def _finished_run(runs: Path, spec, plan) -> RunStore:
    store = RunStore.create(runs, spec, plan)
    store.update_result(status="succeeded", verdict="supported", effect=0.02, summary="done")
    store.release()
    return store


def test_a_deleted_index_is_rebuilt_and_a_finished_run_is_not_claimed_again(tmp_path, spec_and_plan, capsys, caplog):
    spec, plan = spec_and_plan
    runs = tmp_path / "runs"
    finished = _finished_run(runs, spec, plan)
    (runs / "index.parquet").unlink()
    with pytest.MonkeyPatch.context() as weak:  # attack first: a missing index read as "no runs"
        weak.setattr(RunIndex, "_run_dirs_exist", lambda self, ignoring=None: False)
        assert runs_cli.main(["--runs-dir", str(runs)]) == 0
        assert capsys.readouterr().out.startswith("no runs yet")
        duplicate, how = RunStore.claim(runs, spec, plan)
        assert how == "new" and duplicate.run_dir != finished.run_dir  # a second run of a finished spec
        duplicate._discard_new_run()
        (runs / "index.parquet").unlink()

    assert runs_cli.main(["--runs-dir", str(runs)]) == 0
    assert finished.run_id in capsys.readouterr().out
    assert "index.parquet was missing; rebuilt it from 1 run directories" in caplog.text
    assert RunIndex(runs).read().set_index("run_id").loc[finished.run_id, "status"] == "succeeded"
    (runs / "index.parquet").unlink()
    assert run_cli.main([str(GS1_SPEC), "--runs-dir", str(runs)]) == run_cli.EXIT_DECISION  # answered, not run
    assert f"run {finished.run_id}" in capsys.readouterr().out
    store, how = RunStore.claim(runs, spec, plan)
    assert (how, store.run_dir) == ("finished", finished.run_dir)
    assert _run_dirs(runs) == [finished.run_dir]


def test_the_first_run_in_an_empty_runs_dir_rebuilds_nothing(tmp_path, spec_and_plan, caplog):
    spec, plan = spec_and_plan
    store = RunStore.create(tmp_path / "runs", spec, plan)
    store.release()
    assert "index.parquet was" not in caplog.text
    assert list(RunIndex(tmp_path / "runs").read()["run_id"]) == [store.run_id]


def _interrupted_with_a_torn_event(runs: Path, spec, plan) -> tuple[RunStore, bytes]:
    """A run killed (kill -9) during an append: its last event line cut short, no newline."""
    store = RunStore.create(runs, spec, plan)
    store.update_result(metrics={"arms": {"grpo_gs8": {"accuracy": 0.5}}}, completed_arms=["grpo_gs8"])
    store.release()
    torn = b'{"ts": "2026-12-07T15:00:00+00:00", "event": "result_updated", "fields": ["metr'
    with open(store.run_dir / "events.jsonl", "ab") as events:
        events.write(torn)
    return store, torn


def _strict_events(path: Path) -> list[dict]:
    """The reader before issue 47: every line must parse."""
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def test_a_torn_last_event_line_is_tolerated_by_the_rerun(tmp_path, spec_and_plan, capsys):
    spec, plan = spec_and_plan
    runs = tmp_path / "runs"
    store, torn = _interrupted_with_a_torn_event(runs, spec, plan)
    with pytest.MonkeyPatch.context() as weak:  # attack first: the strict reader fails the re-run's first look
        weak.setattr(store_module, "read_events_file", _strict_events)
        with pytest.raises(json.JSONDecodeError):
            RunStore.finished_run(runs, plan.spec_sha256, "embedded")
    with pytest.MonkeyPatch.context() as weak:  # nor may an append after the torn line glue itself onto it
        weak.setattr(store_module, "mend_torn_events", lambda run_dir: False)
        glued = tmp_path / "glued"
        glued_store, _ = _interrupted_with_a_torn_event(glued, spec, plan)
        resumed, _ = RunStore.claim(glued, spec, plan)
        resumed.append_event("run_resumed")
        resumed.release()
        with pytest.raises(CorruptRecord, match=r"events.jsonl line \d+ is not a JSON event"):
            glued_store.read_events()

    assert RunStore.finished_run(runs, plan.spec_sha256, "embedded") is None  # unfinished: the re-run resumes it
    resumed, how = RunStore.claim(runs, spec, plan)
    assert (how, resumed.run_dir) == ("resumed", store.run_dir)
    resumed.append_event("run_resumed")
    resumed.update_result(completed_arms=["gs1_kernel"])
    resumed.release()
    lines = (store.run_dir / "events.jsonl").read_bytes().split(b"\n")
    assert lines[-1] == b"" and all(json.loads(line) for line in lines[:-1])  # every line whole again
    assert [event["event"] for event in store.read_events()][-3:] == ["result_updated", "run_resumed",
                                                                       "result_updated"]
    assert (store.run_dir / "events.jsonl.torn").read_bytes() == torn + b"\n"  # kept, not lost
    assert RunStore(store.run_dir).read_result()["completed_arms"] == ["grpo_gs8", "gs1_kernel"]


def test_a_complete_last_event_missing_only_its_newline_is_kept(tmp_path, spec_and_plan):
    spec, plan = spec_and_plan
    store = RunStore.create(tmp_path / "runs", spec, plan)
    store.release()
    with open(store.run_dir / "events.jsonl", "ab") as events:
        events.write(b'{"ts": "2026-12-07T15:00:00+00:00", "event": "progress"}')
    assert store.read_events()[-1]["event"] == "progress"
    resumed, _ = RunStore.claim(tmp_path / "runs", spec, plan)
    resumed.append_event("run_resumed")
    resumed.release()
    assert [event["event"] for event in store.read_events()][-2:] == ["progress", "run_resumed"]
    assert not (store.run_dir / "events.jsonl.torn").exists()


def test_damage_before_the_last_event_line_is_one_line_naming_it(tmp_path, spec_and_plan):
    spec, plan = spec_and_plan
    store = RunStore.create(tmp_path / "runs", spec, plan)
    store.release()
    path = store.run_dir / "events.jsonl"
    path.write_bytes(b"{broken\n" + path.read_bytes())
    with pytest.raises(CorruptRecord) as caught:
        store.read_events()
    assert str(caught.value).startswith(f"{path} line 1 is not a JSON event") and "\n" not in str(caught.value)


def test_recover_rebuilds_a_damaged_result_despite_a_torn_event_line(tmp_path, spec_and_plan, capsys):
    spec, plan = spec_and_plan
    runs = tmp_path / "runs"
    store, _ = _interrupted_with_a_torn_event(runs, spec, plan)
    original = RunStore(store.run_dir).read_result()
    (store.run_dir / "result.json").write_bytes(b'{"status": "runn')  # cut short by the same kill
    with pytest.MonkeyPatch.context() as weak:  # attack first: the strict reader cannot rebuild it
        weak.setattr(store_module, "read_events_file", _strict_events)
        assert runs_cli.main(["recover", store.run_id, "--runs-dir", str(runs)]) == 2
        assert "cannot rebuild" in capsys.readouterr().err
    assert runs_cli.main(["recover", store.run_id, "--runs-dir", str(runs)]) == 0
    assert capsys.readouterr().out.startswith(f"rebuilt {store.run_dir / 'result.json'}")
    assert json.loads((store.run_dir / "result.json").read_text()) == original


def test_recover_on_a_healthy_run_changes_nothing(tmp_path, spec_and_plan, capsys):
    spec, plan = spec_and_plan
    runs = tmp_path / "runs"
    store = _finished_run(runs, spec, plan)

    def files() -> dict[str, bytes]:
        return {str(p.relative_to(runs)): p.read_bytes() for p in sorted(runs.rglob("*")) if p.is_file()}

    with pytest.MonkeyPatch.context() as weak:  # attack first: the old command rebuilt it and kept a "damaged" copy
        weak.setattr(runs_cli, "intact_result", lambda run_dir: None)
        copy = tmp_path / "copy"
        copied = _finished_run(copy, spec, plan)
        assert runs_cli.main(["recover", copied.run_id, "--runs-dir", str(copy)]) == 0
        assert (copied.run_dir / "result.json.damaged").is_file()
    capsys.readouterr()
    before = files()
    assert runs_cli.main(["recover", store.run_id, "--runs-dir", str(runs)]) == 0
    assert capsys.readouterr().out.strip() == (f"{store.run_dir / 'result.json'} is intact (status succeeded); "
                                               "nothing was changed")
    assert files() == before


def test_a_fresh_run_goes_on_with_the_run_it_claimed_when_another_process_runs_a_newer_one(
        tmp_path, spec_and_plan, monkeypatch):
    spec, plan = spec_and_plan
    runs = tmp_path / "runs"

    def two_fresh_runs(runs: Path) -> tuple[RunStore, object]:
        mine, how = RunStore.claim(runs, spec, plan, fresh=True)  # this CLI's claim
        assert how == "new"
        monkeypatch.setattr(store_module, "utc_now", lambda: "2999-01-01T00:00:00+00:00")
        other = RunStore.create(runs, spec, plan)  # the other process's run, claimed later: the newest
        monkeypatch.undo()
        other.release()
        held = open(other.run_dir / "run.lock", "a+")  # as the other process holds it (flock: per open file)
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return mine, held

    mine, held = two_fresh_runs(tmp_path / "weak")
    with monkeypatch.context() as weak:  # attack first: the flow's claim took the newest run of the spec
        weak.setattr(RunStore, "_held_here", classmethod(lambda cls, runs_dir, sha: None))
        with pytest.raises(RunInProgress):
            RunStore.claim(tmp_path / "weak", spec, plan)
    held.close()
    mine.release()

    mine, held = two_fresh_runs(runs)
    try:
        flows_claim, how = RunStore.claim(runs, spec, plan)  # the flow's claim, in the same process
        assert (how, flows_claim.run_dir) == ("resumed", mine.run_dir)
        flows_claim.release()
        assert mine.is_live()  # still held by the CLI's claim
    finally:
        held.close()
        mine.release()
    assert all(json.loads((d / "result.json").read_text())["status"] == "running" for d in _run_dirs(runs))


def test_a_finished_run_killed_before_its_pictures_gets_them_when_answered(tmp_path, spec_and_plan, capsys):
    spec, plan = spec_and_plan

    def decided_without_pictures(runs: Path) -> RunStore:  # kill -9 right after the decision: no plots/
        store = RunStore.create(runs, spec, plan)
        store.update_result(status="succeeded", verdict="supported", confidence="strong", effect=0.05,
                            decision={"criteria": [{"id": "primary", "effect": 0.05, "lower": 0.01, "upper": 0.09,
                                                    "margin": 0.0}]})
        store.release()
        return store

    weak_store = decided_without_pictures(tmp_path / "weak")
    with pytest.MonkeyPatch.context() as weak:  # attack first: the answer of a finished run never drew them
        weak.setattr(run_cli, "draw_missing_pictures", lambda run_dir: None)
        assert run_cli.main([str(GS1_SPEC), "--runs-dir", str(tmp_path / "weak")]) == run_cli.EXIT_DECISION
    assert not (weak_store.run_dir / "plots").exists()

    store = decided_without_pictures(tmp_path / "runs")
    result_before = (store.run_dir / "result.json").read_bytes()
    assert run_cli.main([str(GS1_SPEC), "--runs-dir", str(tmp_path / "runs")]) == run_cli.EXIT_DECISION
    picture = store.run_dir / "plots" / "paired-effect.png"
    assert picture.read_bytes().startswith(b"\x89PNG")
    drawn = picture.stat().st_mtime_ns
    assert run_cli.main([str(GS1_SPEC), "--runs-dir", str(tmp_path / "runs")]) == run_cli.EXIT_DECISION
    assert picture.stat().st_mtime_ns == drawn  # a run with its pictures is not drawn again
    assert (store.run_dir / "result.json").read_bytes() == result_before
    assert "could not draw" not in capsys.readouterr().err
