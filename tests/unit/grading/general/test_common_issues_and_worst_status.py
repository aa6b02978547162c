"""The grader's common parts (experiment/grading/common.py): issues naming the first bad field of a
typed record, and the worst-status rule. Expected values are literals."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
from pydantic import BaseModel

from experiment.grading import common
from experiment.grading.common import Issue, model_issues
from experiment.grading.evidence import EvidenceAccess


class _Three(BaseModel):
    a: int
    b: int
    c: int


def test_a_record_with_three_bad_fields_names_the_first_and_counts_two_more():
    issues = model_issues(_Three, {"a": "x", "b": "y", "c": "z"}, "EVAL-1", "invalid", "record")
    assert len(issues) == 1
    issue = issues[0]
    assert (issue.rule, issue.status) == ("EVAL-1", "invalid")
    assert issue.message.startswith("record.a: ")
    assert issue.message.endswith(" (and 2 more)")


def test_a_record_with_one_bad_field_says_no_more():
    (issue,) = model_issues(_Three, {"a": 1, "b": 2, "c": "z"}, "EVAL-1", "invalid", "record")
    assert issue.message.startswith("record.c: ") and "more)" not in issue.message


def test_a_fitting_record_has_no_issue():
    assert model_issues(_Three, {"a": 1, "b": 2, "c": 3}, "EVAL-1", "invalid", "record") == []


def test_an_issue_sentence_ends_with_one_full_stop():
    assert Issue("DEC-1", "invalid", " bad thing ").sentence() == "DEC-1: bad thing."
    assert Issue("DEC-1", "invalid", "bad thing.").sentence() == "DEC-1: bad thing."


# ---------------------------------------------------------------- statuses, grades, the context


def test_a_categorys_status_is_its_worst_issue_invalid_over_unverified_over_unknown():
    def status(*statuses):
        return common.category_status([Issue("X-1", s, "m") for s in statuses])

    assert status() == "verified"
    assert status("unknown") == "unknown"
    assert status("unknown", "unverified") == status("unverified", "unknown") == "unverified"
    assert status("unverified", "invalid") == status("invalid", "unverified") == "invalid"
    assert status("unknown", "invalid", "unknown") == "invalid"


def test_a_grade_is_ok_only_without_problems_and_failing_categories():
    def grade(statuses, problems=()):
        return common.Grade({f"c{i}": common.CategoryGrade(f"c{i}", s) for i, s in enumerate(statuses)}, list(problems))

    assert grade(["verified", "not_applicable"]).ok
    for failing in ("invalid", "unverified", "unknown"):
        assert not grade(["verified", failing]).ok
        assert common.CategoryGrade("c", failing).failing
    assert not common.CategoryGrade("c", "not_applicable").failing
    assert not grade(["verified"], ["GEN-2: bad."]).ok


def test_a_grade_as_stored_in_result_grade():
    category = common.CategoryGrade("decision", "invalid", [Issue("DEC-1", "invalid", "x")])
    noted = common.CategoryGrade("correctness", "verified", notes=["graded against a revision"])
    grade = common.Grade({"decision": category, "correctness": noted}, ["GEN-2: y."], spec_source="specs/a.json")
    assert grade.record() == {
        "version": 1, "spec_source": "specs/a.json",
        "categories": {"decision": {"status": "invalid", "issues": ["DEC-1: x."]},
                       "correctness": {"status": "verified", "issues": [], "notes": ["graded against a revision"]}},
        "problems": ["GEN-2: y."]}
    assert grade.to_dict()["problems"] is not grade.problems  # a copy


def _ctx(result=None, plan=None, spec_model=None):
    result = result or {}
    return common.GradeContext(result=result, evidence=EvidenceAccess(result), plan=plan, spec_model=spec_model)


def test_gate_applicability_and_reason_come_from_the_plan():
    gates = {"decision": SimpleNamespace(applicable=True, reason="a decision_rule")}

    def gate(name):
        return gates[name]  # a KeyError for a gate the plan does not have

    ctx = _ctx(plan=SimpleNamespace(gate=gate))
    assert ctx.gate_applicable("decision") is True and ctx.gate_reason("decision") == "a decision_rule"
    assert ctx.gate_applicable("other") is None and ctx.gate_reason("other") == ""
    assert _ctx().gate_applicable("decision") is None
    assert _ctx().gate_reason("decision") == "no spec to grade against"
    assert _ctx({"verdict": "x"}).section("verdict") == "x"


def test_finished_measured_and_trained():
    assert [_ctx({"status": s}).finished for s in ("running", "succeeded", "failed", None)] == [False, True, True, False]
    assert _ctx({"verdict": "supported"}).measured and _ctx({"verdict": "refuted"}).measured
    assert _ctx({"verdict": "inconclusive", "outcome_reason": "tie"}).measured
    assert not _ctx({"verdict": "inconclusive", "outcome_reason": "incomplete_execution"}).measured
    assert not _ctx({"verdict": None}).measured and not _ctx({"verdict": "maybe"}).measured
    assert _ctx({"completed_arms": ["T"]}).trained and not _ctx({"completed_arms": []}).trained
    assert not _ctx({}).trained


def test_generation_settings_need_a_typed_spec():
    assert _ctx().generation_settings is None
    lacking = SimpleNamespace(to_dict=lambda: {"generation": {"instruction": "x"}})
    assert _ctx(spec_model=lacking).generation_settings is None  # a block without its numbers: none, no traceback


@pytest.mark.parametrize("name, rule", [("EVAL_2", "EVAL-2"), ("EVAL_9_values", "EVAL-9"), ("DEC_14", "DEC-14"),
                                        ("FEAS_12", "FEAS-12")])
def test_a_checks_rule_is_read_from_its_name(name, rule):
    assert common.rule_of_check(name) == rule


@pytest.mark.parametrize("name", ["eval_2", "EVAL2", "EVAL_", "grade", "EVAL_2x", "xEVAL_2"])
def test_a_check_not_named_after_a_rule_is_refused(name):
    with pytest.raises(ValueError, match="is not named after a rule"):
        common.rule_of_check(name)


@pytest.mark.parametrize("error", [AttributeError, KeyError, TypeError, ValueError, IndexError, ZeroDivisionError])
def test_a_check_that_cannot_be_applied_is_invalid_under_its_rule(error):
    def EVAL_9_values(ctx):
        raise error("x" * 100)

    (issue,) = common.applied(EVAL_9_values, _ctx())
    assert (issue.rule, issue.status) == ("EVAL-9", "invalid")
    assert issue.message.startswith(f"the record has an unexpected shape, so EVAL-9 cannot be applied ({error.__name__}: ")
    assert issue.message.endswith("...)") and len(issue.message.split(": ", 1)[1]) == 80 + 1  # cut to 80, then ")"


def test_other_errors_are_not_hidden():
    def EVAL_2(ctx):
        raise RuntimeError("bug")

    with pytest.raises(RuntimeError):
        common.applied(EVAL_2, _ctx())


def test_run_checks_collects_every_checks_issues_in_order():
    def A_1(ctx):
        return [Issue("A-1", "unknown", "a")]

    def A_2(ctx):
        raise KeyError("k")

    def A_3(ctx):
        return []

    grade = common.run_checks("cat", [A_1, A_2, A_3], _ctx())
    assert (grade.name, grade.status) == ("cat", "invalid")
    assert [(i.rule, i.status) for i in grade.issues] == [("A-1", "unknown"), ("A-2", "invalid")]


def test_numbers_are_finite_ints_or_floats_never_booleans():
    assert all(common.is_number(v) for v in (0, -3, 1.5, 0.0))
    assert not any(common.is_number(v) for v in (True, False, math.inf, -math.inf, math.nan, "1", None))
    assert common.close(1.0, 1.0 + 5e-10) and common.close(0, 5e-10) and not common.close(1.0, 1.0 + 2e-9 * 2)
    assert not common.close(1.0, "1.0") and not common.close(True, 1)
    assert common.close(100.0, 101.0, tol=0.01) and not common.close(100.0, 102.5, tol=0.01)


def test_as_dict_as_list_and_short():
    assert common.as_dict({"a": 1}) == {"a": 1} and common.as_dict([1]) == {} and common.as_dict(None) == {}
    assert common.as_list([1]) == [1] and common.as_list({"a": 1}) == [] and common.as_list("ab") == []
    assert common.short("x" * 58) == repr("x" * 58)  # 60 characters with the quotes: as it is
    assert common.short("x" * 59) == repr("x" * 59)[:57] + "..."  # 61: cut to 60
    assert len(common.short("x" * 59)) == 60
    assert common.short([1, 2], limit=5) == "[1, 2]"[:2] + "..."


def test_a_record_with_two_bad_fields_counts_one_more():
    (issue,) = model_issues(_Three, {"a": 1, "b": "y", "c": "z"}, "EVAL-1", "invalid", "record")
    assert issue.message.startswith("record.b: ") and issue.message.endswith(" (and 1 more)")


@pytest.mark.parametrize("reason", ["insufficient_evidence", "mixed_criteria", "tie", "aborted", None])
def test_an_inconclusive_verdict_for_any_reason_but_incomplete_execution_was_measured(reason):
    # the three-way reasons all sort after incomplete_execution; a reason outside them sorts before it, or is absent
    assert _ctx({"verdict": "inconclusive", "outcome_reason": reason}).measured
