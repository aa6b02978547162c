"""A record that carries no spec is graded unverified or unknown where the spec decides, never invalid:
"missing/corrupt files stay unverified" (docs/exchange-contract.md §6, the exchange's grading of the
earlier run). Found by dropping the spec's evidence entries from a green record: the evaluator graded
`invalid` because the base model's rows could not be matched to a base model no spec named (EVAL-9)."""

from __future__ import annotations

import pytest

from experiment.grading.common import INVALID, UNVERIFIED
from experiment.grading.grade import grade_record


def _without_spec(result: dict) -> dict:
    evidence = result["evidence"]
    evidence["files"] = [entry for entry in evidence["files"] if entry.get("kind") not in ("spec", "spec_revision")]
    return result


@pytest.mark.parametrize("kind", ["paired", "best_lr"])
def test_a_record_without_its_spec_grades_no_category_invalid(graded_record, kind):
    result, _ = graded_record(kind)
    assert grade_record(result).categories["evaluator"].status != INVALID  # green before the spec is dropped
    grade = grade_record(_without_spec(result))
    assert any(problem.startswith("SPEC-1") for problem in grade.problems)
    statuses = {name: category.status for name, category in grade.categories.items()}
    assert INVALID not in statuses.values(), statuses


def test_the_base_models_rows_are_unverified_without_a_spec(graded_record):
    result, _ = graded_record("paired")
    grade = grade_record(_without_spec(result))
    eval_9 = [issue for issue in grade.categories["evaluator"].issues if issue.rule == "EVAL-9"]
    assert [issue.status for issue in eval_9] == [UNVERIFIED], eval_9
    assert "base model" in eval_9[0].message
