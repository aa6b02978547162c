"""ADAPT-1 (experiment/grading/decision.py, docs/contract-rules.md): warmup adaptation owes manifests once the arms
trained, each manifest is an object with a count and its batch ids, and arms of one pair that consumed different
batches never report strong confidence. Each case's expected finding is read from the rule's text."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from experiment.grading import decision

WARMUP = {"experiment_features": {"warmup_adaptation": True}}
MISSING = "warmup_adaptation is true and the arms trained, but RESULT has no adaptation_manifests"


def _missing(status, events=None, spec=WARMUP, **result):
    ctx = SimpleNamespace(result={"status": status, **result}, spec=spec, events=events)
    return [issue.message for issue in decision.ADAPT_1_missing(ctx)]


def _gate(gate="arm_training", status="passed", event="gate"):
    return {"event": event, "gate": gate, "status": status}


def test_a_succeeded_run_with_warmup_adaptation_owes_its_manifests():
    assert _missing("succeeded") == [MISSING]
    assert _missing("succeeded", adaptation_manifests=[]) == []
    assert _missing("succeeded", spec={}) == []
    assert _missing("succeeded", spec={"experiment_features": {"warmup_adaptation": 1}}) == []  # true, not 1


@pytest.mark.parametrize("status", ["running", "failed", "unknown"])
def test_an_unfinished_run_owes_manifests_only_once_its_arm_training_gate_passed(status):
    assert _missing(status) == []
    assert _missing(status, events=[]) == []
    assert _missing(status, events=[_gate()]) == [MISSING]


@pytest.mark.parametrize("event", [
    _gate(status="failed"), _gate(status="skipped"),  # statuses sorting before and after passed
    _gate(gate="activation_gate"), _gate(gate="evaluation"),  # gates sorting before and after arm_training
    _gate(event="evaluation_progress"), _gate(event="training_step"),  # kinds sorting before and after gate
])
def test_no_other_event_says_the_arms_trained(event):
    assert _missing("failed", events=[event]) == []


def test_each_manifest_is_an_object():
    ctx = SimpleNamespace(result={"adaptation_manifests": [1, {"arm": "a", "warmup_batches": 2,
                                                               "adaptation_batch_ids": ["b1", "b2"]}]})
    assert [issue.message for issue in decision.ADAPT_1_shape(ctx)] == ["adaptation_manifests[0] is not an object"]


@pytest.mark.parametrize("confidence,verdict,flagged", [
    ("strong", "supported", True), (None, "supported", True), (None, "refuted", True),
    ("weak", "supported", False), (None, "inconclusive", False), (None, None, False),
])
def test_a_pair_on_different_batches_never_reports_strong_confidence(confidence, verdict, flagged):
    manifests = [{"pair": 0, "arm": "a", "adaptation_batch_ids": ["b1"]}, {"pair": 0, "arm": "b", "adaptation_batch_ids": ["b2"]}]
    ctx = SimpleNamespace(result={"adaptation_manifests": manifests, "confidence": confidence, "verdict": verdict})
    assert [issue.message for issue in decision.ADAPT_1_pairs(ctx)] == (
        [f"pair 0: arms a, b consumed different batches but confidence is {confidence!r}, not weak"] if flagged else [])
