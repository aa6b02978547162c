"""experiment.stats.optim_reference against docs/optimizers.md, written out here (issue 28 item 7, the
complete mutation run's survivors): the whole Polar Express table (arXiv 2505.16932, Algorithm 1:
safety factor 1.01 on all but the last polynomial, which repeats), the normalization
X / (1.01 ||X||_F + 1e-7) on tiny inputs, Polar Switch's pass and refinement counts on an input
they have not converged on, the preconditioner's zero-Gram case and defining property, the
sqrt(rank) scaling's epsilon, clipping by the global norm (<= 0 off) and the documented defaults."""

from __future__ import annotations

import math

import numpy as np
import pytest

from experiment.stats import optim_reference as ref

# arXiv 2505.16932, Algorithm 1 (literals copied from the paper, not from the module)
TABLE = [
    (8.28721201814563, -23.595886519098837, 17.300387312530933),
    (4.107059111542203, -2.9478499167379106, 0.5448431082926601),
    (3.9486908534822946, -2.908902115962949, 0.5518191394370137),
    (3.3184196573706015, -2.488488024314874, 0.51004894012372),
    (2.300652019954817, -1.6689039845747493, 0.4188073119525673),
    (1.891301407787398, -1.2679958271945868, 0.37680408948524835),
    (1.8750014808534479, -1.2500016453999487, 0.3750001645474248),
    (1.875, -1.25, 0.375),
]


def polar_express_by_hand(X, steps=5):
    Y = np.array(X, dtype=np.float64)
    tall = Y.shape[0] > Y.shape[1]
    if tall:
        Y = Y.T
    Y = Y / (np.linalg.norm(Y) * 1.01 + 1e-7)
    for i in range(steps):
        a, b, c = TABLE[min(i, len(TABLE) - 1)]
        if i < len(TABLE) - 1:
            a, b, c = a / 1.01, b / 1.01 ** 3, c / 1.01 ** 5
        G = Y @ Y.T
        Y = a * Y + b * (G @ Y) + c * (G @ (G @ Y))
    return Y.T if tall else Y


def _ill_conditioned(rows=12, cols=4, seed=3):
    rng = np.random.default_rng(seed)
    U, _ = np.linalg.qr(rng.normal(size=(rows, cols)))
    V, _ = np.linalg.qr(rng.normal(size=(cols, cols)))
    return U @ np.diag([1.0, 1e-2, 1e-4, 1e-6][:cols]) @ V.T


@pytest.mark.parametrize("steps", [5, 7, 8, 9, 11])
def test_polar_express_uses_the_whole_table_and_repeats_its_last_row(steps):
    X = _ill_conditioned()
    np.testing.assert_allclose(ref.polar_express_reference(X, steps=steps), polar_express_by_hand(X, steps),
                               rtol=0, atol=1e-12)


def test_every_row_of_the_table_changes_the_result():
    X = _ill_conditioned()
    for steps in range(6, 10):
        assert np.max(np.abs(ref.polar_express_reference(X, steps=steps)
                             - ref.polar_express_reference(X, steps=steps - 1))) > 1e-9


def test_the_normalization_adds_the_epsilon_on_a_tiny_input():
    X = 3e-8 * _ill_conditioned(6, 3)
    np.testing.assert_allclose(ref.polar_express_reference(X), polar_express_by_hand(X), rtol=1e-9, atol=1e-12)


def test_polar_switch_is_two_sweeps_and_four_refinements_on_an_unconverged_input():
    X = _ill_conditioned()

    def by_hand(passes, refinements):
        Y = X
        for _ in range(passes):
            Y = polar_express_by_hand(Y)
        for _ in range(refinements):
            Y = 1.5 * Y - 0.5 * (Y @ Y.T @ Y)
        return Y

    result = ref.polar_switch_reference(X)
    np.testing.assert_allclose(result, by_hand(2, 4), rtol=0, atol=1e-12)
    for passes, refinements in ((1, 4), (3, 4), (2, 5)):
        assert np.max(np.abs(result - by_hand(passes, refinements))) > 1e-9


def test_a_zero_gram_gives_damping_to_the_minus_half_times_identity():
    np.testing.assert_array_equal(ref.inverse_sqrt_preconditioner(np.zeros((3, 3))), np.eye(3) / math.sqrt(1e-3))


