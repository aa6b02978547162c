"""Mutation testing of the scientific and verifying core with cosmic-ray (issue 17).

    python -m tools.mutation                       # every configured module, then the report
    python -m tools.mutation --module decision     # one module (repeatable)
    python -m tools.mutation --sample 40           # at most 40 mutants per module (quick estimate)
    python -m tools.mutation --retest-survivors    # after adding tests: run only the survivors again
    python -m tools.mutation --more 20             # 20 more mutants per sampled session
    python -m tools.mutation --report-only         # rewrite docs/mutation-report.md from the sessions

Configuration: tools/mutation.toml (modules, their fast unit tests, optional function scope,
excluded operators).  Reviewed equivalent mutants: tools/mutation_equivalents.toml.

How it runs: the tracked and untracked (not ignored) files of the checkout are copied to
.mutation/tree/ so the checkout itself is never mutated; for each module cosmic-ray's session
(.mutation/<name>.sqlite) is initialized, mutants outside the scope or of an excluded operator are
marked skipped, the unmutated tests are run once (a failing baseline stops that module), and
`cosmic-ray exec` runs each mutant against only that module's tests.  A session is resumed when it
exists (pass --fresh to start over).  Not part of CI: at ~10-40 s per mutant on a loaded 2-core
machine a full run takes hours.
"""

from __future__ import annotations

import argparse
import ast
import glob
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "tools" / "mutation.toml"
EQUIVALENTS = ROOT / "tools" / "mutation_equivalents.toml"
WORK = ROOT / ".mutation"
TREE = WORK / "tree"
REPORT = ROOT / "docs" / "mutation-report.md"


@dataclass
class Module:
    name: str
    path: str
    tests: list[str]
    functions: list[str] = field(default_factory=list)
    timeout: float = 240.0
    # files under `path` left out (repository-relative), e.g. code that needs a training service
    exclude: list[str] = field(default_factory=list)


def load_config(path: Path = CONFIG) -> tuple[dict, list[Module]]:
    config = tomllib.loads(path.read_text())
    defaults = config.get("defaults", {})
    modules = [Module(name=m["name"], path=m["path"], tests=list(m["tests"]),
                      functions=list(m.get("functions", [])),
                      timeout=float(m.get("timeout", defaults.get("timeout", 240))),
                      exclude=list(m.get("exclude", [])))
               for m in config["module"]]
    return defaults, modules


def load_equivalents(path: Path = EQUIVALENTS) -> list[dict]:
    if not path.exists():
        return []
    return tomllib.loads(path.read_text()).get("equivalent", [])


# ---------------------------------------------------------------- the private tree

