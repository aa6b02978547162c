"""CLI: list runs from the cross-run index, or show one run's summary.

    python -m flows.runs [--runs-dir DIR]                 one aligned row per run, newest first
    python -m flows.runs show RUN_ID [--runs-dir DIR]     one run: status, verdict, effect, gates, arms
    python -m flows.runs recover RUN_ID [--runs-dir DIR]  rebuild a damaged result.json from events.jsonl

The list shows every run id whole (a rehearsal's id says "rehearsal"), so any id it shows can be given
to `show`; `show` also accepts a unique prefix or suffix of a run id (e.g. the time stamp and hex tail),
also one that starts with '-' (an id older runs of a non-ASCII spec name may have).
Text from the store is printed with control characters, lone surrogates and bidirectional overrides
shown as escapes (experiment.contract.text): a record cannot clear or rewrite the terminal.

A run whose record says "running" while no process holds its lock is shown as "stale": it stopped without
recording why (killed, or a full disk refused its failure marker); running its command again resumes it.
The runs directory defaults to $RX_RUNS_DIR or ./runs. An empty index prints one friendly line
(exit 0); an unknown run id or an unreadable index prints one line (exit 2).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import sys
from pathlib import Path
from typing import Any

from experiment.contract.text import printable
from experiment.report.summary import arm_metric_rows, gate_table_rows
from experiment.run.store import (STALE, STALE_MEANING, CorruptRecord, RunIndex, default_runs_dir, recover_result,
                                  shown_status)
from flows.lifetime import exit_process, survive_closed_console

LIST_COLUMNS = ("run_id", "status", "verdict", "effect", "started", "duration")


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


def list_runs(runs_dir: Path) -> list[str]:
    """The lines of the run list (newest first), or one friendly line when there are none."""
    try:
        frame = RunIndex(runs_dir).read()
    except (OSError, ValueError) as err:
        raise RunsCliError(f"cannot read the run index {runs_dir / 'index.parquet'}: {err}") from None
    if frame.empty:
        return [f"no runs yet in {runs_dir} (start one with: python -m flows.run SPEC)"]
    records = frame.to_dict("records")
    records.sort(key=lambda record: str(record.get("started") or ""), reverse=True)
    rows = [
        {
            "run_id": _text(record.get("run_id")),
            "status": _text(shown_status(runs_dir / str(record.get("run_id")), record.get("status"))),
            "verdict": _text(record.get("verdict")),
            "effect": _text(record.get("effect")),
            "started": _started(record.get("started")),
            "duration": _duration(record.get("started"), record.get("finished")),
        }
        for record in records
    ]
    return aligned_table(rows, LIST_COLUMNS)  # ids whole: what is shown is what `show` accepts


def _started(value: Any) -> str:
    start = _parse_time(value)
    return start.strftime("%m-%d %H:%M") if start else _text(value)


def resolve_run_id(runs_dir: Path, given: str) -> str:
    """A run id, also from a unique prefix or suffix of one."""
    if (runs_dir / given / "result.json").is_file() or "/" in given or not given.strip("."):
        return given
    matches = [path.name for path in runs_dir.iterdir() if path.is_dir() and (path / "result.json").is_file()
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
    if "/" in run_id or run_id in ("", ".", "..") or not (run_dir / "result.json").is_file():
        raise RunsCliError(f"unknown run id {run_id!r} in {runs_dir} (list runs with: python -m flows.runs)")
    result = _read_json(run_dir / "result.json")
    meta = _read_json(run_dir / "run.json") if (run_dir / "run.json").is_file() else {}
    status = shown_status(run_dir, result.get("status", "-"))
    lines = [f"{meta.get('spec_title', run_id)}", f"  run:       {run_id}",
             f"  status:    {status}" + (f" ({STALE_MEANING})" if status == STALE else "")]
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
    if (run_dir / "events.jsonl").is_file():
        for line in (run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines():
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


def _metric_text(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def recover_run(runs_dir: Path, run_id: str) -> list[str]:
    """Rebuild `<run>/result.json` from its events.jsonl and evidence/; the damaged file is kept beside it."""
    run_id = resolve_run_id(runs_dir, run_id)
    run_dir = runs_dir / run_id
    if "/" in run_id or run_id in ("", ".", "..") or not (run_dir / "events.jsonl").is_file():
        raise RunsCliError(f"unknown run id {run_id!r} in {runs_dir} (list runs with: python -m flows.runs)")
    try:
        result = recover_result(run_dir)
    except (CorruptRecord, OSError, ValueError, KeyError) as err:
        raise RunsCliError(f"cannot rebuild {run_dir / 'result.json'}: {err}") from None
    return [f"rebuilt {run_dir / 'result.json'} from {run_dir / 'events.jsonl'} (status {result.get('status')}); "
            f"the damaged file is {run_dir / 'result.json.damaged'}"]


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
        else:
            lines = list_runs(runs_dir)
    except RunsCliError as err:
        print(f"error: {printable(str(err))}", file=sys.stderr)
        return 2
    print("\n".join(printable(line) for line in lines))
    return 0


if __name__ == "__main__":
    survive_closed_console()  # `... | head`: the rest of the output goes nowhere, no traceback
    exit_process(main())
