"""loss_eval keyed by arm with the runs of each arm's LR grid beneath (the TriMuon spec)."""

from __future__ import annotations

import numpy as np

from experiment.sft.loss_eval import LossEval, check, report_by_arm


def _scored(scale: float) -> LossEval:
    evaluator = LossEval("token_mean")
    logprobs = [np.array([-1.0, -2.0, -0.5]) * scale, np.array([-0.25, -3.0]) * scale]
    weights = [np.array([0.0, 1.0, 1.0]), np.array([1.0, 1.0])]
    evaluator.add_output([{"logprobs": lp} for lp in logprobs], weights, ["a", "b"])
    return evaluator


def _record():
    runs = {"trimuon": {"0.02": _scored(1.0), "0.04": _scored(0.5)}, "baseline": {"0.02": _scored(0.8)}}
    return report_by_arm("token_mean", runs, {"trimuon": "0.04", "baseline": "0.02"})


def test_arm_entry_is_its_selected_run_with_every_run_beneath():
    record = _record()
    trimuon = record["arms"]["trimuon"]
    assert trimuon["selected_run"] == "0.04" and set(trimuon["runs"]) == {"0.02", "0.04"}
    assert trimuon["value"] == trimuon["runs"]["0.04"]["value"] == trimuon["nll_sum"] / trimuon["n_tokens"]
    assert check(record) == []


def test_a_tampered_run_beneath_an_arm_is_caught():
    record = _record()
    record["arms"]["trimuon"]["runs"]["0.02"]["value"] = 0.1
    assert any("trimuon run 0.02" in problem for problem in check(record))


def test_an_arm_before_its_selection_has_no_value_yet():
    runs = {"trimuon": {"0.02": _scored(1.0)}}
    record = report_by_arm("token_mean", runs, {})
    assert "value" not in record["arms"]["trimuon"] and "0.02" in record["arms"]["trimuon"]["runs"]
