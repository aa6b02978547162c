"""The run-dir layer's evidence (EVID-3, -4, -6, -7, -8) and credential (SEC-1) checks and its helpers for CORR-3
same-code parity and ACT-1 ranges (experiment/grading/run_dir.py, `Validator.check_evidence`,
`check_no_credentials`, `_searchable_text`; the same-code reading is experiment.grading.correctness's `_same_code`), each condition tried with
inputs on each side (issue 28 item 7: the complete mutation run of experiment/grading/).

Expected problems are worked out from docs/contract-rules.md: EVID-3 caps are at most 64 files, 10 MiB a file and
40 MiB a run (a file or run exactly at a cap is within it); every manifest file is in evidence/ and still hashes to
its manifest sha256; a succeeded run retains the required kinds; RESULT.evidence lists files with the manifest's
sha256. SEC-1: no file holds a credential variable's value (values of 4 characters or fewer are not searched: see
experiment/grading/secrets.py), a signed URL or a credential header; parquet tables are searched decoded too."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from experiment.grading.correctness import _same_code  # CORR-3/CORR-6's one reading of parity_sides
from experiment.grading.run_dir import RunFiles, Validator
from experiment.grading.secrets import CREDENTIAL_ENV_VARS
from experiment.run.store import (
    MAX_EVIDENCE_FILE_BYTES,
    MAX_EVIDENCE_FILES,
    MAX_EVIDENCE_TOTAL_BYTES,
    REQUIRED_EVIDENCE_KINDS,
)

MIB = 1024 * 1024


def _validator(run_dir: Path, manifest: dict | None, **result) -> Validator:
    files = RunFiles(run_dir=run_dir, result=result, events=[], bad_event_lines=[], manifest=manifest, plan={},
                      spec={}, setup_problems=[])
    return Validator(files)


def _found(validator: Validator, prefix: str = "") -> list[tuple[str, str]]:
    return [(p.check, p.message) for p in validator.report.problems if p.check.startswith(prefix)]


def _entry(run_dir: Path, name: str, kind: str = "metrics") -> dict:
    data = (run_dir / "evidence" / name).read_bytes()
    return {"name": name, "kind": kind, "sha256": hashlib.sha256(data).hexdigest()}


def _evidence(run_dir: Path, entries: list[dict], **result) -> list[tuple[str, str]]:
    validator = _validator(run_dir, {"files": entries}, **result)
    validator.check_evidence()
    return _found(validator)


# ------------------------------------------------------------------------------------------ EVID-3 caps


@pytest.fixture(scope="module")
def many(tmp_path_factory) -> Path:
    """A run directory whose evidence/ holds 65 small files."""
    run_dir = tmp_path_factory.mktemp("rd4-many")
    (run_dir / "evidence").mkdir()
    for index in range(MAX_EVIDENCE_FILES + 1):
        (run_dir / "evidence" / f"file-{index:02d}.json").write_text(json.dumps({"index": index}))
    return run_dir


def test_the_file_count_cap_is_64_files(many):
    names = sorted(path.name for path in (many / "evidence").iterdir())
    assert len(names) == MAX_EVIDENCE_FILES + 1 == 65
    at_cap = _evidence(many, [_entry(many, name) for name in names[:MAX_EVIDENCE_FILES]])
    assert at_cap == [("evidence.unlisted", f"evidence/{names[-1]} is not in the manifest")]
    over = _evidence(many, [_entry(many, name) for name in names])
    assert over == [("evidence.caps", "65 evidence files exceed the cap of 64")]


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> tuple[Path, dict[str, dict]]:
    """Four files of exactly 10 MiB (40 MiB together), one of 10 MiB + 1 byte and one of 1 byte."""
    run_dir = tmp_path_factory.mktemp("rd4-big")
    (run_dir / "evidence").mkdir()
    sizes = {f"part-{index}.bin": MAX_EVIDENCE_FILE_BYTES for index in range(4)}
    sizes.update({"over.bin": MAX_EVIDENCE_FILE_BYTES + 1, "byte.bin": 1})
    for name, size in sizes.items():
        (run_dir / "evidence" / name).write_bytes(bytes([len(name)]) * size)
    return run_dir, {name: _entry(run_dir, name) for name in sizes}


def _caps(big, names) -> list[tuple[str, str]]:
    run_dir, entries = big
    return [found for found in _evidence(run_dir, [entries[name] for name in names]) if found[0] == "evidence.caps"]


def test_the_caps_are_10_mib_a_file_and_40_mib_a_run(big):
    assert MAX_EVIDENCE_FILE_BYTES == 10 * MIB and MAX_EVIDENCE_TOTAL_BYTES == 40 * MIB
    parts = [f"part-{index}.bin" for index in range(4)]
    assert _caps(big, parts[:1]) == []  # a file of exactly 10 MiB
    assert _caps(big, parts) == []  # exactly 40 MiB in all
    assert _caps(big, ["over.bin"]) == [("evidence.caps", f"over.bin is {10 * MIB + 1} bytes, over the 10 MiB cap")]
    assert _caps(big, [*parts, "byte.bin"]) == [
        ("evidence.caps", f"evidence totals {40 * MIB + 1} bytes, over the 40 MiB cap")]
    assert _caps(big, ["byte.bin"]) == []


# ------------------------------------------------------------------------------------------ EVID-7, -8, -4


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("rd4-small")
    (run_dir / "evidence" / "sub").mkdir(parents=True)
    for name in ("rl-loop.py", "plan.json", "code-revision.txt", "predictions.jsonl", "metrics.json", "sub/x.json"):
        (run_dir / "evidence" / name).write_text(f"content of {name}\n")
    return run_dir


KINDS = {"rl-loop.py": "script", "plan.json": "effective_config", "code-revision.txt": "code_revision",
         "predictions.jsonl": "predictions", "metrics.json": "metrics"}


def _all(run_dir: Path) -> list[dict]:
    return [_entry(run_dir, name, kind) for name, kind in KINDS.items()]


def test_a_consistent_finished_run_has_no_evidence_problem(small):
    assert sorted(KINDS.values()) == sorted(REQUIRED_EVIDENCE_KINDS)
    entries = _all(small) + [_entry(small, "sub/x.json")]
    assert [check for check, _ in _evidence(small, _all(small), status="succeeded")] == []
    assert ("evidence.missing_file", "manifest lists 'sub/x.json' but the file is not in evidence/") in _evidence(
        small, entries, status="succeeded")


def test_every_manifest_file_is_in_evidence_and_each_missing_one_is_named(small):
    entries = [{"name": 5, "kind": "metrics", "sha256": "0" * 64}, _entry(small, "sub/x.json"),
               {"name": "gone.json", "kind": "metrics", "sha256": "0" * 64}, *_all(small)]
    found = _evidence(small, entries, status="running")
    assert found == [("evidence.missing_file", f"manifest lists {name} but the file is not in evidence/")
                     for name in ("5", "'sub/x.json'", "'gone.json'")]


@pytest.mark.parametrize("changes", [{}, {"kind": "script"}, {"sha256": "0" * 64}], ids=["same", "other kind", "other sha256"])
def test_a_name_listed_twice_in_the_manifest_is_evid_7(small, changes):
    # one name, one content (EVID-7): a second entry of the same name, the same or another content, is listed once too often
    entries = _all(small)
    found = _evidence(small, [*entries, dict(entries[3], **changes)], status="running")
    assert ("evidence.names", "evidence names listed more than once: predictions.jsonl") in found
    assert [f for f in _evidence(small, entries, status="running") if f[0] == "evidence.names"] == []


@pytest.mark.parametrize("sha256", ["0" * 64, "f" * 64, None])
def test_a_file_that_no_longer_hashes_to_its_manifest_sha256(small, sha256):
    entries = _all(small)
    entries[1] = dict(entries[1], sha256=sha256)
    found = _evidence(small, entries, status="running")
    assert [check for check, _ in found] == ["evidence.immutable"] and found[0][1].startswith("plan.json ")


@pytest.mark.parametrize("status, required", [("succeeded", True), ("running", False), ("failed", False),
                                              ("unknown", False)])
def test_only_a_succeeded_run_owes_the_required_kinds(small, status, required):
    entries = [entry for entry in _all(small) if entry["kind"] != "script"]
    found = [f for f in _evidence(small, entries, status=status) if f[0] != "evidence.unlisted"]
    assert found == ([("evidence.required_kinds", "a finished run retains no evidence of kind script")]
                     if required else [])


@pytest.mark.parametrize("sha256", ["0" * 64, "f" * 64])
def test_result_evidence_files_carry_the_manifests_sha256(small, sha256):
    entries = _all(small)
    listed = [{"name": entry["name"], "sha256": entry["sha256"]} for entry in entries]
    assert _evidence(small, entries, status="running", evidence={"version": 1, "files": listed}) == []
    listed[2] = dict(listed[2], sha256=sha256)
    found = _evidence(small, entries, status="running", evidence={"version": 1, "files": listed})
    assert [check for check, _ in found] == ["evidence.result_files"] and "'code-revision.txt'" in found[0][1]


@pytest.mark.parametrize("evidence", [{"version": 1}, {"version": 1, "files": "plan.json"}, None, "files"])
def test_result_evidence_without_a_file_list_has_nothing_to_compare(small, evidence):
    assert _evidence(small, _all(small), status="running", evidence=evidence) == []


# ------------------------------------------------------------------------------------------ SEC-1


@pytest.fixture
def secrets_dir(tmp_path, monkeypatch) -> Path:
    for name in CREDENTIAL_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "evidence").mkdir()
    return tmp_path


def _secrets(run_dir: Path) -> list[tuple[str, str]]:
    validator = _validator(run_dir, {"files": []})
    validator.check_no_credentials()
    return _found(validator)


@pytest.mark.parametrize("value, searched", [("abc", False), ("abcd", False), ("abcde", True), ("abcdef12", True)])
def test_credential_values_longer_than_4_characters_are_searched(secrets_dir, monkeypatch, value, searched):
    monkeypatch.setenv("TINKER_API_KEY", value)
    (secrets_dir / "evidence" / "notes.txt").write_text(f"the key is {value} here\n")
    found = _secrets(secrets_dir)
    expected = [("secrets.value", f"{Path('evidence', 'notes.txt')} contains the value of TINKER_API_KEY")]
    assert found == (expected if searched else [])


def test_a_signed_url_names_its_query_parameter(secrets_dir):
    (secrets_dir / "events.jsonl").write_text(json.dumps({"url": "https://example.org/x.jsonl?sig=ab12cd34ef"}) + "\n")
    assert _secrets(secrets_dir) == [
        ("secrets.url", "events.jsonl contains a credential-bearing URL (query parameter sig)")]


def _parquet_with(path: Path, secret: str) -> None:
    rows = [{"step": step, "note": f"step {step} used {secret}" if step == 7 else f"step {step}"} for step in range(50)]
    pd.DataFrame(rows).to_parquet(path, compression="gzip")


def test_a_credential_inside_a_compressed_parquet_table_is_found(secrets_dir, monkeypatch):
    secret = "tml-Zq8vK2mW9xR4pL7n"
    monkeypatch.setenv("TINKER_API_KEY", secret)
    (secrets_dir / "tables").mkdir()
    _parquet_with(secrets_dir / "tables" / "metrics.parquet", secret)
    assert secret.encode() not in (secrets_dir / "tables" / "metrics.parquet").read_bytes()  # only decoded
    assert _secrets(secrets_dir) == [
        ("secrets.value", f"{Path('tables', 'metrics.parquet')} contains the value of TINKER_API_KEY")]


def test_a_parquet_file_that_does_not_decode_is_still_searched_as_bytes(secrets_dir, monkeypatch):
    secret = "tml-Zq8vK2mW9xR4pL7n"
    monkeypatch.setenv("TINKER_API_KEY", secret)
    (secrets_dir / "tables").mkdir()
    (secrets_dir / "tables" / "broken.parquet").write_text(f"not a parquet table: {secret}\n")
    (secrets_dir / "tables" / "clean.parquet").write_text("not a parquet table either\n")
    assert _secrets(secrets_dir) == [
        ("secrets.value", f"{Path('tables', 'broken.parquet')} contains the value of TINKER_API_KEY")]


# ------------------------------------------------------------------------------------------ helpers


@pytest.mark.parametrize("sides, same", [
    ({"baseline": {"same_code": True}}, True),
    ({"baseline": {"same_code": False}, "reference": {"same_code": True}}, True),
    ({"baseline": {"same_code": False}}, False),
    ({"baseline": {"same_code": 1}}, False),
    ({"baseline": {"same_code": "true"}}, False),
    ({"baseline": {}}, False),
    ({"baseline": "same_code"}, False),
    ({"baseline": "same_code", "reference": {"same_code": True}}, True),
    ({}, False),
    (None, False),
    (["same_code"], False),
])
def test_same_code_parity_is_a_side_reporting_same_code_true(sides, same):
    # CORR-3: a path whose baseline check ran the same code on both sides says so with same_code: true (a JSON
    # true, not 1 or "true") in one of its parity_sides
    path = {"id": "p"} if sides is None else {"id": "p", "parity_sides": sides}
    assert _same_code(path) is same
