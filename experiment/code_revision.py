"""The code a run executed: git commit (when run from a checkout), package versions, file hashes.

Retained as the run's `code_revision` evidence so a reviewer can tell exactly which pipeline
code produced the numbers, also when the working tree had uncommitted changes.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import subprocess
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("tinker", "tinker-cookbook", "prefect", "torch", "transformers")
CODE_DIRS = ("experiment", "flows", "tasks", "embedded_tinker")


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def code_revision() -> dict[str, Any]:
    files = {
        path.relative_to(PROJECT_ROOT).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for directory in CODE_DIRS
        for path in sorted((PROJECT_ROOT / directory).rglob("*.py"))
    }
    status = _git("status", "--porcelain", "--", *CODE_DIRS)
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": bool(status) if status is not None else None,
        "packages": versions,
        "files_sha256": files,
    }
