"""The grader's held-out loss rules (experiment.grading.loss) find what the run's loss evaluator finds (issue 45
item 12).

The grader imports no code of experiment.sft (tests/unit/test_import_layers.py): LOSS-2 and LOSS-3 restate the
contract's loss aggregation and consistency rules. These tests hold the restatement to the run's own module
(experiment/sft/loss_eval.py) on seeded totals and on consistent and broken records.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from experiment.grading.loss import held_out_loss, record_problems
from experiment.sft import loss_eval


@pytest.mark.parametrize("aggregation", ["token_mean", "example_mean"])
def test_held_out_loss_is_the_loss_evaluators(aggregation):
    rng = np.random.default_rng(3)
    totals = [(float(rng.random() * 40), int(rng.integers(0, 30))) for _ in range(50)] + [(0.0, 0)]
    theirs = loss_eval.summarize([loss_eval.ExampleTotal(nll, n) for nll, n in totals], aggregation)
    ours = held_out_loss(totals, aggregation)
    assert ours.keys() == theirs.keys()
    assert all(math.isclose(ours[k], theirs[k], rel_tol=1e-15) for k in ours)
    assert math.isnan(held_out_loss([(0.0, 0)], aggregation)["value"])


def _entry(aggregation="token_mean", **changes):
    entry = {"aggregation": aggregation, "value": 1.5, "token_mean": 1.5, "example_mean": 1.4, "nll_sum": 15.0,
             "n_tokens": 10, "n_examples": 3, "n_empty": 0}
    return {**entry, **changes}


@pytest.mark.parametrize("record", [
    {"aggregation": "token_mean", "arms": {"a": _entry(), "b": _entry()}},
    {"aggregation": "example_mean", "arms": {"a": _entry("example_mean", value=1.4)}},
    {"aggregation": "token_mean", "arms": {"a": _entry(value=1.6)}},
    {"aggregation": "token_mean", "arms": {"a": _entry(), "b": _entry(n_tokens=11, nll_sum=16.5)}},
    {"aggregation": "token_mean", "arms": {"a": _entry(aggregation="example_mean")}},
    {"aggregation": "token_mean", "arms": {"a": _entry(n_tokens=0)}},
    {"aggregation": "token_mean", "arms": {"a": _entry(value=math.inf)}},
    {"aggregation": "token_mean", "arms": {"a": {**_entry(), "runs": {"0.01": _entry(value=2.0)}}}},
    {"aggregation": "token_mean", "arms": {}},
    {"aggregation": "mean", "arms": {"a": _entry()}},
], ids=["consistent", "example mean", "value", "other tokens", "aggregation", "no tokens", "not finite", "a run",
        "no arm", "unknown aggregation"])
def test_the_record_rules_find_what_the_loss_evaluators_check_finds(record):
    assert bool(record_problems(record)) == bool(loss_eval.check(record))
    assert len(record_problems(record)) == len(loss_eval.check(record))


def test_a_boolean_token_count_is_no_count():
    """Stricter than the run's own check: True is not one token."""
    record = {"aggregation": "token_mean", "arms": {"a": _entry(n_tokens=True, nll_sum=1.5)}}
    assert "a: value, nll_sum and n_tokens must be finite with n_tokens > 0" in record_problems(record)
    assert not loss_eval.check(record)  # the run's own check counts it


def test_an_example_without_a_positive_token_count_is_empty():
    """Only tokens with weight > 0 count; a total of no (or a negative number of) counted tokens is n_empty."""
    summary = held_out_loss([(3.0, -2), (4.0, 2), (0.0, 0), (9.0, 3)], "token_mean")
    assert (summary["nll_sum"], summary["n_tokens"], summary["n_examples"], summary["n_empty"]) == (13.0, 5, 2, 2)
    assert summary["value"] == 13.0 / 5


@pytest.mark.parametrize("aggregation", ["", "None", "mean", "token_mean"])
def test_every_aggregation_but_example_mean_is_valued_by_the_token_mean(aggregation):
    summary = held_out_loss([(1.0, 1), (9.0, 3)], aggregation)
    assert summary["value"] == summary["token_mean"] == 10.0 / 4
    assert held_out_loss([(1.0, 1), (9.0, 3)], "example_mean")["value"] == (1.0 + 3.0) / 2


@pytest.mark.parametrize("record_aggregation, entry_aggregation", [("token_mean", "example_mean"),
                                                                     ("example_mean", "token_mean")])
def test_an_entry_of_the_other_aggregation_is_a_problem_either_way(record_aggregation, entry_aggregation):
    value = 1.5 if record_aggregation == "token_mean" else 1.4
    record = {"aggregation": record_aggregation, "arms": {"a": _entry(entry_aggregation, value=value)}}
    assert record_problems(record) == [f"a: aggregation {entry_aggregation!r} differs from {record_aggregation!r}"]


def test_a_negative_token_count_is_no_count_and_one_token_is():
    negative = {"aggregation": "token_mean", "arms": {"a": _entry(n_tokens=-10, nll_sum=-15.0)}}
    assert record_problems(negative) == ["a: value, nll_sum and n_tokens must be finite with n_tokens > 0",
                                         "no arm has a loss_eval entry"]
    one = {"aggregation": "token_mean", "arms": {"a": _entry(n_tokens=1, nll_sum=1.5)}}
    assert record_problems(one) == []


def test_every_entry_is_checked_after_one_without_finite_totals():
    record = {"aggregation": "token_mean", "arms": {"a": _entry(value=math.nan), "b": _entry(value=1.6)}}
    assert record_problems(record) == ["a: value, nll_sum and n_tokens must be finite with n_tokens > 0",
                                       "b: value 1.6 does not recompute from its totals (1.5)"]


def test_a_boolean_example_mean_is_no_mean():
    record = {"aggregation": "example_mean", "arms": {"a": _entry("example_mean", value=1.0, example_mean=True)}}
    assert record_problems(record) == ["a: value 1.0 does not recompute from its totals (True)"]
