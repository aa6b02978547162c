"""Result store: atomic RESULT that never drops numbers, append-only events, evidence caps, index."""

from __future__ import annotations

import enum
import hashlib
import json
import multiprocessing

import pandas as pd
import pytest
from suite import GS1_SPEC

import experiment.run.store as store_module
from experiment.contract.plan import build_plan
from experiment.contract.rehearsal import NOT_FOR_SUBMISSION, rehearsal_result_fields, rehearsal_summary
from experiment.contract.spec import load_spec
from experiment.run.store import RunIndex, RunStore, StoreError


class Seeds(enum.IntEnum):
    ONE = 1


@pytest.fixture
def store(tmp_path):
    spec = load_spec(GS1_SPEC)
    return RunStore.create(tmp_path / "runs", spec, build_plan(spec))


def test_create_lays_out_the_run_directory(store, tmp_path):
    assert store.run_dir.parent == tmp_path / "runs"
    assert store.run_id.startswith("gs1-kernel-vs-grpo-gsm8k-")
    result = store.read_result()
    assert result["status"] == "running" and "verdict" not in result
    assert [event["event"] for event in store.read_events()] == ["run_created"]
    assert store.read_manifest() == {"version": 1, "files": []}
    assert RunStore.open(store.run_dir).read_result() == result


def test_open_rejects_a_directory_that_is_not_a_run(tmp_path):
    with pytest.raises(StoreError, match="not a run directory"):
        RunStore.open(tmp_path)


def test_update_result_keeps_earlier_numbers(store):
    store.update_result(metrics={"base_accuracy": 0.41, "arms": {"grpo_gs8": {"accuracy": 0.5}}}, completed_arms=["grpo_gs8"])
    store.update_result(metrics={"arms": {"gs1_kernel": {"accuracy": 0.52}}}, completed_arms=["gs1_kernel", "grpo_gs8"])
    result = store.update_result(metrics={"arms": {"grpo_gs8": {"steps": 40}}}, summary="two arms done")
    assert result["metrics"] == {
        "base_accuracy": 0.41,
        "arms": {"grpo_gs8": {"accuracy": 0.5, "steps": 40}, "gs1_kernel": {"accuracy": 0.52}},
    }
    assert result["completed_arms"] == ["grpo_gs8", "gs1_kernel"]
    assert store.read_result() == result


def test_a_rehearsal_summary_leads_with_its_mark_whoever_writes_it(tmp_path):
    """The store applies the rehearsal mark, the one place: the summary in place when the record becomes a
    rehearsal, and every summary written after (a gate's, a failure's, an interruption's), once; a record that is
    no rehearsal keeps its summary as written. The events keep what each writer posted, and a record rebuilt
    from them carries the mark too."""
    spec = load_spec(GS1_SPEC, rehearse=True, rehearsal_scale="wiring")
    plan = build_plan(spec)
    rehearsal = RunStore.create(tmp_path / "runs", spec, plan)
    mark = rehearsal_summary("", spec.source.rehearsal)
    assert not rehearsal.read_result()["summary"].startswith(NOT_FOR_SUBMISSION)
    marked = rehearsal.update_result(**rehearsal_result_fields(spec.source.rehearsal))
    assert marked["summary"].startswith(mark + " Run started for")
    assert rehearsal.update_result(summary="The effect is +0.01.")["summary"] == f"{mark} The effect is +0.01."
    assert rehearsal.update_result(summary=f"{mark} Stopped.")["summary"] == f"{mark} Stopped."
    assert rehearsal.settle_unfinished(plan, "interrupted by SIGTERM")
    assert rehearsal.read_result()["summary"].startswith(mark + " The run stopped before its verdict")
    assert store_module.recovered_result(rehearsal.run_dir)["summary"] == rehearsal.read_result()["summary"]
    plain = RunStore.create(tmp_path / "plain", load_spec(GS1_SPEC), build_plan(load_spec(GS1_SPEC)))
    assert plain.update_result(summary="The effect is +0.01.")["summary"] == "The effect is +0.01."


def test_update_result_removes_fields_set_to_none(store):
    store.update_result(verdict="refuted")
    assert "verdict" not in store.update_result(verdict=None)


def test_result_is_replaced_atomically(store, monkeypatch):
    before = store.read_result()

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(store_module.os, "replace", crash)
    with pytest.raises(OSError):
        store.update_result(summary="never written")
    assert store.read_result() == before
    assert [p.name for p in store.run_dir.iterdir() if p.name.startswith(".result")] == []


def test_events_are_appended(store):
    store.append_event("gate", gate="spec_intake", status="passed")
    store.append_event("progress", step=1)
    assert [event["event"] for event in store.read_events()] == ["run_created", "gate", "progress"]


def test_tables_are_parquet(store):
    store.write_table("predictions", [{"item_id": "gsm8k-test-0", "arm": "grpo_gs8", "prediction": "18"}])
    store.append_rows("predictions", [{"item_id": "gsm8k-test-1", "arm": "grpo_gs8", "prediction": "3"}])
    frame = pd.read_parquet(store.run_dir / "tables" / "predictions.parquet")
    assert list(frame["item_id"]) == ["gsm8k-test-0", "gsm8k-test-1"]


