"""The spec's task-generation settings (the self-generated-tasks family): what generation, the filter and the
audit's re-solve need, read from the spec's structured `generation` block or, without one, its prose `method`.

A reading of the spec, so it lives with the contract: the pipeline (experiment.selfgen.task_generation) and the
grader (experiment.grading) read the same settings, and the grader imports no pipeline code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from experiment.contract.rehearsal import EMBEDDED_GENERATOR
from experiment.contract.spec import Spec, SpecError

# The label check reads the embedded generator's arithmetic family (its sentence forms) and nothing else: on real
# GSM8K questions it rejects about 5% of sound ones (61 of 1,319 test questions with their true answers), so it runs
# only where that family is generated (a rehearsal's embedded generator). A spec's own generator keeps the spec's
# filters, unchanged: the production path adds no filter the spec does not name.
LABEL_CHECKED_GENERATORS = (EMBEDDED_GENERATOR,)


@dataclass(frozen=True)
class GenerationSettings:
    """Everything generation, filtering and the audit's re-solve need, from the spec."""

    instruction: str
    generator_model: str  # base model name the generator runs on
    generator_path: str | None  # a tinker:// sampler checkpoint (a trained generator), else None
    solver_model: str
    solver_path: str | None
    n_accept: int
    filter_samples: int
    keep_band: tuple[int, int]
    min_words: int
    max_words: int
    filter_max_tokens: int
    generation_max_tokens: int
    solver_max_tokens: int
    temperature: float
    sandbox_timeout_s: float
    max_candidates: int
    batch_size: int = 16
    seed: int = 0
    audit_seed: int = 0
    max_audit_rounds: int = 3
    source: str = ""

    @property
    def generator_id(self) -> str:
        return self.generator_path or self.generator_model

    @property
    def label_checked(self) -> bool:
        """Whether the generator's label check filters (LABEL_CHECKED_GENERATORS: the family it reads)."""
        return self.generator_model in LABEL_CHECKED_GENERATORS

    @property
    def solver_id(self) -> str:
        return self.solver_path or self.solver_model


def generation_settings(spec: Spec) -> GenerationSettings:
    """A structured `generation` block when the spec has one, else the spec's prose (method).

    A number the spec does not state is an error, never a silent default (except batching,
    seeds and the audit round cap, which are this pipeline's own)."""
    raw = spec.to_dict()
    block = raw.get("generation")
    if isinstance(block, dict):
        return _settings_from_block(block)
    return _settings_from_prose(raw)


# The structured block's counts, read as integers: a string ("640") or a fraction was turned into one by int(),
# past the intake checks that read them (the prompts-per-step check skipped a string n_accept).
BLOCK_COUNTS = ("n_accept", "filter_samples", "filter_max_tokens", "max_candidates", "generation_max_tokens",
                "solver_max_tokens", "batch_size")


def check_generation_settings(spec: Spec) -> None:
    """The generation design read as the run reads it, refused at intake where it cannot run: a count that is not a
    positive integer, a keep band outside 0..filter_samples or upside down (the filter keeps a task whose correct
    count lies in the band, so [6, 1] keeps none and generation ran to max_candidates after the preflights)."""
    block = spec.to_dict().get("generation")
    if isinstance(block, dict):
        for key in BLOCK_COUNTS:
            value = block.get(key, 1)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise SpecError(f"generation.{key}", f"must be a positive integer (got {value!r})")
        for key in ("keep_band", "words"):
            pair = block.get(key)
            if not (isinstance(pair, list) and len(pair) == 2 and all(
                    isinstance(v, int) and not isinstance(v, bool) for v in pair)):
                raise SpecError(f"generation.{key}", f"must be [low, high], two integers (got {pair!r})")
    audit = spec.to_dict().get("generation_audit")
    sample = audit.get("min_sample_size") if isinstance(audit, dict) else None
    if sample is not None and (isinstance(sample, bool) or not isinstance(sample, int) or sample < 1):
        raise SpecError("generation_audit.min_sample_size", f"must be a positive integer (got {sample!r}): the audit "
                                                            "re-solves that many accepted tasks (0 was read as 100)")
    try:
        settings = generation_settings(spec)
    except (TypeError, ValueError) as err:
        raise SpecError("generation", f"cannot be read: {err}") from None
    low, high = settings.keep_band
    if not 0 <= low <= high <= settings.filter_samples:
        raise SpecError("generation.keep_band", f"[{low}, {high}]: the filter keeps a task whose correct count of "
                                                f"{settings.filter_samples} samples lies in the band, so it needs "
                                                f"0 <= low <= high <= {settings.filter_samples}")
    if settings.min_words > settings.max_words:
        raise SpecError("generation.words", f"[{settings.min_words}, {settings.max_words}]: low is above high")


