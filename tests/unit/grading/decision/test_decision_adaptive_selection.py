"""Adaptive selection in the grader (experiment/grading/decision.py, DEC-13): which evaluator's items the
selection is recomputed from, and what a choice that cannot be recomputed grades (issue 28 item 7: mutants
that survived test_adaptive_selection.py). Records are made as there, by the run's own decision step."""

from __future__ import annotations

import pytest
from records import (
    ADAPTIVE_BASELINE as BASELINE,
    ADAPTIVE_ITEMS as ITEMS,
    adaptive_decide as _decide,
    adaptive_observations as _observations,
    adaptive_values as _values,
    adaptive_variant_record,
    graded_decision as _decision,
    refreeze_adaptive_selection as _refreeze,
)

from experiment.stats import selection as sel


@pytest.fixture
def adaptive(tmp_path):
    return adaptive_variant_record(tmp_path)


def test_a_selection_naming_an_evaluator_the_record_lacks_is_recomputed_from_the_records_only_evaluator(adaptive):
    path, _, result = adaptive
    (only,) = result["evaluation"]["evaluators"]  # the record has one evaluator
    _refreeze(result, lambda s: s.update(evaluator_id="f" * 64))
    status, issues = _decision(result, path)
    assert status == "invalid"
    # recomputed (from the one evaluator there is), so the recorded id is compared with it
    assert any(f"decision.selection.evaluator_id {'f' * 64!r} is not {only!r}" in issue for issue in issues), issues


def test_with_two_evaluators_a_selection_naming_neither_cannot_be_recomputed(adaptive):
    path, _, result = adaptive
    (only,) = result["evaluation"]["evaluators"]
    result["evaluation"]["evaluators"]["0" * 64] = result["evaluation"]["evaluators"][only]  # a second evaluator
    _refreeze(result, lambda s: s.update(evaluator_id="f" * 64))
    status, issues = _decision(result, path)
    assert status == "invalid"
    # which of the two the selection was made on is unknown: nothing to compare the recorded id with
    assert not any("decision.selection.evaluator_id" in issue for issue in issues), issues


def test_a_choice_the_selection_items_do_not_give_is_graded_against_the_recomputed_candidate(adaptive):
    """The cheater records grpo_gs4 (best on the confirmation items) with its decision; the selection items
    choose gs1_kernel (records.adaptive_values: it scores 1 on every selection item, grpo_gs4 0), so
    the decision is graded with gs1_kernel as the treatment: its observations are missing and the recorded
    role_to_arm is not that mapping."""

    path, rule, result = adaptive
    _refreeze(result, lambda s: s.update(selected="grpo_gs4"))
    split = sel.split_items(ITEMS)
    rows = [o for o in _observations(_values(split), result["decision"]["selection"]["evaluator_id"])
            if o.arm in {"grpo_gs4", BASELINE} and o.item_id in split.confirmation_ids]
    _decide(result, rule, rows, result["decision"]["selection"])
    status, issues = _decision(result, path)
    assert status == "invalid"
    assert any(issue.startswith("DEC-6") and "missing (first: gs1_kernel" in issue for issue in issues), issues
    assert any(issue.startswith("DEC-11") and f"{{'baseline': '{BASELINE}', 'treatment': 'gs1_kernel'}}" in issue
               for issue in issues), issues


def test_an_evaluator_whose_item_ids_repeat_cannot_be_split_and_the_grade_says_so(adaptive):
    path, _, result = adaptive
    (only,) = result["evaluation"]["evaluators"]
    items = result["evaluation"]["evaluators"][only]["items"]
    items["ids"] = [*items["ids"], items["ids"][0]]  # an item listed twice (a new list: ITEMS itself is shared)
    status, issues = _decision(result, path)
    assert status == "invalid"
    assert any(issue.startswith("DEC-13") and "the evaluator's item ids repeat" in issue for issue in issues), issues
