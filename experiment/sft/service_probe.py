"""The optimizer update check measured through the service API, on any backend URL.

Nothing of the backend is imported or run locally: the update a service's optimizer makes is
observed the way a client of a fork can observe it, with the stock SDK only.

1. A setup client takes `WARMUP_STEPS` steps on the fixed batch (so B is nonzero, as mid-training)
   and saves that state: the start state every probe client is created from (weights only, a fresh
   optimizer: momentum zero, step 1).
2. The gradient of the fixed batch at the start state, recovered through the service's stock AdamW:
   with beta1 = beta2 = 0 the first step is `u = -lr g / (|g| + eps)` elementwise, which inverts
   exactly, `g = -u eps / (lr - |u|)` (`recover_gradient`). eps is the gradient's global norm (the
   service's `grad_norm:mean` from a zero-LR step), so |u| <= lr / 2 and the float32 storage of the
   factors bounds the recovered gradient's error (`gradient_error_bound`), which the tolerance carries.
3. Per job (an optimizer family, its config, a learning rate): a client from the start state,
   forward_backward on the fixed batch, one optim_step, the adapter read back.

Weights are read back with the routes the stock SDK and the tinker CLI use for
`tinker checkpoint download`: `TrainingClient.save_weights_external(name)` (PEFT safetensors),
`RestClient.get_external_weights_urls(path)` (signed URLs), an HTTP GET of each file, then the export
is deleted. A service without those routes cannot show a client its weights: `WeightsNotExposed`,
whose message says how to expose them (`HOW_TO_EXPOSE`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx
import numpy as np
from safetensors.numpy import load as load_safetensors
from tinker import types

from experiment.contract.readback import HOW_TO_EXPOSE
from experiment.run.clients import ClientSession
from experiment.service.capacity import is_capacity_refusal
from experiment.service.request_slots import plain_request_slot
from experiment.sft.loop import optim_params

WARMUP_STEPS = 2
GRADIENT_PROBE_FAMILY = "adamw"
GRADIENT_PROBE_LR = 1.0
U32 = 2.0**-24
ADAPTER_FILE = "adapter_model.safetensors"
DOWNLOAD_TIMEOUT_S = 600



class WeightsNotExposed(RuntimeError):
    """The service cannot show a client its adapter weights; the message says which route failed and how to expose them."""


@dataclass(frozen=True)
class LoraPair:
    """One adapted module: A (rank x in) and B (out x rank), float32 as stored by the service."""

    module: str
    A: np.ndarray
    B: np.ndarray


@dataclass(frozen=True)
class UpdateJob:
    """One optimizer step to observe: a family with its creation config, at one learning rate."""

    label: str
    family: str
    config: dict[str, Any]
    learning_rate: float
    hyper: dict[str, float]

    @property
    def requested(self) -> dict[str, Any]:
        return {"family": self.family, **self.config}


@dataclass
class ServiceObservation:
    """What the service showed: the start state, the recovered gradient and every job's update."""

    batch: list[Any]
    start_path: str
    start: list[LoraPair]
    gradients: list[tuple[np.ndarray, np.ndarray]]
    gradient_errors: list[tuple[float, float]]  # Frobenius error bound of each recovered gradient factor
    gradient_norm_reported: float | None
    updates: dict[str, list[np.ndarray]] = field(default_factory=dict)  # job label -> A0, B0, A1, ... (float64)
    families_reported: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------- reading weights back

def _download_headers(session: ClientSession, url: str) -> dict[str, str]:
    """The service's proxy headers, sent only where the signed URL points at the service itself."""
    base = session.service.base_url or ""
    if urlsplit(url)[:2] != urlsplit(base)[:2]:
        return {}
    return session.service.proxy_headers(session.fork)


