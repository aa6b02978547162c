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
from honest_task_phrasings import HONEST
from reexecution_forgeries import generated_label_and_resolver_answer_changed

import flows.validate as validate_cli
from experiment.contract.spec import load_spec
from experiment.grading import grade_record
from experiment.grading.common import INVALID, PASS, CategoryGrade, Grade
from experiment.grading.reproduce import apply, reproduce
from experiment.grading.reproduce.answers import evaluation_items, last_boxed, number_of, score
from experiment.grading.reproduce.resolver import ILL_POSED, NOT_UNDERSTOOD, SOLVED, Resolution, resolve
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
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("graded against "))
    assert reproduced == 1 and lines[at - 1].startswith("reproduced: ") and lines[at + 1].startswith("RED: ")
    assert plain in (0, 1, 3)


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


# ---- what the re-execution says and where (exact sentences: the counts are the measurement)


@pytest.mark.parametrize("word,singular", [
    ("berries", "berry"), ("boxes", "box"), ("watches", "watch"), ("dishes", "dish"), ("glasses", "glass"),
    ("glass", "glass"), ("apples", "apple"), ("pies", "pie"), ("us", "us"), ("fish", "fish"), ("flies", "fly"),
    ("ties", "tie"), ("ies", "ie"), ("ads", "ad"), ("s", "s")])
def test_two_mentions_of_one_thing_compare_alike(word, singular):
    from experiment.grading.reproduce.resolver import _singular

    assert _singular(word) == singular


@pytest.mark.parametrize("text", [
    "Ana has 3 pens and 4 cups and 5 hats. How many pens does Ana have?",  # three numbers
    "Ana has 3 pens. It is sunny. It is warm. Ben gives her 4 more. How many pens does Ana have?",  # four sentences
    "Ana has 3 pens and 4 cups. How many pens and how many cups are there?",  # two questions
    "Ana has 3 pens and 4 cups. How many pens will she have in 2 years?",  # a number in the question
    "Ana has 3 pens and twice as many cups. How many cups does Ana have?",  # a spelled-out relation
    "Ana has 3 pens and 4 cups.",  # no question
    "Ana has pens. How many pens does Ana have?",  # no number
    "Ana had 9 pens and 4 cups. How many more pens does Ana have?"])  # a difference without a removal
def test_a_text_outside_the_forms_it_reads_is_not_answered(text):
    assert resolve(text).status == NOT_UNDERSTOOD


@pytest.mark.parametrize("text,answer", [
    ("What is 7 - 9?", "-2"), ("What is 6 * 7?", "42"), ("What is 6 x 7?", "42"), ("What is 7 / 2?", "3.5"),
    ("Ana had 9 pens. She lost 4. How many pens does Ana have now?", "5"),
    ("Ana has 9 pens. Ben gives her 4 more. How many pens does Ana have now?", "13"),
    ("Ana has 3 boxes with 4 pens in each box. How many pens are there?", "12"),
    ("Ana has 3 pens and 4 cups. How many things does Ana have altogether?", "7"),
    ("There are 3 blue balls and 4 red balls. How many red balls are there?", "4"),
    ("There are 3 big red balls and 4 big red balls. How many big red balls are there?", "7")])
def test_each_form_gives_its_operation(text, answer):
    assert (resolve(text).status, resolve(text).answer) == (SOLVED, answer)


@pytest.mark.parametrize("text", [
    "There are 6 books on a shelf and 4 books on the desk. How many books are on the shelf?",  # one place of two
    "There are 5 apples in Tom's box and 3 apples in Anna's box. How many apples are in Anna's box?",
    "Tom has 5 apples. Anna has 3 apples. How many apples does he have?",  # one holder of two
    "Tom has 5 apples. Anna has 3 apples. How many apples does Anna have?",
    "Tom shares 12 apples among 3 friends. How many apples does each friend get?",  # a share it does not divide
    "Ben divides 18 marbles equally into 3 bags. How many marbles does each bag hold?"])
