"""Compare two runs' records: python tools/compare_runs.py BEFORE_RUN_DIR AFTER_RUN_DIR [--show N]

For a refactor that must change no record: result.json and every inline evidence file that is
JSON or JSONL are walked leaf by leaf. Leaves that may differ between two runs of the same code are
set aside: timings (and what is projected from them), run ids, paths and checkpoint URIs, code and
content hashes, timestamps. Everything else is compared exactly: numbers (metrics, scores, losses,
update errors, effects), verdicts, decision objects, counts. Prints per run the verdict, the effect
before and after, how many numbers were compared and which leaves differ. Exit status 1 when a
compared leaf differs.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any, Iterator

# a key whose value is a timing, an identity of this run, a path or a hash: set aside
SET_ASIDE_KEY = re.compile(
    r"(seconds|_s$|^s$|wall|duration|elapsed|latency|time|started|finished|created|_at$|timestamp|"
    r"run_id|run_dir|path|uri|url|checkpoint|sha256|hash|model_id|session|pid|host|revision|"
    r"code_|evaluator_id|^id$|files_sha256|source|evidence_ref|_ref$|name$|predictions_ref|dataset_file|"
    r"audit_file|evaluation_file|loaded_|tokenizer|gpu_hours|budget_used|fits)", re.I)
HEX_KEY = re.compile(r"[0-9a-f]{64}")
# subtrees derived from timings (the feasibility projection and its measured phases)
SET_ASIDE_SUBTREE = re.compile(r"(^|/)(feasibility/(projection|measurements|recovery|pilot)|grade/|"
                               r"rehearsal/|validation/|evidence/files|evidence/(script|code-revision|pipeline))")
# text that carries timings or run ids inline (compared after masking numbers with units of time)
TIMING_IN_TEXT = re.compile(r"\d+(\.\d+)?(e-?\d+)?\s*(s|ms|sec|seconds|min|minutes)\b|[0-9a-f]{6,}|\d{8}T\d{6}")


def leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            key = "<sha256>" if HEX_KEY.fullmatch(str(key)) else key  # e.g. evaluation.evaluators.<evaluator id>
            yield from leaves(item, f"{path}/{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from leaves(item, f"{path}[{index}]")
    else:
        yield path, value


def set_aside(path: str) -> bool:
    keys = [k for k in re.split(r"[/\[\]]", path) if k and not k.isdigit()]
    return bool(SET_ASIDE_SUBTREE.search(path)) or any(SET_ASIDE_KEY.search(k) for k in keys)


def evidence_records(run_dir: Path) -> dict[str, Any]:
    """Inline evidence that is JSON or JSONL, by file name (scripts and code revisions left out)."""
    result = json.loads((run_dir / "result.json").read_text())
    records: dict[str, Any] = {}
    for entry in (result.get("evidence") or {}).get("files", []):
        if entry.get("kind") in ("script", "code_revision") or not isinstance(entry.get("content"), str):
            continue
        text = entry["content"]
        try:
            records[entry["name"]] = json.loads(text)
        except ValueError:
            try:
                records[entry["name"]] = [json.loads(line) for line in text.splitlines() if line.strip()]
            except ValueError:
                continue
    return records


def compare(before: Any, after: Any, prefix: str) -> tuple[int, list[str], list[str]]:
    """(numbers compared, differing compared leaves, text leaves that differ only by timings/ids)."""
    a, b = dict(leaves(before, prefix)), dict(leaves(after, prefix))
    numbers, differ, text_timing = 0, [], []
    for path in sorted(set(a) | set(b)):
        if set_aside(path):
            continue
        x, y = a.get(path, "<absent>"), b.get(path, "<absent>")
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            numbers += 1
        if x == y:
            continue
        if isinstance(x, str) and isinstance(y, str) and TIMING_IN_TEXT.sub("#", x) == TIMING_IN_TEXT.sub("#", y):
            text_timing.append(path)
            continue
        differ.append(f"{path}: {x!r} -> {y!r}"[:300])
    return numbers, differ, text_timing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--show", type=int, default=40, help="differing leaves to print")
    args = parser.parse_args(argv)
    before, after = (json.loads((d / "result.json").read_text()) for d in (args.before, args.after))
    numbers, differ, text_timing = compare(
        {k: v for k, v in before.items() if k != "evidence"}, {k: v for k, v in after.items() if k != "evidence"}, "")
    ev_before, ev_after = evidence_records(args.before), evidence_records(args.after)
    for name in sorted(set(ev_before) | set(ev_after)):
        n, d, t = compare(ev_before.get(name, "<absent>"), ev_after.get(name, "<absent>"), f"evidence:{name}")
        numbers, differ, text_timing = numbers + n, differ + d, text_timing + t
    print(f"verdict {before.get('verdict')} -> {after.get('verdict')}; effect {before.get('effect')} -> "
          f"{after.get('effect')}; outcome_reason {before.get('outcome_reason')} -> {after.get('outcome_reason')}")
    print(f"numbers compared: {numbers}; compared leaves differing: {len(differ)}; "
          f"text leaves differing only in timings or ids: {len(text_timing)}")
    for line in differ[: args.show]:
        print("  DIFF", line)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
