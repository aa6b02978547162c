"""Text that may reach a terminal: which characters a spec may hold, and how stored text is printed.

A spec's strings may hold printable characters, newlines and tabs. Everything else is refused at
intake (`unsafe_character`): C0/C1 control characters (NUL, ESC and so ANSI escape sequences,
carriage return, DEL), lone UTF-16 surrogates (no UTF-8 encoder accepts them: pyarrow, the
terminal), and the bidirectional overrides and isolates that reorder what a reader sees.
Text read back from a store, which another process or person may have written, is printed through
`printable`, which shows each such character as its escape (`\\x1b`, `\\u202e`, `\\ud800`).
"""

from __future__ import annotations

import unicodedata

ALLOWED_CONTROLS = frozenset("\n\t")
# LRE, RLE, PDF, LRO, RLO; LRI, RLI, FSI, PDI; LRM, RLM, ALM: they reorder or hide displayed text.
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")


def is_unsafe(char: str) -> bool:
    """A character that must not reach a terminal raw."""
    if char in ALLOWED_CONTROLS:
        return False
    return unicodedata.category(char) in ("Cc", "Cs") or char in BIDI_CONTROLS


def _printable_but_newlines_and_tabs(text: str) -> bool:
    """Printable apart from its newlines and tabs: then it holds no unsafe character (each is Cc, Cs or Cf,
    none printable). Checked in C, where a multi-line text (a spec's description, a log) is not printable."""
    return text.isprintable() or text.replace("\n", "").replace("\t", "").isprintable()


def unsafe_character(text: str) -> str | None:
    """A description of the first character of `text` a spec may not hold, or None."""
    if _printable_but_newlines_and_tabs(text):  # every unsafe character is non-printable: no loop in Python needed
        return None
    for char in text:
        if is_unsafe(char):
            kind = ("a lone surrogate" if unicodedata.category(char) == "Cs"
                    else "a bidirectional override" if char in BIDI_CONTROLS else "a control character")
            return f"U+{ord(char):04X} ({kind})"
    return None


def printable(text: str) -> str:
    """`text` with every unsafe character shown as its Python escape (newlines and tabs kept)."""
    if _printable_but_newlines_and_tabs(text) or not any(is_unsafe(char) for char in text):
        return text
    return "".join(ascii(char)[1:-1] if is_unsafe(char) else char for char in text)


def printable_line(text: str) -> str:
    """`printable(text)` on one line: newlines and tabs escaped too (a field in a table or a key)."""
    return printable(text).replace("\n", "\\n").replace("\t", "\\t")
