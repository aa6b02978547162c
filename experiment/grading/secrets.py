"""Secret scan (SEC-1): credentials by their shapes, not only values present in the environment.

Shapes: Tinker API keys (`tml-...`), Modal tokens (`wk-...` id, `ws-...` secret), credential
headers with a value (`Authorization: Bearer ...`, `Modal-Key`, `Modal-Secret`, `X-API-Key`,
`TINKER_API_KEY=...`), URLs whose query carries a signature or token, and the values of the
credential variables of this environment. Placeholders (`$VAR`, `<...>`, `***`, `[redacted]`) are
not secrets.
"""

from __future__ import annotations

import os
import re

CREDENTIAL_ENV_VARS = (
    "TINKER_API_KEY",
    "MODAL_PROXY_TOKEN_ID",
    "MODAL_PROXY_TOKEN_SECRET",
    "RUNS_PROXY_TOKEN_ID",
    "RUNS_PROXY_TOKEN_SECRET",
)
# The run-dir layer's file scan (experiment.grading.run_dir, checks secrets.*): a header or key followed by a
# token-like value (6+ characters with a digit) that is not a placeholder ($VAR, <...>, ***, [redacted]) ...
HEADER_WITH_VALUE = re.compile(
    r"(?i)\b(modal-secret|modal-key|authorization|x-api-key|tinker_api_key)[\"']?\s*[:=]\s*[\"']?"
    r"(?:bearer\s+)?(?!bearer\b)(?![$<*\[])(?=[^\s\"',}]*\d)([^\s\"',}]{6,})"
)
# ... and a URL whose query carries a credential or signature (signed URLs are never stored).
SIGNED_URL = re.compile(
    r"(?i)https?://[^\s\"'?]+\?[^\s\"']*?\b(token|sig|signature|x-amz-signature|api_key|apikey|secret|key)=[^&\s\"'$<]{4,}"
)

_PATTERNS = (
    ("a Tinker API key (tml-...)", re.compile(r"(?<![A-Za-z0-9_-])tml-[A-Za-z0-9_-]{16,}")),
    ("a Modal token (wk-/ws-...)", re.compile(r"(?<![A-Za-z0-9_-])w[ks]-[A-Za-z0-9]{16,}")),
    ("an Authorization header with a value",
     re.compile(r"(?i)\bauthorization[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token)\s+(?![$<*\[])[A-Za-z0-9._~+/=-]{8,}")),
    ("a Bearer token", re.compile(r"(?i)\bbearer\s+(?![$<*\[])(?=[A-Za-z0-9._~+/=-]*\d)[A-Za-z0-9._~+/=-]{16,}")),
    ("a credential header with a value",
     re.compile(r"(?i)\b(?:modal-secret|modal-key|x-api-key|api[-_]key|tinker_api_key|modal_proxy_token_(?:id|secret)"
                r"|runs_proxy_token_(?:id|secret))[\"']?\s*[:=]\s*[\"']?(?![$<*\[])(?=[^\s\"',}]*\d)[^\s\"',}]{8,}")),
    ("a signed or credential-bearing URL",
     re.compile(r"(?i)https?://[^\s\"'?]+\?[^\s\"']*?\b(?:x-amz-signature|x-goog-signature|signature|sig|token|"
                r"access_token|api_key|apikey|secret|key|x-amz-credential)=(?![$<*\[])[^&\s\"']{4,}")),
)


def find_secrets(text: str, extra_values: dict[str, str] | None = None) -> list[str]:
    """What credential shapes (and environment secret values) the text contains."""
    found = [what for what, pattern in _PATTERNS if pattern.search(text)]
    values = {name: os.environ.get(name, "") for name in CREDENTIAL_ENV_VARS}
    values.update(extra_values or {})
    found += [f"the value of {name}" for name, value in values.items() if len(value) > 4 and value in text]
    return found
