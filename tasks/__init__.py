"""One thin Prefect task per gate, in contract order (experiment.gates.GATE_ORDER), built from one definition.

`GATE_TASKS[name]` is a `@task(name=<gate with dashes>)` that calls `experiment.gates.run_gate(name, ctx)`;
the gate table is experiment/gates/__init__.py (GATES), the logic in each family's steps. Per-arm task runs are in tasks/arms.py. A capacity stop is an
expected outcome, not a task failure: the task ends `Completed(name="CapacityBlocked")` with the refusal as its
value (tasks/capacity.py), so the log holds one WARNING line from the flow instead of an ERROR and tracebacks.
"""

from prefect import task
from prefect.states import State
from prefect.cache_policies import NO_CACHE

from experiment.gates import GATE_ORDER, GATES, GateVerdict, RunContext, run_gate
from tasks.capacity import capacity_refusal_state


def gate_task(name: str):
    """The Prefect task of gate `name`: task name with dashes (spec-intake), one run of the gate."""

    def run(ctx: RunContext) -> GateVerdict | State:
        try:
            return run_gate(name, ctx)
        except Exception as err:
            return capacity_refusal_state(err)

    run.__name__ = run.__qualname__ = name
    run.__doc__ = f"Prefect task for the `{name}` gate: {GATES[name].decides} (experiment.gates.GATES)"
    return task(name=name.replace("_", "-"), cache_policy=NO_CACHE)(run)


GATE_TASKS = {name: gate_task(name) for name in GATE_ORDER}
