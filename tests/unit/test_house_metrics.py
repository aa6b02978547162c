"""tools/house_metrics.py on a tiny house written in tmp_path: what it counts as an import (static,
dynamic through importlib, relative), the cycles it finds with and without the dynamic edges, the
contract violations, the hops from the CLI to a gate step, and its refusal of a directory that is no house."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

# tools/ is a repository folder, not an installed package: load the module from its file
_PATH = Path(__file__).resolve().parents[2] / "tools" / "house_metrics.py"
_SPEC = importlib.util.spec_from_file_location("house_metrics_under_test", _PATH)
house_metrics = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = house_metrics  # dataclasses look their module up there
_SPEC.loader.exec_module(house_metrics)

PYPROJECT = """
[[tool.importlinter.contracts]]
id = "layers"
type = "layers"
layers = ["experiment.gates", "experiment.rl", "experiment.contract"]

[[tool.importlinter.contracts]]
id = "steps"
type = "protected"
protected_modules = ["experiment.rl.steps"]
allowed_importers = ["experiment.gates"]
"""

FILES = {
    "experiment/__init__.py": "",
    # the gate registry loads its gates by name, and a gate imports the registry back: a loop import-linter misses
    "experiment/gates/__init__.py": """
        import importlib

        def run_gate(name):
            return importlib.import_module(f"experiment.gates.{name}").run()
    """,
    "experiment/gates/training.py": """
        from experiment.gates import run_gate
        from experiment.rl.steps import training

        def run():
            return training.run()
    """,
    "experiment/rl/__init__.py": "",
    "experiment/rl/steps/__init__.py": "",
    "experiment/rl/steps/training.py": "from ..model import fit\n\ndef run():\n    return fit()\n",
    "experiment/rl/model.py": "def fit():\n" + "    x = 1\n" * 90 + "    return x\n",
    # a lower layer importing a higher one, and library code importing a protected gate step
    "experiment/contract/__init__.py": "import experiment.rl.model\nfrom experiment.rl.steps import training\n",
    "flows/__init__.py": "",
    "flows/run.py": "from experiment.gates import run_gate\nimport json\n",
    "tasks/__init__.py": "",
    "embedded_tinker/__init__.py": "",
}


@pytest.fixture
def house(tmp_path) -> Path:
    for name, text in FILES.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    return tmp_path


def test_imports_are_resolved_to_modules_of_the_house(house):
    modules = house_metrics.read_house(house)
    assert modules["flows.run"].static == {"experiment.gates"}  # json is not of the house
    assert modules["experiment.rl.steps.training"].static == {"experiment.rl.model"}  # relative, two levels up
    assert modules["experiment.gates.training"].static == {"experiment.gates", "experiment.rl.steps.training"}
    assert modules["experiment.gates"].dynamic == {"experiment.gates.training"}


def test_a_registry_loop_is_a_cycle_only_with_the_dynamic_edges(house):
    measured = house_metrics.measure(house)
    assert measured["cycles"] == []
    assert measured["cycles_with_dynamic"] == [["experiment.gates", "experiment.gates.training"]]
    assert measured["dynamic_import_edges"] == 1


def test_layer_and_protected_contracts_are_checked_on_every_import(house):
    measured = house_metrics.measure(house)
    assert measured["violations"] == [
        "layers: experiment.contract -> experiment.rl.model",
        "layers: experiment.contract -> experiment.rl.steps.training",
        "steps: experiment.contract -> experiment.rl.steps.training",
    ]


def test_hops_from_the_cli_to_a_gate_step_follow_the_shortest_import_chain(house):
    measured = house_metrics.measure(house)
    assert measured["gate_step_modules"] == 1 and measured["gate_steps_reached_statically"] == 0
    assert measured["longest_chain_to_a_gate_step"] == [
        "flows.run", "experiment.gates", "experiment.gates.training", "experiment.rl.steps.training"]
    assert measured["hops_to_gate_steps"] == [3]


def test_sizes_count_modules_lines_and_long_functions(house):
    measured = house_metrics.measure(house)
    assert measured["modules"] == len(FILES)
    assert measured["largest_functions"][0] == ["experiment.rl.model.fit", 92]
    assert measured["functions_over_80_lines"] == 1


def test_a_directory_that_is_no_house_is_refused_with_one_line(tmp_path, capsys):
    assert house_metrics.main([str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"refused: {tmp_path} is not a repository root with experiment, flows, tasks, embedded_tinker"]


def test_labels_that_do_not_name_every_tree_are_refused_with_one_line(house, capsys):
    assert house_metrics.main([str(house), str(house), "--labels", "before"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == ["refused: --labels names 1 columns for 2 roots"]


def test_two_trees_print_one_table_side_by_side(house, capsys):
    assert house_metrics.main([str(house), str(house), "--labels", "before,after"]) == 0
    table = capsys.readouterr().out.split("\n\n")[0].splitlines()
    assert table[0] == "| | before | after |"
    assert "| import cycles, with dynamic edges (modules) | 1 (2) | 1 (2) |" in table
