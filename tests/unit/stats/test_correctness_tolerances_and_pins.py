"""Correctness tolerances (CORR-3..CORR-5): expected values are literals or computed here
independently with the formulas of the contract, never taken from experiment.stats.correctness."""

from __future__ import annotations

import hashlib
import math

import pytest

from experiment.stats.correctness import (
    accepts,
    check_tolerances,
    file_sha256,
    importance_sampling_loss_and_grad,
    lr_scaling_errors,
    parity_errors,
    pinned_revisions,
    revision_pins,
    revision_status,
    unresolved_revisions,
)


def _errors(max_abs, reference_max_abs=1.0, cosine=1.0):
    return {"max_abs_error": max_abs, "reference_max_abs": reference_max_abs,
            "relative_l2_error": 0.0, "cosine_similarity": cosine}


# ---- check_tolerances: a tolerance with no measurement blocks

def test_a_tolerance_without_a_measurement_blocks():
    passed, reasons = check_tolerances({}, {"reference_loss": {"atol": 1.0}})
    assert passed is False
    assert len(reasons) == 1 and reasons[0].startswith("reference_loss:") and "no measurement" in reasons[0]


def test_a_missing_measurement_blocks_even_when_the_others_pass():
    errors = {"baseline_loss": _errors(0.0)}
    passed, reasons = check_tolerances(errors, {"baseline_loss": {"atol": 1e-6},
                                                "baseline_gradient": {"atol": 1e-6}})
    assert passed is False
    assert [r.split(":")[0] for r in reasons] == ["baseline_loss", "baseline_gradient"]


def test_every_measured_tolerance_within_bounds_passes():
    errors = {"a": _errors(0.5), "b": _errors(0.0)}
    passed, reasons = check_tolerances(errors, {"a": {"atol": 0.5}, "b": {"atol": 0.0}})
    assert passed is True and len(reasons) == 2


def test_one_failed_check_fails_the_whole_path_whatever_its_position():
    for order in (("bad", "good"), ("good", "bad")):
        errors = {"good": _errors(0.0), "bad": _errors(2.0)}
        passed, _ = check_tolerances(errors, {name: {"atol": 1.0} for name in order})
        assert passed is False


# ---- accepts: max_abs_error <= atol + rtol * reference_max_abs, cosine >= min_cosine

def test_max_abs_error_equal_to_the_allowance_is_accepted():
    ok, _ = accepts(_errors(0.75, reference_max_abs=2.0), {"atol": 0.25, "rtol": 0.25})  # 0.25 + 0.25*2
    assert ok is True


def test_max_abs_error_just_above_the_allowance_is_rejected():
    ok, why = accepts(_errors(math.nextafter(0.75, 1.0), reference_max_abs=2.0), {"atol": 0.25, "rtol": 0.25})
    assert ok is False and "exceeds" in why


def test_rtol_scales_with_the_reference_max_abs():
    # atol 0: allowed = 0.1 * 10 = 1.0
    assert accepts(_errors(1.0, reference_max_abs=10.0), {"rtol": 0.1})[0] is True
    assert accepts(_errors(1.0, reference_max_abs=5.0), {"rtol": 0.1})[0] is False
    # missing atol and rtol default to 0: only an exact match passes
    assert accepts(_errors(0.0), {})[0] is True
    assert accepts(_errors(1e-300), {})[0] is False


def test_anti_parallel_gradients_fail_min_cosine():
    errors = parity_errors([-1.0, -2.0, -3.0], [1.0, 2.0, 3.0])
    assert errors["cosine_similarity"] == -1.0
    ok, why = accepts(errors, {"atol": 100.0, "min_cosine": 0.99})
    assert ok is False and "below min_cosine" in why


def test_min_cosine_boundary_and_absence():
    assert accepts(_errors(0.0, cosine=0.99), {"atol": 1.0, "min_cosine": 0.99})[0] is True
    assert accepts(_errors(0.0, cosine=0.98), {"atol": 1.0, "min_cosine": 0.99})[0] is False
    assert accepts(_errors(0.0, cosine=-1.0), {"atol": 1.0})[0] is True  # no min_cosine: not checked
    assert accepts(_errors(0.0, cosine=-1.0), {"atol": 1.0, "min_cosine": None})[0] is True
    # min_cosine 0 is a real bound (not "absent")
    assert accepts(_errors(0.0, cosine=-0.5), {"atol": 1.0, "min_cosine": 0.0})[0] is False


# ---- parity_errors, computed by hand

