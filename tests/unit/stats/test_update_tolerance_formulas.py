"""experiment.stats.update_tolerance's building blocks against the formulas of its docstring and
docs/optimizers.md ("Error analysis of the update check"), computed here by hand (issue 28 item 7,
the complete mutation run's survivors): gamma_n, the fixed input's shapes and state, and the
first-order chain (Daleckii-Krein slot factors per step; the bound sums each injected error times
the largest product of the later steps' factors)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from experiment.stats import optim_reference as ref
from experiment.stats import update_tolerance as ut


def test_gamma_is_n_u_over_one_minus_n_u():
    assert ut.gamma(10, 0.01) == pytest.approx(0.1 / 0.9, rel=1e-15)
    assert ut.gamma(3, 2.0 ** -11) == pytest.approx(3 * 2.0 ** -11 / (1 - 3 * 2.0 ** -11), rel=1e-15)


def test_the_fixed_input_is_the_tiny_models_projections_at_step_3():
    fixed = ut.fixed_optimizer_input(4)
    assert fixed["steps_taken"] == 3 and fixed["seed"] == 0
    shapes = [(pair["A"].shape, pair["B"].shape) for pair in fixed["pairs"]]
    # attention 128->128, MLP 128->512 and 512->128: A is rank x in, B is out x rank
    assert shapes == [((4, 128), (128, 4)), ((4, 128), (512, 4)), ((4, 512), (128, 4))]
    assert all(pair[key].dtype == np.float32 for pair in fixed["pairs"] for key in pair)


def _cube(x):
    return x ** 3


def _cube_slope(x):
    return 3 * x ** 2


def test_one_step_has_the_daleckii_krein_factors_of_each_slot():
    chain = ut._Chain(np.array([2.0, 1.0]), initial_error=0.0)
    chain.step(_cube, _cube_slope, injected=0.5)
    # diagonal p'(s): 12, 3; pair (2, 1): symmetric (8 - 1) / (2 - 1) = 7, skew (8 + 1) / (2 + 1) = 3;
    # outside the row space p(s) / s: 4, 1
    np.testing.assert_allclose(chain.factors[0], [12.0, 3.0, 7.0, 3.0, 4.0, 1.0], rtol=1e-15)
    np.testing.assert_allclose(chain.sigmas, [8.0, 1.0])
    assert chain.injected == [0.5]


def test_three_values_give_every_pair_once_row_by_row():
    chain = ut._Chain(np.array([3.0, 2.0, 1.0]), initial_error=0.0)
    chain.step(_cube, _cube_slope, injected=0.0)
    # pairs (3,2), (3,1), (2,1): symmetric 19, 13, 7; skew 35/5 = 7, 28/4 = 7, 9/3 = 3
    np.testing.assert_allclose(chain.factors[0], [27, 12, 3, 19, 13, 7, 7, 7, 3, 9, 4, 1], rtol=1e-15)


def test_equal_values_take_the_slope_as_their_symmetric_factor():
    chain = ut._Chain(np.array([1.0, 1.0 + 1e-13]), initial_error=0.0)
    chain.step(_cube, _cube_slope, injected=0.0)
    assert chain.factors[0][2] == pytest.approx(3.0, rel=1e-9)
    far = ut._Chain(np.array([1.0, 1.0 + 1e-6]), initial_error=0.0)
    far.step(_cube, _cube_slope, injected=0.0)
    assert far.factors[0][2] == pytest.approx(((1 + 1e-6) ** 3 - 1) / 1e-6, rel=1e-9)


def test_the_bound_carries_each_error_through_the_later_steps():
    chain = ut._Chain(np.array([2.0, 1.0]), initial_error=0.25)
    chain.step(_cube, _cube_slope, injected=0.5)

    def half(x):
        return x / 2

    def half_slope(x):
        return 0.5

    chain.step(half, half_slope, injected=0.125)
    first = np.array([12.0, 3.0, 7.0, 3.0, 4.0, 1.0])
    second = np.full(6, 0.5)
    wanted = 0.125 * 1.0 + 0.5 * float(np.max(second)) + 0.25 * float(np.max(first * second))
    assert chain.bound() == pytest.approx(wanted, rel=1e-15)
    assert wanted == 0.125 + 0.25 + 1.5


def test_a_chain_without_steps_is_its_initial_error():
    assert ut._Chain(np.array([1.0]), initial_error=0.75).bound() == 0.75
    assert not math.isnan(ut._Chain(np.array([1.0]), initial_error=0.0).bound())


# ---- each step's injected rounding, written out from docs/optimizers.md on matrices whose norms are
# known from their singular values (Y = diag(s) padded with zeros: G = diag(s^2), ||.||_2 = max, ||.||_F = l2)

U = 2.0 ** -24
U16 = 2.0 ** -11


def _padded_diagonal(values, rows, cols):
    out = np.zeros((rows, cols))
    out[range(len(values)), range(len(values))] = values
    return out


def _fro(values):
    return math.sqrt(sum(float(v) ** 2 for v in values))


def _rotated(s, rows, cols, rotate):
    """U diag(s) V^T with fixed random orthogonal U, V (or diag(s) itself): every norm the bound uses is
    unitarily invariant, so its terms depend on the singular values s alone; rotated, the matrices are
    full and ||.||_1 or ||.||_inf no longer equal ||.||_2."""
    if not rotate:
        return _padded_diagonal(s, rows, cols), np.eye(rows), np.eye(cols)
    rng = np.random.default_rng(11)
    left, _ = np.linalg.qr(rng.standard_normal((rows, rows)))
    right, _ = np.linalg.qr(rng.standard_normal((cols, cols)))
    return left @ _padded_diagonal(s, rows, cols) @ right.T, left, right


@pytest.mark.parametrize("rotate", [False, True])
def test_a_polar_express_sweep_injects_the_documented_rounding_of_each_step(rotate):
    r, k = 2, 3
    s = np.array([3.0, 1.0])
    start, left, right = _rotated(s, r, k, rotate)
    Y, chain = ut._polar_express_sweep(start, None, 0.5)
    scale = 1.0 / (_fro(s) * ref._SAFETY + ref._EPS)
    np.testing.assert_allclose(chain.factors[0], np.full(6, scale), rtol=1e-14)  # x -> scale x on every slot
    assert chain.initial_error == 0.5
    s = s * scale
    wanted = [(ut.gamma(r * k, U) / 2 + 2 * U) * _fro(s)]  # the norm (length rk) and the division
    for step in range(ref._PE_STEPS):
        a, b, c = ref._polynomial(step)
        g = s ** 2
        m = b * g + c * g ** 2
        new = a * s + m * s
        d_g = ut.gamma(k, U) * _fro(s) ** 2
        d_gg = 2 * max(g) * d_g + ut.gamma(r, U) * _fro(g) ** 2
        d_m = abs(b) * d_g + abs(c) * d_gg + 2 * U * (abs(b) * _fro(g) + abs(c) * _fro(g) ** 2)
        wanted.append(d_m * max(s) + ut.gamma(r, U) * _fro(m) * _fro(s) + U * abs(a) * _fro(s) + U * _fro(new))
        s = new
    np.testing.assert_allclose(chain.injected, wanted, rtol=1e-12)
    np.testing.assert_allclose(chain.sigmas, s, rtol=1e-12)
    np.testing.assert_allclose(Y, left @ _padded_diagonal(s, r, k) @ right.T, atol=1e-13)


def test_a_sweep_on_a_started_chain_continues_it_and_ignores_error_in():
    started = ut._Chain(np.array([3.0, 1.0]), initial_error=0.25)
    _, chain = ut._polar_express_sweep(_padded_diagonal([3.0, 1.0], 2, 3), started, 99.0)
    assert chain is started and chain.initial_error == 0.25
    assert len(chain.injected) == len(chain.factors) == 1 + ref._PE_STEPS


def _refinement_slots(s):
    """Daleckii-Krein factors of p(x) = 1.5 x - 0.5 x^3 on two singular values, slot by slot."""
    def p(x):
        return 1.5 * x - 0.5 * x ** 3
    return [abs(1.5 - 1.5 * s[0] ** 2), abs(1.5 - 1.5 * s[1] ** 2), abs((p(s[0]) - p(s[1])) / (s[0] - s[1])),
            abs((p(s[0]) + p(s[1])) / (s[0] + s[1])), abs(p(s[0]) / s[0]), abs(p(s[1]) / s[1])]


@pytest.mark.parametrize("rotate", [False, True])
def test_the_folded_core_injects_the_documented_float16_rounding_of_each_refinement(rotate):
    r, k = 2, 3  # Y is r x k; the core works on Yt = Y^T (k x r)
    s = np.array([0.9, 0.6])
    chain = ut._Chain(s.copy(), 0.0)
    start, left, right = _rotated(s, r, k, rotate)
    out, chain = ut._folded_cubic_core(start, chain)
    g = s ** 2
    d_g = (ut.gamma(k, U) + U16) * _fro(g)  # float32 Gram, cast to float16
    one_product = U16 + ut.gamma(r, U)
    q = np.ones(r)
    wanted = []
    for _ in range(ref._NS_REFINEMENTS):
        m = 1.5 - 0.5 * q ** 2 * g
        d_s = max(abs(q)) ** 2 * d_g + 2 * one_product * max(abs(q)) ** 2 * _fro(g)
        d_m = 0.5 * d_s + 2 * U16 * _fro(m)
        d_q = max(abs(q)) * d_m + one_product * max(abs(q)) * _fro(m)
        wanted.append(max(s) * d_q)
        q = q * m
    wanted.append(ut.gamma(r, U) * _fro(s) * max(abs(q)))  # Yt @ Q
    np.testing.assert_allclose(chain.injected, wanted, rtol=1e-12)
    refined = s.copy()
    for _ in range(ref._NS_REFINEMENTS):
        refined = 1.5 * refined - 0.5 * refined ** 3
    np.testing.assert_allclose(chain.sigmas, refined, rtol=1e-12)
    np.testing.assert_allclose(s * q, refined, rtol=1e-12)
    np.testing.assert_allclose(out, left @ _padded_diagonal(refined, r, k) @ right.T, atol=1e-13)
    slots, current = [], s.copy()
    for _ in range(ref._NS_REFINEMENTS):
        slots.append(_refinement_slots(current))
        current = 1.5 * current - 0.5 * current ** 3
    np.testing.assert_allclose(chain.factors[:-1], slots, rtol=1e-12)
    np.testing.assert_allclose(chain.factors[-1], np.ones(6), rtol=1e-14)  # the final Yt Q is the identity map


def _inverse_sqrt(x, mu):
    return (max(x, 0.0) / mu + ref._DAMPING) ** -0.5


def _inverse_sqrt_slope(x, mu):
    return 0.5 / mu * (max(x, 0.0) / mu + ref._DAMPING) ** -1.5


@pytest.mark.parametrize("eigenvalues", [(4.0, 1.0), (3.0, -1.0), (2.0, 2.0), (0.5, 7.0, 2.0), (1.0, 1.25), (1.0, 1.001),
                                         (1e-3, 2e-3), (3.0, 1.0, -1.0), (-0.0005, 0.0001, 3.0),
                                         (0.5, 1.5, 298.0)])  # a large mean: S / mu, not S ** mu (a survivor)
def test_the_preconditioners_bound_is_its_lipschitz_constant_times_twice_the_grams_error(eigenvalues):
    S = np.diag(eigenvalues)
    mu = sum(eigenvalues) / len(eigenvalues)
    P, bound = ut._preconditioner(S, 5, 2.0)
    np.testing.assert_allclose(P, np.diag([_inverse_sqrt(x, mu) for x in eigenvalues]), rtol=1e-12)
    divided = [abs((_inverse_sqrt(x, mu) - _inverse_sqrt(y, mu)) / (x - y))
               for x in eigenvalues for y in eigenvalues if x != y]
    lipschitz = max([_inverse_sqrt_slope(x, mu) for x in eigenvalues] + divided)
    wanted = 2 * lipschitz * ut.gamma(5, U) * 2.0 + U * _fro(np.diag(P))
    assert bound == pytest.approx(wanted, rel=1e-12)


@pytest.mark.parametrize("eigenvalues", [(0.0, 0.0), (1.0, -1.0), (-2.0, 1.0)])
def test_a_gram_with_no_positive_mean_costs_only_the_cast_of_its_preconditioner(eigenvalues):
    P, bound = ut._preconditioner(np.diag(eigenvalues), 5, 2.0)
    np.testing.assert_allclose(P, np.eye(2) / math.sqrt(ref._DAMPING))
    assert bound == pytest.approx(U * math.sqrt(2 / ref._DAMPING), rel=1e-12)


# ---- a factor's direction bound: the documented composition of the steps above

def _small_pair(seed=3, rank=2, fan_in=5, fan_out=4):
    rng = np.random.default_rng(seed)
    return {"A": rng.standard_normal((rank, fan_in)), "B": rng.standard_normal((fan_out, rank)) * 0.1,
            "momentum_A": rng.standard_normal((rank, fan_in)) * 1e-3,
            "momentum_B": rng.standard_normal((fan_out, rank)) * 1e-3,
            "grad_A": rng.standard_normal((rank, fan_in)) * 1e-2, "grad_B": rng.standard_normal((fan_out, rank)) * 1e-2}


def _direction_bound_from_the_derivation(pair, beta1, treatment, gradient_error):
    """docs/optimizers.md: momentum (3 u32 ||m||, plus (1 - beta1) of the gradient's error), the
    preconditioner of the OTHER factor's Gram (P_B on the left of A's momentum, P_A on the right of B's),
    its product, the polar chain on the short side, the product with P again, and the rescale."""
    A, B = pair["A"], pair["B"]
    rank = A.shape[0]
    P_A, dP_A = ut._preconditioner(A @ A.T, A.shape[1], _fro(A.ravel()) ** 2)
    P_B, dP_B = ut._preconditioner(B.T @ B, B.shape[0], _fro(B.ravel()) ** 2)
    out = {}
    for name, P, dP, error in (("A", P_B, dP_B, gradient_error[0]), ("B", P_A, dP_A, gradient_error[1])):
        m = beta1 * pair[f"momentum_{name}"] + (1 - beta1) * pair[f"grad_{name}"]
        X = P @ m if name == "A" else m @ P
        d_m = 3 * U * _fro(m.ravel()) + (1 - beta1) * error
        d_x = d_m * np.linalg.norm(P, 2) + _fro(m.ravel()) * dP + ut.gamma(rank, U) * _fro(m.ravel()) * _fro(P.ravel())
        wide = X.shape[0] <= X.shape[1]
        Y, chain = ut._polar_express_sweep(X if wide else X.T, None, d_x)
        if treatment:
            Y, chain = ut._polar_express_sweep(Y, chain, 0.0)
            Y, chain = ut._folded_cubic_core(Y, chain)
        polar = Y if wide else Y.T
        D = P @ polar if name == "A" else polar @ P
        d_d = (chain.bound() * np.linalg.norm(P, 2) + _fro(polar.ravel()) * dP
               + ut.gamma(rank, U) * _fro(polar.ravel()) * _fro(P.ravel()))
        out[name] = 2 * d_d / _fro(D.ravel()) + ut.gamma(D.size, U) / 2 + 2 * U
    return out


@pytest.mark.parametrize("beta1", [0.8, 0.3])  # below 0.5, 1 - beta1 and 1 % beta1 differ
@pytest.mark.parametrize("treatment", [False, True])
@pytest.mark.parametrize("gradient_error", [(0.0, 0.0), (1e-3, 0.0), (0.0, 2e-3)])
def test_a_factors_direction_bound_follows_the_derivation(treatment, gradient_error, beta1):
    pair = _small_pair()
    got = ut._direction_bounds(pair, beta1, treatment, gradient_error)
    wanted = _direction_bound_from_the_derivation(pair, beta1, treatment, gradient_error)
    assert got == pytest.approx(wanted, rel=1e-10)


def test_a_gradients_error_loosens_only_its_own_factors_bound():
    pair = _small_pair()
    exact = ut._direction_bounds(pair, 0.9, True)
    loose_a = ut._direction_bounds(pair, 0.9, True, (1e-3, 0.0))
    loose_b = ut._direction_bounds(pair, 0.9, True, (0.0, 1e-3))
    assert loose_a["A"] > exact["A"] and loose_a["B"] == exact["B"]
    assert loose_b["B"] > exact["B"] and loose_b["A"] == exact["A"]
    # first order: the bound is affine in the gradient's error
    twice = ut._direction_bounds(pair, 0.9, True, (2e-3, 0.0))
    assert twice["A"] - loose_a["A"] == pytest.approx(loose_a["A"] - exact["A"], rel=1e-9)


def test_tall_and_wide_factors_are_iterated_on_their_short_side():
    # A is rank x fan_in (wide), B fan_out x rank (tall): both bounds finite and the same for the
    # transposed problem (A <-> B^T swaps which factor is which)
    pair = _small_pair(rank=3, fan_in=7, fan_out=6)
    mirrored = {"A": pair["B"].T, "B": pair["A"].T, "momentum_A": pair["momentum_B"].T,
                "momentum_B": pair["momentum_A"].T, "grad_A": pair["grad_B"].T, "grad_B": pair["grad_A"].T}
    bounds = ut._direction_bounds(pair, 0.9, True)
    swapped = ut._direction_bounds(mirrored, 0.9, True)
    assert bounds["A"] == pytest.approx(swapped["B"], rel=1e-9)
    assert bounds["B"] == pytest.approx(swapped["A"], rel=1e-9)


def test_the_checks_are_the_treatment_chain_and_twice_the_float32_chain_per_factor():
    pairs = [_small_pair(seed) for seed in (1, 2)]
    errors = [(1e-3, 0.0), (0.0, 5e-4)]
    per_pair = [(ut._direction_bounds(p, 0.85, True, e), ut._direction_bounds(p, 0.85, False, e))
                for p, e in zip(pairs, errors)]
    rho = ut.relative_direction_bounds_for(pairs, 0.85, errors)
    assert rho["reference_update"] == [t[name] for t, _ in per_pair for name in ("A", "B")]
    assert rho["baseline_update"] == [2 * d[name] for _, d in per_pair for name in ("A", "B")]
    assert ut.relative_direction_bounds_for(pairs, 0.85) == ut.relative_direction_bounds_for(
        pairs, 0.85, [(0.0, 0.0)] * 2)
    with pytest.raises(ValueError):
        ut.relative_direction_bounds_for(pairs, 0.85, errors[:1])  # one error per pair


# ---- tolerances from rho: the documented atol and min_cosine, the LR-scaling bound, rounding

def test_round_up_keeps_two_significant_digits_away_from_acceptance():
    assert ut._round_up(0.0) == 0.0 and ut._round_up(-3.0) == 0.0
    assert ut._round_up(1234.0) == 1300.0
    assert ut._round_up(1200.0) == 1200.0
    assert ut._round_up(0.5) == 0.5 and ut._round_up(0.501) == 0.51
    assert ut._round_up(2.0e-7 * 1.001) == 2.1e-7
    assert ut._round_up(9.91) == 10.0
    # min_cosine: 1 - x rounded up, so the cosine moves down (0.9876 -> 1 - 0.013)
    assert ut._round_down(0.75) == 0.75 and ut._round_down(0.9876) == pytest.approx(0.987, rel=1e-12)


@pytest.mark.parametrize("learning_rate", [0.25 / math.sqrt(2), 0.1, 1e-3])
def test_atol_and_min_cosine_are_the_direction_error_plus_the_float32_storage(learning_rate):
    pairs = [{"A": np.full((2, 4), 0.5), "B": np.full((3, 2), -0.25)}]
    max_abs, frobenius, n_factors, rank = 0.5, math.sqrt(8 * 0.25 + 6 * 0.0625), 2, 2
    rho = {"storage_only": [0.0, 0.0], "direction": [0.01, 0.03]}
    got = ut.tolerances_for(pairs, learning_rate, rank, rho)
    step = learning_rate * math.sqrt(rank)
    # X - lr D rounds twice and X + dX once (3 u on |X| + step), the step itself once more
    storage_max = 3 * U * (max_abs + step) + U * step
    storage_fro = 3 * U * (frobenius + step * math.sqrt(n_factors)) + U * step * math.sqrt(n_factors)
    for check, per_factor in rho.items():
        error = math.sqrt(sum((step * x) ** 2 for x in per_factor)) + storage_fro
        assert got[check] == {"atol": ut._round_up(step * max(per_factor) + storage_max), "rtol": 0.0,
                              "min_cosine": ut._round_down(1.0 - (error / (step * math.sqrt(n_factors))) ** 2)}


# rank 1 at lr 0.5: the storage terms are a few u32 next to gamma_N, and the two-digit rounding still
# separates them (6.3e-5 against 6.2e-5 for a sign or an operator changed in e(lr))
@pytest.mark.parametrize("rank,rates", [(4, [1e-3, 1e-4, 1e-2]), (1, [0.5])])
def test_the_lr_scaling_tolerance_is_the_worst_probe_plus_the_first(rank, rates):
    factors = [pair[f].astype(np.float64) for pair in ut.fixed_optimizer_input(rank)["pairs"] for f in ("A", "B")]
    frobenius = math.sqrt(sum(float((x ** 2).sum()) for x in factors))
    largest = max(x.size for x in factors)

    def storage(lr):
        step = lr * math.sqrt(rank) * math.sqrt(len(factors))
        return (3 * U * (frobenius + step) + U * step) / step + ut.gamma(largest, U)

    assert ut.lr_scaling_tolerance(rates, rank) == ut._round_up(max(storage(lr) + storage(rates[0]) for lr in rates))
    if rank == 4:  # the smallest step has the largest relative storage error
        assert ut.lr_scaling_tolerance(rates, rank) == ut._round_up(storage(1e-4) + storage(1e-3))
    assert ut._factor_norms(rank) == (max(float(np.abs(x).max()) for x in factors), pytest.approx(frobenius),
                                      len(factors), largest)


def test_a_measured_input_gets_the_same_analysis_as_the_fixed_one():
    rank, rates = 4, [1e-3, 3e-2]
    fixed = ut.fixed_optimizer_input(rank)["pairs"]
    assert ut.input_tolerances(fixed, rates) == ut.update_check_plan(rates, rank)["tolerances"]
    assert ut.tolerances(3e-2, rank) == {check: ut.update_check_plan(rates, rank)["tolerances"][
        ut.check_key(check, 3e-2)] for check in ut.CHECKS}
    looser = ut.input_tolerances(fixed, rates, gradient_errors=[(1e-2, 1e-2)] * len(fixed))
    for key, tol in ut.input_tolerances(fixed, rates).items():
        assert looser[key]["atol"] >= tol["atol"] and looser[key]["min_cosine"] <= tol["min_cosine"]
    assert any(looser[key]["atol"] > tol["atol"] for key, tol in ut.input_tolerances(fixed, rates).items())


def test_a_one_step_chain_carries_its_initial_error_through_that_step():
    chain = ut._Chain(np.array([1.5, 0.5]), initial_error=0.5)
    chain.step(_cube, _cube_slope, injected=0.25)
    # slots: p'(s) 6.75, 0.75; symmetric (3.375 - 0.125) / 1 = 3.25; skew 3.5 / 2 = 1.75; outside 2.25, 0.25
    np.testing.assert_allclose(chain.factors[0], [6.75, 0.75, 3.25, 1.75, 2.25, 0.25], rtol=1e-15)
    assert chain.bound() == pytest.approx(0.25 + 0.5 * 6.75, rel=1e-15)


def test_a_gap_of_exactly_the_threshold_counts_as_equal_values():
    s = np.array([2e-12, 1e-12])
    assert s[0] - s[1] == 1e-12
    chain = ut._Chain(s, initial_error=0.0)
    chain.step(_cube, _cube_slope, injected=0.0)
    assert chain.factors[0][2] == pytest.approx(_cube_slope(2e-12), rel=1e-12, abs=0)  # p'(s_i), not the quotient


def test_the_analysis_defaults_to_the_specs_momentum_and_exact_gradients():
    # the spec's optimizer (specs/trimuon_vs_dimuon_no_robots.json): beta1=0.9; the fixed input's
    # gradients are given exactly (no recovery error)
    rank, rates = 4, [1e-3]
    fixed = ut.fixed_optimizer_input(rank)["pairs"]
    at_spec = ut.relative_direction_bounds_for(fixed, 0.9)
    assert ut.relative_direction_bounds(rank) == at_spec
    assert ut.relative_direction_bounds_for(fixed) == at_spec
    assert ut.tolerances(1e-3, rank) == ut.tolerances_for(fixed, 1e-3, rank, at_spec)
    assert ut.update_check_plan(rates, rank)["tolerances"] == ut.update_check_plan(rates, rank, 0.9)["tolerances"]
    assert ut.input_tolerances(fixed, rates) == ut.input_tolerances(fixed, rates, 0.9)
    assert ut.update_check_plan(rates, rank, 0.5)["tolerances"] != ut.update_check_plan(rates, rank)["tolerances"]
    pair = _small_pair()
    assert ut._direction_bounds(pair, 0.9, True) == ut._direction_bounds(pair, 0.9, True, (0.0, 0.0))


def test_the_plan_records_every_check_at_every_rate_and_the_lr_scaling_bound():
    rank, rates = 4, [1e-3, 3e-2]
    plan = ut.update_check_plan(rates, rank)
    assert sorted(plan["tolerances"]) == sorted(f"{check}@lr={lr:g}" for check in ut.CHECKS for lr in rates)
    assert plan["lr_scaling"] == {"learning_rates": rates, "max_relative_change": ut.lr_scaling_tolerance(rates, rank)}
    assert ut.check_key("reference_update", 0.04) == "reference_update@lr=0.04"
