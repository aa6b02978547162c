"""Grading a record with its run directory (experiment/grading/grade.py): a spec retained by name
and hash only is read from the run's evidence/ folder, and a folder that is not a run directory is
a problem in the grade, not an exception."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from experiment.grading import grade_record

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "specs" / "gs1_kernel_vs_grpo_gsm8k.json"


def _partial_spec_record():
    """RESULT whose only evidence is the spec, retained by name and sha256 (no inline content)."""
    digest = hashlib.sha256(SPEC.read_bytes()).hexdigest()
    return {"evidence": {"version": 1, "files": [{"name": "spec.json", "kind": "spec", "sha256": digest}]}}


def test_a_spec_retained_by_name_only_is_read_from_the_run_directorys_evidence(tmp_path):
    (tmp_path / "evidence").mkdir()
    shutil.copy(SPEC, tmp_path / "evidence" / "spec.json")
    graded = grade_record(_partial_spec_record(), run_dir=tmp_path)
    assert graded.spec_source == "the run's recorded spec.json (evidence/)"
    assert not any(problem.startswith("SPEC:") for problem in graded.problems)


def test_without_the_file_on_disk_the_spec_is_missing_and_said_so(tmp_path):
    graded = grade_record(_partial_spec_record(), run_dir=tmp_path)
    assert any(problem.startswith("SPEC: the run's spec is not carried inline") for problem in graded.problems)


def test_a_folder_without_result_json_is_a_run_problem_not_an_exception(tmp_path):
    graded = grade_record(_partial_spec_record(), run_dir=tmp_path)
    assert any(problem.startswith("run: ") and "no result.json" in problem for problem in graded.problems)


def test_events_after_a_line_that_is_not_json_are_still_read(tmp_path):
    from experiment.grading.grade import read_events

    (tmp_path / "events.jsonl").write_text('{"event": "a"}\nnot json\n\n{"event": "b"}\n')
    events, problems = read_events(tmp_path)
    assert events == [{"event": "a"}, {"event": "b"}]
    assert problems == ["EVID-8: events.jsonl line 2 is not JSON."]


def test_a_given_spec_path_is_named_with_its_revision_only_when_it_has_one(tmp_path):
    from experiment.contract.spec import load_spec

    alone = tmp_path / "spec.json"
    shutil.copy(SPEC, alone)
    assert load_spec(alone).source.revision is None
    assert grade_record(_partial_spec_record(), spec=alone).spec_source == str(alone)
    revision = load_spec(SPEC).source.revision  # the spec's .plan.json next to it
    assert revision is not None
    assert grade_record(_partial_spec_record(), spec=SPEC).spec_source == f"{SPEC} + revision {revision.path}"
