"""The fork-per-mutant runner's own rules (tools/mutation_fast.py): which mutants it makes, with
cosmic-ray's operator names, and that a mutant applied in the process reaches every reference to
the mutated code (names imported elsewhere, tables of functions, methods, class identity)."""

from __future__ import annotations

import contextlib
import importlib.util
import sys
import types
from pathlib import Path
from typing import Iterator

_PATH = Path(__file__).resolve().parents[2] / "tools" / "mutation_fast.py"
_SPEC = importlib.util.spec_from_file_location("mutation_fast_under_test", _PATH)
fast = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = fast
_SPEC.loader.exec_module(fast)

SOURCE = '''"""Docstring 1 < 2 is not code."""
from __future__ import annotations

LIMIT = 3


def check(x: int | None, flag) -> bool:
    if not (x > LIMIT and flag):
        return False
    return x - 1 >= 0  # pragma: no mutate


class Box:
    def size(self, y):
        for _ in range(2):
            y += 1
        return y
'''


def _by_operator(mutants):
    out = {}
    for mutant in mutants:
        out.setdefault(mutant.operator, []).append(mutant)
    return out


def test_mutants_carry_cosmic_ray_operator_names_and_skip_docstrings_annotations_and_pragmas():
    mutants = fast.generate(SOURCE, "pkg/mod.py")
    ops = _by_operator(mutants)
    assert {m.line for m in mutants} == {4, 8, 9, 15, 16}
    assert len([op for op in ops if op.startswith("core/ReplaceComparisonOperator_Gt_")]) == 5
    assert [m.mutant for m in ops["core/ReplaceUnaryOperator_Delete_Not"]] == ["if (x > LIMIT and flag):"]
    assert [m.mutant for m in ops["core/ReplaceAndWithOr"]] == ["if not (x > LIMIT or flag):"]
    assert [m.mutant for m in ops["core/NumberReplacer"] if m.line == 4] == ["LIMIT = 4", "LIMIT = 2"]
    assert [m.mutant for m in ops["core/ReplaceBinaryOperator_Add_Sub"]] == ["y -= 1"]
    assert [m.mutant for m in ops["core/ZeroIterationForLoop"]] == ["for _ in []:"]
    assert [m.mutant for m in ops["core/ReplaceFalseWithTrue"]] == ["return True"]
    assert not any(m.operator.endswith("_BitOr") for m in mutants)  # `int | None` is an annotation
    for mutant in mutants:
        compile(mutant.source, mutant.file, "exec")
    inside_function = [m for m in mutants if m.line == 9]
    assert inside_function and not any(m.module_level for m in inside_function)
    assert all(m.module_level for m in mutants if m.line == 4)


def test_an_applied_mutant_reaches_imported_names_tables_methods_and_keeps_class_identity():
    name = "mutation_fast_sample_module"
    module = types.ModuleType(name)
    module.__file__ = f"{name}.py"
    sys.modules[name] = module
    user = types.ModuleType(name + "_user")
    sys.modules[user.__name__] = user
    try:
        exec(compile(SOURCE + "\nTABLE = [check]\n", module.__file__, "exec"), module.__dict__)
        user.check, user.LIMIT, user.TABLE = module.check, module.LIMIT, module.TABLE
        box = module.Box()
        assert user.check(4, True) is True and box.size(0) == 2
        mutated = SOURCE.replace("LIMIT = 3", "LIMIT = 5").replace("y += 1", "y += 10") + "\nTABLE = [check]\n"
        fast.apply_source(name, mutated, module.__file__)
        assert user.check(4, True) is False  # the function object the user holds sees the new LIMIT
        assert user.TABLE[0](4, True) is False
        assert user.LIMIT == 5  # a changed constant is re-bound where it was imported
        assert box.size(0) == 20 and isinstance(box, module.Box)
    finally:
        del sys.modules[name], sys.modules[user.__name__]


def _row(name, total, killed, pending, survived=()):
    return {"name": name, "path": f"experiment/stats/{name}.py", "present": True, "total": total, "killed": killed,
            "timeout": 0, "incompetent": 0, "survived": list(survived), "equivalent": [], "pending": pending,
            "commits": {"abc"}, "seconds": 0.0}


