"""The grader's own answer parser and scorer, and the gold answers read from the data file a spec names.

Written apart from the pipeline's evaluator (experiment/rl/math_eval.py grades with the cookbook's
`extract_boxed` and sympy `grade_answer`), so a bug there is not repeated here:

- `last_boxed(text)`: the content of the last `\\boxed{...}` (braces matched, nested ones kept), None without one;
- `number_of(text)`: the number an answer names (`1,234`, `$12`, `-3.50`, `\\frac{3}{4}`, `7/2`, `\\text{12}`,
  `12 apples`), as an exact Fraction, None when it names no plain number;
- `score(prediction, gold)`: True or False when the grader can decide (no boxed answer is wrong; two numbers are
  compared exactly; two texts equal after normalising are right; a boxed text without a digit is wrong for a number),
  None when it cannot (a boxed expression with digits that is no plain number and differs from the gold text: the
  pipeline's symbolic grader may rightly accept it).

`gold_answers(spec)` reads the evaluation items' gold answers from the data file the spec names (`eval.path`, rows of
`{id, question, answer}`) or, for GSM8K, from data/gsm8k/test.jsonl (ids `gsm8k-test-<line index>`, the answer is
the text after `####`), never from the record.
"""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

from experiment.data import DEFAULT_GSM8K_DIR, DataError, read_capped_text, resolve_data_path

_BOXED = "\\boxed"
_TEXT_WRAPPERS = re.compile(r"\\(?:text|textbf|mathrm|mbox)\{([^{}]*)\}")
_FRACTION = re.compile(r"^\\d?frac\{(-?\d+)\}\{(-?\d+)\}$")
_PLAIN_FRACTION = re.compile(r"^(-?\d+)\s*/\s*(-?\d+)$")
_DECIMAL = re.compile(r"^-?(?:\d+(?:\.\d*)?|\.\d+)$")
_GROUPED = re.compile(r"^-?\d{1,3}(?:,\d{3})+(?:\.\d+)?$")
_LEADING_NUMBER = re.compile(r"^(-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)\s*[A-Za-z%]*$")


def last_boxed(text: str) -> str | None:
    """The content of the last `\\boxed{...}` of `text` (nested braces kept), None when there is none or it is
    not closed."""
    start = text.rfind(_BOXED + "{")
    if start < 0:
        return None
    depth, begin = 0, start + len(_BOXED)
    for index in range(begin, len(text)):
        if text[index] == "{":
            depth += 1
        elif text[index] == "}":
            depth -= 1
            if depth == 0:
                return text[begin + 1:index]
    return None


def normalized(text: str) -> str:
    """Answer text without what never changes its value: TeX spacing and dollar signs, \\text{} wrappers, a
    trailing period, surrounding blanks."""
    text = _TEXT_WRAPPERS.sub(r"\1", text)
    for noise in ("\\!", "\\,", "\\;", "\\ ", "$", "\\%", "%"):
        text = text.replace(noise, "")
    return text.strip().rstrip(".").strip()


def number_of(text: str) -> Fraction | None:
    """The number an answer names, exactly; None when it is not a plain number."""
    text = normalized(text).replace(" ", "")
    if _GROUPED.match(text):
        text = text.replace(",", "")
    match = _FRACTION.match(text) or _PLAIN_FRACTION.match(text)
    if match:
        numerator, denominator = int(match.group(1)), int(match.group(2))
        return Fraction(numerator, denominator) if denominator else None
    if _DECIMAL.match(text):
        return Fraction(text)
    leading = _LEADING_NUMBER.match(normalized(text))
    return Fraction(leading.group(1).replace(",", "")) if leading else None


def score(prediction: str, gold: str) -> bool | None:
    """Whether a model output answers `gold`: False without a boxed answer, None when the grader cannot decide."""
    given = last_boxed(prediction)
    if given is None:
        return False
    given_number, gold_number = number_of(given), number_of(gold)
    if given_number is not None and gold_number is not None:
        return given_number == gold_number
    if normalized(given) == normalized(gold):
        return True
    if gold_number is not None and not any(character.isdigit() for character in given):
        return False  # no digit in it: no expression of a number
    return None


def gsm8k_final_answer(solution: str) -> str:
    """The final answer of a GSM8K solution: the text after its last `####`, thousands separators removed."""
    return solution.rsplit("####", 1)[-1].strip().replace(",", "")


def _rows(path: Path) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(read_capped_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise DataError(f"{path.name}:{number}: not JSON ({err.msg})") from None
        if not isinstance(row, dict):
            raise DataError(f"{path.name}:{number}: not a JSON object")
        rows.append(row)
    return rows


def evaluation_items(spec: dict[str, Any]) -> dict[str, dict[str, str]]:
    """item id -> {"question", "answer"} of the evaluation data file the spec names (GSM8K test without a path)."""
    evaluation = spec.get("eval") if isinstance(spec.get("eval"), dict) else {}
    if evaluation.get("path"):
        path = resolve_data_path(str(evaluation["path"]))
        items = {}
        for row in _rows(path):
            if not {"id", "question", "answer"} <= set(row):
                raise DataError(f"{path.name}: a row lacks id, question or answer")
            answer = str(row["answer"])
            items[str(row["id"])] = {"question": str(row["question"]),
                                     "answer": gsm8k_final_answer(answer) if "####" in answer else answer}
        return items
    path = Path(DEFAULT_GSM8K_DIR) / "test.jsonl"
    return {f"gsm8k-test-{index}": {"question": str(row.get("question")), "answer": gsm8k_final_answer(str(row.get("answer")))}
            for index, row in enumerate(_rows(path))}
