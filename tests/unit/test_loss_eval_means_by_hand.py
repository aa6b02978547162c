"""Held-out loss evaluation (LOSS-1, LOSS-2): token_mean, example_mean and n_empty computed by
hand from literal logprobs and weights, never taken from experiment.sft.loss_eval."""

from __future__ import annotations

import math

import numpy as np
import pytest

from experiment.sft.loss_eval import LossEval, LossEvalError, check, report


def _out(*logprobs):
    return [{"logprobs": np.asarray(lp, dtype=np.float32)} for lp in logprobs]


def _eval(aggregation="token_mean"):
    evaluator = LossEval(aggregation)
    # example A: counted tokens -1, -3 (the 0-weight -100 is not counted); B: counted -2; C: none counted
    evaluator.add_output(_out([-1.0, -100.0, -3.0], [-2.0], [-5.0]),
                         [[1.0, 0.0, 0.5], [2.0], [0.0]], example_ids=["a", "b", "c"])
    return evaluator


def test_token_and_example_means_by_hand():
    summary = _eval().summary()
    assert summary["nll_sum"] == 6.0  # 1 + 3 + 2: weights are only a mask (0.5 and 2.0 count as 1)
    assert summary["n_tokens"] == 3
    assert summary["token_mean"] == pytest.approx(2.0, abs=1e-15)
    assert summary["example_mean"] == pytest.approx((4.0 / 2 + 2.0 / 1) / 2, abs=1e-15)
    assert summary["n_examples"] == 2 and summary["n_empty"] == 1
    assert summary["value"] == summary["token_mean"] and summary["aggregation"] == "token_mean"


def test_example_mean_is_the_value_of_an_example_mean_evaluator():
    evaluator = LossEval("example_mean")
    evaluator.add_output(_out([-1.0, -3.0], [-6.0]), [[1, 1], [1]])
    summary = evaluator.summary()
    assert summary["value"] == pytest.approx((2.0 + 6.0) / 2)  # example means 2 and 6
    assert summary["token_mean"] == pytest.approx(10.0 / 3)


def test_batching_does_not_change_the_result():
    one = LossEval("token_mean")
    one.add_output(_out([-1.0, -2.0], [-4.0]), [[1, 1], [1]])
    two = LossEval("token_mean")
    two.add_output(_out([-1.0, -2.0]), [[1, 1]])
    two.add_output(_out([-4.0]), [[1]])
    assert one.summary() == two.summary()


def test_a_token_with_weight_exactly_zero_is_not_counted_and_a_tiny_weight_is():
    evaluator = LossEval("token_mean")
    evaluator.add_output(_out([-1.0, -9.0]), [[1e-30, 0.0]])
    assert evaluator.summary()["n_tokens"] == 1 and evaluator.summary()["nll_sum"] == 1.0
    negative = LossEval("token_mean")
    negative.add_output(_out([-1.0, -9.0]), [[-1.0, 1.0]])
    assert negative.summary()["nll_sum"] == 9.0


def test_no_counted_token_gives_nan_means():
    evaluator = LossEval("token_mean")
    evaluator.add_output(_out([-1.0]), [[0.0]])
    summary = evaluator.summary()
    assert math.isnan(summary["token_mean"]) and math.isnan(summary["example_mean"])
    assert summary["n_empty"] == 1 and summary["n_examples"] == 0 and summary["n_tokens"] == 0


def test_output_objects_and_example_ids():
    class Output:  # named stand-in for a ForwardBackwardOutput: only loss_fn_outputs is read
        loss_fn_outputs = _out([-1.0])

    evaluator = LossEval("token_mean")
    evaluator.add_output(Output(), [[1.0]], example_ids=[7])
    assert evaluator.example_ids == ["7"]
    evaluator.add_output(_out([-1.0]), [np.array([1.0])])
    assert evaluator.example_ids == ["7"]  # no ids given: none added


def test_bad_inputs():
    with pytest.raises(LossEvalError, match="aggregation must be one of"):
        LossEval("mean")
    evaluator = LossEval("token_mean")
    with pytest.raises(LossEvalError, match="2 outputs but 1 weight arrays"):
        evaluator.add_output(_out([-1.0], [-1.0]), [[1.0]])
    with pytest.raises(LossEvalError, match="1 outputs but 2 example ids"):
        evaluator.add_output(_out([-1.0]), [[1.0]], example_ids=["a", "b"])
    with pytest.raises(LossEvalError, match="example 0: 2 logprobs but 1 weights"):
        evaluator.add_output(_out([-1.0, -2.0]), [[1.0]])
    with pytest.raises(LossEvalError, match="example 1: non-finite"):
        evaluator.add_output(_out([-1.0], [-np.inf]), [[1.0], [1.0]])
    evaluator.add_output(_out([-np.inf]), [[0.0]])  # an uncounted non-finite logprob is fine
    assert evaluator.summary()["n_empty"] == 1


