"""`flows.validate --reproduce` without a service (experiment/grading/reproduce): the grader's own scorer on retained
predictions (REPRO-1) and its own re-solver on audited generated tasks (REPRO-2), on records built here.

The service half (REPRO-3, REPRO-4) needs checkpoints a real run saved: tests/e2e/test_reproduce_rehearsals.py.
"""

from __future__ import annotations

import copy
import hashlib
import json
import types

import pytest
from reexecution_forgeries import generated_label_and_resolver_answer_changed

import flows.validate as validate_cli
from experiment.contract.spec import load_spec
from experiment.grading import grade_record
from experiment.grading.common import INVALID, PASS, CategoryGrade, Grade
from experiment.grading.reproduce import apply, reproduce
from experiment.grading.reproduce.answers import evaluation_items, last_boxed, number_of, score
from experiment.grading.reproduce.resolver import ILL_POSED, NOT_UNDERSTOOD, SOLVED, resolve
from suite import REPO_ROOT, SELFGEN_SPEC

# ---- the parser and scorer


@pytest.mark.parametrize("text,boxed", [
    ("so \\boxed{12}.", "12"), ("\\boxed{1} then \\boxed{\\frac{3}{4}}", "\\frac{3}{4}"), ("no answer", None),
    ("\\boxed{unclosed", None), ("\\boxed{{nested}}", "{nested}")])
def test_the_last_boxed_answer_is_read_with_its_braces_matched(text, boxed):
    assert last_boxed(text) == boxed


@pytest.mark.parametrize("text,number", [
    ("1,234", 1234), ("$12", 12), ("-3.50", -3.5), ("\\frac{3}{4}", 0.75), ("7/2", 3.5), ("\\text{12}", 12),
    ("12 apples", 12), ("12.", 12), ("x + 1", None), ("", None)])
def test_an_answer_names_its_number_exactly(text, number):
    assert number_of(text) == number


@pytest.mark.parametrize("prediction,gold,verdict", [
    ("\\boxed{18}", "18", True), ("\\boxed{18.0}", "18", True), ("\\boxed{1,800}", "1800", True),
    ("\\boxed{17}", "18", False), ("18", "18", False), ("\\boxed{x+1}", "18", None),
    ("\\boxed{none}", "18", False)])
def test_the_scorer_decides_or_says_it_cannot(prediction, gold, verdict):
    assert score(prediction, gold) is verdict


# ---- the re-solver


def test_the_resolver_solves_every_task_of_the_embedded_arithmetic_family_from_its_text():
    rows = [json.loads(line) for line in (REPO_ROOT / "embedded_tinker/tasks/data/test.jsonl").read_text().splitlines()]
    assert [row["id"] for row in rows if resolve(row["question"]).answer != row["answer"]] == []


def test_the_resolver_claims_no_answer_on_gsm8k_test_problems_it_does_not_read():
    """GSM8K's 1,319 test problems are outside its forms: it answers none wrongly (and calls none ill-posed)."""
    rows = [json.loads(line) for line in (REPO_ROOT / "data/gsm8k/test.jsonl").read_text().splitlines()]
    assert {resolve(row["question"]).status for row in rows} == {NOT_UNDERSTOOD}


@pytest.mark.parametrize("text,status,answer", [
    ("There are 7 apples in a crate and 2 toy cars on the shelf. How many toy cars are there?", SOLVED, "2"),
    ("Ivan has 40 flowers. He gives 1 to Yuki. How many apples does Ivan have left?", ILL_POSED, None),
    ("Maria buys 3 bags with 8 flowers in each bag. How many balloons does Maria buy?", ILL_POSED, None),
    ("Maria buys 3 bags with 8 flowers in each bag. How many flowers does Maria buy?", SOLVED, "24"),
    ("What is 4 + 5?", SOLVED, "9")])
def test_the_resolver_reads_the_objects_a_task_counts(text, status, answer):
    """issue 45, item 8: "7 apples in a crate and 2 toy cars ... how many toy cars" is 2, whatever a template says."""
    resolution = resolve(text)
    assert (resolution.status, resolution.answer) == (status, answer)


# ---- REPRO-1: retained predictions re-scored against the data file


def _wiring_spec():
    return load_spec(SELFGEN_SPEC, rehearse=True, rehearsal_scale="wiring")


def _text_record(spec) -> dict:
    """A RESULT with one text evaluator's predictions retained inline: 4 items of the spec's data file, half right."""
    gold = evaluation_items(spec.to_dict())
    items = sorted(gold)[:4]
    rows = [{"item_id": item, "arm": "base", "metric": "accuracy", "evaluator_id": "e" * 64, "seed": 0,
             "checkpoint": "base", "grading": "graded", "reference": gold[item]["answer"],
             "prediction": f"\\boxed{{{gold[item]['answer'] if index % 2 == 0 else 'no'}}}",
             "value": 1.0 if index % 2 == 0 else 0.0} for index, item in enumerate(items)]
    content = "".join(json.dumps(row) + "\n" for row in rows)
    return {"evaluation": {"scores": [{"arm": "base", "predictions_ref": "predictions-base.jsonl"}]},
            "evidence": {"files": [{"name": "predictions-base.jsonl", "kind": "predictions", "content": content,
                                    "sha256": hashlib.sha256(content.encode()).hexdigest()}]}}


