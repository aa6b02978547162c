"""Tampered run directories whose JSON evidence has the wrong type (experiment/grading/run_dir.py, found by helper rd1
while killing the mutants of its lines 1-651): an evidence manifest, retained spec, plan or spec revision that is JSON
but no object, or a run_created spec_path that is no string. Before the fix each made `run_validation` raise
AttributeError / TypeError (these tests ran as xfail(strict=True) on that code, raising exactly those), so grading
such a directory, and the decision gate's validation, ended in a traceback. Now each is reported under the rule the
contract gives: `evidence.manifest` (EVID-8, evidence/manifest.json missing or not JSON) and `run.plan` (EVID-9, the
retained spec/plan or the spec file cannot be read)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from records import build_gs1_run

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


@pytest.mark.parametrize("manifest", ["[1]", '"files"'])
def test_a_manifest_that_is_no_json_object_is_reported(run_dir, manifest):
    (run_dir / "evidence" / "manifest.json").write_text(manifest)
    found = checks_or_run_dir_error(run_dir)
    assert found is not None and "evidence.manifest" in found


@pytest.mark.parametrize("revision", [b"[]", b'"pin"'])
def test_a_retained_revision_that_is_no_json_object_is_reported(run_dir, revision):
    list_evidence(run_dir, "spec-revision.plan.json", revision)
    found = checks_or_run_dir_error(run_dir)
    assert found is not None and "run.plan" in found


def test_a_retained_spec_that_is_no_json_object_with_a_revision_is_reported(run_dir):
    list_evidence(run_dir, "spec.json", b"[1]")
    list_evidence(run_dir, "spec-revision.plan.json", b'{"base_model": "Qwen/Qwen3.5-2B"}')
    found = checks_or_run_dir_error(run_dir)
    assert found is not None and "run.plan" in found


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
    assert found is not None and "run.plan" in found


@pytest.mark.parametrize("plan", [b"[]", b"3"])
def test_a_retained_plan_that_is_no_json_object_is_reported_and_the_spec_file_stands_in(run_dir, plan):
    list_evidence(run_dir, "execution-plan.json", plan)
    problems = run_validation(run_dir).problems
    assert any(p.check == "run.plan" and "execution-plan.json is not a JSON object" in p.message for p in problems)


def test_a_run_created_spec_path_naming_no_file_is_not_loaded(run_dir):
    """A spec_path that names no file is not read (only the plan-missing problem follows), not loaded and refused."""
    manifest = json.loads((run_dir / "evidence" / "manifest.json").read_text())
    manifest["files"] = [e for e in manifest["files"] if e["name"] not in ("spec.json", "execution-plan.json")]
    (run_dir / "evidence" / "manifest.json").write_text(json.dumps(manifest))
    rows = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines() if line.strip()]
    rows = [dict(row, spec_path=str(run_dir / "no-such-spec.json")) if row.get("event") == "run_created" else row
            for row in rows]
    (run_dir / "events.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    messages = [p.message for p in run_validation(run_dir).problems if p.check == "run.plan"]
    assert len(messages) == 1 and messages[0].startswith("neither the retained spec/plan evidence"), messages
