"""CLI: list runs from the cross-run index, or show one run's summary.

    python -m flows.runs [--runs-dir DIR]                 one aligned row per run, newest first
    python -m flows.runs --spec gs1 --status failed --kind capacity_blocked --sort duration --json
                                                          filtered (substring of spec file or title; exact status;
                                                          exact kind), sorted, or as a JSON list
    python -m flows.runs show RUN_ID [--runs-dir DIR]     one run: status, verdict, effect, gates, arms
    python -m flows.runs recover RUN_ID [--runs-dir DIR]  rebuild a damaged result.json from events.jsonl

The list shows every run id whole (a rehearsal's id says "rehearsal"), so any id it shows can be given
to `show`; `show` also accepts a unique prefix or suffix of a run id (e.g. the time stamp and hex tail),
also one that starts with '-' (an id older runs of a non-ASCII spec name may have).
Text from the store is printed with control characters, lone surrogates and bidirectional overrides
shown as escapes (experiment.contract.text): a record cannot clear or rewrite the terminal.

A run whose record says "running" while no process holds its lock is shown as "stale": it stopped without
recording why (killed, or a full disk refused its failure marker); running its command again resumes it.
Its kind says what became of it (experiment.run.store.RUN_KINDS): decided, gate_failed, capacity_blocked and
interrupted (both resumable: `show` prints the command), running, unreadable. A run that stopped before its
verdict shows verdict "-" (the three-way vocabulary spells that absence "inconclusive" in RESULT).
The runs directory defaults to $RX_RUNS_DIR or ./runs. An empty index prints one friendly line
(exit 0); an unknown run id or an unreadable index prints one line (exit 2).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import shlex
import sys
from pathlib import Path
from typing import Any

from experiment.contract.text import printable
from experiment.contract.run_layout import RESULT_FILE, events_path, result_path, run_meta_path
from experiment.report.summary import arm_metric_rows, gate_table_rows
from experiment.run.store import (RESUMABLE_KINDS, RUN_KINDS, STALE, STALE_MEANING, CorruptRecord, RunIndex,
                                  default_runs_dir, intact_result, recover_result, run_kind, shown_status)
from flows.lifetime import exit_process, survive_closed_console

LIST_COLUMNS = ("run_id", "spec", "scale", "status", "kind", "verdict", "effect", "started", "duration")
SORT_KEYS = ("started", "duration", "spec", "status", "kind")


class RunsCliError(Exception):
    """Bad input for the CLI; printed as one line, exit 2."""


def _text(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    try:
        import pandas as pd

        if value is pd.NA:
            return "-"
    except ImportError:  # pragma: no cover
        pass
    if isinstance(value, float):
        return f"{value:+.4f}"
    return str(value)


def _parse_time(value: Any) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(str(value))
    except ValueError:
        return None


def _duration(started: Any, finished: Any) -> str:
    start, end = _parse_time(started), _parse_time(finished)
    if start is None:
        return "-"
    if end is None:
        return "running"
    seconds = int((end - start).total_seconds())
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m{seconds:02d}s" if hours else f"{minutes}m{seconds:02d}s"


def aligned_table(rows: list[dict[str, str]], columns: tuple[str, ...]) -> list[str]:
    widths = {column: max(len(column), *(len(row[column]) for row in rows)) for column in columns}
    lines = ["  ".join(column.ljust(widths[column]) for column in columns).rstrip()]
    for row in rows:
        lines.append("  ".join(row[column].ljust(widths[column]) for column in columns).rstrip())
    return lines


def _value(value: Any) -> Any:
    """A value of the index as JSON gives it: pandas' missing values are None."""
    text = _text(value)
    return None if text == "-" else value


def _seconds(started: Any, finished: Any) -> float | None:
    start, end = _parse_time(started), _parse_time(finished)
    return (end - start).total_seconds() if start and end else None


