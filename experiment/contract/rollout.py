"""The rollout settings a spec states (max_tokens, temperature, renderer, few-shot), read in one place.

Used by the RL recipe, the SFT loop's renderer default and the rehearsal rules; it reads the typed
spec only, so the contract layer can use it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol


class StatedSpec(Protocol):
    """A parsed spec (experiment.contract.spec.Spec, which imports the rehearsal rules that read this
    module): what the rollout settings are read from."""

    def to_dict(self) -> dict[str, Any]: ...

DEFAULT_RENDERER = "qwen3_5_disable_thinking"


@dataclass(frozen=True)
class RolloutSettings:
    max_tokens: int
    temperature: float
    renderer_name: str
    few_shot: bool
    source: str  # where the numbers came from (structured field or the spec's prose)


def rollout_settings(spec: StatedSpec) -> RolloutSettings:
    """max_tokens / temperature / renderer: a structured `rollout` block, else the spec's prose.

    The seed specs state them only in prose ("max_tokens=512 and temperature 1.0"); a spec
    that states neither is an error rather than a silent default.
    """
    raw = spec.to_dict()
    block = raw.get("rollout") or {}
    uses_gsm8k = "gsm8k" in str(raw.get("dataset", {})).lower()
    if block:
        return RolloutSettings(
            max_tokens=int(block["max_tokens"]),
            temperature=float(block.get("temperature", 1.0)),
            renderer_name=block.get("renderer", DEFAULT_RENDERER),
            few_shot=bool(block.get("few_shot", uses_gsm8k)),
            source="spec.rollout",
        )
    prose = " ".join(str(raw.get(k, "")) for k in ("method", "command", "eval"))
    tokens = re.search(r"max_tokens\s*=\s*(\d+)", prose)
    temperature = re.search(r"temperature[ =]+(\d+(?:\.\d+)?)", prose)
    if not tokens:
        raise ValueError("the spec states no max_tokens (no `rollout` block and none in its prose)")
    return RolloutSettings(
        max_tokens=int(tokens.group(1)),
        temperature=float(temperature.group(1)) if temperature else 1.0,
        renderer_name=DEFAULT_RENDERER,
        few_shot=uses_gsm8k,  # the cookbook's GSM8K env uses its one-shot prefix
        source="spec prose (method/command)",
    )
