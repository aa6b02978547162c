"""RunState declares every value a gate hands on: producer and readers named, persisted apart from live."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from experiment.run.state import LIVE, PERSISTED, RunState, persisted_fields

ROOT = Path(__file__).resolve().parents[2]


def test_every_field_names_its_producer_and_readers_and_its_kind():
    described = RunState.describe()
    assert {entry["kind"] for entry in described} == {PERSISTED, LIVE}
    for entry in described:
        assert entry["producer"].strip() and entry["readers"].strip(), entry["field"]
    assert {"arm_clients", "arms_session", "sessions", "comparison_steps_completed"} == {
        entry["field"] for entry in described if entry["kind"] == LIVE}


def test_persisted_defaults_are_json_and_live_handles_are_never_persisted():
    state = RunState()
    json.dumps({name: getattr(state, name) for name in persisted_fields()})
    with pytest.raises(ValueError, match="undeclared"):
        state.receive({"arm_clients": {}})  # a live handle is never handed on in a verdict
    with pytest.raises(ValueError, match="undeclared"):
        state.receive({"no_such_value": 1})


def test_a_resumed_run_gets_back_what_the_gates_handed_on():
    state = RunState()
    state.receive({"served_model": "embedded/tiny-arith", "init_checkpoint": "tinker://run/weights/init",
                   "generated_task_rows": [{"id": "selfgen-000000", "question": "1+1?", "answer": "2"}]})
    assert state.served_model == "embedded/tiny-arith" and state.init_checkpoint == "tinker://run/weights/init"
    assert [task.id for task in state.generated_tasks()] == ["selfgen-000000"]
    assert state.final_checkpoints == {} and state.comparison_steps_completed == 0


def _handed_on_keys() -> set[str]:
    """Every key of a `state={...}` a gate step passes to GateVerdict (dict literals and ** of literals)."""
    keys: set[str] = set()
    for path in (ROOT / "experiment").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.keyword) and node.arg == "state" and isinstance(node.value, ast.Dict):
                for sub in ast.walk(node.value):
                    if isinstance(sub, ast.Dict):
                        keys |= {k.value for k in sub.keys if isinstance(k, ast.Constant)}
    return keys


def test_every_value_a_gate_hands_on_is_a_declared_persisted_field():
    handed_on = _handed_on_keys()
    assert handed_on, "no gate hands anything on: the scan found no GateVerdict(state=...)"
    assert handed_on <= set(persisted_fields()), sorted(handed_on - set(persisted_fields()))