def copy_tree(root: Path = ROOT, tree: Path = TREE) -> None:
    """Tracked + untracked-not-ignored files of the checkout, copied to `tree`."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=root,
                            check=True, capture_output=True).stdout.decode().split("\0")
    if tree.exists():
        shutil.rmtree(tree)
    for relative in filter(None, listed):
        if relative.startswith(".mutation/"):
            continue
        source = root / relative
        if not source.is_file():
            continue
        target = tree / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


def module_files(tree: Path, module: Module) -> list[Path]:
    target = tree / module.path
    if target.is_dir():
        left_out = {tree / name for name in module.exclude}
        return sorted(f for f in target.rglob("*.py") if f not in left_out)
    return [target] if target.is_file() else []


def test_files(tree: Path, module: Module) -> list[str]:
    found: list[str] = []
    for pattern in module.tests:
        for match in sorted(glob.glob(str(tree / pattern), recursive=True)):
            relative = Path(match).relative_to(tree).as_posix()
            if relative not in found:
                found.append(relative)
    return found


def tests_first_for(module_file: Path, tests: list[str]) -> list[str]:
    """The same tests, those named after the mutated file (test_predicted_grades.py for
    grading/predict.py) first: under -x a mutant they kill stops before the slower others run."""
    return sorted(tests, key=lambda test: module_file.stem not in Path(test).stem)


def test_command(defaults: dict, tests: list[str]) -> str:
    args = [sys.executable, "-m", "pytest", *defaults.get("pytest_args", []), *tests]
    return " ".join(shlex.quote(a) for a in args)


# ---------------------------------------------------------------- scope

def scope_lines(source: str, names: list[str]) -> set[int]:
    """Line numbers of the named functions/methods/classes and module-level assignments."""
    wanted, lines = set(names), set()
    for node in ast.walk(ast.parse(source)):
        name = None
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = node.name
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            hits = [t.id for t in targets if isinstance(t, ast.Name) and t.id in wanted]
            name = hits[0] if hits else None
        if name in wanted:
            start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            lines.update(range(start, node.end_lineno + 1))
    return lines


def annotation_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """(start, end) positions of every annotation when the module postpones their evaluation
    (`from __future__ import annotations`): a mutant inside one changes a string nobody evaluates."""
    tree = ast.parse(source)
    postponed = any(isinstance(node, ast.ImportFrom) and node.module == "__future__"
                    and any(alias.name == "annotations" for alias in node.names) for node in tree.body)
    if not postponed:
        return []
    spans = []
    for node in ast.walk(tree):
        annotations = []
        if isinstance(node, ast.arg) and node.annotation is not None:
            annotations.append(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            annotations.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            annotations.append(node.annotation)
        for annotation in annotations:
            spans.append(((annotation.lineno, annotation.col_offset),
                          (annotation.end_lineno, annotation.end_col_offset)))
    return spans


def in_annotation(spans, start: tuple[int, int], end: tuple[int, int]) -> bool:
    return any(tuple(a) <= tuple(start) and tuple(end) <= tuple(b) for a, b in spans)


ANNOTATION_REASON = ("inside a type annotation of a module with `from __future__ import annotations`: "
                     "the annotation is never evaluated")


# ---------------------------------------------------------------- one module

def run(cmd: list[str], cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    print("+", " ".join(shlex.quote(str(c)) for c in cmd), flush=True)
    return subprocess.run(cmd, cwd=cwd, **kwargs)


def cosmic_ray_bin(name: str) -> str:
    local = Path(sys.executable).parent / name
    return str(local) if local.exists() else name


def write_session_config(path: Path, module_file: Path, command: str, timeout: float,
                         exclude_operators: list[str]) -> None:
    import toml  # cosmic-ray's own dependency

    path.write_text(toml.dumps({"cosmic-ray": {
        "module-path": str(module_file),
        "timeout": float(timeout),
        "excluded-modules": [],
        "test-command": command,
        "distributor": {"name": "local"},
        "filters": {"operators-filter": {"exclude-operators": list(exclude_operators)}},
    }}))


def skip_out_of_scope(session: Path, module: Module, tree: Path, exclude_operators: list[str],
                      sample: int | None, seed: int) -> None:
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    excluded = re.compile("|".join(f"(?:{e})" for e in exclude_operators)) if exclude_operators else None
    pragma = re.compile(r"#.*pragma:.*no mutate")
    with use_db(str(session), WorkDB.Mode.open) as db:
        sources: dict[Path, list[str]] = {}
        scopes: dict[Path, set[int]] = {}
        spans: dict[Path, list] = {}
        keep = []
        for item in list(db.pending_work_items):
            mutation = item.mutations[0]
            path = Path(mutation.module_path)
            if path not in sources:
                text = path.read_text()
                sources[path] = text.splitlines()
                scopes[path] = scope_lines(text, module.functions) if module.functions else set()
                spans[path] = annotation_spans(text)
            line = mutation.start_pos[0]
            reason = None
            if excluded and excluded.match(mutation.operator_name):
                reason = "excluded operator"
            elif in_annotation(spans[path], mutation.start_pos, mutation.end_pos):
                reason = "annotation only (equivalent)"
            elif module.functions and line not in scopes[path]:
                reason = "outside the configured scope"
            elif pragma.search(sources[path][line - 1]):
                reason = "pragma: no mutate"
            if reason:
                db.set_result(item.job_id, WorkResult(output=reason, worker_outcome=WorkerOutcome.SKIPPED))
            else:
                keep.append(item)
        if sample is not None and len(keep) > sample:
            keep.sort(key=lambda i: (str(i.mutations[0].module_path), i.mutations[0].start_pos,
                                     i.mutations[0].operator_name, i.mutations[0].occurrence))
            chosen = {i.job_id for i in random.Random(seed).sample(keep, sample)}
            for item in keep:
                if item.job_id not in chosen:
                    db.set_result(item.job_id, WorkResult(output="not in the sample",
                                                          worker_outcome=WorkerOutcome.SKIPPED))


def reopen_survivors(session: Path) -> int:
    """Make the surviving mutants of a session pending again (after new tests were written)."""
    import sqlite3

    with sqlite3.connect(session) as connection:
        count = connection.execute("DELETE FROM work_results WHERE test_outcome = 'SURVIVED'").rowcount
    print(f"{session.name}: {count} survivor(s) to test again", flush=True)
    return count


def extend_sample(session: Path, more: int, seed: int) -> int:
    """Make `more` further mutants left out by --sample pending (seeded, reproducible)."""
    import sqlite3

    with sqlite3.connect(session) as connection:
        rows = connection.execute(
            "SELECT r.job_id, m.module_path, m.start_pos_row, m.start_pos_col, m.operator_name, m.occurrence "
            "FROM work_results r JOIN mutation_specs m ON m.job_id = r.job_id "
            "WHERE r.output = 'not in the sample'").fetchall()
        rows.sort(key=lambda row: row[1:])
        chosen = random.Random(seed).sample(rows, min(more, len(rows)))
        connection.executemany("DELETE FROM work_results WHERE job_id = ?", [(row[0],) for row in chosen])
    print(f"{session.name}: {len(chosen)} more mutant(s) from outside the sample", flush=True)
    return len(chosen)


def run_module(module: Module, defaults: dict, args) -> str:
    files = module_files(TREE, module)
    if not files:
        return f"{module.name}: {module.path} is not in this tree, skipped"
    tests = test_files(TREE, module)
    if not tests:
        return f"{module.name}: no test files match {module.tests}, skipped"
    command = test_command(defaults, tests)
    env = {**os.environ, "PYTHONPATH": str(TREE), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    baseline = run(shlex.split(command), cwd=TREE, env=env, capture_output=True, text=True)
    if baseline.returncode != 0:
        tail = (baseline.stdout + baseline.stderr)[-1500:]
        return f"{module.name}: the unmutated tests fail, module not run:\n{tail}"
    exclude = list(defaults.get("exclude_operators", []))
    for index, module_file in enumerate(files):
        stem = module.name if len(files) == 1 else f"{module.name}.{module_file.stem}.{index}"
        session, config = WORK / f"{stem}.sqlite", WORK / f"{stem}.toml"
        write_session_config(config, module_file, test_command(defaults, tests_first_for(module_file, tests)),
                             module.timeout, exclude)
        if args.fresh and session.exists():
            session.unlink()
        if not session.exists():
            run([cosmic_ray_bin("cosmic-ray"), "init", str(config), str(session)], cwd=TREE, check=True)
            skip_out_of_scope(session, module, TREE, exclude, args.sample, args.seed)
        else:
            if args.retest_survivors:
                reopen_survivors(session)
            if args.more:
                extend_sample(session, args.more, args.seed + 1 + len(_commands_of(module.name)))
        run([cosmic_ray_bin("cosmic-ray"), "exec", str(config), str(session)], cwd=TREE, env=env, check=True)
    _remember_command(module.name, tests, args)
    return f"{module.name}: done ({len(files)} file(s), tests: {' '.join(tests)})"


def _commands_of(name: str) -> list[str]:
    import json

    path = WORK / "commands.json"
    entry = json.loads(path.read_text()).get(name, {}) if path.exists() else {}
    return entry.get("commands") or ([entry["command"]] if "command" in entry else [])


def _remember_command(name: str, tests: list[str], args) -> None:
    """Which invocation produced (or last resumed) a module's session, for the report."""
    import json

    path = WORK / "commands.json"
    known = json.loads(path.read_text()) if path.exists() else {}
    previous = known.get(name, {})
    history = previous.get("commands") or ([previous["command"]] if "command" in previous else [])
    if args.fresh:
        history = []
    known[name] = {"commands": history + [args.command_line], "tests": tests}
    path.write_text(json.dumps(known, indent=2, sort_keys=True))


