"""The code a run executed: git commit (when run from a checkout), package versions, file hashes.

Retained as the run's `code_revision` evidence so a reviewer can tell exactly which pipeline
code produced the numbers, also when the working tree had uncommitted changes. The code itself
(every source file of the pipeline, as it was when the run started) is retained as the run's
`script` evidence by `pipeline_code_bundle` (EVID-4: the executed script).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import subprocess
from typing import Any

from experiment import PROJECT_ROOT
PACKAGES = ("tinker", "tinker-cookbook", "prefect", "torch", "transformers")
CODE_DIRS = ("experiment", "flows", "tasks", "embedded_tinker")
PIPELINE_CODE_DIRS = ("experiment", "flows", "tasks")  # what runs in the pipeline process
BACKEND_CODE_DIRS = ("embedded_tinker",)  # the embedded service, executed only when it served the run
PIPELINE_CODE_EVIDENCE = "pipeline-code.json"
ENTRY_POINT = "flows/run.py"


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


def pipeline_code_bundle(include_backend: bool) -> str:
    """The pipeline's source files as one JSON text: {"version", "entry_point", "git_commit", "files":
    {relative path: {"sha256", "content"}}}. The embedded backend's sources are included when it
    served the run (`include_backend`); the sha256 of each file is the one in code-revision.json."""
    directories = PIPELINE_CODE_DIRS + (BACKEND_CODE_DIRS if include_backend else ())
    files = {}
    for directory in directories:
        for path in sorted((PROJECT_ROOT / directory).rglob("*.py")):
            data = path.read_bytes()
            files[path.relative_to(PROJECT_ROOT).as_posix()] = {
                "sha256": hashlib.sha256(data).hexdigest(), "content": data.decode("utf-8")}
    return json.dumps({"version": 1, "entry_point": ENTRY_POINT, "git_commit": _git("rev-parse", "HEAD"),
                       "directories": list(directories), "files": files}, indent=1, sort_keys=True)