def test_evidence_is_hashed_listed_and_immutable(store):
    entry = store.add_evidence("probe.py", "script", "print('probe')\n")
    digest = hashlib.sha256(b"print('probe')\n").hexdigest()
    assert entry == {"name": "probe.py", "kind": "script", "sha256": digest, "bytes": 15, "inline": True}
    assert (store.run_dir / "evidence" / "probe.py").read_text() == "print('probe')\n"
    assert store.add_evidence("probe.py", "script", b"print('probe')\n") == entry  # same bytes: no-op
    with pytest.raises(StoreError, match="immutable"):
        store.add_evidence("probe.py", "script", "print('changed')\n")
    assert store.read_manifest()["files"] == [entry]
    assert store.read_result()["evidence"]["files"] == [
        {"name": "probe.py", "kind": "script", "content": "print('probe')\n", "sha256": digest}]


def test_evidence_past_the_caps_is_kept_but_reported_partial(store, monkeypatch):
    monkeypatch.setattr(store_module, "MAX_EVIDENCE_FILE_BYTES", 10)
    store.add_evidence("big.bin", "metrics", b"x" * 11)
    monkeypatch.setattr(store_module, "MAX_EVIDENCE_TOTAL_BYTES", 15)
    store.add_evidence("a.bin", "metrics", b"x" * 10)
    store.add_evidence("b.bin", "metrics", b"y" * 10)
    monkeypatch.setattr(store_module, "MAX_EVIDENCE_FILES", 1)
    store.add_evidence("c.bin", "metrics", b"z")
    evidence = store.read_result()["evidence"]
    assert [entry["name"] for entry in evidence["files"]] == ["a.bin"]
    assert evidence["status"] == "partial"
    reasons = {entry["name"]: entry["reason"] for entry in evidence["partial"]}
    assert "cap is 10 bytes per file" in reasons["big.bin"]
    assert "would bring the run to 20 bytes" in reasons["b.bin"]
    assert "cap is 1 files per run" in reasons["c.bin"]
    # every file stays on disk and in the manifest, marked as not carried inline
    assert {e["name"]: e["inline"] for e in store.read_manifest()["files"]} == {
        "big.bin": False, "a.bin": True, "b.bin": False, "c.bin": False}


def test_evidence_names_cannot_escape(store):
    for bad in ("../x", "manifest.json", ".hidden", "a/b"):
        with pytest.raises(StoreError, match="bad file name"):
            store.add_evidence(bad, "metrics", b"1")


def test_index_tracks_status_changes(store):
    index = RunIndex(store.run_dir.parent).read()
    [row] = index.to_dict("records")
    assert row["run_id"] == store.run_id and row["status"] == "running"
    assert row["spec_title"].startswith("GS1 kernel-baseline")
    store.update_result(status="succeeded", verdict="supported", effect=0.012)
    [row] = RunIndex(store.run_dir.parent).read().to_dict("records")
    assert (row["status"], row["verdict"], row["effect"]) == ("succeeded", "supported", 0.012)
    assert row["finished"] is not None


def _json_round_trip(store):
    return json.loads((store.run_dir / "result.json").read_text())


class SizeTrustingStore(RunStore):
    """Weakened: trusts its parsed RESULT while result.json keeps the size it wrote (a stat check)."""

    def read_result(self):
        if self._written is not None and (self.run_dir / "result.json").stat().st_size == len(self._written[0]):
            return self._written[1]
        return super().read_result()


def test_read_result_gives_what_the_file_holds_even_after_another_writer(store):
    store.update_result(ci=(0.25, 0.5), seeds=Seeds.ONE, summary="first")
    assert store.read_result() == _json_round_trip(store) and store.read_result()["ci"] == [0.25, 0.5]
    assert type(store.read_result()["seeds"]) is int
    store.read_result()["metrics"]["arms"] = {"x": 1}  # a caller changing its copy changes nothing stored
    assert store.read_result() == _json_round_trip(store)

    # another writer changes result.json in place, to the same size, at once
    def rewrite_same_size(path):
        path.write_text(path.read_text().replace('"summary": "first"', '"summary": "other"'))

    weak = SizeTrustingStore(store.run_dir)
    weak.update_result(summary="first")
    rewrite_same_size(weak.run_dir / "result.json")
    assert weak.read_result()["summary"] == "first"  # the weakened store misses the other writer
    store.update_result(summary="first")
    rewrite_same_size(store.run_dir / "result.json")
    assert store.read_result()["summary"] == "other" == _json_round_trip(store)["summary"]
    store.update_result(status="failed")  # and the next write starts from the other writer's RESULT
    assert _json_round_trip(store)["summary"] == "other"


def test_index_is_rewritten_when_its_row_changes_and_only_then(store, monkeypatch):
    upserts = []
    original = RunIndex.upsert
    monkeypatch.setattr(RunIndex, "upsert", lambda self, row: (upserts.append(row["status"]), original(self, row)))
    store.update_result(summary="still running")
    store.add_evidence("a.txt", "metrics", "1")
    assert upserts == []  # neither write changed the run's row
    store.update_result(status="failed")
    again = RunStore.open(store.run_dir)  # a second store of the same run in this process
    again.update_result(status="running")
    store.update_result(status="failed", summary="stopped")
    assert upserts == ["failed", "running", "failed"]
    [row] = RunIndex(store.run_dir.parent).read().to_dict("records")
    assert row["status"] == "failed" == store.read_result()["status"]


def _upsert_many(runs_dir, worker):
    index = RunIndex(runs_dir)
    for i in range(10):
        index.upsert({"run_id": f"run-{worker}-{i}", "status": "running"})


def test_index_is_safe_with_concurrent_writers(tmp_path):
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_upsert_many, args=(tmp_path, w)) for w in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert len(RunIndex(tmp_path).read()) == 30

