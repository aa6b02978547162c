"""Every leaf of a RESULT, perturbed: does the grade leave green? (issue 28 item 6)

    python tests/leaves.py RESULT.json [RESULT.json ...] [--json] [--show-missed] [--every-leaf] [--only PATTERN]

A *leaf* is a value of the record (a number, a string, a bool, null), a key of an object or an item
of a list, anywhere in RESULT, including inside the evidence files it carries inline (JSON and JSONL
contents are parsed; other files are one text leaf). A *perturbation* changes one leaf the way a
tamperer would: a changed value, a value swapped in from elsewhere in the record, a removed key or
list item. An evidence file that is perturbed gets its sha256 recomputed, and every place in the
record that named the old hash names the new one (a tamperer who re-hashes everything).

Leaves are grouped by their *pattern*: the path with list indices written `[*]` (one pattern for
every row of a predictions file). The scan perturbs one leaf of each pattern per kind and grades
it (`experiment.grading.grade_record`, bare RESULT, without the SEC-1 credential scan, which only
adds failures and costs 90% of the time); a perturbation that leaves the grade green is *missed*
unless its pattern is on the list of ungraded fields in docs/ungraded-fields.md (each with its
reason). tests/unit/test_grading_every_leaf.py draws perturbations with hypothesis from the same
functions.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

ROOT = Path(__file__).resolve().parent.parent  # the repository
if str(ROOT) not in sys.path:  # run as a script: grade with this checkout's grader, not an installed one's
    sys.path.insert(0, str(ROOT))

from experiment.grading.common import FLOAT_TOL  # noqa: E402 (after the checkout is on sys.path)

UNGRADED_DOC = ROOT / "docs" / "ungraded-fields.md"
HEX64 = re.compile(r"^[0-9a-f]{64}$")
KINDS = ("change", "swap", "remove")
_MISSING = object()


# ---------------------------------------------------------------------------- evidence contents


@dataclass(frozen=True)
class Content:
    """One inline evidence file, parsed: `json` (one value), `jsonl` (rows) or `text`."""

    form: str
    value: Any
    dump: Callable[[Any], str] | None = None


def _json_dumpers() -> list[Callable[[Any], str]]:
    options = [{}, {"sort_keys": True}, {"indent": 2}, {"indent": 2, "sort_keys": True},
               {"separators": (",", ":")}, {"separators": (",", ":"), "sort_keys": True}, {"indent": 1},
               {"indent": 1, "sort_keys": True}]
    dumpers = []
    for kwargs in options:
        for ascii_ in (True, False):
            for tail in ("", "\n"):
                dumpers.append(lambda v, k=kwargs, a=ascii_, t=tail: json.dumps(v, ensure_ascii=a, **k) + t)
    return dumpers


DUMPERS = _json_dumpers()


def parse_content(text: str) -> Content:
    """The file's value and a serializer that gives its exact bytes back (else: text). The value is parsed anew
    each call (callers edit it); which serializer gives the bytes back is found once per text (`_format_of`)."""
    kind, dumper = _format_of(text)
    if kind == "json":
        return Content("json", json.loads(text), DUMPERS[dumper])
    if kind == "jsonl":
        ends = text.endswith("\n")

        def dump_rows(value: Any, one=DUMPERS[dumper], ends=ends) -> str:
            body = "\n".join(one(row).rstrip("\n") for row in value)
            return body + ("\n" if ends and value else "")

        return Content("jsonl", [json.loads(line) for line in text.splitlines(keepends=True)], dump_rows)
    return Content("text", text, _same_text)


@functools.lru_cache(maxsize=64)
def _format_of(text: str) -> tuple[str, int]:
    """("json" | "jsonl", the first of DUMPERS that gives `text` back) or ("text", -1). Cached: a record's
    perturbations parse each of its evidence files once per leaf, and trying the 32 dumpers on a file was most
    of that (tests/e2e/test_grader_trust.py's ranked perturbations of the GS1 wiring record)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = _MISSING
    if value is not _MISSING:
        for index, dump in enumerate(DUMPERS):
            if dump(value) == text:
                return "json", index
    lines = text.splitlines(keepends=True)
    if lines and all(line.strip() for line in lines):
        try:
            rows = [json.loads(line) for line in lines]
        except json.JSONDecodeError:
            return "text", -1
        for index, dump in enumerate(DUMPERS):
            if all((dumped := dump(row)) + ("" if dumped.endswith("\n") else "\n") == line
                   or dumped == line.rstrip("\n") for row, line in zip(rows, lines)):
                return "jsonl", index
    return "text", -1


def _same_text(value: Any) -> str:
    return value


# ---------------------------------------------------------------------------- leaves


@dataclass(frozen=True)
class Leaf:
    """`file` is None for RESULT itself, else an evidence file name; `path` the keys/indices within."""

    file: str | None
    path: tuple[Any, ...]
    value: Any

    @property
    def pattern(self) -> str:
        return pattern_of(self.file, self.path)

    def __str__(self) -> str:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in self.path).lstrip(".")
        return f"evidence:{self.file}:{where}" if self.file else where


