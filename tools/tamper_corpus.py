"""The tamper corpus, measured: every tampering of tests/tampering.py on real records, caught or not, by class.

    python -m tools.tamper_corpus --runs-dir DIR [--json] [--run-dirs] [--family gs1 ...]

DIR holds a wiring (or standard) rehearsal run directory of each seed spec family (gs1-..., selfgen-...,
trimuon-...: what `python -m flows.run specs/<spec>.json --rehearse --rehearsal-scale wiring --runs-dir DIR`
leaves). Each tampering of `tampering.CORPUS[family]` is applied to the family's RESULT as a tamperer would
(every hash kept consistent, tests/leaves.py rewrite_evidence) and graded as the exchange receives it (the bare
RESULT); with `--run-dirs` also as a run directory: the honest run directory copied, its result.json replaced and
every evidence file rewritten from the tampered record's inline copy (evidence/<name>, manifest sha256), graded
by `flows.validate RUN_DIR`'s path. A tampering is caught when its grade finds something the honest record's
does not (tests/leaves.py findings: a new failing category, or a rule firing more often).

"Before a fix" figures: run it with the grader of an older commit first on PYTHONPATH (a worktree of that commit),
the tamperings of this checkout stay the same (run as a script from the old worktree, so that its `experiment`
comes first on sys.path):
    cd /path/to/old-worktree && PYTHONPATH=$PWD python /path/to/this/tools/tamper_corpus.py --runs-dir DIR \
        --tests-dir /path/to/this/tests
"""

from __future__ import annotations

import argparse
import collections
import copy
import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

FAMILIES = ("gs1", "selfgen", "trimuon")
PREFIX = {"gs1": "gs1-", "selfgen": "selfgen-", "trimuon": "trimuon-"}


def family_run_dirs(runs_dir: Path) -> dict[str, Path]:
    """The newest succeeded run directory of each family in `runs_dir`."""
    found: dict[str, Path] = {}
    for run_dir in sorted(runs_dir.iterdir()):
        if not (run_dir / "result.json").is_file():
            continue
        for family, prefix in PREFIX.items():
            if run_dir.name.startswith(prefix):
                status = json.loads((run_dir / "result.json").read_text()).get("status")
                if status == "succeeded":
                    found[family] = run_dir
    return found


def write_run_dir(honest: Path, result: dict[str, Any], into: Path) -> Path:
    """A copy of the honest run directory holding the tampered RESULT, its evidence files rewritten from the
    record's inline copies (a consistent tamperer edits both), the manifest's hashes to match."""
    run_dir = into / honest.name
    shutil.copytree(honest, run_dir, ignore=shutil.ignore_patterns("*.lock", "lock"))
    manifest_path = run_dir / "evidence" / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {"version": 1, "files": []}
    by_name = {entry.get("name"): entry for entry in manifest.get("files", []) if isinstance(entry, dict)}
    for entry in (result.get("evidence") or {}).get("files") or []:
        name, content = entry.get("name"), entry.get("content")
        if not isinstance(name, str) or not isinstance(content, str) or entry.get("encoding"):
            continue
        data = content.encode("utf-8")
        (run_dir / "evidence" / name).write_bytes(data)
        if name in by_name:
            by_name[name]["sha256"] = hashlib.sha256(data).hexdigest()
            if "bytes" in by_name[name]:
                by_name[name]["bytes"] = len(data)
    manifest_path.write_text(json.dumps(manifest, indent=2))
    (run_dir / "result.json").write_text(json.dumps(result, indent=2))
    return run_dir


def run_dir_findings(run_dir: Path) -> frozenset:
    from experiment.grading import grade_path

    grade = grade_path(run_dir)
    counts: collections.Counter = collections.Counter()
    for name, category in grade.categories.items():
        if category.failing:
            counts[("status", name, category.status)] += 1
        for issue in category.issues:
            counts[(name, issue.rule, issue.status)] += 1
    for problem in grade.problems:
        counts[("problems", str(problem).split(":", 1)[0], "")] += 1
    return frozenset((*key, n) for key, total in counts.items() for n in range(1, total + 1))


