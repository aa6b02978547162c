"""The embedded backend refuses bad requests as the client's error (issue 32): malformed fields answer 400
with a JSON error and the keep-alive connection survives; request bodies and zstd bodies have size caps
(413); lora_config.rank is a whole number from 1 to MAX_LORA_RANK. Issue 47: listing routes keep to the
checkpoint directory and a damaged checkpoint record is a 400; num_samples x max_tokens is bounded; NaN
gradients fail optim_step as a user error that stays retrievable.

The server runs in this process (start_server(in_process=True)) so each guard can first be weakened
(monkeypatched back to the old behaviour) to show the attack working, then restored.
"""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

import pytest
import tinker
from suite import raw_request

import embedded_tinker.rest_api as rest_api
import embedded_tinker.server as server_module
from embedded_tinker.launch import LOCAL_API_KEY, start_server
from embedded_tinker.model import MAX_LORA_RANK, LoraConfig
from embedded_tinker.server import RequestBody

BASE_MODEL = "embedded/tiny-random"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with start_server(checkpoint_dir=tmp_path_factory.mktemp("checks-ckpt"), in_process=True) as running:
        yield running


class Connection:
    """One keep-alive HTTP connection to the server; says whether a request reused it."""

    def __init__(self, base_url: str):
        parts = urlsplit(base_url)
        self.http = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
        self.socket = None

    def post(self, path: str, body: bytes | dict, headers: dict | None = None) -> tuple[int, dict, bool]:
        """(status, JSON answer, whether this request went over the same socket as the one before)."""
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.http.request("POST", f"/api/v1/{path}", body=data, headers={
            "Content-Type": "application/json", "X-API-Key": LOCAL_API_KEY, **(headers or {})})
        same = self.socket is None or self.http.sock is self.socket
        answer = self.http.getresponse()
        payload = answer.read()
        self.socket = None if answer.will_close else self.http.sock
        try:
            decoded = json.loads(payload)
        except ValueError:
            decoded = {"raw": payload.decode(errors="replace")}
        return answer.status, decoded, same

    def alive_after(self) -> bool:
        """Whether a follow-up request goes over the same socket and is answered."""
        if self.socket is None:
            return False
        try:
            status, _, same = self.post("telemetry", {})
        except (OSError, http.client.HTTPException):  # e.g. ConnectionResetError: the server dropped it
            return False
        return same and status == 200

    def close(self) -> None:
        self.http.close()


def _create_model(**fields) -> dict:
    return {"session_id": "sess-checks", "model_seq_id": 0, "base_model": BASE_MODEL, **fields}


MALFORMED = [
    ("create_model", {}, "request field 'session_id' is missing"),
    ("create_model", _create_model(model_seq_id="one"), "request field 'model_seq_id' must be an integer (got 'one')"),
    ("create_model", _create_model(session_id=["x"]), "request field 'session_id' must be a string (got ['x'])"),
    ("get_info", {}, "request field 'model_id' is missing"),
    ("optim_step", {"model_id": {"a": 1}}, "request field 'model_id' must be a string"),
    ("retrieve_future", {}, "request field 'request_id' is missing"),
]


@pytest.mark.parametrize("endpoint, body, error", MALFORMED, ids=[f"{e}-{i}" for i, (e, _, _) in enumerate(MALFORMED)])
def test_a_malformed_field_is_a_400_and_the_connection_survives(server, monkeypatch, endpoint, body, error):
    with monkeypatch.context() as weak:  # attack first: plain dict access and int(): a 500, the connection closed
        weak.delattr(RequestBody, "__missing__")
        weak.setattr(RequestBody, "integer", lambda self, key, default=None: int(self[key]))
        weak.setattr(RequestBody, "text", lambda self, key: self[key])
        weak.setattr(server_module.EmbeddedService, "model", lambda self, model_id: self.models[model_id])
        connection = Connection(server.base_url)
        status, answer, _ = connection.post(endpoint, body)
        assert status == 500 and answer.get("category") != "user"
        assert not connection.alive_after()
        connection.close()
    connection = Connection(server.base_url)
    status, answer, _ = connection.post(endpoint, body)
    assert status == 400 and answer["category"] == "user" and answer["error"].startswith(error)
    assert connection.alive_after()
    connection.close()


def test_a_body_that_is_not_an_object_is_a_400(server):
    connection = Connection(server.base_url)
    status, answer, _ = connection.post("create_model", b"[1, 2, 3]")
    assert (status, answer["error"]) == (400, "request body must be a JSON object (got list)")
    status, answer, _ = connection.post("create_model", b"[" * 100_000 + b"]" * 100_000)
    assert status == 400 and answer["error"].startswith("request body is not JSON")
    assert connection.alive_after()
    connection.close()


