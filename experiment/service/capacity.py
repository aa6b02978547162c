"""Capacity errors and how long a run waits for a busy training service (CAP-1).

Every error a service call raises falls in one of three classes (`classify`):

    capacity  the service is busy; retrying later can succeed. HTTP 429 and 503, a message saying
              "trainer capacity exhausted" (anywhere, any exception type), and HTTP 408 (the SDK's
              "try again": the request sat in a paused queue). These surface only after the SDK
              gave up its own retries (per HTTP call, then for minutes), as RateLimitError,
              InternalServerError(503), APIStatusError(408/429/503) or RequestFailedError whose
              message says capacity exhausted; wrappers are looked through (__cause__/__context__).
    user      the request is wrong and will stay wrong: HTTP 4xx other than 408/409/429 (400, 401,
              403, 404, 422, ...), and RequestFailedError with category "user" (e.g. optimizer
              family mismatch at optim_step).
    crash     everything else: 500/502/504 and 409 after the SDK's retries, RequestFailedError with
              category server/unknown, connection errors and timeouts (the SDK already retried those
              until its own progress timeout, so the service is unreachable rather than busy), bugs.

Only capacity errors are retried here. `call_with_capacity_policy` waits 1, 2, 4 minutes, then 4
minutes again and again, and gives up with `CapacityBlocked` once refusals have lasted ~10 minutes
while no comparison training step has run, or ~30 minutes once some have (finished work is worth a
longer wait). `RX_CAPACITY_TIME_SCALE` (e.g. 0.01) scales every wait and limit down for tests.

A service that stops answering (a call held open, a connection closed mid-response that the SDK
retries, an answer it cannot read) would otherwise stall a run for the SDK's own progress timeout
(120 minutes). `call_with_answer_deadline` bounds it: when no service call of the run has been answered
for `CapacityPolicy.answer_deadline_seconds` (the contract's ~10 minutes of refusals; not scaled by
`time_scale`, so a scaled-down test policy never cuts off a slow but answering call;
$RX_SERVICE_ANSWER_DEADLINE sets it), the call raises `ServiceStoppedAnswering`, a `CapacityBlocked`:
the run stops the way a capacity block stops it (clients released, `capacity_block`, resumable).
A call the service answered with something the SDK cannot read (not JSON, not the expected shape) or whose
connection it closed until the SDK gave up raises `ServiceAnswerUnreadable` the same way: both are a
`ServiceFailedMidRun`, never a crash of the run. Every wait on the service goes through
`call_with_answer_deadline` (the flow's `RunContext.call_service` and `RunContext.wait_for_service`); work
that makes many calls inside one wait (an async rollout batch, an evaluation) reports each answer with
`service_answered()`, so only silence, never length, ends it.

Orchestrator-free: the flow passes `on_wait` to update RESULT and log a progress line
(flows/concurrency.py: capacity_guarded_caller).
"""

from __future__ import annotations

import contextvars
import json
import os
import re
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit, urlunsplit

ErrorClass = Literal["capacity", "user", "crash"]

CAPACITY_MESSAGE = "trainer capacity exhausted"
CAPACITY_STATUS_CODES = frozenset({408, 429, 503})
RETRIED_BY_SDK_NOT_USER = frozenset({408, 409, 429})  # 4xx the SDK itself treats as transient
TIME_SCALE_ENV = "RX_CAPACITY_TIME_SCALE"
ANSWER_DEADLINE_ENV = "RX_SERVICE_ANSWER_DEADLINE"
SECRET_ENV_NAMES = (
    "TINKER_API_KEY",
    "MODAL_PROXY_TOKEN_ID",
    "MODAL_PROXY_TOKEN_SECRET",
    "RUNS_PROXY_TOKEN_ID",
    "RUNS_PROXY_TOKEN_SECRET",
)
MAX_ERROR_TEXT = 500

T = TypeVar("T")


# ---------------------------------------------------------------- classification


