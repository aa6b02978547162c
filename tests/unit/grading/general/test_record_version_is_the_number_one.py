"""A record's `version` must be the number 1, never the JSON `true` (issue 28: a JSON boolean is not a number).

Found by helper rd4: `record.get("version") != 1` is False for True (Python's True == 1), so `"version": true`
passed GA-2's version-1 check in the run-dir layer, and the same comparison held the initialization_provenance,
evaluation and decision records there, EVID-1's evidence block (general.py) and REST-1's initialization_provenance
(restoration.py). Each test failed on that code for `true` (its strict xfail showed it for GA-2) and holds the
fix (experiment.grading.common.equal_json); the number 1 (and 1.0, the same JSON number) still passes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from grading_contexts.general import context as _general_ctx
from grading_contexts.restoration import context as _restoration_ctx

from experiment.grading import general, restoration
from experiment.grading.run_dir import RunFiles, Validator

# each run-dir record, the check that reads it and the shape problem the contract's rule table names for it
RUN_DIR_RECORDS = [
    ("initialization_provenance", "check_initialization_provenance", "provenance.shape", {"arms": {}}),
    ("evaluation", "check_evaluation", "evaluation.shape", {"evaluators": {}}),
    ("decision", "check_decision", "decision.shape", {}),
    ("generation_audit", "check_generation_audit", "generation_audit.shape", {"stage": "before_training"}),
]


def _shape_problems(tmp_path: Path, key: str, check: str, record: dict) -> list[str]:
    files = RunFiles(run_dir=tmp_path, result={key: record}, events=[], bad_event_lines=[],
                      manifest={"files": []}, plan={}, spec={}, setup_problems=[])
    validator = Validator(files)
    getattr(validator, check)()
    # the shape problem of the record as a whole (its version), not one of a field the bare record leaves out
    return [problem.check for problem in validator.report.problems
            if problem.check.endswith(".shape") and (f"{key} must be" in problem.message and "version: 1" in
                                                     problem.message.replace("version 1", "version: 1")
                                                     or problem.message.startswith(f"{key}.version:")
                                                     or problem.message == f"{key} is missing or not version 1")]


@pytest.mark.parametrize("key,check,shape,rest", RUN_DIR_RECORDS)
@pytest.mark.parametrize("version,is_shape_problem", [(True, True), (False, True), ("1", True), (2, True),
                                                      (1, False), (1.0, False)])
def test_a_run_dir_record_is_version_1_only_as_the_number(tmp_path, key, check, shape, rest, version,
                                                          is_shape_problem):
    found = _shape_problems(tmp_path, key, check, {"version": version, **rest})
    assert (shape in found) is is_shape_problem


@pytest.mark.parametrize("version,is_problem", [(True, True), (2, True), (1, False)])
def test_evid_1_takes_the_evidence_block_as_version_1_only_as_the_number(version, is_problem):
    issues = general.EVID_1(_general_ctx({"evidence": {"version": version, "files": []}}))
    assert any(issue.message == "evidence must be an object with version 1" for issue in issues) is is_problem


@pytest.mark.parametrize("version,is_problem", [(True, True), (2, True), (1, False)])
def test_rest_1_takes_the_provenance_as_version_1_only_as_the_number(version, is_problem):
    ctx = _restoration_ctx({})
    ctx.result["initialization_provenance"]["version"] = version
    issues = restoration.REST_1(ctx)
    assert any(issue.message == "initialization_provenance is missing or not version 1" for issue in issues) is is_problem
