"""A run directory's layout is named once (experiment/contract/run_layout.py): the store writes the files it names,
the grader reads them there, and no module joins a path with a spelled-out layout name of its own."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from suite import GS1_SPEC, REPO_ROOT

from experiment.contract import run_layout
from experiment.contract.plan import build_plan
from experiment.contract.spec import load_spec
from experiment.contract.verdict import GateVerdict
from experiment.grading.grade import load_input
from experiment.run.store import RunStore

LAYOUT_NAMES = {run_layout.RUN_META, run_layout.RESULT_FILE, run_layout.EVENTS_FILE, run_layout.EVIDENCE_DIR,
                run_layout.MANIFEST_FILE, run_layout.TABLES_DIR, run_layout.PLOTS_DIR,
                run_layout.GATES_TABLE + run_layout.TABLE_SUFFIX}
CODE_DIRS = ("experiment", "flows", "tasks")


def layout_literals_in_path_joins(source: str) -> list[tuple[int, str]]:
    """(line, name) of each `path / "<layout name>"` (or `"<layout name>" / ...`) in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            for side in (node.left, node.right):
                if isinstance(side, ast.Constant) and side.value in LAYOUT_NAMES:
                    found.append((node.lineno, side.value))
    return found


def test_the_check_finds_a_layout_name_spelled_in_a_path_join():
    source = 'def show(run_dir):\n    return (run_dir / "result.json").read_text(), run_dir / "evidence" / "x"\n'
    assert sorted(layout_literals_in_path_joins(source)) == [(2, "evidence"), (2, "result.json")]


def test_no_module_spells_the_run_directory_layout_itself():
    spelled = [f"{path.relative_to(REPO_ROOT)}:{line} {name!r}"
               for code_dir in CODE_DIRS for path in sorted((REPO_ROOT / code_dir).rglob("*.py"))
               if path != REPO_ROOT / "experiment" / "contract" / "run_layout.py"
               for line, name in layout_literals_in_path_joins(path.read_text(encoding="utf-8"))]
    assert spelled == [], "name it in experiment/contract/run_layout.py: " + ", ".join(spelled)


def test_the_store_writes_the_files_the_layout_names_and_the_grader_reads_them(tmp_path):
    spec = load_spec(GS1_SPEC)
    store = RunStore.create(tmp_path / "runs", spec, build_plan(spec))
    store.record_gate(GateVerdict(gate="spec_intake", status="passed", reasons=["ok"]))
    store.add_evidence("note.txt", "log", "hello")
    store.release()
    run_dir = store.run_dir
    for path in (run_layout.run_meta_path(run_dir), run_layout.result_path(run_dir), run_layout.events_path(run_dir),
                 run_layout.manifest_path(run_dir), run_layout.table_path(run_dir, run_layout.GATES_TABLE),
                 run_layout.evidence_path(run_dir, "note.txt")):
        assert path.is_file(), path
    assert json.loads(run_layout.manifest_path(run_dir).read_text())["files"][0]["name"] == "note.txt"
    result, graded_dir = load_input(run_dir)  # the grader finds RESULT where the layout says
    assert graded_dir == run_dir and result == store.read_result()
    assert run_layout.result_path(run_dir) == Path(run_dir) / "result.json"  # the contract's file name