def _exception_chain(exc: BaseException) -> list[BaseException]:
    """exc, then what it wraps (__cause__, else __context__), without looping."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not seen for seen in chain):
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _status_code(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def _request_failed_category(exc: BaseException) -> str | None:
    """The category of a tinker RequestFailedError ("user", "server", "unknown"), else None."""
    from tinker import (
        RequestFailedError,  # the SDK is a dependency; imported lazily to keep import cheap
    )

    if isinstance(exc, RequestFailedError):
        return str(exc.category).lower()
    return None


def classify(exc: BaseException) -> ErrorClass:
    """'capacity', 'user' or 'crash' for an exception raised by a service call (see module doc)."""
    chain = _exception_chain(exc)
    if any(CAPACITY_MESSAGE in str(link).lower() for link in chain):
        return "capacity"
    for link in chain:
        status = _status_code(link)
        if status in CAPACITY_STATUS_CODES:
            return "capacity"
        if status is not None and 400 <= status < 500 and status not in RETRIED_BY_SDK_NOT_USER:
            return "user"
        if _request_failed_category(link) == "user":
            return "user"
    return "crash"


# ---------------------------------------------------------------- error text without secrets

_URL = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>]+")
# the SDK's f"{self.request_id=}" / f"{self.model_cls=}" debugging text in its error messages
# ("... for self.request_id='abc' and expected type self.model_cls=<class 'tinker.types.X'>")
_SDK_INTERNALS = re.compile(r"\s*(?:for|of|and expected type|\()?\s*self\.[A-Za-z_]+=(?:<[^>]*>|'[^']*'|\"[^\"]*\"|[^\s,)]*)\)?")
_TINKER_KEY = re.compile(r"\btml-[A-Za-z0-9_-]{4,}")


def _redact_url(match: re.Match[str]) -> str:
    try:
        parts = urlsplit(match.group(0))
        host = parts.hostname or ""
        if parts.port:
            host += f":{parts.port}"
        return urlunsplit((parts.scheme, host, parts.path, "", ""))
    except ValueError:
        return "[url]"


def safe_error_text(exc: BaseException) -> str:
    """One line naming the error, fit for RESULT and logs: no credentials, no URL user/query parts, no
    SDK internals (its `self.request_id=...` / `self.model_cls=<class ...>` debugging text)."""
    text = f"{type(exc).__name__}: {exc}"
    status = _status_code(exc)
    if status is not None and str(status) not in text:
        text = f"{type(exc).__name__} (HTTP {status}): {exc}"
    for name in SECRET_ENV_NAMES:
        value = os.environ.get(name)
        if value and len(value) >= 4:
            text = text.replace(value, "[redacted]")
    text = _SDK_INTERNALS.sub("", text)
    text = _URL.sub(_redact_url, text)
    text = _TINKER_KEY.sub("[redacted]", text)
    text = " ".join(text.split())
    return text if len(text) <= MAX_ERROR_TEXT else text[: MAX_ERROR_TEXT - 3] + "..."


# ---------------------------------------------------------------- policy


@dataclass(frozen=True)
class CapacityPolicy:
    """Backoff between capacity refusals and how long refusals may last, in unscaled seconds.

    The last backoff value repeats. Every duration is multiplied by `time_scale`."""

    backoff_seconds: tuple[float, ...] = (60, 120, 240)
    max_wait_before_comparison: float = 600
    max_wait_after_comparison: float = 1800
    time_scale: float = 1.0
    requeue_delay: float = 600  # a deployment run blocked by capacity starts again this much later
    max_requeues: int = 3
    answer_deadline_seconds: float = 600  # no answer to any call for this long ends the run; never scaled

    def __post_init__(self):
        if not self.backoff_seconds or any(delay <= 0 for delay in self.backoff_seconds):
            raise ValueError("backoff_seconds needs at least one positive delay")
        if self.time_scale <= 0:
            raise ValueError("time_scale must be positive")
        if not self.answer_deadline_seconds > 0:
            raise ValueError("answer_deadline_seconds must be positive")

    @classmethod
    def from_env(cls, **overrides: Any) -> CapacityPolicy:
        """The contract's policy, scaled by $RX_CAPACITY_TIME_SCALE when set (tests use 0.01)."""
        for field, env, what in (("time_scale", TIME_SCALE_ENV, "a number"),
                                 ("answer_deadline_seconds", ANSWER_DEADLINE_ENV, "a number of seconds")):
            raw = os.environ.get(env)
            if raw and field not in overrides:
                try:
                    overrides[field] = float(raw)
                except ValueError:
                    raise ValueError(f"{env} must be {what} (got {raw!r})") from None
        return cls(**overrides)

    def delay_before_retry(self, refusal_number: int) -> float:
        """Seconds to wait after the n-th consecutive refusal (1-based): 60, 120, 240, 240, ..."""
        index = min(refusal_number, len(self.backoff_seconds)) - 1
        return self.backoff_seconds[index] * self.time_scale

    def refusal_limit(self, comparison_steps_completed: int) -> float:
        """How long refusals may last before the run stops: ~10 min before any comparison step, ~30 after."""
        limit = self.max_wait_after_comparison if comparison_steps_completed > 0 else self.max_wait_before_comparison
        return limit * self.time_scale

    def requeue_delay_seconds(self) -> float:
        return self.requeue_delay * self.time_scale


