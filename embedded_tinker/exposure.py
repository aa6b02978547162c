"""Exposure profiles: how much of its own state the embedded backend shows its clients.

``embedded`` (the default) is the full local backend: it reports the optimizer family, the declared
config and the adapter hash (``adapter_sha256``) in get_info / weights_info, honours a per-model
LoRA seed, optimizer configs declared at creation and every optimizer family's optim_step params,
and exports adapters (``save_weights_external``, ``tinker checkpoint download``).

``production`` answers as the production service (Spindle) is known to answer, so the pipeline can
rehearse what it can and cannot prove there (shared/docs/tinker-protocol/README.md, "What the
production service is known to differ on", and the earlier hand run against it):

- a per-model seed (``lora_config.seed`` at create_model) is rejected: HTTP 400;
- the optimizer config declared at creation is ignored: every model trains with AdamW, and
  ``optim_step`` parses only ``adam_params`` (other families' ``optimizer_params`` silently
  become default Adam params, as Spindle's handler does);
- ``get_info.optimizer_config`` is only ``{"type": <family>}``; no adapter hash, step count or last
  params anywhere (get_info, weights_info, checkpoint listings);
- ``weights_info`` answers base_model, is_lora, lora_rank and the train_* flags only;
- ``save_weights_external``, external-weights URLs and ``sessions/{id}/finish`` answer 404
  (Spindle has no such routes), so no adapter bytes or hash can be obtained and
  ``ServiceClient.close()`` raises ``NotFoundError``; so does ``service_time/{session}`` (the embedded
  backend's own per-session service time, session_time.py), so a client falls back as it must on Spindle.

Everything else (training, sampling, checkpoints, load/save state, training-run listings) behaves
the same in both profiles. Not mirrored, because the stock 0.38 SDK cannot work without it: the
production service's missing ``sample_sequence_ids`` and ``get_info.model_data.tokenizer_id``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

EXPOSURES = ("embedded", "production")
DEFAULT_EXPOSURE = "embedded"
PRODUCTION_OPTIMIZER = {"type": "adamw"}

# Routes the production service does not have (answered 404 before any handler runs).
_HIDDEN_IN_PRODUCTION = (
    re.compile(r"^/api/v1/save_weights_external/?$"),
    re.compile(r"^/api/v1/training_runs/[^/]+/checkpoints/.+/external_weights_urls/?$"),
    re.compile(r"^/api/v1/external_weights_files/"),
    re.compile(r"^/api/v1/sessions/[^/]+/finish/?$"),
    re.compile(r"^/api/v1/service_time/"),  # the embedded backend's own per-session service time (session_time.py)
)


class SeedRejected(ValueError):
    """The production exposure refuses a per-model seed (reported as a user error, HTTP 400)."""


def check_exposure(name: str) -> str:
    if name not in EXPOSURES:
        raise ValueError(f"unknown exposure {name!r}: use one of {', '.join(EXPOSURES)}")
    return name


@dataclass(frozen=True)
class Exposure:
    name: str = DEFAULT_EXPOSURE

    def __post_init__(self) -> None:
        check_exposure(self.name)

    @property
    def production(self) -> bool:
        return self.name == "production"

    # ---------------------------------------------------------------- routes
    def hides(self, path: str) -> bool:
        return self.production and any(pattern.match(path) for pattern in _HIDDEN_IN_PRODUCTION)

    # ---------------------------------------------------------------- requests
    def check_lora_config(self, lora_config: dict | None) -> None:
        if self.production and isinstance(lora_config, dict) and lora_config.get("seed") is not None:
            raise SeedRejected(
                "per-model seed is not supported by this service: omit lora_config.seed "
                f"(got seed={lora_config['seed']!r})"
            )

    def declared_optimizer(self, declared: dict) -> dict:
        """The optimizer config a new model gets from what the client declared."""
        return dict(PRODUCTION_OPTIMIZER) if self.production else declared

    def optim_params(self, body: dict) -> tuple[str | None, dict]:
        """(family, params) of an optim_step request."""
        if "adam_params" in body:
            return "adamw", dict(body["adam_params"] or {})
        if self.production:  # only adam_params is parsed: anything else becomes default Adam
            return "adamw", {}
        params = dict(body.get("optimizer_params") or body.get("optim_params") or {})
        return params.get("type"), params

    # ---------------------------------------------------------------- responses
    def get_info(self, payload: dict, provenance_keys: tuple[str, ...]) -> dict:
        if not self.production:
            return payload
        shown = {key: value for key, value in payload.items() if key not in provenance_keys}
        shown["optimizer_config"] = {"type": payload["optimizer_config"]["type"]}
        return shown

    def weights_info(self, payload: dict) -> dict:
        if not self.production:
            return payload
        keys = ("base_model", "is_lora", "lora_rank", "train_unembed", "train_mlp", "train_attn")
        return {key: payload[key] for key in keys if key in payload}


__all__ = ["DEFAULT_EXPOSURE", "EXPOSURES", "Exposure", "SeedRejected", "check_exposure"]
