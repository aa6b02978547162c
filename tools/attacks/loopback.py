"""What every attack script shares: a loopback-only target, one request sent as given, and one keyed JSON request."""

from __future__ import annotations

import http.client
import json
import sys
from urllib.parse import urlsplit

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def loopback_target(url: str) -> tuple[str, int]:
    """(host, port) of a loopback http URL; exit 2 with one line for anything else."""
    parts = urlsplit(url)
    if parts.scheme != "http" or parts.hostname not in LOOPBACK or not parts.port:
        print(f"refused: {url!r} is not an http://127.0.0.1:PORT (loopback) URL; these scripts attack loopback only",
              file=sys.stderr)
        raise SystemExit(2)
    return parts.hostname, parts.port


def send_request(host: str, port: int, method: str, path: str, headers: dict[str, str], body: bytes | None = None,
                 timeout: float = 60.0) -> tuple[int, bytes]:
    """(status, answer bytes) of one HTTP request sent as given, on a fresh connection: the path unnormalized
    (a `%2e%2e` stays), exactly the headers given (Host included), Content-Length from the body.
    tests/suite.py's raw_request sends its requests with it too."""
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for name, value in headers.items():
            connection.putheader(name, value)
        connection.putheader("Content-Length", str(len(body or b"")))
        connection.endheaders(body)
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


def json_answer(payload: bytes, raw_limit: int | None = None) -> dict:
    """The JSON answer, or {"raw": its text, the first `raw_limit` bytes} for an answer that is not JSON."""
    try:
        return json.loads(payload)
    except ValueError:
        return {"raw": payload[:raw_limit].decode(errors="replace")}


def post_json(host: str, port: int, path: str, body: dict, api_key: str, timeout: float = 30.0,
              headers: dict | None = None) -> tuple[int, dict]:
    """(status, JSON answer) of one POST /api/v1/<path> on a fresh connection, with the headers http.client
    sends by itself (Host, Accept-Encoding) and the SDK's (Content-Type, X-API-Key); `headers` replace them."""
    host_header = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    status, payload = send_request(host, port, "POST", f"/api/v1/{path}", {
        "Host": host_header, "Accept-Encoding": "identity", "Content-Type": "application/json", "X-API-Key": api_key,
        **(headers or {})}, json.dumps(body).encode(), timeout=timeout)
    return status, json_answer(payload, raw_limit=200)
