"""No web page can drive the embedded backend, and one client's checkpoints are not another's (issue 47, E1).

A page on another origin, a DNS-rebound name, a text/plain or form body and a missing or wrong key are
refused before any route runs (embedded_tinker/access.py); a client is a key, and client B neither
lists, reads, loads nor samples client A's runs and checkpoints. The server runs in this process with
two keys so each guard can first be weakened (monkeypatched away) to show the attack working.
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import pytest
import tinker
from suite import raw_request

import embedded_tinker.access as access
from embedded_tinker.launch import LOCAL_API_KEY, start_server

MODEL = "embedded/tiny-random"
KEY_A, KEY_B = "tml-client-a", "tml-client-b"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with start_server(checkpoint_dir=tmp_path_factory.mktemp("access-ckpt"), in_process=True,
                      api_keys=(KEY_A, KEY_B, LOCAL_API_KEY)) as running:
        yield running


def request(server, method: str, path: str, body: bytes | None = b"{}", headers: dict | None = None):
    """(status, JSON answer) of one raw request; `headers` replace the SDK-like defaults (None drops one)."""
    parts = urlsplit(server.base_url)
    defaults = {"Host": f"127.0.0.1:{parts.port}", "Content-Type": "application/json", "X-API-Key": KEY_A}
    merged = {k: v for k, v in {**defaults, **(headers or {})}.items() if v is not None}
    return raw_request(server.base_url, method, f"/api/v1/{path}", merged, body)


BROWSER_ATTACKS = {
    # a page on evil.example posting a "simple request" (no CORS preflight): text/plain, its own origin
    "cross-origin text/plain": ({"Origin": "http://evil.example", "Content-Type": "text/plain", "X-API-Key": None}, 403),
    # a rebound DNS name: the page is same-origin with itself, the Host header names it
    "dns rebinding": ({"Host": "attacker.example:80"}, 421),
    "form body": ({"Content-Type": "application/x-www-form-urlencoded"}, 415),
    "no content type": ({"Content-Type": None}, 415),
    "no key": ({"X-API-Key": None}, 401),
    "wrong key": ({"X-API-Key": "tml-guessed"}, 401),
}


@pytest.mark.parametrize("attack", list(BROWSER_ATTACKS))
def test_a_web_page_cannot_create_a_session(server, monkeypatch, attack):
    headers, status = BROWSER_ATTACKS[attack]
    with monkeypatch.context() as weak:  # attack first: with no access check, the page creates a session
        weak.setattr(access, "refusal", lambda *args: None)
        answer_status, answer = request(server, "POST", "create_session", headers=headers)
        assert answer_status == 200 and answer["session_id"].startswith("sess-")
    answer_status, answer = request(server, "POST", "create_session", headers=headers)
    assert answer_status == status and answer["category"] == "user" and "session_id" not in answer


def test_what_the_stock_sdk_sends_is_accepted(server):
    status, answer = request(server, "POST", "create_session")
    assert status == 200 and answer["session_id"].startswith("sess-")
    status, _ = request(server, "POST", "create_session", headers={"Origin": "http://localhost:8080",
                                                                   "Host": "localhost:1"})
    assert status == 200  # a loopback page (the same machine's own tools) with the key
    status, answer = request(server, "GET", "healthz", body=None, headers={"X-API-Key": None, "Content-Type": None})
    assert status == 200 and answer["status"] == "ok"  # the launcher's start-up poll carries no key


@pytest.fixture(scope="module")
def client_a_run(server):
    """Client A's trained run: (run id, training checkpoint path, sampler checkpoint path)."""
    service = tinker.ServiceClient(base_url=server.base_url, api_key=KEY_A)
    training = service.create_lora_training_client(base_model=MODEL, rank=2).result()
    datum = tinker.Datum(model_input=tinker.ModelInput.from_ints([1, 2, 3]),
                         loss_fn_inputs={"target_tokens": [2, 3, 4], "weights": [1.0, 1.0, 1.0]})
    training.forward_backward([datum], "cross_entropy").result()
    training.optim_step(tinker.AdamParams(learning_rate=1e-2)).result()
    state = training.save_state("a-state").result().path
    sampler = training.save_weights_for_sampler("a-sampler").result().path
    yield training.model_id, state, sampler
    service.close("success").result()


