"""Per-arm work as its own Prefect task run: each arm's training and each arm's evaluation.

The gates hand their per-arm work to `RunContext.run_each(kind, {arm: fn})`; the flow installs
`run_arm_tasks`, which submits one `train-<arm>` / `evaluate-<arm>` task run per arm, side by side
under the gate's task run, each with its own progress artifact and its own retry. A retry is only
for a crash of the arm's own work; a capacity refusal past the policy (the flow stops the run) and a
refused request (4xx: retrying cannot help) are never retried; a capacity refusal ends the arm's task run
`Completed(name="CapacityBlocked")` with the refusal as its value (tasks/capacity.py). The work itself resumes from the
store, so a retried arm continues from its last saved step.
"""

from __future__ import annotations

from typing import Any, Callable

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import quote

from experiment.service.capacity import classify
from tasks.capacity import capacity_refusal_state

ARM_RETRIES = 1
ARM_RETRY_DELAY_S = 5


def _retry_crashes_only(task, task_run, state) -> bool:
    try:
        state.result()
    except Exception as err:  # noqa: BLE001 - the question is only which kind of failure it was
        return type(err).__name__ != "CapacityBlocked" and classify(err) == "crash"
    return False


@task(name="arm", cache_policy=NO_CACHE, retries=ARM_RETRIES, retry_delay_seconds=ARM_RETRY_DELAY_S,
      retry_condition_fn=_retry_crashes_only)
def arm_work(work: Callable[[], Any]) -> Any:
    try:
        return work()
    except Exception as err:  # a capacity refusal is the arm's outcome (no ERROR, no traceback); the rest raises
        return capacity_refusal_state(err)


def run_arm_tasks(kind: str, work: dict[str, Callable[[], Any]]) -> dict[str, Any]:
    """`RunContext.run_each` for a flow run: one task run per arm, submitted together, awaited together."""
    futures = {name: arm_work.with_options(name=kind, task_run_name=f"{kind}-{name}").submit(quote(fn))
               for name, fn in work.items()}
    outcomes: dict[str, Any] = {}
    for name, future in futures.items():
        try:
            outcomes[name] = future.result()
        except BaseException as err:  # reported per arm, like the threads the gates use without Prefect
            outcomes[name] = err
    return outcomes
