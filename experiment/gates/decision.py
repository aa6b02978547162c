"""Gate `decision`: each family's verdict step, handed the grader's run-dir checks, and the one place the run's
verdict is posted (experiment.gates.GATES names the steps through `decided`).

RL: the spec's decision_rule (paired Hoeffding) applied to the item-level observations recomputed
from the retained predictions, role labels mapped to arms, the decision object posted. SFT without a
decision_rule: the best-LR comparison against the plan file's verdict_rule, no decision object; with one: the
same paired Hoeffding decision on each held-out conversation's NLL, its decision object posted.
Either way the record is validated before the verdict (the grader's run-dir checks, handed to the step), and the
step returns its final fields (the verdict) to `decided`, which grades the record as it will be posted
(RESULT.grade carries the exchange's categories) and posts both in one update; the grader (experiment.grading)
sits above the families, so this gate hands it down or runs it itself.

Rules: DEC-1..DEC-14, GEN-3, GEN-4, GEN-9 (docs/contract-rules.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from experiment.contract.rehearsal import rehearsal_summary
from experiment.contract.verdict import GateVerdict
from experiment.grading import grade_record
from experiment.grading.grade import SPECS_DIR
from experiment.grading.run_dir import validate_run, validation_summary
from experiment.run.context import RunContext

# a family's decision step: (ctx, validate=the run-dir checks) -> (the gate's verdict, the final RESULT fields or None)
DecisionStep = Callable[..., tuple[GateVerdict, dict[str, Any] | None]]


def own_grade(ctx: RunContext, pending: dict[str, Any] | None = None) -> dict[str, Any]:
    """RESULT.grade: the exchange's categories for the record as it will be posted (RESULT now plus the
    `pending` final fields; None removes a field, as in update_result), graded from what the record
    carries alone, the way the exchange receives it (the run directory's events are checked after the
    run by `python -m flows.validate RUN_DIR`)."""
    record = {key: value for key, value in {**ctx.store.read_result(), **(pending or {})}.items()
              if value is not None}
    record.pop("grade", None)
    if isinstance(record.get("rehearsal"), dict) and isinstance(record.get("summary"), str):
        # the summary as the flow posts it: led by the rehearsal mark (graded, PROSE-2)
        record["summary"] = rehearsal_summary(record["summary"], record["rehearsal"])
    # A spec of specs/ is attested from there, as the exchange's grader does; any other spec (the exchange's
    # next one) is graded against the file this run was given, as `flows.validate RUN --spec SPEC` does:
    # attested from specs/ alone, every category of a new spec's record graded unverified (SPEC-1).
    spec_file = Path(ctx.spec.source.path).resolve()
    given = None if spec_file.parent == SPECS_DIR else spec_file
    try:
        return grade_record(record, run_dir=None, spec=given, self_consistency=False).record()
    except Exception as err:  # a grader defect must not cost the run its verdict; it is recorded instead
        return {"version": 1, "categories": {}, "problems": [f"grader failed: {type(err).__name__}: {err}"]}


def own_validation(run_dir: Path) -> dict[str, Any]:
    """RESULT.validation: the grader's run-dir checks (experiment.grading.run_dir) on the run directory as it stands,
    before the verdict is posted (a run whose records do not check out gets no definitive verdict)."""
    return validation_summary(validate_run(run_dir))


def decided(step: DecisionStep, ctx: RunContext) -> GateVerdict:
    """Run a family's decision `step` (handed the run-dir checks) and post what it decided: its final fields
    and RESULT.grade, the grade of the record as it will be posted, in one update (the only writer of the run's
    verdict and of RESULT.grade)."""
    verdict, final = step(ctx, validate=own_validation)
    if final is not None:
        ctx.store.update_result(grade=own_grade(ctx, final), **final)
    return verdict
