"""DiMuon-lite and TriMuon: Muon-style optimizers for LoRA factor pairs.

The reference definition, its sources and every choice the sources leave open are in
docs/optimizers.md; this module implements exactly that text. In short, for each LoRA pair
(A: rank x in, B: out x rank) with gradients G_A, G_B after global-norm clipping:

    M_X <- beta1 M_X + (1 - beta1) G_X                       momentum (EMA), per factor
    P_A = (S_A / mean_eig(S_A) + DAMPING I)^(-1/2),  S_A = A A^T   (rank x rank)
    P_B = (S_B / mean_eig(S_B) + DAMPING I)^(-1/2),  S_B = B^T B   (rank x rank)
    D_B = polar(M_B P_A) P_A        D_A = P_B polar(P_B M_A)      LoRA-Muon factor geometry
    D_X <- D_X * sqrt(rank) / ||D_X||_F                       direction of Frobenius norm sqrt(rank)
    X   <- X - learning_rate * D_X                            both factors from the pre-step state

The two families differ only in `polar`:
    dimuon  (DiMuon-lite)  Polar Express, 5 degree-5 steps (arXiv 2505.16932, Algorithm 1), float32
    trimuon (TriMuon)      2 outer Polar Switch passes (each a Polar Express sweep, float32),
                           then 4 cubic Newton-Schulz refinements folded into one rank x rank
                           multiplier Q (polar ~= Y Q), the core computed in float16
TriMuon created with ``polar_step="polar_express"`` runs DiMuon-lite's polar step (treatment disabled).
"""

from __future__ import annotations

import math

import torch

from .optim_common import OptimizerError, _clip_factor, _global_grad_norm


# Polar Express degree-5 coefficients (a, b, c) of p(x) = a x + b x^3 + c x^5, arXiv 2505.16932
# Algorithm 1; every polynomial but the last is divided by the safety factor (a/s, b/s^3, c/s^5).
POLAR_EXPRESS_RAW = (
    (8.28721201814563, -23.595886519098837, 17.300387312530933),
    (4.107059111542203, -2.9478499167379106, 0.5448431082926601),
    (3.9486908534822946, -2.908902115962949, 0.5518191394370137),
    (3.3184196573706015, -2.488488024314874, 0.51004894012372),
    (2.300652019954817, -1.6689039845747493, 0.4188073119525673),
    (1.891301407787398, -1.2679958271945868, 0.37680408948524835),
    (1.8750014808534479, -1.2500016453999487, 0.3750001645474248),
    (1.875, -1.25, 0.375),
)
SAFETY = 1.01
POLAR_EXPRESS = tuple((a / SAFETY, b / SAFETY**3, c / SAFETY**5) for a, b, c in POLAR_EXPRESS_RAW[:-1]) + (
    POLAR_EXPRESS_RAW[-1],
)
POLAR_EXPRESS_STEPS = 5
NORM_EPS = 1e-7  # added to the Frobenius norm before normalizing (Algorithm 1)

SWITCH_PASSES = 2  # TriMuon: outer Polar Switch passes, each one Polar Express sweep
CUBIC_NEWTON_SCHULZ = (1.5, -0.5, 0.0)  # p(x) = 3/2 x - 1/2 x^3
NS_REFINEMENTS = 4
TRIMUON_CORE_DTYPE = torch.float16

DAMPING = 1e-3  # relative damping of the rank x rank preconditioners (internal constant)


def polar_express(X: torch.Tensor, steps: int = POLAR_EXPRESS_STEPS) -> torch.Tensor:
    """Approximate polar factor U V^T of X by `steps` Polar Express iterations, in X's dtype."""
    transposed = X.shape[0] > X.shape[1]  # iterate on the short side: Y Y^T is the small Gram
    Y = X.T if transposed else X
    Y = Y / (Y.norm() * SAFETY + NORM_EPS)
    for a, b, c in _schedule(steps):
        gram = Y @ Y.T
        Y = a * Y + (b * gram + c * gram @ gram) @ Y
    return Y.T if transposed else Y


