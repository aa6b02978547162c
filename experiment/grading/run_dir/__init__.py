"""The grader's run-directory layer: the checks a run directory's files allow beyond its result.json.

`grade_record(result, run_dir=...)` (experiment.grading.grade) grades the record exactly as it grades a bare
result.json and adds these checks' findings to `problems` as "<check>: <message>". The decision steps run
them too, before a verdict is posted (the gate hands `validate_run` down: experiment.gates.decision).

`validate_run(run_dir)` returns a list of `Problem` (a check id and one line); an empty list
means every applicable check passed. `run_validation(run_dir)` also says which checks ran.

What the checks read (all written by `RunStore`):
    result.json                 the RESULT object
    events.jsonl                gate verdicts (event "gate") and RESULT updates (any event that
                                carries `status` and `deviations`), in order
    evidence/manifest.json      the retained evidence files with their sha256
    evidence/execution-plan.json, spec.json, spec-revision.plan.json
                                the plan and spec the run executed (fallback: the spec path
                                named by the run_created event)

A section is checked when RESULT has it. A missing section is a problem only when the gate that
produces it passed (so a run stopped at an early gate is not blamed for later sections).
Every check id is `<section>.<rule>`, e.g. `evaluation.evaluator_id`; each is in the grader's rule
table (experiment.grading.rules).

The layer is a package: `files` reads the run directory, `evidence` builds the context the contract rules read (the
retained spec typed, the execution plan the contract derives from it, evidence/ through the contract's reader),
`validator` runs the check groups, and each group lives in the module of its sections (`record`, `preflights`,
`evaluation`, `decision`, `training_data`, `retained`). A check that restates a contract rule runs that rule's one
implementation there (experiment.grading.registry.run_dir_checks names it) and only supplies the run directory's
evidence (whether a gate passed, the files on disk).
"""

from __future__ import annotations

from experiment.grading.run_dir.files import (
    MAX_OBSERVATIONS, SECTION_GATES, Problem, RunDirError, ValidationReport, explicit_item_ids,
    is_hex64, jsonl_rows, RunFiles, text_key, read_event_lines, validation_summary,
)
from experiment.grading.run_dir.validator import Validator, run_validation, validate_run

__all__ = ["MAX_OBSERVATIONS", "SECTION_GATES", "Problem", "RunDirError", "ValidationReport",
           "RunFiles", "Validator", "explicit_item_ids", "is_hex64", "jsonl_rows",
           "text_key", "read_event_lines", "run_validation", "validate_run",
           "validation_summary"]
