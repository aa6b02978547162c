"""Every leaf matters (issue 28 item 6), on the records the grading tests build in-process
(`graded_record`: the self-generated spec's three-way record and the TriMuon best-LR record; the GS1
family is covered on its wiring rehearsal in tests/e2e/test_grader_trust.py).

hypothesis draws a leaf of the record (RESULT and the inline evidence files, JSON parsed) and a
perturbation (a changed value, a value swapped in from elsewhere in the record, a removed key or
list item; an evidence file is re-hashed, and every mention of its old hash follows): the grade
must find something it did not find before, unless the leaf's pattern is on docs/ungraded-fields.md.
The tamper corpus of tests/tampering.py that fits these records runs here too.
"""

from __future__ import annotations

import pytest

from tampering import (
    absurd_feasibility_measurements, activation_value_out_of_range, audit_zero_counts_as_false, boolean_max_tokens,
    buried_correctness_pin, changed_learning_rate_both_sides, edited_spec_margin_stronger_verdict,
    flipped_three_way_verdict, flipped_verdict_moved_effect, grid_edge_as_number, loss_eval_zero_counts_as_false,
    projection_flags_as_numbers, rehashed_predictions, relabelled_loss_aggregation, removed_activation_calibration,
    restore_counts_as_booleans, strong_confidence, tampered, zero_optimizer_settings_as_false,
)
import leaves as L

FAMILIES = ("paired", "best_lr")


@pytest.fixture(scope="module")
def records(graded_record):
    built = {kind: graded_record(kind)[0] for kind in FAMILIES}
    return {kind: (record, L.findings(record), L.leaves(record), L.pool(record)) for kind, record in built.items()}


@pytest.mark.parametrize("kind", FAMILIES)
def test_perturbed_leaves_leave_green_unless_listed(records, kind):
    record, baseline, everything, candidates = records[kind]
    L.assert_drawn_perturbations_caught(record, 120, baseline=baseline, everything=everything, candidates=candidates)


def test_a_grader_that_trusts_loss_eval_misses_rehashed_predictions(records, monkeypatch):
    """The property finds what a weakened grader misses: without LOSS-3 (and the best-LR recompute
    reading the predictions), predictions changed with every hash recomputed pass unseen."""
    from experiment.grading import decision, decision_rows, evaluator

    record, baseline, _, _ = records["best_lr"]
    leaf = next(leaf for leaf in L.leaves(record) if leaf.file and leaf.file.startswith("predictions-trimuon")
                and leaf.path[-1:] == ("nll_sum",))
    changed = L.perturb(record, leaf, "change")
    assert L.caught(changed, baseline) == (True, None)
    monkeypatch.setattr(evaluator, "CHECKS", [c for c in evaluator.CHECKS if c is not evaluator.LOSS_3])
    monkeypatch.setattr(decision_rows, "nll_from_predictions", lambda rows, aggregation: None)
    monkeypatch.setattr(decision, "DEC_3", lambda ctx: [])
    weakened_baseline = L.findings(record)
    assert L.caught(changed, weakened_baseline) == (False, None)


def test_a_grader_that_trusts_the_pilot_log_misses_a_repeated_item(records, monkeypatch):
    """The property finds what a weakened grader misses: without ACT-3, a pilot step that trained one
    prompt twice (an item id repeated inside the activation pilot's evidence file, re-hashed) passes unseen;
    the values ACT-2 recomputes do not change."""
    from experiment.grading import activation, general

    record, baseline, _, _ = records["paired"]
    second = next(leaf for leaf in L.leaves(record) if leaf.file and leaf.file.startswith("activation-pilot")
                  and leaf.path[1:] == ("item_ids", 1))
    first = next(leaf for leaf in L.leaves(record) if leaf.file == second.file and leaf.path == (*second.path[:2], 0))
    assert first.value != second.value
    repeated = L.perturb(record, second, "swap", first.value)
    found, crash = L.caught(repeated, baseline)
    assert (found, crash) == (True, None)
    assert any(f[1] == "ACT-3" for f in L.findings(repeated) - baseline)
    monkeypatch.setattr(general, "CHECKS", [c for c in general.CHECKS if c is not activation.ACT_3])
    assert L.caught(repeated, L.findings(record)) == (False, None)


TAMPERS = {
    "paired": [flipped_three_way_verdict, edited_spec_margin_stronger_verdict, removed_activation_calibration,
               activation_value_out_of_range, absurd_feasibility_measurements, rehashed_predictions,
               changed_learning_rate_both_sides, projection_flags_as_numbers, boolean_max_tokens,
               restore_counts_as_booleans, audit_zero_counts_as_false],
    "best_lr": [flipped_verdict_moved_effect, edited_spec_margin_stronger_verdict, strong_confidence,
                absurd_feasibility_measurements, rehashed_predictions, relabelled_loss_aggregation,
                buried_correctness_pin, changed_learning_rate_both_sides, projection_flags_as_numbers,
                boolean_max_tokens, restore_counts_as_booleans, grid_edge_as_number, loss_eval_zero_counts_as_false,
                zero_optimizer_settings_as_false],
}
CASES = [(kind, tamper) for kind, tampers in TAMPERS.items() for tamper in tampers]


@pytest.mark.parametrize("kind,tamper", CASES, ids=[f"{k}-{t.__name__}" for k, t in CASES])
def test_the_tamper_corpus_leaves_green(records, kind, tamper):
    record, baseline, _, _ = records[kind]
    assert L.findings(tampered(record, tamper)) - baseline


def test_the_ungraded_list_gives_a_reason_for_every_entry():
    entries = L.ungraded_fields()
    assert entries
    assert all(len(entry.reason.split()) >= 3 and set(entry.kinds) <= set(L.KINDS) for entry in entries)
    assert len({(e.pattern, e.kinds) for e in entries}) == len(entries)
