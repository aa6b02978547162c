"""Gates: one module per gate, `experiment.gates.<name>.run(ctx) -> GateVerdict`, run by `run_gate`.

A gate module says what the gate decides and names, in its STEPS table, the step of each family
that does the work: `experiment.rl.steps.<gate>` (RL: GS1 and stock GRPO), `experiment.sft.steps.<gate>`
(SFT: TriMuon) and, where the self-generated-tasks spec differs from plain RL,
`experiment.selfgen.steps.<gate>`. `dispatch` picks the step (`step_family`); no gate branches on
the training type. Read a run gate by gate from here into its family folder.

A gate the plan marks not applicable is never run: `run_gate` returns `not_applicable` with the
plan's reason. A gate whose logic is not built yet returns `failed` ("not implemented: ...").
The gate order and verdict type live in experiment.contract.verdict, the context in
experiment.run.context; they are re-exported here for the gate modules and the flow.
"""

from __future__ import annotations

import importlib
import time
from typing import Callable

from experiment.contract.verdict import GATE_ORDER, GateStatus, GateVerdict, not_implemented
from experiment.run.context import RunContext, run_side_by_side

__all__ = ["GATE_ORDER", "GateStatus", "GateVerdict", "RunContext", "dispatch", "not_implemented", "run_gate",
           "run_side_by_side", "step_family"]

Step = Callable[[RunContext], GateVerdict]


def step_family(ctx: RunContext) -> str:
    """The family whose gate steps a run takes: its training type ("rl", "sft"), or "selfgen" for an RL
    spec whose treatment arm trains on the audited self-generated tasks (Spec.data_source)."""
    if ctx.plan.training_type == "rl":
        treatment = ctx.plan.role_to_arm.get("treatment", {}).get("arm", "")
        if any(arm.name == treatment for arm in ctx.spec.arms or []) and \
                ctx.spec.data_source(treatment) == "generated_tasks":
            return "selfgen"
    return ctx.plan.training_type


def dispatch(gate: str, steps: dict[str, Step], ctx: RunContext) -> GateVerdict:
    """Run the step of the run's family from a gate's STEPS table ({"rl": fn, "sft": fn, "selfgen": fn}).

    One place decides by family: a gate module lists its steps and never branches on the type. A
    self-generated-tasks run takes the RL step where the table names no "selfgen" step of its own."""
    family = step_family(ctx)
    step = steps.get(family) or (steps.get("rl") if family == "selfgen" else None)
    if step is None:
        return not_implemented(gate, f"{gate} for training_type {ctx.plan.training_type!r}")
    return step(ctx)


def run_gate(name: str, ctx: RunContext) -> GateVerdict:
    """Run one gate with its plan entry honoured and its duration measured."""
    planned = ctx.plan.gate(name)
    if not planned.blocks:
        return GateVerdict(gate=name, status="not_applicable", reasons=[planned.reason])
    started = time.monotonic()
    module = importlib.import_module(f"experiment.gates.{name}")
    verdict = module.run(ctx)
    verdict.duration_s = round(time.monotonic() - started, 3)
    return verdict