def test_a_text_whose_sum_would_not_be_its_answer_is_not_answered(text):
    """Each of these was answered with the sum of its numbers, or called ill-posed, before: an honest task REPRO-2
    would have graded invalid."""
    assert resolve(text).status == NOT_UNDERSTOOD


@pytest.mark.parametrize("text,answer", [
    ("Maria has 6 bottles of water. She drinks 2. How many bottles of water does Maria have now?", "4"),
    ("Anna buys 3 bags. Each bag has 4 oranges. How many oranges does Anna buy?", "12"),
    ("Tom has 5 apples. Anna has 3 apples. How many apples do they have in total?", "8"),
    ("There are 5 apples in a box. Tom takes 2 out. How many apples are left in the box?", "3")])
def test_a_removal_by_drinking_and_a_rate_stated_for_each_are_read(text, answer):
    assert (resolve(text).status, resolve(text).answer) == (SOLVED, answer)


def test_no_honest_task_of_any_phrasing_is_answered_wrongly_or_called_ill_posed():
    """The grader's re-solver may leave a text unread (counted in the note), never contradict a right label:
    tests/honest_task_phrasings.py, each with its hand-read answer."""
    read = [(text, answer, resolve(text)) for tasks in HONEST.values() for text, answer in tasks]
    wrong = [(text, answer, r.status, r.answer) for text, answer, r in read
             if r.status == ILL_POSED or r.status == SOLVED and r.answer != str(answer)]
    assert wrong == []
    assert sum(r.status == SOLVED for _, _, r in read) >= len(read) // 3


def test_division_by_zero_is_ill_posed():
    assert resolve("What is 4 / 0?").status == ILL_POSED


def test_gold_answers_come_from_the_gsm8k_file_when_the_spec_names_no_path():
    from tinker_cookbook.recipes.math_rl.math_env import extract_gsm8k_final_answer

    rows = [json.loads(line) for line in (REPO_ROOT / "data/gsm8k/test.jsonl").read_text().splitlines()]
    gold = evaluation_items({"eval": {"benchmark": "GSM8K test"}})
    assert list(gold)[:2] == ["gsm8k-test-0", "gsm8k-test-1"] and len(gold) == len(rows)
    assert [gold[f"gsm8k-test-{i}"]["answer"] for i in range(len(rows))] == [
        extract_gsm8k_final_answer(row["answer"]).replace(",", "") for row in rows]
    assert gold["gsm8k-test-0"]["question"] == rows[0]["question"]


def test_the_notes_count_what_was_re_run(graded_record):
    spec = _wiring_spec()
    result = _edit_rows(_text_record(spec), lambda rows: rows[2].update(prediction="\\boxed{2+3}") or
                        rows[3].update(grading="timeout"))
    grade = Grade(categories={name: CategoryGrade(name, PASS) for name in ("evaluator", "generation_audit")}, spec=spec)
    reproduction = reproduce(grade, result)
    assert reproduction.notes == ["REPRO-1: 2 retained prediction(s) of 1 file(s) re-scored against the data file's gold "
                                  "answers; 1 the grader's parser cannot decide, 1 recorded as not graded"]
    paired, _ = graded_record("paired")
    notes = reproduce(grade_record(paired), paired).notes
    sampled = len(paired["generation_audit"]["samples"])
    assert notes[-1] == (f"REPRO-2: {sampled} audited task(s) re-solved from their text by the grader's own re-solver: "
                         f"{sampled} solved, 0 ill-posed, 0 not in the forms it reads")


def test_findings_and_notes_join_their_category_and_a_category_the_spec_opts_out_of_stays_so():
    from experiment.grading.common import Issue, NOT_APPLICABLE
    from experiment.grading.reproduce import Reproduction

    grade = Grade(categories={"evaluator": CategoryGrade("evaluator", PASS),
                              "generation_audit": CategoryGrade("generation_audit", NOT_APPLICABLE)})
    apply(grade, Reproduction(issues=[Issue("REPRO-1", INVALID, "a"), Issue("REPRO-2", INVALID, "b")],
                              notes=["REPRO-1: counted", "REPRO-2: counted"]))
    assert (grade.categories["evaluator"].status, grade.categories["evaluator"].notes) == (INVALID, ["REPRO-1: counted"])
    assert [i.rule for i in grade.categories["evaluator"].issues] == ["REPRO-1"]
    assert grade.categories["generation_audit"].status == NOT_APPLICABLE
    assert (grade.categories["generation_audit"].issues, grade.categories["generation_audit"].notes) == ([], [])