def read_adapter(session: ClientSession, client: Any, name: str) -> list[LoraPair]:
    """The client's current LoRA factors, read back through the service's export routes."""
    try:
        path = session.call(lambda: client.save_weights_external(name).result().path)
    except Exception as err:  # a service without the route answers 404 (NotFoundError) or refuses it
        if is_capacity_refusal(err):
            raise  # busy or broken (no answer, an unreadable one): the run stops resumable, no "not exposed"
        raise WeightsNotExposed(f"save_weights_external failed ({type(err).__name__}: {str(err)[:160]}); "
                                f"{HOW_TO_EXPOSE}") from None
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*create_rest_client.*", category=FutureWarning)
        rest = session.service_client.create_rest_client()
    try:
        urls = session.call(lambda: rest.get_external_weights_urls(path).result().urls)
    except Exception as err:
        if is_capacity_refusal(err):
            raise
        raise WeightsNotExposed(f"external_weights_urls failed for {path} ({type(err).__name__}: {str(err)[:160]}); "
                                f"{HOW_TO_EXPOSE}") from None
    url = urls.get(ADAPTER_FILE)
    if url is None:
        raise WeightsNotExposed(f"the export {path} has no {ADAPTER_FILE} (files: {sorted(urls)}); {HOW_TO_EXPOSE}")
    with plain_request_slot():  # the service-wide limit counts the download as it counts the SDK's requests
        response = httpx.get(url, headers=_download_headers(session, url), timeout=DOWNLOAD_TIMEOUT_S)
    if response.status_code != 200:
        raise WeightsNotExposed(f"GET of the signed URL for {path} answered HTTP {response.status_code}; {HOW_TO_EXPOSE}")
    tensors = load_safetensors(response.content)
    try:  # exports are throwaway copies; a service that keeps them is not wrong, only untidy
        parsed = types.ParsedCheckpointTinkerPath.from_tinker_path(path)
        session.call(lambda: rest.delete_checkpoint(parsed.training_run_id, parsed.checkpoint_id).result())
    except Exception as err:
        if is_capacity_refusal(err):
            raise
    return lora_pairs(tensors)


def lora_pairs(tensors: dict[str, np.ndarray]) -> list[LoraPair]:
    """PEFT keys `<module>.lora_A.weight` / `<module>.lora_B.weight` grouped per module, sorted by module."""
    modules: dict[str, dict[str, np.ndarray]] = {}
    for key, value in tensors.items():
        stem = key.removesuffix(".weight")
        module, _, matrix = stem.rpartition(".")
        if matrix not in ("lora_A", "lora_B"):
            continue
        modules.setdefault(module, {})[matrix] = np.asarray(value, dtype=np.float32)
    incomplete = sorted(m for m, f in modules.items() if set(f) != {"lora_A", "lora_B"})
    if incomplete or not modules:
        raise ValueError(f"the exported adapter has no complete LoRA pairs (incomplete: {incomplete[:3]})")
    return [LoraPair(m, f["lora_A"], f["lora_B"]) for m, f in sorted(modules.items())]


def factors(pairs: list[LoraPair]) -> list[np.ndarray]:
    """A0, B0, A1, B1, ... in float64."""
    return [x.astype(np.float64) for pair in pairs for x in (pair.A, pair.B)]


def update_between(before: list[LoraPair], after: list[LoraPair]) -> list[np.ndarray]:
    """after - before per factor (exact in float64: both sides are float32)."""
    if [p.module for p in before] != [p.module for p in after]:
        raise ValueError("the exported adapters name different modules")
    return [a - b for a, b in zip(factors(after), factors(before))]


# ---------------------------------------------------------------- the gradient through AdamW

def recover_gradient(update: np.ndarray, learning_rate: float, eps: float) -> np.ndarray:
    """g from AdamW's first step with beta1 = beta2 = 0: u = -lr g / (|g| + eps)  =>  g = -u eps / (lr - |u|)."""
    magnitude = np.abs(update)
    if np.any(magnitude >= learning_rate):
        raise ValueError("an AdamW probe update reaches the learning rate: the gradient cannot be inverted")
    return -update * eps / (learning_rate - magnitude)


