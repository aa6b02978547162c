"""Evidence as the exchange receives it: the files RESULT carries inline (EVID-1, EVID-2).

`EvidenceAccess(result)` reads only `RESULT.evidence.files[]`: an entry's `content` (text, or base64
with `encoding: "base64"`), checked against its `sha256`. A bare result.json is graded from nothing
else. In a run directory the grader still reads evidence only from RESULT (what the exchange gets)
and separately checks that `evidence/` on disk holds the same bytes (EVID-8).
"""

from __future__ import annotations

import base64
import binascii
import copy
import functools
import hashlib
import json
from typing import Any

USABLE, MISSING, PARTIAL, CORRUPT = "usable", "missing", "partial", "corrupt"


class EvidenceRowsChanged(RuntimeError):
    """A check changed rows `EvidenceAccess.jsonl` handed out. Every check of a grade gets the same parsed
    rows, so a change would alter what the later checks see; a RuntimeError, which no check catches."""


def _refuse_change(self: Any, *args: Any, **kwargs: Any) -> None:
    raise EvidenceRowsChanged(f"evidence rows are shared by every check of a grade: copy before changing "
                              f"({type(self).__name__})")


class ReadOnlyDict(dict):
    """A JSON object of parsed evidence rows: a dict that refuses every change (a copy, `dict(row)`,
    `{**row}` or `copy.deepcopy(row)`, is a plain dict)."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _refuse_change

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return {key: copy.deepcopy(value, memo) for key, value in self.items()}

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        return dict, (dict(self),)


class ReadOnlyList(list):
    """A JSON array inside parsed evidence rows: a list that refuses every change (`list(value)`, a slice
    or `copy.deepcopy(value)` is a plain list)."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = append = clear = extend = insert = pop = remove = \
        reverse = sort = _refuse_change

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return [copy.deepcopy(value, memo) for value in self]

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        return list, (list(self),)


def _read_only_array(values: list[Any]) -> ReadOnlyList:
    return ReadOnlyList([_read_only_array(value) if type(value) is list else value for value in values])