def test_a_record_too_malformed_to_re_run_is_invalid_under_the_rule_not_a_traceback():
    from experiment.grading.reproduce import _run

    def REPRO_2(ctx, notes):  # noqa: N802 - named as the re-execution names its checks
        raise KeyError("a missing key")

    assert [(issue.rule, issue.status) for issue in _run(REPRO_2, None, [])] == [("REPRO-2", INVALID)]


def _audited(tasks: list[dict], samples: list[dict], disagreements: list[str], retained: bool = True) -> dict:
    content = "".join(json.dumps(task) + "\n" for task in tasks)
    files = [{"name": "tasks.jsonl", "kind": "generated_tasks", "content": content,
              "sha256": hashlib.sha256(content.encode()).hexdigest()}] if retained else []
    return {"generation_audit": {"dataset_file": "tasks.jsonl", "samples": samples,
                                 "disagreements": [{"item_id": item} for item in disagreements]},
            "evidence": {"files": files}}


WELL_POSED = "Ana has 3 pens and 4 pens. How many pens does Ana have?"  # 7
ILL_POSED_TEXT = "Ana has 3 pens and 4 cups. How many hats does Ana have?"


def test_each_audited_task_is_judged_by_its_text_unless_the_audit_lists_it():
    tasks = [{"item_id": "right", "prompt": WELL_POSED, "answer": "7"},
             {"item_id": "wrong-listed", "prompt": WELL_POSED, "answer": "8"},
             {"item_id": "ill", "prompt": ILL_POSED_TEXT, "answer": "7"},
             {"item_id": "ill-listed", "prompt": ILL_POSED_TEXT, "answer": "7"},
             {"item_id": "unread", "prompt": "Write a poem.", "answer": "7"},
             {"item_id": "resolver-wrong", "prompt": WELL_POSED, "answer": "7.0"}]
    samples = [{"item_id": task["item_id"], "independent_answer": "7"} for task in tasks]
    samples[-1]["independent_answer"] = "6"
    samples.append({"item_id": "no-such-task", "independent_answer": "1"})
    grade = Grade(categories={name: CategoryGrade(name, PASS) for name in ("evaluator", "generation_audit")})
    reproduction = reproduce(grade, _audited(tasks, samples, ["wrong-listed", "ill-listed"]))
    assert [(issue.rule, issue.status, issue.message.split(":")[0]) for issue in reproduction.issues] == [
        ("REPRO-2", INVALID, "ill"), ("REPRO-2", INVALID, "resolver-wrong")]
    assert reproduction.issues[1].message.endswith("(3, 4)), not the recorded re-solver's answer '6', and the audit "
                                                   "lists no disagreement")
    assert reproduction.notes == ["REPRO-2: 7 audited task(s) re-solved from their text by the grader's own re-solver: "
                                  "3 solved, 2 ill-posed, 1 not in the forms it reads"]


def test_a_wrong_label_and_a_wrong_resolver_answer_are_both_named():
    tasks = [{"item_id": "both", "prompt": WELL_POSED, "answer": "9"}]
    grade = Grade(categories={name: CategoryGrade(name, PASS) for name in ("evaluator", "generation_audit")})
    reproduction = reproduce(grade, _audited(tasks, [{"item_id": "both", "independent_answer": "9"}], []))
    assert [issue.message for issue in reproduction.issues] == [
        "both: the task's text gives 7 (collection: sum of the pens counted (3, 4)), not the label '9' nor the recorded "
        "re-solver's answer '9', and the audit lists no disagreement"]


