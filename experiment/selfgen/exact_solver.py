"""The audit's exact solvers: deterministic programs that re-solve generated tasks from their TEXT ONLY, the
audit's independent re-solver where no independent model is available (the embedded backend serves one model
family, and the rehearsal's trained base, filter model and generator all come from it).

`exact-solver:embedded-arithmetic` is experiment/selfgen/text_resolver.py: it reads the problem text itself
(quantities with their object nouns and units, the operations the verbs state, what the question asks for) and
answers it, or gives no answer where the text does not determine one (ill-posed), which the audit counts as a
disagreement, so such a task is rejected and replaced. It shares no code and no sentence forms with the
generator or the family's templates, never sees the label or the generated code, and shares no weights with
the generator, the filter or the trained model.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from experiment.selfgen import text_resolver
from experiment.selfgen.text_resolver import Solution

EXACT_SOLVER_PREFIX = "exact-solver:"
ARITHMETIC_SOLVER = "exact-solver:embedded-arithmetic"
KIND = text_resolver.RESOLVER_KIND

__all__ = ["ARITHMETIC_SOLVER", "SOLVERS", "Solution", "is_exact_solver", "solver_identity"]


def is_exact_solver(name: str | None) -> bool:
    return isinstance(name, str) and name.startswith(EXACT_SOLVER_PREFIX)


SOLVERS = {ARITHMETIC_SOLVER: text_resolver.read_problem}
_CODE = {ARITHMETIC_SOLVER: "experiment/selfgen/text_resolver.py"}


def solver_identity(name: str) -> dict[str, Any]:
    """What the audit records about an exact solver: its name, kind and the sha256 of its code."""
    if name not in SOLVERS:
        raise ValueError(f"unknown exact solver {name!r}; known: {', '.join(SOLVERS)}")
    source = Path(text_resolver.__file__)
    return {"name": name, "kind": KIND, "code": _CODE[name],
            "code_sha256": hashlib.sha256(source.read_bytes()).hexdigest()}
