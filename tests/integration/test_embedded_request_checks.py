"""The embedded backend refuses bad requests as the client's error (issue 32): malformed fields answer 400
with a JSON error and the keep-alive connection survives; request bodies and zstd bodies have size caps
(413); lora_config.rank is a whole number from 1 to MAX_LORA_RANK.

The server runs in this process (start_server(in_process=True)) so each guard can first be weakened
(monkeypatched back to the old behaviour) to show the attack working, then restored.
"""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

import pytest

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