def test_audited_tasks_not_retained_inline_are_unverified():
    grade = Grade(categories={name: CategoryGrade(name, PASS) for name in ("evaluator", "generation_audit")})
    reproduction = reproduce(grade, _audited([], [{"item_id": "a", "independent_answer": "1"}], [], retained=False))
    assert [(issue.rule, issue.status) for issue in reproduction.issues] == [("REPRO-2", "unverified")]
    assert reproduce(grade, _audited([], [], [])).issues == []


@pytest.mark.parametrize("a,b,same", [("7", "7.0", True), ("1,000", "1000", True), ("blue", " blue.", True),
                                      ("blue", "red", False), ("7", "blue", False), ("None", "None", True),
                                      ("b", "a", False), ("a", "b", False)])
def test_two_answers_are_the_same_by_number_else_by_text(a, b, same):
    from experiment.grading.reproduce.offline import _same_answer

    assert _same_answer(a, b) is same


# ---- the parser's edges, the data file's rows, and where findings, notes and time are said


@pytest.mark.parametrize("text,boxed", [("\\boxed{5}", "5"), ("no box: {1}{2}", None), ("\\boxed{a~b}", "a~b"),
                                        ("\\boxed{café}", "café")])
def test_a_boxed_answer_at_the_start_or_holding_characters_past_the_brace_is_read_whole(text, boxed):
    assert last_boxed(text) == boxed


def test_commas_that_do_not_group_thousands_name_no_number():
    assert number_of("1,23") is None and number_of("12,3456") is None
    assert number_of("1,234") == 1234


@pytest.mark.parametrize("prediction,gold,verdict", [
    ("\\boxed{12}", "7", False), ("\\boxed{3}", "7", False), ("\\boxed{apple}", "banana", None),
    ("\\boxed{banana}", "apple", None), ("\\boxed{\\text{blue}}", "blue.", True)])
def test_a_number_or_text_on_either_side_of_the_gold_is_not_a_match(prediction, gold, verdict):
    assert score(prediction, gold) is verdict


def _data_spec(tmp_path, monkeypatch, lines: list[str]) -> dict:
    """A spec naming a data file of its own (an allowed data directory added through RX_DATA_DIRS)."""
    monkeypatch.setenv("RX_DATA_DIRS", str(tmp_path))
    path = tmp_path / "eval.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    return {"eval": {"path": str(path)}}


def test_gold_answers_come_from_the_data_file_the_spec_names(tmp_path, monkeypatch):
    spec = _data_spec(tmp_path, monkeypatch, [
        json.dumps({"id": "q1", "question": "How many?", "answer": "Two and two. #### 1,234"}),
        "",
        json.dumps({"id": "q2", "question": "And now?", "answer": "42", "solution": "a key the grader does not read"})])
    assert evaluation_items(spec) == {"q1": {"question": "How many?", "answer": "1234"},
                                      "q2": {"question": "And now?", "answer": "42"}}


@pytest.mark.parametrize("lines,said", [
    ([json.dumps({"id": "q1", "question": "Q", "answer": "1"}), "{not json"], "eval.jsonl:2: not JSON"),
    ([json.dumps({"id": "q1", "question": "Q", "answer": "1"}), "[1]"], "eval.jsonl:2: not a JSON object"),
    ([json.dumps({"id": "q1", "question": "Q"})], "eval.jsonl: a row lacks id, question or answer")])
def test_a_data_file_row_the_grader_cannot_use_is_refused_by_its_line(tmp_path, monkeypatch, lines, said):
    from experiment.data import DataError

    with pytest.raises(DataError) as refused:
        evaluation_items(_data_spec(tmp_path, monkeypatch, lines))
    assert str(refused.value).startswith(said)


def test_an_unreadable_data_file_leaves_the_re_scoring_unverified(tmp_path, monkeypatch):
    spec = _wiring_spec()
    grade = Grade(categories={name: CategoryGrade(name, PASS) for name in ("evaluator", "generation_audit")},
                  spec=types.SimpleNamespace(to_dict=lambda: _data_spec(tmp_path, monkeypatch, ["{torn"])))
    reproduction = reproduce(grade, _text_record(spec))
    assert [(issue.rule, issue.status) for issue in reproduction.issues] == [("REPRO-1", "unverified")]
    assert reproduction.issues[0].message.startswith("the evaluation data file the spec names cannot be read (")


