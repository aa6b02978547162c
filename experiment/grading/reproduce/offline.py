"""What `--reproduce` re-runs without a service: the scorer on the retained predictions (REPRO-1) and the
re-solver on the audited generated tasks (REPRO-2).

REPRO-1 (evaluator): every retained prediction row of a text-answer evaluator (a `prediction` string and a 0/1
`value`) is scored again by the grader's own parser (`answers.score`) against the gold answer of the data file
the spec names (`answers.evaluation_items`), never the record's `reference`. Invalid: an item the data file does
not have, a `reference` that is not the file's gold answer, a value the re-scoring contradicts. A row the grader
cannot decide (a boxed expression that is no plain number) and a row the pipeline recorded as a grading timeout
or grader error are counted in the note, not graded. Unverified: the spec or its data file cannot be read.

REPRO-2 (generation_audit): every audited sample task (generation_audit.samples, its text and label from the
record's dataset_file) is re-solved from its text by the grader's own re-solver (`resolver.resolve`). Invalid,
unless the audit lists the task among its disagreements: a label the text contradicts, a recorded independent
answer the text contradicts, an ill-posed task (the text does not determine the number asked for). A task it
does not read is counted in the note.
"""

from __future__ import annotations

from typing import Any

from experiment.data import DataError
from experiment.grading.common import INVALID, UNVERIFIED, GradeContext, Issue, as_dict, as_list, short
from experiment.grading.registry import rule
from experiment.grading.reproduce.answers import evaluation_items, number_of, normalized, score
from experiment.grading.reproduce.resolver import ILL_POSED, SOLVED, resolve

NOT_GRADED_BY_PIPELINE = ("timeout", "grader_error")  # recorded as unscored (EVAL-11): counted, not re-judged


def _same_answer(a: Any, b: Any) -> bool:
    first, second = number_of(str(a)), number_of(str(b))
    if first is not None and second is not None:
        return first == second
    return normalized(str(a)) == normalized(str(b))


def text_prediction_files(ctx: GradeContext) -> list[str]:
    """The retained prediction files whose rows are text answers scored 0/1 (RL and GSM8K-style evaluators)."""
    names = []
    for entry in as_list(as_dict(ctx.result.get("evaluation")).get("scores")):
        ref = as_dict(entry).get("predictions_ref")
        rows = ctx.evidence.jsonl(ref) if ctx.evidence.usable(ref) else None
        if rows and all(isinstance(row.get("prediction"), str) for row in rows) and ref not in names:
            names.append(ref)
    return names


@rule("REPRO-1", "evaluator", "invalid|unverified", "retained text predictions re-scored by the grader's own parser against the data file's gold")
def REPRO_1(ctx: GradeContext, notes: list[str]) -> list[Issue]:
    files = text_prediction_files(ctx)
    if not files:
        return []
    if ctx.spec is None:
        return [Issue("REPRO-1", UNVERIFIED, "no spec to name the evaluation data file, so the retained predictions "
                                             "cannot be re-scored")]
    try:
        gold = evaluation_items(ctx.spec)
    except DataError as err:
        return [Issue("REPRO-1", UNVERIFIED, f"the evaluation data file the spec names cannot be read ({err})")]
    issues: list[Issue] = []
    rescored = undecided = unscored = 0
    for name in files:
        unknown, wrong_reference, contradicted = [], [], []
        for row in ctx.evidence.jsonl(name):
            item = str(row.get("item_id"))
            if item not in gold:
                unknown.append(item)
                continue
            if not _same_answer(row.get("reference"), gold[item]["answer"]):
                wrong_reference.append(f"{item} ({short(row.get('reference'), 20)} for {gold[item]['answer']})")
            if row.get("grading") in NOT_GRADED_BY_PIPELINE:
                unscored += 1
                continue
            verdict = score(row["prediction"], gold[item]["answer"])
            if verdict is None:
                undecided += 1
                continue
            rescored += 1
            if row.get("value") != (1.0 if verdict else 0.0):
                contradicted.append(f"{item} (recorded {short(row.get('value'), 12)}, re-scored {float(verdict)})")
        if unknown:
            issues.append(Issue("REPRO-1", INVALID, f"{name}: {len(unknown)} item(s) are not items of the evaluation data "
                                                    f"file (first: {short(unknown[0], 40)})"))
        if wrong_reference:
            issues.append(Issue("REPRO-1", INVALID, f"{name}: {len(wrong_reference)} reference(s) are not the data file's "
                                                    f"gold answer (first: {wrong_reference[0]})"))
        if contradicted:
            issues.append(Issue("REPRO-1", INVALID, f"{name}: the grader's own scorer contradicts {len(contradicted)} "
                                                    f"recorded value(s) (first: {contradicted[0]})"))
    notes.append(f"REPRO-1: {rescored} retained prediction(s) of {len(files)} file(s) re-scored against the data file's "
                 f"gold answers; {undecided} the grader's parser cannot decide, {unscored} recorded as not graded")
    return issues


@rule("REPRO-2", "generation_audit", "invalid|unverified", "audited generated tasks re-solved from their text by the grader's own re-solver")
def REPRO_2(ctx: GradeContext, notes: list[str]) -> list[Issue]:
    record = as_dict(ctx.result.get("generation_audit"))
    samples = [s for s in as_list(record.get("samples")) if isinstance(s, dict)]
    if not samples:
        return []
    tasks = ctx.evidence.jsonl(record.get("dataset_file")) if ctx.evidence.usable(record.get("dataset_file")) else None
    if tasks is None:
        return [Issue("REPRO-2", UNVERIFIED, "the audited tasks' file is not retained inline, so they cannot be re-solved")]
    by_id = {str(task.get("item_id")): task for task in tasks}
    listed = {str(as_dict(d).get("item_id")) for d in as_list(record.get("disagreements"))}
    issues: list[Issue] = []
    solved = ill_posed = unread = 0
    for sample in samples:
        item = str(sample.get("item_id"))
        task = by_id.get(item)
        if task is None:
            continue  # GA-5/GA-6 grade a sample that names no task
        resolution = resolve(str(task.get("prompt", "")))
        if resolution.status == SOLVED:
            solved += 1
            problems = []
            if not _same_answer(task.get("answer"), resolution.answer):
                problems.append(f"the label {short(task.get('answer'), 16)}")
            if not _same_answer(sample.get("independent_answer"), resolution.answer):
                problems.append(f"the recorded re-solver's answer {short(sample.get('independent_answer'), 16)}")
            if problems and item not in listed:
                issues.append(Issue("REPRO-2", INVALID, f"{item}: the task's text gives {resolution.answer} "
                                                        f"({resolution.reasoning}), not {' nor '.join(problems)}, "
                                                        "and the audit lists no disagreement"))
        elif resolution.status == ILL_POSED:
            ill_posed += 1
            if item not in listed:
                issues.append(Issue("REPRO-2", INVALID, f"{item}: the task is ill-posed ({resolution.reasoning}), yet it "
                                                        f"is accepted with label {short(task.get('answer'), 16)} and "
                                                        "the audit lists no disagreement"))
        else:
            unread += 1
    notes.append(f"REPRO-2: {len(samples)} audited task(s) re-solved from their text by the grader's own re-solver: "
                 f"{solved} solved, {ill_posed} ill-posed, {unread} not in the forms it reads")
    return issues
