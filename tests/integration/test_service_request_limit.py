"""The service-wide limit holds per request in flight (issue 30.1), at the pipeline's widest fan-out: an
evaluation samples all its items at once (experiment/rl/math_eval.py: greedy_predictions, 48 items here).

Real parts: the session's Prefect server with a global concurrency limit of 2, the embedded backend over
HTTP (a fresh one per run of the evaluation: its healthz `max_in_flight` counts the most requests it had in
flight at once), the stock SDK. First the fan-out without the limit: the backend sees more than 2 requests
at once. Then the same evaluation inside `service_requests_limited` (as every run is, flows/experiment_flow.py):
the backend never sees more than 2, the predictions are the same, and every slot is given back.

The requests a run sends beside the SDK hold a slot too (issue 48: a CLI run beside two workers' runs on one
backend measured 3 in flight against a limit of 2): the CLI's check, before its claim, that a remote backend
answers (one plain get_server_capabilities), and the download of an export's file by its signed URL
(TriMuon's correctness preflight reads every job's adapter back so). The backend's count is spied on in this
process (CountedAgainstSlots): at every request it counts, it must have no more in flight than slots carry one.
Both tests were run first without the fix (the request went outside any slot: 1 in flight, 0 slots).
"""

from __future__ import annotations

import contextvars
import time
import uuid

import httpx
import pytest

from embedded_tinker.launch import LOCAL_API_KEY, start_server
from embedded_tinker.server import BusyClock, ExposureAndFaults
from experiment.contract.plan import build_plan
from experiment.contract.spec import load_spec
from experiment.data import TaskItem
from suite import TRIMUON_SPEC

SERVICE_LIMIT = 2
ITEMS = [TaskItem(id=f"item-{n}", question=f"What is {n} plus {n + 3}?", answer=str(2 * n + 3)) for n in range(48)]


def _evaluate_items() -> tuple[list[dict], int]:
    """The 48 items' greedy predictions on a fresh embedded backend, and its most requests in flight at once."""
    import tinker

    from experiment.rl.math_eval import greedy_predictions
    from experiment.rl.recipe import renderer_named, run_async

    with start_server(in_process=True) as backend:
        client = tinker.ServiceClient(base_url=backend.base_url, api_key=LOCAL_API_KEY)
        try:
            training = client.create_lora_training_client(base_model="embedded/tiny-arith", rank=2).result()
            renderer = renderer_named(training.get_info().model_data.tokenizer_id, "qwen3_5_disable_thinking")
            sampler = client.create_sampling_client(base_model="embedded/tiny-arith").result()
            rows = run_async(greedy_predictions(sampler, renderer, ITEMS, max_tokens=8, few_shot=False))
        finally:
            client.close("success")
        health = httpx.get(f"{backend.base_url}/api/v1/healthz", timeout=10).json()
    return rows, health["max_in_flight"]


class CountedAgainstSlots:
    """A spy on the count of requests in flight of every embedded backend served in this process (its BusyClock):
    at each request it counts, the route, the requests it has in flight then, and the slots carrying a request
    then (`carrying()`). The slots bound what the service sees when no request finds more in flight than that."""

    def __init__(self, monkeypatch, carrying):
        self.counted: list[tuple[str, int, int]] = []
        route = contextvars.ContextVar("route", default="?")
        count_and_serve, begin = ExposureAndFaults._count_and_serve, BusyClock.begin

        async def routed(middleware, scope, receive, send, path, endpoint):
            route.set(endpoint)
            return await count_and_serve(middleware, scope, receive, send, path, endpoint)

        def counted(clock):
            begin(clock)
            self.counted.append((route.get(), clock.in_flight, carrying()))

        monkeypatch.setattr(ExposureAndFaults, "_count_and_serve", routed)
        monkeypatch.setattr(BusyClock, "begin", counted)

    def beyond_the_slots(self) -> list[tuple[str, int, int]]:
        return [(route, in_flight, slots) for route, in_flight, slots in self.counted if in_flight > slots]


@pytest.fixture
def service_limit(prefect_harness, prefect_server):
    """A global concurrency limit of 2 of its own on the session's Prefect server (other tests use
    `training-service`), deleted afterwards."""
    name = f"test-service-{uuid.uuid4().hex[:8]}"
    prefect_server.api("POST", "/v2/concurrency_limits/", json={"name": name, "limit": SERVICE_LIMIT})
    yield name
    httpx.delete(f"{prefect_server.api_url}/v2/concurrency_limits/{name}", timeout=10)


