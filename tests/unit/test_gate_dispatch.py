"""Each gate runs the step of the spec's training type from its STEPS table; no gate branches on the type."""

from __future__ import annotations

import importlib
import inspect
from types import SimpleNamespace

from experiment.gates import GATE_ORDER, GateVerdict, dispatch
from experiment.sft import gates as sft_gates


def _ctx(training_type: str):
    return SimpleNamespace(plan=SimpleNamespace(training_type=training_type))


def test_dispatch_runs_the_step_of_the_training_type():
    steps = {"rl": lambda ctx: GateVerdict(gate="g", status="passed", reasons=["rl"]),
             "sft": lambda ctx: GateVerdict(gate="g", status="passed", reasons=["sft"])}
    assert dispatch("g", steps, _ctx("sft")).reasons == ["sft"]
    assert dispatch("g", steps, _ctx("rl")).reasons == ["rl"]


def test_a_training_type_without_a_step_is_not_implemented_never_passed():
    verdict = dispatch("g", {"rl": lambda ctx: None}, _ctx("dpo"))
    assert verdict.status == "failed"
    assert verdict.reasons == ["not implemented: g for training_type 'dpo'"]


def test_every_gate_with_an_sft_step_names_it_in_steps_and_never_branches_on_the_type():
    with_sft = []
    for name in GATE_ORDER:
        module = importlib.import_module(f"experiment.gates.{name}")
        assert 'training_type == "sft"' not in inspect.getsource(module), name
        steps = getattr(module, "STEPS", {})
        if "sft" in steps:
            with_sft.append(name)
            assert steps["rl"].__module__ == module.__name__
    assert with_sft == ["preflight_probe", "correctness_preflight", "restoration_preflight", "feasibility_pilot",
                        "arm_training", "evaluation", "decision"]
    assert importlib.import_module("experiment.gates.preflight_probe").STEPS["sft"] is sft_gates.preflight_probe