def test_the_report_keeps_what_ran_here_apart_from_an_earlier_sessions_figures(tmp_path):
    ran = _row("decision", total=10, killed=9, pending=0,
               survived=[{"where": "x.py:1", "operator": "core/AddNot", "code": "a", "mutant": "not a"}])
    partial = _row("grading", total=20, killed=3, pending=17)
    not_run = _row("selection", total=7, killed=0, pending=7)
    no_figures = _row("activation", total=5, killed=0, pending=5)
    previous = {"recorded": "those of an earlier report",
                "modules": {"selection": {"total": 6, "killed": 5, "survived": 1, "equivalent": 0, "commit": "old"}}}
    text = fast.write_report([ran, partial, not_run, no_figures], [], None, path=tmp_path / "r.md",
                             previous=previous)
    main_table = text.split("**Not run in this checkout**")[0]
    assert "| decision (" in main_table and "| grading (" in main_table
    assert "| selection (" not in main_table and "| activation (" not in main_table
    # the totals and the pending count are those of this checkout only: 12 killed, 1 survived, 17 pending
    assert "| **overall** | 30 | 12 | 0 | 1 | 0 | 0 | 17 | **92.3%** | |" in main_table
    earlier = text.split("**Not run in this checkout**")[1].split("\n## ")[0]  # up to the next section (the notes)
    assert "figures are those of an earlier report" in earlier
    assert "| selection (`experiment/stats/selection.py`) | 7 | 6 | 5 | 1 | 0 | 0 | 83.3% | old |" in earlier
    assert "| activation (`experiment/stats/activation.py`) | 5 | no earlier figures |" in earlier
    assert "--module selection --jobs 2" in earlier and "--module grading" not in earlier


@contextlib.contextmanager
def _sample_module(name: str, source: str) -> Iterator[types.ModuleType]:
    """`source` run as the module `name`, in sys.modules while the block runs (as the runner finds a module)."""
    module = types.ModuleType(name)
    module.__file__ = f"{name}.py"
    sys.modules[name] = module
    try:
        exec(compile(source, module.__file__, "exec"), module.__dict__)
        yield module
    finally:
        del sys.modules[name]


def test_a_dataclass_mutated_to_not_frozen_behaves_as_a_fresh_import_of_it():
    name = "mutation_fast_sample_dataclass"
    source = "from dataclasses import dataclass\n\n\n@dataclass(frozen=True)\nclass Box:\n    size: int = 0\n"
    with _sample_module(name, source) as module:
        original = module.Box
        fast.apply_source(name, source.replace("frozen=True", "frozen=False"), module.__file__)
        box = module.Box(3)  # the frozen __setattr__ is gone with the decorator's argument
        box.size = 4
        assert module.Box is original and box == original(4)


class _Item:
    def __init__(self, nodeid):
        self.nodeid = nodeid


def _plugin_with(tests: dict[str, float], covering: set[str], file: str):
    plugin = types.SimpleNamespace(items=[_Item(t) for t in tests], durations=dict(tests), history=fast.KillHistory())
    plugin.coverage = {t: {(str(fast.ROOT / file), 9)} if t in covering else {(str(fast.ROOT / file), 99)}
                       for t in tests}
    return plugin


def test_a_mutants_tests_run_those_that_killed_its_statement_first_then_its_files_then_the_fastest():
    mutants = {m.line: m for m in fast.generate(SOURCE, "pkg/mod.py") if m.line == 9}
    mutant = mutants[9]
    plugin = _plugin_with({"t::fast": 0.1, "t::slow": 5.0, "t::file": 3.0, "t::line": 4.0, "t::other": 0.2},
                          covering={"t::fast", "t::slow", "t::file", "t::line"}, file="pkg/mod.py")
    assert [i.nodeid for i in fast.covering_tests(plugin, mutant)] == ["t::fast", "t::file", "t::line", "t::slow"]
    # killed a mutant of line 9 once; another file's test killed mutants of this file (line 15) twice; a
    # test of another module's file killed many: statement, then file, then module, then time
    plugin.history.add({"outcome": "killed", "file": "pkg/mod.py", "line": 9, "killed_by": "t::line"})
    for _ in range(2):
        plugin.history.add({"outcome": "killed", "file": "pkg/mod.py", "line": 15, "killed_by": "t::file"})
    for _ in range(5):
        plugin.history.add({"outcome": "killed", "file": "pkg/other.py", "line": 9, "killed_by": "t::slow"})
    plugin.history.add({"outcome": "survived", "file": "pkg/mod.py", "line": 9, "killed_by": "t::fast"})
    plugin.history.add({"outcome": "killed", "file": "pkg/mod.py", "line": 9, "killed_by": "timeout 30 s"})
    assert [i.nodeid for i in fast.covering_tests(plugin, mutant)] == ["t::line", "t::file", "t::slow", "t::fast"]
    # the order only: a test that does not cover the statement is never chosen, whatever it killed
    plugin.history.add({"outcome": "killed", "file": "pkg/mod.py", "line": 9, "killed_by": "t::other"})
    assert "t::other" not in [i.nodeid for i in fast.covering_tests(plugin, mutant)]
    # a test new since the stored baseline (written against survivors) comes before all of them
    plugin.fresh = {"t::slow", "t::other"}
    assert [i.nodeid for i in fast.covering_tests(plugin, mutant)] == ["t::slow", "t::line", "t::file", "t::fast"]


