"""Evidence as the exchange receives it (EVID-1..EVID-8).

RESULT.evidence.files[] carries each file inline (text as is, binary as base64 with its encoding
named) with the sha256 of the original bytes; a file past the caps is reported partial and named,
never listed as a (verifiable) file; per_arm_metrics mirrors metrics.arms; the pipeline code is
retained as script evidence.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest

import experiment.run.store as store_module
from experiment.report.code_revision import PROJECT_ROOT, code_revision, pipeline_code_bundle
from experiment.contract.plan import build_plan
from experiment.contract.spec import load_spec
from experiment.run.store import RunStore, evidence_file_bytes

GS1_SPEC = Path(__file__).resolve().parents[2] / "specs" / "gs1_kernel_vs_grpo_gsm8k.json"


@pytest.fixture
def store(tmp_path):
    spec = load_spec(GS1_SPEC, rehearse=True)
    return RunStore.create(tmp_path / "runs", spec, build_plan(spec))


def _files(store: RunStore) -> dict[str, dict]:
    return {entry["name"]: entry for entry in store.read_result()["evidence"]["files"]}


def test_text_evidence_is_inline_as_is_with_the_hash_of_its_bytes(store):
    text = '{"item_id": "arith-1", "prediction": "\\\\boxed{7}", "note": "é"}\n'
    store.add_evidence("predictions-x.jsonl", "predictions", text)
    entry = _files(store)["predictions-x.jsonl"]
    assert entry["content"] == text
    assert "encoding" not in entry
    assert entry["sha256"] == hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert evidence_file_bytes(entry) == (store.run_dir / "evidence" / "predictions-x.jsonl").read_bytes()


def test_binary_evidence_is_base64_with_its_encoding_named(store):
    payload = bytes(range(256)) * 3  # not UTF-8
    store.add_evidence("weights-sample.bin", "metrics", payload)
    entry = _files(store)["weights-sample.bin"]
    assert entry["encoding"] == "base64"
    assert base64.b64decode(entry["content"]) == payload
    assert entry["sha256"] == hashlib.sha256(payload).hexdigest()  # of the original bytes, not the base64 text


def test_a_bare_result_carries_every_file_so_each_hash_checks_from_the_record_alone(store, tmp_path):
    store.add_evidence("a.json", "metrics", json.dumps({"x": 1}))
    store.add_evidence("b.bin", "metrics", b"\xff\x00\xfe")
    bare = json.loads((store.run_dir / "result.json").read_text())
    (store.run_dir / "evidence" / "a.json").unlink()  # nothing is read from disk below
    for entry in bare["evidence"]["files"]:
        assert hashlib.sha256(evidence_file_bytes(entry)).hexdigest() == entry["sha256"]
    assert bare["evidence"]["status"] == "complete"


def test_what_cannot_fit_is_partial_and_named_never_listed_as_a_file(store, monkeypatch):
    monkeypatch.setattr(store_module, "MAX_EVIDENCE_FILE_BYTES", 64)
    store.add_evidence("small.txt", "metrics", "fits")
    store.add_evidence("too-big.jsonl", "predictions", "x" * 65)
    evidence = store.read_result()["evidence"]
    assert [entry["name"] for entry in evidence["files"]] == ["small.txt"]
    assert evidence["status"] == "partial"
    (partial,) = evidence["partial"]
    assert partial["name"] == "too-big.jsonl" and partial["kind"] == "predictions"
    assert partial["sha256"] == hashlib.sha256(b"x" * 65).hexdigest() and "content" not in partial
    assert "per file" in partial["reason"]
    # kept on disk for a local reviewer, and the manifest says it is not carried inline
    assert (store.run_dir / "evidence" / "too-big.jsonl").read_text() == "x" * 65
    assert {e["name"]: e["inline"] for e in store.read_manifest()["files"]} == {"small.txt": True, "too-big.jsonl": False}


def test_the_run_caps_count_only_inline_files(store, monkeypatch):
    monkeypatch.setattr(store_module, "MAX_EVIDENCE_FILES", 2)
    for name in ("one.txt", "two.txt", "three.txt"):
        store.add_evidence(name, "metrics", name)
    evidence = store.read_result()["evidence"]
    assert [e["name"] for e in evidence["files"]] == ["one.txt", "two.txt"]
    assert [e["name"] for e in evidence["partial"]] == ["three.txt"]
    assert "2 files per run" in evidence["partial"][0]["reason"]


def test_per_arm_metrics_mirror_metrics_arms_as_they_are_posted(store):
    store.update_result(metrics={"arms": {"grpo_gs8": {"accuracy": 0.5}}})
    store.update_result(metrics={"base_model_accuracy": 0.2, "arms": {"gs1_kernel": {"accuracy": 0.6}}})
    store.update_result(metrics={"arms": {"grpo_gs8": {"steps_completed": 12}}})
    result = store.read_result()
    assert result["evidence"]["per_arm_metrics"] == {
        "grpo_gs8": {"accuracy": 0.5, "steps_completed": 12}, "gs1_kernel": {"accuracy": 0.6}}
    assert result["evidence"]["per_arm_metrics"] == result["metrics"]["arms"]


def test_pipeline_code_bundle_is_the_code_that_runs_with_the_revision_hashes():
    bundle = json.loads(pipeline_code_bundle(include_backend=False))
    revision = code_revision()["files_sha256"]
    assert bundle["entry_point"] == "flows/run.py"
    assert {"flows/run.py", "flows/experiment_flow.py", "experiment/gates/__init__.py"} <= set(bundle["files"])
    assert not any(path.startswith("embedded_tinker/") for path in bundle["files"])
    for path, entry in bundle["files"].items():
        assert entry["sha256"] == revision[path]
        assert hashlib.sha256(entry["content"].encode("utf-8")).hexdigest() == entry["sha256"]
        assert entry["content"] == (PROJECT_ROOT / path).read_text(encoding="utf-8")
    with_backend = json.loads(pipeline_code_bundle(include_backend=True))
    assert "embedded_tinker/server.py" in with_backend["files"]