def run_rows(runs_dir: Path, spec: str | None = None, status: str | None = None, kind: str | None = None,
             sort: str = "started") -> list[dict[str, Any]]:
    """The index's runs as plain values, filtered and sorted (newest, longest or by name first)."""
    try:
        frame = RunIndex(runs_dir).read()
    except (OSError, ValueError) as err:
        raise RunsCliError(f"cannot read the run index {runs_dir / 'index.parquet'}: {err}") from None
    rows = []
    for record in frame.to_dict("records"):
        record = {column: _value(record.get(column)) for column in RunIndex.COLUMNS}
        record["status"] = shown_status(runs_dir / str(record["run_id"]), record["status"])
        if record["status"] == STALE:
            record["kind"] = "interrupted"  # it stopped without recording why: resumable, as an interrupted run
        record["resumable"] = record["kind"] in RESUMABLE_KINDS
        if record["kind"] != "decided" and record["kind"] is not None and record["kind"] != "running":
            record["verdict"] = None  # stopped before its verdict, whatever the vocabulary spells the absence
        record["duration_s"] = _seconds(record["started"], record["finished"])
        if spec and spec.lower() not in f"{record['spec'] or ''} {record['spec_title'] or ''}".lower():
            continue
        if (status and record["status"] != status) or (kind and record["kind"] != kind):
            continue
        rows.append(record)
    if sort == "duration":
        rows.sort(key=lambda row: -1.0 if row["duration_s"] is None else row["duration_s"], reverse=True)
    elif sort == "started":
        rows.sort(key=lambda row: str(row["started"] or ""), reverse=True)
    else:
        rows.sort(key=lambda row: (str(row[sort] or ""), str(row["started"] or "")))
    return rows


def list_runs(runs_dir: Path, spec: str | None = None, status: str | None = None, kind: str | None = None,
              sort: str = "started") -> list[str]:
    """The lines of the run list (newest first), or one friendly line when there are none."""
    rows = run_rows(runs_dir, spec, status, kind, sort)
    if not rows:
        if spec or status or kind:
            return [f"no runs in {runs_dir} match the filter"]
        return [f"no runs yet in {runs_dir} (start one with: python -m flows.run SPEC)"]
    shown = [
        {
            "run_id": _text(row["run_id"]),
            "spec": _text(row["spec"]),
            "scale": _text(row["scale"]),
            "status": _text(row["status"]),
            "kind": _text(row["kind"]) + (" (resumable)" if row["resumable"] else ""),
            "verdict": _text(row["verdict"]),
            "effect": _text(row["effect"]),
            "started": _started(row["started"]),
            "duration": _duration(row["started"], row["finished"]),
        }
        for row in rows
    ]
    return aligned_table(shown, LIST_COLUMNS)  # ids whole: what is shown is what `show` accepts


def _started(value: Any) -> str:
    start = _parse_time(value)
    return start.strftime("%m-%d %H:%M") if start else _text(value)


def resolve_run_id(runs_dir: Path, given: str) -> str:
    """A run id, also from a unique prefix or suffix of one."""
    if result_path(runs_dir / given).is_file() or "/" in given or not given.strip("."):
        return given
    matches = [path.name for path in runs_dir.iterdir() if path.is_dir() and result_path(path).is_file()
               and (path.name.startswith(given) or path.name.endswith(given))] if runs_dir.is_dir() else []
    if len(matches) > 1:
        raise RunsCliError(f"{given!r} matches {len(matches)} runs: {', '.join(sorted(matches))}")
    return matches[0] if matches else given


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise RunsCliError(f"cannot read {path}: {err}") from None


