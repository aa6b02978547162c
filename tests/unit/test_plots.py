"""Pictures: each PNG opens, has the fixed pixel size and is not blank."""

from __future__ import annotations

import matplotlib.image as mpimg
import numpy as np
import pytest

from experiment.report.plots import (
    PIXEL_SIZE,
    PlotError,
    arm_scores_png,
    generation_audit_png,
    heldout_nll_by_lr_png,
    paired_effect_png,
    sft_nll_points,
    step_time_png,
    training_curves_png,
    wilson_interval,
    write_run_pictures,
)


def assert_picture(path):
    image = mpimg.imread(path)
    width, height = PIXEL_SIZE
    assert image.shape[:2] == (height, width)
    pixels = image[..., :3]
    assert pixels.std() > 0.01  # something was drawn, not a single flat colour
    assert np.any(pixels < 0.5)  # dark pixels: axes, text, lines


def test_training_curves_per_arm_and_lr(tmp_path):
    rows = [
        {"arm": arm, "lr": lr, "step": step, "mean_reward": 0.2 + 0.01 * step + (0.05 if arm == "b" else 0)}
        for arm in ("a", "b")
        for lr in (1e-4, 2e-4)
        for step in range(6)
    ]
    path = training_curves_png(rows, tmp_path / "curves.png")
    assert path == tmp_path / "curves.png"
    assert_picture(path)


def test_training_curves_loss(tmp_path):
    rows = [{"arm": "dimuon", "step": step, "loss": 3.0 / (step + 1)} for step in range(10)]
    assert_picture(training_curves_png(rows, tmp_path / "loss.png", metric="loss"))


def test_paired_effect_against_margin(tmp_path):
    criteria = [
        {"id": "noninferiority", "effect": 0.01, "lower": -0.04, "upper": 0.06, "margin": -0.03},
        {"id": "recovered_half_gain", "effect": 0.05, "lower": 0.01, "upper": 0.09, "margin": 0.0},
    ]
    assert_picture(paired_effect_png(criteria, tmp_path / "sub" / "effect.png"))


def test_arm_scores_with_wilson_intervals(tmp_path):
    scores = [{"arm": "base", "value": 0.3, "n": 50}, {"arm": "rl", "value": 0.55, "n": 50}]
    assert_picture(arm_scores_png(scores, tmp_path / "scores.png"))


def test_arm_scores_with_recorded_intervals(tmp_path):
    scores = [
        {"arm": "dimuon", "value": 2.1, "lower": 2.0, "upper": 2.2},
        {"arm": "trimuon", "value": 2.05, "lower": 1.95, "upper": 2.15},
    ]
    assert_picture(arm_scores_png(scores, tmp_path / "nll.png", metric="token-mean NLL"))


def test_wilson_interval_contains_the_proportion_and_narrows_with_n():
    low_small, high_small = wilson_interval(5, 10)
    low_large, high_large = wilson_interval(500, 1000)
    assert low_small < 0.5 < high_small and low_large < 0.5 < high_large
    assert (high_large - low_large) < (high_small - low_small)
    z = 1.959963984540054  # two-sided 95% normal quantile
    low_zero, high_zero = wilson_interval(0, 10)
    assert low_zero == pytest.approx(0.0, abs=1e-12)
    assert high_zero == pytest.approx(z * z / (10 + z * z))  # closed form of the Wilson bound at 0 successes


@pytest.mark.parametrize(
    "call",
    [
        lambda p: training_curves_png([], p),
        lambda p: paired_effect_png([], p),
        lambda p: arm_scores_png([{"arm": "a", "value": float("nan")}], p),
        lambda p: heldout_nll_by_lr_png([{"arm": "a", "lr": 0.1}], p),
        lambda p: step_time_png([{"run": "a@lr=0.1"}], p),
        lambda p: generation_audit_png([], p),
    ],
)
def test_bad_input_is_a_plot_error(tmp_path, call):
    with pytest.raises(PlotError):
        call(tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()


SFT_METRICS = {"arms": {arm: {"selected_lr": 0.04, "runs": {
    str(lr): {"learning_rate": lr, "heldout_nll_token_mean": 2.0 - lr + (0.01 if arm == "trimuon" else 0)}
    for lr in (0.02, 0.04, 0.08)}} for arm in ("trimuon", "dimuon_lite")}}


def test_sft_nll_points_mark_each_arms_selected_lr():
    points = sft_nll_points({"metrics": SFT_METRICS})
    assert len(points) == 6
    assert {(p["arm"], p["lr"]) for p in points if p["selected"]} == {("trimuon", 0.04), ("dimuon_lite", 0.04)}
    assert sft_nll_points({"metrics": {"arms": {"base": {"accuracy": 0.5}}}}) == []  # an RL record has none


def test_sft_and_selfgen_pictures(tmp_path):
    assert_picture(heldout_nll_by_lr_png(sft_nll_points({"metrics": SFT_METRICS}), tmp_path / "nll.png"))
    rows = [{"run": f"{arm}@lr={lr}", "optim_seconds": 0.02 + 0.001 * step} for arm in ("trimuon", "dimuon_lite")
            for lr in (0.02, 0.04) for step in range(3)]
    assert_picture(step_time_png(rows, tmp_path / "step-time.png"))
    rounds = [{"round": 1, "counts": {"generated": 64, "accepted": 19, "rejected": 44, "execution_errors": 1},
               "sample_size": 19, "label_error_count": 10, "overlap_count": 0, "status": "failed"},
              {"round": 2, "counts": {"generated": 96, "accepted": 21, "rejected": 74, "execution_errors": 1},
               "sample_size": 21, "label_error_count": 0, "overlap_count": 0, "status": "passed"}]
    assert_picture(generation_audit_png(rounds, tmp_path / "audit.png"))


def test_an_sft_run_directory_gets_its_own_pictures(tmp_path):
    """A TriMuon run's files (tables/sft_steps.parquet, RESULT.metrics per arm and LR) once gave an empty
    plots/: the pictures read only the RL table and the paired decision."""
    import json

    import pandas as pd

    (tmp_path / "tables").mkdir()
    pd.DataFrame([{"run": f"{arm}@lr={lr}", "step": step, "train_nll_token_mean": 3.0 - step * lr,
                   "optim_seconds": 0.03, "forward_backward_seconds": 0.2}
                  for arm in ("trimuon", "dimuon_lite") for lr in (0.02, 0.04, 0.08) for step in range(2)]
                 ).to_parquet(tmp_path / "tables" / "sft_steps.parquet")
    (tmp_path / "result.json").write_text(json.dumps({"status": "succeeded", "metrics": SFT_METRICS}))
    pictures = write_run_pictures(tmp_path)
    assert sorted(p.name for p in pictures) == ["heldout-nll-by-lr.png", "step-time.png", "training-train-nll.png"]
    for picture in pictures:
        assert_picture(picture)
