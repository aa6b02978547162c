"""Backend URLs without credentials, for everything Prefect stores (flow parameters, re-queued runs).

`python -m flows.run` passes `public_backend_url(url)` as the flow's `backend` parameter and keeps
the URL it was given (user:password@, ?token=...) in its own environment under BACKEND_URL_ENV;
`with_credentials(public)` inside the flow takes it back when it names the same service.
A `backend` parameter that still carries credentials (a deployment run given
`--param backend=https://user:key@...`) is refused by the flow: `credentials_refusal` says so
without echoing the secret and points at the environment variables that carry credentials.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit

from experiment.service.target import _redact_url as public_backend_url  # one home for what a URL may show

BACKEND_URL_ENV = "RX_BACKEND_URL_WITH_CREDENTIALS"

__all__ = ["BACKEND_URL_ENV", "credential_parts", "credentials_refusal", "public_backend_url", "with_credentials"]

# query or fragment parameter names that carry a secret (api_key, access_token, X-Amz-Signature, ...)
TOKEN_LIKE = re.compile(r"token|key|secret|pass|pwd|auth|credential|sig|session|jwt|bearer|cookie", re.I)
PARAMETER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,31}")  # a name safe to show (not a value)
CREDENTIAL_ENV = "TINKER_API_KEY, MODAL_PROXY_TOKEN_ID/_SECRET or RUNS_PROXY_TOKEN_ID/_SECRET"


def with_credentials(backend: str) -> str:
    """The full URL for a credential-free `backend` parameter, when this process was given one."""
    full = os.environ.get(BACKEND_URL_ENV)
    if backend != "local" and full and public_backend_url(full) == backend:
        return full
    return backend


def credential_parts(url: str) -> list[str]:
    """What in `url` carries credentials, named without any value: the userinfo (user:password@) and
    token-like query or fragment parameters. A bare query value (no name) that looks like a secret
    counts too and is never shown."""
    parts = urlsplit(url)
    found = ["userinfo (user:password@)"] if "@" in parts.netloc else []
    for where, text in (("query", parts.query), ("fragment", parts.fragment)):
        for piece in filter(None, re.split(r"[&;]", text)):
            name, has_value, _ = piece.partition("=")
            if has_value and PARAMETER_NAME.fullmatch(name):
                if TOKEN_LIKE.search(name):
                    found.append(f"{where} parameter {name!r}")
            elif TOKEN_LIKE.search(piece) or len(piece) >= 16:
                found.append(f"a {where} value")
    return found


def credentials_refusal(backend: str) -> str | None:
    """None for a credential-free backend; otherwise the one-line reason the flow refuses it (no secret in it)."""
    found = credential_parts(backend)
    if not found:
        return None
    return (f"the backend parameter carries credentials ({', '.join(found)}); Prefect stores flow parameters in its "
            f"database and shows them in the UI, so pass the URL alone (backend={public_backend_url(backend)}) and "
            f"put the credentials in the environment of the process that runs the flow ({CREDENTIAL_ENV})")
