"""One gate table (experiment.gates.GATES): each gate runs the step of the spec's family; no gate branches on the
type, and no gate is found by name at run time (no importlib registry)."""

from __future__ import annotations

import inspect
from pathlib import Path
from types import SimpleNamespace

import pytest

import experiment.gates as gates
from experiment.contract.plan import build_plan
from experiment.contract.spec import load_spec
from experiment.gates import GATE_ORDER, GATES, Gate, GateVerdict, run_gate, step_family
from experiment.sft.steps import preflight_probe as sft_probe

SPECS = Path(__file__).resolve().parents[2] / "specs"


def _ctx(training_type: str, blocks: bool = True):
    planned = SimpleNamespace(blocks=blocks, reason="the plan says not applicable")
    return SimpleNamespace(plan=SimpleNamespace(training_type=training_type, role_to_arm={}, gate=lambda name: planned),
                           spec=SimpleNamespace(arms=[]))


def _with_gate(monkeypatch, steps):
    monkeypatch.setitem(GATES, "g", Gate("g", "?", "", "", steps))


def test_run_gate_runs_the_step_of_the_training_type_and_times_it(monkeypatch):
    _with_gate(monkeypatch, {"rl": lambda ctx: GateVerdict(gate="g", status="passed", reasons=["rl"]),
                             "sft": lambda ctx: GateVerdict(gate="g", status="passed", reasons=["sft"])})
    assert run_gate("g", _ctx("sft")).reasons == ["sft"]
    verdict = run_gate("g", _ctx("rl"))
    assert verdict.reasons == ["rl"] and verdict.duration_s is not None and verdict.duration_s >= 0


def test_a_training_type_without_a_step_is_not_implemented_never_passed(monkeypatch):
    _with_gate(monkeypatch, {"rl": lambda ctx: None})
    verdict = run_gate("g", _ctx("dpo"))
    assert verdict.status == "failed"
    assert verdict.reasons == ["not implemented: g for training_type 'dpo'"]


def test_a_gate_the_plan_marks_not_applicable_is_never_run(monkeypatch):
    _with_gate(monkeypatch, {"rl": lambda ctx: (_ for _ in ()).throw(AssertionError("ran"))})
    verdict = run_gate("g", _ctx("rl", blocks=False))
    assert (verdict.status, verdict.reasons) == ("not_applicable", ["the plan says not applicable"])


def test_every_gate_names_its_family_steps_and_never_branches_on_the_type():
    """Each gate's steps point into the family folders (experiment.<family>.steps.<gate>), the decision gate's
    through the one gate-level wrapper that posts what the family's step decided (experiment/gates/decision.py), or
    to spec_intake, the same for every family."""
    assert tuple(GATES) == GATE_ORDER
    assert 'training_type == "sft"' not in inspect.getsource(gates)
    with_sft = []
    for name, gate in GATES.items():
        assert gate.decides and gate.does and gate.rules, name
        if "sft" in gate.steps and name not in ("spec_intake", "generation_audit"):
            with_sft.append(name)
        for family, step in gate.steps.items():
            if getattr(step, "func", None) is gates.decision.decided:  # the family's step, wrapped by its gate
                step = step.args[0]
            if name in ("spec_intake", "generation_audit"):  # one step for every family
                assert step.__module__ in ("experiment.gates.spec_intake", "experiment.selfgen.steps.generation_audit")
            else:
                assert step.__module__ == f"experiment.{family}.steps.{name}", (name, family, step.__module__)
    assert with_sft == ["preflight_probe", "correctness_preflight", "restoration_preflight", "feasibility_pilot",
                        "arm_training", "evaluation", "decision"]
    assert GATES["preflight_probe"].steps["sft"] is sft_probe.run


def test_no_gate_is_looked_up_by_name_at_run_time():
    """The table is built from static imports (import-linter sees every edge); before, run_gate imported
    experiment.gates.<name> through importlib."""
    assert "importlib" not in inspect.getsource(gates)


def test_a_self_generated_tasks_run_takes_its_own_step_where_there_is_one_else_the_rl_step(monkeypatch):
    spec = load_spec(SPECS / "selfgen_tasks_vs_gsm8k.json")
    plan = build_plan(spec)
    ctx = SimpleNamespace(spec=spec, plan=SimpleNamespace(training_type="rl", role_to_arm=plan.role_to_arm,
                                                          gate=lambda name: SimpleNamespace(blocks=True)))
    assert step_family(ctx) == "selfgen"
    rl = lambda ctx: GateVerdict(gate="g", status="passed", reasons=["rl"])  # noqa: E731
    _with_gate(monkeypatch, {"rl": rl, "selfgen": lambda ctx: GateVerdict(gate="g", status="passed", reasons=["selfgen"])})
    assert run_gate("g", ctx).reasons == ["selfgen"]
    _with_gate(monkeypatch, {"rl": rl})
    assert run_gate("g", ctx).reasons == ["rl"]
    gs1 = load_spec(SPECS / "gs1_kernel_vs_grpo_gsm8k.json")
    assert step_family(SimpleNamespace(spec=gs1, plan=build_plan(gs1))) == "rl"


class _RecordingStore:
    """A store that keeps each RESULT update as it was posted (one dict per update_result call)."""

    def __init__(self):
        self.updates: list[dict] = []

    def update_result(self, **fields):
        self.updates.append(fields)


def test_the_decision_gate_posts_the_verdict_a_step_returns_with_its_grade_in_one_update(monkeypatch):
    """The run's verdict has one writer: the family's step returns its final fields and the gate
    (experiment.gates.decision.decided) posts them with RESULT.grade, graded on those pending fields."""
    graded = []
    monkeypatch.setattr(gates.decision, "own_grade",
                        lambda ctx, pending: graded.append(dict(pending)) or {"categories": {"decision": "green"}})
    handed = {}

    def step(ctx, validate):
        handed["validate"] = validate
        return GateVerdict(gate="decision", status="passed"), {"status": "succeeded", "verdict": "supported"}

    ctx = SimpleNamespace(store=_RecordingStore())
    verdict = gates.decision.decided(step, ctx)
    assert verdict.status == "passed"
    assert handed["validate"] is gates.decision.own_validation
    assert graded == [{"status": "succeeded", "verdict": "supported"}]
    assert ctx.store.updates == [{"grade": {"categories": {"decision": "green"}}, "status": "succeeded",
                                  "verdict": "supported"}]


def test_a_decision_step_that_fails_before_its_verdict_posts_nothing(monkeypatch):
    monkeypatch.setattr(gates.decision, "own_grade", lambda ctx, pending: pytest.fail("graded a failed step"))
    ctx = SimpleNamespace(store=_RecordingStore())
    verdict = gates.decision.decided(lambda ctx, validate: (GateVerdict(gate="decision", status="failed"), None), ctx)
    assert verdict.failed
    assert ctx.store.updates == []
