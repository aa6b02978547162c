"""The grader's rule table (experiment/grading/rules.py) against the code and against docs/contract-rules.md.

(a) every rule id the grader's source can emit is a row, and every check function is a row's; (b) the
table and docs/contract-rules.md list the same ids with the same categories and the same statuses;
(c) the statuses the grader is shown to give (tests/unit/test_grading_rules.py's cases, a run-dir finding
graded here) are the table's. Also: a check or a category that cannot be applied to a malformed record
is cited under a rule id of the table, not under its function's or category's name.
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
from pathlib import Path

import pytest
from rule_cases import CASES, SPEC_CASES, spec_dict
from records import build_gs1_run

from experiment.grading import grade as grade_module
from experiment.grading import grade_record, run_dir
from experiment.grading.common import CATEGORIES, INVALID, applied, rule_of_check
from experiment.grading.reproduce import CATEGORY_OF as REPRODUCED_IN
from experiment.grading import registry
from experiment.grading.rules import BY_ID, PROBLEM, RECORD, RULES, RUN_DIR_RULES, SHAPE_RULES, markdown

ROOT = Path(__file__).resolve().parents[2]
GRADING = ROOT / "experiment" / "grading"
DOCS = ROOT / "docs" / "contract-rules.md"
CATEGORY_MODULES = ("evaluator", "decision", "restoration", "correctness", "feasibility", "generation_audit")
RECORD_MODULES = ("general", "activation", "traces", "spec_anchor")
STATUS = {"INVALID": "invalid", "UNVERIFIED": "unverified", "UNKNOWN": "unknown"}
# REST-6 and REST-10 take their statuses from (status, problem) helpers (restoration._response_problems,
# _check_problems), which the literal scan below does not attribute to the rule.
STATUSES_FROM_HELPERS = {"REST-6", "REST-10"}


def _sources() -> dict[str, str]:
    """Each grading module's source by its name under experiment/grading (`reproduce/offline` for a subpackage's)."""
    return {path.relative_to(GRADING).with_suffix("").as_posix(): path.read_text(encoding="utf-8")
            for path in sorted(GRADING.rglob("*.py"))}


def _emitted() -> dict[str, set[str]]:
    """rule id -> statuses, from the grader's source: Issue("X-N", STATUS ...), model_issues(..., "X-N", STATUS ...),
    the spec and event sentences grade.py puts in problems ("X-N: ...", "SPEC: ..."), and the run-dir layer's
    check ids (self.problem("a.b", ...), Problem("a.b", ...), and "<group>.shape" for each check group)."""
    emitted: dict[str, set[str]] = {}
    for module, text in _sources().items():
        for rule, status in re.findall(r'Issue\(\s*"([A-Z]+-\d+)",\s*(\w+)', text):
            emitted.setdefault(rule, set()).update({STATUS[status]} if status in STATUS else set())
        for rule, status in re.findall(r'model_issues\([^,]+,[^,]+,\s*"([A-Z]+-\d+)",\s*([A-Z]+)', text):
            emitted.setdefault(rule, set()).add(STATUS[status])
        if module == "grade":
            for rule in re.findall(r'(?:problems\.append\(|\[)f?"([A-Z]+(?:-\d+)?): ', text):
                emitted.setdefault(rule, set()).add(PROBLEM)
            for rule in re.findall(r'problems\.append\(f"(\w+): \{err\}', text):
                emitted.setdefault(rule, set()).add(PROBLEM)
        if module.startswith("run_dir/"):  # the run-dir layer's package
            for check in re.findall(r'(?:self\.problem|Problem|self\.restated)\(\s*"([a-z_]+\.[a-z_0-9]+)"', text):
                emitted.setdefault(check, set()).add(PROBLEM)
            for group in re.findall(r'\("([a-z_]+)", self\.check_\w+\)', text):
                emitted.setdefault(f"{group}.shape", set()).add(PROBLEM)
    return emitted


def test_the_scan_finds_the_ids_the_grader_emits():
    emitted = _emitted()
    # one of each kind of emission the scan reads (so a broken pattern does not pass the tests below vacuously)
    assert {"EVAL-2", "FEAS-1", "SPEC-1", "SPEC-2", "SPEC", "run", "EVID-8", "evaluation.evaluator_id",
            "decision.selection", "events.shape", "secrets.shape"} <= set(emitted)
    assert emitted["SPEC-2"] == {PROBLEM} and emitted["FEAS-1"] == {"unknown"} and emitted["run"] == {PROBLEM}


def test_every_id_the_grader_emits_is_a_row_of_the_table():
    missing = sorted(set(_emitted()) - set(BY_ID))
    assert not missing, f"emitted but not in experiment/grading/rules.py: {missing}"


def test_every_row_with_a_check_is_emitted_and_every_row_without_one_is_not():
    emitted = _emitted()
    assert sorted(rule.id for rule in RULES if rule.checks and rule.id not in emitted) == []
    assert sorted(rule.id for rule in RULES if not rule.checks and rule.id in emitted) == []
    assert all(bool(rule.checks) == bool(rule.severity) for rule in RULES)


def test_the_statuses_in_the_table_are_the_statuses_the_code_gives():
    emitted = _emitted()
    for rule in RULES:
        if rule.id not in emitted:
            continue
        if rule.id in STATUSES_FROM_HELPERS:
            assert emitted[rule.id] <= set(rule.severity), rule.id
        else:
            assert set(rule.severity) == emitted[rule.id], (rule.id, rule.severity, emitted[rule.id])


def _module_of(name: str) -> str:
    return name.split(".", 1)[0]


def test_the_category_of_a_row_is_where_its_checks_report():
    for rule in RULES:
        if rule in RUN_DIR_RULES:  # the run-dir layer's own method, and the restated rule's check where it runs it
            assert {_module_of(check) for check in rule.checks} - {"run_dir"} <= \
                {_module_of(check) for check in BY_ID[rule.restates].checks}, rule.id
            continue
        modules = {_module_of(check) for check in rule.checks}
        if not modules:  # enforced by the run, not graded
            continue
        if rule.category == RECORD:
            assert not modules & set(CATEGORY_MODULES), (rule.id, modules)
        elif modules == {"reproduce"}:  # re-execution (--reproduce): its findings join the category its row names
            assert REPRODUCED_IN[rule.id] == rule.category, rule.id
        else:
            assert modules == {rule.category}, (rule.id, modules)


def _resolve(check: str):
    """The function a row's check names: the longest importable module prefix, then attributes."""
    parts = check.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            target = importlib.import_module("experiment.grading." + ".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for part in parts[cut:]:
            target = getattr(target, part)
        return target
    raise AssertionError(f"no grading module for {check}")


def test_every_check_a_row_names_exists():
    for rule in RULES:
        for check in rule.checks:
            assert callable(_resolve(check)), (rule.id, check)


def test_the_rows_are_the_registrations_at_the_implementations():
    """A row with checks was registered by its check functions (experiment.grading.registry), not written in a
    table: each check names a function of a grading module, and a rule is one row."""
    assert len(BY_ID) == len(RULES)
    for rule in RULES:
        for check in rule.checks:
            target = _resolve(check)
            assert registry.where(getattr(target, "__func__", target)) == check, (rule.id, check)


def test_a_rule_is_registered_once(monkeypatch):
    monkeypatch.setattr(registry, "_declared", dict(registry._declared))
    with pytest.raises(ValueError, match="EVAL-2 is registered twice"):
        registry.rule("EVAL-2", "evaluator", "invalid", "a second EVAL-2")(_resolve("evaluator.EVAL_3"))
    with pytest.raises(ValueError, match="unknown severity"):
        registry.rule("UNDECLARED-99", "evaluator", "wrong", "a rule with an unknown status")(_resolve("evaluator.EVAL_3"))
    with pytest.raises(ValueError, match="category"):
        registry.declare("UNDECLARED-98", "nowhere", "a rule of no category")


def test_a_further_check_of_an_undeclared_rule_is_refused(monkeypatch):
    monkeypatch.setattr(registry, "_further", {**registry._further, "UNDECLARED-97": ["evaluator.EVAL_3"]})
    with pytest.raises(ValueError, match="UNDECLARED-97"):
        registry.table()


def test_every_check_function_is_listed_under_the_rule_it_is_named_after():
    """The category modules' CHECKS and every function named after a rule (RULE_N, RULE_N_what)."""
    for module_name in CATEGORY_MODULES + RECORD_MODULES:
        module = importlib.import_module(f"experiment.grading.{module_name}")
        named = [name for name, value in inspect.getmembers(module, inspect.isfunction)
                 if value.__module__ == module.__name__ and re.match(r"^[A-Z]+_\d+", name)]
        listed = [check.__name__ for check in getattr(module, "CHECKS", []) if check.__module__ == module.__name__]
        assert set(listed) <= set(named), module_name
        for name in named:
            assert f"{module_name}.{name}" in BY_ID[rule_of_check(name)].checks, (module_name, name)


# ---- (b) docs/contract-rules.md


def _documented() -> dict[str, tuple[str, set[str]]]:
    """id -> (category, the status words in bold on its line). A section heading that says "(<name> category)"
    gives its rules that category; every other section's rules are record-level."""
    documented, category = {}, RECORD
    for line in DOCS.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            named = re.search(r"\((\w+) category\)", line)
            category = named.group(1) if named else RECORD
            continue
        match = re.match(r"- (?:\*\*([A-Z]+(?:-\d+)?)\*\*|`([a-z_]+(?:\.[a-z_0-9]+)?)`) ", line)
        if match:
            rule = match.group(1) or match.group(2)
            assert rule not in documented, f"{rule} is documented twice"
            documented[rule] = (category, set(re.findall(r"\*\*(invalid|unverified|unknown)\*\*", line)))
    return documented


def test_the_docs_and_the_table_list_the_same_rules_in_the_same_categories():
    documented = _documented()
    assert sorted(set(BY_ID) - set(documented)) == [], "in the table, not in docs/contract-rules.md"
    assert sorted(set(documented) - set(BY_ID)) == [], "in docs/contract-rules.md, not in the table"
    assert {rule: category for rule, (category, _) in documented.items()} == \
        {rule.id: rule.category for rule in RULES}
    assert {category for category, _ in documented.values()} == {*CATEGORIES, RECORD}


def test_the_docs_name_the_statuses_the_table_gives():
    documented = _documented()
    for rule in RULES:
        if rule in RUN_DIR_RULES:
            continue
        assert documented[rule.id][1] == set(rule.severity) - {PROBLEM}, (rule.id, documented[rule.id][1],
                                                                           rule.severity)


def test_the_docs_run_dir_list_is_the_generated_one():
    """docs/contract-rules.md's run-directory checks are `python -m experiment.grading.rules --markdown`'s output."""
    text = DOCS.read_text(encoding="utf-8")
    marker = "<!-- generated: python -m experiment.grading.rules --markdown -->\n"
    assert marker in text
    assert text.split(marker, 1)[1] == markdown()


def test_the_docs_say_which_rule_each_run_dir_check_restates():
    lines = {re.match(r"- `([^`]+)`", line).group(1): line
             for line in DOCS.read_text(encoding="utf-8").splitlines() if re.match(r"- `[^`]+` ", line)}
    for rule in RUN_DIR_RULES:
        assert f"({rule.restates})" in lines[rule.id], rule.id
        assert rule.restates in BY_ID and BY_ID[rule.restates] not in RUN_DIR_RULES


# ---- (c) what the grader gives for sample findings


def _graded_findings(graded) -> list[tuple[str, str, str]]:
    """(category or RECORD, rule id, status or PROBLEM) of every finding of a grade."""
    findings = [(name, issue.rule, issue.status) for name, category in graded.categories.items()
                for issue in category.issues]
    return findings + [(RECORD, problem.split(":", 1)[0], PROBLEM) for problem in graded.problems]


def _assert_as_in_the_table(findings):
    for category, rule, status in findings:
        if rule == "SPEC-1":  # record-level, and said in every category it turns unverified
            assert status in BY_ID[rule].severity
            continue
        assert BY_ID[rule].category == category, (rule, category)
        if status != PROBLEM:
            assert status in BY_ID[rule].severity, (rule, status, BY_ID[rule].severity)


@pytest.mark.parametrize("kind,edit,category,status,rule", CASES + SPEC_CASES,
                         ids=[f"{c[4]}-{c[3]}-{i}" for i, c in enumerate(CASES + SPEC_CASES)])
def test_every_finding_of_a_broken_record_has_the_tables_category_and_status(graded_record, kind, edit, category,
                                                                             status, rule):
    """Each record of tests/unit/test_grading_rules.py with one rule broken (there: that category gets that
    status and cites that rule), graded: every finding it gives, of any rule, is as the table says."""
    result, _ = graded_record(kind)
    spec = spec_dict(kind) if category == "correctness" else None
    if (kind, edit, category, status, rule) in SPEC_CASES:
        spec = spec_dict(kind, edit)
    else:
        edit(result)
    findings = _graded_findings(grade_record(result, spec=spec))
    assert (category, rule) in {(c, r) for c, r, _ in findings}
    _assert_as_in_the_table(findings)


def test_a_run_dir_finding_is_a_problem_of_the_grade_under_its_table_id(tmp_path):
    """One grader: a run directory is graded by every rule a bare result.json gets (the same findings, none
    dropped) plus its files' checks, each a problem under its row's id."""
    store = build_gs1_run(tmp_path / "runs")
    result = json.loads((store.run_dir / "result.json").read_text())
    clean = grade_record(result, run_dir=store.run_dir).problems
    result["ci"] = [result["ci"][0] - 0.25, result["ci"][1]]
    (store.run_dir / "result.json").write_text(json.dumps(result))
    bare, with_files = grade_record(result), grade_record(result, run_dir=store.run_dir)
    assert set(_graded_findings(bare)) <= set(_graded_findings(with_files))
    new = [p for p in with_files.problems if p not in clean]
    assert any(p.startswith("decision.ci: ") for p in new), new
    for problem in new:
        rule = problem.split(":", 1)[0]
        assert rule in BY_ID and BY_ID[rule].category == RECORD, problem
    assert BY_ID["decision.ci"].severity == (PROBLEM,)


# ---- ids of findings about malformed records


def test_a_check_that_cannot_be_applied_is_cited_under_the_rule_it_implements():
    def EVAL_9_values(ctx):  # noqa: N802 - named as the grader names its check functions
        raise TypeError("a list where an object belongs")

    issues = applied(EVAL_9_values, None)
    assert [(issue.rule, issue.status) for issue in issues] == [("EVAL-9", INVALID)]


def test_a_category_too_malformed_for_its_own_guards_is_cited_under_its_shape_rule(monkeypatch, graded_record):
    result, _ = graded_record("paired")
    for category in CATEGORIES:
        def malformed(ctx):
            raise KeyError("a missing key")

        monkeypatch.setattr(grade_module.CATEGORY_MODULES[category], "grade", malformed)
        graded = grade_record(result).categories[category]
        assert graded.status == INVALID
        assert [issue.rule for issue in graded.issues] == [SHAPE_RULES[category]]
        assert BY_ID[SHAPE_RULES[category]].category == category


def test_the_shape_fallback_of_a_run_dir_check_group_is_a_row(tmp_path, monkeypatch):
    store = build_gs1_run(tmp_path / "runs")

    def malformed(self):
        raise TypeError("a list where an object belongs")

    monkeypatch.setattr(run_dir.Validator, "check_feasibility", malformed)
    problems = run_dir.validate_run(store.run_dir)
    assert [p.check for p in problems if p.check.endswith(".shape")] == ["feasibility.shape"]
    assert "feasibility.shape" in BY_ID


def test_issue_rule_ids_of_the_table_are_well_formed():
    for rule in RULES:
        assert re.fullmatch(r"[A-Z]+(-\d+)?|[a-z_]+(\.[a-z_0-9]+)?", rule.id), rule.id
        assert rule.description and "\n" not in rule.description, rule.id
