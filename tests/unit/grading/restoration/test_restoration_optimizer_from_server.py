"""The grader's restoration rules (experiment/grading/restoration.py; docs/contract-rules.md REST-4,
REST-6), on a minimal grading context: one arm's initialization provenance, literals only."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from experiment.grading import restoration as rules


def _ctx(checks, restore_count=0):
    arm = {"restore_count": restore_count, "optimizer_checks": checks}
    return SimpleNamespace(result={"initialization_provenance": {"arms": {"t": arm}}}, spec=None)


def _check(after_restore=0, **overrides):
    check = {"after_restore": after_restore, "before_next_update": True, "source": "server_response",
             "actual_family": "adam", "requested": {"family": "adam"}, "evidence_ref": "info.json"}
    check.update(overrides)
    return check


@pytest.mark.parametrize("source", ["declared", "a_request", "zzz"])
def test_an_optimizer_not_read_from_a_server_response_is_unverified(source):
    issues = rules.REST_6(_ctx([_check(source=source)]))
    assert [(issue.rule, issue.status) for issue in issues] == [("REST-6", "unverified")]
    assert "declared, not read from a server response" in issues[0].message


def test_checks_at_creation_and_each_restore_cover_rest4():
    assert rules.REST_4(_ctx([_check(0), _check(1), _check(2)], restore_count=2)) == []
    issues = rules.REST_4(_ctx([_check(0), _check(2)], restore_count=2))
    assert [(issue.rule, issue.status) for issue in issues] == [("REST-4", "unverified")]