def _settings_from_block(block: dict[str, Any]) -> GenerationSettings:
    required = ("instruction", "generator_model", "solver_model", "n_accept", "filter_samples", "keep_band",
                "words", "filter_max_tokens", "sandbox_timeout_s", "max_candidates")
    missing = [key for key in required if key not in block]
    if missing:
        raise SpecError("generation", f"lacks {', '.join(missing)}")
    low, high = block["keep_band"]
    min_words, max_words = block["words"]
    return GenerationSettings(
        instruction=str(block["instruction"]),
        generator_model=str(block["generator_model"]),
        generator_path=block.get("generator_path"),
        solver_model=str(block["solver_model"]),
        solver_path=block.get("solver_path"),
        n_accept=int(block["n_accept"]),
        filter_samples=int(block["filter_samples"]),
        keep_band=(int(low), int(high)),
        min_words=int(min_words),
        max_words=int(max_words),
        filter_max_tokens=int(block["filter_max_tokens"]),
        generation_max_tokens=int(block.get("generation_max_tokens", block["filter_max_tokens"])),
        solver_max_tokens=int(block.get("solver_max_tokens", block["filter_max_tokens"])),
        temperature=float(block.get("temperature", 1.0)),
        sandbox_timeout_s=float(block["sandbox_timeout_s"]),
        max_candidates=int(block["max_candidates"]),
        batch_size=int(block.get("batch_size", 16)),
        seed=int(block.get("seed", 0)),
        audit_seed=int(block.get("audit_seed", 0)),
        max_audit_rounds=int(block.get("max_audit_rounds", 3)),
        source="spec.generation",
    )


_PROSE_PATTERNS = {
    "instruction": r"one fixed instruction:\s*'([^']+)'",
    "generator": r"Frozen base ([\w./-]+?),? through the sampling client",
    "temperature": r"sampling client at T=(\d+(?:\.\d+)?)",
    "timeout": r"sandbox with a (\d+(?:\.\d+)?) ?s timeout",
    "words": r"(\d+) to (\d+) words long",
    "band": r"solves the problem from text alone in (\d+) to (\d+) of (\d+) samples at max_tokens=(\d+)",
    "n_accept": r"first (\d+) accepted tasks",
    "solver": r"re-solved blind from the problem text alone by ([\w./-]+?),",
}


def _settings_from_prose(raw: dict[str, Any]) -> GenerationSettings:
    method = str(raw.get("method", ""))
    found = {key: re.search(pattern, method) for key, pattern in _PROSE_PATTERNS.items()}
    missing = [key for key, match in found.items() if match is None]
    if missing:
        raise SpecError("method", f"the generation design does not state: {', '.join(missing)}")
    n_accept = int(found["n_accept"].group(1))
    max_tokens = int(found["band"].group(4))
    return GenerationSettings(
        instruction=found["instruction"].group(1),
        generator_model=found["generator"].group(1),
        generator_path=None,
        solver_model=found["solver"].group(1),
        solver_path=None,
        n_accept=n_accept,
        filter_samples=int(found["band"].group(3)),
        keep_band=(int(found["band"].group(1)), int(found["band"].group(2))),
        min_words=int(found["words"].group(1)),
        max_words=int(found["words"].group(2)),
        filter_max_tokens=max_tokens,
        generation_max_tokens=max_tokens,
        solver_max_tokens=max_tokens,
        temperature=float(found["temperature"].group(1)),
        sandbox_timeout_s=float(found["timeout"].group(1)),
        max_candidates=20 * n_accept,  # a hard stop of this pipeline, recorded with the counts
        source="spec prose (method)",
    )
