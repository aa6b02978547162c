"""A capacity refusal as a task's value: an expected outcome, so no ERROR line and no traceback.

A gate or arm task whose service stayed busy (a `CapacityBlocked` from the capacity policy of
experiment.service.capacity, or a refusal the SDK gave up on) ends `Completed(name="CapacityBlocked")`
with the refusal as its result. The per-arm work hands it to its gate like any arm outcome; the
flow reads it from the gate task, releases the run's clients, writes the `capacity_block` record
and logs one WARNING line. Any other exception is raised again unchanged (a bug stays loud).
"""

from __future__ import annotations

from prefect.states import Completed, State

from experiment.service.capacity import is_capacity_refusal, safe_error_text


def capacity_refusal_state(err: Exception) -> State:
    """Completed(name="CapacityBlocked", data=err) for a capacity refusal; re-raises anything else."""
    if not is_capacity_refusal(err):
        raise err
    return Completed(name="CapacityBlocked", message=safe_error_text(err), data=err)
