"""Tests of the independent GS1 reference (experiment/rl/gs1_reference.py) on cases whose
answer is derived here by hand or by a direct numpy formula."""

import ast
import math
from pathlib import Path

import numpy as np
import pytest

from experiment.rl.gs1_reference import reference_gs1_advantages

REFERENCE_FILE = Path(__file__).resolve().parents[2] / "experiment" / "rl" / "gs1_reference.py"


def test_reference_imports_only_math():
    tree = ast.parse(REFERENCE_FILE.read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module)
    assert imported == {"math"}


def test_two_rollouts_by_hand():
    # Two points standardize to +-1 in each column, so distance^2 = 8 and the single
    # neighbor weighs exp(-8 / (2 h^2)).
    bandwidth = 2.0
    advantages, diagnostics = reference_gs1_advantages(
        [1.0, 0.25], [10, 40], [-1.0, -3.0], [], [], [], bandwidth=bandwidth)
    weight = math.exp(-8.0 / (2 * bandwidth**2))
    assert diagnostics["kernel_mass"] == pytest.approx([weight, weight], rel=1e-14)
    assert diagnostics["baseline"] == pytest.approx([0.25, 1.0], abs=1e-15)
    assert advantages == pytest.approx([0.75, -0.75], abs=1e-15)
    assert diagnostics["effective_neighbors"] == pytest.approx([1.0, 1.0], rel=1e-14)
    assert diagnostics["fell_back"] == [False, False]
    assert diagnostics["window_length"] == [1, 1]


def _direct_numpy_baseline(rewards, lengths, logprobs, history, bandwidth, window_size):
    """The definition written as one numpy formula per rollout (used only as an oracle)."""
    history_rewards, history_lengths, history_logprobs = (np.asarray(part, dtype=float) for part in history)
    baselines = []
    for i in range(len(rewards)):
        others = [j for j in range(len(rewards)) if j != i]
        n_previous = min(len(history_rewards), window_size - len(others))
        take = slice(len(history_rewards) - n_previous, len(history_rewards))
        window_r = np.concatenate([np.asarray(rewards, float)[others], history_rewards[take][::-1]])
        features = np.column_stack([
            np.log(np.concatenate([np.asarray(lengths, float)[others], history_lengths[take][::-1], [lengths[i]]])),
            np.concatenate([np.asarray(logprobs, float)[others], history_logprobs[take][::-1], [logprobs[i]]]),
        ])
        z = (features - features.mean(0)) / features.std(0)
        w = np.exp(-((z[:-1] - z[-1]) ** 2).sum(1) / (2 * bandwidth**2))
        baselines.append(w @ window_r / w.sum() if w.sum() >= 1e-3 else window_r.mean())
    return np.array(baselines)


def test_reference_matches_a_direct_numpy_formula_with_history_beyond_the_window():
    rng = np.random.default_rng(11)
    history = (rng.integers(0, 2, 300).astype(float), rng.integers(5, 500, 300).astype(float),
               rng.normal(-2, 1, 300))
    rewards = rng.integers(0, 2, 64).astype(float)
    lengths = rng.integers(5, 500, 64).astype(float)
    logprobs = rng.normal(-2, 1, 64)
    advantages, diagnostics = reference_gs1_advantages(
        rewards.tolist(), lengths.tolist(), logprobs.tolist(), *(part.tolist() for part in history))
    expected = _direct_numpy_baseline(rewards, lengths, logprobs, history, 0.5, 256)
    np.testing.assert_allclose(diagnostics["baseline"], expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(advantages, rewards - expected, rtol=0, atol=1e-12)
    assert diagnostics["window_length"] == [256] * 64


def test_constant_column_is_ignored():
    rewards = [1.0, 0.0, 1.0, 0.0]
    logprobs = [-1.0, -1.2, -3.0, -3.1]
    first, _ = reference_gs1_advantages(rewards, [50] * 4, logprobs, [], [], [])
    second, _ = reference_gs1_advantages(rewards, [7] * 4, logprobs, [], [], [])
    assert first == second
    # With one varying column the kernel is 1-d: check rollout 0 directly.
    z = (np.array(logprobs) - np.mean(logprobs)) / np.std(logprobs)
    w = np.exp(-((z[1:] - z[0]) ** 2) / (2 * 0.5**2))
    assert first[0] == pytest.approx(1.0 - w @ np.array(rewards[1:]) / w.sum(), abs=1e-14)


def test_huge_bandwidth_gives_window_mean_and_tiny_bandwidth_falls_back():
    rewards = [1.0, 0.0, 0.0, 1.0, 0.9]
    lengths = [3, 30, 300, 3000, 30000]
    logprobs = [-0.1, -1.0, -2.0, -3.0, -4.0]
    history = ([0.0, 1.0], [10, 20], [-0.5, -0.7])
    window_mean = [(sum(rewards) - r + sum(history[0])) / 6 for r in rewards]
    for bandwidth in (1e8, 1e-4):
        _, diagnostics = reference_gs1_advantages(rewards, lengths, logprobs, *history, bandwidth=bandwidth)
        assert diagnostics["baseline"] == pytest.approx(window_mean, abs=1e-12)
    _, tiny = reference_gs1_advantages(rewards, lengths, logprobs, *history, bandwidth=1e-4)
    assert tiny["fell_back"] == [True] * 5


def test_empty_window_and_oversized_batch():
    advantages, diagnostics = reference_gs1_advantages([0.5], [9], [-1.0], [], [], [])
    assert advantages == [0.5] and diagnostics["fell_back"] == [True] and diagnostics["baseline"] == [0.0]
    with pytest.raises(ValueError):
        reference_gs1_advantages([0.0] * 10, [1] * 10, [0.0] * 10, [], [], [], window_size=8)
