"""The grader on a service-measured optimizer path (experiment/grading/correctness.py): a baseline
check whose two sides are the same code grades unverified (CORR-3), never passes as a parity, and the
a-priori bound is recomputed from the retained read-back input (CORR-4), never taken from the record."""

from __future__ import annotations

import io

import numpy as np

from experiment.contract.result_models import evidence_file
from experiment.grading import grade_record
from experiment.grading import correctness as grading_correctness
from experiment.stats.update_tolerance import input_tolerances


def _correctness(result):
    graded = grade_record(result).categories["correctness"]
    return graded.status, graded.issues


def _path(result):
    return result["correctness_preflight"]["paths"][0]


def _issues(result) -> set[tuple[str, str]]:
    return {(issue.rule, issue.message) for issue in _correctness(result)[1]}


def _added(result, before: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """The correctness issues a change adds to the untouched record's (whose revision pins already grade
    unverified, CORR-6; a changed error also differs from the retained probe record, CORR-11)."""
    return _issues(result) - before


def test_bitwise_identical_baseline_updates_are_no_parity(graded_record):
    result, _ = graded_record("best_lr")
    before = _issues(result)
    assert not any(rule == "CORR-3" for rule, _ in before)
    key = next(k for k in _path(result)["errors"] if k.startswith("baseline_update"))
    _path(result)["errors"][key].update(max_abs_error=0.0, relative_l2_error=0.0, cosine_similarity=1.0)
    assert _correctness(result)[0] == "unverified"
    assert any(rule == "CORR-3" and "bitwise-identical" in message for rule, message in _added(result, before))


def test_a_reference_check_at_zero_error_is_not_taken_for_same_code(graded_record):
    result, _ = graded_record("best_lr")
    before = _issues(result)
    key = next(k for k in _path(result)["errors"] if k.startswith("reference_update"))
    _path(result)["errors"][key].update(max_abs_error=0.0, relative_l2_error=0.0, cosine_similarity=1.0)
    assert not any(rule == "CORR-3" for rule, _ in _added(result, before))


def test_a_loss_or_gradient_check_at_zero_error_is_not_taken_for_same_code(graded_record):
    """GS1's loss and gradient checks match exactly (two independent advantage estimators give the same
    inputs to the same service computation): the GS1 wiring rehearsal once graded them CORR-3 "same code"."""
    result, _ = graded_record("best_lr")
    before = _issues(result)
    for key in ("baseline_loss", "reference_gradient"):
        _path(result)["errors"][key] = {"max_abs_error": 0.0, "relative_l2_error": 0.0, "reference_max_abs": 1.0}
    assert not any(rule == "CORR-3" for rule, _ in _added(result, before))


def test_a_reported_same_code_check_is_unverified_and_its_honest_baseline_is_not_a_pin_mismatch(graded_record):
    result, _ = graded_record("best_lr")
    before = _issues(result)
    path = _path(result)
    key = next(k for k in path["errors"] if k.startswith("baseline_update"))
    path["parity_sides"] = {key: {"same_code": True, "reason": "one file on both sides"}}
    path["baseline_revision"] = "not the planned baseline revision: dimuon on the same service"
    added = _added(result, before)
    assert _correctness(result)[0] == "unverified"
    assert any(rule == "CORR-3" for rule, _ in added)
    # not CORR-6: the record names what ran, and says why
    assert not any(rule == "CORR-6" and "baseline_revision" in message for rule, message in added)
    # weakened: without the same-code rule the honest record would read as a plain pin mismatch only
    path["parity_sides"][key]["same_code"] = False
    added = _added(result, before)
    assert any(rule == "CORR-6" and "baseline_revision" in message for rule, message in added)
    assert not any(rule == "CORR-3" for rule, _ in added)


def _measured_through_service(result, scale_error: float):
    """Attach a read-back input (a small synthetic start state and gradient) and errors sized against its
    recomputed bound: `scale_error` times the recomputed atol."""
    rng = np.random.default_rng(3)
    rank = 4
    start = [(rng.standard_normal((rank, 16)) / 4).astype(np.float32), (rng.standard_normal((24, rank)) / 50).astype(np.float32)]
    grads = [rng.standard_normal((rank, 16)) * 1e-2, rng.standard_normal((24, rank)) * 1e-2]
    bounds = np.array([1e-9, 1e-9])
    buffer = io.BytesIO()
    np.savez(buffer, gradient_error_bounds=bounds, start_0=start[0], start_1=start[1], gradient_0=grads[0],
             gradient_1=grads[1])
    result["evidence"]["files"].append(evidence_file(grading_correctness.START_STATE_EVIDENCE, "metrics", buffer.getvalue()))
    pairs = [{"A": start[0], "B": start[1], "momentum_A": np.zeros((rank, 16)), "momentum_B": np.zeros((24, rank)),
              "grad_A": grads[0], "grad_B": grads[1]}]
    path = _path(result)
    lrs = sorted({float(k.rsplit("@lr=", 1)[1]) for k in path["errors"]})
    recomputed = input_tolerances(pairs, lrs, 0.9, [(1e-9, 1e-9)])
    assert all(entry["atol"] < 1.0 for entry in recomputed.values())  # so the record's loosened 1.0 below is looser
    for key, entry in path["errors"].items():
        entry.update(max_abs_error=scale_error * recomputed[key]["atol"], reference_max_abs=1.0)
    path["measured_through"] = {"service": {"kind": "remote"}}
    path["input_tolerances"] = {key: {"atol": 1.0, "rtol": 0.0} for key in path["errors"]}  # what a tamperer writes
    return recomputed


def test_the_bound_on_the_read_back_input_is_recomputed_not_read_from_the_record(graded_record, monkeypatch):
    result, _ = graded_record("best_lr")
    _measured_through_service(result, scale_error=0.5)
    within = [i for i in _correctness(result)[1] if "read-back input" in i.message]
    assert within == []
    result, _ = graded_record("best_lr")
    _measured_through_service(result, scale_error=2.0)
    issues = [i for i in _correctness(result)[1] if i.rule == "CORR-4" and "read-back input" in i.message]
    assert issues and all(i.status == "invalid" for i in issues)
    # weakened: trusting the record's own (loosened) input_tolerances lets the same errors through
    monkeypatch.setattr(grading_correctness, "input_tolerances",
                        lambda *args, **kwargs: _path(result)["input_tolerances"])
    assert not [i for i in _correctness(result)[1] if "read-back input" in i.message]


def test_a_service_measured_path_without_its_input_is_unverified(graded_record):
    result, _ = graded_record("best_lr")
    _path(result)["measured_through"] = {"service": {"kind": "remote"}}
    status, issues = _correctness(result)
    assert status == "unverified" and any("not retained inline" in i.message for i in issues)


def test_a_pickled_input_is_refused_not_loaded(graded_record):
    result, _ = graded_record("best_lr")
    buffer = io.BytesIO()
    np.savez(buffer, gradient_error_bounds=np.array([1e-9, 1e-9]), start_0=np.array([object()], dtype=object),
             start_1=np.zeros((2, 2)), gradient_0=np.zeros((2, 2)), gradient_1=np.zeros((2, 2)))
    result["evidence"]["files"].append(evidence_file(grading_correctness.START_STATE_EVIDENCE, "metrics", buffer.getvalue()))
    _path(result)["measured_through"] = {"service": {"kind": "remote"}}
    status, issues = _correctness(result)
    assert status == "unverified" and any("unusable" in i.message for i in issues)
