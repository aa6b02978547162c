"""Service calls from the flow: the service-wide limit per request in flight, capacity waits reported.

The training service's capacity is shared by every run, so one Prefect global concurrency limit,
`training-service` (created by deployments/setup.sh), caps the requests in flight at the service across
all runs on a Prefect server: deployment runs and CLI runs alike. `service_request_slots()` decides once per
run: a deployment run always takes slots (a missing limit refuses the run before its first service call);
any other run (`python -m flows.run` against the shared server named by PREFECT_API_URL) takes them
when that server holds the limit. A CLI run on its own temporary Prefect server has no such limit
and runs without one (it shares nothing).

`service_requests_limited()` is entered once around a run: every SDK request of the run's process holds
one slot while it is in flight (experiment/service/request_slots.py: a fan-out of 48 samples takes at most the
limit's slots and passes them from request to request; slots are given back when no request waits).

`capacity_guarded_caller(store, comparison_steps_completed)` is what the flow hands to the gates
(which import no Prefect): `call(fn)` runs `fn()`, retries capacity refusals per
`experiment.service.capacity.CapacityPolicy.from_env()`, and while waiting writes RESULT.capacity_wait,
an events.jsonl line and an INFO log line (a wait is expected; the capacity block that may end it
logs the one WARNING). RESULT.capacity_wait is cleared when the call ends, however it ends. An attempt
gets no more than the policy's answer deadline without any answer from the service
(`call_with_answer_deadline`): a service that stopped answering mid-run ends the run as a capacity
block whose reason says which call had no answer.

    call = capacity_guarded_caller(store, lambda: ctx.state.comparison_steps_completed)
    result = call(lambda: training_client.forward_backward(datums, "importance_sampling").result())
"""

from __future__ import annotations

import contextvars
import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from experiment.service.capacity import (
    AnswerWatch,
    CapacityPolicy,
    WaitInfo,
    call_with_answer_deadline,
    call_with_capacity_policy,
)
from experiment.service.request_slots import Release, RequestSlots, requests_limited_by

TRAINING_SERVICE_LIMIT = "training-service"


def service_limit_name() -> str:
    """The service-wide limit's name: `training-service`, or $RX_SERVICE_LIMIT_NAME (deployments/setup.sh reads
    it too) where one Prefect server's runs share another service, or a test keeps its limit to its own runs."""
    return os.environ.get("RX_SERVICE_LIMIT_NAME") or TRAINING_SERVICE_LIMIT

T = TypeVar("T")


def running_under_deployment() -> bool:
    from prefect.runtime import deployment

    return bool(deployment.id)


