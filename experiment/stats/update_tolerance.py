"""A priori error bound of one DiMuon-lite / TriMuon update: the correctness tolerances, fixed
before anything is measured (derivation: docs/optimizers.md, "Error analysis of the update check").

The correctness preflight compares the server's update (float32 factors, float32 Polar Express,
TriMuon's float16 core) with the float64 reference (experiment/stats/optim_reference.py) on one fixed
input (`fixed_optimizer_input`), at EVERY learning rate the sweep trains. What the two may differ
by follows from the algorithm, the precisions and the fixed input alone, never from an observed
error:

    ||D_impl - D_ref||_F <= rho * ||D_ref||_F            per factor, ||D_ref||_F = sqrt(rank)
    update = -lr * D, stored in float32                   so the bound is linear in lr plus a
                                                          storage-rounding floor

`rho` is a first-order forward error bound: every rounding (unit roundoff u32 = 2^-24 for float32,
u16 = 2^-11 for the float16 core) is bounded with the standard model |fl(x op y) - x op y| <=
u |x op y| and gamma_n = n u / (1 - n u) for inner products of length n, and carried through the
rest of the computation by the Frechet derivative of each step, bounded with the Daleckii-Krein
divided differences of the step's polynomial on the singular values the float64 reference
iterates actually have on the fixed input. `tolerances(lr, rank)` returns, per check, the
contract's {atol, rtol, min_cosine} at that learning rate; the plan files record its output and
tests/unit/test_update_tolerance.py holds them equal.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from experiment.stats import optim_reference as ref

U32 = 2.0**-24  # float32 unit roundoff
U16 = 2.0**-11  # float16 unit roundoff (TriMuon's core)
FIXED_INPUT_SEED = 0
FIXED_INPUT_STEPS_TAKEN = 3
# (in, out) of the LoRA pairs of the fixed input: the tiny model's attention 128->128 and MLP
# 128->512->128 projections
FIXED_INPUT_SHAPES = ((128, 128), (128, 512), (512, 128))
ANALYSIS = "docs/optimizers.md#error-analysis-of-the-update-check"
CHECKS = ("reference_update", "baseline_update")


def gamma(n: int, u: float) -> float:
    return n * u / (1.0 - n * u)


def fixed_optimizer_input(rank: int) -> dict[str, Any]:
    """LoRA pairs shaped like the tiny model's projections, a mid-training state (B nonzero,
    momentum nonzero, step 3) and one gradient per factor, float32, from seed 0."""
    rng = np.random.default_rng(FIXED_INPUT_SEED)
    pairs = []
    for fan_in, fan_out in FIXED_INPUT_SHAPES:
        pairs.append({
            "A": (rng.standard_normal((rank, fan_in)) / math.sqrt(fan_in)).astype(np.float32),
            "B": (rng.standard_normal((fan_out, rank)) * 0.02).astype(np.float32),
            "momentum_A": (rng.standard_normal((rank, fan_in)) * 1e-3).astype(np.float32),
            "momentum_B": (rng.standard_normal((fan_out, rank)) * 1e-3).astype(np.float32),
            "grad_A": (rng.standard_normal((rank, fan_in)) * 1e-2).astype(np.float32),
            "grad_B": (rng.standard_normal((fan_out, rank)) * 1e-2).astype(np.float32),
        })
    return {"seed": FIXED_INPUT_SEED, "pairs": pairs, "steps_taken": FIXED_INPUT_STEPS_TAKEN}


# ---------------------------------------------------------------- first-order propagation
#
# Every step of the polar computation is an odd matrix polynomial Y -> p(Y) acting on singular
# values (Polar Express, the cubic refinements; a scalar for a normalization). In exact arithmetic
# the singular vectors stay fixed and sigma_i -> p(sigma_i), so a first-order perturbation keeps its
# slot in the SVD basis and is multiplied, per step, by that slot's Daleckii-Krein factor:
#     (i, i): p'(s_i)
#     (i, j), symmetric part: (p(s_i) - p(s_j)) / (s_i - s_j)    skew part: (p(s_i) + p(s_j)) / (s_i + s_j)
#     (i, outside Y's row space): p(s_i) / s_i
# (the symmetric and skew parts of an (i, j) pair evolve separately, so each is its own slot)
# An error injected after step l therefore reaches the end multiplied by at most
# max over slots of the product of that slot's factors over the later steps.


class _Chain:
    """Singular values of the float64 trajectory, the injected rounding errors (absolute Frobenius)
    and each step's slot factors."""

    def __init__(self, sigmas: np.ndarray, initial_error: float):
        self.sigmas = np.asarray(sigmas, dtype=np.float64)
        self.initial_error = initial_error
        self.factors: list[np.ndarray] = []
        self.injected: list[float] = []

    def step(self, p, dp, injected: float) -> None:
        s = self.sigmas
        values = np.array([p(x) for x in s])
        slopes = np.array([abs(dp(x)) for x in s])
        i, j = np.triu_indices(len(s), 1)  # every pair (i < j), row by row
        gap = s[i] - s[j]
        close = np.abs(gap) <= 1e-12
        symmetric = np.where(close, slopes[i], np.abs((values[i] - values[j]) / np.where(close, 1.0, gap)))
        skew = np.abs((values[i] + values[j]) / (s[i] + s[j]))
        outside = np.abs(values / s)
        self.factors.append(np.concatenate([slopes, symmetric, skew, outside]))
        self.injected.append(injected)
        self.sigmas = values

    def bound(self) -> float:
        """Absolute Frobenius error bound at the end of the chain."""
        total, suffix = 0.0, np.ones_like(self.factors[0]) if self.factors else np.ones(1)
        for factors, injected in zip(reversed(self.factors), reversed(self.injected)):
            total += injected * float(np.max(suffix))
            suffix = suffix * factors
        return total + self.initial_error * float(np.max(suffix))


