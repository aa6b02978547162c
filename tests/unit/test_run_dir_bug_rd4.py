"""A malformed record the run-dir layer accepts (found by helper rd4 while testing experiment/grading/run_dir.py
lines 1396-1762; not fixed here: the lead decides).

GA-2 (docs/contract-rules.md, `generation_audit.shape`): generation_audit is {version: 1, ...}. A JSON `true` is
not the number 1 (issue 28: a JSON boolean is not a number, tests/unit/test_mut_grading_bool_is_no_number.py), but
`record.get("version") != 1` is False for True (Python's True == 1), so `"version": true` passes as version 1. The
same `!= 1` comparison is used for the decision, evaluation and initialization_provenance versions of run_dir.py
and in experiment/grading/general.py and restoration.py."""

from __future__ import annotations

import pytest

from experiment.grading.run_dir import _RunFiles, _Validator


@pytest.mark.xfail(strict=True, reason="run_dir.py:1518 compares version != 1, and True == 1 in Python")
def test_a_generation_audit_whose_version_is_true_is_a_shape_problem(tmp_path):
    record = {"version": True, "stage": "before_training"}
    files = _RunFiles(run_dir=tmp_path, result={"generation_audit": record}, events=[], bad_event_lines=[],
                      manifest={"files": []}, plan={}, spec={}, setup_problems=[])
    validator = _Validator(files)
    validator.check_generation_audit()
    assert [problem.check for problem in validator.report.problems][:1] == ["generation_audit.shape"]
    assert validator.report.problems[0].message == "generation_audit must be an object with version 1"
