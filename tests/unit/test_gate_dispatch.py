"""Each gate runs the step of the spec's training type from its STEPS table; no gate branches on the type."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from types import SimpleNamespace

from experiment.contract.plan import build_plan
from experiment.contract.spec import load_spec
from experiment.gates import GATE_ORDER, GateVerdict, dispatch, step_family
from experiment.sft.steps import preflight_probe as sft_probe


SPECS = Path(__file__).resolve().parents[2] / "specs"


def _ctx(training_type: str):
    return SimpleNamespace(plan=SimpleNamespace(training_type=training_type, role_to_arm={}), spec=SimpleNamespace(arms=[]))


def test_dispatch_runs_the_step_of_the_training_type():
    steps = {"rl": lambda ctx: GateVerdict(gate="g", status="passed", reasons=["rl"]),
             "sft": lambda ctx: GateVerdict(gate="g", status="passed", reasons=["sft"])}
    assert dispatch("g", steps, _ctx("sft")).reasons == ["sft"]
    assert dispatch("g", steps, _ctx("rl")).reasons == ["rl"]


def test_a_training_type_without_a_step_is_not_implemented_never_passed():
    verdict = dispatch("g", {"rl": lambda ctx: None}, _ctx("dpo"))
    assert verdict.status == "failed"
    assert verdict.reasons == ["not implemented: g for training_type 'dpo'"]


def test_every_gate_names_its_family_steps_and_never_branches_on_the_type():
    """Each gate's STEPS point into the family folders (experiment.<family>.steps.<gate>); none is inline."""
    with_sft = []
    for name in GATE_ORDER:
        module = importlib.import_module(f"experiment.gates.{name}")
        assert 'training_type == "sft"' not in inspect.getsource(module), name
        steps = getattr(module, "STEPS", {})
        if "sft" in steps:
            with_sft.append(name)
        for family, step in steps.items():
            step = getattr(step, "func", step)  # a step handed an argument by its gate (functools.partial)
            if step.__module__ != module.__name__:
                assert step.__module__ == f"experiment.{family}.steps.{name}", (name, family, step.__module__)
            else:  # a gate-level wrapper around the family's step
                assert f"{family}_step" in inspect.getsource(step), (name, family)
    assert with_sft == ["preflight_probe", "correctness_preflight", "restoration_preflight", "feasibility_pilot",
                        "arm_training", "evaluation", "decision"]
    assert importlib.import_module("experiment.gates.preflight_probe").STEPS["sft"] is sft_probe.run


def test_a_self_generated_tasks_run_takes_its_own_step_where_there_is_one_else_the_rl_step():
    steps = {"rl": lambda ctx: GateVerdict(gate="g", status="passed", reasons=["rl"]),
             "selfgen": lambda ctx: GateVerdict(gate="g", status="passed", reasons=["selfgen"])}
    spec = load_spec(SPECS / "selfgen_tasks_vs_gsm8k.json")
    ctx = SimpleNamespace(spec=spec, plan=build_plan(spec))
    assert step_family(ctx) == "selfgen"
    assert dispatch("g", steps, ctx).reasons == ["selfgen"]
    assert dispatch("g", {"rl": steps["rl"]}, ctx).reasons == ["rl"]
    gs1 = load_spec(SPECS / "gs1_kernel_vs_grpo_gsm8k.json")
    assert step_family(SimpleNamespace(spec=gs1, plan=build_plan(gs1))) == "rl"
