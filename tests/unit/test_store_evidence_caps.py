"""The store's evidence rules at the contract's real caps (section 12: each file <= 10 MiB, at
most 64 files / 40 MiB per run). The caps are literals from the contract, not the module's
constants, and nothing is monkeypatched. Within the caps a file is carried inline in RESULT; past them
it is kept on disk and in the manifest (`inline: false`) and reported in `evidence.partial`."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from experiment.contract.plan import build_plan
from experiment.contract.spec import load_spec
from experiment.run.store import RunStore, StoreError

MIB = 1024 * 1024
CONTRACT_FILE_CAP = 10 * MIB
CONTRACT_TOTAL_CAP = 40 * MIB
CONTRACT_FILE_COUNT_CAP = 64
GS1_SPEC = Path(__file__).resolve().parents[2] / "specs" / "gs1_kernel_vs_grpo_gsm8k.json"


@pytest.fixture
def store(tmp_path):
    spec = load_spec(GS1_SPEC)
    return RunStore.create(tmp_path / "runs", spec, build_plan(spec))


def _names(store):
    return [entry["name"] for entry in store.read_manifest()["files"]]


def _inline(store):
    return {entry["name"]: entry["inline"] for entry in store.read_manifest()["files"]}


def _evidence(store):
    return store.read_result()["evidence"]


def test_a_file_of_exactly_10_mib_is_inline_one_byte_more_is_partial(store):
    at_cap = b"x" * CONTRACT_FILE_CAP
    entry = store.add_evidence("at-cap.bin", "metrics", at_cap)
    assert entry["bytes"] == CONTRACT_FILE_CAP and entry["inline"] is True
    assert entry["sha256"] == hashlib.sha256(at_cap).hexdigest()
    assert (store.run_dir / "evidence" / "at-cap.bin").stat().st_size == CONTRACT_FILE_CAP
    evidence = _evidence(store)
    assert [e["name"] for e in evidence["files"]] == ["at-cap.bin"]
    assert evidence["files"][0]["content"] == "x" * CONTRACT_FILE_CAP
    assert evidence["status"] == "complete" and "partial" not in evidence

    over = b"y" * (CONTRACT_FILE_CAP + 1)
    entry = store.add_evidence("over.bin", "metrics", over)
    assert entry["bytes"] == CONTRACT_FILE_CAP + 1 and entry["inline"] is False
    # kept on disk and in the manifest, but never listed as an inline file
    assert (store.run_dir / "evidence" / "over.bin").read_bytes() == over
    assert _inline(store) == {"at-cap.bin": True, "over.bin": False}
    evidence = _evidence(store)
    assert [e["name"] for e in evidence["files"]] == ["at-cap.bin"]
    assert evidence["status"] == "partial"
    assert evidence["partial"] == [{
        "name": "over.bin", "kind": "metrics", "sha256": hashlib.sha256(over).hexdigest(),
        "bytes": CONTRACT_FILE_CAP + 1,
        "reason": f"over.bin is {CONTRACT_FILE_CAP + 1} bytes; the cap is {CONTRACT_FILE_CAP} bytes per file"}]


def test_a_run_carries_exactly_40_mib_inline_and_not_one_byte_more(store):
    for index in range(3):
        store.add_evidence(f"part{index}.bin", "metrics", b"abc"[index : index + 1] * CONTRACT_FILE_CAP)
    store.add_evidence("tiny.bin", "metrics", b"t")  # 30 MiB + 1 byte so far
    too_much = b"z" * CONTRACT_FILE_CAP  # would make 40 MiB + 1 byte
    assert store.add_evidence("part3.bin", "metrics", too_much)["inline"] is False
    evidence = _evidence(store)
    assert evidence["status"] == "partial"
    assert [p["name"] for p in evidence["partial"]] == ["part3.bin"]
    assert evidence["partial"][0]["reason"] == (f"part3.bin would bring the run to {CONTRACT_TOTAL_CAP + 1} bytes; "
                                                f"the cap is {CONTRACT_TOTAL_CAP} bytes per run")
    # the partial file does not count against the inline total: 1 byte less still fits, making exactly 40 MiB
    assert store.add_evidence("part3b.bin", "metrics", b"w" * (CONTRACT_FILE_CAP - 1))["inline"] is True
    inline = [e for e in store.read_manifest()["files"] if e["inline"]]
    assert sum(e["bytes"] for e in inline) == CONTRACT_TOTAL_CAP
    assert [e["name"] for e in _evidence(store)["files"]] == ["part0.bin", "part1.bin", "part2.bin", "tiny.bin",
                                                             "part3b.bin"]
    # and one byte more is partial
    assert store.add_evidence("one-more.bin", "metrics", b"1")["inline"] is False
    evidence = _evidence(store)
    assert [p["name"] for p in evidence["partial"]] == ["part3.bin", "one-more.bin"]
    assert evidence["partial"][1]["reason"] == (f"one-more.bin would bring the run to {CONTRACT_TOTAL_CAP + 1} bytes; "
                                                f"the cap is {CONTRACT_TOTAL_CAP} bytes per run")
    assert "one-more.bin" not in [e["name"] for e in evidence["files"]]
    assert evidence["status"] == "partial"
    assert _names(store) == ["part0.bin", "part1.bin", "part2.bin", "tiny.bin", "part3.bin", "part3b.bin",
                             "one-more.bin"]


def test_a_run_carries_64_files_inline_and_not_65(store):
    for index in range(CONTRACT_FILE_COUNT_CAP):
        assert store.add_evidence(f"f{index:02d}.txt", "metrics", str(index))["inline"] is True
    evidence = _evidence(store)
    assert len(evidence["files"]) == CONTRACT_FILE_COUNT_CAP and evidence["status"] == "complete"
    assert "partial" not in evidence
    assert store.add_evidence("f64.txt", "metrics", "64")["inline"] is False
    evidence = _evidence(store)
    assert len(evidence["files"]) == CONTRACT_FILE_COUNT_CAP
    assert "f64.txt" not in [e["name"] for e in evidence["files"]]
    assert evidence["status"] == "partial"
    assert evidence["partial"] == [{
        "name": "f64.txt", "kind": "metrics", "sha256": hashlib.sha256(b"64").hexdigest(), "bytes": 2,
        "reason": f"f64.txt would be file {CONTRACT_FILE_COUNT_CAP + 1}; the cap is {CONTRACT_FILE_COUNT_CAP} files per run"}]
    assert len(_names(store)) == CONTRACT_FILE_COUNT_CAP + 1 and _inline(store)["f64.txt"] is False
    # re-adding an existing file with the same bytes is still a no-op at the cap
    assert store.add_evidence("f00.txt", "metrics", "0")["name"] == "f00.txt"
    assert len(_names(store)) == CONTRACT_FILE_COUNT_CAP + 1 and len(_evidence(store)["files"]) == CONTRACT_FILE_COUNT_CAP


def test_evidence_is_listed_in_manifest_result_and_events(store):
    entry = store.add_evidence("probe.py", "script", "print(1)\n", source="probe")
    digest = hashlib.sha256(b"print(1)\n").hexdigest()
    assert entry == {"name": "probe.py", "kind": "script", "sha256": digest, "bytes": 9, "inline": True,
                     "source": "probe"}
    assert store.read_manifest()["files"] == [entry]
    evidence = store.read_result()["evidence"]
    assert evidence["files"] == [{"name": "probe.py", "kind": "script", "content": "print(1)\n", "sha256": digest}]
    assert evidence["status"] == "complete"
    events = [e for e in store.read_events() if e.get("event") == "evidence_added"]
    assert len(events) == 1 and events[0]["sha256"] == digest and events[0]["bytes"] == 9
    assert events[0]["inline"] is True and "partial_reason" not in events[0]
    no_source = store.add_evidence("b.txt", "metrics", b"")
    assert "source" not in no_source and no_source["bytes"] == 0
    with pytest.raises(StoreError, match="immutable"):
        store.add_evidence("probe.py", "script", "print(2)\n")


@pytest.mark.parametrize("name", ["../x", "manifest.json", ".hidden", "a/b", "", "-x", "a b"])
def test_bad_evidence_names_are_refused(store, name):
    with pytest.raises(StoreError, match="bad file name"):
        store.add_evidence(name, "metrics", b"1")


@pytest.mark.parametrize("name", ["a", "A.b", "0_x-y.jsonl", "manifest.json.bak"])
def test_good_evidence_names_are_kept(store, name):
    assert store.add_evidence(name, "metrics", b"1")["name"] == name


def test_evidence_section_is_recreated_in_the_contract_shape_when_missing(store):
    # EVID-1, EVID-5: evidence = {"version": 1, "files": [...], "checkpoints": [...], "per_arm_metrics": {}}
    result = store.read_result()  # a RESULT written without the section (older or hand-edited run)
    del result["evidence"]
    (store.run_dir / "result.json").write_text(json.dumps(result))
    store.add_evidence("a.txt", "metrics", b"1")
    assert store.read_result()["evidence"] == {
        "version": 1,
        "files": [{"name": "a.txt", "kind": "metrics", "content": "1", "sha256": hashlib.sha256(b"1").hexdigest()}],
        "checkpoints": [], "per_arm_metrics": {}, "status": "complete"}
