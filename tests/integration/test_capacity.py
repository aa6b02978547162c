"""Capacity errors and the wait policy (CAP-1).

Errors are the real tinker 0.38 exception classes, built the way the SDK builds them (status errors
from an httpx.Response through the client's own `_make_status_error_from_response`, failed futures
as RequestFailedError with the server's category). Waiting 10 or 30 real minutes is a fault no
test can afford, so the policy runs against `FakeClock`, a stand-in clock whose sleep advances it.
"""

from __future__ import annotations

import httpx
import pytest
import tinker
from tinker._client import AsyncTinker
from tinker.types import RequestErrorCategory

from experiment.service.capacity import (
    CapacityBlocked,
    CapacityPolicy,
    call_with_capacity_policy,
    capacity_block_record,
    classify,
    safe_error_text,
)

SERVICE_URL = "http://127.0.0.1:9/api/v1/create_model"


@pytest.fixture(scope="module")
def sdk_client():
    client = AsyncTinker(base_url="http://127.0.0.1:9", api_key="tml-test-key")
    yield client


def status_error(sdk_client, status: int, message: str = "refused") -> tinker.APIStatusError:
    """The exception the SDK raises for an HTTP answer with this status and the server's error body."""
    response = httpx.Response(
        status, json={"error": message, "category": "server"}, request=httpx.Request("POST", SERVICE_URL)
    )
    return sdk_client._make_status_error_from_response(response)


def failed_future(message: str, category: RequestErrorCategory) -> tinker.RequestFailedError:
    """What APIFuture.result() raises when the server reports the request failed (api_future_impl)."""
    return tinker.RequestFailedError(
        f"Request failed: {message} for self.request_id='req-1' and expected type self.model_cls=<class 'X'>",
        request_id="req-1",
        category=category,
    )


class FakeClock:
    """Stand-in for time.monotonic/time.sleep: sleeping advances the clock, nothing really waits."""

    def __init__(self):
        self.now = 1000.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


class ScriptedCall:
    """fn for the policy: raises the given errors in order, then returns `result`."""

    def __init__(self, errors, result="done"):
        self.errors = list(errors)
        self.result = result
        self.calls = 0

    def __call__(self):
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return self.result


# ---------------------------------------------------------------- classify


@pytest.mark.parametrize("status", [429, 503, 408])
def test_busy_statuses_are_capacity(sdk_client, status):
    assert classify(status_error(sdk_client, status)) == "capacity"


def test_sdk_status_classes_for_busy_answers(sdk_client):
    assert isinstance(status_error(sdk_client, 429), tinker.RateLimitError)
    assert isinstance(status_error(sdk_client, 503), tinker.InternalServerError)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_client_errors_are_user_errors(sdk_client, status):
    assert classify(status_error(sdk_client, status)) == "user"


@pytest.mark.parametrize("status", [409, 500, 502, 504])
def test_other_server_answers_are_crashes(sdk_client, status):
    assert classify(status_error(sdk_client, status)) == "crash"


def test_capacity_exhausted_message_is_capacity_whatever_the_type(sdk_client):
    text = "CapacityExhausted: trainer capacity exhausted: no trainer is available for a new model, retry later"
    assert classify(failed_future(text, RequestErrorCategory.Server)) == "capacity"
    assert classify(status_error(sdk_client, 400, "Trainer capacity exhausted")) == "capacity"
    assert classify(RuntimeError("trainer capacity exhausted")) == "capacity"


def test_failed_future_categories():
    mismatch = "optimizer params 'trimuon' do not match the model's optimizer {'type': 'adamw'}"
    assert classify(failed_future(mismatch, RequestErrorCategory.User)) == "user"
    assert classify(failed_future("RuntimeError: boom", RequestErrorCategory.Server)) == "crash"
    assert classify(failed_future("RuntimeError: boom", RequestErrorCategory.Unknown)) == "crash"