def test_every_row_is_re_scored_after_an_unknown_item_and_an_unscored_row():
    spec = _wiring_spec()

    def edit(rows):
        rows[0]["item_id"] = "arith-test-999999"
        rows[1]["grading"] = "timeout"
        rows[3]["value"] = 1.0  # a wrong answer recorded right, after both

    messages = [issue.message for issue in
                reproduce(Grade(categories={n: CategoryGrade(n, PASS) for n in ("evaluator", "generation_audit")},
                                spec=spec), _edit_rows(_text_record(spec), edit)).issues]
    assert len(messages) == 2
    assert messages[0].startswith("predictions-base.jsonl: 1 item(s) are not items of the evaluation data file")
    assert messages[1].startswith("predictions-base.jsonl: the grader's own scorer contradicts 1 recorded value(s)")


def test_a_wrong_reference_is_named_with_its_text_cut_to_twenty_characters():
    spec = _wiring_spec()
    long_reference = "9" * 30

    def edit(rows):
        rows[0]["reference"] = long_reference

    record = _edit_rows(_text_record(spec), edit)
    item = json.loads(record["evidence"]["files"][0]["content"].splitlines()[0])["item_id"]
    gold = evaluation_items(spec.to_dict())[item]["answer"]
    grade = Grade(categories={n: CategoryGrade(n, PASS) for n in ("evaluator", "generation_audit")}, spec=spec)
    messages = [issue.message for issue in reproduce(grade, record).issues]
    shown = repr(long_reference)[:17] + "..."  # common.short: at most 20 characters of the value's repr
    assert messages == [f"predictions-base.jsonl: 1 reference(s) are not the data file's gold answer "
                        f"(first: {item} ({shown} for {gold}))"]


def test_a_predictions_file_named_twice_is_re_scored_once_and_non_text_predictions_not_at_all():
    spec = _wiring_spec()
    record = _text_record(spec)
    record["evaluation"]["scores"].append({"arm": "base", "predictions_ref": "predictions-base.jsonl"})
    nll = "".join(json.dumps({"item_id": f"x{i}", "prediction": {"nll_sum": 1.0, "n_tokens": 2}, "value": 0.5}) + "\n"
                  for i in range(2))
    record["evaluation"]["scores"].append({"arm": "tuned", "predictions_ref": "predictions-tuned.jsonl"})
    record["evidence"]["files"].append({"name": "predictions-tuned.jsonl", "kind": "predictions", "content": nll,
                                        "sha256": hashlib.sha256(nll.encode()).hexdigest()})
    grade = Grade(categories={n: CategoryGrade(n, PASS) for n in ("evaluator", "generation_audit")}, spec=spec)
    reproduction = reproduce(grade, record)
    assert reproduction.issues == []
    assert reproduction.notes == ["REPRO-1: 4 retained prediction(s) of 1 file(s) re-scored against the data file's "
                                  "gold answers; 0 the grader's parser cannot decide, 0 recorded as not graded"]


def test_the_service_checks_read_the_run_directorys_events(tmp_path):
    events = [{"event": "run_started", "tokenizer_id": "tok"}, {"event": "step", "step": 0}]
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(event) + "\n" for event in events))
    seen = []

    def REPRO_3(ctx, session, notes):  # noqa: N802 - FAKE service check: records what it was handed
        seen.append(ctx.events)
        return []

    grade = Grade(categories={name: CategoryGrade(name, PASS) for name in ("evaluator", "generation_audit")})
    reproduce(grade, {}, tmp_path, types.SimpleNamespace(checks=(REPRO_3,), calls=0))
    assert seen == [events]


