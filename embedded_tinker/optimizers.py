"""Optimizers keyed by family name (the ``type`` of the SDK's optimizer config / params).

A model's family is fixed at creation (``optimizer_config.type``). ``optim_step`` params of another
family are refused, never silently reinterpreted. Adding a family (e.g. ``dimuon``) is one class
with ``family``, ``PARAM_DEFAULTS``, ``step``, ``state_dict``/``load_state_dict`` plus one line in
``OPTIMIZER_FAMILIES``.

Every family reports ``grad_norm:mean`` (global L2 norm of the gradient before clipping) and
``optimizer_step:max`` (steps taken so far, this one included).

Hyperparameters may also be *declared* at creation (any of the family's ``PARAM_DEFAULTS`` keys,
e.g. ``OptimizerConfigBase(type="adamw", learning_rate=4e-5, beta1=0.9)``): they are echoed in
get_info/weights_info, so a client can verify its optimizer config from a server response, and an
``optim_step`` whose params contradict a declared value is refused (a user error).
"""

from __future__ import annotations

import torch


from .optim_common import (  # noqa: F401  (OptimizerError and the helpers are re-exported)
    OptimizerError,
    _check_against_declared,
    _clip_factor,
    _declared_params,
    _global_grad_norm,
    _merge_params,
)
from .muon import DiMuonLite, TriMuon  # noqa: E402


class AdamW:
    """Adam with decoupled weight decay, every ``tinker.AdamParams`` field honoured.

    For step t (from 1), gradient g (after clipping to grad_clip_norm, 0 = off):
        p <- p * (1 - lr * weight_decay)
        m <- beta1 m + (1 - beta1) g ;  v <- beta2 v + (1 - beta2) g^2
        p <- p - lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps)
    """

    family = "adamw"
    PARAM_DEFAULTS = {
        "learning_rate": 1e-4,
        "beta1": 0.9,
        "beta2": 0.95,
        "eps": 1e-12,
        "weight_decay": 0.0,
        "grad_clip_norm": 0.0,
    }

    def __init__(self, params: list[torch.Tensor], config: dict):
        self.params = params
        self.declared = _declared_params(self.family, self.PARAM_DEFAULTS, config)
        self.config = {"type": self.family, **self.declared}
        self.steps_taken = 0
        self.exp_avg = [torch.zeros_like(p) for p in params]
        self.exp_avg_sq = [torch.zeros_like(p) for p in params]

    @torch.no_grad()
    def step(self, params_request: dict) -> dict[str, float]:
        hp = _merge_params(self.family, self.PARAM_DEFAULTS, params_request)
        _check_against_declared(self.family, self.declared, hp)
        grad_norm = _global_grad_norm(self.params)
        clip = _clip_factor(grad_norm, hp["grad_clip_norm"])
        self.steps_taken += 1
        t = self.steps_taken
        lr, beta1, beta2 = hp["learning_rate"], hp["beta1"], hp["beta2"]
        for p, m, v in zip(self.params, self.exp_avg, self.exp_avg_sq, strict=True):
            g = p.grad * clip if p.grad is not None else torch.zeros_like(p)
            p.mul_(1 - lr * hp["weight_decay"])
            m.mul_(beta1).add_(g, alpha=1 - beta1)
            v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
            denom = (v / (1 - beta2**t)).sqrt_().add_(hp["eps"])
            p.addcdiv_(m / (1 - beta1**t), denom, value=-lr)
        return {"grad_norm:mean": grad_norm, "optimizer_step:max": float(t)}

    def state_dict(self) -> dict[str, torch.Tensor]:
        state = {"steps_taken": torch.tensor(self.steps_taken, dtype=torch.int64)}
        for i, (m, v) in enumerate(zip(self.exp_avg, self.exp_avg_sq, strict=True)):
            state[f"exp_avg.{i}"] = m.clone()
            state[f"exp_avg_sq.{i}"] = v.clone()
        return state

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self.steps_taken = int(state["steps_taken"])
        self.exp_avg = [state[f"exp_avg.{i}"].clone() for i in range(len(self.params))]
        self.exp_avg_sq = [state[f"exp_avg_sq.{i}"].clone() for i in range(len(self.params))]


class SGD:
    """Plain SGD with optional momentum:  b <- momentum b + g ;  p <- p - lr b."""

    family = "sgd"
    CONFIG_DEFAULTS: dict[str, float] = {}
    PARAM_DEFAULTS = {"learning_rate": 1e-2, "momentum": 0.0, "grad_clip_norm": 0.0}

    def __init__(self, params: list[torch.Tensor], config: dict):
        self.params = params
        self.config = {"type": self.family, **_merge_params(self.family, self.CONFIG_DEFAULTS, config)}
        self.steps_taken = 0
        self.momentum_buffer = [torch.zeros_like(p) for p in params]

    @torch.no_grad()
    def step(self, params_request: dict) -> dict[str, float]:
        hp = _merge_params(self.family, self.PARAM_DEFAULTS, params_request)
        grad_norm = _global_grad_norm(self.params)
        clip = _clip_factor(grad_norm, hp["grad_clip_norm"])
        self.steps_taken += 1
        for p, buffer in zip(self.params, self.momentum_buffer, strict=True):
            g = p.grad * clip if p.grad is not None else torch.zeros_like(p)
            buffer.mul_(hp["momentum"]).add_(g)
            p.add_(buffer, alpha=-hp["learning_rate"])
        return {"grad_norm:mean": grad_norm, "optimizer_step:max": float(self.steps_taken)}

    def state_dict(self) -> dict[str, torch.Tensor]:
        state = {"steps_taken": torch.tensor(self.steps_taken, dtype=torch.int64)}
        state.update({f"momentum_buffer.{i}": b.clone() for i, b in enumerate(self.momentum_buffer)})
        return state

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self.steps_taken = int(state["steps_taken"])
        self.momentum_buffer = [state[f"momentum_buffer.{i}"].clone() for i in range(len(self.params))]


OPTIMIZER_FAMILIES = {
    AdamW.family: AdamW,
    SGD.family: SGD,
    DiMuonLite.family: DiMuonLite,
    TriMuon.family: TriMuon,
}


def create_optimizer(config: dict, params: list[torch.Tensor]):
    family = config.get("type")
    if family not in OPTIMIZER_FAMILIES:
        raise OptimizerError(
            f"optimizer family {family!r} is not implemented by this server; "
            f"available: {sorted(OPTIMIZER_FAMILIES)}"
        )
    return OPTIMIZER_FAMILIES[family](params, config)