def test_connection_errors_and_bugs_are_crashes():
    request = httpx.Request("POST", SERVICE_URL)
    assert classify(tinker.APIConnectionError(request=request)) == "crash"
    assert classify(tinker.APITimeoutError(request=request)) == "crash"
    assert classify(KeyError("x")) == "crash"


def test_wrapped_status_is_looked_through(sdk_client):
    # api_future_impl raises ValueError("Error retrieving result: ...") from the status error
    try:
        try:
            raise status_error(sdk_client, 503)
        except tinker.APIStatusError as inner:
            raise ValueError("Error retrieving result: ... with status 503") from inner
    except ValueError as outer:
        assert classify(outer) == "capacity"


def test_error_text_carries_no_credentials(sdk_client, monkeypatch):
    monkeypatch.setenv("MODAL_PROXY_TOKEN_SECRET", "ws-supersecret-value")
    error = RuntimeError(
        "trainer capacity exhausted at https://user:pw@spindle.example/api/v1/x?token=abc "
        "(key tml-abcdef123456, secret ws-supersecret-value)"
    )
    text = safe_error_text(error)
    for secret in ("user:pw", "token=abc", "tml-abcdef123456", "ws-supersecret-value"):
        assert secret not in text
    assert "https://spindle.example/api/v1/x" in text and "trainer capacity exhausted" in text
    assert "429" in safe_error_text(status_error(sdk_client, 429))


# ---------------------------------------------------------------- policy


def run_policy(fn, steps=0, policy=None, clock=None):
    clock = clock or FakeClock()
    waits = []
    policy = policy or CapacityPolicy()
    steps_now = steps if callable(steps) else (lambda: steps)
    result = call_with_capacity_policy(fn, policy, steps_now, waits.append, sleep=clock.sleep, clock=clock.monotonic)
    return result, waits, clock


def test_backoff_is_1_2_4_minutes_then_4(sdk_client):
    refusals = [status_error(sdk_client, 429) for _ in range(5)]
    fn = ScriptedCall(refusals)
    result, waits, clock = run_policy(fn, steps=3)  # 30-minute limit: no cap on these waits
    assert result == "done" and fn.calls == 6
    assert clock.sleeps == [60, 120, 240, 240, 240]
    assert [w.delay_seconds for w in waits] == clock.sleeps
    assert [w.refusal_number for w in waits] == [1, 2, 3, 4, 5]


def test_on_wait_gets_the_remaining_budget(sdk_client):
    fn = ScriptedCall([status_error(sdk_client, 503) for _ in range(3)])
    _, waits, _ = run_policy(fn, steps=0)
    assert [w.waited_seconds for w in waits] == [0, 60, 180]
    assert [w.remaining_seconds for w in waits] == [600, 540, 420]
    assert all(w.limit_seconds == 600 and w.comparison_steps_completed == 0 for w in waits)
    assert "503" in waits[0].error and "420 s left" in waits[2].progress_line()


def test_blocked_after_about_10_minutes_before_any_comparison_step():
    refusal = failed_future("trainer capacity exhausted: no trainer", RequestErrorCategory.Server)
    fn = ScriptedCall([refusal] * 50)
    with pytest.raises(CapacityBlocked) as caught:
        run_policy(fn, steps=0)
    blocked = caught.value
    assert blocked.waited_seconds == 600 and blocked.comparison_steps_completed == 0
    assert "trainer capacity exhausted" in blocked.error_message
    assert blocked.__cause__ is refusal
    assert fn.calls == 5  # at 0, 60, 180, 420 and the last try at the limit (600)


def test_waits_up_to_30_minutes_once_comparison_steps_ran(sdk_client):
    fn = ScriptedCall([status_error(sdk_client, 429) for _ in range(50)])
    with pytest.raises(CapacityBlocked) as caught:
        run_policy(fn, steps=7)
    assert caught.value.waited_seconds == 1800 and caught.value.comparison_steps_completed == 7


