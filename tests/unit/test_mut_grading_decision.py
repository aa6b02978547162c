"""The grader's decision rules (experiment/grading/decision.py, docs/contract-rules.md DEC-8, DEC-9):
a good record graded green, then one recorded value changed; the expected status is the contract's."""

from __future__ import annotations

import pytest

from experiment.grading import grade_record


def _decision_issues(result, rule):
    graded = grade_record(result).categories["decision"]
    return graded.status, [issue.message for issue in graded.issues if issue.rule == rule]


@pytest.mark.parametrize("key", ["lower", "upper"])
def test_a_recorded_interval_bound_that_does_not_recompute_is_invalid(graded_record, key):
    """paired_hoeffding records an interval: its bounds are recomputed too, not only the effect."""
    result, _ = graded_record("paired")
    assert grade_record(result).categories["decision"].status == "verified"
    criterion = result["decision"]["criteria"][0]
    criterion[key] = criterion[key] + 0.125
    status, messages = _decision_issues(result, "DEC-8")
    assert status == "invalid"
    assert any(f"recorded {key} " in message for message in messages)


def test_best_lr_with_confidence_strong_is_invalid(graded_record):
    """best_lr_threshold has one seed and point estimates: no interval can make it strong."""
    result, _ = graded_record("best_lr")
    assert grade_record(result).categories["decision"].status == "verified"
    result["confidence"] = "strong"
    status, messages = _decision_issues(result, "DEC-9")
    assert status == "invalid"
    assert messages == ["confidence strong without an interval (one seed, point estimates)"]
