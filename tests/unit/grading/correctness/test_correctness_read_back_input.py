"""CORR-4 on the read-back input (experiment/grading/correctness.py, CORR_4_on_input; docs/contract-rules.md
CORR-4): a path measured through the service (`measured_through`, or carrying `input_tolerances`) is held to the
a-priori analysis evaluated on its read-back input, the evidence file `correctness-start-state.npz`, recomputed by
the grader; that input missing (or not usable inline) is unverified, an input that cannot be read is unverified,
an update error over the recomputed bound is invalid.

Each test builds only that evidence: a small npz written here with numpy. Most tests stand a recording analysis in
for experiment.stats.update_tolerance.input_tolerances (tested on its own in test_update_tolerance_formulas*), with
tolerances fixed here, so every expected finding is worked out from CORR-4's acceptance rule
(`max_abs_error <= atol + rtol * reference_max_abs` and `cosine_similarity >= min_cosine`); one test runs the
real analysis on errors far inside and far outside any bound an update of that size can have."""

from __future__ import annotations

import io
from types import SimpleNamespace

import numpy as np
import pytest

from experiment.contract.result_models import evidence_file
from experiment.grading import correctness as rules
from experiment.grading.evidence import EvidenceAccess
from experiment.stats.update_tolerance import check_key

LR = 0.01
KEY = check_key("reference_update", LR)  # "reference_update@lr=0.01", as the probe writes it
BOUND = {"atol": 1e-3, "rtol": 0.0, "min_cosine": 0.99}  # what the stand-in analysis gives for every check
WITHIN = {"max_abs_error": 5e-4, "reference_max_abs": 1.0, "relative_l2_error": 1e-4, "cosine_similarity": 0.999}
MEASURED = {"service": {"kind": "remote"}}


def _start_state(bounds=(1e-9, 1e-9), rank=2, start_dtype=np.float32) -> bytes:
    """One (A, B) factor pair, its recovered gradients and their error bounds, as the probe retains them."""
    rng = np.random.default_rng(7)
    buffer = io.BytesIO()
    np.savez(buffer, gradient_error_bounds=np.asarray(bounds, dtype=np.float64),
             start_0=(rng.standard_normal((rank, 8)) / 4).astype(start_dtype),
             start_1=(rng.standard_normal((6, rank)) / 4).astype(start_dtype),
             gradient_0=rng.standard_normal((rank, 8)) * 1e-2, gradient_1=rng.standard_normal((6, rank)) * 1e-2)
    return buffer.getvalue()


def _path(path_id="p1", errors=None, **fields):
    return {"id": path_id, "errors": {KEY: WITHIN} if errors is None else errors, **fields}


def _ctx(*paths, npz=None, evidence=None, beta1=0.9):
    files = list(evidence or [])
    if npz is not None:
        files.append(evidence_file(rules.START_STATE_EVIDENCE, "metrics", npz))
    result = {"correctness_preflight": {"required": True, "paths": list(paths)}, "evidence": {"files": files}}
    spec = {"arms": [{"role": "treatment", "optimizer": {"config": {"beta1": beta1}}}]}
    return SimpleNamespace(result=result, spec=spec, evidence=EvidenceAccess(result))


def _messages(issues):
    return [(issue.rule, issue.status, issue.message) for issue in issues]


@pytest.fixture
def analysis(monkeypatch):
    """A recording stand-in for the a-priori analysis: BOUND for both update checks at every rate it is asked
    for. A new function per test, so the grader's per-process cache (keyed by the analysis) never answers
    for it."""
    calls = []

    def stand_in(pairs, learning_rates, beta1, gradient_errors):
        calls.append({"learning_rates": list(learning_rates), "beta1": beta1, "gradient_errors": gradient_errors,
                      "shapes": [(pair["A"].shape, pair["B"].shape) for pair in pairs]})
        return {check_key(check, lr): dict(BOUND) for lr in learning_rates
                for check in ("reference_update", "baseline_update")}

    monkeypatch.setattr(rules, "input_tolerances", stand_in)
    return calls


def _over(key=KEY, why="max_abs_error 2.000e-03 exceeds atol + rtol * reference_max_abs = 1.000e-03", path_id="p1"):
    return ("CORR-4", "invalid", f"path {path_id}, check {key}, on the read-back input: {why}")


def _not_retained(path_id="p1"):
    return ("CORR-4", "unverified", f"path {path_id}: the read-back input (correctness-start-state.npz) is not "
                                    "retained inline: its tolerances cannot be recomputed")