@dataclass(frozen=True)
class WaitInfo:
    """Passed to `on_wait` before each wait: what was refused and how much waiting budget is left."""

    refusal_number: int  # consecutive refusals of this call so far (1 = first)
    error: str  # safe_error_text of the refusal
    delay_seconds: float  # the wait about to start
    waited_seconds: float  # how long refusals have lasted so far
    limit_seconds: float  # refusal_limit for the current comparison step count
    remaining_seconds: float  # limit_seconds - waited_seconds (before this wait)
    comparison_steps_completed: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def progress_line(self) -> str:
        phase = (
            f"{self.comparison_steps_completed} comparison steps done"
            if self.comparison_steps_completed
            else "no comparison step yet"
        )
        return (
            f"service at capacity (refusal {self.refusal_number}: {self.error}); "
            f"retrying in {_seconds(self.delay_seconds)}; refused for {_seconds(self.waited_seconds)} of "
            f"{_seconds(self.limit_seconds)} allowed ({phase}), {_seconds(self.remaining_seconds)} left"
        )


def _seconds(value: float) -> str:
    return f"{value:.0f} s" if abs(value) >= 10 else f"{value:.2g} s"


class CapacityBlocked(Exception):
    """Capacity refusals outlasted the policy's limit. Carries no secrets (error is safe_error_text)."""

    def __init__(self, error_message: str, comparison_steps_completed: int, waited_seconds: float):
        self.error_message = error_message
        self.comparison_steps_completed = comparison_steps_completed
        self.waited_seconds = waited_seconds
        super().__init__(
            f"capacity block after {waited_seconds:.0f} s of refusals "
            f"({comparison_steps_completed} comparison steps completed): {error_message}"
        )

    def __reduce__(self):  # exceptions carried by flow states get pickled
        return (type(self), (self.error_message, self.comparison_steps_completed, self.waited_seconds))


