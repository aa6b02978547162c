"""Missing evidence takes precedence (experiment.grading.precedence): the general rule, on category grades.

The earlier real run's record (tests/unit/test_grading_earlier_run.py) is the case the exchange graded; these
tests hold the rule itself: what is left out, and what never is.
"""

from __future__ import annotations

from experiment.grading.common import (INVALID, MISSING_EVIDENCE, MISSING_SUMMARY, UNKNOWN, UNVERIFIED, CategoryGrade,
                                      Issue, category_status)
from experiment.grading.precedence import INSUFFICIENT_EVIDENCE_NOTE, with_precedence

NOT_RETAINED = Issue("DEC-3", UNVERIFIED, "observations_file x.jsonl is not retained", MISSING_EVIDENCE)
NO_MAPPING = Issue("DEC-11", INVALID, "role_to_arm {} is not the spec's mapping", MISSING_SUMMARY)
WRONG_VALUE = Issue("DEC-9", INVALID, "verdict supported is not the recomputed refuted")


def _grade(name: str, *issues: Issue) -> CategoryGrade:
    return CategoryGrade(name, category_status(list(issues)), list(issues))


def test_a_summary_that_only_restates_missing_evidence_is_left_out():
    graded = with_precedence(_grade("decision", NOT_RETAINED, NO_MAPPING))
    assert (graded.status, graded.issues) == (UNVERIFIED, [NOT_RETAINED])
    assert INSUFFICIENT_EVIDENCE_NOTE in graded.notes


def test_a_missing_summary_without_missing_evidence_is_graded_by_its_own_rule():
    graded = with_precedence(_grade("decision", NO_MAPPING))
    assert (graded.status, graded.issues, graded.notes) == (INVALID, [NO_MAPPING], [])


def test_a_finding_about_what_the_record_says_is_never_left_out():
    graded = with_precedence(_grade("decision", NOT_RETAINED, NO_MAPPING, WRONG_VALUE))
    assert (graded.status, graded.issues) == (INVALID, [NOT_RETAINED, WRONG_VALUE])
    assert INSUFFICIENT_EVIDENCE_NOTE not in graded.notes  # invalid, not insufficient evidence


def test_precedence_holds_in_every_category():
    config = Issue("FEAS-2", UNKNOWN, "Re-projection required: steps changed or was not recorded", MISSING_EVIDENCE)
    projection = Issue("FEAS-12", UNKNOWN, "no projection against the budget is recorded", MISSING_SUMMARY)
    graded = with_precedence(_grade("feasibility", config, projection))
    assert (graded.status, graded.issues, graded.notes) == (UNKNOWN, [config], [])


def test_a_summary_beside_findings_alone_is_kept():
    """Only missing evidence lets a summary go: a finding about a value the record carries is no absence."""
    graded = with_precedence(_grade("decision", WRONG_VALUE, NO_MAPPING))
    assert (graded.status, graded.issues, graded.notes) == (INVALID, [WRONG_VALUE, NO_MAPPING], [])


def test_the_insufficient_evidence_note_is_the_decisions_alone():
    for name in ("evaluator", "restoration", "correctness", "feasibility", "generation_audit"):
        not_retained = Issue("X-1", UNVERIFIED, f"the {name} evidence is not retained", MISSING_EVIDENCE)
        graded = with_precedence(_grade(name, not_retained, NO_MAPPING))
        assert (name, graded.status, graded.issues, graded.notes) == (name, UNVERIFIED, [not_retained], [])


def test_an_invalid_decision_with_missing_evidence_gets_no_insufficient_evidence_note():
    graded = with_precedence(_grade("decision", NOT_RETAINED, WRONG_VALUE))
    assert (graded.status, graded.issues, graded.notes) == (INVALID, [NOT_RETAINED, WRONG_VALUE], [])


def test_a_grade_with_nothing_to_leave_out_keeps_the_status_its_rule_gave():
    """The category's own rule set the status (here DEC-1's first issue, unknown); precedence only ever lowers
    findings that restate an absence, so with none to leave out the grade is returned as its rule made it."""
    no_verdict = Issue("DEC-1", UNKNOWN, "no verdict (the comparison was not decided)", MISSING_EVIDENCE)
    graded = with_precedence(CategoryGrade("decision", UNKNOWN, [no_verdict, NOT_RETAINED]))
    assert (graded.status, graded.issues, graded.notes) == (UNKNOWN, [no_verdict, NOT_RETAINED], [])