def _polar_express_sweep(Y: np.ndarray, chain: _Chain | None, error_in: float) -> tuple[np.ndarray, _Chain]:
    """One float32 Polar Express sweep on Y (r x k, short side first), on the float64 trajectory.
    `error_in` is the absolute Frobenius error of Y when the chain starts here."""
    r, k = Y.shape
    norm = np.linalg.norm(Y)
    scale = 1.0 / (norm * ref._SAFETY + ref._EPS)
    if chain is None:
        chain = _Chain(np.linalg.svd(Y, compute_uv=False), error_in)
    Y = Y * scale
    # the norm (a length-rk sum of squares) and the division: a rounding of Y's scale
    chain.step(lambda x: scale * x, lambda x: scale, (gamma(r * k, U32) / 2 + 2 * U32) * np.linalg.norm(Y))
    for i in range(ref._PE_STEPS):
        a, b, c = ref._polynomial(i)
        G = Y @ Y.T
        M = b * G + c * (G @ G)
        new = a * Y + M @ Y
        nY, nY2, nG, nG2, nM = (np.linalg.norm(Y), np.linalg.norm(Y, 2), np.linalg.norm(G), np.linalg.norm(G, 2),
                                np.linalg.norm(M))
        dG = gamma(k, U32) * nY**2                               # G = Y Y^T
        dGG = 2 * nG2 * dG + gamma(r, U32) * nG**2               # G @ G
        dM = abs(b) * dG + abs(c) * dGG + 2 * U32 * (abs(b) * nG + abs(c) * nG**2)  # scale, scale, add
        eta = (dM * nY2 + gamma(r, U32) * nM * nY                # M @ Y
               + U32 * abs(a) * nY + U32 * np.linalg.norm(new))  # a * Y, then the add
        chain.step(lambda x, a=a, b=b, c=c: a * x + b * x**3 + c * x**5,
                   lambda x, a=a, b=b, c=c: a + 3 * b * x**2 + 5 * c * x**4, eta)
        Y = new
    return Y, chain


