"""No function over 80 lines without a reason in its docstring (issue 49): a long function says why it is long
("Long because: ..."), so a reader knows it was kept whole on purpose; anything else is split."""

from __future__ import annotations

import ast
from pathlib import Path

from suite import REPO_ROOT

LIMIT = 80
CODE = ("experiment", "flows", "tasks", "embedded_tinker", "tools", "benchmarks")
# Files whose bytes are pinned by sha256 (a correctness pin of a revision file), so no reason can be added to them
# without a new pin; the reason stands here instead.
PINNED = {
    "experiment/rl/gs1_reference.py": "the independent GS1 reference writes the spec's estimator out step by step and "
                                      "shares no helper with the pipeline's; specs/gs1_kernel_vs_grpo_gsm8k.plan.json "
                                      "pins its sha256",
}


def long_functions_without_a_reason(root: Path) -> list[str]:
    found = []
    for top in CODE:
        for path in sorted((root / top).rglob("*.py")):
            if path.relative_to(root).as_posix() in PINNED:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                        node.end_lineno - node.lineno + 1 > LIMIT and \
                        "Long because: " not in (ast.get_docstring(node) or ""):
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} "
                                 f"({node.end_lineno - node.lineno + 1} lines)")
    return found


def test_a_long_function_without_a_reason_is_found(tmp_path):
    """The check itself, on a planted module: 81 lines with no reason is found, with one it is not."""
    body = "".join(f"    x{i} = {i}\n" for i in range(LIMIT))
    (tmp_path / "flows").mkdir()
    (tmp_path / "flows" / "planted.py").write_text(f"def planted():\n{body}")
    assert long_functions_without_a_reason(tmp_path) == ["flows/planted.py:1 planted (81 lines)"]
    (tmp_path / "flows" / "planted.py").write_text(f'def planted():\n    """Long because: planted."""\n{body}')
    assert long_functions_without_a_reason(tmp_path) == []


def test_every_function_over_80_lines_says_why_it_is_long():
    assert long_functions_without_a_reason(REPO_ROOT) == []


def test_every_pinned_file_is_pinned():
    """An exemption holds only while a revision file really pins the file's bytes."""
    pins = "".join(path.read_text() for path in (REPO_ROOT / "specs").glob("*.plan.json"))
    assert all(name in pins for name in PINNED)
