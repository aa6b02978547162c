"""Gates: one module per gate, `experiment.gates.<name>.run(ctx) -> GateVerdict`, run by `run_gate`.

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
           "run_side_by_side"]

Step = Callable[[RunContext], GateVerdict]


def dispatch(gate: str, steps: dict[str, Step], ctx: RunContext) -> GateVerdict:
    """Run the step of the spec's training type from a gate's STEPS table ({"rl": fn, "sft": fn}).

    One place decides by training type: a gate module lists its steps and never branches on the type."""
    step = steps.get(ctx.plan.training_type)
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
