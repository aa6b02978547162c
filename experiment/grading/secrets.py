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

from experiment.report.validation import CREDENTIAL_ENV_VARS

# (what, words, pattern): every match of the pattern contains one of its words, lower-cased; a pure-ASCII
# text that contains none of them (lower-cased) cannot match, as IGNORECASE folds an ASCII letter only to
# ASCII letters (a non-ASCII text, where it folds e.g. the dotless "ı" to "i", always gets the pattern).
# Looking for the words costs a few milliseconds per megabyte of text, the patterns about 130 (SEC-1 was
# half of grading a record; docs/testing.md, "Suite timings").
_PATTERNS = (
    ("a Tinker API key (tml-...)", ("tml-",), re.compile(r"(?<![A-Za-z0-9_-])tml-[A-Za-z0-9_-]{16,}")),
    ("a Modal token (wk-/ws-...)", ("wk-", "ws-"), re.compile(r"(?<![A-Za-z0-9_-])w[ks]-[A-Za-z0-9]{16,}")),
    ("an Authorization header with a value", ("authorization",),
     re.compile(r"(?i)\bauthorization[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token)\s+(?![$<*\[])[A-Za-z0-9._~+/=-]{8,}")),
    ("a Bearer token", ("bearer",),
     re.compile(r"(?i)\bbearer\s+(?![$<*\[])(?=[A-Za-z0-9._~+/=-]*\d)[A-Za-z0-9._~+/=-]{16,}")),
    ("a credential header with a value",
     # x-api-key and tinker_api_key hold api-key and api_key
     ("modal-secret", "modal-key", "api-key", "api_key", "modal_proxy_token_", "runs_proxy_token_"),
     re.compile(r"(?i)\b(?:modal-secret|modal-key|x-api-key|api[-_]key|tinker_api_key|modal_proxy_token_(?:id|secret)"
                r"|runs_proxy_token_(?:id|secret))[\"']?\s*[:=]\s*[\"']?(?![$<*\[])(?=[^\s\"',}]*\d)[^\s\"',}]{8,}")),
    ("a signed or credential-bearing URL", ("http://", "https://"),
     re.compile(r"(?i)https?://[^\s\"'?]+\?[^\s\"']*?\b(?:x-amz-signature|x-goog-signature|signature|sig|token|"
                r"access_token|api_key|apikey|secret|key|x-amz-credential)=(?![$<*\[])[^&\s\"']{4,}")),
)


def could_match(text: str) -> list[bool]:
    """Per shape of _PATTERNS, whether the text may hold it (False only where it cannot: above)."""
    if not text.isascii():
        return [True] * len(_PATTERNS)
    folded = text.lower()
    return [any(word in folded for word in words) for _, words, _ in _PATTERNS]


def find_secrets(text: str, extra_values: dict[str, str] | None = None) -> list[str]:
    """What credential shapes (and environment secret values) the text contains."""
    found = [what for (what, _, pattern), may in zip(_PATTERNS, could_match(text)) if may and pattern.search(text)]
    values = {name: os.environ.get(name, "") for name in CREDENTIAL_ENV_VARS}
    values.update(extra_values or {})
    found += [f"the value of {name}" for name, value in values.items() if len(value) > 4 and value in text]
    return found
