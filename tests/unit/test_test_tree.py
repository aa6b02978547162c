"""The test tree's own rules (docs/testing.md, "Where tests live"): a test file is named after what it guards,
never after how it was made; no test module imports another (shared builders live in non-test modules at
tests/ level: records.py, grading_contexts/, rule_cases.py, suite.py, ...); and every module basename is
unique across tests/, as pytest's default "prepend" import mode without __init__.py files needs.

Each rule is first shown to catch a planted offender in a tree made here, then held on the real tree."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

from suite import REPO_ROOT

TESTS = REPO_ROOT / "tests"
# how a file was made, not what it guards: a mutation run (mut), a review round (rd1..), what it killed
# (survivors), a second helping (more) or a bug list (bugs)
PROCESS_WORDS = re.compile(r"^(mut|mutants?|rd\d+|survivors?|more|bugs?)$")


def python_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def process_named(root: Path) -> list[str]:
    """The modules whose name has a word saying how they were made (words are split at underscores)."""
    return [p.relative_to(root).as_posix() for p in python_files(root)
            if any(PROCESS_WORDS.match(word) for word in p.stem.split("_"))]


def imports_of_test_modules(root: Path) -> list[str]:
    """`file:line imports module` for every import, at any depth of a module, of a test module of the tree."""
    test_modules = {p.stem for p in python_files(root) if p.stem.startswith("test_")}
    found = []
    for path in python_files(root):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                if name.split(".")[0] in test_modules:
                    found.append(f"{path.relative_to(root).as_posix()}:{node.lineno} imports {name}")
    return found


def repeated_basenames(root: Path) -> dict[str, list[str]]:
    """Module basenames held by more than one file (conftest.py and __init__.py are pytest's and packages')."""
    where: dict[str, list[str]] = defaultdict(list)
    for path in python_files(root):
        if path.name not in ("conftest.py", "__init__.py"):
            where[path.name].append(path.relative_to(root).as_posix())
    return {name: paths for name, paths in where.items() if len(paths) > 1}


def _plant(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_a_file_named_after_how_it_was_made_is_caught(tmp_path):
    tree = _plant(tmp_path, {"unit/test_mut_store.py": "", "unit/test_decision_more.py": "",
                             "unit/grading/test_run_dir_rd3_bugs.py": "", "unit/test_restoration_survivors.py": "",
                             "unit/run_dir_edits_rd3.py": "", "unit/test_store_evidence_caps.py": "",
                             "unit/test_mutation_tool.py": "", "unit/test_generation_audit_earlier_rounds.py": ""})
    assert process_named(tree) == ["unit/grading/test_run_dir_rd3_bugs.py", "unit/run_dir_edits_rd3.py",
                                   "unit/test_decision_more.py", "unit/test_mut_store.py",
                                   "unit/test_restoration_survivors.py"]


def test_no_test_file_is_named_after_how_it_was_made():
    assert process_named(TESTS) == []


def test_a_test_module_importing_another_is_caught_at_any_depth(tmp_path):
    tree = _plant(tmp_path, {
        "unit/test_validation.py": "def build(): ...\n",
        "unit/grading/test_a.py": "from test_validation import build\n",
        "unit/grading/test_b.py": "def test_b():\n    import test_validation\n",
        "unit/test_c.py": "from records import build\nimport suite\n",
        "records.py": "def build(): ...\n"})
    assert imports_of_test_modules(tree) == ["unit/grading/test_a.py:1 imports test_validation",
                                         "unit/grading/test_b.py:2 imports test_validation"]


def test_no_test_module_imports_another():
    assert imports_of_test_modules(TESTS) == []


def test_a_basename_held_twice_is_caught(tmp_path):
    tree = _plant(tmp_path, {"unit/test_store.py": "", "integration/test_store.py": "", "unit/conftest.py": "",
                             "conftest.py": "", "unit/test_plan.py": ""})
    assert repeated_basenames(tree) == {"test_store.py": ["integration/test_store.py", "unit/test_store.py"]}


def test_every_module_basename_is_unique_across_the_tests():
    assert repeated_basenames(TESTS) == {}