def pattern_of(file: str | None, path: tuple[Any, ...]) -> str:
    text = "".join("[*]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")
    return f"evidence:{file}:{text}" if file else text


def _walk(value: Any, path: tuple[Any, ...]) -> Iterator[tuple[tuple[Any, ...], Any]]:
    yield path, value
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _walk(inner, (*path, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _walk(inner, (*path, index))


def _evidence_files(result: dict[str, Any]) -> list[dict[str, Any]]:
    files = (result.get("evidence") or {}).get("files") if isinstance(result.get("evidence"), dict) else None
    return [f for f in files or [] if isinstance(f, dict)]


def leaves(result: dict[str, Any]) -> list[Leaf]:
    """Every node of RESULT (the evidence files' `content` parsed) except the roots."""
    found = []
    for path, value in _walk(result, ()):
        if path:
            found.append(Leaf(None, path, value))
    for entry in _evidence_files(result):
        content = entry.get("content")
        if isinstance(content, str) and entry.get("encoding") in (None, "utf-8", "utf8", "text"):
            parsed = parse_content(content)
            found += [Leaf(str(entry.get("name")), path, value) for path, value in _walk(parsed.value, ())
                      if path or parsed.form == "text"]
    return found


def representatives(result: dict[str, Any]) -> list[Leaf]:
    """One leaf per pattern (the first in record order)."""
    seen: dict[str, Leaf] = {}
    for leaf in leaves(result):
        seen.setdefault(leaf.pattern, leaf)
    return list(seen.values())


# ---------------------------------------------------------------------------- perturbations


def changed(value: Any) -> Any:
    """A deterministic different value of the same type."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value * 1.5 + 0.5 if value != -1.0 else 0.25
    if isinstance(value, str):
        if HEX64.match(value):
            return ("0" if value[0] != "0" else "1") + value[1:]
        return value + "~" if value else "x"
    if value is None:
        return 0
    if isinstance(value, list):
        return value + value[-1:] if value else [0]
    return value  # an object: only removed (RESULT's objects are open: an added key is not a change)


def pool(result: dict[str, Any]) -> dict[type, list[Any]]:
    """Scalars of the record by type: what a swap draws its new value from."""
    values: dict[type, set[Any]] = {}
    for leaf in leaves(result):
        if isinstance(leaf.value, (bool, int, float, str)) and not (isinstance(leaf.value, str) and len(leaf.value) > 200):
            values.setdefault(type(leaf.value), set()).add(leaf.value)
    return {kind: sorted(found, key=repr) for kind, found in values.items()}


# The widest tolerance the grader compares two record numbers with (relative and absolute): a number within
# it of another is the same number to the grader (float noise, as between an effect and the difference of the
# means it restates), so swapping it in is no change.
GRADER_TOL = FLOAT_TOL


def distinguishable(a: Any, b: Any) -> bool:
    """Whether the grader can tell `b` from `a`: numbers beyond GRADER_TOL of each other, else unequal."""
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) \
            and not isinstance(b, bool):
        return not math.isclose(float(a), float(b), rel_tol=GRADER_TOL, abs_tol=GRADER_TOL)
    return a != b


def swapped(value: Any, candidates: dict[type, list[Any]]) -> Any:
    """Another value of the same type seen elsewhere in the record (deterministic), else `changed`."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        numbers = [v for t in (int, float) for v in candidates.get(t, [])
                   if not isinstance(v, bool) and distinguishable(value, v)]
        if numbers:
            return min(numbers, key=lambda v: (abs(v - value), repr(v)))
    for other in candidates.get(type(value), []):
        if other != value:
            return other
    return changed(value)


# The last strategy `perturbations` built, with the leaves and the value pool it draws from: every example of
# one property asks for the same one, and hypothesis labels a new sampled_from of a record's leaves by hashing
# each leaf (3.5 of the unit every-leaf test's 14 CPU-s when built anew per example). The property's own text
# stays as it was: derandomized draws are seeded from it.
_LAST_PERTURBATIONS: list[tuple[list[Leaf], dict[type, list[Any]], Any]] = []


def perturbations(everything: list[Leaf], candidates: dict[type, list[Any]]) -> Any:
    """A hypothesis strategy of (leaf, kind, new value): any leaf, and for a changed value one of the
    same type that differs by more than the grader's float tolerances (hypothesis is a test
    dependency, imported here only). The same strategy object again for the same leaves and pool."""
    if _LAST_PERTURBATIONS and _LAST_PERTURBATIONS[0][0] is everything and _LAST_PERTURBATIONS[0][1] is candidates:
        return _LAST_PERTURBATIONS[0][2]
    from hypothesis import strategies as st

    def new_value(leaf: Leaf, kind: str) -> Any:
        value = leaf.value
        if kind == "remove":
            return st.just(_MISSING)
        if kind == "swap":
            same = [v for v in candidates.get(type(value), []) if distinguishable(value, v)]
            return st.sampled_from(same) if same else st.just(changed(value))
        if isinstance(value, bool):
            return st.just(not value)
        if isinstance(value, (int, float)):
            numbers = st.sampled_from([0, -1, 0.5, 1.001, 2, 10]).flatmap(
                lambda factor: st.sampled_from([0, 1, -1, 0.25]).map(lambda shift: type(value)(value * factor + shift)))
            return numbers.filter(lambda v: v != value and abs(v - value) > 1e-6 * max(1.0, abs(value)))
        if isinstance(value, str):
            texts = [changed(value), "", value.upper(), value[:-1], "x" + value]
            return st.sampled_from([t for t in texts if t != value] or ["x"])
        return st.just(changed(value))

    def draw(leaf: Leaf) -> Any:
        kinds = [k for k in KINDS if not (k == "remove" and not leaf.path)
                 and not (k == "swap" and not isinstance(leaf.value, (bool, int, float, str)))
                 and not (k == "change" and isinstance(leaf.value, dict))]
        return st.sampled_from(kinds).flatmap(lambda kind: new_value(leaf, kind).map(lambda new: (leaf, kind, new)))

    strategy = st.sampled_from(everything).flatmap(draw)
    _LAST_PERTURBATIONS[:] = [(everything, candidates, strategy)]
    return strategy


def _get(root: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        root = root[key]
    return root


def _set(root: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    _get(root, path[:-1])[path[-1]] = value
    return root


def _remove(root: Any, path: tuple[Any, ...]) -> Any:
    parent = _get(root, path[:-1])
    del parent[path[-1]]
    return root


def rewrite_evidence(result: dict[str, Any], name: str, text: str) -> None:
    """Put `text` in evidence file `name` with its sha256, and every other mention of the old hash
    (RESULT and other inline files, re-hashed in turn) names the new one."""
    pending = [(name, text)]
    done: set[str] = set()
    while pending:
        name, text = pending.pop()
        entry = next(e for e in _evidence_files(result) if e.get("name") == name)
        old = entry.get("sha256")
        new = hashlib.sha256(text.encode("utf-8")).hexdigest()
        entry["content"] = text
        entry["sha256"] = new
        done.add(name)
        if not isinstance(old, str) or old == new:
            continue
        for path, value in list(_walk(result, ())):
            if value == old and path[:2] != ("evidence", "files"):
                _set(result, path, new)
        for other in _evidence_files(result):
            content = other.get("content")
            if isinstance(content, str) and old in content and other.get("name") not in done:
                pending.append((other["name"], content.replace(old, new)))


def replace_value_everywhere(result: dict[str, Any], old: str, new: str) -> None:
    """Every value of RESULT equal to `old`, and every mention of it in the inline evidence files (re-hashed in
    turn, rewrite_evidence), becomes `new`: a renamed id as a consistent tamperer renames it."""
    for path, value in list(_walk(result, ())):
        if value == old and path[:2] != ("evidence", "files"):
            _set(result, path, new)
    for entry in result["evidence"]["files"]:
        if isinstance(entry.get("content"), str) and old in entry["content"]:
            rewrite_evidence(result, entry["name"], entry["content"].replace(old, new))


def perturb(result: dict[str, Any], leaf: Leaf, kind: str, new: Any = _MISSING) -> dict[str, Any] | None:
    """A perturbed deep copy of RESULT (None when the perturbation does not apply to this leaf)."""
    if kind == "remove" and not leaf.path:
        return None
    tampered = json.loads(json.dumps(result))  # a JSON record: no value is shared between two places
    if leaf.file is None:
        target, path = tampered, leaf.path
    else:
        entry = next(e for e in _evidence_files(tampered) if e.get("name") == leaf.file)
        parsed = parse_content(entry["content"])
        target, path = parsed.value, leaf.path
    if kind == "remove":
        _remove(target, path)
    else:
        value = _get(target, path)
        if new is _MISSING:
            new = changed(value) if kind == "change" else swapped(value, pool(result))
        if new == value and (type(new) is type(value) or isinstance(value, float) and not isinstance(new, bool)):
            return None  # the same value (a float written as the equal integer, 0.0 as 0, is the same JSON number)
        target = _set(target, path, new)
    if leaf.file is not None:
        rewrite_evidence(tampered, leaf.file, parsed.dump(target))
    return tampered


# ---------------------------------------------------------------------------- the ungraded list


@dataclass(frozen=True)
class Ungraded:
    pattern: str
    kinds: tuple[str, ...]  # the perturbation kinds the entry covers
    reason: str

    def covers(self, pattern: str, kind: str) -> bool:
        return kind in self.kinds and matches(pattern, self.pattern)


def matches(pattern: str, entry: str) -> bool:
    """Whether a leaf's pattern is covered by a list entry: `[*]` is literal (a list index), any other
    `*` matches any run of characters."""
    regex = "".join(r"\[\*\]" if part == "[*]" else ".*" if part == "*" else re.escape(part)
                    for part in re.split(r"(\[\*\]|\*)", entry))
    return re.fullmatch(regex, pattern) is not None


_ENTRY = re.compile(r"^- `(?P<pattern>[^`]+)`(?: \((?P<kinds>[a-z, ]+)\))?: (?P<reason>\S.*)$")


def ungraded_fields(path: Path = UNGRADED_DOC) -> list[Ungraded]:
    """The entries of docs/ungraded-fields.md: "- `pattern` (kinds): reason" (kinds optional: all)."""
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        match = _ENTRY.match(line)
        if match:
            kinds = tuple(k.strip() for k in match["kinds"].split(",")) if match["kinds"] else KINDS
            entries.append(Ungraded(match["pattern"], kinds, match["reason"].strip()))
    return entries


def is_ungraded(pattern: str, kind: str, entries: list[Ungraded]) -> Ungraded | None:
    return next((entry for entry in entries if entry.covers(pattern, kind)), None)


# ---------------------------------------------------------------------------- grading


def findings(result: dict[str, Any]) -> frozenset[tuple[str, str, str, int]]:
    """What the bare RESULT's grade finds: (category, rule, status, n) for the n-th issue of a rule,
    ("problems", rule, "", n) for record-level problems, ("status", category, status, 1) per failing
    category. SEC-1 is left out: it only adds failures, perturbations add no secret, and it costs
    90% of the grading time."""
    from experiment.grading import general, grade_record

    checks = general.CHECKS
    general.CHECKS = [check for check in checks if check is not general.SEC_1]
    try:
        grade = grade_record(result)
    finally:
        general.CHECKS = checks
    return grade_findings(grade)


def grade_findings(grade: Any) -> frozenset[tuple[str, str, str, int]]:
    """A grade's findings, counted as `findings` counts them (tools/tamper_corpus reads a run directory's grade so)."""
    from collections import Counter

    counts: Counter[tuple[str, str, str]] = Counter()
    for name, category in grade.categories.items():
        if category.failing:
            counts[("status", name, category.status)] += 1
        for issue in category.issues:
            counts[(name, issue.rule, issue.status)] += 1
    for problem in grade.problems:
        counts[("problems", problem.split(":", 1)[0], "")] += 1
    return frozenset((*key, n) for key, total in counts.items() for n in range(1, total + 1))


def green(result: dict[str, Any]) -> bool:
    """No category fails and no problem is found (SEC-1 left out, as in `findings`)."""
    return not findings(result)


@dataclass
class Outcome:
    leaf: Leaf
    kind: str
    caught: bool
    ungraded: Ungraded | None
    crash: str | None = None  # the grader raised instead of grading (itself a grader bug)


def caught(result: dict[str, Any], baseline: frozenset[tuple[str, str, str, int]]) -> tuple[bool, str | None]:
    """Whether the grade finds something the untouched record's grade did not (a category that
    was green fails, or a rule fires that did not): "the grade leaves green", also for a record
    whose baseline grade is not all green (a revision's pins grade correctness unverified)."""
    try:
        return bool(findings(result) - baseline), None
    except Exception as err:  # noqa: BLE001 - a crash is reported, never hidden
        return False, f"{type(err).__name__}: {err}"


def scan(result: dict[str, Any], entries: list[Ungraded] | None = None,
         kinds: tuple[str, ...] = KINDS, every_leaf: bool = False, only: list[str] | None = None) -> list[Outcome]:
    """One perturbation of each kind per pattern (with `every_leaf`, of every leaf), graded against the
    untouched record's findings; with `only`, of the leaves whose pattern one of these patterns matches
    (written as the ungraded list's entries: `evidence:restoration-*`, `feasibility*`)."""
    entries = ungraded_fields() if entries is None else entries
    baseline = findings(result)
    outcomes = []
    candidates = pool(result)
    for leaf in (leaves(result) if every_leaf else representatives(result)):
        if only and not any(matches(leaf.pattern, wanted) for wanted in only):
            continue
        for kind in kinds:
            if (kind == "swap" and not isinstance(leaf.value, (bool, int, float, str))) or \
                    (kind == "change" and isinstance(leaf.value, dict)):
                continue
            new = swapped(leaf.value, candidates) if kind == "swap" else _MISSING
            tampered = perturb(result, leaf, kind, new)
            if tampered is None:
                continue
            found, crash = caught(tampered, baseline)
            outcomes.append(Outcome(leaf, kind, found, is_ungraded(leaf.pattern, kind, entries), crash))
    return outcomes


def assert_drawn_perturbations_caught(record: dict[str, Any], max_examples: int, *,
                                      baseline: frozenset[tuple[str, str, str, int]] | None = None,
                                      everything: list[Leaf] | None = None,
                                      candidates: dict[type, list[Any]] | None = None,
                                      entries: list[Ungraded] | None = None) -> None:
    """The every-leaf property on one record (the unit and e2e tests share it): hypothesis draws
    `max_examples` perturbations (derandomized); each must leave the grade green unless its leaf is on
    docs/ungraded-fields.md, and never crash the grader. The untouched record's findings, leaves and
    value pool are computed unless given."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    baseline = findings(record) if baseline is None else baseline
    everything = leaves(record) if everything is None else everything
    candidates = pool(record) if candidates is None else candidates
    entries = ungraded_fields() if entries is None else entries

    @settings(max_examples=max_examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def perturbed(data: Any) -> None:
        leaf, kind, new = data.draw(perturbations(everything, candidates))
        if is_ungraded(leaf.pattern, kind, entries):
            return
        tampered = perturb(record, leaf, kind, new)
        if tampered is None:
            return
        found, crash = caught(tampered, baseline)
        assert crash is None, f"{kind} {leaf}: the grader crashed ({crash})"
        assert found, f"{kind} {leaf} (-> {new!r}) leaves the grade as it was and is not on docs/ungraded-fields.md"

    perturbed()


def ranked_perturbations(result: dict[str, Any], count: int, entries: list[Ungraded] | None = None,
                         ) -> list[tuple[Leaf, str]]:
    """`count` perturbations chosen by the record's shape alone, never by a draw: one leaf per pattern (the first
    in record order), each (pattern, kind) ranked by the sha256 of its text, the first `count` that apply and are
    not on the ungraded list. A record rebuilt by another run of the same shape (other times, ids and timings)
    gives the same choice, and the new value is `changed` or `swapped` of the leaf's own value: the same test
    every run."""
    entries = ungraded_fields() if entries is None else entries
    chosen = []
    for leaf, kind in sorted(((leaf, kind) for leaf in representatives(result) for kind in KINDS),
                             key=lambda pair: hashlib.sha256(f"{pair[0].pattern} {pair[1]}".encode()).hexdigest()):
        if len(chosen) == count:
            break
        if (kind == "swap" and not isinstance(leaf.value, (bool, int, float, str))) or \
                (kind == "change" and isinstance(leaf.value, dict)) or (kind == "remove" and not leaf.path):
            continue
        if not is_ungraded(leaf.pattern, kind, entries):
            chosen.append((leaf, kind))
    return chosen


def assert_ranked_perturbations_caught(record: dict[str, Any], count: int) -> None:
    """The every-leaf property on a record rebuilt each run (the e2e wiring records): the `ranked_perturbations`
    each leave the grade green, and never crash the grader."""
    baseline, candidates = findings(record), pool(record)
    missed = []
    for leaf, kind in ranked_perturbations(record, count):
        tampered = perturb(record, leaf, kind, swapped(leaf.value, candidates) if kind == "swap" else _MISSING)
        if tampered is None:
            continue
        found, crash = caught(tampered, baseline)
        assert crash is None, f"{kind} {leaf}: the grader crashed ({crash})"
        if not found:
            missed.append(f"{kind} {leaf}")
    assert not missed, f"leave the grade as it was and are not on docs/ungraded-fields.md: {missed}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tests/leaves.py", description=__doc__.splitlines()[0])
    parser.add_argument("records", nargs="+", help="result.json files that grade green")
    parser.add_argument("--show-missed", action="store_true", help="list every missed perturbation")
    parser.add_argument("--every-leaf", action="store_true",
                        help="perturb every leaf, not one per pattern (slow on a wiring record: hours on 2 cores)")
    parser.add_argument("--only", action="append", metavar="PATTERN",
                        help="perturb only the leaves this pattern matches (repeatable; `*` matches anything, `[*]` "
                             "is a list index): a subset scan, e.g. --only 'evidence:restoration-*'")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    report = {}
    entries = ungraded_fields()
    for path in args.records:
        result = json.loads(Path(path).read_text(encoding="utf-8"))
        outcomes = scan(result, entries, every_leaf=args.every_leaf, only=args.only)
        baseline = sorted(findings(result))
        missed = [o for o in outcomes if not o.caught and o.crash is None and o.ungraded is None]
        crashes = [o for o in outcomes if o.crash is not None]
        report[path] = {"baseline_findings": [" ".join(map(str, f)) for f in baseline], "patterns": len({o.leaf.pattern for o in outcomes}), "perturbations": len(outcomes),
                        "caught": sum(o.caught for o in outcomes),
                        "ungraded": sum(not o.caught and o.crash is None and o.ungraded is not None for o in outcomes),
                        "crashed": len(crashes), "missed": len(missed),
                        "missed_list": [f"{o.kind} {o.leaf}" for o in missed],
                        "crash_list": [f"{o.kind} {o.leaf}: {o.crash}" for o in crashes]}
        if not args.json:
            line = {k: v for k, v in report[path].items() if not k.endswith("_list") and k != "baseline_findings"}
            print(f"{path}: {json.dumps(line)}")
            if args.show_missed:
                for text in report[path]["missed_list"]:
                    print(f"  missed: {text}")
                for text in report[path]["crash_list"]:
                    print(f"  crashed: {text}")
    if args.json:
        print(json.dumps(report, indent=2))
    return 0 if all(r["missed"] == 0 and r["crashed"] == 0 for r in report.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