def test_file_selection_keeps_only_the_named_files_in_the_order_given():
    todo = [(types.SimpleNamespace(file=f), None, None) for f in
            ("experiment/grading/a.py", "experiment/grading/b.py", "experiment/grading/a.py", "experiment/grading/c.py")]
    chosen = fast.files_first(todo, ["grading/c.py", "experiment/grading/a.py"])
    assert [entry[0].file for entry in chosen] == ["experiment/grading/c.py", "experiment/grading/a.py",
                                                    "experiment/grading/a.py"]
    assert fast.files_first(todo, []) == todo
    assert fast.files_first(todo, ["a.py"]) == [todo[0], todo[2]]  # the end of a path, at a folder boundary
    assert fast.files_first(todo, ["ding/a.py"]) == []


def test_line_selection_keeps_only_the_mutants_inside_the_spans_given():
    todo = [(types.SimpleNamespace(file="a.py", line=n), None, None) for n in (3, 10, 11, 20, 40)]
    assert [e[0].line for e in fast.within_lines(todo, ["10-20"])] == [10, 11, 20]
    assert [e[0].line for e in fast.within_lines(todo, ["3", "40-41"])] == [3, 40]
    assert fast.within_lines(todo, []) == todo


def test_a_run_saves_at_its_end_only_the_files_it_ran_so_a_run_beside_it_keeps_its_results(tmp_path):
    mine, other = tmp_path / "a.json", tmp_path / "b.json"
    data = {mine: {"results": {"m1": {"outcome": "killed"}}}, other: {"results": {}}}  # both as read at the start
    fast.save_results(other, {"results": {"m2": {"outcome": "killed"}}})  # the run beside it saved b meanwhile
    fast.save_run_files(data, [(types.SimpleNamespace(file="a.py"), mine, data[mine])], commit="abc")
    assert fast.load_results(mine)["results"] == {"m1": {"outcome": "killed"}}
    assert fast.load_results(mine)["commit_last"] == "abc"
    assert fast.load_results(other)["results"] == {"m2": {"outcome": "killed"}}  # not overwritten by the stale copy


def _tiny_project(root: Path, name: str) -> None:
    (root / name).mkdir()
    (root / name / "__init__.py").write_text("")
    (root / name / "mod.py").write_text("def double(x):\n    return x * 2\n\n\ndef unused(x):\n    return x\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_a.py").write_text(f"from {name}.mod import double\n\n\ndef test_double():\n"
                                               "    assert double(2) == 4\n")
    (root / "tests" / "test_b.py").write_text("def test_nothing_of_the_module():\n    assert True\n")


def _baseline_session(root: Path, name: str, monkeypatch) -> tuple[object, list[str]]:
    import pytest

    traced = []
    real = fast._traced_run

    def counting(item, *args):
        traced.append(item.nodeid)
        return real(item, *args)

    monkeypatch.setattr(fast, "_traced_run", counting)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    for key in [k for k in sys.modules if k in ("test_a", "test_b") or k.startswith(name)]:
        del sys.modules[key]  # each session imports the files as they are now
    module = types.SimpleNamespace(name="tiny")
    plugin = fast.MutationPlugin(module, 1, "run", {}, lambda message: None)
    plugin.module_files, plugin.todo, plugin.history = [f"{name}/mod.py"], [], fast.KillHistory()
    code = pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly", "--rootdir", str(root),
                        str(root / "tests")], plugins=[plugin])
    assert code == 0
    return plugin, traced


