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

import pytest
import tinker
from suite import GS1_SPEC

from embedded_tinker.faults import FaultConfig
from embedded_tinker.launch import LOCAL_API_KEY, start_server
from experiment.run.capacity import CapacityBlocked, CapacityPolicy, ServiceStoppedAnswering
from experiment.run.store import RunStore

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
    with start_server(faults=faults) as server:
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

    from experiment.run.capacity import as_capacity_block, capacity_block_record, is_capacity_refusal

    stop = ServiceStoppedAnswering("ArmTrainer._step_with_capacity.attempt", 600.4, 3)
    copy = pickle.loads(pickle.dumps(stop))  # flow states carry it pickled
    assert str(copy) == str(stop) == ("the service stopped answering: ArmTrainer._step_with_capacity.attempt "
                                      "had no answer for 600 s")
    assert is_capacity_refusal(copy) and as_capacity_block(copy, 0) is copy
    assert capacity_block_record(copy, released_clients=True) == {
        "error": str(stop), "comparison_steps_completed": 3, "released_clients": True}
