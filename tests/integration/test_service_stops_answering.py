"""A backend that stops answering mid-run (issue 32): the run stops within the policy's answer deadline.

The embedded backend's fault injection `stop_answering_after` (embedded_tinker/faults.py) makes a
healthy server stop answering after N calls: requests held open ("hang") or connections closed
mid-response ("close", which the SDK retries). Without a deadline the stock SDK waits for its own
progress timeout (120 minutes): shown first with the deadline weakened to a day, the call stopped by
the test while still waiting. With the real deadline (RX_SERVICE_ANSWER_DEADLINE, short here) the
call raises ServiceStoppedAnswering, a CapacityBlocked: the flow stops the run as a capacity block
(status failed, resumable) whose reason names the call.
"""

from __future__ import annotations

import threading

import httpx
import pytest
import tinker
from suite import GS1_SPEC

from embedded_tinker.faults import FaultConfig
from embedded_tinker.launch import LOCAL_API_KEY, start_server
from experiment.run.store import RunStore
from experiment.service.capacity import CapacityBlocked, CapacityPolicy, ServiceStoppedAnswering

DEADLINE_SECONDS = 3.0
DAY = 86_400.0


class Outcome:
    """What a guarded call ended with, when it ended (filled by the thread that made it)."""

    def __init__(self):
        self.ended = threading.Event()
        self.error: BaseException | None = None
        self.value = None


def guarded_sampler_save(tmp_path, training_client, deadline_seconds: float) -> tuple[threading.Thread, Outcome]:
    """training_client.save_weights_for_sampler(...).result() through the flow's service caller (flows/concurrency.py), in a thread."""
    from experiment.contract.plan import build_plan
    from experiment.contract.spec import load_spec
    from flows.concurrency import capacity_guarded_caller

    spec = load_spec(GS1_SPEC, rehearse=True)
    store = RunStore.create(tmp_path / f"runs-{deadline_seconds:.0f}", spec, build_plan(spec))
    call = capacity_guarded_caller(store, lambda: 0, CapacityPolicy(answer_deadline_seconds=deadline_seconds))
    outcome = Outcome()

    def make_call():
        try:
            outcome.value = call(lambda: training_client.save_weights_for_sampler(name="stall").result())
        except BaseException as exc:  # noqa: BLE001 - inspected by the test
            outcome.error = exc
        finally:
            outcome.ended.set()

    thread = threading.Thread(target=make_call, daemon=True)
    thread.start()
    return thread, outcome


@pytest.mark.parametrize("mode", ["hang", "close"])
def test_a_call_the_service_never_answers_stops_at_the_deadline(tmp_path, prefect_harness, mode):
    faults = FaultConfig(stop_answering_after=0, endpoints=("save_weights_for_sampler",), stop_answering_mode=mode)
    with start_server(faults=faults, in_process=True) as server:
        client = tinker.ServiceClient(base_url=server.base_url, api_key=LOCAL_API_KEY)
        training_client = client.create_lora_training_client(base_model="embedded/tiny-random", rank=4).result()

        # weakened: a deadline of a day, as good as none; stopped by the test at three deadlines, still waiting
        _, stalled = guarded_sampler_save(tmp_path, training_client, DAY)
        assert not stalled.ended.wait(3 * DEADLINE_SECONDS), "the unbounded call ended by itself"

        _, bounded = guarded_sampler_save(tmp_path, training_client, DEADLINE_SECONDS)
        bounded.ended.wait()  # the deadline ends it; no timeout here
        assert isinstance(bounded.error, ServiceStoppedAnswering), bounded.error
        assert isinstance(bounded.error, CapacityBlocked)  # the flow stops it as a capacity block
        assert str(bounded.error).startswith("the service stopped answering: ")
        assert str(bounded.error).endswith(f"had no answer for {DEADLINE_SECONDS:.0f} s")
        assert "test_service_stops_answering.py" in str(bounded.error)  # names the call
        assert not stalled.ended.is_set()  # the weakened one is still waiting


def test_the_stop_survives_pickling_as_a_capacity_block_with_its_reason():
    import pickle

    from experiment.service.capacity import as_capacity_block, capacity_block_record, is_capacity_refusal

    stop = ServiceStoppedAnswering("ArmTrainer._step_with_capacity.attempt", 600.4, 3)
    copy = pickle.loads(pickle.dumps(stop))  # flow states carry it pickled
    assert str(copy) == str(stop) == ("the service stopped answering: ArmTrainer._step_with_capacity.attempt "
                                      "had no answer for 600 s")
    assert is_capacity_refusal(copy) and as_capacity_block(copy, 0) is copy
    assert capacity_block_record(copy, released_clients=True) == {
        "error": str(stop), "comparison_steps_completed": 3, "released_clients": True}


# ---- every wait goes through the deadline: the waits that used to call the SDK directly (issue 32)