def test_the_traced_baseline_is_stored_and_only_a_changed_test_file_is_traced_again(tmp_path, monkeypatch):
    name = "mutation_fast_tiny_pkg"
    _tiny_project(tmp_path, name)
    monkeypatch.setattr(fast, "ROOT", tmp_path)
    monkeypatch.setattr(fast, "WORK", tmp_path / ".mutation" / "fast")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        plugin, traced = _baseline_session(tmp_path, name, monkeypatch)
        assert plugin.fresh == set()  # no stored baseline: no test is newer than it
        assert sorted(traced) == ["tests/test_a.py::test_double", "tests/test_b.py::test_nothing_of_the_module"]
        covered = {(str(tmp_path / name / "mod.py"), 1), (str(tmp_path / name / "mod.py"), 2)}
        assert plugin.coverage["tests/test_a.py::test_double"] == covered
        assert plugin.coverage["tests/test_b.py::test_nothing_of_the_module"] == set()

        again, traced = _baseline_session(tmp_path, name, monkeypatch)
        assert traced == [] and again.coverage == plugin.coverage  # read from disk, nothing traced

        (tmp_path / "tests" / "test_b.py").write_text(f"from {name}.mod import unused\n\n\n"
                                                      "def test_nothing_of_the_module():\n    assert unused(1) == 1\n")
        again, traced = _baseline_session(tmp_path, name, monkeypatch)
        assert traced == ["tests/test_b.py::test_nothing_of_the_module"]  # only the changed file's test
        assert again.fresh == {"tests/test_b.py::test_nothing_of_the_module"}
        assert again.coverage["tests/test_b.py::test_nothing_of_the_module"] == {
            (str(tmp_path / name / "mod.py"), 5), (str(tmp_path / name / "mod.py"), 6)}

        old_key = fast.baseline_key([f"{name}/mod.py"])
        (tmp_path / name / "mod.py").write_text("def double(x):\n    return x + x\n\n\ndef unused(x):\n    return x\n")
        assert fast.baseline_key([f"{name}/mod.py"]) != old_key  # an edited source: a new baseline file
        again, traced = _baseline_session(tmp_path, name, monkeypatch)
        assert sorted(traced) == ["tests/test_a.py::test_double", "tests/test_b.py::test_nothing_of_the_module"]
    finally:
        for key in [k for k in sys.modules if k.startswith(name)]:
            del sys.modules[key]


def test_a_table_of_functions_holds_the_same_objects_as_the_module_after_a_mutant():
    """A test weakens the grader with `[c for c in CHECKS if c is not DEC_13]`: after a mutant (or the null
    mutant) the table must hold the module's own function objects, or DEC_13 is never taken out and the
    test fails for the patching, not for the mutant."""
    name = "mutation_fast_sample_table"
    source = ("from dataclasses import dataclass\n\n\ndef one():\n    return 1\n\n\ndef two():\n    return 2\n\n\n"
              "@dataclass(frozen=True)\nclass Rule:\n    check: object\n\n\n"
              "CHECKS = [one, two]\nBY_NAME = {'one': one, 'pair': (one, two)}\nRULE = Rule(two)\n")
    with _sample_module(name, source) as module:
        fast.apply_source(name, source, module.__file__)  # the null mutant
        assert [c for c in module.CHECKS if c is not module.two] == [module.one]
        assert module.BY_NAME["one"] is module.one and module.BY_NAME["pair"][1] is module.two
        assert module.RULE.check is module.two
        fast.apply_source(name, source.replace("return 2", "return 3"), module.__file__)
        assert module.CHECKS[1] is module.two and module.CHECKS[1]() == 3


def test_a_survivor_run_again_runs_only_the_tests_of_files_new_or_changed_since_it_survived():
    plugin = types.SimpleNamespace(baseline_key="k1", test_shas={"tests/a.py": "a1", "tests/b.py": "b2", "tests/c.py": "c1"})
    covering = [_Item("tests/a.py::t1"), _Item("tests/b.py::t2"), _Item("tests/c.py::t3")]
    survived = {"outcome": "survived", "tests_run": {"key": "k1", "files": {"tests/a.py": "a1", "tests/b.py": "b1"}}}
    # a.py unchanged (passed already), b.py changed, c.py new since: b's and c's tests run
    assert [i.nodeid for i in fast.tests_not_yet_passed(plugin, survived, covering)] == ["tests/b.py::t2", "tests/c.py::t3"]
    assert fast.tests_run(plugin, covering) == {"key": "k1", "files": {"tests/a.py": "a1", "tests/b.py": "b2",
                                                                       "tests/c.py": "c1"}}
    # another baseline key (a source or a test helper changed), no record of what ran, or not a survivor: all
    for previous in ({**survived, "tests_run": {**survived["tests_run"], "key": "k0"}}, {"outcome": "survived"},
                     None, {**survived, "outcome": "incompetent"}):
        assert fast.tests_not_yet_passed(plugin, previous, covering) == covering


