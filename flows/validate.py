"""CLI: re-check a run directory against the run contract.

    python -m flows.validate RUN_DIR

Prints one line per problem (`<check>: <message>`), or `ok: <n> checks passed` when clean.
Exit status: 0 clean, 1 problems found, 2 bad input (missing directory, not a run directory).
"""

from __future__ import annotations

import argparse
import sys

from experiment.validation import RunDirError, run_validation


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flows.validate", description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", help="a run directory, e.g. runs/<run_id>")
    args = parser.parse_args(argv)
    try:
        report = run_validation(args.run_dir)
    except RunDirError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for problem in report.problems:
        print(problem)
    if report.ok:
        print(f"ok: {len(report.checks)} checks passed")
        return 0
    return 1


if __name__ == "__main__":
    sys.exit(main())