def test_the_preconditioner_is_the_inverse_square_root_of_the_damped_normalized_gram():
    rng = np.random.default_rng(5)
    A = rng.normal(size=(3, 7))
    S = A @ A.T
    P = ref.inverse_sqrt_preconditioner(S)
    damped = S / (np.trace(S) / 3) + 1e-3 * np.eye(3)
    np.testing.assert_allclose(P @ damped @ P, np.eye(3), atol=1e-10)
    np.testing.assert_allclose(P, P.T, atol=1e-12)


def test_a_direction_at_or_below_the_epsilon_is_zero_not_scaled():
    for scale in (1e-9, 1e-7):
        D = np.array([[scale]])
        np.testing.assert_array_equal(ref._scaled_to_sqrt_rank(D, 4), np.zeros((1, 1)))
    np.testing.assert_allclose(ref._scaled_to_sqrt_rank(np.array([[3.0, 4.0]]), 4), [[1.2, 1.6]])


def _pair(seed):
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=(2, 5)), rng.normal(size=(6, 2)))]


def test_clipping_scales_every_gradient_by_clip_over_the_global_norm():
    factors, grads, momenta = _pair(1), [tuple(10 * g for g in _pair(2)[0])], _pair(3)
    grad_norm = math.sqrt(sum(float(np.sum(g ** 2)) for pair in grads for g in pair))
    assert grad_norm / 4 > 1  # a limit above 1
    _, new_momenta, _ = ref.reference_step(factors, grads, momenta, 1e-3, beta1=0.75, grad_clip_norm=grad_norm / 4)
    for (mA, mB), (gA, gB), (oA, oB) in zip(new_momenta, grads, momenta):
        np.testing.assert_allclose(mA, 0.75 * oA + 0.25 * 0.25 * gA, rtol=1e-12)
        np.testing.assert_allclose(mB, 0.75 * oB + 0.25 * 0.25 * gB, rtol=1e-12)
    # a limit below 1 clips too
    _, small, _ = ref.reference_step(factors, grads, momenta, 1e-3, beta1=0.75, grad_clip_norm=0.5)
    np.testing.assert_allclose(small[0][1], 0.75 * momenta[0][1] + 0.25 * (0.5 / grad_norm) * grads[0][1], rtol=1e-12)
    # a limit above the norm, 0 and a negative limit leave the gradients as they are (<= 0 is off)
    for limit in (grad_norm * 2, 0.0, -1.0):
        _, unclipped, _ = ref.reference_step(factors, grads, momenta, 1e-3, beta1=0.75, grad_clip_norm=limit)
        np.testing.assert_allclose(unclipped[0][0], 0.75 * momenta[0][0] + 0.25 * grads[0][0], rtol=1e-12)


def test_the_defaults_are_beta1_0_9_and_no_clipping():
    factors, grads, momenta = _pair(1), [tuple(10 * g for g in _pair(2)[0])], _pair(3)
    default = ref.reference_step(factors, grads, momenta, 1e-3)
    explicit = ref.reference_step(factors, grads, momenta, 1e-3, beta1=0.9, grad_clip_norm=0.0,
                                  polar_step="polar_express")
    for got, wanted in zip(default[1][0] + default[2][0], explicit[1][0] + explicit[2][0]):
        np.testing.assert_array_equal(got, wanted)


@pytest.mark.parametrize("beta1", [0.0, 0.3, 0.5, 0.95])
def test_the_momentum_is_the_exponential_average_for_any_beta1(beta1):
    """m' = beta1 m + (1 - beta1) g, unclipped, for a beta1 at or below one half too: the tests above use 0.75 and
    0.9, where 1 % beta1 happens to equal 1 - beta1 (a surviving mutant of both momentum lines)."""
    factors, grads, momenta = _pair(1), _pair(2), _pair(3)
    _, new_momenta, _ = ref.reference_step(factors, grads, momenta, 1e-3, beta1=beta1)
    for (mA, mB), (gA, gB), (oA, oB) in zip(new_momenta, grads, momenta):
        np.testing.assert_allclose(mA, beta1 * oA + (1 - beta1) * gA, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(mB, beta1 * oB + (1 - beta1) * gB, rtol=1e-12, atol=1e-15)
