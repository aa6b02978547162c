"""Deterministic generator of the embedded arithmetic task family.

Each problem is an integer word problem whose answer is an integer string, e.g.

    {"id": "arith-train-000123",
     "question": "Tom has 37 apples. He buys 45 more. How many apples does Tom have now?",
     "answer": "82"}

Difficulty levels (mixed by ``LEVEL_WEIGHTS``):
    one_digit   a +/- b with a, b in 1..9 (a >= b for subtraction)
    two_by_one  a +/- b with a in 10..99, b in 1..9
    two_by_two  a +/- b with a, b in 10..99 (a >= b for subtraction)
    times       a * b with a, b in 2..9

Everything is drawn from ``random.Random(seed)``: the same seed gives the same rows.
``build_splits`` draws test rows first, then train rows whose question text differs
from every test question, so the two splits never share a question.

Regenerate the committed files with ``python -m embedded_tinker.tasks.arithmetic``.
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import dataclass
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"
DEFAULT_SEED = 20261129
DEFAULT_N_TRAIN = 20000
DEFAULT_N_TEST = 500

# The suffix the cookbook MathEnv appends to every question.
BOXED_INSTRUCTION = " Write your answer in \\boxed{} format."

NAMES = [
    ("Tom", "He"), ("Anna", "She"), ("Ben", "He"), ("Maria", "She"), ("Sam", "He"),
    ("Lucy", "She"), ("Omar", "He"), ("Priya", "She"), ("Leo", "He"), ("Emma", "She"),
    ("Jack", "He"), ("Mia", "She"), ("Ravi", "He"), ("Sofia", "She"), ("Noah", "He"),
    ("Zoe", "She"), ("Ivan", "He"), ("Lena", "She"), ("Kofi", "He"), ("Yuki", "She"),
]
OBJECTS = [
    "apples", "pencils", "marbles", "books", "stickers", "coins", "cookies", "cards",
    "shells", "stamps", "oranges", "balloons", "crayons", "toy cars", "eggs", "flowers",
]
CONTAINERS = ["box", "basket", "jar", "bag", "crate", "drawer"]

ADD_TEMPLATES = [
    "{name} has {a} {obj}. {pron} buys {b} more. How many {obj} does {name} have now?",
    "{name} had {a} {obj} and found {b} more. How many {obj} does {name} have in total?",
    "There are {a} {obj} in a {box} and {b} {obj} on the table. How many {obj} are there altogether?",
    "{name} collected {a} {obj} on Monday and {b} {obj} on Tuesday. How many {obj} did {name} collect?",
    "{name} has {a} {obj}. {friend} gives {name} {b} more. How many {obj} does {name} have now?",
]
SUB_TEMPLATES = [
    "{name} has {a} {obj}. {pron} gives {b} to {friend}. How many {obj} does {name} have left?",
    "{name} had {a} {obj} and lost {b} of them. How many {obj} does {name} have now?",
    "A {box} holds {a} {obj}. {name} takes {b} out. How many {obj} are left in the {box}?",
    "{name} needs {a} {obj} and already has {b}. How many more {obj} does {name} need?",
    "{name} had {a} {obj}. After selling some, {name} has {b} left. How many {obj} did {name} sell?",
]
TIMES_TEMPLATES = [
    "{name} buys {a} bags with {b} {obj} in each bag. How many {obj} does {name} buy?",
    "There are {a} rows with {b} {obj} in each row. How many {obj} are there?",
    "{name} gives {b} {obj} to each of {a} friends. How many {obj} does {name} give away?",
]

LEVEL_WEIGHTS = {"one_digit": 0.3, "two_by_one": 0.3, "two_by_two": 0.3, "times": 0.1}


@dataclass(frozen=True)
class Problem:
    question: str
    answer: int
    level: str


def _operands(rng: random.Random, level: str) -> tuple[str, int, int]:
    """Return (operation, a, b) for a level; subtraction always has a >= b."""
    if level == "times":
        return "times", rng.randint(2, 9), rng.randint(2, 9)
    operation = rng.choice(["add", "sub"])
    if level == "one_digit":
        a, b = rng.randint(1, 9), rng.randint(1, 9)
    elif level == "two_by_one":
        a, b = rng.randint(10, 99), rng.randint(1, 9)
    elif level == "two_by_two":
        a, b = rng.randint(10, 99), rng.randint(10, 99)
    else:
        raise ValueError(f"unknown level {level!r}")
    if operation == "sub" and a < b:
        a, b = b, a
    return operation, a, b


def generate_problem(rng: random.Random) -> Problem:
    """Draw one problem; consumes a fixed pattern of calls from ``rng``."""
    levels = list(LEVEL_WEIGHTS)
    level = rng.choices(levels, weights=[LEVEL_WEIGHTS[x] for x in levels])[0]
    operation, a, b = _operands(rng, level)
    (name, pron), (friend, _) = rng.sample(NAMES, 2)
    obj = rng.choice(OBJECTS)
    box = rng.choice(CONTAINERS)
    fields = dict(name=name, pron=pron, friend=friend, obj=obj, box=box)
    if operation == "add":
        question = rng.choice(ADD_TEMPLATES).format(a=a, b=b, **fields)
        answer = a + b
    elif operation == "sub":
        question = rng.choice(SUB_TEMPLATES).format(a=a, b=b, **fields)
        answer = a - b
    else:
        question = rng.choice(TIMES_TEMPLATES).format(a=a, b=b, **fields)
        answer = a * b
    return Problem(question=question, answer=answer, level=level)


def build_splits(
    seed: int = DEFAULT_SEED, n_train: int = DEFAULT_N_TRAIN, n_test: int = DEFAULT_N_TEST
) -> dict[str, list[dict[str, str]]]:
    """Return {"train": rows, "test": rows}; questions are unique across both splits."""
    rng = random.Random(seed)
    seen: set[str] = set()
    splits: dict[str, list[dict[str, str]]] = {}
    for split, n_rows in (("test", n_test), ("train", n_train)):
        rows: list[dict[str, str]] = []
        while len(rows) < n_rows:
            problem = generate_problem(rng)
            if problem.question in seen:
                continue
            seen.add(problem.question)
            rows.append(
                {
                    "id": f"arith-{split}-{len(rows):06d}",
                    "question": problem.question,
                    "answer": str(problem.answer),
                }
            )
        splits[split] = rows
    return splits


def load_split(split: str, data_dir: Path = DATA_DIR) -> list[dict[str, str]]:
    """Read the committed rows of ``split`` ("train" or "test")."""
    with open(data_dir / f"{split}.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def write_splits(data_dir: Path = DATA_DIR, seed: int = DEFAULT_SEED) -> dict[str, Path]:
    data_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for split, rows in build_splits(seed).items():
        path = data_dir / f"{split}.jsonl"
        with open(path, "w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        paths[split] = path
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = parser.parse_args()
    for split, path in write_splits(args.data_dir, args.seed).items():
        print(f"wrote {split}: {path}")


if __name__ == "__main__":
    main()