def test_tests_that_never_killed_run_grouped_by_test_file_cheapest_file_first_after_those_that_did():
    """A survivor runs every covering test: the never-killing ones grouped by file, so that each file's
    module fixtures are built once per group (first_failure). Those that killed keep their place in front."""
    mutant = next(m for m in fast.generate(SOURCE, "pkg/mod.py") if m.line == 9)
    durations = {"tests/a.py::t1": 0.1, "tests/b.py::t2": 0.2, "tests/a.py::t3": 0.3, "tests/b.py::killer": 5.0,
                 "tests/a.py::t4": 0.4}
    plugin = _plugin_with(durations, covering=set(durations), file="pkg/mod.py")
    plugin.history.add({"outcome": "killed", "file": "pkg/other.py", "line": 3, "killed_by": "tests/b.py::killer"})
    # the killer first; then b.py (0.2 s left in it) before a.py (0.1 + 0.3 + 0.4 s), each fastest first
    assert [i.nodeid for i in fast.covering_tests(plugin, mutant)] == [
        "tests/b.py::killer", "tests/b.py::t2", "tests/a.py::t1", "tests/a.py::t3", "tests/a.py::t4"]
    plugin.fresh = {"tests/a.py::t4"}  # new since the stored baseline: in front, as before
    assert [i.nodeid for i in fast.covering_tests(plugin, mutant)][:2] == ["tests/a.py::t4", "tests/b.py::killer"]


def test_a_childs_tests_share_a_module_fixture_while_they_run_in_a_row_and_stop_at_the_first_failure(tmp_path):
    """first_failure passes each test the next as pytest's nextitem: three tests of one file in a row build
    its module fixture once (the child used to tear down to the session after every test: three builds),
    a test of another file in between ends it (built again after), and the first failure stops the run."""
    import pytest

    log = tmp_path / "setups.txt"
    (tmp_path / "test_m.py").write_text(
        "import pytest\n\n\n@pytest.fixture(scope='module')\ndef built():\n"
        f"    with open({str(log)!r}, 'a') as f:\n        f.write('m\\n')\n    return 1\n\n\n"
        "def test_1(built):\n    assert built\n\n\ndef test_2(built):\n    assert built\n\n\n"
        "def test_3(built):\n    assert built\n\n\ndef test_fails(built):\n    assert not built\n")
    (tmp_path / "test_other.py").write_text("def test_o():\n    assert True\n")
    outcomes = {}

    class Runner:
        def pytest_runtestloop(self, session):
            from _pytest.runner import runtestprotocol

            items = {item.name: item for item in session.items}
            for label, names in (("in a row", ["test_1", "test_2", "test_3"]),
                                 ("interleaved", ["test_1", "test_o", "test_2", "test_3"]),
                                 ("failing", ["test_1", "test_fails", "test_2"])):
                log.write_text("")
                failed = fast.first_failure(session, runtestprotocol, [items[n] for n in names])
                outcomes[label] = (failed, log.read_text().count("m"))
            return True

    code = pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly", "--rootdir",
                        str(tmp_path), str(tmp_path)], plugins=[Runner()])
    assert code == 0
    assert outcomes == {"in a row": (None, 1), "interleaved": (None, 2),
                        "failing": ("test_m.py::test_fails", 1)}


def test_a_child_is_past_its_limit_by_the_cpu_it_used_not_by_time_it_waited_for_the_cpu():
    """On a loaded machine a niced child may wait minutes for a core: the wall clock made such a mutant a
    timeout, counted killed (grading/evaluator.py:292's continue -> break, 315 s for 71 tests, was one). A
    child is now past its limit by its CPU seconds; one using none (blocked) at WALL_BACKSTOP times the limit."""
    import subprocess
    import time

    sleeping = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    spinning = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        deadline = time.monotonic() + 20
        while (fast.child_cpu_seconds(spinning.pid) or 0.0) <= 0.3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert fast.child_cpu_seconds(sleeping.pid) < 0.3
        # 2 s on the wall clock past a 0.3 s limit: only the child that computed is over it
        assert fast.over_limit(sleeping.pid, elapsed=2.0, limit=0.3) is False
        assert fast.over_limit(spinning.pid, elapsed=2.0, limit=0.3) is True
        # a child that uses no CPU still stops, at WALL_BACKSTOP times its limit
        assert fast.over_limit(sleeping.pid, elapsed=0.3 * fast.WALL_BACKSTOP + 0.1, limit=0.3) is True
    finally:
        for process in (sleeping, spinning):
            process.kill()
            process.wait()
    assert fast.child_cpu_seconds(sleeping.pid) is None  # gone: unreadable, the wall clock decides
    assert fast.over_limit(sleeping.pid, elapsed=1.0, limit=0.3) is True