@pytest.mark.parametrize("rank", [0, 10**9, "8", True, -1, 2.5, MAX_LORA_RANK + 1])
def test_lora_rank_is_a_whole_number_in_range(server, monkeypatch, rank):
    body = _create_model(model_seq_id=100 + abs(hash(str(rank))) % 1000, lora_config={"rank": rank})
    if rank in (0, "8", True):
        def old_from_request(cls, config):  # the old parsing: int(rank or 32), only rank < 1 refused
            parsed = int(config.get("rank") or 32)
            if parsed < 1:
                raise ValueError(f"LoRA rank must be >= 1, got {parsed}")
            return cls(rank=parsed)

        with monkeypatch.context() as weak:  # attack first: 0 became 32, "8" became 8, true became 1
            weak.setattr(LoraConfig, "from_request", classmethod(old_from_request))
            status, answer, _ = Connection(server.base_url).post("create_model", body)
            assert status == 200 and "request_id" in answer
        body["model_seq_id"] += 1000
    status, answer, _ = Connection(server.base_url).post("create_model", body)
    assert status == 400 and answer["error"] == f"LoRA rank must be an integer from 1 to {MAX_LORA_RANK}, got {rank!r}"


def test_a_valid_rank_still_creates_a_model(server):
    status, answer, _ = Connection(server.base_url).post("create_model", _create_model(model_seq_id=7,
                                                                                       lora_config={"rank": 8}))
    assert status == 200 and "request_id" in answer


