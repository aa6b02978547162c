"""CLI: grade a run the way the exchange grades it, category by category.

    python -m flows.validate PATH [--spec SPEC] [--json] [--reproduce [--backend URL]]

PATH is a run directory or a bare result.json. A bare RESULT is graded only from what it carries
(evidence inline), as the exchange receives it; a run directory also has its events.jsonl, tables/
and evidence/ checked against the record, plus the run's self-consistency checks. SPEC defaults
to the spec recorded for the run (with its recorded revision file).

Prints one line per category (evaluator, decision, restoration, correctness, feasibility,
generation_audit) with its status (verified, not_applicable, invalid, unverified, unknown), each
issue as one sentence beneath it, then record-level problems. `--json` prints
{"categories": {"<name>": {"status", "issues"}}, "problems": [...]}.
`--reproduce` also re-runs what the record makes deterministic (the grader's own scorer on the retained
predictions, its own re-solver on the audited generated tasks) and, with `--backend URL` (a running service that
holds the run's checkpoints: for a rehearsal, `python -m embedded_tinker serve --port N --checkpoint-dir
RUNS_DIR/.embedded-checkpoints`), re-scores a deterministic sample of evaluation items from the recorded
checkpoints; a disagreement is a finding of its category (REPRO-*, docs/reproduce.md) and the last line before the
verdict says what it cost. An unreachable service is bad input.
The last line gives the grade's level (experiment.report.levels), which is also the exit status:
  0  green: every category verified or not applicable, no problem;
  3  amber: nothing found wrong, but a category is unverified or unknown (each named with what would settle it);
  1  red: a category is invalid, or the record has a problem;
  2  the input could not be read, a record nested too deeply included (one line on stderr).
`--json` adds {"level": "green|amber|red", "settle": {category: what would settle it}} (and "reproduced").
"""

from __future__ import annotations

import argparse
import json
import sys

from experiment.contract.text import printable, printable_line
from experiment.grading import GradeInputError, grade_path, load_input
from experiment.grading.reproduce import ServiceUnreachable, apply, reproduce
from experiment.report.levels import level
from flows.lifetime import exit_process, survive_closed_console


def open_service(backend: str):
    """A session on the service for --reproduce (experiment.grading.reproduce.service). The tinker SDK is imported
    here, only when a service is given: a plain grade and an offline --reproduce load no SDK (a second, not several)."""
    from experiment.grading.reproduce.service import open_session

    return open_session(backend)


def _cost(reproduction) -> dict:
    return {"findings": len(reproduction.issues), "service_calls": reproduction.service_calls,
            "seconds": round(reproduction.seconds, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flows.validate", description=__doc__.splitlines()[0])
    parser.add_argument("path", help="a run directory (runs/<run_id>) or a bare result.json")
    parser.add_argument("--spec", default=None, help="grade against this spec (default: the run's recorded spec)")
    parser.add_argument("--json", action="store_true", help="print the grade as JSON")
    parser.add_argument("--reproduce", action="store_true",
                        help="re-run the scorer and the re-solver on the record (and, with --backend, re-score a sample "
                             "from its checkpoints)")
    parser.add_argument("--backend", default=None, help="with --reproduce: the service URL that holds the checkpoints")
    args = parser.parse_args(argv)
    if args.backend is not None and not args.reproduce:
        print("error: --backend is only used with --reproduce", file=sys.stderr)
        return 2
    reproduction = None
    try:
        grade = grade_path(args.path, spec=args.spec)
        if args.reproduce:
            result, run_dir = load_input(args.path)
            session = open_service(args.backend) if args.backend is not None else None
            reproduction = reproduce(grade, result, run_dir, session)
            apply(grade, reproduction)
    except (GradeInputError, ServiceUnreachable) as err:
        print(f"error: {printable_line(str(err))}", file=sys.stderr)
        return 2
    except RecursionError:  # JSON nested deeper than Python can walk, in RESULT, events or inline evidence
        print(f"error: {printable_line(args.path)}: a record nests too deeply to read (a RESULT is a few levels "
              "deep); it was not written by this pipeline", file=sys.stderr)
        return 2
    graded = grade.to_dict()
    verdict = level(graded)
    if args.json:
        print(json.dumps({**graded, "level": verdict.word, "settle": verdict.open_categories,
                          **({"reproduced": _cost(reproduction)} if reproduction is not None else {})}, indent=2))
    else:
        lines = []  # record text quoted in issues is printed escaped (experiment.contract.text)
        for name, category in grade.categories.items():
            lines.append(f"{name}: {category.status}")
            lines += [f"  {issue.sentence()}" for issue in category.issues]
            lines += [f"  note: {note}" for note in category.notes if category.status != "not_applicable" or note]
        if grade.problems:
            lines.append(f"problems: {len(grade.problems)}")
            lines += [f"  {problem}" for problem in grade.problems]
        if reproduction is not None:
            cost = _cost(reproduction)
            lines.append(f"reproduced: {cost['findings']} finding(s), {cost['service_calls']} service call(s), "
                         f"{cost['seconds']} s")
        lines.append(f"graded against {grade.spec_source or 'no spec'}")
        lines += verdict.lines()
        print("\n".join(printable(line) for line in lines))
    return verdict.exit_status


if __name__ == "__main__":
    survive_closed_console()  # `... | head`: the rest of the output goes nowhere, no traceback
    exit_process(main())
