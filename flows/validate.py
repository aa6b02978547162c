"""CLI: grade a run the way the exchange grades it, category by category.

    python -m flows.validate PATH [--spec SPEC] [--json]

PATH is a run directory or a bare result.json. A bare RESULT is graded only from what it carries
(evidence inline), as the exchange receives it; a run directory also has its events.jsonl, tables/
and evidence/ checked against the record, plus the run's self-consistency checks. SPEC defaults
to the spec recorded for the run (with its recorded revision file).

Prints one line per category (evaluator, decision, restoration, correctness, feasibility,
generation_audit) with its status (verified, not_applicable, invalid, unverified, unknown), each
issue as one sentence beneath it, then record-level problems. `--json` prints
{"categories": {"<name>": {"status", "issues"}}, "problems": [...]}.
The last line gives the grade's level (experiment.report.levels), which is also the exit status:
  0  green: every category verified or not applicable, no problem;
  3  amber: nothing found wrong, but a category is unverified or unknown (each named with what would settle it);
  1  red: a category is invalid, or the record has a problem;
  2  the input could not be read, a record nested too deeply included (one line on stderr).
`--json` adds {"level": "green|amber|red", "settle": {category: what would settle it}}.
"""

from __future__ import annotations

import argparse
import json
import sys

from experiment.contract.text import printable, printable_line
from experiment.grading import GradeInputError, grade_path
from experiment.report.levels import level
from flows.lifetime import exit_process, survive_closed_console


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flows.validate", description=__doc__.splitlines()[0])
    parser.add_argument("path", help="a run directory (runs/<run_id>) or a bare result.json")
    parser.add_argument("--spec", default=None, help="grade against this spec (default: the run's recorded spec)")
    parser.add_argument("--json", action="store_true", help="print the grade as JSON")
    args = parser.parse_args(argv)
    try:
        grade = grade_path(args.path, spec=args.spec)
    except GradeInputError as err:
        print(f"error: {printable_line(str(err))}", file=sys.stderr)
        return 2
    except RecursionError:  # JSON nested deeper than Python can walk, in RESULT, events or inline evidence
        print(f"error: {printable_line(args.path)}: a record nests too deeply to read (a RESULT is a few levels "
              "deep); it was not written by this pipeline", file=sys.stderr)
        return 2
    graded = grade.to_dict()
    verdict = level(graded)
    if args.json:
        print(json.dumps({**graded, "level": verdict.word, "settle": verdict.open_categories}, indent=2))
    else:
        lines = []  # record text quoted in issues is printed escaped (experiment.contract.text)
        for name, category in grade.categories.items():
            lines.append(f"{name}: {category.status}")
            lines += [f"  {issue.sentence()}" for issue in category.issues]
            lines += [f"  note: {note}" for note in category.notes if category.status != "not_applicable" or note]
        if grade.problems:
            lines.append(f"problems: {len(grade.problems)}")
            lines += [f"  {problem}" for problem in grade.problems]
        lines.append(f"graded against {grade.spec_source or 'no spec'}")
        lines += verdict.lines()
        print("\n".join(printable(line) for line in lines))
    return verdict.exit_status


if __name__ == "__main__":
    survive_closed_console()  # `... | head`: the rest of the output goes nowhere, no traceback
    exit_process(main())
