"""Fork-per-mutant mutation testing of experiment/stats and experiment/grading (issue 28, item 7).

    python -m tools.mutation_fast --module decision          # one module of tools/mutation.toml (repeatable)
    python -m tools.mutation_fast --module grading --jobs 2  # two mutants at a time
    python -m tools.mutation_fast --retest-survivors         # after adding tests: survivors only, again
    python -m tools.mutation_fast --selfcheck 12             # 12 mutants per module, fork runner vs subprocess
    python -m tools.mutation_fast --report-only              # docs/mutation-report.md from the cached results

How it runs (tools/mutation.py, cosmic-ray, starts a Python process and a pytest session per mutant;
here a mutant costs a fork): one pytest session in this process collects the module's tests
(tools/mutation.toml), runs each once on the unmutated code with per-test line coverage of the
mutated files, and keeps its session fixtures; the record builders named in `cached_builders`
(tools/mutation.toml) are memoized, so every record the tests build is built once. For each mutant
the process forks; the child compiles the mutated source into the module object (functions and
classes keep their identity and take the mutated code, so tables and `from x import f` names in
other modules run it too; other changed names are re-bound in every module that imported them),
runs only the tests that cover the mutated statement, fastest first, stopping at the first failure,
and exits killed or survived. Each test runs under its own CPU limit (floor + factor x its unmutated
seconds); a child whose test runs past it exits at once, and a child past the limit of its whole test list is
killed: both count killed, reported as timeout. A mutant whose statement no test executes survives without a run ("not covered").

Mutants: an ast-based generator with cosmic-ray's operator names (so tools/mutation_equivalents.toml
entries match): comparison, binary (bit operators excluded as in tools/mutation.toml), and/or,
unary (removing `not`, `-`), number replacement (n+1, n-1), True/False, break/continue, AddNot on
conditions, ExceptionReplacer (the handler catches nothing) and ZeroIterationForLoop. Nothing inside
a postponed annotation, a docstring, or a line with `pragma: no mutate` is mutated.

Results: .mutation/fast/<module>/<file>.<source sha>.json (gitignored), written after each mutant,
so a stopped run resumes where it was; a changed source file starts over.
"""

from __future__ import annotations

import argparse
import ast
import copy
import functools
import gc
import hashlib
import json
import os
import random
import re
import select
import shlex
import signal
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# One thread per math library: a child forked from a process whose OpenMP/BLAS pool (torch, numpy)
# is running deadlocks in its first parallel call.
for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_name] = "1"

from tools import mutation  # noqa: E402  (the repository root must be importable first)
from tools.mutation import (  # noqa: E402
    Module, annotation_spans, copy_tree, in_annotation, load_config, load_equivalents,
    _equivalent_reason, _rate,
)

WORK = ROOT / ".mutation" / "fast"
REPORT = ROOT / "docs" / "mutation-report.md"

# ---------------------------------------------------------------- mutants

CMP_NAMES = {ast.Eq: "Eq", ast.NotEq: "NotEq", ast.Lt: "Lt", ast.LtE: "LtE", ast.Gt: "Gt", ast.GtE: "GtE",
             ast.Is: "Is", ast.IsNot: "IsNot", ast.In: "In", ast.NotIn: "NotIn"}
CMP_TEXT = {"Eq": "==", "NotEq": "!=", "Lt": "<", "LtE": "<=", "Gt": ">", "GtE": ">=", "Is": "is",
            "IsNot": "is not", "In": "in", "NotIn": "not in"}
CMP_GROUPS = [("Eq", "NotEq", "Lt", "LtE", "Gt", "GtE"), ("Is", "IsNot"), ("In", "NotIn")]
BIN_NAMES = {ast.Add: "Add", ast.Sub: "Sub", ast.Mult: "Mul", ast.Div: "Div", ast.FloorDiv: "FloorDiv",
             ast.Mod: "Mod", ast.Pow: "Pow"}
BIN_TEXT = {"Add": "+", "Sub": "-", "Mul": "*", "Div": "/", "FloorDiv": "//", "Mod": "%", "Pow": "**"}


@dataclass
class Mutant:
    id: str
    file: str  # relative to the root
    line: int
    operator: str
    code: str  # the original line(s), stripped
    mutant: str  # the mutated line(s), stripped
    original: bytes  # the unmutated file
    edit: tuple[int, int, str]  # byte offsets in `original` and their replacement
    lines: tuple[int, int]  # the enclosing statement's span: coverage is looked up over it
    module_level: bool  # runs at import (not inside a function body): every test of the module covers it

    @property
    def source(self) -> str:
        start, end, text = self.edit
        return (self.original[:start] + text.encode() + self.original[end:]).decode()


