"""experiment.stats.correctness beyond test_correctness_tolerances_and_pins.py (issue 28 item 7, the complete
mutation run's survivors): parity errors of small and mismatched inputs, cosine kept in [-1, 1],
min_cosine above its bound, one reason per tolerance, negative update norms, and the revision pins
(the revision file's mapping form, skipped entries, unresolved pins, per-key status)."""

from __future__ import annotations

import pytest

from experiment.stats.correctness import (
    accepts,
    check_tolerances,
    lr_scaling_errors,
    parity_errors,
    pinned_revisions,
    revision_status,
    unresolved_revisions,
)


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