def _folded_cubic_core(Y: np.ndarray, chain: _Chain) -> tuple[np.ndarray, _Chain]:
    """TriMuon's 4 cubic Newton-Schulz refinements folded into Q (float16 core, float32
    accumulation), on the tall Yt = Y^T; the iterate is Yt Q, an error dQ enters as Yt dQ."""
    Yt = Y.T
    k, r = Yt.shape
    G = Yt.T @ Yt
    nYt2, nG = np.linalg.norm(Yt, 2), np.linalg.norm(G)
    dG = (gamma(k, U32) + U16) * nG  # float32 Gram, then the cast to float16
    Q = np.eye(r)
    one_product = U16 + gamma(r, U32)  # float16 output of a float32-accumulated product
    for _ in range(ref._NS_REFINEMENTS):
        S = Q.T @ G @ Q
        M = 1.5 * np.eye(r) - 0.5 * S
        nQ2 = np.linalg.norm(Q, 2)
        dS = nQ2**2 * dG + 2 * one_product * nQ2**2 * nG           # G's cast error, Q^T G, (.) Q
        dM = 0.5 * dS + 2 * U16 * np.linalg.norm(M)                # b * S, then a * I + (.)
        dQ = nQ2 * dM + one_product * nQ2 * np.linalg.norm(M)      # Q @ M
        chain.step(lambda x: 1.5 * x - 0.5 * x**3, lambda x: 1.5 - 1.5 * x**2, nYt2 * dQ)
        Q = Q @ M
    out = Yt @ Q
    chain.step(lambda x: x, lambda x: 1.0, gamma(r, U32) * np.linalg.norm(Yt) * np.linalg.norm(Q, 2))  # Yt @ Q
    return out.T, chain


def _preconditioner(S: np.ndarray, n: int, dS_scale: float) -> tuple[np.ndarray, float]:
    """P = (S/mu + d I)^(-1/2) (float64 eigh, cast to float32) and its absolute error bound when
    S was formed in float32 from a length-n inner product (|dS| <= gamma_n * dS_scale)."""
    P = ref.inverse_sqrt_preconditioner(S)
    r = S.shape[0]
    mu = np.trace(S) / r
    if mu <= 0:
        return P, U32 * np.linalg.norm(P)
    lam = np.linalg.eigvalsh(S)
    f = lambda x: (max(x, 0.0) / mu + ref._DAMPING) ** -0.5  # noqa: E731
    df = lambda x: 0.5 / mu * (max(x, 0.0) / mu + ref._DAMPING) ** -1.5  # noqa: E731
    L = max([df(x) for x in lam] + [abs((f(x) - f(y)) / (x - y)) for x in lam for y in lam if abs(x - y) > 1e-15])
    dS = gamma(n, U32) * dS_scale
    # P depends on S / mu, and mu (the trace over r) carries at most S's error: twice dS, first order
    return P, 2 * L * dS + U32 * np.linalg.norm(P)