def show_run(runs_dir: Path, run_id: str) -> list[str]:
    """The lines of one run's summary."""
    run_id = resolve_run_id(runs_dir, run_id)
    run_dir = runs_dir / run_id
    if "/" in run_id or run_id in ("", ".", "..") or not result_path(run_dir).is_file():
        raise RunsCliError(f"unknown run id {run_id!r} in {runs_dir} (list runs with: python -m flows.runs)")
    result = _read_json(result_path(run_dir))
    meta = _read_json(run_meta_path(run_dir)) if run_meta_path(run_dir).is_file() else {}
    status = shown_status(run_dir, result.get("status", "-"))
    kind = "interrupted" if status == STALE else run_kind(result)
    lines = [f"{meta.get('spec_title', run_id)}", f"  run:       {run_id}",
             f"  status:    {status}" + (f" ({STALE_MEANING})" if status == STALE else ""),
             f"  kind:      {kind} ({RUN_KINDS[kind]})"]
    if kind in RESUMABLE_KINDS:
        lines.append(f"  resume:    {resume_command(meta, runs_dir)}")
    if "verdict" in result:
        verdict = str(result["verdict"])
        if result.get("confidence"):
            verdict += f" ({result['confidence']} confidence)"
        lines.append(f"  verdict:   {verdict}")
    if result.get("outcome_reason"):
        lines.append(f"  outcome:   {result['outcome_reason']}")
    if isinstance(result.get("effect"), (int, float)):
        effect = f"{result['effect']:+.4f}"
        ci = result.get("ci")
        if isinstance(ci, list) and len(ci) == 2:
            effect += f"  ci [{ci[0]:+.4f}, {ci[1]:+.4f}]"
        if isinstance(result.get("margin"), (int, float)):
            effect += f"  margin {result['margin']:+.4f}"
        lines.append(f"  effect:    {effect}")
    lines.append(f"  summary:   {result.get('summary', '-')}")
    events = []
    if events_path(run_dir).is_file():
        for line in events_path(run_dir).read_text(encoding="utf-8").splitlines():
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(event, dict) and event.get("event") == "gate":
                events.append(event)
    lines.append("  gates:")
    gate_rows = gate_table_rows(events)
    if gate_rows:
        width = max(len(str(row["gate"])) for row in gate_rows)
        lines += [f"    {str(row['gate']).ljust(width)}  {row['status']}" for row in gate_rows]
    else:
        lines.append("    (none recorded)")
    completed = result.get("completed_arms") or []
    lines.append(f"  completed arms: {', '.join(completed) if completed else 'none'}")
    arm_rows = arm_metric_rows(result)
    if arm_rows:
        lines.append("  per-arm metrics:")
        for row in arm_rows:
            values = ", ".join(
                f"{key}={_metric_text(value)}" for key, value in row.items() if key not in ("arm", "completed")
            )
            lines.append(f"    {row['arm']}: {values or '-'}")
    grade = result.get("grade")
    if isinstance(grade, dict) and isinstance(grade.get("categories"), dict):
        lines.append("  grade (as the exchange grades it; python -m flows.validate for details):")
        lines += [f"    {name}: {entry.get('status')}" for name, entry in grade["categories"].items()
                  if isinstance(entry, dict)]
    lines.append(f"  path:      {run_dir.resolve()}")
    return lines


def resume_command(meta: dict[str, Any], runs_dir: Path) -> str:
    """The command that resumes a run: the one that started it (a run of the same spec resumes its unfinished run)."""
    spec_path = meta.get("spec_path") or "SPEC"
    scale = meta.get("scale")
    words = ["python -m flows.run", shlex.quote(str(spec_path))]
    if scale in ("standard", "wiring"):
        words.append("--rehearse" + (" --rehearsal-scale wiring" if scale == "wiring" else ""))
    words.append(f"--runs-dir {shlex.quote(str(runs_dir))}")
    return " ".join(words) + "  (add --backend URL if it ran on a service)"


