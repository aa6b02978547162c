"""The gradient read back through a service's AdamW (experiment/sft/service_probe.py): the inversion
and its error bound, against AdamW's first step computed in float32 as a service stores it."""

from __future__ import annotations

import numpy as np
import pytest

from experiment.sft.service_probe import (
    GRADIENT_PROBE_LR, LoraPair, gradient_error_bound, lora_pairs, recover_gradient, update_between,
)


def _adamw_first_step_float32(weights: np.ndarray, gradient: np.ndarray, lr: float, eps: float) -> np.ndarray:
    """AdamW's first step with beta1 = beta2 = 0 in float32 (embedded_tinker/optimizers.py's formula),
    the factor stored in float32: what the service's export shows after the step."""
    g = gradient.astype(np.float32)
    denominator = np.sqrt(g * g).astype(np.float32) + np.float32(eps)
    return (weights.astype(np.float32) - np.float32(lr) * (g / denominator)).astype(np.float32)


@pytest.mark.parametrize("scale", [1e-6, 1e-2, 1e3])
def test_recovered_gradient_is_within_its_bound(scale):
    rng = np.random.default_rng(7)
    weights = (rng.standard_normal((8, 64)) * 0.05).astype(np.float32)
    gradient = (rng.standard_normal((8, 64)) * scale * np.exp(rng.standard_normal((8, 64)))).astype(np.float32)
    eps = float(np.linalg.norm(gradient.astype(np.float64)))
    after = _adamw_first_step_float32(weights, gradient, GRADIENT_PROBE_LR, eps)
    update = after.astype(np.float64) - weights.astype(np.float64)
    recovered = recover_gradient(update, GRADIENT_PROBE_LR, eps)
    error = float(np.linalg.norm(recovered - gradient.astype(np.float64)))
    bound = gradient_error_bound(update, after.astype(np.float64), GRADIENT_PROBE_LR, eps)
    assert error <= bound
    assert bound <= 1e-5 * eps  # small against the gradient itself: the check is not blunted by the recovery
    # the check discriminates: an inversion with another eps than the step's lands outside the bound
    assert float(np.linalg.norm(recover_gradient(update, GRADIENT_PROBE_LR, 1.001 * eps)
                                - gradient.astype(np.float64))) > bound


def test_an_update_at_the_learning_rate_cannot_be_inverted():
    with pytest.raises(ValueError, match="cannot be inverted"):
        recover_gradient(np.array([-1.0, 0.5]), 1.0, 1.0)


def test_lora_pairs_group_peft_keys_by_module_and_refuse_a_half_pair():
    a, b = np.ones((2, 3), np.float32), np.ones((4, 2), np.float32)
    tensors = {"base_model.model.layers.1.q.lora_B.weight": b, "base_model.model.layers.1.q.lora_A.weight": a,
               "base_model.model.layers.0.q.lora_A.weight": a, "base_model.model.layers.0.q.lora_B.weight": b}
    pairs = lora_pairs(tensors)
    assert [p.module for p in pairs] == ["base_model.model.layers.0.q", "base_model.model.layers.1.q"]
    assert pairs[0].A.shape == (2, 3) and pairs[0].B.shape == (4, 2)
    del tensors["base_model.model.layers.1.q.lora_B.weight"]
    with pytest.raises(ValueError, match="incomplete"):
        lora_pairs(tensors)


def test_update_between_refuses_adapters_of_other_modules():
    a, b = np.zeros((2, 3), np.float32), np.zeros((4, 2), np.float32)
    with pytest.raises(ValueError, match="different modules"):
        update_between([LoraPair("x", a, b)], [LoraPair("y", a, b)])


def test_a_failure_on_an_input_whose_bound_says_nothing_is_not_read_as_a_defect():
    """On an ill-conditioned read-back input the a-priori bound admits any direction (min_cosine <= 0):
    the gate still stops, but says the check could not discriminate instead of pointing at the code.
    (Measured: the TriMuon spec's rank 32 at its own LRs on the tiny model, plan cosine 0.738.)"""
    from experiment.sft.steps.correctness_preflight import _verdict

    errors = {"reference_update@lr=0.0001": {"max_abs_error": 5e-5, "reference_max_abs": 7e-5,
                                             "relative_l2_error": 0.7, "cosine_similarity": 0.738}}
    path = {"tolerances": {"reference_update@lr=0.0001": {"atol": 1.6e-4, "rtol": 0.0, "min_cosine": 0.97}}}
    scaling = [{"learning_rate": 1e-4, "update_norm": 1.0}]
    same_code = {"same": False, "reason": ""}
    conditioned = {"reference_update@lr=0.0001": {"atol": 1e-3, "rtol": 0.0, "min_cosine": 0.99}}
    ill_conditioned = {"reference_update@lr=0.0001": {"atol": 0.82, "rtol": 0.0, "min_cosine": -7300.0}}
    defect = _verdict(path, errors, conditioned, same_code, scaling, [0.0], 0.01, {}, [])
    ill_posed = _verdict(path, errors, ill_conditioned, same_code, scaling, [0.0], 0.01, {}, [])
    assert defect.failed and ill_posed.failed  # either way the run stops before training
    assert "polar step" in defect.next_diagnostic and not any("cannot tell" in r for r in defect.reasons)
    assert "ill-conditioned" in ill_posed.next_diagnostic
    assert any("cannot tell a correct implementation from a wrong one" in r for r in ill_posed.reasons)