def test_parity_errors_literals():
    errors = parity_errors([1.0, 3.0], [1.0, 1.0])
    assert errors["max_abs_error"] == 2.0
    assert errors["reference_max_abs"] == 1.0
    assert errors["relative_l2_error"] == pytest.approx(2.0 / math.sqrt(2.0), rel=1e-15)
    assert errors["cosine_similarity"] == pytest.approx(4.0 / (math.sqrt(10.0) * math.sqrt(2.0)), rel=1e-15)


def test_parity_errors_reference_max_abs_is_an_absolute_value():
    errors = parity_errors([0.0, 0.0], [-4.0, 1.0])
    assert errors["reference_max_abs"] == 4.0
    assert errors["max_abs_error"] == 4.0
    assert errors["relative_l2_error"] == pytest.approx(1.0, rel=1e-15)
    assert errors["cosine_similarity"] == 0.0  # actual all zero, reference not


def test_parity_errors_zero_norm_cases():
    both_zero = parity_errors([0.0, 0.0], [0.0, 0.0])
    assert both_zero["relative_l2_error"] == 0.0 and both_zero["cosine_similarity"] == 1.0
    reference_zero = parity_errors([0.0, 1e-9], [0.0, 0.0])
    assert reference_zero["relative_l2_error"] == math.inf and reference_zero["cosine_similarity"] == 0.0


def test_parity_errors_identical_vectors_have_cosine_exactly_one():
    values = [0.1, 0.7, -0.3, 1e-8]
    errors = parity_errors(values, values)
    assert errors["cosine_similarity"] == 1.0
    assert errors["max_abs_error"] == 0.0 and errors["relative_l2_error"] == 0.0


