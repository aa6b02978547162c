"""The mutation tool's own rules (tools/mutation.py): scope, annotation equivalents, equivalents file."""

from __future__ import annotations

import importlib.util
import sys
import tomllib
from pathlib import Path

# tools/ is a repository folder, not an installed package: load the module from its file
_PATH = Path(__file__).resolve().parents[2] / "tools" / "mutation.py"
_SPEC = importlib.util.spec_from_file_location("mutation_tool_under_test", _PATH)
mutation = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = mutation  # dataclasses look their module up there
_SPEC.loader.exec_module(mutation)
CONFIG, EQUIVALENTS = mutation.CONFIG, mutation.EQUIVALENTS
_diff_line, _equivalent_reason = mutation._diff_line, mutation._equivalent_reason
annotation_spans, in_annotation = mutation.annotation_spans, mutation.in_annotation
load_config, scope_lines = mutation.load_config, mutation.scope_lines

SOURCE = '''from __future__ import annotations

CAP = 10 * 1024
OTHER = 3


def kept(x: int | None) -> int | None:
    return x


class Store:
    def add(self, y):
        return y > CAP


def dropped():
    return 1 + 1
'''


def test_scope_lines_cover_named_functions_methods_and_constants():
    lines = scope_lines(SOURCE, ["kept", "add", "CAP"])
    assert 3 in lines and 4 not in lines  # CAP, not OTHER
    assert {7, 8} <= lines  # kept
    assert {12, 13} <= lines and 11 not in lines  # the method, not its class line
    assert not {16, 17} & lines  # dropped


def test_annotation_spans_only_with_postponed_annotations():
    spans = annotation_spans(SOURCE)
    assert in_annotation(spans, (7, 16), (7, 17))  # the "|" of "int | None" in the argument
    assert in_annotation(spans, (7, 28), (7, 29))  # ... and of the return annotation
    assert not in_annotation(spans, (13, 17), (13, 18))  # ">" in a body
    assert annotation_spans(SOURCE.replace("from __future__ import annotations\n", "")) == []


def test_equivalents_match_file_operator_code_and_mutant():
    entries = [{"file": "a.py", "operator": "core/X_.*", "code": "x = 1", "mutant": "x = 2", "why": "w"}]
    assert _equivalent_reason(entries, "a.py", "core/X_Y", "x = 1", "x = 2") == "w"
    assert _equivalent_reason(entries, "a.py", "core/X_Y", "x = 1", "x = 0") is None
    assert _equivalent_reason(entries, "b.py", "core/X_Y", "x = 1", "x = 2") is None
    assert _equivalent_reason(entries, "a.py", "core/Z", "x = 1", "x = 2") is None
    no_mutant = [{k: v for k, v in entries[0].items() if k != "mutant"}]
    assert _equivalent_reason(no_mutant, "a.py", "core/X_Y", "x = 1", "anything") == "w"


def test_diff_lines():
    diff = "--- a\n+++ b\n@@ -1 +1 @@\n-    x = 1\n+    x = 2\n"
    assert _diff_line(diff, "-") == "x = 1" and _diff_line(diff, "+") == "x = 2"
    assert _diff_line(None, "+") == ""


def test_configuration_and_equivalents_file_are_well_formed():
    defaults, modules = load_config()
    assert defaults["timeout"] > 0
    names = [m.name for m in modules]
    assert len(names) == len(set(names))
    assert "grading" in names and "store_evidence" in names
    root = CONFIG.parent.parent
    for module in modules:
        assert module.tests
        if module.name != "grading":
            assert (root / module.path).exists(), module.path
    for entry in tomllib.loads(EQUIVALENTS.read_text()).get("equivalent", []):
        assert {"file", "code", "why"} <= set(entry) and entry["why"].strip()
        assert (root / entry["file"]).exists()
        assert entry["code"].strip() in (root / entry["file"]).read_text()


def test_tests_named_after_the_mutated_file_run_first_in_their_given_order():
    tests = ["tests/unit/grading/general/test_common_issues_and_worst_status.py", "tests/unit/test_grading_rules.py",
             "tests/unit/grading/grade/test_predicted_grades.py", "tests/unit/test_grading_tamper.py"]
    ordered = mutation.tests_first_for(Path("/tree/experiment/grading/predict.py"), tests)
    assert ordered == ["tests/unit/grading/grade/test_predicted_grades.py",
                       "tests/unit/grading/general/test_common_issues_and_worst_status.py",
                       "tests/unit/test_grading_rules.py", "tests/unit/test_grading_tamper.py"]
    assert mutation.tests_first_for(Path("/tree/experiment/grading/__init__.py"), tests) == tests


def test_a_module_leaves_out_the_files_it_excludes(tmp_path):
    package = tmp_path / "pkg"
    (package / "inner").mkdir(parents=True)
    for name in ("a.py", "service.py", "inner/b.py", "inner/service.py"):
        (package / name).write_text("X = 1\n")
    module = mutation.Module(name="pkg", path="pkg", tests=["t.py"], exclude=["pkg/service.py"])
    assert [f.relative_to(tmp_path).as_posix() for f in mutation.module_files(tmp_path, module)] == [
        "pkg/a.py", "pkg/inner/b.py", "pkg/inner/service.py"]
    every = mutation.Module(name="pkg", path="pkg", tests=["t.py"])
    assert len(mutation.module_files(tmp_path, every)) == 4
    (_, modules) = load_config()
    (reproduce,) = [m for m in modules if m.name == "grading_reproduce"]
    assert "experiment/grading/reproduce/service.py" in reproduce.exclude
    assert all(f.name != "service.py" for f in mutation.module_files(CONFIG.parent.parent, reproduce))