def test_an_evaluation_fan_out_keeps_the_service_limit_per_request(service_limit, prefect_server):
    from flows.concurrency import service_request_slots, service_requests_limited, take_prefect_slot

    unlimited_rows, unlimited_in_flight = _evaluate_items()
    assert unlimited_in_flight > SERVICE_LIMIT  # the fan-out the limit has to hold back

    slots = service_request_slots(service_limit)
    assert slots is not None and slots.capacity == SERVICE_LIMIT
    started = time.monotonic()
    with service_requests_limited(slots, service_limit):
        rows, in_flight = _evaluate_items()
    limited_seconds = time.monotonic() - started

    assert in_flight <= SERVICE_LIMIT and slots.most_in_flight <= SERVICE_LIMIT
    assert rows == unlimited_rows  # greedy: the limit changes when requests go, not what they answer
    assert 1 <= slots.slots_taken
    assert prefect_server.api("GET", f"/v2/concurrency_limits/{service_limit}")["active_slots"] == 0

    cycles = 20
    cycle_started = time.monotonic()
    for _ in range(cycles):
        take_prefect_slot(service_limit)()
    print(f"backend max in flight: {unlimited_in_flight} without the limit, {in_flight} with a limit of "
          f"{SERVICE_LIMIT} ({slots.slots_taken} slots taken, {limited_seconds:.1f} s); one slot taken and given "
          f"back: {(time.monotonic() - cycle_started) / cycles * 1000:.0f} ms")


def test_a_missing_limit_is_refused_before_any_request(prefect_harness):
    from flows.concurrency import ServiceLimitMissing, service_limit_slots

    with pytest.raises(ServiceLimitMissing, match="deployments/setup.sh"):
        service_limit_slots(f"no-such-limit-{uuid.uuid4().hex[:8]}")


def test_a_deployment_run_without_the_limit_is_refused_and_a_cli_run_goes_unlimited(prefect_harness, monkeypatch):
    """service_request_slots reads the limit once: missing, a deployment run is refused (ServiceLimitMissing,
    before its claim) and any other run takes no slots (None)."""
    from flows.concurrency import ServiceLimitMissing, service_request_slots

    name = f"no-such-limit-{uuid.uuid4().hex[:8]}"
    assert service_request_slots(name) is None
    monkeypatch.setenv("PREFECT__RUNTIME__DEPLOYMENT__ID", str(uuid.uuid4()))
    with pytest.raises(ServiceLimitMissing, match="deployments/setup.sh"):
        service_request_slots(name)


def test_a_cli_runs_check_that_a_remote_backend_answers_holds_a_slot_of_the_shared_limit(
        service_limit, prefect_server, monkeypatch, tmp_path):
    """The check before the claim (flows.startup.checked_before_the_claim, as `python -m flows.run` makes it with
    TINKER_BASE_URL naming the backend and PREFECT_API_URL the shared server) sends its get_server_capabilities
    with a slot of the limit in hand: sent without one, it was a third request beside two runs holding both."""
    from flows.startup import FLOW_IMPORTS, BackgroundImports, RunRequest, checked_before_the_claim

    limit_path = f"/v2/concurrency_limits/{service_limit}"
    spy = CountedAgainstSlots(monkeypatch, lambda: prefect_server.api("GET", limit_path)["active_slots"])
    spec = load_spec(TRIMUON_SPEC, rehearse=True, rehearsal_scale="wiring")
    request = RunRequest(str(TRIMUON_SPEC), spec, build_plan(spec), backend="local", runs_dir=str(tmp_path / "runs"),
                         exposure="embedded", rehearse=True, rehearsal_scale="wiring", fresh=True)
    with start_server(in_process=True) as backend:
        for name, value in (("TINKER_BASE_URL", backend.base_url), ("TINKER_API_KEY", LOCAL_API_KEY),
                            ("PREFECT_API_URL", prefect_server.api_url), ("RX_SERVICE_LIMIT_NAME", service_limit)):
            monkeypatch.setenv(name, value)
        early, temporary_prefect, problem = checked_before_the_claim(request, tmp_path / "runs",
                                                                     BackgroundImports(FLOW_IMPORTS))
    assert (early, temporary_prefect, problem) == (None, None, None)
    assert [route for route, _, _ in spy.counted] == ["get_server_capabilities"]
    assert spy.beyond_the_slots() == []
    assert prefect_server.api("GET", limit_path)["active_slots"] == 0


def test_an_export_download_beside_the_sdk_holds_a_slot_as_the_sdk_requests_do(
        service_limit, prefect_server, monkeypatch):
    """service_probe.read_adapter (TriMuon's correctness preflight reads each job's adapter back so) inside a run's
    limit: its plain GET of the export's file waits for a slot, as the SDK's requests around it do."""
    from experiment.run.clients import ClientSession
    from experiment.service.target import ServiceTarget
    from experiment.sft.service_probe import ADAPTER_FILE, read_adapter
    from flows.concurrency import service_request_slots, service_requests_limited

    monkeypatch.setenv("TINKER_API_KEY", LOCAL_API_KEY)
    slots = service_request_slots(service_limit)
    spy = CountedAgainstSlots(monkeypatch, lambda: slots.carrying)
    with start_server(in_process=True) as backend, service_requests_limited(slots, service_limit):
        session = ClientSession(ServiceTarget("remote", backend.base_url), "setup")
        try:
            client = session.call(lambda: session.service_client.create_lora_training_client(
                base_model="embedded/tiny-arith", rank=2).result())
            pairs = read_adapter(session, client, "start")
        finally:
            session.close("success")
    assert pairs  # the adapter's factors, read back through the download
    assert "external_weights_files" in [route for route, _, _ in spy.counted], (ADAPTER_FILE, spy.counted)
    assert spy.beyond_the_slots() == []
    assert prefect_server.api("GET", f"/v2/concurrency_limits/{service_limit}")["active_slots"] == 0