def in_thread(fn) -> Outcome:
    """fn() in a daemon thread; the returned Outcome is filled when it ends."""
    outcome = Outcome()

    def make_call():
        try:
            outcome.value = fn()
        except BaseException as exc:  # noqa: BLE001 - inspected by the test
            outcome.error = exc
        finally:
            outcome.ended.set()

    threading.Thread(target=make_call, daemon=True).start()
    return outcome


def run_callers(tmp_path, deadline_seconds: float):
    """(call_service, wait_for_service) as the flow installs them for a run (flows/experiment_flow.py)."""
    from experiment.contract.plan import build_plan
    from experiment.contract.spec import load_spec
    from experiment.service.capacity import AnswerWatch, answer_bounded
    from flows.concurrency import capacity_guarded_caller

    spec = load_spec(GS1_SPEC, rehearse=True)
    store = RunStore.create(tmp_path / f"runs-{deadline_seconds:.0f}", spec, build_plan(spec))
    policy, watch = CapacityPolicy(answer_deadline_seconds=deadline_seconds), AnswerWatch()
    return (capacity_guarded_caller(store, lambda: 0, policy, watch=watch), answer_bounded(policy, watch, lambda: 0))


def one_sft_datum(training_client):
    from tinker_cookbook import renderers

    from experiment.sft.loop import load_chat_file, to_datum
    from suite import REPO_ROOT

    renderer = renderers.get_renderer("qwen3_5_disable_thinking", training_client.get_tokenizer())
    example = load_chat_file(REPO_ROOT / "embedded_tinker" / "tasks" / "data" / "chat_train.jsonl")[0]
    return to_datum(example, renderer, 64)


def test_an_sft_step_that_waited_on_the_sdk_directly_stops_at_the_deadline(tmp_path, prefect_harness):
    """experiment/sft/loop.py's train_step called `.result()` itself: a forward_backward the service never
    answers held the run for the SDK's own timeouts. Now each request goes through the run's service caller."""
    from experiment.sft.loop import optim_params, train_step

    faults = FaultConfig(stop_answering_after=0, endpoints=("forward_backward",), stop_answering_mode="hang")
    with start_server(faults=faults, in_process=True) as server:
        client = tinker.ServiceClient(base_url=server.base_url, api_key=LOCAL_API_KEY)
        training_client = client.create_lora_training_client(base_model="embedded/tiny-random", rank=4).result()
        datum = one_sft_datum(training_client)
        params = optim_params("adam", 1e-3, {})

        # weakened: the requests made as before (no service caller), stopped by the test at three deadlines
        direct = in_thread(lambda: train_step(training_client, [datum], params, "a", 0, "b0", call=lambda fn: fn()))
        assert not direct.ended.wait(3 * DEADLINE_SECONDS), "the direct wait ended by itself"

        call_service, _ = run_callers(tmp_path, DEADLINE_SECONDS)
        bounded = in_thread(lambda: train_step(training_client, [datum], params, "a", 0, "b0", call=call_service))
        bounded.ended.wait()  # the deadline ends it; no timeout here
        assert isinstance(bounded.error, ServiceStoppedAnswering), bounded.error
        assert "experiment/sft/loop.py" in str(bounded.error)  # names the request: the forward_backward in train_step
        assert not direct.ended.is_set()


def evaluation_of(server, n_problems: int):
    """(evaluate, problems): greedy evaluation (experiment/rl/math_eval.py: many samples inside one wait) of
    `n_problems` one at a time on the embedded server, as `run_async` runs it in a gate."""
    from tinker_cookbook import renderers

    from experiment.rl.math_eval import greedy_predictions
    from experiment.rl.recipe import run_async
    from experiment.data import TaskItem

    problems = [TaskItem(f"q{i}", f"What is {i} plus {i}?", str(2 * i)) for i in range(n_problems)]
    client = tinker.ServiceClient(base_url=server.base_url, api_key=LOCAL_API_KEY)
    tokenizer = client.create_lora_training_client(base_model="embedded/tiny-random", rank=4).result().get_tokenizer()
    renderer = renderers.get_renderer("qwen3_5_disable_thinking", tokenizer)
    sampler = client.create_sampling_client(base_model="embedded/tiny-random").result()
    return lambda: run_async(greedy_predictions(sampler, renderer, problems, max_tokens=4, few_shot=False, concurrency=1))


def test_an_async_evaluation_that_stops_being_answered_ends_at_the_deadline(tmp_path, prefect_harness):
    """The evaluations, pilots and rollout batches ran under `run_async` alone: a sampler that stops
    answering after two samples held them for the SDK's own timeouts. Under `wait_for_service` the wait ends
    at the deadline."""
    faults = FaultConfig(stop_answering_after=2, endpoints=("asample",), stop_answering_mode="hang")
    with start_server(faults=faults, in_process=True) as server:
        evaluate = evaluation_of(server, 6)
        _, wait_for_service = run_callers(tmp_path, DEADLINE_SECONDS)
        bounded = in_thread(lambda: wait_for_service(evaluate))
        bounded.ended.wait()  # the deadline ends it; no timeout here
        assert isinstance(bounded.error, ServiceStoppedAnswering), bounded.error
        assert f"had no answer for {DEADLINE_SECONDS:.0f} s" in str(bounded.error)

        direct = in_thread(evaluate)  # weakened: as before, no deadline around the evaluation
        assert not direct.ended.wait(3 * DEADLINE_SECONDS), "the unbounded evaluation ended by itself"
        held = httpx.get(f"{server.base_url}/api/v1/healthz", timeout=10).json()["faults_injected"]["unanswered"]
    assert held == 2  # the third sample of each evaluation: held open, never answered


