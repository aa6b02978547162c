"""Feasibility record (contract section 11): measured pilot timings projected against budget.

Rules kept here: timings are measured, never scaled by parameter count; concurrency is never
assumed free (arms are projected as if they ran one after another); GPU counts come only
from explicit allocation evidence (the embedded backend is CPU-only: 0; a shared service
whose allocation is unknown: null); the recovery reserve is positive.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# The keys a re-projection watches (contract-details ): config and effective_config
# both record all of them.
PROJECTION_KEYS = (
    "base_model", "lora_rank", "dataset", "steps", "batch_size", "max_seq_len",
    "max_tokens", "arms", "n_examples", "n_eval",
)

RECOVERY_FRACTION = 0.25  # reserve for one retry/restore of the longest phase, as a share of the plan


@dataclass(frozen=True)
class PhaseTiming:
    """One measured phase: `seconds` for `units` pilot units, `planned_units` in the full run."""

    seconds: float
    units: int
    planned_units: int
    samples: int
    gpu_count: int | None
    allocation_source: str | None

    @property
    def seconds_per_unit(self) -> float:
        return self.seconds / self.units if self.units else float("nan")

    @property
    def projected_seconds(self) -> float:
        return self.seconds_per_unit * self.planned_units

    def to_dict(self) -> dict[str, Any]:
        return {
            "seconds": self.seconds, "units": self.units, "planned_units": self.planned_units,
            "samples": self.samples, "gpu_count": self.gpu_count,
            "allocation_source": self.allocation_source,
        }


def projection_config(**values: Any) -> dict[str, Any]:
    missing = [k for k in PROJECTION_KEYS if k not in values]
    if missing:
        raise ValueError(f"feasibility config misses {missing}")
    return {k: values[k] for k in PROJECTION_KEYS}


def feasibility_record(
    *,
    config: dict[str, Any],
    effective_config: dict[str, Any],
    primary_endpoint: str,
    source: str,
    setup: PhaseTiming,
    training: PhaseTiming,
    evaluation: PhaseTiming,
    budget: dict[str, Any],
    generation: dict[str, Any] | None = None,
    extra_phases: dict[str, PhaseTiming] | None = None,
) -> dict[str, Any]:
    """The section-11 record plus a `projection` block (wall seconds, GPU-hours, fits)."""
    phases = {"setup": setup, "training": training, "evaluation": evaluation, **(extra_phases or {})}
    planned = sum(p.projected_seconds for p in phases.values())
    recovery_seconds = max(RECOVERY_FRACTION * planned, 1.0)
    wall_seconds = planned + recovery_seconds
    gpu_counts = [p.gpu_count for p in phases.values()]
    if any(c is None for c in gpu_counts):
        gpu_hours = None  # allocation unknown: never invented
    else:
        gpu_hours = sum((p.gpu_count or 0) * p.projected_seconds for p in phases.values()) / 3600
    budget_wall = float(budget.get("max_wall_minutes", 0)) * 60
    budget_gpu = budget.get("gpu_hours")
    problems = []
    if budget_wall and wall_seconds > budget_wall:
        problems.append(f"projected wall {wall_seconds:.0f}s exceeds budget {budget_wall:.0f}s")
    if gpu_hours is not None and budget_gpu is not None and gpu_hours > float(budget_gpu):
        problems.append(f"projected {gpu_hours:.2f} GPU-hours exceeds budget {budget_gpu}")
    return {
        "config": config,
        "effective_config": effective_config,
        "primary_endpoint": primary_endpoint,
        "source": source,
        "measurements": {name: p.to_dict() for name, p in phases.items()},
        "generation": generation,
        "recovery": {
            "seconds": recovery_seconds,
            "gpu_count": setup.gpu_count,
            "allocation_source": setup.allocation_source,
        },
        "projection": {
            "wall_seconds": wall_seconds,
            "gpu_hours": gpu_hours,
            "budget_wall_seconds": budget_wall,
            "budget_gpu_hours": budget_gpu,
            "fits": not problems,
            "problems": problems,
            "note": "projected, not observed usage; arms projected sequentially (concurrency not assumed free)",
        },
    }