class _Splicer:
    """Text edits by (line, column) with ast's UTF-8 byte columns."""

    def __init__(self, source: str):
        self.lines = source.splitlines(keepends=True)
        self.bytes = [line.encode() for line in self.lines]
        self.starts = [0]
        for raw in self.bytes:
            self.starts.append(self.starts[-1] + len(raw))
        self.data = source.encode()

    def offset(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def replace(self, start: int, end: int, text: str) -> str:
        return (self.data[:start] + text.encode() + self.data[end:]).decode()

    def text(self, start: int, end: int) -> str:
        return self.data[start:end].decode()


def _blank_comments(text: str) -> str:
    return re.sub(r"#[^\n]*", lambda m: " " * len(m.group(0)), text)


def _find_op(gap: str, op: str) -> int | None:
    """Where the operator token `op` is in the text between two operands (parentheses, spaces,
    newlines, comments around it)."""
    clean = _blank_comments(gap)
    if op.isalpha() or " " in op:
        pattern = r"(?<![\w])" + r"\s+".join(map(re.escape, op.split())) + r"(?![\w])"
    else:
        pattern = r"(?<![=<>!*/+\-%])" + re.escape(op) + r"(?![=<>*/])"
    found = [m for m in re.finditer(pattern, clean)]
    return (found[0].start(), found[0].end()) if len(found) == 1 else None


def _statement_parents(tree: ast.AST) -> dict[int, tuple[ast.stmt, bool]]:
    """id(node) -> (smallest enclosing statement, whether it sits inside a function body)."""
    out: dict[int, tuple[ast.stmt, bool]] = {}

    def visit(node: ast.AST, stmt: ast.stmt | None, in_function: bool) -> None:
        if isinstance(node, ast.stmt):
            stmt = node
        out[id(node)] = (stmt, in_function)
        for name, value in ast.iter_fields(node):
            children = value if isinstance(value, list) else [value]
            inner = in_function or (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                                    and name == "body")
            for child in children:
                if isinstance(child, ast.AST):
                    visit(child, stmt, inner)

    visit(tree, None, False)
    return out


def _docstring_ids(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def generate(source: str, relative: str, excluded: re.Pattern | None = None) -> list[Mutant]:
    """Long because: mutant generation walks every operator of the source in one pass; the operators are listed in the
    order docs/testing.md gives.
    """
    tree = ast.parse(source)
    sp = _Splicer(source)
    parents = _statement_parents(tree)
    spans = annotation_spans(source)
    docstrings = _docstring_ids(tree)
    pragma = re.compile(r"#.*pragma:.*no mutate")
    mutants: list[Mutant] = []
    seen: dict[str, int] = {}

    def add(node: ast.AST, operator: str, start: int, end: int, text: str) -> None:
        if excluded is not None and excluded.match(operator):
            return
        if in_annotation(spans, (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)):
            return
        if pragma.search(sp.lines[node.lineno - 1]):
            return
        stmt, in_function = parents.get(id(node), (None, False))
        first = node.lineno
        last = node.end_lineno or first
        code = "".join(sp.lines[first - 1:last]).strip()
        region_start, region_end = sp.offset(first, 0), sp.starts[last]
        mutant_text = (sp.data[region_start:start] + text.encode() + sp.data[end:region_end]).decode().strip()
        key = f"{relative}:{first}:{node.col_offset}:{operator}"
        occurrence = seen.get(key, 0)
        seen[key] = occurrence + 1
        span_start = stmt.lineno if stmt is not None else first
        if isinstance(stmt, (ast.If, ast.While, ast.For, ast.With, ast.Try, ast.FunctionDef, ast.ClassDef,
                             ast.AsyncFunctionDef, ast.AsyncFor, ast.AsyncWith)):
            span_end = last  # a compound statement: its header (the node's own lines), not its body
        else:
            span_end = max(last, stmt.end_lineno if stmt is not None else last)
        mutants.append(Mutant(id=f"{key}:{occurrence}", file=relative, line=first, operator=operator, code=code,
                              mutant=mutant_text, original=sp.data, edit=(start, end, text), lines=(span_start, span_end),
                              module_level=not in_function))

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for index, op in enumerate(node.ops):
                name = CMP_NAMES[type(op)]
                left, right = operands[index], operands[index + 1]
                a = sp.offset(left.end_lineno, left.end_col_offset)
                b = sp.offset(right.lineno, right.col_offset)
                where = _find_op(sp.text(a, b), CMP_TEXT[name])
                if where is None:
                    continue
                group = next(g for g in CMP_GROUPS if name in g)
                for other in group:
                    if other != name:
                        add(node, f"core/ReplaceComparisonOperator_{name}_{other}", a + where[0], a + where[1],
                            CMP_TEXT[other])
        elif isinstance(node, (ast.BinOp, ast.AugAssign)):
            name = BIN_NAMES.get(type(node.op))
            if name is None:
                continue
            left = node.left if isinstance(node, ast.BinOp) else node.target
            right = node.right if isinstance(node, ast.BinOp) else node.value
            a = sp.offset(left.end_lineno, left.end_col_offset)
            b = sp.offset(right.lineno, right.col_offset)
            token = BIN_TEXT[name] + ("=" if isinstance(node, ast.AugAssign) else "")
            gap = sp.text(a, b)
            where = _find_op(gap, BIN_TEXT[name]) if isinstance(node, ast.BinOp) else \
                ((gap.find(token), gap.find(token) + len(token)) if gap.count(token) == 1 else None)
            if where is None:
                continue
            for other, text in BIN_TEXT.items():
                if other != name:
                    add(node, f"core/ReplaceBinaryOperator_{name}_{other}", a + where[0], a + where[1],
                        text + ("=" if isinstance(node, ast.AugAssign) else ""))
        elif isinstance(node, ast.BoolOp):
            name, other, word = ("And", "Or", "or") if isinstance(node.op, ast.And) else ("Or", "And", "and")
            for left, right in zip(node.values, node.values[1:]):
                a = sp.offset(left.end_lineno, left.end_col_offset)
                b = sp.offset(right.lineno, right.col_offset)
                where = _find_op(sp.text(a, b), name.lower())
                if where is not None:
                    add(node, f"core/Replace{name}With{other}", a + where[0], a + where[1], word)
        elif isinstance(node, ast.UnaryOp):
            start = sp.offset(node.lineno, node.col_offset)
            operand = sp.offset(node.operand.lineno, node.operand.col_offset)
            if isinstance(node.op, ast.Not):  # only the keyword: `not (a and b)` keeps its parentheses
                keyword = re.match(r"not\s*", sp.text(start, operand))
                add(node, "core/ReplaceUnaryOperator_Delete_Not", start, start + keyword.end(), "")
            elif isinstance(node.op, ast.USub) and not isinstance(node.operand, ast.Constant):
                add(node, "core/ReplaceUnaryOperator_USub_UAdd", start, operand, "+")
        elif isinstance(node, ast.Constant):
            if id(node) in docstrings:
                continue
            start = sp.offset(node.lineno, node.col_offset)
            end = sp.offset(node.end_lineno, node.end_col_offset)
            if node.value is True:
                add(node, "core/ReplaceTrueWithFalse", start, end, "False")
            elif node.value is False:
                add(node, "core/ReplaceFalseWithTrue", start, end, "True")
            elif isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
                for new in (node.value + 1, node.value - 1):
                    text = repr(new)
                    if new < 0:
                        text = f"({text})"
                    add(node, "core/NumberReplacer", start, end, text)
        elif isinstance(node, ast.Break):
            add(node, "core/ReplaceBreakWithContinue", sp.offset(node.lineno, node.col_offset),
                sp.offset(node.end_lineno, node.end_col_offset), "continue")
        elif isinstance(node, ast.Continue):
            add(node, "core/ReplaceContinueWithBreak", sp.offset(node.lineno, node.col_offset),
                sp.offset(node.end_lineno, node.end_col_offset), "break")
        elif isinstance(node, (ast.If, ast.While, ast.IfExp)):
            test = node.test
            a = sp.offset(test.lineno, test.col_offset)
            b = sp.offset(test.end_lineno, test.end_col_offset)
            add(test, "core/AddNot", a, b, f"not ({sp.text(a, b)})")
        elif isinstance(node, ast.ExceptHandler) and node.type is not None:
            a = sp.offset(node.type.lineno, node.type.col_offset)
            b = sp.offset(node.type.end_lineno, node.type.end_col_offset)
            add(node.type, "core/ExceptionReplacer", a, b, "()")
        elif isinstance(node, (ast.For, ast.comprehension)):
            iterable = node.iter
            a = sp.offset(iterable.lineno, iterable.col_offset)
            b = sp.offset(iterable.end_lineno, iterable.end_col_offset)
            add(iterable, "core/ZeroIterationForLoop", a, b, "[]")
    mutants.sort(key=lambda m: (m.line, m.id))
    return mutants


# ---------------------------------------------------------------- applying a mutant in a process

def _swap_code(old, new) -> bool:
    """`old` runs `new`'s code from now on (every reference to `old` sees it)."""
    if not (isinstance(old, type(_swap_code)) and isinstance(new, type(_swap_code))):
        return False
    if old.__closure__ and old.__qualname__.startswith("__create_fn__"):
        return False  # dataclass-generated: its defaults live in the closure, take the new function
    try:
        old.__code__ = new.__code__
    except ValueError:
        return False
    old.__defaults__, old.__kwdefaults__ = new.__defaults__, new.__kwdefaults__
    return True


def _patch_callable(old, new) -> bool:
    if _swap_code(old, new):
        return True
    wrapped_old, wrapped_new = getattr(old, "__wrapped__", None), getattr(new, "__wrapped__", None)
    if wrapped_old is not None and wrapped_new is not None and hasattr(old, "cache_clear"):
        if _swap_code(wrapped_old, wrapped_new):
            old.cache_clear()
            return True
    return False


def _patch_class(old: type, new: type) -> None:
    for name, value in list(new.__dict__.items()):
        if name in ("__dict__", "__weakref__", "__module__", "__doc__", "__qualname__"):
            continue
        previous = old.__dict__.get(name)
        if previous is value:
            continue
        if isinstance(previous, (staticmethod, classmethod)) and type(previous) is type(value):
            if _swap_code(previous.__func__, value.__func__):
                continue
        elif isinstance(previous, property) and isinstance(value, property):
            if all(_swap_code(a, b) if a is not None and b is not None else a is b
                   for a, b in ((previous.fget, value.fget), (previous.fset, value.fset))):
                continue
        elif previous is not None and _patch_callable(previous, value):
            continue
        try:
            setattr(old, name, value)
        except (AttributeError, TypeError):
            pass
    # what the mutated class no longer defines goes too (e.g. a dataclass no longer frozen: its __init__
    # assigns with plain setattr, so the frozen __setattr__ left on the class would raise)
    for name in [n for n in old.__dict__ if n not in new.__dict__]:
        if name in ("__dict__", "__weakref__", "__module__", "__doc__", "__qualname__"):
            continue
        try:
            delattr(old, name)
        except (AttributeError, TypeError):
            pass


_GRADING = "experiment.grading."


def _forget_rules_of(module_name: str) -> None:
    """The grader's rule registry (experiment/grading/registry.py) refuses a rule id registered twice, and the new
    body of a grading module registers its rules again: take the module's own registrations out first (the
    registry's tables, keyed by `module.qualname` relative to experiment.grading)."""
    registry = sys.modules.get(_GRADING + "registry")
    if registry is None or not module_name.startswith(_GRADING):
        return
    prefix = module_name[len(_GRADING):] + "."
    for rule_id, found in list(registry._declared.items()):
        if found.checks and found.checks[0].startswith(prefix):
            del registry._declared[rule_id]
    for rule_id, checks in list(registry._further.items()):
        registry._further[rule_id] = [check for check in checks if not check.startswith(prefix)]


def apply_source(module_name: str, source: str, filename: str) -> None:
    """Run `source` as the new body of the imported module `module_name` (see the module docstring)."""
    module = sys.modules[module_name]
    before = dict(module.__dict__)
    _forget_rules_of(module_name)
    exec(compile(source, filename, "exec"), module.__dict__)
    changed: dict[str, object] = {}
    kept: dict[int, tuple[object, object]] = {}  # id(new object) -> (it, the old object now running its code)
    for name, value in list(module.__dict__.items()):
        previous = before.get(name, None)
        if name not in before or previous is value:
            continue
        if isinstance(previous, type) and isinstance(value, type) and previous.__module__ == module_name:
            _patch_class(previous, value)
            module.__dict__[name] = previous
            kept[id(value)] = (value, previous)
        elif callable(previous) and getattr(previous, "__module__", None) == module_name \
                and _patch_callable(previous, value):
            module.__dict__[name] = previous
            kept[id(value)] = (value, previous)
        else:
            changed[name] = previous
    if not changed:
        return
    # a table the new body built (CHECKS = [DEC_1, ...]) holds the new function objects: put the old ones,
    # which now run the same code, in their place, so identity tests (`c is not DEC_13`) see one object
    for name in changed:
        module.__dict__[name] = _old_identities(module.__dict__[name], kept)
    plain = (int, float, str, bool, bytes, type(None), tuple, frozenset)
    by_id = {id(previous): name for name, previous in changed.items()}
    for other in list(sys.modules.values()):
        namespace = getattr(other, "__dict__", None)
        if other is module or not isinstance(namespace, dict):
            continue
        for key, value in list(namespace.items()):
            name = by_id.get(id(value))
            if name is None or changed[name] is not value:
                continue
            if isinstance(value, plain) and key != name:
                continue
            namespace[key] = module.__dict__[name]


def _old_identities(value, kept: dict[int, tuple[object, object]], depth: int = 0):
    """`value` with every new function or class in `kept` replaced by its old object, through lists, dicts,
    tuples, sets and dataclass instances (a few levels deep); lists, dicts and dataclasses in place."""
    if id(value) in kept:
        return kept[id(value)][1]
    if depth > 4:
        return value
    if isinstance(value, list):
        value[:] = [_old_identities(v, kept, depth + 1) for v in value]
    elif isinstance(value, dict):
        for key, item in list(value.items()):
            value[key] = _old_identities(item, kept, depth + 1)
    elif isinstance(value, (tuple, set, frozenset)):
        items = [_old_identities(v, kept, depth + 1) for v in value]
        if any(a is not b for a, b in zip(items, value)) if isinstance(value, tuple) else \
                {id(a) for a in items} != {id(b) for b in value}:
            return type(value)._make(items) if hasattr(type(value), "_make") else type(value)(items)
    elif hasattr(type(value), "__dataclass_fields__") and not isinstance(value, type):
        for field in type(value).__dataclass_fields__:
            item = getattr(value, field, None)
            new = _old_identities(item, kept, depth + 1)
            if new is not item:
                object.__setattr__(value, field, new)
    return value


def module_name_of(relative: str) -> str:
    return relative[:-3].replace("/", ".").removesuffix(".__init__")


# ---------------------------------------------------------------- results cache

def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def results_path(module: str, relative: str, source: str) -> Path:
    return WORK / module / f"{relative.replace('/', '__')}.{_sha(source)[:16]}.json"


def load_results(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {"results": {}}


def save_results(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    tmp.replace(path)


def git_commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "experiment", "tests", "tools"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    return done.stdout.strip() + ("+uncommitted" if dirty else "")


# ---------------------------------------------------------------- the pytest plugin that runs the mutants

class _SessionOnly:
    """A stand-in `nextitem` whose chain is the session alone: tearing down to it keeps the session's
    fixtures (the records) and ends the module's and the test's."""

    def __init__(self, session):
        self.session = session

    def listchain(self):
        return [self.session]


class _Tracer:
    def __init__(self, files: set[str]):
        self.files = files
        self.hits: set[tuple[str, int]] = set()

    def _local(self, frame, event, arg):
        if event == "line":
            self.hits.add((frame.f_code.co_filename, frame.f_lineno))
        return self._local

    def __call__(self, frame, event, arg):
        if frame.f_code.co_filename in self.files:
            if event == "call":
                self.hits.add((frame.f_code.co_filename, frame.f_lineno))
            return self._local
        return None


class MutationPlugin:
    def __init__(self, module: Module, jobs: int, mode: str, config: dict, log):
        self.module, self.jobs, self.mode, self.config, self.log = module, jobs, mode, config, log
        self.outcome: dict = {}

    # -- setup
    def _cache_builders(self) -> None:
        names = self.config.get("cached_builders", [])
        for mod in list(sys.modules.values()):
            namespace = getattr(mod, "__dict__", None)
            if not isinstance(namespace, dict):
                continue
            for name in names:
                builder = namespace.get(name)
                if callable(builder) and not hasattr(builder, "_mutation_memo"):
                    namespace[name] = _memoized(builder)

    def _hypothesis_profile(self) -> None:
        try:
            from hypothesis import settings
        except ImportError:
            return
        settings.register_profile("mutation-fast", deadline=None, print_blob=False)
        settings.load_profile("mutation-fast")

    def pytest_runtestloop(self, session):
        from _pytest.runner import runtestprotocol

        self._cache_builders()
        self._hypothesis_profile()
        files = {str(ROOT / f) for f in self.module_files}
        keep = _SessionOnly(session)
        self.items, self.coverage, self.durations, self.failing = list(session.items), {}, {}, []
        path = baseline_path(self.module.name, self.module_files)
        stored = load_baseline(path)
        test_shas = {}
        reused = 0
        self.fresh: set[str] = set()
        had_baseline = bool(stored["tests"])
        self.log(f"baseline: {len(self.items)} tests ({path.name})")
        for item in self.items:
            test_file = item.nodeid.split("::")[0]
            if test_file not in test_shas:
                test_shas[test_file] = _file_sha(ROOT / test_file)
            entry = stored["tests"].get(item.nodeid)
            if entry is not None and entry["test_sha"] == test_shas[test_file]:
                # traced before on these sources and this test file: run it untraced, only so that the
                # session fixtures and the memoized records are built in this process before the forks
                runtestprotocol(item, nextitem=keep, log=False)
                reused += 1
            else:
                entry = _traced_run(item, keep, files, runtestprotocol)
                entry["test_sha"] = test_shas[test_file]
                if had_baseline:
                    self.fresh.add(item.nodeid)  # new or changed since a stored baseline
                stored["tests"][item.nodeid] = entry
            self.durations[item.nodeid] = entry["seconds"]
            if entry["status"] == "failed":
                self.failing.append(item.nodeid)
            elif entry["status"] == "passed":
                self.coverage[item.nodeid] = {(str(ROOT / f), line) for f, line in entry["lines"]}
        save_baseline(path, stored)
        self.test_shas, self.baseline_key = test_shas, baseline_key(self.module_files)
        self.log(f"baseline done: {len(self.coverage)} passing, {len(self.failing)} failing "
                 f"({', '.join(self.failing[:5])}), {sum(self.durations.values()):.0f} s traced; "
                 f"{reused} tests' coverage reused from {path.name}")
        self.outcome = run_mutants(self, session, runtestprotocol)
        return True


def _traced_run(item, keep, files: set[str], runtestprotocol) -> dict:
    """Run one test with line tracing of `files`: its status, seconds and the (file, line) pairs it ran,
    files relative to the repository."""
    tracer = _Tracer(files)
    started = time.monotonic()
    sys.settrace(tracer)
    try:
        reports = runtestprotocol(item, nextitem=keep, log=False)
    finally:
        sys.settrace(None)
    seconds = time.monotonic() - started
    if any(r.failed for r in reports):
        status = "failed"
    elif any(r.skipped for r in reports) and not any(r.when == "call" and r.passed for r in reports):
        status = "skipped"
    else:
        status = "passed"
    lines = sorted((Path(f).relative_to(ROOT).as_posix(), line) for f, line in tracer.hits)
    return {"status": status, "seconds": round(seconds, 4), "lines": lines}


def _file_sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else ""


def baseline_key(module_files: list[str]) -> str:
    """What every test's coverage of the module depends on besides its own file: the mutated sources, the
    conftest files and the test helpers under tests/ (the modules that are not test files)."""
    digest = hashlib.sha256()
    helpers = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("*.py")
                     if not p.name.startswith("test_"))
    for relative in [*module_files, *helpers]:
        digest.update(relative.encode() + b"\0" + _file_sha(ROOT / relative).encode() + b"\0")
    return digest.hexdigest()


def baseline_path(module: str, module_files: list[str]) -> Path:
    """The traced baseline on disk: per test, its status, unmutated seconds and covered lines; a test whose
    file changed is traced again, a change to a mutated source or a test helper starts the file over."""
    return WORK / module / f"baseline.{baseline_key(module_files)[:16]}.json"


def load_baseline(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {"tests": {}}


def save_baseline(path: Path, data: dict) -> None:
    save_results(path, data)


def _memoized(builder):
    memo: dict = {}

    @functools.wraps(builder)
    def cached(*args, **kwargs):
        key = repr((args, sorted(kwargs.items())))
        if key not in memo:
            memo[key] = builder(*args, **kwargs)
        return copy.deepcopy(memo[key])

    cached._mutation_memo = memo
    return cached


def _child(plugin: MutationPlugin, session, runtestprotocol, mutant: Mutant, tests: list, write_fd: int) -> None:
    code = 2
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        try:
            compile(mutant.source, mutant.file, "exec")
        except SyntaxError as error:
            os.write(write_fd, json.dumps({"killed_by": f"not valid Python: {error}"[:300]}).encode())
            code = 3
            return
        apply_source(module_name_of(mutant.file), mutant.source, str(ROOT / mutant.file))
        failed = first_failure(session, runtestprotocol, tests, _TestLimit(plugin, write_fd))
        os.write(write_fd, json.dumps({"killed_by": failed}).encode())
        code = 1 if failed else 0
    except BaseException as error:  # the mutant broke the module itself (e.g. at import): killed
        try:
            os.write(write_fd, json.dumps({"killed_by": f"error applying the mutant: {error!r}"[:300]}).encode())
        except OSError:
            pass
        code = 1
    finally:
        os._exit(code)


def first_failure(session, runtestprotocol, tests: list, limit: "_TestLimit | None" = None) -> str | None:
    """Run `tests` in order; the node id of the first that fails (then stop), else None. Each test's
    `nextitem` is the next test (the session alone after the last): pytest keeps the fixtures the two
    share (a module's, when both are in one file) and tears down the rest, as in a plain pytest run;
    the session's fixtures (the records built before the fork) are always kept. With `limit` (a child),
    each test runs under its own CPU limit (_TestLimit)."""
    keep = _SessionOnly(session)
    for index, item in enumerate(tests):
        nextitem = tests[index + 1] if index + 1 < len(tests) else keep
        if limit is not None:
            limit.start(item)
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
        if limit is not None:
            limit.stop()
        if any(r.failed for r in reports):
            return item.nodeid
    return None


# A child's exit status when one of its tests ran past that test's own limit (_TestLimit): a timeout.
TIMEOUT_EXIT = 4


class _TestLimit:
    """In a child: each test's own CPU limit, the floor plus the factor times that test's unmutated seconds
    (_time_limit of the test alone), counted by the kernel's profiling timer (the CPU the child uses, as
    over_limit counts it) from the test's start. Past it the child writes which test timed out and exits
    TIMEOUT_EXIT at once: a mutant that makes its first covering test loop forever (secrets.py's `while at
    != -1` -> `==`) is a timeout after that test's limit (~30 CPU-s), not after the whole list's (floor plus
    the factor times every covering test's seconds, 233 CPU-s for secrets.py's 350 tests). A test that
    passes can only be cut short where it ran past floor + factor x its own unmutated time; the parent's
    limit over the whole list (over_limit) stays as a backstop for a child stuck inside one C call."""

    def __init__(self, plugin, write_fd: int):
        self.plugin, self.write_fd = plugin, write_fd
        self.nodeid, self.seconds = None, 0.0
        signal.signal(signal.SIGPROF, self._expired)

    def start(self, item) -> None:
        self.nodeid, self.seconds = item.nodeid, _time_limit(self.plugin, [item])
        signal.setitimer(signal.ITIMER_PROF, self.seconds)

    def stop(self) -> None:
        signal.setitimer(signal.ITIMER_PROF, 0)

    def _expired(self, signum, frame) -> None:
        try:
            os.write(self.write_fd, json.dumps({"killed_by": f"timeout {self.seconds:.0f} CPU-s in {self.nodeid}"}).encode())
        finally:
            os._exit(TIMEOUT_EXIT)


def child_outcome(code: int) -> str:
    """A finished child's exit status as the mutant's outcome."""
    return {0: "survived", 3: "incompetent", TIMEOUT_EXIT: "timeout"}.get(code, "killed")


def covering_tests(plugin: MutationPlugin, mutant: Mutant) -> list:
    filename = str(ROOT / mutant.file)
    if mutant.module_level:
        chosen = [item for item in plugin.items if item.nodeid in plugin.coverage]
    else:
        wanted = {(filename, line) for line in range(mutant.lines[0], mutant.lines[1] + 1)}
        chosen = [item for item in plugin.items
                  if item.nodeid in plugin.coverage and plugin.coverage[item.nodeid] & wanted]
    return grouped_by_test_file(plugin, sorted(chosen, key=test_order(plugin, mutant)))


def grouped_by_test_file(plugin, ordered: list) -> list:
    """`ordered` (test_order) with the tests that never killed a mutant, and are not new since the stored
    baseline, grouped by test file: each file's run in a row, the files cheapest first (their tests'
    unmutated seconds), each file's tests fastest first. A child passes the next test as pytest's
    `nextitem`, so a module-scoped fixture is built once per run of consecutive tests of its file, not
    once per test (the grader's test_validation and test_grading_every_leaf rebuild a run or two graded
    records per test otherwise). The tests that killed before keep their place in front: the order
    changes only among tests no mutant has met failing, which a survivor runs all of."""
    history: KillHistory = getattr(plugin, "history", None) or KillHistory()
    fresh = getattr(plugin, "fresh", set())
    proven = [item for item in ordered if item.nodeid in fresh or history.anywhere.get(item.nodeid)]
    rest = [item for item in ordered if not (item.nodeid in fresh or history.anywhere.get(item.nodeid))]
    by_file: dict[str, list] = {}
    for item in rest:
        by_file.setdefault(item.nodeid.split("::")[0], []).append(item)
    cost = {name: sum(plugin.durations.get(item.nodeid, 0.0) for item in items) for name, items in by_file.items()}
    return proven + [item for name in sorted(by_file, key=lambda n: (cost[n], n)) for item in by_file[name]]


def test_order(plugin, mutant: Mutant):
    """The order a mutant's covering tests run in (it stops at the first failure): the tests new or changed
    since the stored baseline first (written to kill survivors: `--retest-survivors` meets them first), then
    the tests that killed mutants of the same statement, then those that killed mutants of the same file, then of the
    module, most kills first, then the fastest. Mutants of one line mostly die in the same test, and a
    constant's mutants (covered by every test) stop early."""
    history: KillHistory = getattr(plugin, "history", None) or KillHistory()
    at = history.at_statement(mutant)
    in_file = history.in_file.get(mutant.file, {})
    fresh = getattr(plugin, "fresh", set())
    return lambda item: (item.nodeid not in fresh, -at.get(item.nodeid, 0), -in_file.get(item.nodeid, 0),
                         -history.anywhere.get(item.nodeid, 0), plugin.durations.get(item.nodeid, 0.0))


class KillHistory:
    """Which tests killed which mutants so far (the cached results and this run's), by line, file and
    module."""

    def __init__(self):
        self.by_line: dict[tuple[str, int], dict[str, int]] = {}
        self.in_file: dict[str, dict[str, int]] = {}
        self.anywhere: dict[str, int] = {}

    def add(self, result: dict) -> None:
        test = result.get("killed_by")
        if result.get("outcome") != "killed" or not test or "::" not in test:
            return
        for counts in (self.by_line.setdefault((result["file"], result["line"]), {}),
                       self.in_file.setdefault(result["file"], {}), self.anywhere):
            counts[test] = counts.get(test, 0) + 1

    def at_statement(self, mutant: Mutant) -> dict[str, int]:
        out: dict[str, int] = {}
        for line in range(min(mutant.line, mutant.lines[0]), max(mutant.line, mutant.lines[1]) + 1):
            for test, count in self.by_line.get((mutant.file, line), {}).items():
                out[test] = out.get(test, 0) + count
        return out


def run_mutants(plugin: MutationPlugin, session, runtestprotocol) -> dict:
    todo: list[tuple[Mutant, Path, dict]] = plugin.todo
    running: dict[int, tuple] = {}
    done = 0
    started_all = time.monotonic()
    queue = list(todo)
    # every object the baseline made (modules, the session's fixtures, the memoized records) goes to the
    # collector's permanent generation: a child's collections then do not walk them, which would write to
    # (and so copy) every page of the parent's memory in each child
    gc.collect()
    gc.freeze()
    checked: set[str] = set()  # the files whose null mutant passed
    while queue or running:
        while queue and len(running) < plugin.jobs:
            if queue[0][0].file not in checked:
                if running:
                    break  # a file's null mutant runs alone, once the children running now are done
                null_check(plugin, session, runtestprotocol, queue[0][0].file)
                checked.add(queue[0][0].file)
            mutant, path, data = queue.pop(0)
            covering = covering_tests(plugin, mutant)
            tests = tests_not_yet_passed(plugin, data["results"].get(mutant.id), covering)
            if covering and not tests:  # a survivor whose covering tests all passed on it already, unchanged
                done += 1
                continue
            if not tests:
                data["results"][mutant.id] = _record(mutant, "survived", killed_by=None, tests=0, seconds=0.0,
                                                     note="not covered")
                data["results"][mutant.id]["tests_run"] = tests_run(plugin, covering)
                save_results(path, data)
                done += 1
                continue
            limit = _time_limit(plugin, tests)
            pid, read_fd = _fork_child(plugin, session, runtestprotocol, mutant, tests)
            running[pid] = (mutant, path, data, read_fd, time.monotonic(), limit, len(tests), covering)
        finished = []
        for pid, (mutant, path, data, read_fd, started, limit, count, covering) in list(running.items()):
            waited, status = os.waitpid(pid, os.WNOHANG)
            elapsed = time.monotonic() - started
            if waited == 0 and over_limit(pid, elapsed, limit):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                os.close(read_fd)
                data["results"][mutant.id] = _record(mutant, "timeout", killed_by=f"timeout {limit:.0f} CPU-s",
                                                     tests=count, seconds=elapsed)
                finished.append(pid)
            elif waited:
                message = _read_all(read_fd)
                code = os.waitstatus_to_exitcode(status)
                outcome = child_outcome(code)
                data["results"][mutant.id] = _record(mutant, outcome, killed_by=message.get("killed_by") if code else
                                                     None, tests=count, seconds=elapsed,
                                                     note=None if code in (0, 1, 3, TIMEOUT_EXIT) else f"child exit {code}")
                if outcome == "survived":
                    data["results"][mutant.id]["tests_run"] = tests_run(plugin, covering)
                finished.append(pid)
        for pid in finished:
            mutant, path, data = running.pop(pid)[:3]
            save_results(path, data)
            done += 1
            result = data["results"][mutant.id]
            plugin.history.add(result)
            if result["outcome"] != "killed" or done % 25 == 0:
                rate = done / max(time.monotonic() - started_all, 1e-9) * 60
                plugin.log(f"[{done}/{len(todo)}] {result['outcome']:8s} {mutant.file}:{mutant.line} "
                           f"{mutant.operator} ({result['seconds']:.1f} s, {result['tests']} tests; {rate:.1f}/min)")
        if running and not finished:
            time.sleep(0.02)
    return {"done": done}


def null_check(plugin: MutationPlugin, session, runtestprotocol, relative: str) -> None:
    """The null mutant of one file: its unmutated source, applied as a mutant is, must leave every test that
    covers the file passing (split over `jobs` children), or the runner cannot patch it and stops: a test
    failing for the patching itself would count every mutant it runs on as killed."""
    text = (ROOT / relative).read_text()
    null = Mutant(id=f"{relative}:null", file=relative, line=1, operator="none", code="", mutant="",
                  original=text.encode(), edit=(0, 0, ""), lines=(1, max(1, len(text.splitlines()))),
                  module_level=False)
    tests = covering_tests(plugin, null)
    limit = int(plugin.config.get("null_check_tests", {}).get(plugin.module.name, 0))
    if limit:  # configured: the fastest tests only
        tests = sorted(tests, key=lambda item: plugin.durations.get(item.nodeid, 0.0))[:limit]
    started = time.monotonic()
    jobs = max(1, plugin.jobs)  # consecutive slices: a test file's tests stay together (grouped_by_test_file)
    parts = [tests[len(tests) * i // jobs:len(tests) * (i + 1) // jobs] for i in range(jobs)]
    children = [(_fork_child(plugin, session, runtestprotocol, null, part), _time_limit(plugin, part))
                for part in parts if part]
    for (pid, read_fd), limit_s in children:
        while True:
            waited, status = os.waitpid(pid, os.WNOHANG)
            if waited or over_limit(pid, time.monotonic() - started, limit_s):
                break
            time.sleep(0.05)
        if not waited:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read_fd)
            raise SystemExit(f"the unmutated {relative}, applied as a mutant is, times out: the runner cannot patch it")
        message = _read_all(read_fd)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"the unmutated {relative}, applied as a mutant is, fails {message.get('killed_by')}: "
                             "the runner cannot patch this module")
    plugin.log(f"null mutant of {relative} passes ({len(tests)} covering tests, {time.monotonic() - started:.0f} s)")


def tests_run(plugin, covering: list) -> dict:
    """What a survivor passed: the baseline's key and the sha of each covering test's file."""
    files = sorted({item.nodeid.split("::")[0] for item in covering})
    return {"key": plugin.baseline_key, "files": {f: plugin.test_shas.get(f, "") for f in files}}


def tests_not_yet_passed(plugin, previous: dict | None, covering: list) -> list:
    """The covering tests a mutant must run: all of them, but for a survivor (run again) whose record says
    which test files it passed, under the same baseline key (sources and test helpers), only the tests
    of files new or changed since: the others passed on this very mutant already."""
    if not previous or previous.get("outcome") != "survived":
        return covering
    passed = previous.get("tests_run")
    if not passed or passed.get("key") != plugin.baseline_key:
        return covering
    return [item for item in covering
            if passed["files"].get(item.nodeid.split("::")[0]) != plugin.test_shas.get(item.nodeid.split("::")[0])]


# A child that uses no CPU for this many times its limit (blocked, not computing) is stopped all the same.
WALL_BACKSTOP = 10.0


def child_cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds a running child has used so far (Linux /proc), None where unreadable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (fields 14, 15)
    except (OSError, ValueError, IndexError):
        return None


def over_limit(pid: int, elapsed: float, limit: float) -> bool:
    """Whether a child is past its time limit: the CPU seconds it used, not the wall clock, so that a child
    starved by a loaded machine (other sessions' processes at a higher priority) is not counted a timeout, and
    so killed, for time it never ran; a child using no CPU (blocked) stops at WALL_BACKSTOP times its limit.
    Where /proc cannot be read, the wall clock as before."""
    cpu = child_cpu_seconds(pid)
    if cpu is None:
        return elapsed > limit
    return cpu > limit or elapsed > limit * WALL_BACKSTOP


def _time_limit(plugin: MutationPlugin, tests: list) -> float:
    """Seconds a mutant's child may run: a floor plus a multiple of its tests' unmutated durations."""
    return plugin.config.get("timeout_floor", 30.0) + plugin.config.get("timeout_factor", 6.0) \
        * sum(plugin.durations.get(t.nodeid, 0) for t in tests)


def _fork_child(plugin: MutationPlugin, session, runtestprotocol, mutant: Mutant, tests: list) -> tuple[int, int]:
    """Fork a child that runs `tests` against `mutant`; (its pid, the pipe end its message arrives on)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        _child(plugin, session, runtestprotocol, mutant, tests, write_fd)
    os.close(write_fd)
    return pid, read_fd


def _read_all(fd: int) -> dict:
    chunks = []
    while True:
        ready, _, _ = select.select([fd], [], [], 0)
        if not ready:
            break
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    try:
        return json.loads(b"".join(chunks) or b"{}")
    except ValueError:
        return {}


def _record(mutant: Mutant, outcome: str, killed_by, tests: int, seconds: float, note=None) -> dict:
    out = {"outcome": outcome, "file": mutant.file, "line": mutant.line, "operator": mutant.operator,
           "code": mutant.code, "mutant": mutant.mutant, "tests": tests, "seconds": round(seconds, 2)}
    if killed_by:
        out["killed_by"] = killed_by
    if note:
        out["note"] = note
    return out


# ---------------------------------------------------------------- one module

def module_files(module: Module) -> list[str]:
    """The module's source files, relative to the repository (tools/mutation.py's reading of the config)."""
    return [f.relative_to(ROOT).as_posix() for f in mutation.module_files(ROOT, module)]


def module_tests(module: Module) -> list[str]:
    return mutation.test_files(ROOT, module)


def excluded_operators(defaults: dict) -> re.Pattern | None:
    patterns = list(defaults.get("exclude_operators", []))
    return re.compile("|".join(f"(?:{p})" for p in patterns)) if patterns else None


def all_mutants(module: Module, defaults: dict) -> list[tuple[Mutant, Path]]:
    out = []
    for relative in module_files(module):
        source = (ROOT / relative).read_text()
        path = results_path(module.name, relative, source)
        for mutant in generate(source, relative, excluded_operators(defaults)):
            out.append((mutant, path))
    return out


def files_first(todo: list, wanted: list[str]) -> list:
    """Only the mutants of the files named in `wanted` (each a path or the end of one, e.g.
    `grading/decision.py`), in that order of files; every mutant when `wanted` is empty."""
    if not wanted:
        return todo
    rank = {}
    for mutant, _path, _data in todo:
        for index, name in enumerate(wanted):
            if mutant.file == name or mutant.file.endswith("/" + name.lstrip("/")):
                rank.setdefault(mutant.file, index)
                break
    chosen = [entry for entry in todo if entry[0].file in rank]
    return sorted(chosen, key=lambda entry: rank[entry[0].file])  # stable: each file keeps its line order


def within_lines(todo: list, spans: list[str]) -> list:
    """Only the mutants on lines inside one of `spans` ("A-B", both ends included; "A" alone is one line),
    every mutant when `spans` is empty: a helper writing tests for one part of a file runs that part."""
    if not spans:
        return todo
    ranges = []
    for span in spans:
        first, _, last = span.partition("-")
        ranges.append((int(first), int(last or first)))
    return [entry for entry in todo if any(a <= entry[0].line <= b for a, b in ranges)]


def run_module(module: Module, defaults: dict, args, log) -> None:
    import pytest

    files = module_files(module)
    tests = module_tests(module)
    if not files or not tests:
        log(f"{module.name}: no files or no tests, skipped")
        return
    mutants = all_mutants(module, defaults)
    data_by_path: dict[Path, dict] = {}
    todo = []
    commit = git_commit()
    for mutant, path in mutants:
        if path not in data_by_path:
            data_by_path[path] = load_results(path)
            data_by_path[path].setdefault("commit", commit)
            data_by_path[path]["file"] = mutant.file
            data_by_path[path]["total"] = sum(1 for m, p in mutants if p == path)
        previous = data_by_path[path]["results"].get(mutant.id)
        if previous is None or previous["outcome"] == "incompetent" or (
                args.retest_survivors and previous["outcome"] == "survived"):
            todo.append((mutant, path, data_by_path[path]))
    todo = files_first(todo, getattr(args, "file", None) or [])
    todo = within_lines(todo, getattr(args, "lines", None) or [])
    # module-level mutants (constants, decorators) last: every test of the module covers them, so each one
    # that survives costs the whole test list, and they hold up the file's other mutants
    todo.sort(key=lambda entry: entry[0].module_level)
    if args.limit:
        todo = todo[:args.limit]
    log(f"{module.name}: {len(mutants)} mutants in {len(files)} file(s), {len(todo)} to run; tests: {' '.join(tests)}")
    if not todo:
        return
    plugin = MutationPlugin(module, args.jobs, "run", defaults, log)
    plugin.module_files = files
    plugin.todo = todo
    plugin.history = KillHistory()
    for data in data_by_path.values():
        for result in data["results"].values():
            plugin.history.add(result)
    pytest_args = [a for a in defaults.get("pytest_args", []) if a not in ("-x",)]
    deselect = [arg for nodeid in defaults.get("deselect", {}).get(module.name, []) for arg in ("--deselect", nodeid)]
    pytest_args = [*pytest_args, *deselect, *tests]
    code = pytest.main(pytest_args, plugins=[plugin])
    log(f"{module.name}: pytest session ended ({code}); {plugin.outcome}")
    save_run_files(data_by_path, todo, commit)


def save_run_files(data_by_path: dict[Path, dict], todo: list, commit: str) -> None:
    """At a run's end, the results of the files it ran mutants of, and only those: another run of the same module
    (other --file) may be saving its own files meanwhile, and this run's copy of them is as old as its start."""
    for path in {path for _, path, _ in todo}:
        data_by_path[path]["commit_last"] = commit
        save_results(path, data_by_path[path])


def _without_option(args: list[str], option: str) -> list[str]:
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg == option:
            skip = True
            continue
        out.append(arg)
    return out


# ---------------------------------------------------------------- self-check against a subprocess run

def selfcheck(modules: list[Module], defaults: dict, count: int, seed: int, log) -> list[dict]:
    """Runs `count` mutants per module as tools/mutation.py does (the mutated file written into a
    private copy of the tree, the module's tests in a fresh pytest process, -x) and compares with the
    fork runner's cached result for the same mutant (run first: --module NAME)."""
    tree = ROOT / ".mutation" / "selfcheck-tree"
    copy_tree(ROOT, tree)
    rows = []
    for module in modules:
        mutants = all_mutants(module, defaults)
        known = []
        for mutant, path in mutants:
            result = load_results(path)["results"].get(mutant.id)
            if result and result["outcome"] in ("killed", "survived"):
                known.append((mutant, result))
        if not known:
            log(f"{module.name}: no fork results yet, run --module {module.name} first")
            continue
        survivors = [k for k in known if k[1]["outcome"] == "survived"]
        rng = random.Random(seed)
        chosen = rng.sample(survivors, min(len(survivors), max(1, count // 3)))
        rest = [k for k in known if k not in chosen]
        chosen += rng.sample(rest, min(len(rest), count - len(chosen)))
        tests = module_tests(module)
        for mutant, result in chosen:
            target = tree / mutant.file
            original = target.read_text()
            target.write_text(mutant.source)
            try:
                command = [sys.executable, "-m", "pytest", *defaults.get("pytest_args", []), *tests]
                env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
                done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True,
                                      timeout=float(defaults.get("timeout", 240)) * 4)
                outcome = "survived" if done.returncode == 0 else "killed"
            except subprocess.TimeoutExpired:
                outcome = "killed"
            finally:
                target.write_text(original)
            row = {"module": module.name, "id": mutant.id, "fork": result["outcome"], "subprocess": outcome}
            rows.append(row)
            log(f"selfcheck {mutant.id}: fork {result['outcome']}, subprocess {outcome}"
                f"{'' if outcome == result['outcome'] else '  DISAGREE'}")
    agree = sum(r["fork"] == r["subprocess"] for r in rows)
    log(f"selfcheck: {agree}/{len(rows)} agree")
    WORK.mkdir(parents=True, exist_ok=True)
    (WORK / "selfcheck.json").write_text(json.dumps(rows, indent=1))
    return rows


# ---------------------------------------------------------------- report

def collect(modules: list[Module], defaults: dict, equivalents: list[dict]) -> list[dict]:
    rows = []
    for module in modules:
        files = module_files(module)
        stats = {"name": module.name, "path": module.path, "present": bool(files), "total": 0, "killed": 0,
                 "timeout": 0, "incompetent": 0, "survived": [], "equivalent": [], "pending": 0, "commits": set(), "seconds": 0.0}
        loaded: dict[Path, dict] = {}
        for mutant, path in all_mutants(module, defaults) if files else []:
            stats["total"] += 1
            if path not in loaded:
                loaded[path] = load_results(path)
            data = loaded[path]
            if data.get("commit"):
                stats["commits"].add(data.get("commit_last") or data["commit"])
            result = data["results"].get(mutant.id)
            if result is None:
                stats["pending"] += 1
                continue
            stats["seconds"] += result.get("seconds", 0.0)
            if result["outcome"] == "killed":
                stats["killed"] += 1
                continue
            if result["outcome"] == "incompetent":
                stats["incompetent"] += 1
                continue
            if result["outcome"] == "timeout":
                stats["killed"] += 1
                stats["timeout"] += 1
                continue
            entry = {"where": f"{mutant.file}:{mutant.line}", "operator": mutant.operator, "code": mutant.code,
                     "mutant": mutant.mutant, "note": result.get("note")}
            why = _equivalent_reason(equivalents, mutant.file, mutant.operator, mutant.code, mutant.mutant)
            if why:
                entry["why"] = why
                stats["equivalent"].append(entry)
            else:
                stats["survived"].append(entry)
        rows.append(stats)
    return rows


def _not_run_here(stats: dict) -> bool:
    """A module none of whose mutants has a result in this checkout's cache."""
    return stats["present"] and stats["total"] > 0 and stats["pending"] == stats["total"]


def write_report(rows: list[dict], commands: list[str], selfcheck_rows: list[dict] | None,
                 path: Path = REPORT, previous: dict | None = None) -> str:
    """`previous` ([fast.previous] of tools/mutation.toml): an earlier session's figures, shown (marked as
    such, outside the totals) for the modules this checkout's cache has no result for.

    Long because: the report is one document written top to bottom, table by table.
    """
    previous = previous or {}
    earlier = [r for r in rows if _not_run_here(r)]
    rows = [r for r in rows if not _not_run_here(r)]
    pending = sum(r["pending"] for r in rows)
    out = ["# Mutation report", "",
           f"Generated {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')} by `python -m "
           "tools.mutation_fast --report-only` from the cached results of tools/mutation_fast.py (fork per "
           "mutant; configuration tools/mutation.toml, reviewed equivalents tools/mutation_equivalents.toml). "
           "Every mutant of each module is run, none sampled. The table below holds only what ran in this "
           "checkout (results cached in .mutation/fast/)."
           + (" Modules with no result here follow in a second table." if earlier else ""), ""]
    if pending:
        out += [f"**Partial: {pending} mutants have not run yet** (modules with pending mutants below). The run "
                "resumes where it stopped (results cached in .mutation/fast/, keyed by each file's source hash; from the "
                "repository root, with `export PYTHONPATH=$PWD HF_HUB_OFFLINE=1`; add `--retest-survivors` to run "
                "survivors again against tests added since):", ""]
        for row in rows:
            if row["pending"]:
                out.append(f"    nice -n 19 python -m tools.mutation_fast --module {row['name']} --jobs 2")
        out.append("")
    out += ["Kill rate = killed / (killed + surviving non-equivalent mutants); killed includes timeouts (a "
            "child past its limit, listed separately). A survivor marked *not covered* is a mutant of a "
            "statement no listed test executes.", "",
            "| module | mutants | killed | (of which timeout) | survived | equivalent | not valid Python | pending | kill rate | commit |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    total_killed = total_survived = 0
    for stats in rows:
        if not stats["present"]:
            out.append(f"| {stats['name']} (`{stats['path']}`) | not present | | | | | | | | |")
            continue
        survived = len(stats["survived"])
        total_killed += stats["killed"]
        total_survived += survived
        out.append(f"| {stats['name']} (`{stats['path']}`) | {stats['total']} | {stats['killed']} | "
                   f"{stats['timeout']} | {survived} | {len(stats['equivalent'])} | {stats['incompetent']} | {stats['pending']} | "
                   f"{_rate(stats['killed'], survived)} | {', '.join(sorted(stats['commits'])) or '-'} |")
    out.append(f"| **overall** | {sum(r['total'] for r in rows)} | {total_killed} | "
               f"{sum(r['timeout'] for r in rows)} | {total_survived} | {sum(len(r['equivalent']) for r in rows)} | "
               f"{sum(r['incompetent'] for r in rows)} | {pending} | **{_rate(total_killed, total_survived)}** | |")
    if earlier:
        known = previous.get("modules", {})
        out += ["", f"**Not run in this checkout** ({len(earlier)} modules, "
                f"{sum(r['total'] for r in earlier)} mutants of the current code): the figures are "
                f"{previous.get('recorded', 'an earlier session')}, on the code of the commit shown, not measured "
                "here and not in the totals above. To measure them here:", ""]
        out += [f"    nice -n 19 python -m tools.mutation_fast --module {r['name']} --jobs 2" for r in earlier]
        out += ["", "| module | mutants now | earlier: mutants | killed | survived | equivalent | pending | kill rate | commit |",
                "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
        for r in earlier:
            p = known.get(r["name"])
            if p is None:
                out.append(f"| {r['name']} (`{r['path']}`) | {r['total']} | no earlier figures | | | | | | |")
                continue
            out.append(f"| {r['name']} (`{r['path']}`) | {r['total']} | {p['total']} | {p['killed']} | "
                       f"{p['survived']} | {p['equivalent']} | {p.get('pending', 0)} | "
                       f"{_rate(p['killed'], p['survived'])} | {p.get('commit', '-')} |")
    if commands:
        out += ["", "Commands that produced these results:", ""] + [f"    {c}" for c in commands]
    if selfcheck_rows:
        agree = sum(r["fork"] == r["subprocess"] for r in selfcheck_rows)
        out += ["", f"Self-check (`--selfcheck`): {agree} of {len(selfcheck_rows)} sampled mutants get the same "
                    "outcome from the fork runner and from a fresh pytest process on a private copy of the tree."]
        for r in selfcheck_rows:
            if r["fork"] != r["subprocess"]:
                out.append(f"- disagree: `{r['id']}` fork {r['fork']}, subprocess {r['subprocess']}")
    notes = tomllib.loads((ROOT / "tools" / "mutation.toml").read_text()).get("fast", {}).get("report_notes", "")
    if notes.strip():
        out += ["", "## Notes", "", notes.strip()]
    out += ["", "## Surviving mutants", ""]
    any_survivor = False
    for stats in rows:
        for entry in stats["survived"]:
            any_survivor = True
            note = f" ({entry['note']})" if entry.get("note") else ""
            out += [f"- `{entry['where']}` {entry['operator']}{note}:", "", "  ```diff",
                    *[f"  - {line}" for line in entry["code"].splitlines()],
                    *[f"  + {line}" for line in entry["mutant"].splitlines()], "  ```"]
    if not any_survivor:
        out.append("None.")
    out += mutation.equivalents_section(rows)
    text = "\n".join(out) + "\n"
    path.write_text(text)
    return text


def _commands_file() -> Path:
    return WORK / "commands.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.mutation_fast", description=__doc__.split("\n\n")[0])
    parser.add_argument("--module", action="append", help="module name from tools/mutation.toml (repeatable)")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at a time (forked children)")
    parser.add_argument("--file", action="append", metavar="PATH",
                        help="only the mutants of this file of the module (repeatable; run in the order given)")
    parser.add_argument("--lines", action="append", metavar="A-B",
                        help="only the mutants on these lines of the --file files (repeatable)")
    parser.add_argument("--limit", type=int, default=0, help="at most this many mutants per module (testing)")
    parser.add_argument("--retest-survivors", action="store_true", help="run the surviving mutants again")
    parser.add_argument("--selfcheck", type=int, default=0, metavar="N",
                        help="N cached mutants per module run again in a fresh pytest process; agreement reported")
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--report-only", action="store_true", help="only write docs/mutation-report.md")
    args = parser.parse_args(argv)
    defaults, modules = load_config()
    defaults = {**defaults, **tomllib_fast(defaults)}
    known = {m.name for m in modules}
    unknown = [n for n in args.module or [] if n not in known]
    if unknown:
        print(f"unknown module(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}", file=sys.stderr)
        return 2
    report_modules = [m for m in modules if m.name in set(defaults.get("fast_modules", known))]
    selected = [m for m in report_modules if m.name in (args.module or [])] if args.module else report_modules
    os.chdir(ROOT)
    WORK.mkdir(parents=True, exist_ok=True)

    def log(message: str) -> None:
        print(f"{datetime.now(timezone.utc).strftime('%H:%M:%S')} {message}", flush=True)

    command_line = "nice -n 19 python -m tools.mutation_fast " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    commands = json.loads(_commands_file().read_text()) if _commands_file().exists() else []
    selfcheck_path = WORK / "selfcheck.json"
    if args.selfcheck:
        selfcheck(selected, defaults, args.selfcheck, args.seed, log)
        commands.append(command_line)
    elif not args.report_only:
        for module in selected:
            run_module(module, defaults, args, log)
        commands.append(command_line)
    _commands_file().write_text(json.dumps(list(dict.fromkeys(commands)), indent=1))
    rows = collect(report_modules, defaults, load_equivalents())
    selfcheck_rows = json.loads(selfcheck_path.read_text()) if selfcheck_path.exists() else None
    text = write_report(rows, list(dict.fromkeys(commands)), selfcheck_rows,
                        previous=tomllib_fast(defaults).get("previous"))
    print(text.split("\n## Surviving")[0])
    return 0


def tomllib_fast(defaults: dict) -> dict:
    """The [fast] table of tools/mutation.toml (this runner's own settings)."""
    return tomllib.loads((ROOT / "tools" / "mutation.toml").read_text()).get("fast", {})


if __name__ == "__main__":
    sys.exit(main())