def test_every_answer_inside_a_long_wait_counts(tmp_path, prefect_harness, monkeypatch):
    """A wait is ended by silence, never by its length: eight samples of 0.7 s each (injected latency) take
    longer than the deadline, yet each answer (`answered()` in math_eval) keeps the wait alive. Weakened
    (answers inside the wait not counted) the same evaluation is cut off at the deadline."""
    from experiment.service import capacity

    faults = FaultConfig(latency_ms=700, endpoints=("asample",))
    with start_server(faults=faults, in_process=True) as server:
        evaluate = evaluation_of(server, 8)
        with monkeypatch.context() as weakened:
            weakened.setattr(capacity, "service_answered", lambda: None)
            _, wait_for_service = run_callers(tmp_path, DEADLINE_SECONDS)
            with pytest.raises(ServiceStoppedAnswering):
                wait_for_service(evaluate)

        _, wait_for_service = run_callers(tmp_path, DEADLINE_SECONDS)
        rows = wait_for_service(evaluate)
    assert len(rows) == 8


def test_a_garbage_answer_is_a_service_failure_not_a_crash(tmp_path, prefect_harness, monkeypatch):
    """A 200 whose body is not JSON: the SDK raises a JSONDecodeError at once, which the flow took for a bug
    in the run (a crashed gate, exit 3). Through the run's service caller it is ServiceAnswerUnreadable, a
    stop of the run as on a capacity block (record failed, resumable), naming the call and the answer."""
    import pickle

    from experiment.service import capacity
    from experiment.service.capacity import ServiceAnswerUnreadable, ServiceFailedMidRun, as_capacity_block, classify

    faults = FaultConfig(stop_answering_after=0, endpoints=("save_weights_for_sampler",), stop_answering_mode="garbage")
    with start_server(faults=faults, in_process=True) as server:
        client = tinker.ServiceClient(base_url=server.base_url, api_key=LOCAL_API_KEY)
        training_client = client.create_lora_training_client(base_model="embedded/tiny-random", rank=4).result()
        save = lambda: training_client.save_weights_for_sampler(name="garbage").result()  # noqa: E731

        with monkeypatch.context() as weakened:  # without the recognition of an unreadable answer
            weakened.setattr(capacity, "unreadable_answer", lambda exc: False)
            call_service, _ = run_callers(tmp_path, 60.0)
            with pytest.raises(ValueError) as crashed:
                call_service(save)
            assert classify(crashed.value) == "crash" and as_capacity_block(crashed.value, 0) is None  # the crash path

        call_service, _ = run_callers(tmp_path, 60.0)
        with pytest.raises(ServiceAnswerUnreadable) as stopped:
            call_service(save)
    error = stopped.value
    assert isinstance(error, ServiceFailedMidRun) and isinstance(error, CapacityBlocked)
    assert str(error).startswith("the service's answer to ") and "could not be read (JSONDecodeError" in str(error)
    assert "test_service_stops_answering.py" in str(error)  # names the call
    assert "\n" not in str(error)
    copy = pickle.loads(pickle.dumps(error))  # flow states carry it pickled
    assert type(copy) is ServiceAnswerUnreadable and str(copy) == str(error)


def test_a_connection_the_sdk_gave_up_on_is_an_unreadable_answer():
    """After its own retries the SDK raises APIConnectionError (closed mid-answer, timed out): a broken service,
    not a bug of the run. The SDK takes minutes to give up on the embedded "close" fault (its deadline case is
    above), so its exception is built here, as the SDK builds it."""
    import httpx

    from experiment.service.capacity import ServiceAnswerUnreadable, as_capacity_block, is_capacity_refusal, unreadable_answer

    request = httpx.Request("POST", "http://127.0.0.1:9/api/v1/forward_backward")
    closed = tinker.APIConnectionError(request=request)
    assert unreadable_answer(closed) and is_capacity_refusal(closed)
    assert isinstance(as_capacity_block(closed, 2), ServiceAnswerUnreadable)
    assert not unreadable_answer(ValueError("a bug of the run's own code"))
    assert not unreadable_answer(json_error_raised_outside_the_sdk())


def json_error_raised_outside_the_sdk() -> Exception:
    import json

    try:
        json.loads("{not json")
    except ValueError as err:
        return err
    raise AssertionError("unreachable")
