"""Missing evidence takes precedence (the exchange's rule, docs/exchange-contract.md §6-7, contract-details A-5.8,
A-6.6, A-7.2): evidence that is missing or not retained makes a category unverified (unknown where its rule says
so), and the grade does not add findings that only restate the absence.

Each category's issues are read after its checks ran (`with_precedence`, called by experiment.grading.grade for
the bare record and the run directory alike):

- an issue with `absence == MISSING_EVIDENCE` says that evidence the category rests on is missing, corrupt or not
  retained (an observations file, an evidence_ref, the feasibility config a projection is made from);
- an issue with `absence == MISSING_SUMMARY` says that a field of the record is absent that only summarises what
  such evidence would give (the decision's role mapping and adjustment, the feasibility projection).

When a category has a missing-evidence issue, its missing-summary issues are left out: the absence is said once,
by the rule whose evidence is missing, and never turned into an invalid finding. Without one, a missing summary is
graded by its own rule as before. A finding about a value the record does carry is never left out: an evaluator
with a prose hash stays invalid although its predictions are not retained.

With the decision unverified for missing evidence, the exchange sets `outcome_reason: insufficient_evidence`
whatever the run reported (contract-details A-6.6); the decision category says so in a note.
"""

from __future__ import annotations

from experiment.grading.common import (MISSING_EVIDENCE, MISSING_SUMMARY, UNVERIFIED, CategoryGrade,
                                      category_status)

INSUFFICIENT_EVIDENCE_NOTE = ("outcome_reason insufficient_evidence: the exchange sets it when the decision cannot be "
                              "recomputed from retained evidence, whatever the run reported")


def with_precedence(grade: CategoryGrade) -> CategoryGrade:
    """The category's grade with missing evidence taking precedence over findings that restate its absence."""
    if not any(issue.absence == MISSING_EVIDENCE for issue in grade.issues):
        return grade
    kept = [issue for issue in grade.issues if issue.absence != MISSING_SUMMARY]
    if len(kept) != len(grade.issues):
        grade.issues = kept
        grade.status = category_status(kept)
    if grade.name == "decision" and grade.status == UNVERIFIED and INSUFFICIENT_EVIDENCE_NOTE not in grade.notes:
        grade.notes.append(INSUFFICIENT_EVIDENCE_NOTE)
    return grade