def call_with_capacity_policy(
    fn: Callable[[], T],
    policy: CapacityPolicy,
    comparison_steps_completed: Callable[[], int],
    on_wait: Callable[[WaitInfo], None],
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """fn(), retried on capacity errors only; user errors and crashes propagate at once.

    Refusal time counts from the start of the first refused attempt (so time the SDK already spent
    retrying inside that attempt counts). The last wait is shortened so one final attempt happens
    at the limit; if that is refused too, CapacityBlocked is raised from the last refusal."""
    first_refused_attempt_started: float | None = None
    refusal_number = 0
    while True:
        attempt_started = clock()
        try:
            return fn()
        except Exception as exc:
            if classify(exc) != "capacity":
                raise
            error = exc
        if first_refused_attempt_started is None:
            first_refused_attempt_started = attempt_started
        refusal_number += 1
        steps = comparison_steps_completed()
        waited = clock() - first_refused_attempt_started
        limit = policy.refusal_limit(steps)
        remaining = limit - waited
        if remaining <= 0:
            raise CapacityBlocked(safe_error_text(error), steps, waited) from error
        delay = min(policy.delay_before_retry(refusal_number), remaining)
        on_wait(
            WaitInfo(
                refusal_number=refusal_number,
                error=safe_error_text(error),
                delay_seconds=delay,
                waited_seconds=waited,
                limit_seconds=limit,
                remaining_seconds=remaining,
                comparison_steps_completed=steps,
            )
        )
        sleep(delay)


class ServiceFailedMidRun(CapacityBlocked):
    """The service broke while the run waited on it (no answer, or one that cannot be read): the run stops
    as on a capacity block (clients released, record failed, resumable), with this reason as
    `capacity_block.error`; never a crash of the run (the CLI exits 2: the backend, as at its preconditions)."""


class ServiceStoppedAnswering(ServiceFailedMidRun):
    """No service call of the run was answered for the policy's answer deadline."""

    def __init__(self, call_name: str, silent_seconds: float, comparison_steps_completed: int):
        self.call_name = call_name
        reason = f"the service stopped answering: {call_name} had no answer for {silent_seconds:.0f} s"
        super().__init__(reason, comparison_steps_completed, silent_seconds)
        self.args = (reason,)

    def __str__(self) -> str:
        return self.error_message

    def __reduce__(self):
        return (type(self), (self.call_name, self.waited_seconds, self.comparison_steps_completed))


class ServiceAnswerUnreadable(ServiceFailedMidRun):
    """The service answered a call with something the SDK cannot read (not JSON, not the expected shape), or
    closed its connection mid-answer until the SDK gave up retrying."""

    def __init__(self, call_name: str, error: str, comparison_steps_completed: int):
        self.call_name, self.error = call_name, error
        reason = f"the service's answer to {call_name} could not be read ({error})"
        super().__init__(reason, comparison_steps_completed, 0.0)
        self.args = (reason,)

    def __str__(self) -> str:
        return self.error_message

    def __reduce__(self):
        return (type(self), (self.call_name, self.error, self.comparison_steps_completed))


def _raised_in_sdk(exc: BaseException) -> bool:
    """Whether `exc` was raised inside the tinker SDK (its response handling), not by the caller's own code."""
    traceback = exc.__traceback__
    while traceback is not None:
        if "/tinker/" in traceback.tb_frame.f_code.co_filename.replace("\\", "/"):
            return True
        traceback = traceback.tb_next
    return False


def unreadable_answer(exc: BaseException) -> bool:
    """A service answer the SDK could not read: a connection closed or timed out after the SDK's own retries
    (APIConnectionError), a body that is not the expected shape (APIResponseValidationError), or one that
    does not parse (a JSON, text or pydantic validation error raised inside the SDK)."""
    import pydantic
    from tinker import APIConnectionError, APIResponseValidationError

    for link in _exception_chain(exc):
        if isinstance(link, (APIConnectionError, APIResponseValidationError)):
            return True
        if isinstance(link, (json.JSONDecodeError, UnicodeDecodeError, pydantic.ValidationError)) and _raised_in_sdk(link):
            return True
    return False


_RUN_WATCH: contextvars.ContextVar[AnswerWatch | None] = contextvars.ContextVar("service_answer_watch", default=None)


def service_answered() -> None:
    """Tell the run's answer watch that the service just answered (a sample, a step inside a longer wait);
    a no-op outside `call_with_answer_deadline`."""
    watch = _RUN_WATCH.get()
    if watch is not None:
        watch.answered()


async def answered(awaitable: Awaitable[T]) -> T:
    """`await awaitable` (one service request inside a longer wait), its answer counted by `service_answered()`."""
    result = await awaitable
    service_answered()
    return result


class AnswerWatch:
    """When the service last answered one of this run's calls. A capacity refusal is an answer that
    says "come back in `delay`": until then the service counts as answering."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._lock = threading.Lock()
        self._answered_at = clock()

    def answered(self, quiet_for: float = 0.0) -> None:
        with self._lock:
            self._answered_at = max(self._answered_at, self._clock() + quiet_for)

    def now(self) -> float:
        return self._clock()

    def silent_for(self, since: float) -> float:
        """Seconds without an answer, counted from `since` (the call's start) at the earliest."""
        with self._lock:
            return self._clock() - max(since, self._answered_at)


def describe_call(fn: Callable[..., Any]) -> str:
    """A service call's name for a reason line: where it is made (`ClientSession.close`, or
    `ArmTrainer._step_with_capacity.attempt` for a local function; a lambda by its file and line)."""
    name = getattr(fn, "__qualname__", type(fn).__name__).replace("<locals>.", "")
    code = getattr(fn, "__code__", None)
    if name.endswith("<lambda>") and code is not None:
        module = getattr(fn, "__module__", "") or ""
        owner = name.removesuffix("<lambda>").removesuffix(".") or "a call"
        return f"{owner} (the call at {module.replace('.', '/')}.py:{code.co_firstlineno})"
    return name


def call_with_answer_deadline(fn: Callable[[], T], deadline_seconds: float, watch: AnswerWatch,
                              comparison_steps_completed: Callable[[], int]) -> T:
    """fn() (made in a daemon thread, in this thread's context), or ServiceStoppedAnswering once no call
    of the run has been answered for `deadline_seconds` while fn waits (`service_answered()` inside fn
    counts), or ServiceAnswerUnreadable when fn raised on an answer the SDK could not read. A call that
    never returns is left behind in its thread: the run stops, and its session's close is bounded too."""
    outcome: dict[str, Any] = {}
    finished = threading.Event()
    context = contextvars.copy_context()
    context.run(_RUN_WATCH.set, watch)

    def make_call() -> None:
        try:
            outcome["value"] = context.run(fn)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread, raised there
            outcome["error"] = exc
        finally:
            watch.answered()
            finished.set()

    started = watch.now()
    threading.Thread(target=make_call, name=f"service call {describe_call(fn)}", daemon=True).start()
    while not finished.is_set():
        remaining = deadline_seconds - watch.silent_for(started)
        if remaining <= 0:
            raise ServiceStoppedAnswering(describe_call(fn), watch.silent_for(started), comparison_steps_completed())
        finished.wait(remaining)
    if "error" in outcome:
        error = outcome["error"]
        if not isinstance(error, CapacityBlocked) and unreadable_answer(error):
            raise ServiceAnswerUnreadable(describe_call(fn), safe_error_text(error), comparison_steps_completed()) from error
        raise error
    return outcome["value"]


def answer_bounded(policy: CapacityPolicy, watch: AnswerWatch,
                   comparison_steps_completed: Callable[[], int]) -> Callable[[Callable[[], T]], T]:
    """wait(fn) -> fn() under the run's answer deadline only (no capacity retries): for work that waits on
    the service through many calls at once (`RunContext.wait_for_service`)."""
    return lambda fn: call_with_answer_deadline(fn, policy.answer_deadline_seconds, watch, comparison_steps_completed)


def capacity_block_record(blocked: CapacityBlocked, released_clients: bool) -> dict[str, Any]:
    """RESULT's `capacity_block` object (CAP-1)."""
    return {
        "error": blocked.error_message,
        "comparison_steps_completed": int(blocked.comparison_steps_completed),
        "released_clients": bool(released_clients),
    }


def is_capacity_refusal(err: BaseException) -> bool:
    """A busy service (classified "capacity", or the policy already gave up) or a broken one (an answer the SDK
    could not read), never a rejection of the request: the probes re-raise it so the flow stops or waits per CAP-1."""
    return isinstance(err, CapacityBlocked) or classify(err) == "capacity" or unreadable_answer(err)


def as_capacity_block(err: BaseException, steps_completed: int) -> CapacityBlocked | None:
    """`err` as a capacity stop (also when the SDK itself gave up on a busy service outside any
    policy, or could not read its answer), or None when it is something else (a user error or a crash)."""
    if isinstance(err, CapacityBlocked):
        return err
    if unreadable_answer(err):  # a wait that did not go through call_with_answer_deadline
        return ServiceAnswerUnreadable("a service call", safe_error_text(err), steps_completed)
    if classify(err) == "capacity":
        return CapacityBlocked(safe_error_text(err), steps_completed, 0.0)
    return None