def test_report_and_check():
    record = report("token_mean", {"t": _eval(), "b": _eval()})
    assert set(record) == {"aggregation", "arms"} and record["aggregation"] == "token_mean"
    assert check(record) == []
    with pytest.raises(LossEvalError, match="arm 'x' was scored with 'example_mean', not 'token_mean'"):
        report("token_mean", {"x": _eval("example_mean")})


def _entry(**overrides):
    base = {"aggregation": "token_mean", "value": 2.0, "nll_sum": 6.0, "n_tokens": 3, "n_examples": 2,
            "example_mean": 2.0}
    base.update(overrides)
    return base


def test_check_rules():
    assert check({"aggregation": "median", "arms": {}}) == ["aggregation 'median' is not one of ('token_mean', 'example_mean')"]
    assert check({"aggregation": "token_mean", "arms": {}}) == ["no arm has a loss_eval entry"]
    assert check({"aggregation": "token_mean"}) == ["no arm has a loss_eval entry"]
    problems = check({"aggregation": "token_mean", "arms": {"t": _entry(aggregation="example_mean")}})
    assert problems == ["t: aggregation 'example_mean' differs from 'token_mean'"]
    for bad in ({"n_tokens": 0}, {"n_tokens": -1}, {"value": math.nan}, {"nll_sum": "6"}, {"value": None}):
        problems = check({"aggregation": "token_mean", "arms": {"t": _entry(**bad)}})
        assert problems[0] == "t: value, nll_sum and n_tokens must be finite with n_tokens > 0"
    # the value must recompute from the totals: 6 / 3 = 2 (relative tolerance 1e-6)
    assert check({"aggregation": "token_mean", "arms": {"t": _entry(value=2.0 * (1 + 5e-7))}}) == []
    assert check({"aggregation": "token_mean", "arms": {"t": _entry(value=2.0 * (1 + 5e-6))}})[0].startswith(
        "t: value")
    # example_mean: the value must equal the recorded example_mean
    ok = _entry(aggregation="example_mean", value=2.5, example_mean=2.5)
    assert check({"aggregation": "example_mean", "arms": {"t": ok}}) == []
    assert check({"aggregation": "example_mean", "arms": {"t": {**ok, "example_mean": 2.4}}})[0].startswith("t: value")
    assert check({"aggregation": "example_mean", "arms": {"t": {k: v for k, v in ok.items() if k != "example_mean"}}})
    # arms scored on different tokens or examples
    problems = check({"aggregation": "token_mean", "arms": {"t": _entry(), "b": _entry(n_tokens=6, nll_sum=12.0)}})
    assert len(problems) == 1 and problems[0].startswith("arms were not scored on the same tokens")
    problems = check({"aggregation": "token_mean", "arms": {"t": _entry(), "b": _entry(n_examples=3)}})
    assert len(problems) == 1


def test_report_compares_aggregation_names_by_value():
    name = "".join(["token", "_mean"])  # an equal string that is not the same object (e.g. read from JSON)
    assert report(name, {"t": _eval("token_mean")})["aggregation"] == "token_mean"


def test_values_with_only_tolist_are_read_through_it():
    class ToListOnly:  # named stand-in for an SDK tensor type numpy cannot read directly (e.g. bfloat16)
        def __init__(self, values):
            self.values = values

        def tolist(self):
            return list(self.values)

    evaluator = LossEval("token_mean")
    evaluator.add_output([{"logprobs": ToListOnly([-1.0, -3.0])}], [ToListOnly([1.0, 1.0])])
    assert evaluator.summary()["nll_sum"] == 4.0 and evaluator.summary()["n_tokens"] == 2


def test_check_accepts_a_single_token_the_boundary_of_n_tokens_greater_than_zero():
    # n_tokens = 1 is the smallest count the rule (n_tokens > 0) allows: value = nll_sum / 1
    one = _entry(value=0.75, nll_sum=0.75, n_tokens=1, n_examples=1)
    assert check({"aggregation": "token_mean", "arms": {"t": one}}) == []