# ---------------------------------------------------------------- report

def _diff_line(diff: str | None, sign: str) -> str:
    """The first removed ("-": original) or added ("+": mutant) line of a mutant's diff."""
    for line in (diff or "").splitlines():
        if line.startswith(sign) and not line.startswith(sign * 3):
            return line[1:].strip()
    return ""


def _equivalent_reason(equivalents: list[dict], relative: str, operator: str, code: str,
                       mutant: str) -> str | None:
    """The reviewed reason when a surviving mutant is listed as equivalent: file, operator (regex),
    the original line and, when the entry gives one, the mutated line must all match."""
    for entry in equivalents:
        if (entry.get("file") == relative and re.fullmatch(entry.get("operator", ".*"), operator)
                and entry.get("code", "").strip() == code
                and ("mutant" not in entry or entry["mutant"].strip() == mutant)):
            return entry["why"]
    return None


def collect(modules: list[Module], equivalents: list[dict]) -> list[dict]:
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    rows = []
    spans_by_file: dict[str, list] = {}
    for module in modules:
        sessions = sorted(WORK.glob(f"{module.name}.sqlite")) + sorted(WORK.glob(f"{module.name}.*.sqlite"))
        stats = {"name": module.name, "path": module.path, "killed": 0, "survived": [], "equivalent": [],
                 "incompetent": 0, "pending": 0, "skipped": defaultdict(int), "present": bool(sessions)}
        for session in sessions:
            with use_db(str(session), WorkDB.Mode.open) as db:
                results = dict(db.results)
                for item in db.work_items:
                    mutation = item.mutations[0]
                    result = results.get(item.job_id)
                    if result is None:
                        stats["pending"] += 1
                        continue
                    if result.worker_outcome == WorkerOutcome.SKIPPED:
                        stats["skipped"][result.output or "skipped"] += 1
                        continue
                    if result.test_outcome == TestOutcome.INCOMPETENT:
                        stats["incompetent"] += 1
                        continue
                    if result.test_outcome != TestOutcome.SURVIVED:
                        stats["killed"] += 1
                        continue
                    path = Path(mutation.module_path)
                    try:
                        relative = path.relative_to(TREE).as_posix()
                    except ValueError:
                        relative = path.as_posix()
                    line = mutation.start_pos[0]
                    code = _diff_line(result.diff, "-")  # the tree's file may be mutated right now
                    entry = {"where": f"{relative}:{line}", "operator": mutation.operator_name,
                             "code": code, "mutant": _diff_line(result.diff, "+"),
                             "function": mutation.definition_name or ""}
                    if relative not in spans_by_file:
                        original = ROOT / relative
                        spans_by_file[relative] = annotation_spans(original.read_text()) if original.exists() else []
                    why = (ANNOTATION_REASON if in_annotation(spans_by_file[relative], mutation.start_pos,
                                                              mutation.end_pos)
                           else _equivalent_reason(equivalents, relative, mutation.operator_name, code,
                                                   entry["mutant"]))
                    if why:
                        entry["why"] = why
                        stats["equivalent"].append(entry)
                    else:
                        stats["survived"].append(entry)
        rows.append(stats)
    return rows


