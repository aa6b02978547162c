"""The tamper corpus, measured: every tampering the tests keep, on real records, caught or not, by class.

    python -m tools.tamper_corpus --runs-dir DIR [--json] [--run-dirs] [--family gs1 ...] [--only TEXT ...]

DIR holds a wiring (or standard) rehearsal run directory of each seed spec family (gs1-..., selfgen-...,
trimuon-...: what `python -m flows.run specs/<spec>.json --rehearse --rehearsal-scale wiring --runs-dir DIR`
leaves). The corpora, each a module of tests/ with tamperings by family:
- tampering.py (CORPUS, classed by CLASSES): the consistent edits of issue 28;
- tampering_spec.py (SPEC_CORPUS, RUN_DIR_CORPUS): the record against the spec, its data, the retained code, the
  evidence the spec requires and its own prose (issue 45 items 1, 2, 4, 5); the class is the name before its colon;
- tampering_traces.py (CORPUS, RUN_DIR_CORPUS): leaves a record restates from its run, and the disguised
  same-code parity check (issue 45 items 3, 6, 7);
- tampering_classes.py (CORPUS, RUN_DIR_CORPUS): an independent audit's tamperings (issue 45 deliverable 10), the
  class the name before its colon;
- tampering_sources.py (CORPUS, RUN_DIR_CORPUS): values the spec, the data, the run directory's other files or the
  record's other half fix, changed consistently (issue 45 deliverables 1-3, 10), the class the name before its colon.
Each record tampering is applied to the family's RESULT as a tamperer would (every hash kept consistent) and graded
as the exchange receives it (the bare RESULT); with `--run-dirs` also as a run directory (the honest run directory
copied, its result.json replaced and every evidence file rewritten from the tampered record's inline copy). Each
run-directory tampering edits a copy of the run directory. A tampering is caught when its grade finds something
the honest record's does not (a new failing category, or a rule firing more often).

"Before a fix" figures: run it as a script from a worktree of the older commit, so that its `experiment` comes
first on sys.path, with the tamperings of this checkout:
    cd /path/to/old-worktree && PYTHONPATH=$PWD python /path/to/this/tools/tamper_corpus.py --runs-dir DIR \\
        --tests-dir /path/to/this/tests
"""

from __future__ import annotations

import argparse
import collections
import copy
import hashlib
import importlib
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

FAMILIES = ("gs1", "selfgen", "trimuon")
PREFIX = {"gs1": "gs1-", "selfgen": "selfgen-", "trimuon": "trimuon-"}
TRACE_CLASSES = {"same-code parity": "item 7: a disguised same-code parity check"}


def family_run_dirs(runs_dir: Path) -> dict[str, Path]:
    """The newest succeeded run directory of each family in `runs_dir`."""
    found: dict[str, Path] = {}
    for run_dir in sorted(runs_dir.iterdir()):
        if not (run_dir / "result.json").is_file():
            continue
        for family, prefix in PREFIX.items():
            if run_dir.name.startswith(prefix):
                if json.loads((run_dir / "result.json").read_text()).get("status") == "succeeded":
                    found[family] = run_dir
    return found


def corpora() -> tuple[list[tuple[str, str, str, Callable]], list[tuple[str, str, str, Callable]]]:
    """(record tamperings, run-directory tamperings) as (family, name, class, function), every corpus of tests/."""
    records, run_dirs = [], []
    tampering = importlib.import_module("tampering")
    for family, tampers in tampering.CORPUS.items():
        records += [(family, name, tampering.CLASSES.get(name, "issue 28"), tamper) for name, tamper in tampers.items()]
    spec = importlib.import_module("tampering_spec")
    for family, tampers in spec.SPEC_CORPUS.items():
        records += [(family, name, f"spec: {name.split(':')[0]}", tamper) for name, tamper in tampers.items()]
    for family, tampers in spec.RUN_DIR_CORPUS.items():
        run_dirs += [(family, name, f"spec: {name.split(':')[0]}", tamper) for name, tamper in tampers.items()]
    traces = importlib.import_module("tampering_traces")

    def trace_class(name: str) -> str:
        return next((klass for key, klass in TRACE_CLASSES.items() if key in name),
                    "items 3, 6: leaves restated from the run")

    for family, tampers in traces.CORPUS.items():
        records += [(family, name, trace_class(name), tamper) for name, tamper in tampers.items()]
    for family, tampers in traces.RUN_DIR_CORPUS.items():
        run_dirs += [(family, name, "items 3, 6 (run dir): the run's own traces", tamper) for name, tamper in tampers.items()]
    audit = importlib.import_module("tampering_classes")
    for family, tampers in audit.CORPUS.items():
        records += [(family, name, f"audit: {name.split(':')[0]}", tamper) for name, tamper in tampers.items()]
    for family, tampers in audit.RUN_DIR_CORPUS.items():
        run_dirs += [(family, name, f"audit: {name.split(':')[0]}", tamper) for name, tamper in tampers.items()]
    sources = importlib.import_module("tampering_sources")
    for family, tampers in sources.CORPUS.items():
        records += [(family, name, f"sources: {name.split(':')[0]}", tamper) for name, tamper in tampers.items()]
    for family, tampers in sources.RUN_DIR_CORPUS.items():
        run_dirs += [(family, name, f"sources: {name.split(':')[0]}", tamper) for name, tamper in tampers.items()]
    return records, run_dirs