def test_parity_errors_flattens_equal_sizes_and_rejects_bad_input():
    assert parity_errors([[1.0, 2.0]], [1.0, 2.0])["max_abs_error"] == 0.0
    with pytest.raises(ValueError, match="actual has 2 values, reference 3"):
        parity_errors([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="actual is empty"):
        parity_errors([], [])
    with pytest.raises(ValueError, match="reference is empty"):
        parity_errors([1.0], [])
    with pytest.raises(ValueError, match="non-finite"):
        parity_errors([1.0, math.nan], [1.0, 1.0])
    with pytest.raises(ValueError, match="non-finite"):
        parity_errors([1.0, 1.0], [math.inf, 1.0])


# ---- lr scaling

def test_lr_scaling_errors_literals():
    probes = [{"learning_rate": 1e-3, "update_norm": 2.0},
              {"learning_rate": 2e-3, "update_norm": 6.0},
              {"learning_rate": 4e-3, "update_norm": 4.0}]
    # ratios 2000, 3000, 1000 -> (r - 2000) / 2000
    assert lr_scaling_errors(probes) == pytest.approx([0.0, 0.5, -0.5], abs=1e-12)


def test_lr_scaling_errors_rejects_bad_probes():
    with pytest.raises(ValueError, match="no LR probes"):
        lr_scaling_errors([])
    for lr in (0.0, -1e-3, math.inf, math.nan):
        with pytest.raises(ValueError, match="positive and finite"):
            lr_scaling_errors([{"learning_rate": lr, "update_norm": 1.0}])
    with pytest.raises(ValueError, match="not finite"):
        lr_scaling_errors([{"learning_rate": 1.0, "update_norm": math.inf}])
    # negative norms on every probe scale exactly (errors all 0) and passed before; a norm is never negative
    for norms in ((-2.0, -4.0), (2.0, -4.0), (-2.0, 4.0)):
        with pytest.raises(ValueError, match="never negative"):
            lr_scaling_errors([{"learning_rate": 1e-4, "update_norm": norms[0]},
                               {"learning_rate": 2e-4, "update_norm": norms[1]}])
    with pytest.raises(ValueError, match="first probe"):
        lr_scaling_errors([{"learning_rate": 1.0, "update_norm": 0.0},
                           {"learning_rate": 2.0, "update_norm": 1.0}])
    # a later zero norm is a measurement, not an error
    assert lr_scaling_errors([{"learning_rate": 1.0, "update_norm": 1.0},
                              {"learning_rate": 1.0, "update_norm": 0.0}]) == [0.0, -1.0]


# ---- importance sampling loss: -sum(mask * exp(lp - lp_sampled) * A)

def test_importance_sampling_loss_literals():
    loss, grad = importance_sampling_loss_and_grad([0.0, math.log(2.0)], [0.0, 0.0], [1.0, 3.0])
    assert loss == pytest.approx(-(1.0 * 1.0 + 2.0 * 3.0), abs=1e-12)
    assert list(grad) == pytest.approx([-1.0, -6.0], abs=1e-12)
    loss, grad = importance_sampling_loss_and_grad([0.0, math.log(2.0)], [0.0, 0.0], [1.0, 3.0], mask=[1.0, 0.0])
    assert loss == pytest.approx(-1.0, abs=1e-12)
    assert list(grad) == pytest.approx([-1.0, 0.0], abs=1e-12)
    # the ratio uses lp - lp_sampled (not the reverse)
    loss, _ = importance_sampling_loss_and_grad([math.log(3.0)], [math.log(1.5)], [1.0])
    assert loss == pytest.approx(-2.0, abs=1e-12)


def test_importance_sampling_rejects_bad_input():
    with pytest.raises(ValueError, match="differ in shape"):
        importance_sampling_loss_and_grad([0.0], [0.0, 0.0], [1.0])
    with pytest.raises(ValueError, match="differ in shape"):
        importance_sampling_loss_and_grad([0.0], [0.0], [1.0], mask=[1.0, 1.0])
    # each of the four arrays alone with another (broadcastable) shape is refused
    for odd in range(4):
        args = [[0.0, 0.0], [0.0, 0.0], [1.0, 1.0], [1.0, 1.0]]
        for size in (1, 3):
            args[odd] = [0.5] * size
            with pytest.raises(ValueError, match="differ in shape"):
                importance_sampling_loss_and_grad(*args)
    # two pairs that agree within themselves but not with each other (sizes 2, 2, 1, 1 broadcast)
    for args in (([0.0, 0.0], [0.0, 0.0], [1.0], [1.0]), ([0.0], [0.0], [1.0, 1.0], [1.0, 1.0])):
        with pytest.raises(ValueError, match="differ in shape"):
            importance_sampling_loss_and_grad(*args)
    for position, name in enumerate(("logprobs", "sampling_logprobs", "advantages", "mask")):
        args = [[0.0], [0.0], [1.0], [1.0]]
        args[position] = [math.nan]
        with pytest.raises(ValueError, match=f"^{name} contains"):
            importance_sampling_loss_and_grad(*args)


def test_file_sha256_and_revision_pins(tmp_path):
    data = b"x" * ((1 << 20) + 3)  # more than one read block
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    assert file_sha256(path) == hashlib.sha256(data).hexdigest()
    pins = revision_pins(files=[path], packages=("pytest",))
    import importlib.metadata
    assert pins == {"packages": {"pytest": importlib.metadata.version("pytest")},
                    "files": {path.as_posix(): hashlib.sha256(data).hexdigest()}}
    with pytest.raises(importlib.metadata.PackageNotFoundError):
        revision_pins(packages=("no-such-package-for-sure-xyz",))


# ---- pinned_revisions: where a pin comes from (spec, recorded revision file)

def _spec(baseline="UNRESOLVED", reference="UNRESOLVED", revisions=None):
    spec = {"correctness_preflight": {"paths": [
        {"id": "p1", "baseline_revision": baseline, "reference_revision": reference}]}}
    if revisions is not None:
        spec["correctness_revisions"] = revisions
    return spec


def test_a_pin_in_the_preflight_supplied_by_the_revision_file_is_attributed_to_it():
    from experiment.stats.correctness import pinned_revisions

    pins = pinned_revisions(_spec(baseline="abc123"), revision_supplied=["correctness_preflight"])
    assert pins["p1"]["baseline_revision"] == {"pinned": "abc123", "source": "spec revision file",
                                               "spec_text": "abc123"}
    own = pinned_revisions(_spec(baseline="abc123"))
    assert own["p1"]["baseline_revision"]["source"] == "spec"


def test_an_unresolved_spec_pin_is_taken_from_the_revision_files_paths():
    from experiment.stats.correctness import pinned_revisions

    revisions = {"paths": [{"id": "p1", "reference_revision": "def456"}]}
    pins = pinned_revisions(_spec(revisions=revisions), revision_supplied=["correctness_revisions"])
    assert pins["p1"]["reference_revision"] == {
        "pinned": "def456", "source": "spec revision file (correctness_revisions)", "spec_text": "UNRESOLVED"}
    assert pins["p1"]["baseline_revision"] == {"pinned": None, "source": None, "spec_text": "UNRESOLVED"}


# ---------------------------------------------------------------- parity, cosine, reasons and revision pins
# experiment.stats.correctness beyond the tests above (issue 28 item 7, the complete
# mutation run's survivors): parity errors of small and mismatched inputs, cosine kept in [-1, 1],
# min_cosine above its bound, one reason per tolerance, negative update norms, and the revision pins
# (the revision file's mapping form, skipped entries, unresolved pins, per-key status).


def test_sizes_that_broadcast_are_still_refused():
    with pytest.raises(ValueError, match="actual has 3 values, reference 1"):
        parity_errors([1.0, 2.0, 3.0], [1.0])
    with pytest.raises(ValueError, match="actual has 3 values, reference 2"):
        parity_errors([1.0, 2.0, 3.0], [1.0, 2.0])


def test_relative_l2_is_a_ratio_for_a_reference_norm_below_one():
    errors = parity_errors([0.25], [0.5])
    assert errors["relative_l2_error"] == 0.5
    assert errors["max_abs_error"] == 0.25 and errors["reference_max_abs"] == 0.5


def test_cosine_of_parallel_vectors_is_clipped_to_plus_and_minus_one():
    # for this pair the unclipped quotient rounds to 1.0000000000000002 (and -1.0000000000000002)
    reference = [0.1, 0.1, 0.1]
    assert parity_errors([v * 3.0 for v in reference], reference)["cosine_similarity"] == 1.0
    assert parity_errors([-v * 3.0 for v in reference], reference)["cosine_similarity"] == -1.0


def test_a_cosine_above_min_cosine_is_accepted():
    errors = {"max_abs_error": 0.0, "reference_max_abs": 1.0, "cosine_similarity": 0.99}
    assert accepts(errors, {"atol": 0.0, "min_cosine": 0.9})[0] is True
    assert accepts(errors, {"atol": 0.0, "min_cosine": 0.995})[0] is False


def test_every_tolerance_gets_a_reason_after_a_missing_measurement():
    errors = {"grad": {"max_abs_error": 1.0, "reference_max_abs": 1.0, "cosine_similarity": 1.0}}
    passed, reasons = check_tolerances(errors, {"loss": {"atol": 0.1}, "grad": {"atol": 0.1}})
    assert passed is False
    assert [reason.split(":")[0] for reason in reasons] == ["loss", "grad"]
    assert "exceeds" in reasons[1]


def test_a_small_negative_update_norm_is_refused():
    with pytest.raises(ValueError, match="never negative"):
        lr_scaling_errors([{"learning_rate": 1e-4, "update_norm": 1.0},
                           {"learning_rate": 2e-4, "update_norm": -0.5}])
    # norms below 1 are measurements
    assert lr_scaling_errors([{"learning_rate": 1e-4, "update_norm": 0.25},
                              {"learning_rate": 2e-4, "update_norm": 0.5}]) == [0.0, 0.0]


# ---- revision pins

def test_the_revision_files_mapping_form_supplies_a_pin_and_other_entries_are_ignored():
    spec = {"correctness_preflight": {"paths": ["not a path", {"id": "p1", "baseline_revision": "UNRESOLVED",
                                                              "reference_revision": "UNRESOLVED"}]},
            "correctness_revisions": {"p1": {"baseline_revision": "abc123"}, "note": "text, not a path"}}
    pins = pinned_revisions(spec)
    assert list(pins) == ["p1"]
    assert pins["p1"]["baseline_revision"] == {"pinned": "abc123", "source": "spec revision file (correctness_revisions)",
                                               "spec_text": "UNRESOLVED"}
    assert unresolved_revisions(pins) == [("p1", "reference_revision")]


def test_unresolved_revisions_lists_every_unpinned_key_of_every_path():
    pins = {"p1": {"baseline_revision": {"pinned": None}, "reference_revision": {"pinned": "r"}},
            "p2": {"baseline_revision": {"pinned": None}, "reference_revision": {"pinned": None}}}
    assert unresolved_revisions(pins) == [("p1", "baseline_revision"), ("p2", "baseline_revision"),
                                          ("p2", "reference_revision")]
    assert unresolved_revisions({}) == []


def test_revision_status_per_key():
    pins = {"baseline_revision": {"pinned": "b1", "source": "spec"}}
    status = revision_status(pins, {"baseline_revision": "b1", "reference_revision": "r9"})
    assert status == {
        "baseline_revision": {"pinned": "b1", "source": "spec", "reported": "b1", "status": "matches"},
        "reference_revision": {"pinned": None, "source": None, "reported": "r9", "status": "unresolved"},
    }
    for reported in ("b0", "b2", None):
        assert revision_status(pins, {"baseline_revision": reported})["baseline_revision"]["status"] == "differs"
