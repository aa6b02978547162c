"""The grader's common parts (experiment/grading/common.py): issues naming the first bad field of a
typed record, and the worst-status rule. Expected values are literals."""

from __future__ import annotations

from pydantic import BaseModel

from experiment.grading.common import Issue, model_issues


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