def each_key_once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json's object_pairs_hook for a JSON object whose keys are unique: a key written twice has two readings
    (Python's json keeps the last value, a first-wins reader the first), so the text is not one value
    (ValueError). RESULT (grade.load_input) and every evidence file are read through it."""
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"the key {key!r} is written twice in one object")
        seen[key] = value
    return seen


def _read_only_object(pairs: list[tuple[str, Any]]) -> ReadOnlyDict:
    """json's object_pairs_hook: objects are built innermost first, so only the arrays are left to convert; a key
    written twice makes the text no rows (each_key_once)."""
    pairs = each_key_once(pairs)
    for key, value in pairs.items():
        if type(value) is list:
            pairs[key] = _read_only_array(value)
    return ReadOnlyDict(pairs)


@functools.lru_cache(maxsize=16)
def _parse_rows(text: str) -> list[dict[str, Any]] | None:
    """Rows of a JSONL text (a JSON array, or an object with `observations`, is accepted too), read-only
    (ReadOnlyDict, ReadOnlyList all the way down); None when it is not rows. The same text is parsed once for the
    last 16 texts: grades of one record's variants share its unchanged files' rows (read-only, so no grade sees
    another's change; the callers copy the list). The tamper and leaf tests grade a record hundreds of times:
    tests/unit/test_grading_leaf_inventory.py's grades took 20 to 25% less CPU."""
    stripped = text.lstrip()
    try:
        if stripped.startswith("["):
            rows = json.loads(text, object_pairs_hook=_read_only_object)
        elif stripped.startswith("{") and "\n" not in stripped.strip():
            value = json.loads(text, object_pairs_hook=_read_only_object)
            rows = value.get("observations") if isinstance(value, dict) and "observations" in value else [value]
        else:
            rows = [json.loads(line, object_pairs_hook=_read_only_object) for line in text.splitlines() if line.strip()]
    except ValueError:  # json.JSONDecodeError, or a key written twice
        return None
    return rows if isinstance(rows, list) and all(isinstance(row, dict) for row in rows) else None


class EvidenceAccess:
    def __init__(self, result: dict[str, Any]):
        evidence = result.get("evidence") if isinstance(result.get("evidence"), dict) else {}
        files = evidence.get("files") if isinstance(evidence.get("files"), list) else []
        self.entries: list[dict[str, Any]] = [entry for entry in files if isinstance(entry, dict)]
        self.by_name: dict[str, dict[str, Any]] = {}
        self.duplicates: list[str] = []
        for entry in self.entries:
            name = entry.get("name")
            if not isinstance(name, str):
                continue
            if name in self.by_name and self.by_name[name] != entry:
                self.duplicates.append(name)
            self.by_name[name] = entry
        self._cache: dict[str, tuple[str, bytes | None, str]] = {}
        self._rows: dict[str, list[dict[str, Any]] | None] = {}

    # ------------------------------------------------------------------ access

    def state(self, ref: Any) -> tuple[str, bytes | None, str]:
        """(state, bytes, why) for a reference `name` or `name#fragment`."""
        if not isinstance(ref, str) or not ref:
            return MISSING, None, f"no evidence reference ({ref!r})"
        name = ref.split("#", 1)[0]
        if name not in self._cache:
            self._cache[name] = self._load(name)
        return self._cache[name]

    def _load(self, name: str) -> tuple[str, bytes | None, str]:
        entry = self.by_name.get(name)
        if entry is None:
            return MISSING, None, f"{name} is not a retained evidence file"
        content = entry.get("content")
        if not isinstance(content, str):
            where = " (only a source_url)" if entry.get("source_url") else ""
            return PARTIAL, None, f"{name} is retained by name and hash only{where}, its content is not inline"
        encoding = entry.get("encoding") or "utf-8"
        if encoding == "base64":
            try:
                data = base64.b64decode(content, validate=True)
            except (binascii.Error, ValueError):
                return CORRUPT, None, f"{name} is not valid base64"
        elif encoding in ("utf-8", "utf8", "text"):
            data = content.encode("utf-8")
        else:
            return CORRUPT, None, f"{name} has unknown encoding {encoding!r}"
        digest = entry.get("sha256")
        if digest is not None and hashlib.sha256(data).hexdigest() != digest:
            return CORRUPT, None, f"{name}: its content does not hash to its recorded sha256"
        return USABLE, data, ""

    def bytes(self, ref: Any) -> bytes | None:
        return self.state(ref)[1]

    def usable(self, ref: Any) -> bool:
        return self.state(ref)[0] == USABLE

    def why(self, ref: Any) -> str:
        return self.state(ref)[2]

    def json(self, ref: Any) -> Any:
        data = self.bytes(ref)
        if data is None:
            return None
        try:
            return json.loads(data.decode("utf-8"), object_pairs_hook=each_key_once)
        except (UnicodeDecodeError, ValueError):  # json.JSONDecodeError is a ValueError, as is a key written twice
            return None

    def jsonl(self, ref: Any) -> list[dict[str, Any]] | None:
        """Rows of a JSONL file (a JSON array, or an object with `observations`, is accepted too), parsed once
        per file: a new list each call, of the same read-only rows (a change raises EvidenceRowsChanged)."""
        if not isinstance(ref, str):
            return None
        name = ref.split("#", 1)[0]
        if name not in self._rows:
            data = self.bytes(name)
            try:
                self._rows[name] = _parse_rows(data.decode("utf-8")) if data is not None else None
            except UnicodeDecodeError:
                self._rows[name] = None
        rows = self._rows[name]
        return list(rows) if rows is not None else None

    def by_kind(self, kind: str) -> list[dict[str, Any]]:
        return [entry for entry in self.entries if entry.get("kind") == kind]

    def sha256(self, name: str) -> str | None:
        return (self.by_name.get(name) or {}).get("sha256")
