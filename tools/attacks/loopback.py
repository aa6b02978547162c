"""What every attack script shares: a loopback-only target and one keyed JSON request."""

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


def post_json(host: str, port: int, path: str, body: dict, api_key: str, timeout: float = 30.0,
              headers: dict | None = None) -> tuple[int, dict]:
    """(status, JSON answer) of one POST /api/v1/<path> on a fresh connection."""
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        connection.request("POST", f"/api/v1/{path}", body=json.dumps(body).encode(), headers={
            "Content-Type": "application/json", "X-API-Key": api_key, **(headers or {})})
        answer = connection.getresponse()
        payload = answer.read()
    finally:
        connection.close()
    try:
        return answer.status, json.loads(payload)
    except ValueError:
        return answer.status, {"raw": payload[:200].decode(errors="replace")}
