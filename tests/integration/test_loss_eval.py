"""experiment/sft/loss_eval.py: the LOSS-1/LOSS-2 rules (docs/contract-rules.md), on plain arrays and on real server outputs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from experiment.sft.loss_eval import LossEval, LossEvalError, check, report


def fake_output(logprob_rows):
    return [{"logprobs": np.asarray(row, dtype=np.float32)} for row in logprob_rows]


ROWS = [[-1.0, -2.0, -3.0, -4.0], [-0.5, -0.25], [-7.0, -8.0, -9.0], [-2.0]]
WEIGHTS = [[0, 1, 1, 1], [1, 1], [0, 0, 0], [1]]  # the third example has no counted token


def test_token_mean_example_mean_and_empty_examples():
    evaluator = LossEval("token_mean")
    evaluator.add_output(fake_output(ROWS), WEIGHTS)
    summary = evaluator.summary()
    assert summary["nll_sum"] == pytest.approx(2 + 3 + 4 + 0.5 + 0.25 + 2)
    assert summary["n_tokens"] == 6 and summary["n_examples"] == 3 and summary["n_empty"] == 1
    assert summary["token_mean"] == pytest.approx(11.75 / 6)
    assert summary["example_mean"] == pytest.approx((9 / 3 + 0.75 / 2 + 2 / 1) / 3)
    assert summary["value"] == summary["token_mean"]
    assert LossEval("example_mean").summary()["n_examples"] == 0


def test_weights_are_only_a_mask():
    scaled = [[0, 0.1, 5.0, 1e-3], [2.0, 0.5], [0, -1.0, 0], [10.0]]  # same positive pattern; -1 is not counted
    a, b = LossEval("token_mean"), LossEval("token_mean")
    a.add_output(fake_output(ROWS), WEIGHTS)
    b.add_output(fake_output(ROWS), scaled)
    assert a.summary() == b.summary()


def test_batching_cannot_change_the_result():
    whole, split = LossEval("token_mean"), LossEval("token_mean")
    whole.add_output(fake_output(ROWS), WEIGHTS)
    for start in range(0, len(ROWS), 3):
        split.add_output(fake_output(ROWS[start:start + 3]), WEIGHTS[start:start + 3])
    assert whole.summary() == split.summary()


def test_mismatched_inputs_are_refused_with_a_named_error():
    evaluator = LossEval("token_mean")
    with pytest.raises(LossEvalError, match="4 outputs but 3 weight arrays"):
        evaluator.add_output(fake_output(ROWS), WEIGHTS[:3])
    with pytest.raises(LossEvalError, match="example 0: 4 logprobs but 2 weights"):
        evaluator.add_output(fake_output(ROWS[:1]), [[1, 1]])
    with pytest.raises(LossEvalError, match="aggregation"):
        LossEval("mean_of_batches")


def test_report_and_check():
    arms = {}
    for arm, shift in (("trimuon", 0.0), ("dimuon_lite", -0.1)):
        evaluator = LossEval("token_mean")
        evaluator.add_output(fake_output([[x + shift for x in row] for row in ROWS]), WEIGHTS)
        arms[arm] = evaluator
    record = report("token_mean", arms)
    assert set(record["arms"]) == {"trimuon", "dimuon_lite"} and check(record) == []
    for entry in record["arms"].values():
        assert math.isclose(entry["value"], entry["nll_sum"] / entry["n_tokens"], rel_tol=1e-6)
    tampered = {**record, "arms": {**record["arms"], "trimuon": {**record["arms"]["trimuon"], "value": 1.0}}}
    assert any("does not recompute" in p for p in check(tampered))
    unequal = {**record, "arms": {**record["arms"], "trimuon": {**record["arms"]["trimuon"], "n_tokens": 5,
                                                                "nll_sum": 5 * record["arms"]["trimuon"]["value"]}}}
    assert any("same tokens" in p for p in check(unequal))


# ------------------------------------------------------------ real forward outputs from the stock SDK


@pytest.fixture(scope="module")
def training_client(embedded_server):
    import tinker

    from embedded_tinker.launch import LOCAL_API_KEY

    running = embedded_server  # one backend for the session (tests/conftest.py)
    service = tinker.ServiceClient(base_url=running.base_url, api_key=LOCAL_API_KEY)
    yield service.create_lora_training_client(base_model="embedded/tiny-random", rank=2).result()
    service.close("success")


def test_real_cross_entropy_outputs_against_a_direct_computation(training_client):
    from tinker import types

    rng = np.random.default_rng(0)
    datums, masks = [], []
    for length in (12, 7, 20, 5):
        tokens = rng.integers(3, 200, size=length + 1).tolist()
        mask = (rng.random(length) > 0.4).astype(float)
        mask[0] = 0.0
        if length == 5:
            mask[:] = 0.0  # an empty example
        datums.append(types.Datum(model_input=types.ModelInput.from_ints(tokens[:-1]),
                                  loss_fn_inputs={"target_tokens": tokens[1:], "weights": mask.tolist()}))
        masks.append(mask)
    whole = training_client.forward(datums, "cross_entropy").result()
    evaluator = LossEval("token_mean")
    evaluator.add_output(whole, masks)
    one_by_one = LossEval("token_mean")
    for datum, mask in zip(datums, masks):
        one_by_one.add_output(training_client.forward([datum], "cross_entropy").result(), [mask])

    logprobs = [o["logprobs"].to_numpy().astype(np.float64) for o in whole.loss_fn_outputs]
    direct_sum = sum(-(lp * (m > 0)).sum() for lp, m in zip(logprobs, masks))
    direct_count = sum(int((m > 0).sum()) for m in masks)
    summary = evaluator.summary()
    assert summary["n_empty"] == 1 and summary["n_examples"] == 3 and summary["n_tokens"] == direct_count
    assert summary["token_mean"] == pytest.approx(direct_sum / direct_count, rel=1e-12)
    assert one_by_one.summary()["token_mean"] == pytest.approx(summary["token_mean"], rel=1e-5)
    per_batch_mean = whole.metrics.get("loss:mean")
    if per_batch_mean is not None:  # what the spec's command would average: not the token mean in general
        assert per_batch_mean != pytest.approx(summary["token_mean"], rel=1e-9)
