"""Secret scan (SEC-1): credentials by their shapes, not only values present in the environment.

Shapes: Tinker API keys (`tml-...`), Modal tokens (`wk-...` id, `ws-...` secret), credential
headers with a value (`Authorization: Bearer ...`, `Modal-Key`, `Modal-Secret`, `X-API-Key`,
`TINKER_API_KEY=...`), URLs whose query carries a signature or token, and the values of the
credential variables of this environment. Placeholders (`$VAR`, `<...>`, `***`, `[redacted]`) are
not secrets.
"""

from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass

import pandas as pd

CREDENTIAL_ENV_VARS = (
    "TINKER_API_KEY",
    "MODAL_PROXY_TOKEN_ID",
    "MODAL_PROXY_TOKEN_SECRET",
    "RUNS_PROXY_TOKEN_ID",
    "RUNS_PROXY_TOKEN_SECRET",
)
# Keys that are published, not secret: the embedded backend's default key (embedded_tinker/access.py
# DEFAULT_API_KEY, written in its source, the README's commands and the CLI's own hints). A run against the
# embedded backend with TINKER_API_KEY set to it retains that source in its pipeline code; finding the value
# there discloses nothing.
PUBLISHED_KEYS = frozenset({"tml-local"})


def environment_secrets(extra_values: dict[str, str] | None = None) -> dict[str, str]:
    """name -> value of this environment's credential variables (and `extra_values`) that could be a secret:
    longer than four characters (shorter ones cannot be told from ordinary text) and not a published key."""
    values = {name: os.environ.get(name, "") for name in CREDENTIAL_ENV_VARS}
    values.update(extra_values or {})
    return {name: value for name, value in values.items() if len(value) > 4 and value not in PUBLISHED_KEYS}
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

# A parquet file begins (and ends) with these bytes (Apache Parquet's file format), whatever it is named.
PARQUET_MAGIC = b"PAR1"


def searchable_text(data: bytes) -> str:
    """A file's bytes as the scan reads them: as text, and a parquet table (its pages compressed, so a secret in
    it is not in its bytes) also as its decoded values. A table is told by its magic bytes, not by its name: a
    table saved under another suffix is decoded too."""
    text = data.decode("utf-8", errors="replace")
    if data.startswith(PARQUET_MAGIC):  # the rest is read_parquet's to check (its footer ends with them too)
        try:
            text += pd.read_parquet(io.BytesIO(data)).to_json(orient="records")
        except (OSError, ValueError):
            pass  # a broken table is still searched as its bytes
    return text


@dataclass(frozen=True)
class _Shape:
    """A credential shape: its regex, and the literal pieces one of which every match holds, starting at most
    `reach` characters after the match starts. The scan looks the pieces up with str.find (tens of times faster
    than running the regexes over a record's megabytes) and tries the regex only where a match could start; a
    case-insensitive shape looks its pieces up in the folded text (_folded), a case-sensitive one in the text."""

    what: str
    pieces: tuple[str, ...]
    reach: int
    insensitive: bool
    pattern: re.Pattern[str]

    def found_in(self, text: str, folded: str) -> bool:
        haystack = folded if self.insensitive else text
        for piece in self.pieces:
            at = haystack.find(piece)
            while at != -1:
                if any(self.pattern.match(text, start) for start in range(max(0, at - self.reach), at + 1)):
                    return True
                at = haystack.find(piece, at + 1)
        return False


_PATTERNS = (
    _Shape("a Tinker API key (tml-...)", ("tml-",), 0, False, re.compile(r"(?<![A-Za-z0-9_-])tml-[A-Za-z0-9_-]{16,}")),
    _Shape("a Modal token (wk-/ws-...)", ("wk-", "ws-"), 0, False,
           re.compile(r"(?<![A-Za-z0-9_-])w[ks]-[A-Za-z0-9]{16,}")),
    _Shape("an Authorization header with a value", ("authorization",), 0, True,
           re.compile(r"(?i)\bauthorization[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token)\s+(?![$<*\[])[A-Za-z0-9._~+/=-]{8,}")),
    _Shape("a Bearer token", ("bearer",), 0, True,
           re.compile(r"(?i)\bbearer\s+(?![$<*\[])(?=[A-Za-z0-9._~+/=-]*\d)[A-Za-z0-9._~+/=-]{16,}")),
    # x-api-key holds api-key 2 characters in, tinker_api_key holds api_key 7 in
    _Shape("a credential header with a value",
           ("modal-secret", "modal-key", "api-key", "api_key", "modal_proxy_token_", "runs_proxy_token_"), 7, True,
           re.compile(r"(?i)\b(?:modal-secret|modal-key|x-api-key|api[-_]key|tinker_api_key|modal_proxy_token_(?:id|secret)"
                      r"|runs_proxy_token_(?:id|secret))[\"']?\s*[:=]\s*[\"']?(?![$<*\[])(?=[^\s\"',}]*\d)[^\s\"',}]{8,}")),
    _Shape("a signed or credential-bearing URL", ("http",), 0, True,
           re.compile(r"(?i)https?://[^\s\"'?]+\?[^\s\"']*?\b(?:x-amz-signature|x-goog-signature|signature|sig|token|"
                      r"access_token|api_key|apikey|secret|key|x-amz-credential)=(?![$<*\[])[^&\s\"']{4,}")),
)

# Under re.IGNORECASE four non-ASCII letters match ASCII ones (U+0130 and U+0131: i; U+017F: s; U+212A: k;
# tests/unit/test_grading_secrets.py checks every code point); str.lower() alone keeps them apart.
_ASCII_FOLDS = {"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"}


def _folded(text: str) -> str:
    """The text as the case-insensitive regexes compare it, for the literal pieces' lookup: one character for
    one, so a piece's place in it is its place in the text. One str.replace per folded letter: str.translate
    takes its slow path on any non-ASCII text (0.13 CPU-s for a 1 MB evidence file of a TriMuon record)."""
    for letter, ascii_letter in _ASCII_FOLDS.items():
        text = text.replace(letter, ascii_letter)
    return text.lower()


def find_secrets(text: str, extra_values: dict[str, str] | None = None) -> list[str]:
    """What credential shapes (and environment secret values) the text contains."""
    folded = _folded(text)
    found = [shape.what for shape in _PATTERNS if shape.found_in(text, folded)]
    found += [f"the value of {name}" for name, value in environment_secrets(extra_values).items() if value in text]
    return found
