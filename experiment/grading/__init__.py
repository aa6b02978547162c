"""The grader: a RESULT graded category by category, the way the exchange grades it.

One module per category (`evaluator`, `decision`, `restoration`, `correctness`, `feasibility`,
`generation_audit`), record-level rules in `general` (and `traces`: the leaves a record restates from its run
against the traces that produced them, TRACE-*), evidence access in `evidence`, the secret
scan in `secrets`, prediction before spending in `predict`, and the run-dir layer in `run_dir` (what
only a run directory's files show; `grade_record(result, run_dir=...)` adds it to the rules a bare
result.json gets). Every check function is named after the rule of docs/contract-rules.md it
implements (`EVAL_2` is rule EVAL-2); `rules` is the table of every id the grader emits.

    from experiment.grading import grade_record
    grade = grade_record(result, run_dir=None, spec=None)   # -> Grade (status per category)
"""

from __future__ import annotations

from typing import Any

__all__ = ["grade_record", "grade_path", "load_input", "GradeInputError", "Grade", "CategoryGrade", "CATEGORIES"]


def __getattr__(name: str) -> Any:  # lazy: `predict` must not load the category modules
    if name in ("grade_record", "grade_path", "load_input", "GradeInputError"):
        from experiment.grading import grade

        return getattr(grade, name)
    if name in ("Grade", "CategoryGrade", "CATEGORIES"):
        from experiment.grading import common

        return getattr(common, name)
    raise AttributeError(name)
