"""Datasets read from files: GSM8K JSONL and `{id, question, answer}` task files.

Every item is a `TaskItem(id, question, answer)` with the final answer as a string. GSM8K ids are
`gsm8k-<split>-<line index>`, so they are stable and explicit (contract section 6).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from tinker_cookbook.recipes.math_rl.math_env import extract_gsm8k_final_answer

DEFAULT_GSM8K_DIR = Path(__file__).resolve().parent.parent / "data" / "gsm8k"
GSM8K_SPLITS = ("train", "test")

T = TypeVar("T")


class DataError(ValueError):
    """A data file that cannot be read as expected. One line naming the file and the problem."""


@dataclass(frozen=True)
class TaskItem:
    id: str
    question: str
    answer: str


def _read_jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise DataError(f"{path}:{number}: not valid JSON ({err.msg})") from None
        if not isinstance(row, dict):
            raise DataError(f"{path}:{number}: each line must be a JSON object")
        rows.append(row)
    return rows


def load_gsm8k(split: str, data_dir: str | Path = DEFAULT_GSM8K_DIR) -> list[TaskItem]:
    """GSM8K `train` or `test` from `<data_dir>/<split>.jsonl`; answer = the text after `####`."""
    if split not in GSM8K_SPLITS:
        raise DataError(f"GSM8K split must be one of {', '.join(GSM8K_SPLITS)} (got {split!r})")
    path = Path(data_dir) / f"{split}.jsonl"
    items = []
    for index, row in enumerate(_read_jsonl(path)):
        if "question" not in row or "answer" not in row:
            raise DataError(f"{path}: row {index} lacks 'question' or 'answer'")
        items.append(TaskItem(f"gsm8k-{split}-{index}", row["question"], extract_gsm8k_final_answer(row["answer"])))
    return items


def load_task_file(path: str | Path) -> list[TaskItem]:
    """A JSONL file of `{"id", "question", "answer"}` rows (answer kept as a string)."""
    path = Path(path)
    items, seen = [], set()
    for index, row in enumerate(_read_jsonl(path)):
        missing = [key for key in ("id", "question", "answer") if key not in row]
        if missing:
            raise DataError(f"{path}: row {index} lacks {', '.join(missing)}")
        item_id = str(row["id"])
        if item_id in seen:
            raise DataError(f"{path}: duplicate id {item_id!r}")
        seen.add(item_id)
        items.append(TaskItem(item_id, str(row["question"]), str(row["answer"])))
    return items


def seeded_shuffle(items: list[T], seed: int = 0) -> list[T]:
    """A new list in a deterministic order for `seed` (the input is not modified)."""
    shuffled = list(items)
    random.Random(seed).shuffle(shuffled)
    return shuffled


def first_n_shuffled(items: list[T], n: int, seed: int = 0) -> list[T]:
    """The first n items after a seeded shuffle, e.g. the 640 GSM8K train problems of the selfgen spec."""
    if n > len(items):
        raise DataError(f"asked for {n} items but only {len(items)} exist")
    return seeded_shuffle(items, seed)[:n]