def _limit_slots(limit_name: str) -> int | None:
    """The slots of the global concurrency limit `limit_name`; None when this Prefect server holds no such limit."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    try:
        with get_client(sync_client=True) as client:
            return int(client.read_global_concurrency_limit_by_name(limit_name).limit)
    except ObjectNotFound:
        return None


def _missing(limit_name: str) -> "ServiceLimitMissing":
    return ServiceLimitMissing(f"this Prefect server has no global concurrency limit {limit_name!r}; "
                               "create it with deployments/setup.sh")


def service_limit_slots(limit_name: str | None = None) -> int:
    """The number of slots of the global concurrency limit; a missing limit is an error that says what to run."""
    limit_name = limit_name or service_limit_name()
    slots = _limit_slots(limit_name)
    if slots is None:
        raise _missing(limit_name)
    return slots


class ServiceLimitMissing(RuntimeError):
    """A deployment run whose Prefect server holds no service-wide limit."""


def take_prefect_slot(limit_name: str | None = None) -> Release:
    """One slot of the global concurrency limit, held (its lease renewed) by a thread of its own until the
    returned function gives it back. Blocks until the limit grants it; strict: no such limit is an error."""
    limit_name = limit_name or service_limit_name()
    from prefect.concurrency.sync import concurrency

    granted, done = threading.Event(), threading.Event()
    failure: list[BaseException] = []

    def hold() -> None:
        try:
            with concurrency(limit_name, occupy=1, strict=True):
                granted.set()
                done.wait()
        except BaseException as err:  # noqa: BLE001 - raised in the taking thread
            failure.append(err)
            granted.set()

    holder = threading.Thread(target=contextvars.copy_context().run, args=(hold,), name=f"slot of {limit_name}",
                              daemon=True)
    holder.start()
    granted.wait()
    if failure:
        raise failure[0]

    def give_back() -> None:
        done.set()
        holder.join()

    return give_back


@contextmanager
def service_slot_if_limited(limit_name: str | None = None) -> Iterator[None]:
    """One slot of the service-wide limit held around a request sent before a run's slots exist (a CLI run's check,
    before its claim, that a remote backend answers: flows.startup.remote_answer_problem), where this Prefect server
    holds the limit; none where it holds none (nor will the run's requests take any)."""
    limit_name = limit_name or service_limit_name()
    if _limit_slots(limit_name) is None:
        yield
        return
    give_back = take_prefect_slot(limit_name)
    try:
        yield
    finally:
        give_back()


def service_request_slots(limit_name: str | None = None) -> RequestSlots | None:
    """The slots a run's requests take, sized by the service-wide limit (read once per run); None for a run
    that does not use it: a run outside a deployment whose Prefect server holds no such limit.
    ServiceLimitMissing for a deployment run without the limit."""
    limit_name = limit_name or service_limit_name()
    slots = _limit_slots(limit_name)
    if slots is None:
        if running_under_deployment():
            raise _missing(limit_name)
        return None
    settings = contextvars.copy_context()  # this Prefect server (settings, the flow run) for the slot threads
    return RequestSlots(lambda: settings.copy().run(take_prefect_slot, limit_name), capacity=slots)


@contextmanager
def service_requests_limited(slots: RequestSlots | None, limit_name: str | None = None) -> Iterator[None]:
    """Around one run: each of its requests to the training service holds one of `slots` while it is in
    flight (experiment/service/request_slots.py); every slot is given back at the end, however the run ends."""
    limit_name = limit_name or service_limit_name()
    logger = _run_logger()
    if slots is None:
        logger.info("service requests run without a service-wide limit (this Prefect server has no %r limit)",
                    limit_name)
        yield
        return
    logger.info("service requests take a slot of the service-wide limit %r each (%d slots, shared by every run)",
                limit_name, slots.capacity)
    try:
        with requests_limited_by(slots):
            yield
    finally:
        slots.give_back_all()
        logger.info("service requests: at most %d in flight at once; %d slots taken from %r",
                    slots.most_in_flight, slots.slots_taken, limit_name)


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
    watch: AnswerWatch | None = None,
) -> Callable[[Callable[[], T]], T]:
    """call(fn) -> fn(), inside a service slot, with capacity refusals retried and reported.

    Raises experiment.service.capacity.CapacityBlocked when refusals outlast the policy (ServiceFailedMidRun when
    the service stopped answering or answered unreadably); user errors and crashes propagate unchanged.
    `watch`: the run's AnswerWatch, shared with its `wait_for_service` (a new one when None)."""
    policy = policy or CapacityPolicy.from_env()
    report = capacity_wait_reporter(store)
    watch = watch or AnswerWatch()  # one per run: an answer to any of its calls (nested ones included) counts

    def call(fn: Callable[[], T]) -> T:
        waited = False

        def on_wait(wait: WaitInfo) -> None:
            nonlocal waited
            waited = True
            watch.answered(quiet_for=wait.delay_seconds)  # a refusal answers "come back later"
            report(wait)

        def attempt() -> T:
            return call_with_answer_deadline(fn, policy.answer_deadline_seconds, watch, comparison_steps_completed)

        try:
            return call_with_capacity_policy(attempt, policy, comparison_steps_completed, on_wait)
        finally:
            if waited:  # the wait is over, however it ended; the events keep its history
                store.update_result(capacity_wait=None)

    return call