def _edit_rows(result: dict, edit) -> dict:
    result = copy.deepcopy(result)
    entry = result["evidence"]["files"][0]
    rows = [json.loads(line) for line in entry["content"].splitlines()]
    edit(rows)
    entry["content"] = "".join(json.dumps(row) + "\n" for row in rows)
    entry["sha256"] = hashlib.sha256(entry["content"].encode()).hexdigest()
    return result


def _reproduced(result: dict, spec) -> list[tuple[str, str]]:
    grade = Grade(categories={name: CategoryGrade(name, PASS) for name in ("evaluator", "generation_audit")}, spec=spec)
    return [(issue.rule, issue.status) for issue in reproduce(grade, result).issues]


def _flip_first_wrong_value(rows):
    rows[1]["value"] = 1.0


def _reference_to_the_wrong_answer(rows):
    rows[1]["reference"], rows[1]["prediction"], rows[1]["value"] = "123456", "\\boxed{123456}", 1.0


def _item_not_in_the_data_file(rows):
    rows[0]["item_id"] = "arith-test-999999"


def test_honest_text_predictions_re_score_as_recorded():
    spec = _wiring_spec()
    assert _reproduced(_text_record(spec), spec) == []


@pytest.mark.parametrize("edit", [_flip_first_wrong_value, _reference_to_the_wrong_answer, _item_not_in_the_data_file])
def test_a_prediction_row_the_data_file_or_the_scorer_contradicts_is_invalid(edit):
    spec = _wiring_spec()
    assert set(_reproduced(_edit_rows(_text_record(spec), edit), spec)) == {("REPRO-1", INVALID)}


def test_without_a_spec_the_predictions_are_unverified():
    assert _reproduced(_text_record(_wiring_spec()), None) == [("REPRO-1", "unverified")]


# ---- REPRO-2: the label forgery of issue 45 item 3, on the grading tests' self-generated record


def _selfgen_reproduced(result: dict) -> tuple[Grade, list]:
    grade = grade_record(result)
    reproduction = reproduce(grade, result)
    return grade, [issue for issue in reproduction.issues if issue.rule == "REPRO-2"]


def test_a_changed_label_with_its_resolver_answer_grades_as_the_honest_record_and_re_solving_catches_it(graded_record):
    honest, _ = graded_record("paired")
    forged = copy.deepcopy(honest)
    item = generated_label_and_resolver_answer_changed(forged, lambda text: resolve(text).answer)
    honest_grade, honest_findings = _selfgen_reproduced(honest)
    forged_grade, forged_findings = _selfgen_reproduced(forged)
    # without --reproduce the forgery grades exactly as the honest record (the attack succeeds)
    assert forged_grade.to_dict() == honest_grade.to_dict()
    assert honest_findings == []
    assert [(issue.rule, issue.status, issue.message.split(":")[0]) for issue in forged_findings] == [
        ("REPRO-2", INVALID, item)]
    apply(forged_grade, reproduce(forged_grade, forged))
    assert forged_grade.categories["generation_audit"].status == INVALID


# ---- the command line


def test_reproduce_on_the_command_line_turns_a_forged_record_red(graded_record, tmp_path, capsys):
    honest, _ = graded_record("paired")
    forged = copy.deepcopy(honest)
    item = generated_label_and_resolver_answer_changed(forged, lambda text: resolve(text).answer)
    path = tmp_path / "result.json"
    path.write_text(json.dumps(forged))
    plain = validate_cli.main([str(path)])
    plain_out = capsys.readouterr().out
    reproduced = validate_cli.main([str(path), "--reproduce"])
    out = capsys.readouterr().out
    assert "generation_audit: verified" in plain_out and item not in plain_out
    assert "generation_audit: invalid" in out and f"REPRO-2: {item}:" in out
    assert reproduced == 1 and out.splitlines()[-2].startswith("reproduced: ") and plain in (0, 1)


@pytest.mark.parametrize("argv,said", [
    (["--backend", "http://127.0.0.1:9"], "only used with --reproduce"),
    (["--reproduce", "--backend", "http://127.0.0.1:9"], "does not answer get_server_capabilities"),
    (["--reproduce", "--backend", "ftp://example"], "backend must be")])
def test_a_backend_that_cannot_serve_the_reproduction_is_bad_input_in_one_line(graded_record, tmp_path, capsys, argv,
                                                                                said):
    result, _ = graded_record("paired")
    path = tmp_path / "result.json"
    path.write_text(json.dumps(result))
    assert validate_cli.main([str(path), *argv]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and said in err and "Traceback" not in err


def test_a_service_that_fails_mid_check_leaves_that_check_unverified_without_a_traceback():
    def REPRO_3(ctx, session, notes):  # noqa: N802 - FAKE: a service that drops the connection mid-sample
        raise ConnectionError("the service closed the connection")

    fake_session = types.SimpleNamespace(checks=(REPRO_3,), calls=3)
    spec = _wiring_spec()
    grade = Grade(categories={name: CategoryGrade(name, PASS) for name in ("evaluator", "generation_audit")}, spec=spec)
    reproduction = reproduce(grade, _text_record(spec), None, fake_session)
    assert [(issue.rule, issue.status) for issue in reproduction.issues] == [("REPRO-3", "unverified")]
    assert reproduction.service_calls == 3