def _metric_text(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def recover_run(runs_dir: Path, run_id: str) -> list[str]:
    """Rebuild a damaged `<run>/result.json` from its events.jsonl and evidence/; the damaged file is kept beside it.
    An intact result.json is left as it is."""
    run_id = resolve_run_id(runs_dir, run_id)
    run_dir = runs_dir / run_id
    if "/" in run_id or run_id in ("", ".", "..") or not events_path(run_dir).is_file():
        raise RunsCliError(f"unknown run id {run_id!r} in {runs_dir} (list runs with: python -m flows.runs)")
    intact = intact_result(run_dir)
    if intact is not None:
        return [f"{result_path(run_dir)} is intact (status {intact.get('status')}); nothing was changed"]
    try:
        result = recover_result(run_dir)
    except (CorruptRecord, OSError, ValueError, KeyError) as err:
        raise RunsCliError(f"cannot rebuild {result_path(run_dir)}: {err}") from None
    return [f"rebuilt {result_path(run_dir)} from {events_path(run_dir)} (status {result.get('status')}); "
            f"the damaged file is {run_dir / (RESULT_FILE + '.damaged')}"]


def run_ids_as_positionals(argv: list[str]) -> list[str]:
    """`show -2026...` -> `show -- -2026...`: after `show`, a word starting with '-' that is not an option
    of the CLI is a run id (argparse would otherwise take it for an unknown option)."""
    command = next((word for word in argv if word in ("show", "recover")), None)
    if command is None or "--" in argv:
        return argv
    at = argv.index(command) + 1
    options = {"--runs-dir", "-h", "--help"}
    rest, ids, skip = [], [], False
    for word in argv[at:]:
        if skip:
            rest.append(word)
            skip = False
        elif word in options or word.startswith("--runs-dir="):
            rest.append(word)
            skip = word == "--runs-dir"
        elif word.startswith("-"):
            ids.append(word)
        else:
            rest.append(word)
    return argv[:at] + rest + (["--", *ids] if ids else [])


def main(argv: list[str] | None = None) -> int:
    runs_dir_help = "runs directory (default: $RX_RUNS_DIR or ./runs)"
    parser = argparse.ArgumentParser(prog="python -m flows.runs", description="List runs or show one run.")
    parser.add_argument("--runs-dir", type=Path, default=None, help=runs_dir_help)
    parser.add_argument("--spec", default=None, help="only runs whose spec file or title contains this text")
    parser.add_argument("--status", default=None, help="only runs of this status (running, succeeded, failed, stale)")
    parser.add_argument("--kind", default=None, choices=sorted(RUN_KINDS), help="only runs of this kind")
    parser.add_argument("--sort", default="started", choices=SORT_KEYS, help="newest first (default), longest first, "
                                                                             "or by spec, status or kind")
    parser.add_argument("--json", action="store_true", help="print the runs as a JSON list")
    commands = parser.add_subparsers(dest="command")
    show = commands.add_parser("show", help="show one run's summary")
    show.add_argument("run_id")
    # accepted after `show` too; SUPPRESS keeps a value given before `show`
    show.add_argument("--runs-dir", type=Path, default=argparse.SUPPRESS, help=runs_dir_help)
    recover = commands.add_parser("recover", help="rebuild a damaged result.json from the run's events.jsonl")
    recover.add_argument("run_id")
    recover.add_argument("--runs-dir", type=Path, default=argparse.SUPPRESS, help=runs_dir_help)
    args = parser.parse_args(run_ids_as_positionals(list(sys.argv[1:] if argv is None else argv)))
    runs_dir = args.runs_dir if args.runs_dir is not None else default_runs_dir()
    try:
        if args.command == "show":
            lines = show_run(runs_dir, args.run_id)
        elif args.command == "recover":
            lines = recover_run(runs_dir, args.run_id)
        elif args.json:
            print(json.dumps(run_rows(runs_dir, args.spec, args.status, args.kind, args.sort), default=str, indent=1))
            return 0
        else:
            lines = list_runs(runs_dir, args.spec, args.status, args.kind, args.sort)
    except RunsCliError as err:
        print(f"error: {printable(str(err))}", file=sys.stderr)
        return 2
    print("\n".join(printable(line) for line in lines))
    return 0


if __name__ == "__main__":
    survive_closed_console()  # `... | head`: the rest of the output goes nowhere, no traceback
    exit_process(main())
