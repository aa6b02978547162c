"""Service calls from the flow: one concurrency slot per call, capacity waits reported as they happen.

`service_call_slot()` holds one slot of the global concurrency limit `training-service` (created by
deployments/setup.sh) around a call when the run comes from a deployment; `strict=True` makes a
missing limit an error instead of a warning. Ad-hoc runs (`python -m flows.run`, tests) run on a
temporary Prefect server that has no such limit, so there the slot is a no-op.

`capacity_guarded_caller(store, comparison_steps_completed)` is what the flow hands to the gates
(which import no Prefect): `call(fn)` runs `fn()` inside a slot, retries capacity refusals per
`experiment.run.capacity.CapacityPolicy.from_env()`, and while waiting writes RESULT.capacity_wait,
an events.jsonl line and an INFO log line (a wait is expected; the capacity block that may end it
logs the one WARNING). RESULT.capacity_wait is cleared when the call ends, however it ends. The slot is held per attempt, never while sleeping.

    call = capacity_guarded_caller(store, lambda: ctx.state.comparison_steps_completed)
    result = call(lambda: training_client.forward_backward(datums, "importance_sampling").result())
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from experiment.run.capacity import CapacityPolicy, WaitInfo, call_with_capacity_policy

TRAINING_SERVICE_LIMIT = "training-service"

T = TypeVar("T")


def running_under_deployment() -> bool:
    from prefect.runtime import deployment

    return bool(deployment.id)


@contextmanager
def service_call_slot(limit_name: str = TRAINING_SERVICE_LIMIT, under_deployment: bool | None = None) -> Iterator[None]:
    """One slot of the global concurrency limit around a service call (deployment runs only).

    `under_deployment` saves the runtime lookup (it may cost an API call) when the caller knows."""
    if under_deployment is None:
        under_deployment = running_under_deployment()
    if not under_deployment:
        yield
        return
    from prefect.concurrency.sync import concurrency

    with concurrency(limit_name, occupy=1, strict=True):
        yield


def _run_logger() -> logging.Logger | logging.LoggerAdapter:
    from prefect import get_run_logger
    from prefect.exceptions import MissingContextError

    try:
        return get_run_logger()
    except MissingContextError:
        return logging.getLogger("flows.capacity")


def capacity_wait_reporter(store: Any) -> Callable[[WaitInfo], None]:
    """on_wait for call_with_capacity_policy: RESULT.capacity_wait, an event and a progress log line."""

    def report(wait: WaitInfo) -> None:
        store.update_result(capacity_wait=wait.to_dict())
        store.append_event("capacity_wait", **wait.to_dict())
        _run_logger().info(wait.progress_line())  # expected while a service is busy; a block itself warns

    return report


def capacity_guarded_caller(
    store: Any,
    comparison_steps_completed: Callable[[], int],
    policy: CapacityPolicy | None = None,
) -> Callable[[Callable[[], T]], T]:
    """call(fn) -> fn(), inside a service slot, with capacity refusals retried and reported.

    Raises experiment.run.capacity.CapacityBlocked when refusals outlast the policy; user errors and
    crashes propagate unchanged."""
    policy = policy or CapacityPolicy.from_env()
    report = capacity_wait_reporter(store)
    under_deployment = running_under_deployment()  # looked up once, not per call

    def call(fn: Callable[[], T]) -> T:
        waited = False

        def on_wait(wait: WaitInfo) -> None:
            nonlocal waited
            waited = True
            report(wait)

        def attempt() -> T:
            with service_call_slot(under_deployment=under_deployment):
                return fn()

        try:
            return call_with_capacity_policy(attempt, policy, comparison_steps_completed, on_wait)
        finally:
            if waited:  # the wait is over, however it ended; the events keep its history
                store.update_result(capacity_wait=None)

    return call