def write_run_dir(honest: Path, result: dict[str, Any], into: Path) -> Path:
    """A copy of the honest run directory holding the tampered RESULT, its evidence files rewritten from the
    record's inline copies (a consistent tamperer edits both), the manifest's hashes to match."""
    run_dir = _copy_run_dir(honest, into)
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
    """What grading the run directory finds, counted as tests/leaves.py counts a bare record's findings."""
    import leaves
    from experiment.grading import grade_path
    from experiment.grading.grade import GradeInputError

    try:
        return leaves.grade_findings(grade_path(run_dir))
    except GradeInputError as err:  # refused as unreadable (exit 2): found, whatever the honest grade found
        return frozenset({("input", "refused", str(err), 1)})


def _copy_run_dir(honest: Path, into: Path) -> Path:
    """A copy of the honest run directory in `into` (its lock files left behind)."""
    run_dir = into / honest.name
    shutil.copytree(honest, run_dir, ignore=shutil.ignore_patterns("*.lock", "lock"))
    return run_dir


def _copied_run_dir(honest: Path, tamper: Callable[[Path], None], tmp: Path) -> Path:
    run_dir = _copy_run_dir(honest, tmp)
    tamper(run_dir)
    return run_dir


def measure(runs_dir: Path, families: list[str], with_run_dirs: bool, only: list[str]) -> list[dict[str, Any]]:
    import leaves

    honest_dirs = {family: path for family, path in family_run_dirs(runs_dir).items() if family in families}
    records, run_dir_tamperings = corpora()
    wanted = (lambda name: not only or any(text in name for text in only))
    baselines: dict[str, Any] = {}
    dir_baselines: dict[str, frozenset] = {}
    rows = []
    for family, name, klass, tamper in records:
        if family not in honest_dirs or not wanted(name):
            continue
        record = json.loads((honest_dirs[family] / "result.json").read_text())
        if family not in baselines:
            baselines[family] = leaves.findings(record)
        row = {"family": family, "tampering": name, "class": klass, "kind": "record"}
        try:
            changed = copy.deepcopy(record)
            tamper(changed)
        except Exception as err:  # noqa: BLE001 - a tampering that does not apply to this record
            rows.append({**row, "applies": False, "error": f"{type(err).__name__}: {err}"})
            continue
        row["applies"] = json.dumps(changed, sort_keys=True) != json.dumps(record, sort_keys=True)  # True != 1
        row["caught_bare"] = bool(leaves.findings(changed) - baselines[family])
        if with_run_dirs:
            dir_baselines.setdefault(family, run_dir_findings(honest_dirs[family]))
            with tempfile.TemporaryDirectory() as tmp:
                row["caught_run_dir"] = bool(run_dir_findings(write_run_dir(honest_dirs[family], changed, Path(tmp)))
                                             - dir_baselines[family])
        rows.append(row)
    for family, name, klass, tamper in run_dir_tamperings:
        if family not in honest_dirs or not wanted(name):
            continue
        dir_baselines.setdefault(family, run_dir_findings(honest_dirs[family]))
        row = {"family": family, "tampering": name, "class": klass, "kind": "run_dir", "applies": True}
        with tempfile.TemporaryDirectory() as tmp:
            try:
                row["caught_run_dir"] = bool(run_dir_findings(_copied_run_dir(honest_dirs[family], tamper, Path(tmp)))
                                             - dir_baselines[family])
            except Exception as err:  # noqa: BLE001
                row.update(applies=False, error=f"{type(err).__name__}: {err}")
        rows.append(row)
    return rows


def caught(row: dict[str, Any]) -> bool:
    """Caught wherever it was graded: bare, and as a run directory when that was graded too."""
    return all(row[key] for key in ("caught_bare", "caught_run_dir") if key in row)


def summary_lines(rows: list[dict[str, Any]]) -> list[str]:
    by_class: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for row in rows:
        if row.get("applies"):
            by_class[row["class"]].append(row)
    lines = [f"{'class':60s} caught"]
    for name, members in sorted(by_class.items()):
        lines.append(f"{name:60s} {sum(map(caught, members)):>4d}/{len(members)}")
    applied = [row for row in rows if row.get("applies")]
    lines.append(f"{'all':60s} {sum(map(caught, applied)):>4d}/{len(applied)}")
    lines += [f"  not caught: {row['family']}: {row['tampering']}" for row in applied if not caught(row)]
    lines += [f"  does not apply: {row['family']}: {row['tampering']} {row.get('error', '')}".rstrip()
              for row in rows if not row.get("applies")]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.tamper_corpus", description=__doc__.splitlines()[0])
    parser.add_argument("--runs-dir", type=Path, required=True, help="run directories of the three families")
    parser.add_argument("--tests-dir", type=Path, default=Path(__file__).resolve().parents[1] / "tests",
                        help="where the corpora and leaves.py are (default: this checkout's tests/)")
    parser.add_argument("--family", action="append", choices=FAMILIES, help="only these families (default: all)")
    parser.add_argument("--only", nargs="*", default=[], help="only tamperings whose name contains one of these")
    parser.add_argument("--run-dirs", action="store_true", help="also grade each record tampering as a run directory")
    parser.add_argument("--json", action="store_true", help="one JSON row per tampering")
    args = parser.parse_args(argv)
    # the grader graded with: the first checkout on sys.path (PYTHONPATH=<older worktree> for "before" figures),
    # imported before tests/leaves.py puts the tests' own checkout first on sys.path
    import experiment.grading  # noqa: F401
    sys.path.insert(0, str(args.tests_dir))
    print(f"grader: {Path(experiment.grading.__file__).parents[2]}", file=sys.stderr)
    rows = measure(args.runs_dir, args.family or list(FAMILIES), args.run_dirs, args.only)
    print(json.dumps(rows, indent=1) if args.json else "\n".join(summary_lines(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