def test_limit_follows_the_step_count_at_each_refusal(sdk_client):
    """Steps finished elsewhere while this call waits raise the limit from 10 to 30 minutes."""
    clock = FakeClock()
    steps = lambda: 0 if clock.now < 1000 + 300 else 2
    fn = ScriptedCall([status_error(sdk_client, 503) for _ in range(9)])
    result, waits, _ = run_policy(fn, steps=steps, clock=clock)
    assert result == "done"
    assert [w.limit_seconds for w in waits][:3] == [600, 600, 600] and waits[-1].limit_seconds == 1800


def test_refusal_time_counts_from_the_start_of_the_refused_attempt(sdk_client):
    """A refusal that surfaced after the SDK's own retries already used up part of the budget."""
    clock = FakeClock()

    def refused_after_sdk_retries():
        clock.now += 300  # the SDK retried for 5 minutes before giving up
        raise status_error(sdk_client, 429)

    with pytest.raises(CapacityBlocked):
        run_policy(refused_after_sdk_retries, steps=0, clock=clock)
    assert clock.sleeps == [60]  # 300 s refused, wait 60; refused again at 660 s >= 600 s


@pytest.mark.parametrize("status", [400, 409, 500])
def test_user_errors_and_crashes_are_not_retried(sdk_client, status):
    error = status_error(sdk_client, status)
    fn = ScriptedCall([error])
    with pytest.raises(type(error)):
        run_policy(fn)
    assert fn.calls == 1


def test_optimizer_mismatch_is_not_retried():
    error = failed_future("optimizer params 'trimuon' do not match", RequestErrorCategory.User)
    fn = ScriptedCall([error])
    with pytest.raises(tinker.RequestFailedError):
        run_policy(fn)
    assert fn.calls == 1


def test_time_scale_from_env(monkeypatch, sdk_client):
    monkeypatch.setenv("RX_CAPACITY_TIME_SCALE", "0.01")
    policy = CapacityPolicy.from_env()
    fn = ScriptedCall([status_error(sdk_client, 429) for _ in range(50)])
    with pytest.raises(CapacityBlocked) as caught:
        run_policy(fn, policy=policy)
    assert caught.value.waited_seconds == pytest.approx(6.0)
    assert policy.requeue_delay_seconds() == pytest.approx(6.0)
    monkeypatch.setenv("RX_CAPACITY_TIME_SCALE", "fast")
    with pytest.raises(ValueError, match="RX_CAPACITY_TIME_SCALE"):
        CapacityPolicy.from_env()


def test_capacity_block_record():
    blocked = CapacityBlocked("RateLimitError: Error code: 429", 0, 600.0)
    assert capacity_block_record(blocked, released_clients=True) == {
        "error": "RateLimitError: Error code: 429",
        "comparison_steps_completed": 0,
        "released_clients": True,
    }


def test_capacity_blocked_survives_pickling():
    import pickle

    blocked = pickle.loads(pickle.dumps(CapacityBlocked("busy", 3, 1800.0)))
    assert (blocked.error_message, blocked.comparison_steps_completed, blocked.waited_seconds) == ("busy", 3, 1800.0)


# ---------------------------------------------------------------- re-queue decision (no server needed)


def test_requeue_refusals():
    import datetime as dt

    from flows.requeue import requeue_refusal

    started = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)
    soon = started + dt.timedelta(minutes=20)
    assert requeue_refusal(0, 3, soon, 30, started) is None
    assert requeue_refusal(0, 3, soon, 30, started.isoformat()) is None
    assert "maximum 3" in requeue_refusal(3, 3, soon, 30, started)
    assert "wall budget" in requeue_refusal(1, 3, started + dt.timedelta(minutes=30), 30, started)


def test_ad_hoc_run_is_not_requeued(monkeypatch):
    monkeypatch.delenv("PREFECT__RUNTIME__DEPLOYMENT__ID", raising=False)
    from flows.requeue import AD_HOC_REASON, requeue_after_capacity_block

    decision = requeue_after_capacity_block("spec.json", {}, 0, 3, 600, 30, "2026-01-01T12:00:00+00:00")
    assert not decision.requeued and decision.reason == AD_HOC_REASON
    assert decision.reason == "not re-queued: ad-hoc run (python -m flows.run); re-run the same command to resume"