@pytest.mark.parametrize("chunked", [False, True])
def test_a_request_body_past_the_cap_is_refused(server, monkeypatch, chunked):
    big = json.dumps(_create_model(padding="x" * (2 * 1024 * 1024))).encode()
    headers = {"Transfer-Encoding": "chunked"} if chunked else {}

    def send() -> tuple[int, dict]:
        connection = Connection(server.base_url)
        if chunked:  # no Content-Length: the body is counted as it arrives
            connection.http.putrequest("POST", "/api/v1/create_model")
            for name, value in {"Content-Type": "application/json", "X-API-Key": LOCAL_API_KEY, **headers}.items():
                connection.http.putheader(name, value)
            connection.http.endheaders()
            for start in range(0, len(big), 65536):
                piece = big[start:start + 65536]
                connection.http.send(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            connection.http.send(b"0\r\n\r\n")
            answer = connection.http.getresponse()
            return answer.status, json.loads(answer.read())
        status, answer, _ = connection.post("create_model", big)
        return status, answer

    with monkeypatch.context() as weak:  # attack first: with no meaningful cap the whole body is read and parsed
        weak.setattr(server_module, "MAX_JSON_BODY_BYTES", 10**12)
        status, answer = send()
        assert status == 200 and "request_id" in answer
    monkeypatch.setattr(server_module, "MAX_JSON_BODY_BYTES", 1024 * 1024)
    status, answer = send()
    assert status == 413 and answer["category"] == "user" and "the cap for create_model is 1048576" in answer["error"]


def test_a_zstd_bomb_is_refused_at_the_decompressed_cap(server, monkeypatch):
    zstandard = pytest.importorskip("zstandard")  # a test dependency (pyproject [test])
    expanded = 32 * 1024 * 1024
    bomb = zstandard.ZstdCompressor(level=3).compress(bytes(expanded))
    assert len(bomb) < 4096
    headers = {"Content-Type": "application/x-protobuf", "Content-Encoding": "zstd"}
    seen: list[int] = []

    def old_decompress(body, limit=None):  # the old route: ZstdDecompressor().decompress(body), in full
        out = zstandard.ZstdDecompressor().decompress(body)
        seen.append(len(out))
        return out

    with monkeypatch.context() as weak:  # attack first: 4 KB on the wire became 32 MiB in the server
        weak.setattr(server_module, "decompress_zstd", old_decompress)
        Connection(server.base_url).post("forward_backward", bomb, headers)
        assert seen == [expanded]
    monkeypatch.setattr(server_module, "MAX_DECOMPRESSED_BODY_BYTES", 8 * 1024 * 1024)
    status, answer, _ = Connection(server.base_url).post("forward_backward", bomb, headers)
    assert status == 413 and answer["error"].startswith("the zstd body expands past 8388608 bytes")
    status, answer, _ = Connection(server.base_url).post("forward_backward", b"not zstd", headers)
    assert status == 400 and answer["error"].startswith("the zstd body is not valid zstd")
    status, answer, _ = Connection(server.base_url).post("forward_backward", b"x", {"Content-Encoding": "br"})
    assert status == 415 and "'br' is not supported" in answer["error"]


def _get(server, path: str) -> tuple[int, dict]:
    return raw_request(server.base_url, "GET", path,
                       {"Host": f"127.0.0.1:{urlsplit(server.base_url).port}", "X-API-Key": LOCAL_API_KEY})


@pytest.fixture(scope="module")
def trained_run(server):
    """A model trained one step and saved: (training client, service client, checkpoint path)."""
    service = tinker.ServiceClient(base_url=server.base_url, api_key=LOCAL_API_KEY)
    training = service.create_lora_training_client(base_model=BASE_MODEL, rank=2).result()
    training.forward_backward([_datum()], "cross_entropy").result()
    training.optim_step(tinker.AdamParams(learning_rate=1e-2)).result()
    state = training.save_state("checks-state").result().path
    yield training, service, state
    service.close("success").result()


def _datum(advantage: float = 1.0) -> tinker.Datum:
    return tinker.Datum(model_input=tinker.ModelInput.from_ints([1, 2, 3]), loss_fn_inputs={
        "target_tokens": [2, 3, 4], "logprobs": [-1.0, -1.0, -1.0], "advantages": [advantage] * 3,
        "weights": [1.0, 1.0, 1.0]})


def test_a_listing_route_does_not_list_outside_the_checkpoint_directory(server, monkeypatch):
    outside = server.checkpoint_dir.parent / "weights" / "planted"  # <checkpoint_dir>/../weights/planted
    outside.mkdir(parents=True, exist_ok=True)
    (outside / "checkpoint.json").write_text(json.dumps({"created_at": 1.0, "secret": "outside"}))
    with monkeypatch.context() as weak:  # attack first: without the component check, ".." is a run id
        weak.setattr(rest_api, "valid_component", lambda value: True)
        status, answer = _get(server, "/api/v1/training_runs/%2e%2e/checkpoints")
        assert status == 200 and [c["checkpoint_id"] for c in answer["checkpoints"]] == ["weights/planted"]
    for path in ("/api/v1/training_runs/%2e%2e/checkpoints", "/api/v1/training_runs/%2e%2e",
                 "/api/v1/training_runs/..%2f..%2fetc/checkpoints"):
        status, answer = _get(server, path)
        assert status == 404 and "checkpoints" not in answer, path


def test_a_damaged_checkpoint_record_is_a_400_naming_it(server, monkeypatch, trained_run):
    training, _, state = trained_run
    record = server.checkpoint_dir / training.model_id / "weights" / "checks-state" / "checkpoint.json"
    intact = record.read_text()
    record.write_text('{"base_model": "embedded/tiny-random", "lora_con')  # torn
    try:
        with monkeypatch.context() as weak:  # attack first: read as it was (json.loads): an HTTP 500
            weak.setattr(rest_api, "read_metadata", lambda file, what: json.loads(file.read_text()))
            status, _ = _get(server, f"/api/v1/training_runs/{training.model_id}/checkpoints")
            assert status == 500
        status, answer = _get(server, f"/api/v1/training_runs/{training.model_id}/checkpoints")
        assert status == 400 and answer["error"] == (f"the record of {state} is unreadable (JSONDecodeError): "
                                                     "the file is damaged")
        status, answer, _ = Connection(server.base_url).post("weights_info", {"tinker_path": state})
        assert status == 400 and "is unreadable" in answer["error"]
        record.write_text("[]")
        status, answer, _ = Connection(server.base_url).post("weights_info", {"tinker_path": state})
        assert status == 400 and answer["error"] == f"the record of {state} is not a JSON object: the file is damaged"
    finally:
        record.write_text(intact)


def _sample_request(num_samples: int, max_tokens: int) -> dict:
    return {"base_model": BASE_MODEL, "num_samples": num_samples, "sampling_params": {"max_tokens": max_tokens},
            "prompt": {"chunks": [{"type": "encoded_text", "tokens": [1, 2, 3]}]}}


def test_sampled_tokens_per_request_are_bounded(server, monkeypatch):
    over = _sample_request(num_samples=64, max_tokens=8)  # 512 tokens, over a bound of 256
    with monkeypatch.context() as weak:  # attack first: with no bound the request is queued
        weak.setattr(server_module, "MAX_SAMPLED_TOKENS_PER_REQUEST", 10**12)
        status, answer, _ = Connection(server.base_url).post("asample", over)
        assert status == 200 and "request_id" in answer
    monkeypatch.setattr(server_module, "MAX_SAMPLED_TOKENS_PER_REQUEST", 256)
    status, answer, _ = Connection(server.base_url).post("asample", over)
    assert status == 400 and answer["error"].startswith("num_samples x max_tokens = 64 x 8 passes this server's limit "
                                                        "of 256 sampled tokens per request")
    monkeypatch.undo()
    status, answer, _ = Connection(server.base_url).post("asample", _sample_request(20000, 1000))  # the 40 GB
    assert status == 400 and "20000 x 1000" in answer["error"]
    status, answer, _ = Connection(server.base_url).post("asample", _sample_request(8, 512))  # the seed specs' largest
    assert status == 200 and "request_id" in answer


def _retrieve(server, request_id: str) -> tuple[int, dict]:
    status = 408
    while status == 408:  # pending: long-polled again
        status, answer, _ = Connection(server.base_url).post("retrieve_future", {"request_id": request_id})
    return status, answer


def test_nan_gradients_fail_the_step_as_a_user_error_that_stays_retrievable(server, monkeypatch, trained_run):
    training, _, _ = trained_run

    seq_ids = iter(range(10_000, 10_010))  # past the SDK's own: each step a request id of its own

    def nan_step() -> str:
        training.forward_backward([_datum(advantage=float("nan"))], "importance_sampling").result()
        status, answer, _ = Connection(server.base_url).post("optim_step", {
            "model_id": training.model_id, "seq_id": next(seq_ids), "adam_params": {"learning_rate": 1e-2}})
        assert status == 200
        return answer["request_id"]

    with monkeypatch.context() as weak:  # attack first: the step runs on NaN gradients; its answer is an HTTP 500
        weak.setattr(server_module, "refuse_non_finite_gradients", lambda model: None)
        weak.setattr(server_module, "json_result", server_module.JSONResponse)
        assert _retrieve(server, nan_step())[0] == 500
    training.load_state_with_optimizer(trained_run[2]).result()  # the weakened step left NaN weights: restored
    request_id = nan_step()
    for _ in range(2):  # answered, then answered again the same (not 404 "unknown request_id")
        status, answer = _retrieve(server, request_id)
        assert status == 200 and answer["category"] == "user"
        assert answer["error"].startswith("the accumulated gradients are not finite")
    training.forward_backward([_datum()], "cross_entropy").result()  # the model trains on
    assert training.optim_step(tinker.AdamParams(learning_rate=1e-2)).result().metrics["grad_norm:mean"] > 0


def test_the_largest_seed_spec_request_fits_the_body_caps_with_margin(server):
    """embedded_tinker/request_sizes.py: the SDK's own encoding of the seed specs' largest forward_backward batch."""
    zstandard = pytest.importorskip("zstandard")
    import random

    from embedded_tinker.request_sizes import SEED_BATCHES, body_sizes, datum

    rng = random.Random(0)
    name, batch, length, loss, inputs = max(SEED_BATCHES, key=lambda row: row[1] * row[2] * (1 + len(row[4])))
    largest = max(body_sizes([datum(rng, length, inputs) for _ in range(batch)], loss))
    assert 3 * largest <= server_module.MAX_DECOMPRESSED_BODY_BYTES <= server_module.MAX_PROTOBUF_BODY_BYTES
    body = bytes(largest)  # compressed as the SDK would; decoded up to the protobuf, which this is not
    headers = {"Content-Type": "application/x-protobuf", "Content-Encoding": "zstd"}
    status, answer, _ = Connection(server.base_url).post(
        "forward_backward", zstandard.ZstdCompressor().compress(body), headers)
    assert status == 400 and "expands past" not in answer["error"]


def test_a_session_id_cannot_write_outside_the_checkpoint_directory(server, monkeypatch):
    escape = server.checkpoint_dir.parent / "escaped-run"
    body = _create_model(session_id="../escaped-run", model_seq_id=0)  # model id "../escaped-run:train:0"
    with monkeypatch.context() as weak:  # attack first: without the component check the run record lands outside
        weak.setattr(rest_api, "valid_component", lambda value: True)
        status, answer, _ = Connection(server.base_url).post("create_model", body)
        assert status == 200
        assert _retrieve(server, answer["request_id"])[0] == 200
        assert (server.checkpoint_dir.parent / "escaped-run:train:0" / "run.json").is_file()
    body["session_id"] = "../escaped-again"
    status, answer, _ = Connection(server.base_url).post("create_model", body)
    assert status == 400 and answer["error"].startswith("invalid session id in model id '../escaped-again:train:0'")
    assert not (server.checkpoint_dir.parent / "escaped-again:train:0").exists() and not escape.exists()
