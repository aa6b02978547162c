"""Built-in losses with the documented Tinker semantics: per-token losses, summed (never averaged).

Each loss maps one datum's ``target_logprobs`` (log p_theta of its target tokens, shape (N,)) and
its ``loss_fn_inputs`` to an elementwise loss of shape (N,); the datum's loss is its sum and the
request's ``loss:sum`` metric is the sum over datums.

    cross_entropy        -(weights * logprobs)
    importance_sampling  -(exp(logprobs - sampling_logprobs) * advantages)
    ppo                  -min(ratio * advantages, clamp(ratio, clip_low, clip_high) * advantages)
                         ratio = exp(logprobs - sampling_logprobs);
                         loss_fn_config: clip_low_threshold (0.8), clip_high_threshold (1.2)

Inputs (``loss_fn_inputs``): ``target_tokens`` for all; ``weights`` for cross_entropy;
``logprobs`` (the sampler's logprobs) and ``advantages`` for importance_sampling and ppo.
"""

from __future__ import annotations

from collections.abc import Callable

import torch


class LossInputError(ValueError):
    """A loss was called with missing or malformed inputs (a user error)."""


def cross_entropy(target_logprobs, inputs, config) -> torch.Tensor:
    return -(inputs["weights"] * target_logprobs)


def importance_sampling(target_logprobs, inputs, config) -> torch.Tensor:
    ratio = torch.exp(target_logprobs - inputs["logprobs"])
    return -(ratio * inputs["advantages"])


def ppo(target_logprobs, inputs, config) -> torch.Tensor:
    ratio = torch.exp(target_logprobs - inputs["logprobs"])
    clipped_ratio = torch.clamp(ratio, config["clip_low_threshold"], config["clip_high_threshold"])
    advantages = inputs["advantages"]
    return -torch.min(ratio * advantages, clipped_ratio * advantages)


LossFn = Callable[[torch.Tensor, dict[str, torch.Tensor], dict[str, float]], torch.Tensor]


# name -> (function, float inputs it reads besides target_tokens, config defaults)
LOSSES: dict[str, tuple[LossFn, tuple[str, ...], dict[str, float]]] = {
    "cross_entropy": (cross_entropy, ("weights",), {}),
    "importance_sampling": (importance_sampling, ("logprobs", "advantages"), {}),
    "ppo": (ppo, ("logprobs", "advantages"), {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2}),
}


def resolve_config(loss_fn: str, loss_fn_config: dict[str, float] | None) -> dict[str, float]:
    if loss_fn not in LOSSES:
        raise LossInputError(f"loss_fn {loss_fn!r} is not supported here; available: {sorted(LOSSES)}")
    defaults = LOSSES[loss_fn][2]
    given = dict(loss_fn_config or {})
    unknown = set(given) - set(defaults)
    if unknown:
        raise LossInputError(
            f"loss_fn_config keys {sorted(unknown)} are not used by {loss_fn!r} "
            f"(accepted: {sorted(defaults)})"
        )
    return {key: float(given.get(key, default)) for key, default in defaults.items()}


def elementwise_loss(
    loss_fn: str, target_logprobs: torch.Tensor, inputs: dict[str, torch.Tensor], config: dict[str, float]
) -> torch.Tensor:
    """The per-token loss of one datum; ``inputs`` holds float tensors shaped like target_logprobs."""
    function, needed, _ = LOSSES[loss_fn]
    for name in needed:
        if name not in inputs:
            raise LossInputError(f"{loss_fn} needs loss_fn_inputs[{name!r}]")
        if inputs[name].shape != target_logprobs.shape:
            raise LossInputError(
                f"loss_fn_inputs[{name!r}] has shape {tuple(inputs[name].shape)}, "
                f"expected {tuple(target_logprobs.shape)} (one value per target token)"
            )
    return function(target_logprobs, {name: inputs[name] for name in needed}, config)


def input_names(loss_fn: str) -> tuple[str, ...]:
    return ("target_tokens",) + LOSSES[loss_fn][1]