# ---------------------------------------------------------------- within and over the recomputed bound


def test_errors_within_the_bound_recomputed_on_the_read_back_input_pass(analysis):
    assert rules.CORR_4_on_input(_ctx(_path(measured_through=MEASURED), npz=_start_state(), beta1=0.95)) == []
    # the analysis ran on the retained input: its one factor pair, its gradient bounds, the rates of the
    # record's checks and the treatment's beta1
    assert analysis == [{"learning_rates": [LR], "beta1": 0.95, "gradient_errors": [(1e-9, 1e-9)],
                         "shapes": [((2, 8), (6, 2))]}]


@pytest.mark.parametrize("entry, why", [
    ({**WITHIN, "max_abs_error": 2e-3}, "max_abs_error 2.000e-03 exceeds atol + rtol * reference_max_abs = 1.000e-03"),
    ({**WITHIN, "cosine_similarity": 0.98}, "cosine_similarity 0.980000000 is below min_cosine 0.99"),
], ids=["max_abs over atol", "cosine under min_cosine"])
def test_an_error_over_the_recomputed_bound_is_invalid(analysis, entry, why):
    ctx = _ctx(_path(errors={KEY: entry}, measured_through=MEASURED), npz=_start_state())
    assert _messages(rules.CORR_4_on_input(ctx)) == [_over(why=why)]


def test_every_check_of_every_rate_is_held_to_its_bound(analysis):
    """Two rates, two checks: each entry over its bound is found, the one within it is not."""
    key_2 = check_key("baseline_update", 0.02)
    errors = {KEY: WITHIN, check_key("baseline_update", LR): {**WITHIN, "max_abs_error": 3e-3},
              key_2: {**WITHIN, "max_abs_error": 2e-3}}
    ctx = _ctx(_path(errors=errors, measured_through=MEASURED), npz=_start_state())
    assert _messages(rules.CORR_4_on_input(ctx)) == [
        _over(check_key("baseline_update", LR), "max_abs_error 3.000e-03 exceeds atol + rtol * reference_max_abs = "
                                               "1.000e-03"),
        _over(key_2)]
    assert analysis[0]["learning_rates"] == [0.01, 0.02]


def test_the_real_analysis_accepts_an_exact_update_and_refuses_one_off_by_far_more_than_its_size():
    """On the real analysis: a zero error with cosine 1 is inside any bound (atol >= 0, min_cosine <= 1); an
    error of 10 on factors the update moves by lr * sqrt(rank) = 0.014 each is about 700 times the update."""
    exact = {"max_abs_error": 0.0, "reference_max_abs": 1.0, "relative_l2_error": 0.0, "cosine_similarity": 1.0}
    npz = _start_state()
    assert rules.CORR_4_on_input(_ctx(_path(errors={KEY: exact}, measured_through=MEASURED), npz=npz)) == []
    far = {**exact, "max_abs_error": 10.0, "relative_l2_error": 10.0}
    issues = rules.CORR_4_on_input(_ctx(_path(errors={KEY: far}, measured_through=MEASURED), npz=npz))
    assert [(i.rule, i.status) for i in issues] == [("CORR-4", "invalid")]
    assert issues[0].message.startswith(f"path p1, check {KEY}, on the read-back input: max_abs_error 1.000e+01 exceeds")


# ---------------------------------------------------------------- which paths are held to it


@pytest.mark.parametrize("fields, held", [
    ({"measured_through": MEASURED}, True),
    ({"input_tolerances": {KEY: BOUND}}, True),  # either mark alone: the path was measured through the service
    ({"measured_through": MEASURED, "input_tolerances": {KEY: BOUND}}, True),
    ({}, False),
    ({"measured_through": None, "input_tolerances": {}}, False),
], ids=["measured_through", "input_tolerances", "both", "neither", "both empty"])
def test_a_path_measured_through_the_service_needs_its_read_back_input(fields, held):
    assert _messages(rules.CORR_4_on_input(_ctx(_path(**fields)))) == ([_not_retained()] if held else [])


def test_a_path_not_measured_through_the_service_does_not_stop_the_next_paths_check():
    ctx = _ctx(_path("p0"), _path("p1", measured_through=MEASURED))
    assert _messages(rules.CORR_4_on_input(ctx)) == [_not_retained("p1")]


