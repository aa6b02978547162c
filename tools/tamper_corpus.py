"""Grade the tamperings of tests/tampering_spec.py against wiring records: how many does this checkout's grader catch?

    python -m tools.tamper_corpus RECORDS_DIR [--only TEXT ...]

RECORDS_DIR holds `<family>.json` (a bare RESULT) and `<family>/` (its run directory) for gs1, selfgen and trimuon,
e.g. copies of `python -m flows.run specs/<spec>.json --rehearse --rehearsal-scale wiring` run directories. Each
record tampering (SPEC_CORPUS) is applied to a copy of the bare RESULT, each run-directory tampering (RUN_DIR_CORPUS)
to a copy of the run directory; a tampering is caught when the grade finds something the untouched record's does not
(a rule that fires anew, a category that fails anew). Prints one line per tampering and the count per class (the text
before the colon of its name). The grader is the one of the checkout this runs from: run it from a checkout of an
earlier commit (with this tool and tests/tampering_spec.py copied in) to see what that code caught.
"""

from __future__ import annotations

import argparse
import copy
import json
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import leaves  # noqa: E402 (tests/ on the path first)
from tampering_spec import RUN_DIR_CORPUS, SPEC_CORPUS  # noqa: E402

from experiment.grading import grade_record  # noqa: E402


def run_dir_findings(run_dir: Path) -> set[tuple[str, str, str]]:
    graded = grade_record(json.loads((run_dir / "result.json").read_text()), run_dir=run_dir)
    found = {(name, issue.rule, issue.status) for name, grade in graded.categories.items() for issue in grade.issues}
    found |= {("status", name, grade.status) for name, grade in graded.categories.items() if grade.failing}
    return found | {("problems", problem.split(":", 1)[0], problem) for problem in graded.problems}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("records", type=Path)
    parser.add_argument("--only", nargs="*", default=[], help="tamperings whose name contains one of these")
    args = parser.parse_args(argv)
    wanted = (lambda name: not args.only or any(text in name for text in args.only))
    tally: Counter[tuple[str, bool]] = Counter()
    for family, tampers in SPEC_CORPUS.items():
        record = json.loads((args.records / f"{family}.json").read_text())
        before = leaves.findings(record)
        for name, tamper in tampers.items():
            if wanted(name):
                edited = copy.deepcopy(record)
                tamper(edited)
                new = leaves.findings(edited) - before
                tally[(name.split(":")[0], bool(new))] += 1
                print(f"{family:8} {name:60} {'caught' if new else 'passes'} {sorted({f[1] for f in new})}")
    for family, tampers in RUN_DIR_CORPUS.items():
        before = run_dir_findings(args.records / family)
        for name, tamper in tampers.items():
            if wanted(name):
                with tempfile.TemporaryDirectory() as tmp:
                    copied = Path(tmp) / family
                    shutil.copytree(args.records / family, copied)
                    tamper(copied)
                    new = run_dir_findings(copied) - before
                tally[(name.split(":")[0], bool(new))] += 1
                print(f"{family:8} {name:60} {'caught' if new else 'passes'} {sorted({f[1] for f in new})}")
    for kind in sorted({kind for kind, _ in tally}):
        print(f"{kind}: caught {tally[(kind, True)]} of {tally[(kind, True)] + tally[(kind, False)]}")
    print(f"all: caught {sum(n for (_, hit), n in tally.items() if hit)} of {sum(tally.values())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
