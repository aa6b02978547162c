"""A deterministic exact solver of one task family: the audit's independent re-solver where no
independent model is available (the embedded backend serves one model family, and the rehearsal's
trained base, filter model and generator all come from it).

`exact-solver:embedded-arithmetic` reads the integer word problems of the embedded arithmetic family
(docs/ARCHITECTURE.md, "Embedded arithmetic task family") from their TEXT ONLY: the problem must be
one of the family's sentence patterns as a whole (who has how many of what, what happens, the
question); the pattern fixes the operation (add, subtract, multiply) and the two numbers are its
operands. Names, objects and containers are not compared, so "5 eggs in a jar and 3 balloons on the
table; how many cookies" is answered 8, exactly as the family's own arithmetic would; a text that is
not one of the patterns (a garbled mix of two) gets no answer, which the audit counts as a
disagreement, so such a task is rejected and replaced. The solver never sees the label or the
generated code; it shares no weights and no code with the generator, the filter or the trained model.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EXACT_SOLVER_PREFIX = "exact-solver:"
ARITHMETIC_SOLVER = "exact-solver:embedded-arithmetic"
KIND = "deterministic program"

# The family's sentence patterns: {a} and {b} are the operands; other slots are free words.
_PATTERNS = {
    "add": (
        "{name} has {a} {obj}. {pron} buys {b} more. How many {obj} does {name} have now?",
        "{name} had {a} {obj} and found {b} more. How many {obj} does {name} have in total?",
        "There are {a} {obj} in a {box} and {b} {obj} on the table. How many {obj} are there altogether?",
        "{name} collected {a} {obj} on Monday and {b} {obj} on Tuesday. How many {obj} did {name} collect?",
        "{name} has {a} {obj}. {name} gives {name} {b} more. How many {obj} does {name} have now?",
    ),
    "subtract": (
        "{name} has {a} {obj}. {pron} gives {b} to {name}. How many {obj} does {name} have left?",
        "{name} had {a} {obj} and lost {b} of them. How many {obj} does {name} have now?",
        "A {box} holds {a} {obj}. {name} takes {b} out. How many {obj} are left in the {box}?",
        "{name} needs {a} {obj} and already has {b}. How many more {obj} does {name} need?",
        "{name} had {a} {obj}. After selling some, {name} has {b} left. How many {obj} did {name} sell?",
    ),
    "multiply": (
        "{name} buys {a} bags with {b} {obj} in each bag. How many {obj} does {name} buy?",
        "There are {a} rows with {b} {obj} in each row. How many {obj} are there?",
        "{name} gives {b} {obj} to each of {a} friends. How many {obj} does {name} give away?",
    ),
}
_SLOTS = {"a": r"(?P<a>\d+)", "b": r"(?P<b>\d+)", "name": r"[A-Z][a-z]+", "pron": r"(?:He|She)",
          "obj": r"[a-z]+(?: [a-z]+)?", "box": r"[a-z]+"}
_APPLY = {"add": lambda a, b: a + b, "subtract": lambda a, b: a - b, "multiply": lambda a, b: a * b}
_SYMBOL = {"add": "+", "subtract": "-", "multiply": "*"}


def _compile(pattern: str) -> re.Pattern[str]:
    parts = re.split(r"\{(\w+)\}", pattern)
    return re.compile("".join(_SLOTS[part] if index % 2 else re.escape(part) for index, part in enumerate(parts)))


_COMPILED = [(operation, pattern, _compile(pattern)) for operation, patterns in _PATTERNS.items() for pattern in patterns]


@dataclass(frozen=True)
class Solution:
    answer: str | None  # None: the text is not a problem of the family
    reasoning: str


def solve_arithmetic(text: str) -> Solution:
    """The exact answer of an arithmetic-family problem from its text alone."""
    question = " ".join(str(text).split())
    matches = [(operation, pattern, found) for operation, pattern, compiled in _COMPILED
               if (found := compiled.fullmatch(question))]
    if len(matches) != 1:
        why = "no sentence pattern" if not matches else f"{len(matches)} sentence patterns"
        return Solution(None, f"{why} of the embedded arithmetic family matches the text: no answer")
    operation, pattern, found = matches[0]
    a, b = int(found["a"]), int(found["b"])
    answer = _APPLY[operation](a, b)
    return Solution(str(answer), f"pattern {pattern!r} ({operation}): {a} {_SYMBOL[operation]} {b} = {answer}")


def is_exact_solver(name: str | None) -> bool:
    return isinstance(name, str) and name.startswith(EXACT_SOLVER_PREFIX)


SOLVERS = {ARITHMETIC_SOLVER: solve_arithmetic}


def solver_identity(name: str) -> dict[str, Any]:
    """What the audit records about an exact solver: its name, kind and the sha256 of its code."""
    if name not in SOLVERS:
        raise ValueError(f"unknown exact solver {name!r}; known: {', '.join(SOLVERS)}")
    source = Path(__file__)
    return {"name": name, "kind": KIND, "code": "experiment/selfgen/exact_solver.py",
            "code_sha256": hashlib.sha256(source.read_bytes()).hexdigest()}