# ---------------------------------------------------------------- the flow-side caller (ad-hoc run: no slot)


def test_guarded_caller_reports_waits_in_result_and_events(tmp_path, sdk_client, monkeypatch):
    monkeypatch.delenv("PREFECT__RUNTIME__DEPLOYMENT__ID", raising=False)
    from suite import REPO_ROOT

    from experiment.contract.plan import build_plan
    from experiment.contract.spec import load_spec
    from experiment.run.store import RunStore
    from flows.concurrency import capacity_guarded_caller

    spec = load_spec(REPO_ROOT / "specs" / "gs1_kernel_vs_grpo_gsm8k.json", rehearse=True)
    store = RunStore.create(tmp_path, spec, build_plan(spec))
    seen_in_result = []

    def refused_twice():
        seen_in_result.append(store.read_result().get("capacity_wait"))
        if len(seen_in_result) <= 2:
            raise status_error(sdk_client, 429)
        return "trained"

    call = capacity_guarded_caller(store, lambda: 0, CapacityPolicy(time_scale=0.01))  # waits of 0.6 and 1.2 s
    assert call(refused_twice) == "trained"
    assert seen_in_result[0] is None and seen_in_result[2]["refusal_number"] == 2
    assert seen_in_result[2]["remaining_seconds"] < seen_in_result[2]["limit_seconds"] == pytest.approx(6.0)
    assert "capacity_wait" not in store.read_result()  # cleared once the call went through
    waits = [event for event in store.read_events() if event["event"] == "capacity_wait"]
    assert [event["refusal_number"] for event in waits] == [1, 2] and "429" in waits[0]["error"]

    blocked_call = capacity_guarded_caller(store, lambda: 0, CapacityPolicy(time_scale=0.0001))  # 60 ms limit
    with pytest.raises(CapacityBlocked):
        blocked_call(lambda: (_ for _ in ()).throw(status_error(sdk_client, 503)))


# ---------------------------------------------------------------- against the embedded backend (real SDK, real clock)


@pytest.mark.slow
def test_real_sdk_errors_from_the_embedded_backend_and_a_wait_until_capacity_returns():
    """The embedded backend refuses create_model with "trainer capacity exhausted" for its first
    seconds; the stock SDK raises, classify calls it capacity, and the policy (scaled down) waits
    until capacity is back. An unknown base model is a user error and is not retried."""
    from embedded_tinker.faults import FaultConfig
    from embedded_tinker.launch import LOCAL_API_KEY, start_server

    with start_server(faults=FaultConfig(capacity_exhausted_seconds=6)) as server:  # from the first create_model call
        client = tinker.ServiceClient(base_url=server.base_url, api_key=LOCAL_API_KEY)
        try:
            with pytest.raises(tinker.RequestFailedError) as refused:
                client.create_lora_training_client(base_model="embedded/tiny-random", rank=4).result()
            assert classify(refused.value) == "capacity"

            with pytest.raises(tinker.APIStatusError) as wrong_model:
                client.create_lora_training_client(base_model="no-such/model", rank=4).result()
            assert classify(wrong_model.value) == "user"

            waits = []
            policy = CapacityPolicy(time_scale=0.02)  # waits 1.2, 2.4, 4.8 s (the third ends past the 6 s); gives up after 12 s
            training_client = call_with_capacity_policy(
                lambda: client.create_lora_training_client(base_model="embedded/tiny-random", rank=4).result(),
                policy, lambda: 0, waits.append,
            )
            assert training_client.get_info().model_data.model_name == "embedded/tiny-random"
            assert waits and all("trainer capacity exhausted" in wait.error for wait in waits)
        finally:
            client.close("success").result()
