"""The grader's recomputation helpers of the decision (experiment/grading/decision.py), each on inputs
whose expected value is worked out by hand in the test (issue 28 item 7: mutants that survived the
record-level tests)."""

from __future__ import annotations

import pytest

from experiment.grading import decision


def _rows(*predictions):
    return [{"prediction": p} for p in predictions]


def test_held_out_nll_is_token_weighted_or_the_mean_of_example_means():
    rows = _rows({"nll_sum": 6.0, "n_tokens": 3}, {"nll_sum": 4.0, "n_tokens": 1}, {"nll_sum": 9.0, "n_tokens": 0})
    # token_mean: (6 + 4) / (3 + 1); example_mean: (6/3 + 4/1) / 2; the row of 0 tokens counts in neither
    assert decision._nll_from_predictions(rows, "token_mean") == 2.5
    assert decision._nll_from_predictions(rows, "example_mean") == 3.0


@pytest.mark.parametrize("prediction", [{"nll_sum": "6", "n_tokens": 3}, {"nll_sum": 6.0, "n_tokens": "3"},
                                        {"nll_sum": 6.0, "n_tokens": 3.0}, {"n_tokens": 3}, {"nll_sum": 6.0}])
def test_held_out_nll_is_not_recomputed_from_a_malformed_row(prediction):
    rows = _rows({"nll_sum": 4.0, "n_tokens": 1}, prediction)
    assert decision._nll_from_predictions(rows, "token_mean") is None


def test_held_out_nll_of_no_rows_or_no_tokens_is_not_recomputed():
    assert decision._nll_from_predictions([], "token_mean") is None
    assert decision._nll_from_predictions(_rows({"nll_sum": 1.0, "n_tokens": 0}), "example_mean") is None


class _Evidence:
    def __init__(self, data: bytes):
        self.data = data

    def bytes(self, name):
        return self.data if name == "observations.jsonl" else None


@pytest.mark.parametrize("rows, size, flagged", [
    (100_000, 10 * 1024 * 1024, False),  # exactly the contract's caps: read
    (100_001, 1, True),  # one observation over
    (1, 10 * 1024 * 1024 + 1, True),  # one byte over
])
def test_the_observations_file_is_capped_at_the_contracts_10_mib_and_100_000_rows(monkeypatch, rows, size, flagged):
    """contract-details.md: the observations file holds at most 10 MiB and 100 000 observations."""
    from types import SimpleNamespace

    monkeypatch.setattr(decision, "_rows", lambda ctx: ([{}] * rows, ""))
    monkeypatch.setattr(decision, "_record", lambda ctx: {"observations_file": {"name": "observations.jsonl"}})
    issues = decision.DEC_4(SimpleNamespace(evidence=_Evidence(b"x" * size)))
    assert [(issue.rule, issue.status) for issue in issues] == ([("DEC-4", "unverified")] if flagged else [])
