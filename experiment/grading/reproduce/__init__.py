"""Re-execution (`python -m flows.validate PATH --reproduce [--backend URL]`): the record checked against what the
grader runs again itself, not only against itself (docs/reproduce.md).

Without a service (`offline`): the grader's own scorer and parser on the retained predictions, against the gold
answers of the data file the spec names (REPRO-1), and the grader's own re-solver on the audited generated tasks,
from their text (REPRO-2). With a service (`service`, the tinker SDK, loaded only then): a deterministic sample of
evaluation items scored again from the recorded checkpoints, RL greedy predictions (REPRO-3) and SFT held-out NLL
(REPRO-4). Nothing here imports the pipeline's experiment.rl, .sft or .selfgen: a bug there is not repeated here.

    reproduction = reproduce(grade, result, run_dir)             # offline
    reproduction = reproduce(grade, result, run_dir, service.open_session(url))   # and the service checks
    apply(grade, reproduction)                                   # its findings join the grade's categories
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from experiment.grading.common import (INVALID, NOT_APPLICABLE, UNVERIFIED, Grade, GradeContext, Issue, category_status,
                                      rule_of_check, short)
from experiment.grading.evidence import EvidenceAccess
from experiment.grading.reproduce.offline import REPRO_1, REPRO_2
from experiment.grading.run_dir import read_event_lines

# the category each re-execution rule reports in (experiment/grading/rules.py has the same rows)
CATEGORY_OF = {"REPRO-1": "evaluator", "REPRO-2": "generation_audit", "REPRO-3": "evaluator", "REPRO-4": "evaluator"}
_MALFORMED = (AttributeError, KeyError, TypeError, ValueError, IndexError, ZeroDivisionError)


class ServiceUnreachable(RuntimeError):
    """The service given cannot be used at all (bad input: one line, exit status 2)."""


@dataclass
class Reproduction:
    issues: list[Issue] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    service_calls: int = 0
    seconds: float = 0.0


def _run(check: Callable[..., list[Issue]], *args: Any) -> list[Issue]:
    """A check's findings; a record too malformed for it is invalid under its rule, never a traceback."""
    try:
        return check(*args)
    except _MALFORMED as err:
        rule = rule_of_check(check.__name__)
        return [Issue(rule, INVALID, f"the record has an unexpected shape, so {rule} cannot be re-run "
                                     f"({type(err).__name__}: {short(str(err), 80)})")]


def _run_on_service(check: Callable[..., list[Issue]], *args: Any) -> list[Issue]:
    """A service check's findings; a service that fails mid-check (it stops answering, refuses a request) leaves the
    check unverified, said in one sentence, never a traceback."""
    try:
        return _run(check, *args)
    except Exception as err:  # noqa: BLE001 - whatever the SDK raises, the measurement was not re-run
        rule = rule_of_check(check.__name__)
        return [Issue(rule, UNVERIFIED, f"the service failed while {rule} re-scored the sample ({type(err).__name__}: "
                                        f"{short(str(err), 80)})")]


def context(grade: Grade, result: dict[str, Any], run_dir: str | Path | None) -> GradeContext:
    spec = grade.spec
    events = read_event_lines(Path(run_dir))[0] if run_dir is not None else None
    return GradeContext(result=result, evidence=EvidenceAccess(result), spec=spec.to_dict() if spec is not None else None,
                        spec_model=spec, spec_source=grade.spec_source,
                        run_dir=Path(run_dir) if run_dir is not None else None, events=events)


def reproduce(grade: Grade, result: dict[str, Any], run_dir: str | Path | None = None, session: Any = None) -> Reproduction:
    """Re-run what the record makes deterministic and, given a service session (service.open_session), re-score a
    sample from the recorded checkpoints."""
    started = time.perf_counter()
    ctx = context(grade, result, run_dir)
    done = Reproduction()
    for check in (REPRO_1, REPRO_2):
        done.issues += _run(check, ctx, done.notes)
    if session is not None:
        for check in session.checks:
            done.issues += _run_on_service(check, ctx, session, done.notes)
        done.service_calls = session.calls
    done.seconds = time.perf_counter() - started
    return done


def apply(grade: Grade, reproduction: Reproduction) -> None:
    """Each finding joins its category (a category the spec opts out of stays so); the notes are said there too."""
    for issue in reproduction.issues:
        category = grade.categories[CATEGORY_OF[issue.rule]]
        if category.status == NOT_APPLICABLE:
            continue
        category.issues.append(issue)
        category.status = category_status(category.issues)
    for note in reproduction.notes:
        category = grade.categories[CATEGORY_OF[note.split(":", 1)[0]]]
        if category.status != NOT_APPLICABLE:
            category.notes.append(note)
