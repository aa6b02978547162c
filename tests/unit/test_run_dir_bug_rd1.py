"""Known grader bugs in experiment/grading/run_dir.py (found by helper rd1 while killing the mutants of its lines
1-651; not fixed here): a tampered run directory whose evidence manifest, retained spec or spec revision, or run_created
spec_path has the wrong JSON type makes `run_validation` raise AttributeError / TypeError instead of reporting a
problem (or a one-line RunDirError, the only error its docstring allows). experiment.grading.grade.grade_record
catches only RunDirError, so grading such a run directory ends in a traceback, and so does the decision gate's
validation (experiment.gates.decision). docs/contract-rules.md: `evidence.manifest` (EVID-8) "evidence/manifest.json
is missing or not JSON"; `run.plan` (EVID-9) the retained spec/plan or the spec file cannot be read.

Each test says what the contract asks (a problem with the rule id, or RunDirError) and is marked xfail(strict=True)
limited to the crash it shows, so a fix turns it into a failure that asks to drop the mark."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from test_validation import build_gs1_run

from experiment.grading.run_dir import RunDirError, run_validation


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    return build_gs1_run(tmp_path_factory.mktemp("rd1-bugs") / "runs").run_dir


@pytest.fixture
def run_dir(template, tmp_path) -> Path:
    return Path(shutil.copytree(template, tmp_path / template.name))


def checks_or_run_dir_error(run_dir: Path) -> set[str] | None:
    """The check ids reported, or None when the directory is refused with a one-line RunDirError."""
    try:
        return {problem.check for problem in run_validation(run_dir).problems}
    except RunDirError:
        return None


def list_evidence(run_dir: Path, name: str, data: bytes) -> None:
    (run_dir / "evidence" / name).write_bytes(data)
    manifest = json.loads((run_dir / "evidence" / "manifest.json").read_text())
    manifest["files"] = [e for e in manifest["files"] if e["name"] != name] + [
        {"name": name, "kind": "spec", "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}]
    (run_dir / "evidence" / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.xfail(strict=True, raises=AttributeError,
                   reason="run_dir.py:200 evidence_entries calls .get on a manifest that is JSON but no object")
@pytest.mark.parametrize("manifest", ["[1]", '"files"'])
def test_a_manifest_that_is_no_json_object_is_reported(run_dir, manifest):
    (run_dir / "evidence" / "manifest.json").write_text(manifest)
    found = checks_or_run_dir_error(run_dir)
    assert found is None or "evidence.manifest" in found


@pytest.mark.xfail(strict=True, raises=AttributeError,
                   reason="run_dir.py:269 apply_revision is given a retained revision that is no JSON object; only "
                          "SpecError and JSON errors are caught")
@pytest.mark.parametrize("revision", [b"[]", b'"pin"'])
def test_a_retained_revision_that_is_no_json_object_is_reported(run_dir, revision):
    list_evidence(run_dir, "spec-revision.plan.json", revision)
    found = checks_or_run_dir_error(run_dir)
    assert found is None or "run.plan" in found


@pytest.mark.xfail(strict=True, raises=TypeError,
                   reason="run_dir.py:269 apply_revision is given a retained spec.json that is no JSON object")
def test_a_retained_spec_that_is_no_json_object_with_a_revision_is_reported(run_dir):
    list_evidence(run_dir, "spec.json", b"[1]")
    list_evidence(run_dir, "spec-revision.plan.json", b'{"base_model": "Qwen/Qwen3.5-2B"}')
    found = checks_or_run_dir_error(run_dir)
    assert found is None or "run.plan" in found


@pytest.mark.xfail(strict=True, raises=TypeError,
                   reason="run_dir.py:290 Path(spec_path) on a run_created spec_path that is no string")
@pytest.mark.parametrize("spec_path", [5, ["specs/gs1.json"], {"path": "specs/gs1.json"}])
def test_a_run_created_spec_path_that_is_no_string_is_reported(run_dir, spec_path):
    manifest = json.loads((run_dir / "evidence" / "manifest.json").read_text())
    manifest["files"] = [e for e in manifest["files"] if e["name"] != "spec.json"]  # so the spec path is read
    (run_dir / "evidence" / "manifest.json").write_text(json.dumps(manifest))
    rows: list[dict[str, Any]] = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()
                                  if line.strip()]
    rows = [dict(row, spec_path=spec_path) if row.get("event") == "run_created" else row for row in rows]
    (run_dir / "events.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    found = checks_or_run_dir_error(run_dir)
    assert found is None or "run.plan" in found