def _direction_bounds(pair: dict[str, np.ndarray], beta1: float, treatment: bool,
                      gradient_error: tuple[float, float] = (0.0, 0.0)) -> dict[str, float]:
    """Normwise relative error bounds (after the rescale to sqrt(rank)) of D_A and D_B. `gradient_error`
    is a Frobenius bound of how far the given gradients of A and B may be from the ones the
    implementation used (0 for the fixed input; the recovery error when they were read back)."""
    A, B = pair["A"].astype(np.float64), pair["B"].astype(np.float64)
    mA = beta1 * pair["momentum_A"].astype(np.float64) + (1 - beta1) * pair["grad_A"].astype(np.float64)
    mB = beta1 * pair["momentum_B"].astype(np.float64) + (1 - beta1) * pair["grad_B"].astype(np.float64)
    r = A.shape[0]
    P_A, dP_A = _preconditioner(A @ A.T, A.shape[1], np.linalg.norm(A) ** 2)
    P_B, dP_B = _preconditioner(B.T @ B, B.shape[0], np.linalg.norm(B) ** 2)
    bounds = {}
    for name, momentum, P_left, dP_left, P_right, dP_right, dg in (
        ("A", mA, P_B, dP_B, None, 0.0, gradient_error[0]), ("B", mB, None, 0.0, P_A, dP_A, gradient_error[1]),
    ):
        dm = 3 * U32 * np.linalg.norm(momentum) + (1 - beta1) * dg  # beta1 * m, (1 - beta1) * g, the add
        P = P_left if P_left is not None else P_right
        dP = dP_left if P_left is not None else dP_right
        X = P @ momentum if name == "A" else momentum @ P
        dX = (dm * np.linalg.norm(P, 2) + np.linalg.norm(momentum) * dP
              + gamma(r, U32) * np.linalg.norm(momentum) * np.linalg.norm(P))
        Y = X if X.shape[0] <= X.shape[1] else X.T  # Polar Express iterates on the short side
        Y, chain = _polar_express_sweep(Y, None, dX)
        if treatment:
            Y, chain = _polar_express_sweep(Y, chain, 0.0)
            Y, chain = _folded_cubic_core(Y, chain)
        delta = chain.bound()
        polar = Y if X.shape[0] <= X.shape[1] else Y.T
        D = P @ polar if name == "A" else polar @ P
        dD = (delta * np.linalg.norm(P, 2) + np.linalg.norm(polar) * dP
              + gamma(r, U32) * np.linalg.norm(polar) * np.linalg.norm(P))
        # rescaling to sqrt(rank): at most doubles a relative error, plus the norm and the multiply
        rel = 2 * dD / np.linalg.norm(D) + gamma(D.size, U32) / 2 + 2 * U32
        bounds[name] = float(rel)
    return bounds


def relative_direction_bounds(rank: int, beta1: float = 0.9) -> dict[str, list[float]]:
    """Per check, the normwise relative bound rho of every factor's direction (pairs x A, B) on the fixed input."""
    return relative_direction_bounds_for(fixed_optimizer_input(rank)["pairs"], beta1)


def relative_direction_bounds_for(pairs: list[dict[str, np.ndarray]], beta1: float = 0.9,
                                  gradient_errors: list[tuple[float, float]] | None = None) -> dict[str, list[float]]:
    """Per check, rho of every factor's direction on given pairs ({A, B, momentum_A, momentum_B, grad_A,
    grad_B}), the gradients known to within `gradient_errors` (Frobenius, per pair (A, B))."""
    errors = gradient_errors or [(0.0, 0.0)] * len(pairs)
    enabled, disabled = [], []
    for pair, error in zip(pairs, errors, strict=True):
        t = _direction_bounds(pair, beta1, treatment=True, gradient_error=error)
        d = _direction_bounds(pair, beta1, treatment=False, gradient_error=error)
        enabled += [t["A"], t["B"]]
        disabled += [d["A"], d["B"]]
    return {
        # TriMuon on the fork against the float64 reference: the implementation's error alone
        "reference_update": enabled,
        # treatment-disabled TriMuon against DiMuon-lite, both float32: each within rho of exact
        "baseline_update": [2 * x for x in disabled],
    }


def _factor_norms(rank: int) -> tuple[float, float, int, int]:
    return _factor_norms_for(fixed_optimizer_input(rank)["pairs"])


def _factor_norms_for(pairs: list[dict[str, np.ndarray]]) -> tuple[float, float, int, int]:
    factors = [pair[f] for pair in pairs for f in ("A", "B")]
    max_abs = max(float(np.max(np.abs(x))) for x in factors)
    frobenius = math.sqrt(sum(float(np.sum(x.astype(np.float64) ** 2)) for x in factors))
    return max_abs, frobenius, len(factors), max(x.size for x in factors)


def tolerances(learning_rate: float, rank: int, beta1: float = 0.9) -> dict[str, dict[str, float]]:
    """The contract's {atol, rtol, min_cosine} for each update check at one learning rate, on the fixed input."""
    fixed = fixed_optimizer_input(rank)["pairs"]
    return tolerances_for(fixed, learning_rate, rank, relative_direction_bounds_for(fixed, beta1))