def measure(runs_dir: Path, families: list[str], with_run_dirs: bool) -> list[dict[str, Any]]:
    import leaves
    from tampering import CLASSES, CORPUS, tampered

    rows = []
    for family, honest_dir in sorted(family_run_dirs(runs_dir).items()):
        if family not in families:
            continue
        record = json.loads((honest_dir / "result.json").read_text())
        baseline = leaves.findings(record)
        dir_baseline = run_dir_findings(honest_dir) if with_run_dirs else frozenset()
        for name, tamper in CORPUS.get(family, {}).items():
            row = {"family": family, "tampering": name, "class": CLASSES.get(name, "unclassed")}
            try:
                changed = tampered(record, tamper)
            except Exception as err:  # noqa: BLE001 - a tampering that does not apply to this record
                row.update(applies=False, error=f"{type(err).__name__}: {err}")
                rows.append(row)
                continue
            row["applies"] = json.dumps(changed, sort_keys=True) != json.dumps(record, sort_keys=True)  # True != 1
            row["caught_bare"] = bool(leaves.findings(changed) - baseline)
            if with_run_dirs:
                with tempfile.TemporaryDirectory() as tmp:
                    row["caught_run_dir"] = bool(run_dir_findings(write_run_dir(honest_dir, copy.deepcopy(changed),
                                                                                Path(tmp))) - dir_baseline)
            rows.append(row)
    return rows


def summary_lines(rows: list[dict[str, Any]], with_run_dirs: bool) -> list[str]:
    by_class: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for row in rows:
        if row.get("applies"):
            by_class[row["class"]].append(row)
    lines = [f"{'class':44s} {'bare':>9s}" + (f" {'run dir':>9s}" if with_run_dirs else "")]
    total = collections.Counter()
    for name, members in sorted(by_class.items()):
        bare = sum(row["caught_bare"] for row in members)
        total["n"] += len(members)
        total["bare"] += bare
        line = f"{name:44s} {bare:>4d}/{len(members):<4d}"
        if with_run_dirs:
            in_dir = sum(row["caught_run_dir"] for row in members)
            total["dir"] += in_dir
            line += f" {in_dir:>4d}/{len(members):<4d}"
        lines.append(line)
    lines.append(f"{'all':44s} {total['bare']:>4d}/{total['n']:<4d}"
                 + (f" {total['dir']:>4d}/{total['n']:<4d}" if with_run_dirs else ""))
    missed = [row for row in rows if row.get("applies") and not (row["caught_bare"]
                                                                 and row.get("caught_run_dir", True))]
    lines += [f"  not caught: {row['family']}: {row['tampering']}" for row in missed]
    lines += [f"  does not apply: {row['family']}: {row['tampering']} {row.get('error', '')}".rstrip()
              for row in rows if not row.get("applies")]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.tamper_corpus", description=__doc__.splitlines()[0])
    parser.add_argument("--runs-dir", type=Path, required=True, help="run directories of the three families")
    parser.add_argument("--tests-dir", type=Path, default=Path(__file__).resolve().parents[1] / "tests",
                        help="where tampering.py and leaves.py are (default: this checkout's tests/)")
    parser.add_argument("--family", action="append", choices=FAMILIES, help="only these families (default: all)")
    parser.add_argument("--run-dirs", action="store_true", help="also grade each tampering as a run directory")
    parser.add_argument("--json", action="store_true", help="one JSON row per tampering")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(args.tests_dir))
    rows = measure(args.runs_dir, args.family or list(FAMILIES), args.run_dirs)
    print(json.dumps(rows, indent=1) if args.json else "\n".join(summary_lines(rows, args.run_dirs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