def polar_switch(X: torch.Tensor, passes: int = SWITCH_PASSES, refinements: int = NS_REFINEMENTS,
                 core_dtype: torch.dtype = TRIMUON_CORE_DTYPE) -> torch.Tensor:
    """TriMuon's polar step: `passes` outer Polar Switch passes on X, then `refinements` cubic
    Newton-Schulz steps folded into one rank x rank multiplier Q computed in `core_dtype`.

    An outer pass is one Polar Express sweep (Algorithm 1: Frobenius normalization, then
    POLAR_EXPRESS_STEPS polynomials) in float32; the second pass starts again from the first
    pass's output. Every singular value then lies in (0, sqrt(3)), where the cubic step converges.
    The refinements act on Y (tall, k x r) through its Gram G = Y^T Y: Y (a I + b Y^T Y) = Y Q
    keeps the form Y Q, so S = Q^T G Q and Q <- Q (1.5 I - 0.5 S) run on the r x r core, and
    Y Q is formed once at the end.
    """
    Y = X
    for _ in range(passes):
        Y = polar_express(Y)
    transposed = Y.shape[0] < Y.shape[1]
    tall = Y.T if transposed else Y
    gram = (tall.T @ tall).to(core_dtype)
    identity = torch.eye(gram.shape[0], dtype=core_dtype, device=gram.device)
    Q = identity.clone()
    a, b, _ = CUBIC_NEWTON_SCHULZ
    for _ in range(refinements):
        S = Q.T @ gram @ Q
        Q = Q @ (a * identity + b * S)
    result = tall @ Q.to(tall.dtype)
    return result.T if transposed else result


def _schedule(steps: int) -> list[tuple[float, float, float]]:
    return list(POLAR_EXPRESS[:steps]) + [POLAR_EXPRESS[-1]] * max(0, steps - len(POLAR_EXPRESS))


def factor_preconditioner(gram: torch.Tensor) -> torch.Tensor:
    """(S / mean_eig(S) + DAMPING I)^(-1/2) of a symmetric PSD rank x rank Gram S (eigh in float64)."""
    S = gram.double()
    mean_eig = float(torch.trace(S)) / S.shape[0]
    rank = S.shape[0]
    if mean_eig <= 0.0:  # a zero factor (B at initialization): the isotropic preconditioner
        return torch.eye(rank, dtype=gram.dtype, device=gram.device) / math.sqrt(DAMPING)
    eigenvalues, vectors = torch.linalg.eigh(S / mean_eig)
    inv_sqrt = (eigenvalues.clamp_min(0.0) + DAMPING).rsqrt()
    return ((vectors * inv_sqrt) @ vectors.T).to(gram.dtype)


def _unit_direction(direction: torch.Tensor, rank: int) -> torch.Tensor:
    """Rescale to Frobenius norm sqrt(rank); a zero direction stays zero."""
    norm = float(direction.norm())
    if norm <= NORM_EPS:
        return torch.zeros_like(direction)
    return direction * (math.sqrt(rank) / norm)


