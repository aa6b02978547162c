"""Helpers every optimizer family shares: the user-error type, parameter merging and checks, clipping.

Its own module so that optimizers.py (the registry) and muon.py (the Muon families) both import it
and neither imports the other back.
"""

from __future__ import annotations

import torch


class OptimizerError(ValueError):
    """Bad optimizer config or params (a user error)."""


def _merge_params(family: str, defaults: dict[str, float], given: dict) -> dict[str, float]:
    given = {k: v for k, v in given.items() if k != "type"}
    unknown = set(given) - set(defaults)
    if unknown:
        raise OptimizerError(f"{family} params do not take {sorted(unknown)} (accepted: {sorted(defaults)})")
    return {key: float(given.get(key, default)) for key, default in defaults.items()}


def _declared_params(family: str, param_defaults: dict[str, float], config: dict) -> dict[str, float]:
    """Hyperparameters declared at creation: a subset of the family's step params."""
    declared = {k: v for k, v in config.items() if k != "type"}
    unknown = set(declared) - set(param_defaults)
    if unknown:
        raise OptimizerError(
            f"{family} config does not take {sorted(unknown)} (declarable: {sorted(param_defaults)})"
        )
    return {key: float(value) for key, value in declared.items()}


def _check_against_declared(family: str, declared: dict[str, float], params: dict[str, float]) -> None:
    contradictions = [
        f"{key}={params[key]!r} (declared {value!r})"
        for key, value in declared.items()
        if params[key] != value
    ]
    if contradictions:
        raise OptimizerError(
            f"{family} optim_step params contradict the model's declared config: {', '.join(contradictions)}"
        )


def _global_grad_norm(params: list[torch.Tensor]) -> float:
    squares = [p.grad.detach().double().pow(2).sum() for p in params if p.grad is not None]
    return float(torch.stack(squares).sum().sqrt()) if squares else 0.0


def _clip_factor(grad_norm: float, grad_clip_norm: float) -> float:
    """Scale applied to every gradient: min(1, grad_clip_norm / grad_norm); 0 disables clipping."""
    if grad_clip_norm > 0 and grad_norm > grad_clip_norm:
        return grad_clip_norm / grad_norm
    return 1.0