def input_tolerances(pairs: list[dict[str, np.ndarray]], learning_rates: list[float], beta1: float = 0.9,
                     gradient_errors: list[tuple[float, float]] | None = None) -> dict[str, dict[str, float]]:
    """`<check>@lr=<lr>` -> {atol, rtol, min_cosine} of the same analysis on a measured input (the
    service-read start state and recovered gradient), computed before any update is measured."""
    rank = int(pairs[0]["A"].shape[0])
    rho = relative_direction_bounds_for(pairs, beta1, gradient_errors)
    return {check_key(check, lr): tol for lr in learning_rates
            for check, tol in tolerances_for(pairs, lr, rank, rho).items()}


def tolerances_for(pairs: list[dict[str, np.ndarray]], learning_rate: float, rank: int,
                   rho: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    """{atol, rtol, min_cosine} per check at one learning rate, from per-factor bounds rho on `pairs`."""
    max_abs, frobenius, n_factors, _ = _factor_norms_for(pairs)
    step = learning_rate * math.sqrt(rank)  # every factor moves by exactly lr * sqrt(rank)
    # float32 storage: X - lr D rounded (implementation), X + dX rounded (reference)
    storage_max = 3 * U32 * (max_abs + step) + U32 * step
    storage_frobenius = 3 * U32 * (frobenius + step * math.sqrt(n_factors)) + U32 * step * math.sqrt(n_factors)
    out = {}
    for check, per_factor in rho.items():
        atol = step * max(per_factor) + storage_max
        error_norm = math.sqrt(sum((step * x) ** 2 for x in per_factor)) + storage_frobenius
        reference_norm = step * math.sqrt(n_factors)
        out[check] = {"atol": _round_up(atol), "rtol": 0.0,
                      "min_cosine": _round_down(1.0 - (error_norm / reference_norm) ** 2)}
    return out


def lr_scaling_tolerance(learning_rates: list[float], rank: int) -> float:
    """Max relative change of update_norm/lr against the first probe (fresh state): the storage
    rounding of each probe's update and the float32 norm of the rescaled direction."""
    _, frobenius, n_factors, largest = _factor_norms(rank)

    def relative(lr: float) -> float:
        step = lr * math.sqrt(rank) * math.sqrt(n_factors)
        return (3 * U32 * (frobenius + step) + U32 * step) / step + gamma(largest, U32)

    first = relative(learning_rates[0])
    return _round_up(max(relative(lr) + first for lr in learning_rates))


def update_check_plan(learning_rates: list[float], rank: int, beta1: float = 0.9) -> dict[str, Any]:
    """What the plan file records: one tolerance entry per check and learning rate."""
    fixed = fixed_optimizer_input(rank)["pairs"]
    rho = relative_direction_bounds_for(fixed, beta1)  # independent of the learning rate: once
    keyed = {}
    for lr in learning_rates:
        for check, tol in tolerances_for(fixed, lr, rank, rho).items():
            keyed[check_key(check, lr)] = tol
    return {"tolerances": keyed,
            "lr_scaling": {"learning_rates": list(learning_rates),
                           "max_relative_change": lr_scaling_tolerance(list(learning_rates), rank)}}


def check_key(check: str, learning_rate: float) -> str:
    """`reference_update@lr=0.04`: one check at one learning rate of the sweep."""
    return f"{check}@lr={learning_rate:g}"


def _round_up(x: float) -> float:
    """Two significant digits, rounded away from acceptance's edge (a looser, never tighter, bound)."""
    if x <= 0:
        return 0.0
    exponent = math.floor(math.log10(x)) - 1
    return float(f"{math.ceil(x / 10**exponent)}e{exponent}")


def _round_down(x: float) -> float:
    """min_cosine rounded down at the first two significant digits of 1 - x."""
    return 1.0 - _round_up(1.0 - x)