def visible_to(server, key: str, run_id: str, state: str) -> dict[str, bool]:
    """What a client with `key` sees of run `run_id` and its checkpoint `state`, route by route."""
    user_checkpoints = request(server, "GET", "checkpoints", body=None, headers={"X-API-Key": key})[1]
    runs = request(server, "GET", "training_runs", body=None, headers={"X-API-Key": key})[1]
    return {
        "listed run": run_id in {r["training_run_id"] for r in runs.get("training_runs", [])},
        "run": request(server, "GET", f"training_runs/{run_id}", body=None, headers={"X-API-Key": key})[0] == 200,
        "run checkpoints": request(server, "GET", f"training_runs/{run_id}/checkpoints", body=None,
                                   headers={"X-API-Key": key})[0] == 200,
        "listed checkpoint": state in {c["tinker_path"] for c in user_checkpoints.get("checkpoints", [])},
        "weights info": request(server, "POST", "weights_info", json.dumps({"tinker_path": state}).encode(),
                                headers={"X-API-Key": key})[0] == 200,
        "model info": request(server, "POST", "get_info", json.dumps({"model_id": run_id}).encode(),
                              headers={"X-API-Key": key})[0] == 200,
    }


def test_client_b_cannot_see_client_a_s_runs_and_checkpoints(server, monkeypatch, client_a_run):
    run_id, state, _ = client_a_run
    assert all(visible_to(server, KEY_A, run_id, state).values())
    with monkeypatch.context() as weak:  # attack first: with no owner check, B sees all of A's
        weak.setattr(access, "may_access", lambda owner: True)
        assert all(visible_to(server, KEY_B, run_id, state).values())
    assert not any(visible_to(server, KEY_B, run_id, state).values())


def test_client_b_cannot_load_or_sample_client_a_s_checkpoints(server, client_a_run):
    _, state, sampler = client_a_run
    service_b = tinker.ServiceClient(base_url=server.base_url, api_key=KEY_B)
    try:
        with pytest.raises(tinker.BadRequestError, match="no checkpoint at"):
            service_b.create_training_client_from_state(state).result()
        with pytest.raises(tinker.BadRequestError, match="no checkpoint at"):
            service_b.create_sampling_client(model_path=sampler).result().sample(
                tinker.ModelInput.from_ints([1, 2]), 1, tinker.SamplingParams(max_tokens=2)).result()
    finally:
        service_b.close("success").result()


def test_clients_sharing_a_key_share_their_checkpoints(server, client_a_run):
    """The pipeline's clients all use the launcher's key: a second client of key A loads A's checkpoint."""
    _, state, _ = client_a_run
    service = tinker.ServiceClient(base_url=server.base_url, api_key=KEY_A)
    try:
        loaded = service.create_training_client_from_state(state).result()
        assert loaded.get_info().model_data.model_name == MODEL
    finally:
        service.close("success").result()


def test_client_b_cannot_take_over_client_a_s_model_id(server, client_a_run):
    run_id, _, _ = client_a_run
    session_id, _, seq = run_id.partition(":train:")
    body = {"session_id": session_id, "model_seq_id": int(seq), "base_model": MODEL}
    status, answer = request(server, "POST", "create_model", json.dumps(body).encode(), headers={"X-API-Key": KEY_B})
    assert status == 400 and "belongs to another client" in answer["error"]


def test_client_b_cannot_read_client_a_s_session_service_time(server, monkeypatch, client_a_run):
    session = client_a_run[0].split(":train:")[0]  # client A's model id names its session

    def read_as(key: str):
        return request(server, "GET", f"service_time/{session}", body=None, headers={"X-API-Key": key})
    status, answer = read_as(KEY_A)
    assert status == 200 and answer["calls"] >= 4  # create, forward_backward, optim_step, the saves
    with monkeypatch.context() as weak:  # attack first: with no owner check, B reads A's service time
        weak.setattr(access, "may_access", lambda owner: True)
        assert read_as(KEY_B)[0] == 200
    assert read_as(KEY_B)[0] == 404
