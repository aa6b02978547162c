"""Who may drive the embedded service, and whose checkpoints a request may touch.

The service listens on loopback, where every process of the machine and every web page a browser on
it opens can reach it. Each request passes, before any route runs (``AccessGuard``):

- **Host** must name loopback (``127.0.0.1``, ``localhost``, ``[::1]``, any port): a page whose DNS
  name was rebound to 127.0.0.1 sends its own name (DNS rebinding). HTTP 421.
- **Origin**, when sent (browsers send it on cross-origin and on every POST), must be a loopback
  origin: a page of any other origin is refused (CSRF). HTTP 403.
- **Content-Type** of a POST or PUT must be ``application/json`` (``application/x-protobuf`` too on
  the protobuf routes): a browser sends a cross-origin ``text/plain`` or form body without asking
  first, but never a JSON one (that needs a CORS preflight, which this service does not grant). HTTP 415.
- **X-API-Key** must be one of the keys the service was started with (``EMBEDDED_TINKER_API_KEYS``,
  comma-separated; by default the launcher's ``tml-local``). HTTP 401. Exempt: ``healthz`` (the
  launcher's start-up poll; stats only) and the signed export-download URLs (their HMAC is the key).

The stock SDK sends ``Host: 127.0.0.1:<port>``, no Origin, ``Content-Type: application/json`` on every
POST (``application/x-protobuf`` on forward_backward) and ``X-API-Key`` on every call
(tests/integration/test_embedded_access.py records it).

A **client** is a key: ``client_of(key)`` is a digest of it, recorded as the ``owner`` of each training
run (run.json) and of each live model, sampling session and pending result. One client cannot use,
load, list or sample another's models and checkpoints: to it they do not exist. The pipeline's
clients all use the launcher's key, so they share theirs. A run record without an owner (written
before owners were recorded) is everyone's.
"""

from __future__ import annotations

import contextvars
import hashlib
import hmac
import os
from urllib.parse import urlsplit

API_KEYS_ENV = "EMBEDDED_TINKER_API_KEYS"
DEFAULT_API_KEY = "tml-local"  # the SDK requires keys starting with "tml-" (launch.LOCAL_API_KEY)
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
JSON = "application/json"
PROTOBUF = "application/x-protobuf"
KEYLESS_ENDPOINTS = frozenset({"healthz", "external_weights_files"})

# the client (key digest) of the request being served; read by the service (server.py, rest_api.py)
_CLIENT: contextvars.ContextVar[str | None] = contextvars.ContextVar("embedded_tinker_client", default=None)


def client_of(key: str) -> str:
    """The client a key names: a digest, so no key is kept in records or memory listings."""
    return hashlib.sha256(f"embedded-tinker-client\n{key}".encode()).hexdigest()[:24]


def current_client() -> str | None:
    """The client of the request being served (None outside a request: in-process callers, tests)."""
    return _CLIENT.get()


def may_access(owner: str | None) -> bool:
    """Whether the current request's client may use what `owner` owns (no owner: everyone's)."""
    client = current_client()
    return owner is None or client is None or owner == client


def configured_keys() -> tuple[str, ...]:
    """The keys this service accepts: EMBEDDED_TINKER_API_KEYS, else the launcher's key."""
    keys = tuple(k.strip() for k in os.environ.get(API_KEYS_ENV, "").split(",") if k.strip())
    return keys or (DEFAULT_API_KEY,)


def _loopback_host(value: str) -> bool:
    try:
        host = urlsplit(f"//{value}").hostname
    except ValueError:
        return False
    return host in LOOPBACK_HOSTS


def _loopback_origin(origin: str) -> bool:
    try:
        parts = urlsplit(origin)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and parts.hostname in LOOPBACK_HOSTS


def _media_type(value: str) -> str:
    return value.split(";", 1)[0].strip().lower()


def refusal(scope, endpoint: str, keys: tuple[str, ...], protobuf_endpoints: frozenset[str]) -> tuple[int, str] | None:
    """(HTTP status, message) refusing this request (Host, Origin, Content-Type, key), or None when it may proceed;
    an accepted request's client is put in its scope (``serve_as``)."""
    headers = {}
    for name, value in scope.get("headers") or []:
        headers.setdefault(name.lower(), value.decode("latin-1"))
    if not _loopback_host(headers.get(b"host", "")):
        return _refuse(421, "this service answers only requests addressed to loopback (Host: 127.0.0.1 or "
                            "localhost); a web page's own name is refused")
    origin = headers.get(b"origin")
    if origin is not None and not _loopback_origin(origin):
        return _refuse(403, "cross-origin requests are refused (Origin is not loopback)")
    if scope.get("method") in ("POST", "PUT", "PATCH"):
        allowed = (JSON, PROTOBUF) if endpoint in protobuf_endpoints else (JSON,)
        if _media_type(headers.get(b"content-type", "")) not in allowed:
            return _refuse(415, f"Content-Type must be {' or '.join(allowed)}")
    if endpoint in KEYLESS_ENDPOINTS:
        return None
    key = headers.get(b"x-api-key", "")
    if not any(hmac.compare_digest(key.encode(), accepted.encode()) for accepted in keys):
        return _refuse(401, "missing or wrong API key (X-API-Key): use the key this service was started with")
    scope.setdefault("state", {})["client"] = client_of(key)
    return None


def _refuse(status: int, message: str) -> tuple[int, str]:
    return status, message


def serve_as(scope) -> contextvars.Token:
    """Make the request's client current for the coroutines and threads that serve it."""
    return _CLIENT.set((scope.get("state") or {}).get("client"))


def reset(token: contextvars.Token) -> None:
    _CLIENT.reset(token)
