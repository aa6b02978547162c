"""The layout of a run directory, named once: what the store writes, the grader and `flows.runs` read.

    <runs dir>/<run id>/
        run.json                  the run's identity (RUN_META)
        result.json               RESULT (RESULT_FILE)
        events.jsonl              every event, append-only (EVENTS_FILE)
        evidence/manifest.json    the evidence files and their hashes (EVIDENCE_DIR, MANIFEST_FILE)
        evidence/<name>           one immutable evidence file
        tables/<name>.parquet     tables, e.g. tables/gates.parquet (TABLES_DIR, GATES_TABLE)
        plots/*.png               the run's pictures (PLOTS_DIR)

Names only and the paths they make: no reading or writing here (experiment.run.store writes, experiment.grading
reads). It sits in the contract so that the grader, which may import the contract but not the pipeline, names the
same files the store writes.
"""

from __future__ import annotations

import re
from pathlib import Path

RUN_META = "run.json"
RESULT_FILE = "result.json"
EVENTS_FILE = "events.jsonl"
EVIDENCE_DIR = "evidence"
MANIFEST_FILE = "manifest.json"  # under EVIDENCE_DIR; no evidence file may take its name
TABLES_DIR = "tables"
TABLE_SUFFIX = ".parquet"
GATES_TABLE = "gates"  # tables/gates.parquet: one row per gate verdict
PLOTS_DIR = "plots"
# what an evidence or table file may be named (an arm's name is part of its files' names: predictions-<arm>.jsonl)
SAFE_FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def result_path(run_dir: Path) -> Path:
    return Path(run_dir) / RESULT_FILE


def events_path(run_dir: Path) -> Path:
    return Path(run_dir) / EVENTS_FILE


def run_meta_path(run_dir: Path) -> Path:
    return Path(run_dir) / RUN_META


def evidence_path(run_dir: Path, name: str) -> Path:
    return Path(run_dir) / EVIDENCE_DIR / name


def manifest_path(run_dir: Path) -> Path:
    return evidence_path(run_dir, MANIFEST_FILE)


def table_path(run_dir: Path, name: str) -> Path:
    return Path(run_dir) / TABLES_DIR / f"{name}{TABLE_SUFFIX}"


def plots_dir(run_dir: Path) -> Path:
    return Path(run_dir) / PLOTS_DIR
