"""experiment/ is plain Python: no module in it imports Prefect (ARCHITECTURE.md)."""

from __future__ import annotations

import ast
import subprocess
import sys

from suite import REPO_ROOT

DOMAIN = REPO_ROOT / "experiment"


def test_no_domain_module_mentions_prefect_in_an_import():
    offenders = []
    for path in sorted(DOMAIN.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            offenders += [f"{path.relative_to(REPO_ROOT)}: {name}" for name in names if name.split(".")[0] == "prefect"]
    assert offenders == []


def test_importing_every_domain_module_loads_no_prefect():
    modules = sorted(
        ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts).removesuffix(".__init__")
        for path in DOMAIN.rglob("*.py")
    )
    code = f"import importlib, sys\nfor m in {modules!r}: importlib.import_module(m)\nassert 'prefect' not in sys.modules"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
