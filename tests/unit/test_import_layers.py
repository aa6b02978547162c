"""The import layers of pyproject.toml [tool.importlinter] hold, and no module imports itself in a circle.

Beside test_no_prefect_in_domain.py: together they keep the architecture of docs/ARCHITECTURE.md
(layers of experiment/, the backend boundary, the optimizer modules of embedded_tinker/).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
LINT = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))


def _lint(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run([LINT, *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_the_declared_import_contracts_are_kept():
    done = _lint()
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_a_contract_with_the_layers_reversed_is_reported_broken(tmp_path):
    """The check can fail: gates import stats, so stats above gates is a broken contract."""
    config = tmp_path / "reversed.toml"
    config.write_text(
        '[tool.importlinter]\nroot_packages = ["experiment"]\n\n'
        '[[tool.importlinter.contracts]]\nname = "reversed"\ntype = "layers"\n'
        'layers = ["experiment.stats", "experiment.gates"]\n'
    )
    done = _lint("--config", str(config))
    assert done.returncode != 0
    assert "BROKEN" in done.stdout


def _cycles(package: str, exclude_type_checking_imports: bool = False) -> list[list[str]]:
    """Every circle of module imports inside `package`, one per start: imports inside functions and
    type-only ones (under TYPE_CHECKING) count like any other."""
    graph = grimp.build_graph(package, exclude_type_checking_imports=exclude_type_checking_imports)
    modules = sorted(graph.modules)
    found, state = [], {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if state.get(imported) == "open":
                found.append(path[path.index(imported):] + [imported])
            elif imported not in state:
                visit(imported, path + [imported])
        state[module] = "done"

    for module in modules:
        if module not in state:
            visit(module, [module])
    return found


@pytest.mark.parametrize("package", ["experiment", "embedded_tinker", "flows", "tasks"])
def test_no_import_circles(package, monkeypatch):
    monkeypatch.syspath_prepend(str(REPO_ROOT))
    assert _cycles(package) == []


def test_a_circle_hidden_under_type_checking_is_found(tmp_path, monkeypatch):
    """The circles once hidden behind TYPE_CHECKING (e.g. rl/loop <-> stats/activation) were invisible when
    type-only imports were left out; the check now counts them."""
    package = tmp_path / "circled"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "low.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from circled.high import High\n")
    (package / "high.py").write_text("def build():\n    from circled.low import something\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _cycles("circled", exclude_type_checking_imports=True) == []  # the old check: no circle seen
    assert _cycles("circled") == [["circled.high", "circled.low", "circled.high"]]


@pytest.mark.parametrize("family", ["experiment.rl", "experiment.sft", "experiment.selfgen"])
def test_the_grader_imports_no_pipeline_code_of_a_family(family, monkeypatch):
    """Contract `grader-independence` (issue 45): no chain of imports, inside functions and type-only ones
    included, leads from experiment.grading to a family's code; a bug there would pass its own check."""
    monkeypatch.syspath_prepend(str(REPO_ROOT))
    graph = grimp.build_graph("experiment", exclude_type_checking_imports=False)
    assert graph.find_shortest_chains("experiment.grading", family) == set()