def test_a_failing_check_is_named_with_its_error_cut_to_eighty_characters():
    message = "m" * 200

    def REPRO_3(ctx, session, notes):  # noqa: N802 - FAKE: a service that refuses with a long message
        raise ConnectionError(message)

    def REPRO_4(ctx, session, notes):  # noqa: N802 - FAKE: a record too malformed for the check
        raise KeyError(message)

    shown = repr(message)[:77] + "..."
    grade = Grade(categories={name: CategoryGrade(name, PASS) for name in ("evaluator", "generation_audit")})
    issues = reproduce(grade, {}, None, types.SimpleNamespace(checks=(REPRO_3, REPRO_4), calls=2)).issues
    assert [issue.message for issue in issues] == [
        f"the service failed while REPRO-3 re-scored the sample (ConnectionError: {shown})",
        f"the record has an unexpected shape, so REPRO-4 cannot be re-run (KeyError: {repr(repr(message))[:77]}...)"]


def test_the_time_a_reproduction_took_is_the_clocks_difference(monkeypatch):
    import experiment.grading.reproduce as reproduction_module

    readings = iter([100.0])
    monkeypatch.setattr(reproduction_module.time, "perf_counter", lambda: next(readings, 250.5))  # FAKE clock
    grade = Grade(categories={name: CategoryGrade(name, PASS) for name in ("evaluator", "generation_audit")})
    reproduction = reproduce(grade, {})
    assert (reproduction.seconds, reproduction.service_calls) == (150.5, 0)  # offline: no call to a service


def test_an_empty_reproduction_says_nothing_ran():
    from experiment.grading.reproduce import Reproduction

    empty = Reproduction()
    assert (empty.issues, empty.notes, empty.service_calls, empty.seconds) == ([], [], 0, 0.0)


def test_findings_join_a_category_in_any_status_but_not_applicable():
    from experiment.grading.common import NOT_APPLICABLE, UNVERIFIED, Issue
    from experiment.grading.reproduce import Reproduction

    grade = Grade(categories={"evaluator": CategoryGrade("evaluator", INVALID, [Issue("EVAL-2", INVALID, "x")]),
                              "generation_audit": CategoryGrade("generation_audit", NOT_APPLICABLE)})
    apply(grade, Reproduction(issues=[Issue("REPRO-2", INVALID, "b"), Issue("REPRO-1", UNVERIFIED, "a")],
                              notes=["REPRO-2: counted", "REPRO-1: counted"]))
    assert [i.rule for i in grade.categories["evaluator"].issues] == ["EVAL-2", "REPRO-1"]
    assert grade.categories["evaluator"].notes == ["REPRO-1: counted"]
    assert grade.categories["generation_audit"].issues == []


def test_a_note_joins_a_verified_category_without_findings():
    from experiment.grading.reproduce import Reproduction

    grade = Grade(categories={"evaluator": CategoryGrade("evaluator", PASS),
                              "generation_audit": CategoryGrade("generation_audit", PASS)})
    apply(grade, Reproduction(notes=["REPRO-1: 4 re-scored", "REPRO-2: 2 re-solved"]))
    assert (grade.categories["evaluator"].status, grade.categories["evaluator"].notes) == (PASS, ["REPRO-1: 4 re-scored"])
    assert grade.categories["generation_audit"].notes == ["REPRO-2: 2 re-solved"]


def _rescored_messages(edit) -> tuple[list[str], list[str]]:
    """The REPRO-1 messages of the wiring record edited, and its four items in row order."""
    spec = _wiring_spec()
    record = _edit_rows(_text_record(spec), edit)
    grade = Grade(categories={n: CategoryGrade(n, PASS) for n in ("evaluator", "generation_audit")}, spec=spec)
    return [issue.message for issue in reproduce(grade, record).issues], sorted(evaluation_items(spec.to_dict()))[:4]


def test_items_outside_the_data_file_are_counted_and_the_first_named_cut_to_forty_characters():
    first = "not-an-item-" + "x" * 60

    def edit(rows):
        rows[0]["item_id"], rows[1]["item_id"] = first, "not-an-item-b"

    messages, _ = _rescored_messages(edit)
    assert messages == ["predictions-base.jsonl: 2 item(s) are not items of the evaluation data file "
                        f"(first: {repr(first)[:37]}...)"]