class _LoraMuon:
    """Shared rules of both families; subclasses pick the polar step."""

    family = ""
    PARAM_DEFAULTS = {"learning_rate": 1e-4, "beta1": 0.9, "grad_clip_norm": 0.0}
    # declarable at creation besides PARAM_DEFAULTS: key -> allowed values
    CONFIG_CHOICES: dict[str, tuple] = {}

    def __init__(self, params: list[torch.Tensor], config: dict):
        if len(params) % 2:
            raise OptimizerError(f"{self.family} needs LoRA factor pairs (A, B); got {len(params)} tensors")
        self.pairs = list(zip(params[0::2], params[1::2]))
        for A, B in self.pairs:
            if A.ndim != 2 or B.ndim != 2 or A.shape[0] != B.shape[1]:
                raise OptimizerError(f"{self.family} expects A (rank x in), B (out x rank); "
                                     f"got {tuple(A.shape)} and {tuple(B.shape)}")
        self.params = params
        self.declared, self.choices = self._read_config(config)
        self.config = {"type": self.family, **self.choices, **self.declared}
        self.steps_taken = 0
        self.momentum = [torch.zeros_like(p) for p in params]

    def _read_config(self, config: dict) -> tuple[dict[str, float], dict[str, object]]:
        given = {k: v for k, v in config.items() if k != "type"}
        unknown = set(given) - set(self.PARAM_DEFAULTS) - set(self.CONFIG_CHOICES)
        if unknown:
            raise OptimizerError(f"{self.family} config does not take {sorted(unknown)} "
                                 f"(declarable: {sorted(set(self.PARAM_DEFAULTS) | set(self.CONFIG_CHOICES))})")
        choices = {}
        for key, allowed in self.CONFIG_CHOICES.items():
            value = given.get(key, allowed[0])
            if value not in allowed:
                raise OptimizerError(f"{self.family} config {key}={value!r} is not one of {list(allowed)}")
            choices[key] = value
        declared = {k: float(v) for k, v in given.items() if k in self.PARAM_DEFAULTS}
        return declared, choices

    def polar(self, X: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def _hyperparameters(self, params_request: dict) -> dict[str, float]:
        given = {k: v for k, v in params_request.items() if k != "type"}
        unknown = set(given) - set(self.PARAM_DEFAULTS)
        if unknown:
            raise OptimizerError(f"{self.family} params do not take {sorted(unknown)} "
                                 f"(accepted: {sorted(self.PARAM_DEFAULTS)})")
        hp = {key: float(given.get(key, default)) for key, default in self.PARAM_DEFAULTS.items()}
        contradictions = [f"{k}={hp[k]!r} (declared {v!r})" for k, v in self.declared.items() if hp[k] != v]
        if contradictions:
            raise OptimizerError(f"{self.family} optim_step params contradict the model's declared config: "
                                 f"{', '.join(contradictions)}")
        if hp["learning_rate"] < 0 or not 0 <= hp["beta1"] < 1:
            raise OptimizerError(f"{self.family} needs learning_rate >= 0 and 0 <= beta1 < 1 (got {hp})")
        return hp

    @torch.no_grad()
    def step(self, params_request: dict) -> dict[str, float]:
        hp = self._hyperparameters(params_request)
        grad_norm = _global_grad_norm(self.params)
        clip = _clip_factor(grad_norm, hp["grad_clip_norm"])
        self.steps_taken += 1
        for p, m in zip(self.params, self.momentum, strict=True):
            g = p.grad * clip if p.grad is not None else torch.zeros_like(p)
            m.mul_(hp["beta1"]).add_(g, alpha=1 - hp["beta1"])
        updates = [self.directions(A, B, mA, mB) for (A, B), mA, mB
                   in zip(self.pairs, self.momentum[0::2], self.momentum[1::2], strict=True)]
        for (A, B), (direction_A, direction_B) in zip(self.pairs, updates, strict=True):
            A.sub_(direction_A, alpha=hp["learning_rate"])
            B.sub_(direction_B, alpha=hp["learning_rate"])
        return {"grad_norm:mean": grad_norm, "optimizer_step:max": float(self.steps_taken)}

    def directions(self, A: torch.Tensor, B: torch.Tensor, momentum_A: torch.Tensor,
                   momentum_B: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Unit-scale update directions (Frobenius norm sqrt(rank) each) of one LoRA pair."""
        rank = A.shape[0]
        P_A = factor_preconditioner(A @ A.T)
        P_B = factor_preconditioner(B.T @ B)
        direction_B = self.polar(momentum_B @ P_A) @ P_A
        direction_A = P_B @ self.polar(P_B @ momentum_A)
        return _unit_direction(direction_A, rank), _unit_direction(direction_B, rank)

    def state_dict(self) -> dict[str, torch.Tensor]:
        state = {"steps_taken": torch.tensor(self.steps_taken, dtype=torch.int64)}
        state.update({f"momentum.{i}": m.clone() for i, m in enumerate(self.momentum)})
        return state

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self.steps_taken = int(state["steps_taken"])
        self.momentum = [state[f"momentum.{i}"].clone() for i in range(len(self.params))]


class DiMuonLite(_LoraMuon):
    """DiMuon's momentum and preconditioning with a Polar Express polar step (float32)."""

    family = "dimuon"
    CONFIG_CHOICES = {"version": (1,), "polar_step": ("polar_express",)}

    def polar(self, X: torch.Tensor) -> torch.Tensor:
        return polar_express(X)


class TriMuon(_LoraMuon):
    """DiMuon-lite with the polar step replaced by Polar Switch passes + cubic Newton-Schulz (fp16 core).

    ``polar_step="polar_express"`` disables the treatment: the polar step is DiMuon-lite's.
    """

    family = "trimuon"
    CONFIG_CHOICES = {"polar_step": ("polar_switch", "polar_express")}

    def polar(self, X: torch.Tensor) -> torch.Tensor:
        if self.choices["polar_step"] == "polar_express":
            return polar_express(X)
        return polar_switch(X)
