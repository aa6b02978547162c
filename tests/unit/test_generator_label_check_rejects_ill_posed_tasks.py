"""The generator's own label check (experiment/selfgen/text_label_check.py) rejects ill-posed generated tasks
before training, and the audit's text re-solver (experiment/selfgen/text_resolver.py) catches what it keeps
wrongly (issue 45, item 8).

Measured on tests/fixtures/selfgen_generated_sample.jsonl: 1,600 completions of the local generator at T=1.0
(`python -m tools.sample_selfgen_generator 1600 7 ...`), each parsed as the pipeline parses it, labelled by its
`return a op b`, and put through filters 2 and 3 (the answer in the text; the rehearsal's 8..120 words). Ground
truth is the careful reading of tests/selfgen_ground_truth.py."""

from __future__ import annotations

import ast
import json
import operator

import pytest

from experiment.selfgen import text_label_check
from experiment.selfgen.task_generation import contains_answer, parse_completion, word_count
from experiment.selfgen.text_resolver import read_problem

from selfgen_ground_truth import careful_reading
from suite import REPO_ROOT

SAMPLE = REPO_ROOT / "tests" / "fixtures" / "selfgen_generated_sample.jsonl"
_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}


def _value(node: ast.expr) -> int:
    """A `return a op b` program's value, read (never run): the sandbox's job in the pipeline."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_value(node.left), _value(node.right))
    raise ValueError("not integer arithmetic")


def _label(code: str) -> int | None:
    try:
        solve = ast.parse(code).body[0]
        return _value(solve.body[-1].value)
    except (SyntaxError, ValueError, AttributeError, IndexError):
        return None  # an execution error in the pipeline


@pytest.fixture(scope="module")
def candidates() -> list[dict]:
    """The sample's candidates that pass filters 1-3, with the ground truth's answer ('truth', None: ill-posed)."""
    rows = []
    for line in SAMPLE.read_text().splitlines():
        parsed = parse_completion(json.loads(line)["completion"])
        label = None if parsed.error else _label(parsed.code)
        if label is None or contains_answer(parsed.problem, label) or not 8 <= word_count(parsed.problem) <= 120:
            continue
        truth, _ = careful_reading(parsed.problem)
        rows.append({"problem": parsed.problem, "code": parsed.code, "label": label, "truth": truth,
                     "kept": not text_label_check.problems(parsed.problem, parsed.code, label)})
    return rows


def _wrong(row: dict) -> bool:
    return row["truth"] is None or row["truth"] != row["label"]


def test_most_generated_tasks_are_ill_posed_or_mislabelled_before_the_label_check(candidates):
    assert len(candidates) > 1000
    assert sum(map(_wrong, candidates)) / len(candidates) > 0.9


def test_the_label_check_keeps_few_wrong_tasks(candidates):
    kept = [row for row in candidates if row["kept"]]
    assert len(kept) >= 40
    assert sum(map(_wrong, kept)) / len(kept) < 0.1


def test_the_label_check_rejects_a_right_label_only_when_its_program_is_not_the_texts(candidates):
    """A label the ground truth calls right is rejected only where the program computes it from numbers the text
    does not state (right by accident), or where it is 0 (how many of nothing)."""
    rejected_right = [row for row in candidates if not row["kept"] and not _wrong(row)]
    for row in rejected_right:
        reasons = text_label_check.problems(row["problem"], row["code"], row["label"])
        assert row["label"] == 0 or any("which the text does not state" in reason for reason in reasons), row


def test_the_audit_re_solver_reads_every_generated_text_as_the_ground_truth_does(candidates):
    disagree = [row for row in candidates if read_problem(row["problem"]).answer != (
        None if row["truth"] is None else str(row["truth"]))]
    assert disagree == []


def test_every_wrong_task_the_label_check_keeps_is_a_label_error_of_the_audit(candidates):
    kept_wrong = [row for row in candidates if row["kept"] and _wrong(row)]
    assert kept_wrong  # the filter is not the audit: a few get past it
    assert all(read_problem(row["problem"]).answer != str(row["label"]) for row in kept_wrong)


def test_the_label_check_keeps_most_real_grade_school_problems():
    """The check runs on the real spec's generator too: on the GSM8K test questions with their answers (no program,
    so the text rules and the label's sign only), it rejects few (hypernyms such as "how many animals" after cows
    and chickens, notes after the question)."""
    from experiment.data import load_gsm8k

    items = load_gsm8k("test")
    rejected = [item for item in items if text_label_check.problems(item.question, None, float(item.answer))]
    assert len(items) == 1319 and len(rejected) / len(items) < 0.06


@pytest.mark.parametrize("problem, code, label, reason", [
    ("There are 7 apples in a crate and 2 toy cars on the table. How many toy cars are there altogether?",
     "def solve():\n    return 7 + 2\n", 9, "adds apple and car/toy"),
    ("Yuki has 4 books. She buys 1 more. How many apples does Yuki have now?",
     "def solve():\n    return 4 + 1\n", 5, "asks about apple, which the text never mentions"),
    ("Ravi had 8 stamps. After selling some, Ravi has 6 left. How many stamps did Ravi sell?",
     "def solve():\n    return 62 - 6\n", 56, "uses 62, which the text does not state"),
    ("Lena had 9 marbles and lost 4 of them. How many marbles does Leo have now?",
     "def solve():\n    return 9 - 4\n", 5, "names Leo, which the text does not"),
    ("A basket holds 7 flowers. Mia takes 8 out. How many flowers are left in the basket?",
     "def solve():\n    return 7 - 8\n", -1, "not a whole number above zero"),
    ("Tom has 5 apples. How many apples does Tom have? How many pears?", "def solve():\n    return 5\n", 5,
     "more than one question"),
])
def test_the_label_check_says_why(problem, code, label, reason):
    assert any(reason in found for found in text_label_check.problems(problem, code, label))


@pytest.mark.parametrize("problem, code, label", [
    ("Maria has 37 stickers in her album. Her brother gives her 45 more stickers, and then she buys a pack with 12 "
     "stickers. How many stickers does Maria have now?", "def solve():\n    return 37 + 45 + 12\n", 94),
    ("Sofia buys 8 bags with 2 marbles in each bag. How many marbles does Sofia buy?",
     "def solve():\n    bags = 8\n    per_bag = 2\n    return bags * per_bag\n", 16),
    ("Omar bakes 3 dozen cookies. How many cookies does Omar bake?", "def solve():\n    return 3 * 12\n", 36),
    # a program it cannot read as straight-line arithmetic is held to the text rules and the label only
    ("Ben saves 4 coins a day for 5 days. How many coins does Ben save?",
     "def solve():\n    total = 0\n    for day in range(5):\n        total += 4\n    return total\n", 20),
])
def test_the_label_check_keeps_a_well_posed_task(problem, code, label):
    assert text_label_check.problems(problem, code, label) == []
