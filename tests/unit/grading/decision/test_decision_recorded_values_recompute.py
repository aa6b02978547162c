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
    """best_lr_threshold has one seed and point estimates: no interval, and no second seed, can make it strong."""
    result, _ = graded_record("best_lr")
    assert grade_record(result).categories["decision"].status == "not_applicable"  # as the exchange grades it
    result["confidence"] = "strong"
    status, messages = _decision_issues(result, "DEC-9")
    assert status == "invalid"
    assert messages == ["confidence strong without an interval, and no two seeds settle every margin (point "
                        "estimates)"]



@pytest.mark.parametrize("verdict, expected_issues", [("inconclusive", 0), ("refuted", 1)])
def test_three_way_inconclusive_is_not_held_against_a_decided_recomputation(monkeypatch, verdict, expected_issues):
    """Three-way vocabulary: a blocking limit may make any decided comparison inconclusive, so DEC-9
    does not hold `inconclusive` against a recomputed `supported`; any other wrong verdict it does.
    The verdict is read from JSON text, as the grader receives it (not the module's own literal)."""
    import json
    from types import SimpleNamespace

    from experiment.grading import decision as rules

    monkeypatch.setattr(rules, "read_observations", lambda ctx: [])
    monkeypatch.setattr(rules, "_recompute", lambda ctx: (
        {"method": "paired_hoeffding", "verdict": "supported", "criteria": []}, ""))
    ctx = SimpleNamespace(result=json.loads(json.dumps({"verdict": verdict})),
                          plan=SimpleNamespace(vocabulary="three_way"))
    issues = rules.DEC_9(ctx)
    assert [issue.rule for issue in issues] == ["DEC-9"] * expected_issues


@pytest.mark.parametrize("key,value", [("alpha", 0.1), ("role_to_arm", {"treatment": "rl_gsm8k"}), ("seeds", [0, 1])])
def test_a_paired_decision_objects_other_fields_are_the_recomputed_record(graded_record, key, value):
    """Beyond each criterion's effect and bounds, every field of a paired_hoeffding decision object (alpha, the role
    mapping, the seeds, ...) is the record the recomputation gives."""
    result, _ = graded_record("paired")
    result["decision"][key] = value
    status, messages = _decision_issues(result, "DEC-8")
    assert status == "invalid"
    assert any(message.startswith(f"decision.{key}") and message.endswith("is not what the recomputation gives")
               for message in messages), messages
