"""Independent float64 reference of the DiMuon-lite and TriMuon updates (docs/optimizers.md).

Written from the reference definition only, in plain numpy float64, one LoRA pair and one
polynomial step at a time; it shares no code with the server (embedded_tinker/muon.py). The
correctness preflight compares the server's updates with `reference_step` on a fixed gradient
and state; its sha256 is the pinned `reference_revision` of the spec's plan file.
"""

from __future__ import annotations

import math

import numpy as np

# (a, b, c) of p(x) = a x + b x^3 + c x^5: arXiv 2505.16932, Algorithm 1, before the safety factor
_POLAR_EXPRESS_TABLE = [
    (8.28721201814563, -23.595886519098837, 17.300387312530933),
    (4.107059111542203, -2.9478499167379106, 0.5448431082926601),
    (3.9486908534822946, -2.908902115962949, 0.5518191394370137),
    (3.3184196573706015, -2.488488024314874, 0.51004894012372),
    (2.300652019954817, -1.6689039845747493, 0.4188073119525673),
    (1.891301407787398, -1.2679958271945868, 0.37680408948524835),
    (1.8750014808534479, -1.2500016453999487, 0.3750001645474248),
    (1.875, -1.25, 0.375),
]
_SAFETY = 1.01
_EPS = 1e-7
_DAMPING = 1e-3
_PE_STEPS = 5
_SWITCH_PASSES = 2
_NS_REFINEMENTS = 4


def _polynomial(index: int) -> tuple[float, float, float]:
    last = len(_POLAR_EXPRESS_TABLE) - 1
    a, b, c = _POLAR_EXPRESS_TABLE[min(index, last)]
    if index < last:
        return a / _SAFETY, b / _SAFETY**3, c / _SAFETY**5
    return a, b, c


def polar_express_reference(X: np.ndarray, steps: int = _PE_STEPS) -> np.ndarray:
    """Polar Express on the short side of X, float64."""
    Y = np.array(X, dtype=np.float64)
    flip = Y.shape[0] > Y.shape[1]
    if flip:
        Y = Y.T
    Y = Y / (np.linalg.norm(Y) * _SAFETY + _EPS)
    for i in range(steps):
        a, b, c = _polynomial(i)
        G = Y @ Y.T
        Y = a * Y + b * (G @ Y) + c * (G @ (G @ Y))
    return Y.T if flip else Y


def polar_switch_reference(X: np.ndarray) -> np.ndarray:
    """Two outer Polar Switch passes, then four cubic Newton-Schulz steps, float64 (unfolded)."""
    Y = np.array(X, dtype=np.float64)
    for _ in range(_SWITCH_PASSES):  # each pass: a full Polar Express sweep from a renormalized input
        Y = polar_express_reference(Y)
    for _ in range(_NS_REFINEMENTS):
        Y = 1.5 * Y - 0.5 * (Y @ Y.T @ Y)
    return Y


def inverse_sqrt_preconditioner(S: np.ndarray) -> np.ndarray:
    """(S / (trace(S)/r) + damping I)^(-1/2); a zero Gram gives damping^(-1/2) I."""
    r = S.shape[0]
    mean_eigenvalue = np.trace(S) / r
    if mean_eigenvalue <= 0:
        return np.eye(r) / math.sqrt(_DAMPING)
    w, V = np.linalg.eigh(S / mean_eigenvalue)
    return V @ np.diag(1.0 / np.sqrt(np.maximum(w, 0.0) + _DAMPING)) @ V.T


def _scaled_to_sqrt_rank(D: np.ndarray, r: int) -> np.ndarray:
    norm = np.linalg.norm(D)
    return np.zeros_like(D) if norm <= _EPS else D * (math.sqrt(r) / norm)


def reference_step(factors: list[tuple[np.ndarray, np.ndarray]], grads: list[tuple[np.ndarray, np.ndarray]],
                   momenta: list[tuple[np.ndarray, np.ndarray]], learning_rate: float, beta1: float = 0.9,
                   grad_clip_norm: float = 0.0, polar_step: str = "polar_express"):
    """One optimizer step over LoRA pairs (A: r x in, B: out x r) in float64.

    Returns (new_factors, new_momenta, updates) with updates[i] = (A_new - A, B_new - B).
    """
    grad_norm = math.sqrt(sum(float(np.sum(np.square(g, dtype=np.float64))) for pair in grads for g in pair))
    clip = grad_clip_norm / grad_norm if 0 < grad_clip_norm < grad_norm else 1.0
    polar = polar_express_reference if polar_step == "polar_express" else polar_switch_reference
    new_factors, new_momenta, updates = [], [], []
    for (A, B), (gA, gB), (mA, mB) in zip(factors, grads, momenta):
        A, B = np.asarray(A, np.float64), np.asarray(B, np.float64)
        mA = beta1 * np.asarray(mA, np.float64) + (1 - beta1) * clip * np.asarray(gA, np.float64)
        mB = beta1 * np.asarray(mB, np.float64) + (1 - beta1) * clip * np.asarray(gB, np.float64)
        r = A.shape[0]
        P_A = inverse_sqrt_preconditioner(A @ A.T)
        P_B = inverse_sqrt_preconditioner(B.T @ B)
        D_B = _scaled_to_sqrt_rank(polar(mB @ P_A) @ P_A, r)
        D_A = _scaled_to_sqrt_rank(P_B @ polar(P_B @ mA), r)
        update_A, update_B = -learning_rate * D_A, -learning_rate * D_B
        new_factors.append((A + update_A, B + update_B))
        new_momenta.append((mA, mB))
        updates.append((update_A, update_B))
    return new_factors, new_momenta, updates