def test_every_measured_path_without_its_input_is_unverified():
    ctx = _ctx(_path("p0", measured_through=MEASURED), _path("p1", measured_through=MEASURED))
    assert _messages(rules.CORR_4_on_input(ctx)) == [_not_retained("p0"), _not_retained("p1")]


def test_a_read_back_input_retained_by_hash_only_or_corrupt_is_not_retained_inline(analysis):
    npz = _start_state()
    hash_only = {k: v for k, v in evidence_file(rules.START_STATE_EVIDENCE, "metrics", npz).items()
                 if k not in ("content", "encoding")}
    corrupt = {**evidence_file(rules.START_STATE_EVIDENCE, "metrics", npz), "sha256": "0" * 64}
    for entry in (hash_only, corrupt):
        ctx = _ctx(_path(measured_through=MEASURED), evidence=[entry])
        assert _messages(rules.CORR_4_on_input(ctx)) == [_not_retained()]
    assert analysis == []  # never analysed


# ---------------------------------------------------------------- an input that cannot be read


def _unusable(ctx):
    return [(i.rule, i.status, i.message.split(" (", 1)[0]) for i in rules.CORR_4_on_input(ctx)]


UNUSABLE = ("CORR-4", "unverified", "path p1: the read-back input is unusable")


def test_a_start_state_whose_factors_do_not_pair_up_is_unusable(analysis):
    ctx = _ctx(_path(measured_through=MEASURED), npz=_start_state(bounds=(1e-9,)))
    assert _unusable(ctx) == [UNUSABLE]


def test_a_pickled_start_state_is_refused_even_when_its_objects_are_numbers(analysis):
    """An object array of plain floats would convert to float32 once unpickled; the grader never unpickles
    evidence (numpy's allow_pickle=False), so the input is unusable, and the analysis never runs."""
    ctx = _ctx(_path(measured_through=MEASURED), npz=_start_state(start_dtype=object))
    assert _unusable(ctx) == [UNUSABLE]
    assert analysis == []


def test_a_check_key_whose_rate_is_no_number_makes_the_input_unusable_for_that_path_only(analysis):
    unreadable = _path("p0", errors={"reference_update@lr=fast": WITHIN}, measured_through=MEASURED)
    over = _path("p1", errors={KEY: {**WITHIN, "max_abs_error": 2e-3}}, measured_through=MEASURED)
    issues = rules.CORR_4_on_input(_ctx(unreadable, over, npz=_start_state()))
    assert [(i.rule, i.status, i.message.split(" (", 1)[0]) for i in issues[:1]] == [
        ("CORR-4", "unverified", "path p0: the read-back input is unusable")]
    assert _messages(issues[1:]) == [_over()]


def test_the_rate_of_a_check_is_what_follows_its_last_rate_marker(analysis):
    """check_key writes `<check>@lr=<rate>`: a check whose own name holds the marker is still at the rate after
    the last one."""
    odd = check_key("reference_update@lr=0.5", LR)  # "reference_update@lr=0.5@lr=0.01"
    ctx = _ctx(_path(errors={KEY: WITHIN, odd: WITHIN}, measured_through=MEASURED), npz=_start_state())
    assert rules.CORR_4_on_input(ctx) == []
    assert analysis[0]["learning_rates"] == [LR]


# ---------------------------------------------------------------- entries the bound does not apply to


def test_an_entry_the_analysis_has_no_bound_for_is_skipped_and_the_next_is_checked(analysis):
    """A loss check is not an update: the analysis bounds only update checks, so its entry is not compared, and
    the update check after it still is."""
    errors = {"baseline_loss": {**WITHIN, "max_abs_error": 1.0}, KEY: {**WITHIN, "max_abs_error": 2e-3}}
    ctx = _ctx(_path(errors=errors, measured_through=MEASURED), npz=_start_state())
    assert _messages(rules.CORR_4_on_input(ctx)) == [_over()]


@pytest.mark.parametrize("missing", ["max_abs_error", "reference_max_abs", "relative_l2_error", "cosine_similarity"])
def test_an_entry_missing_a_measured_error_is_left_to_corr3(analysis, missing):
    """An entry over the bound but without all four measured errors is CORR-3's (no measured errors), not
    compared here."""
    entry = {k: v for k, v in {**WITHIN, "max_abs_error": 2e-3, "cosine_similarity": 0.5}.items() if k != missing}
    ctx = _ctx(_path(errors={KEY: entry}, measured_through=MEASURED), npz=_start_state())
    assert rules.CORR_4_on_input(ctx) == []
