"""The grader's feasibility rules (experiment/grading/feasibility.py; docs/contract-rules.md FEAS-5:
`recovery.seconds` is a positive reserve, else unknown), on a minimal grading context."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from experiment.grading import feasibility as rules


def _feas5(seconds):
    return rules.FEAS_5(SimpleNamespace(result={"feasibility": {"recovery": {"seconds": seconds}}}))


@pytest.mark.parametrize("seconds", [0.5, 1, 600])
def test_any_positive_recovery_reserve_passes(seconds):
    assert _feas5(seconds) == []


@pytest.mark.parametrize("seconds", [0, -1, None, float("nan"), "60", True])
def test_a_recovery_reserve_that_is_not_a_positive_number_is_unknown(seconds):
    assert [(issue.rule, issue.status) for issue in _feas5(seconds)] == [("FEAS-5", "unknown")]