def _rate(killed: int, survived: int) -> str:
    total = killed + survived
    return f"{100.0 * killed / total:.1f}%" if total else "n/a"


def equivalents_section(rows: list[dict]) -> list[str]:
    """The report's section of reviewed equivalent mutants, one line each with its reason (both runners' reports)."""
    out = ["", "## Equivalent mutants (reviewed, tools/mutation_equivalents.toml)", ""]
    out += [f"- `{entry['where']}` {entry['operator']}: `{entry['code']}` -> `{entry['mutant']}` — {entry['why']}"
            for stats in rows for entry in stats["equivalent"]]
    return out if len(out) > 3 else out + ["None."]


def write_report(rows: list[dict], command: str, path: Path = REPORT) -> str:
    out = ["# Mutation report", "",
           f"Generated {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')} by `{command}` "
           "(tools/mutation.py, cosmic-ray; configuration tools/mutation.toml, reviewed equivalents "
           "tools/mutation_equivalents.toml).", "",
           "Kill rate = killed / (killed + surviving non-equivalent mutants). Equivalent mutants and "
           "incompetent ones (the mutant does not run at all) are left out of the rate; mutants of an "
           "excluded operator, outside a module's configured scope, or left out by `--sample` are "
           "counted as skipped. A module with pending mutants has not finished.", "",
           "| module | killed | survived | equivalent | incompetent | pending | skipped | kill rate |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
    total_killed = total_survived = 0
    for stats in rows:
        if not stats["present"]:
            out.append(f"| {stats['name']} (`{stats['path']}`) | not run | | | | | | |")
            continue
        survived = len(stats["survived"])
        total_killed += stats["killed"]
        total_survived += survived
        skipped = ", ".join(f"{n} {why}" for why, n in sorted(stats["skipped"].items())) or "0"
        out.append(f"| {stats['name']} (`{stats['path']}`) | {stats['killed']} | {survived} | "
                   f"{len(stats['equivalent'])} | {stats['incompetent']} | {stats['pending']} | {skipped} | "
                   f"{_rate(stats['killed'], survived)} |")
    out.append(f"| **overall** | {total_killed} | {total_survived} | "
               f"{sum(len(s['equivalent']) for s in rows)} | | | | **{_rate(total_killed, total_survived)}** |")
    ran = sum(s["killed"] + len(s["survived"]) + len(s["equivalent"]) + s["incompetent"] for s in rows)
    left_out = sum(s["skipped"].get("not in the sample", 0) for s in rows)
    if left_out:
        out += ["", f"Sample: {ran} mutants run of the {ran + left_out} eligible (not excluded, in scope, not "
                    "annotation-only), drawn with `--sample` (seeded); see docs/testing.md for the run's caveats."]
    commands_path = WORK / "commands.json"
    if commands_path.exists():
        import json

        out += ["", "Sessions, with the commands that ran each and the tests each mutant ran against:", ""]
        for name, entry in sorted(json.loads(commands_path.read_text()).items()):
            commands = entry.get("commands") or [entry["command"]]
            out.append(f"- {name}: {', then '.join(f'`{c}`' for c in commands)}; tests: {', '.join(entry['tests'])}")
    out += ["", "## Surviving mutants", ""]
    any_survivor = False
    for stats in rows:
        for entry in stats["survived"]:
            any_survivor = True
            out.append(f"- `{entry['where']}` ({entry['function']}) {entry['operator']}: "
                       f"`{entry['code']}` -> `{entry['mutant']}`")
    if not any_survivor:
        out.append("None.")
    out += equivalents_section(rows)
    text = "\n".join(out) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return text


# ---------------------------------------------------------------- main

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.mutation", description=__doc__.split("\n\n")[0])
    parser.add_argument("--module", action="append", help="module name from tools/mutation.toml (repeatable)")
    parser.add_argument("--sample", type=int, help="at most this many mutants per module file (seeded)")
    parser.add_argument("--seed", type=int, default=17, help="seed of --sample")
    parser.add_argument("--fresh", action="store_true", help="discard existing sessions")
    parser.add_argument("--retest-survivors", action="store_true",
                        help="run the surviving mutants of existing sessions again (after adding tests)")
    parser.add_argument("--more", type=int, default=0,
                        help="add this many mutants left out by an earlier --sample to each session")
    parser.add_argument("--report-only", action="store_true", help="only rewrite the report")
    parser.add_argument("--no-copy", action="store_true", help="reuse .mutation/tree as it is")
    args = parser.parse_args(argv)

    defaults, modules = load_config()
    known = {m.name for m in modules}
    unknown = [name for name in args.module or [] if name not in known]
    if unknown:
        print(f"unknown module(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}", file=sys.stderr)
        return 2
    selected = [m for m in modules if not args.module or m.name in args.module]
    args.command_line = ("python -m tools.mutation " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))).strip()
    WORK.mkdir(exist_ok=True)
    if not args.report_only:
        if not args.no_copy:
            copy_tree()
        for module in selected:
            print(run_module(module, defaults, args), flush=True)
    text = write_report(collect(modules, load_equivalents()), args.command_line)
    print(text.split("\n## Surviving")[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
