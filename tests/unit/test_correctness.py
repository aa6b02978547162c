"""Tests of the correctness-preflight measurements (experiment/stats/correctness.py)."""

import hashlib
import importlib.metadata
import math

import numpy as np
import pytest
import torch

from experiment.stats.correctness import (
    accepts,
    file_sha256,
    importance_sampling_loss_and_grad,
    lr_scaling_errors,
    parity_errors,
    revision_pins,
)

GRADIENT_TOLERANCE = {"atol": 1e-05, "rtol": 0.0001, "min_cosine": 0.99999}  # from the GS1 spec


def test_parity_errors_match_their_definitions():
    rng = np.random.default_rng(0)
    reference = rng.normal(size=(4, 5))
    actual = reference + rng.normal(scale=1e-3, size=(4, 5))
    errors = parity_errors(actual, reference)
    a, r = actual.ravel(), reference.ravel()
    assert errors["max_abs_error"] == pytest.approx(max(abs(x - y) for x, y in zip(a, r)), rel=1e-15)
    assert errors["reference_max_abs"] == pytest.approx(max(abs(y) for y in r), rel=1e-15)
    assert errors["relative_l2_error"] == pytest.approx(
        math.sqrt(sum((x - y) ** 2 for x, y in zip(a, r))) / math.sqrt(sum(y * y for y in r)), rel=1e-12)
    assert errors["cosine_similarity"] == pytest.approx(
        sum(x * y for x, y in zip(a, r)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in r)), rel=1e-12)


def test_parity_errors_of_identical_and_zero_vectors():
    identical = parity_errors([1.0, -2.0], [1.0, -2.0])
    assert identical == {"max_abs_error": 0.0, "reference_max_abs": 2.0,
                         "relative_l2_error": 0.0, "cosine_similarity": 1.0}
    both_zero = parity_errors([0.0, 0.0], [0.0, 0.0])
    assert both_zero["cosine_similarity"] == 1.0 and both_zero["relative_l2_error"] == 0.0
    one_zero = parity_errors([1.0, 0.0], [0.0, 0.0])
    assert one_zero["cosine_similarity"] == 0.0 and one_zero["relative_l2_error"] == math.inf
    with pytest.raises(ValueError):
        parity_errors([1.0, 2.0], [1.0])
    with pytest.raises(ValueError):
        parity_errors([float("nan")], [1.0])


def test_accepts_applies_atol_rtol_and_min_cosine():
    tolerance = {"atol": 1e-6, "rtol": 1e-5}
    at_limit = {"max_abs_error": 1e-6 + 1e-5 * 3.0, "reference_max_abs": 3.0,
                "relative_l2_error": 0.0, "cosine_similarity": 1.0}
    assert accepts(at_limit, tolerance)[0]
    over = dict(at_limit, max_abs_error=at_limit["max_abs_error"] * 1.01)
    accepted, reason = accepts(over, tolerance)
    assert not accepted and "max_abs_error" in reason
    low_cosine = dict(at_limit, max_abs_error=0.0, cosine_similarity=0.9999)
    assert accepts(low_cosine, tolerance)[0]  # no min_cosine given
    accepted, reason = accepts(low_cosine, GRADIENT_TOLERANCE)
    assert not accepted and "cosine" in reason


def test_lr_scaling_errors_are_relative_to_the_first_probe():
    probes = [{"learning_rate": 1e-4, "update_norm": 2.0},
              {"learning_rate": 2e-4, "update_norm": 4.0},
              {"learning_rate": 4e-4, "update_norm": 9.0}]
    errors = lr_scaling_errors(probes)
    first_ratio = 2.0 / 1e-4
    expected = [(p["update_norm"] / p["learning_rate"] - first_ratio) / first_ratio for p in probes]
    assert errors == pytest.approx(expected, abs=1e-12)
    assert errors[0] == 0.0
    with pytest.raises(ValueError):
        lr_scaling_errors([{"learning_rate": 0.0, "update_norm": 1.0}])
    with pytest.raises(ValueError):
        lr_scaling_errors([])


def test_importance_sampling_loss_and_gradient_match_torch_autograd_in_float64():
    rng = np.random.default_rng(2)
    logprobs = rng.normal(-1.0, 0.3, 40)
    sampling_logprobs = logprobs + rng.normal(0, 0.05, 40)
    advantages = rng.normal(0, 1, 40)
    mask = (rng.random(40) > 0.3).astype(float)
    loss, gradient = importance_sampling_loss_and_grad(logprobs, sampling_logprobs, advantages, mask)

    current = torch.tensor(logprobs, dtype=torch.float64, requires_grad=True)
    torch_loss = -(torch.exp(current - torch.tensor(sampling_logprobs)) * torch.tensor(advantages)
                   * torch.tensor(mask)).sum()
    torch_loss.backward()
    assert loss == pytest.approx(torch_loss.item(), rel=1e-14)
    np.testing.assert_allclose(gradient, current.grad.numpy(), rtol=1e-14, atol=0)
    assert (gradient[mask == 0] == 0).all()


def test_importance_sampling_on_policy_is_minus_sum_of_advantages():
    advantages = np.array([0.5, -1.0, 0.25])
    loss, gradient = importance_sampling_loss_and_grad([-1.0, -2.0, -0.5], [-1.0, -2.0, -0.5], advantages)
    assert loss == -advantages.sum()
    np.testing.assert_array_equal(gradient, -advantages)
    with pytest.raises(ValueError):
        importance_sampling_loss_and_grad([0.0], [0.0, 1.0], [1.0])


def test_file_sha256_and_revision_pins(tmp_path):
    path = tmp_path / "reference.py"
    path.write_bytes(b"print('hello')\n")
    expected = hashlib.sha256(b"print('hello')\n").hexdigest()
    assert file_sha256(path) == expected
    pins = revision_pins([path])
    assert pins["files"] == {path.as_posix(): expected}
    assert pins["packages"] == {"tinker": importlib.metadata.version("tinker"),
                                "tinker-cookbook": importlib.metadata.version("tinker-cookbook")}