def gradient_error_bound(update: np.ndarray, after: np.ndarray, learning_rate: float, eps: float) -> float:
    """Frobenius bound of the recovered gradient's error: the observed update carries the float32
    rounding of the stored factor (u32 |after|) and of the step itself (4 u32 |u|: the quotient, the
    square root, the product, the subtraction), scaled by d g / d u = eps lr / (lr - |u|)^2."""
    magnitude = np.abs(update)
    slope = eps * learning_rate / (learning_rate - magnitude) ** 2
    return float(np.linalg.norm(slope * (U32 * np.abs(after) + 4 * U32 * magnitude)))


def _adam_probe_params(learning_rate: float, eps: float) -> types.AdamParams:
    return types.AdamParams(learning_rate=learning_rate, beta1=0.0, beta2=0.0, eps=eps, weight_decay=0.0,
                            grad_clip_norm=0.0)


def _step(session: ClientSession, client: Any, batch: list[Any], params: Any) -> dict[str, float]:
    session.call(lambda: client.forward_backward(batch, loss_fn="cross_entropy").result())
    response = session.call(lambda: client.optim_step(params).result())
    return dict(getattr(response, "metrics", None) or {})


def _reported_family(client: Any) -> Any:
    config = getattr(client.get_info(), "optimizer_config", None)
    if isinstance(config, dict):
        return config.get("type")
    return getattr(config, "type", None)


# ---------------------------------------------------------------- the whole observation

def observe_updates(session: ClientSession, model: str, rank: int, seed: int | None, setup: UpdateJob,
                    fixed_batch: Callable[[Any], list[Any]], name_prefix: str,
                    on_input: Callable[[ServiceObservation], None] | None = None,
                    jobs: Sequence[UpdateJob] = ()) -> ServiceObservation:
    """Warm up, save the start state, recover the gradient, then observe every job's update.

    `fixed_batch(client)` builds the fixed batch with the setup client's tokenizer. `on_input(observation)`
    runs after the start state and the gradient are read and before the first job's step: the caller
    fixes its tolerances there, before any update is measured."""
    setup_client = session.lora_client(model, rank, seed, setup.requested)
    batch = fixed_batch(setup_client)
    for _ in range(WARMUP_STEPS):
        _step(session, setup_client, batch, optim_params(setup.family, setup.learning_rate, setup.config))
    start_path = session.call(lambda: setup_client.save_state(f"{name_prefix}-start").result().path)
    start = read_adapter(session, setup_client, f"{name_prefix}-start")

    probe = session.client_from_state(start_path, {"family": GRADIENT_PROBE_FAMILY})
    reported = _step(session, probe, batch, _adam_probe_params(0.0, 1.0))  # a zero step: the gradient's norm
    norm = reported.get("grad_norm:mean")
    eps = float(norm) if isinstance(norm, (int, float)) and math.isfinite(norm) and norm > 0 else 1e-3
    _step(session, probe, batch, _adam_probe_params(GRADIENT_PROBE_LR, eps))
    after = read_adapter(session, probe, f"{name_prefix}-gradient")
    moved = update_between(start, after)
    gradients = [recover_gradient(u, GRADIENT_PROBE_LR, eps) for u in moved]
    errors = [gradient_error_bound(u, a, GRADIENT_PROBE_LR, eps) for u, a in zip(moved, factors(after))]
    observation = ServiceObservation(
        batch=batch, start_path=start_path, start=start,
        gradients=list(zip(gradients[0::2], gradients[1::2])), gradient_errors=list(zip(errors[0::2], errors[1::2])),
        gradient_norm_reported=float(norm) if isinstance(norm, (int, float)) else None,
        families_reported={"gradient_probe": _reported_family(probe)})
    if on_input is not None:
        on_input(observation)
    for job in jobs:
        client = session.client_from_state(start_path, job.requested)
        observation.families_reported[job.label] = _reported_family(client)
        _step(session, client, batch, optim_params(job.family, job.learning_rate, {**job.config, **job.hyper}))
        observation.updates[job.label] = update_between(start, read_adapter(session, client, f"{name_prefix}-{_slug(job.label)}"))
    return observation


def _slug(label: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "-" for c in label)