def test_wrong_references_are_counted_and_the_first_named():
    def edit(rows):
        rows[0]["reference"], rows[1]["reference"] = "-1", "-2"

    messages, items = _rescored_messages(edit)
    gold = evaluation_items(_wiring_spec().to_dict())
    assert messages == ["predictions-base.jsonl: 2 reference(s) are not the data file's gold answer "
                        f"(first: {items[0]} ('-1' for {gold[items[0]]['answer']}))"]


def test_values_recorded_too_low_or_too_high_are_contradicted_and_the_first_named():
    """Row 0 answers right but records 0.123456789012; row 1 answers wrong but records 1.0."""
    def edit(rows):
        rows[0]["value"], rows[1]["value"] = 0.123456789012, 1.0

    messages, items = _rescored_messages(edit)
    assert messages == ["predictions-base.jsonl: the grader's own scorer contradicts 2 recorded value(s) "
                        f"(first: {items[0]} (recorded 0.1234567..., re-scored 1.0))"]
    messages, items = _rescored_messages(lambda rows: rows[0].update(value=0.0))
    assert messages == ["predictions-base.jsonl: the grader's own scorer contradicts 1 recorded value(s) "
                        f"(first: {items[0]} (recorded 0.0, re-scored 1.0))"]


def test_audited_tasks_after_a_sample_naming_no_task_are_re_solved():
    tasks = [{"item_id": "wrong", "prompt": WELL_POSED, "answer": "8"}]
    samples = [{"item_id": "no-such-task", "independent_answer": "1"}, {"item_id": "wrong", "independent_answer": "7"}]
    grade = Grade(categories={name: CategoryGrade(name, PASS) for name in ("evaluator", "generation_audit")})
    reproduction = reproduce(grade, _audited(tasks, samples, []))
    assert [issue.message.split(":")[0] for issue in reproduction.issues] == ["wrong"]


def test_long_labels_and_answers_are_named_cut_to_sixteen_characters():
    label, answer = "1234567890123456789", "9876543210987654321"
    tasks = [{"item_id": "wrong", "prompt": WELL_POSED, "answer": label},
             {"item_id": "ill", "prompt": ILL_POSED_TEXT, "answer": label}]
    samples = [{"item_id": "wrong", "independent_answer": answer}, {"item_id": "ill", "independent_answer": answer}]
    grade = Grade(categories={name: CategoryGrade(name, PASS) for name in ("evaluator", "generation_audit")})
    messages = [issue.message for issue in reproduce(grade, _audited(tasks, samples, [])).issues]
    assert messages == [
        "wrong: the task's text gives 7 (collection: sum of the pens counted (3, 4)), not the label '123456789012... "
        "nor the recorded re-solver's answer '987654321098..., and the audit lists no disagreement",
        "ill: the task is ill-posed (collection: the text counts no hats), yet it is accepted with label "
        "'123456789012... and the audit lists no disagreement"]


@pytest.mark.parametrize("text,status,answer,reasoning", [
    ("What is 8 / -2?", SOLVED, "-4", "arithmetic: what is 8 / -2?"),
    ("What is 6 × 7?", SOLVED, "42", "arithmetic: what is 6 × 7?"),
    ("How many pens are there?", NOT_UNDERSTOOD, None, "no target or no stated number"),
    ("Ana has 3 pens.", NOT_UNDERSTOOD, None, "no 'how many' question"),
    ("Ana has 3 pens. How many pens does Ana have?", NOT_UNDERSTOOD, None,
     "not a two-number problem of the forms it reads"),
    ("Ana has 3 pens and 4 cups. How many small things does Ana have?", SOLVED, "7",
     "collection: sum of the small things counted (3, 4)")])
def test_the_resolution_and_its_reasoning_at_the_edges_of_each_form(text, status, answer, reasoning):
    assert resolve(text) == Resolution(status, answer, reasoning)
