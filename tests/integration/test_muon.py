"""DiMuon-lite and TriMuon (embedded_tinker/muon.py) against their definition (docs/optimizers.md).

- the polar steps: singular values near 1 on random and ill-conditioned inputs, and the matrix
  iteration equals the scalar polynomial composition applied to each singular value;
- the server update against the independent float64 reference (experiment/stats/optim_reference.py);
- TriMuon with its treatment disabled reproduces DiMuon-lite exactly;
- LR scaling from fresh state; the stock SDK creating and stepping both families over HTTP.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from embedded_tinker.muon import (
    CUBIC_NEWTON_SCHULZ, NS_REFINEMENTS, POLAR_EXPRESS, POLAR_EXPRESS_STEPS, SAFETY, SWITCH_PASSES,
    polar_express, polar_switch,
)
from embedded_tinker.optimizers import OptimizerError, create_optimizer
from experiment.stats.optim_reference import polar_express_reference, polar_switch_reference, reference_step

torch.set_num_threads(1)


def matrix_with_singular_values(rows: int, singular_values, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    U, _ = torch.linalg.qr(torch.randn(rows, len(singular_values), generator=g, dtype=torch.float64))
    V, _ = torch.linalg.qr(torch.randn(len(singular_values), len(singular_values), generator=g, dtype=torch.float64))
    return ((U * torch.tensor(singular_values, dtype=torch.float64)) @ V.T).float()


def scalar_composition(x: np.ndarray, polynomials) -> np.ndarray:
    for a, b, c in polynomials:
        x = a * x + b * x**3 + c * x**5
    return x


def log_spaced(condition: float, n: int = 8) -> list[float]:
    return [condition ** (-i / (n - 1)) for i in range(n)]


@pytest.mark.parametrize("condition", [1.0, 10.0, 1e3])
def test_polar_express_singular_values_are_near_one(condition):
    X = matrix_with_singular_values(256, log_spaced(condition), seed=int(condition))
    singular_values = torch.linalg.svdvals(polar_express(X).double())
    # Polar Express with 5 steps equioscillates around 1 on [l, 1] (safety factor 1.01 included)
    assert singular_values.min() > 0.75 and singular_values.max() < 1.15, singular_values


def test_polar_express_on_a_random_gaussian_matrix():
    X = torch.randn(300, 16, generator=torch.Generator().manual_seed(3))
    singular_values = torch.linalg.svdvals(polar_express(X).double())
    assert singular_values.min() > 0.75 and singular_values.max() < 1.15


def test_polar_express_acts_on_each_singular_value_as_the_scalar_composition():
    sigma = np.array(log_spaced(1e3, 8))
    X = matrix_with_singular_values(64, sigma, seed=5)
    normalized = sigma / (np.linalg.norm(sigma) * SAFETY + 1e-7)
    expected = np.sort(scalar_composition(normalized, POLAR_EXPRESS[:POLAR_EXPRESS_STEPS]))
    got = np.sort(torch.linalg.svdvals(polar_express(X).double()).numpy())
    np.testing.assert_allclose(got, expected, rtol=2e-3, atol=1e-4)


def test_polar_switch_is_the_scalar_composition_in_an_fp16_core():
    sigma = np.array(log_spaced(10.0, 8))
    X = matrix_with_singular_values(128, sigma, seed=6)
    x = sigma
    for _ in range(SWITCH_PASSES):  # each pass renormalizes, then one Polar Express sweep
        x = scalar_composition(x / (np.linalg.norm(x) * SAFETY + 1e-7), POLAR_EXPRESS[:POLAR_EXPRESS_STEPS])
    expected = np.sort(np.abs(scalar_composition(x, [CUBIC_NEWTON_SCHULZ] * NS_REFINEMENTS)))
    got = np.sort(torch.linalg.svdvals(polar_switch(X).double()).numpy())
    np.testing.assert_allclose(got, expected, atol=5e-3)  # float16 core: ~1e-3 relative


@pytest.mark.parametrize("condition", [1.0, 10.0, 1e3])
def test_polar_switch_singular_values_are_near_one(condition):
    X = matrix_with_singular_values(256, log_spaced(condition), seed=7)
    singular_values = torch.linalg.svdvals(polar_switch(X).double())
    # the cubic refinements converge from Polar Express's [0.75, 1.15]; float16 core limits accuracy
    assert singular_values.min() > 0.99 and singular_values.max() < 1.01, singular_values


def test_wide_and_tall_inputs_give_transposed_results():
    X = torch.randn(8, 200, generator=torch.Generator().manual_seed(9))
    torch.testing.assert_close(polar_express(X), polar_express(X.T).T)
    torch.testing.assert_close(polar_switch(X), polar_switch(X.T).T)


def test_reference_polar_steps_agree_with_the_server_polar_steps():
    X = torch.randn(96, 8, generator=torch.Generator().manual_seed(10))
    np.testing.assert_allclose(polar_express(X).double().numpy(), polar_express_reference(X.numpy()), atol=2e-5)
    np.testing.assert_allclose(polar_switch(X).double().numpy(), polar_switch_reference(X.numpy()), atol=5e-3)


# ---------------------------------------------------------------- optimizer steps on LoRA pairs


def lora_pairs(seed: int, shapes=((8, 64, 96), (8, 64, 64)), b_zero: bool = False):
    """[(A: r x in, B: out x r)] plus fixed gradients, as float32 leaf tensors."""
    g = torch.Generator().manual_seed(seed)
    params, grads = [], []
    for rank, fan_in, fan_out in shapes:
        A = torch.randn(rank, fan_in, generator=g) / fan_in**0.5
        B = torch.zeros(fan_out, rank) if b_zero else torch.randn(fan_out, rank, generator=g) * 0.01
        params += [A.requires_grad_(), B.requires_grad_()]
        grads += [torch.randn(rank, fan_in, generator=g) * 1e-2, torch.randn(fan_out, rank, generator=g) * 1e-2]
    return params, grads


def server_update(family: str, params, grads, config=None, steps: int = 1, lr: float = 1e-3):
    params = [p.detach().clone().requires_grad_() for p in params]
    optimizer = create_optimizer({"type": family, **(config or {})}, params)
    before = [p.detach().clone() for p in params]
    for _ in range(steps):
        for p, g in zip(params, grads):
            p.grad = g.clone()
        optimizer.step({"type": family, "learning_rate": lr, "beta1": 0.9, "grad_clip_norm": 0.0})
    return [(p.detach() - b).double().numpy() for p, b in zip(params, before)], optimizer


def reference_updates(params, grads, steps: int, lr: float, polar_step: str):
    factors = [(params[i].detach().double().numpy(), params[i + 1].detach().double().numpy())
               for i in range(0, len(params), 2)]
    grad_pairs = [(grads[i].double().numpy(), grads[i + 1].double().numpy()) for i in range(0, len(grads), 2)]
    momenta = [(np.zeros_like(a), np.zeros_like(b)) for a, b in factors]
    start = factors
    for _ in range(steps):
        factors, momenta, _ = reference_step(factors, grad_pairs, momenta, lr, polar_step=polar_step)
    return [x for (a0, b0), (a1, b1) in zip(start, factors) for x in (a1 - a0, b1 - b0)]


@pytest.mark.parametrize("family,polar_step,atol", [("dimuon", "polar_express", 1e-7),
                                                     ("trimuon", "polar_switch", 2e-6)])
def test_server_updates_match_the_float64_reference(family, polar_step, atol):
    params, grads = lora_pairs(seed=1)
    lr = 1e-3
    got, _ = server_update(family, params, grads, steps=3, lr=lr)
    want = reference_updates(params, grads, steps=3, lr=lr, polar_step=polar_step)
    for actual, reference in zip(got, want):
        assert np.max(np.abs(actual - reference)) <= atol
        cosine = np.sum(actual * reference) / (np.linalg.norm(actual) * np.linalg.norm(reference))
        assert cosine > 0.9999


def test_trimuon_with_the_treatment_disabled_reproduces_dimuon_lite_exactly():
    params, grads = lora_pairs(seed=2)
    dimuon, _ = server_update("dimuon", params, grads, steps=3)
    disabled, _ = server_update("trimuon", params, grads, {"polar_step": "polar_express"}, steps=3)
    enabled, _ = server_update("trimuon", params, grads, steps=3)
    for a, b in zip(dimuon, disabled):
        np.testing.assert_array_equal(a, b)
    assert any(np.max(np.abs(a - b)) > 1e-6 for a, b in zip(dimuon, enabled))


@pytest.mark.parametrize("family", ["dimuon", "trimuon"])
def test_each_factor_moves_lr_times_sqrt_rank_from_fresh_state(family):
    params, grads = lora_pairs(seed=3)
    for lr in (5e-5, 1e-4, 2e-4):
        updates, _ = server_update(family, params, grads, lr=lr)
        for update in updates:
            assert np.linalg.norm(update) / lr == pytest.approx(8**0.5, rel=1e-4)


def test_zero_b_at_initialization_gives_no_a_update_and_a_finite_b_update():
    params, grads = lora_pairs(seed=4, b_zero=True)
    grads[0::2] = [torch.zeros_like(g) for g in grads[0::2]]  # grad of A is B^T(...) = 0 when B = 0
    updates, _ = server_update("dimuon", params, grads)
    assert all(np.all(u == 0) for u in updates[0::2])
    assert all(np.isfinite(u).all() and np.linalg.norm(u) > 0 for u in updates[1::2])


def test_config_is_declared_checked_and_echoed():
    params, _ = lora_pairs(seed=5)
    optimizer = create_optimizer({"type": "dimuon", "version": 1, "beta1": 0.9, "polar_step": "polar_express"}, params)
    assert optimizer.config == {"type": "dimuon", "version": 1, "polar_step": "polar_express", "beta1": 0.9}
    with pytest.raises(OptimizerError, match="contradict"):
        optimizer.step({"type": "dimuon", "learning_rate": 1e-4, "beta1": 0.5})
    with pytest.raises(OptimizerError, match="polar_step"):
        create_optimizer({"type": "trimuon", "polar_step": "svd"}, params)
    with pytest.raises(OptimizerError, match="does not take"):
        create_optimizer({"type": "dimuon", "damping": 0.1}, params)


def test_state_round_trip_continues_identically():
    params, grads = lora_pairs(seed=6)
    _, optimizer = server_update("trimuon", params, grads, steps=2)
    state = optimizer.state_dict()
    clone = create_optimizer({"type": "trimuon"}, [p.detach().clone().requires_grad_() for p in optimizer.params])
    clone.load_state_dict(state)
    for source in (optimizer, clone):
        for p, g in zip(source.params, grads):
            p.grad = g.clone()
        source.step({"type": "trimuon", "learning_rate": 1e-3})
    for a, b in zip(optimizer.params, clone.params):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


# ---------------------------------------------------------------- the stock SDK over HTTP


def test_the_stock_sdk_trains_with_dimuon_and_trimuon(service_client):
    from tinker import types
    from tinker.types.optimizer import OptimizerConfigBase, OptimParamsBase

    configs = {
        "dimuon": (types.DimuonOptimizerConfig(), lambda lr: types.DimuonParams(learning_rate=lr)),
        "trimuon": (OptimizerConfigBase(type="trimuon", beta1=0.9),
                    lambda lr: OptimParamsBase(type="trimuon", learning_rate=lr, beta1=0.9, grad_clip_norm=0.0)),
    }
    for family, (config, params) in configs.items():
        training = service_client.create_lora_training_client(base_model="embedded/tiny-random", rank=4,
                                                              optimizer=config).result()
        info = training.get_info()
        assert info.optimizer_config.type == family
        tokens = list(range(5, 40))
        datum = types.Datum(model_input=types.ModelInput.from_ints(tokens[:-1]),
                            loss_fn_inputs={"target_tokens": tokens[1:], "weights": [1.0] * (len(tokens) - 1)})
        losses = []
        for _ in range(4):
            out = training.forward_backward([datum], "cross_entropy").result()
            losses.append(out.metrics["loss:sum"])
            training.optim_step(params(0.02)).result()
        assert losses[-1] < losses[0], (family, losses)
        with pytest.raises(Exception, match="do not match"):
            training.optim_step(types.AdamParams(learning_rate=1e-4)).result()
