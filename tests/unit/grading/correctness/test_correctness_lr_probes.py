"""The grader's correctness rules (experiment/grading/correctness.py, docs/contract-rules.md CORR-*):
a good best-LR record graded green, then one detail changed; the expected status is the contract's."""

from __future__ import annotations

import pytest

from experiment.grading import grade_record as grade_against
from suite import TRIMUON_SPEC


def grade_record(result):
    """Against the TriMuon spec with its revision's pins as if the spec carried them itself (pins that
    only a revision supplies grade correctness unverified: CORR-6, tested in test_grading_rules)."""
    from experiment.contract.spec import load_spec

    spec = load_spec(TRIMUON_SPEC).to_dict()
    return grade_against(result, spec=spec)


def _probes(result):
    return result["correctness_preflight"]["paths"][0]["lr_scaling"]


def _corr5_issues(result):
    graded = grade_record(result).categories["correctness"]
    return graded.status, [issue.message for issue in graded.issues if issue.rule == "CORR-5"]


@pytest.mark.parametrize("drop", [0, -1], ids=["lowest rate missing", "highest rate missing"])
def test_lr_probes_that_miss_a_planned_rate_leave_correctness_unverified(graded_record, drop):
    result, _ = graded_record("best_lr")
    assert grade_record(result).categories["correctness"].status == "verified"
    probes = sorted(_probes(result), key=lambda probe: probe["learning_rate"])
    assert len(probes) >= 3  # the spec plans at least three rates
    del probes[drop]
    result["correctness_preflight"]["paths"][0]["lr_scaling"] = probes
    status, messages = _corr5_issues(result)
    assert status == "unverified"
    assert any("do not cover the planned rates" in message for message in messages)


def test_lr_probes_in_another_order_cover_the_planned_rates(graded_record):
    result, _ = graded_record("best_lr")
    result["correctness_preflight"]["paths"][0]["lr_scaling"] = list(reversed(_probes(result)))
    assert _corr5_issues(result) == ("verified", [])