LOOP_SOURCE = '''def occurrences(text, piece):
    found, at = 0, text.find(piece)
    while at != -1:
        found += 1
        at = text.find(piece, at + 1)
    return found
'''


def test_a_test_that_loops_forever_is_a_timeout_after_its_own_limit_not_the_whole_lists(tmp_path):
    """grading/secrets.py's `while at != -1` -> `while at == -1` loops forever in the first test that scans a
    text without the piece: the child was stopped only past the limit of its whole test list (233 CPU-s there,
    ~380 s a mutant). Each test now runs under its own limit (floor + factor x its unmutated seconds): here a
    1.1 CPU-s limit for the looping test, against 1 + 6 x 20 CPU-s for the list and a 60 CPU-s bound below
    which the old runner's child never stops."""
    import os
    import signal
    import time

    import pytest

    (tmp_path / "loopmod.py").write_text(LOOP_SOURCE)
    (tmp_path / "test_loop.py").write_text(
        "import loopmod\n\n\ndef test_absent():\n    assert loopmod.occurrences('bbb', 'a') == 0\n\n\n"
        "def test_present():\n    assert loopmod.occurrences('abab', 'a') == 2\n")
    mutant = next(m for m in fast.generate(LOOP_SOURCE, "loopmod.py")
                  if m.operator == "core/ReplaceComparisonOperator_NotEq_Eq")
    assert mutant.mutant == "while at == -1:"
    plugin = types.SimpleNamespace(config={"timeout_floor": 1.0, "timeout_factor": 6.0},
                                   durations={"test_loop.py::test_absent": 0.01, "test_loop.py::test_present": 20.0})
    outcomes = {}

    class Runner:
        def pytest_runtestloop(self, session):
            from _pytest.runner import runtestprotocol

            tests = sorted(session.items, key=lambda item: item.name)  # test_absent (the loop) first
            whole = fast._time_limit(plugin, tests)
            pid, read_fd = fast._fork_child(plugin, session, runtestprotocol, mutant, tests)
            while True:
                waited, status = os.waitpid(pid, os.WNOHANG)
                if waited:
                    message = fast._read_all(read_fd)
                    outcomes["child"] = (fast.child_outcome(os.waitstatus_to_exitcode(status)), message["killed_by"])
                    break
                if fast.over_limit(pid, 0.0, 60.0):
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    os.close(read_fd)
                    outcomes["child"] = ("still running past 60 CPU-s", whole)
                    break
                time.sleep(0.05)
            return True

    try:
        code = pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly", "--rootdir",
                            str(tmp_path), str(tmp_path)], plugins=[Runner()])
    finally:
        sys.modules.pop("loopmod", None)
        sys.modules.pop("test_loop", None)
    assert code == 0
    assert outcomes == {"child": ("timeout", "timeout 1 CPU-s in test_loop.py::test_absent")}
    assert fast._time_limit(plugin, [types.SimpleNamespace(nodeid=n) for n in plugin.durations]) > 100


def test_a_grading_modules_new_body_registers_its_rules_again_once():
    """A grading module registers its rules at import (experiment.grading.registry refuses an id registered twice):
    the null mutant and every mutant run the module's body again, which must replace its registrations, not fail."""
    from experiment.grading import registry

    name = "experiment.grading.mutation_fast_sample_rules"
    source = ("from experiment.grading.registry import implements, rule\n\n\n"
              "@rule('ZZ-1', 'record', 'invalid', 'a sample rule')\ndef ZZ_1(ctx):\n    return []\n\n\n"
              "@implements('ZZ-1')\ndef zz_1_again(ctx):\n    return []\n")
    try:
        with _sample_module(name, source) as module:
            fast.apply_source(name, source, module.__file__)  # the null mutant
            fast.apply_source(name, source.replace("return []\n\n\n@implements", "return [1]\n\n\n@implements"),
                              module.__file__)
            assert registry._declared["ZZ-1"].checks == ("mutation_fast_sample_rules.ZZ_1",)
            assert registry._further["ZZ-1"] == ["mutation_fast_sample_rules.zz_1_again"]
            assert module.ZZ_1(None) == [1]
    finally:
        registry._declared.pop("ZZ-1", None)
        registry._further.pop("ZZ-1", None)
