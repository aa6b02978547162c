"""Feasibility record (FEAS-1..FEAS-10): measured pilot timings projected against budget.

Rules kept here: timings are measured, never scaled by parameter count; concurrency is never
assumed free: the pilot measures the full run's actual schedule (arms side by side where the run
runs them side by side) and a phase's projected wall time comes from that measured wall time, its
service time from the sum of what each unit took (arms one after another); without a measured
wall time a phase is projected as if its units ran one after another. GPU counts come only from
explicit allocation evidence (the embedded backend is CPU-only: 0; a shared service whose
allocation is unknown: null). The recovery reserve is positive and covers at least the capacity
waits the run has already met (a service that refused once may refuse again).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from experiment.stats.activation import HELDOUT_SAMPLES, PILOT_STEPS

# The keys a re-projection watches (FEAS-2): config and effective_config
# both record all of them.
PROJECTION_KEYS = (
    "base_model", "lora_rank", "dataset", "steps", "batch_size", "max_seq_len",
    "max_tokens", "arms", "n_examples", "n_eval",
)
# What the record gives for each measured phase (measurements.<phase>) and for task generation (FEAS-3, FEAS-7)
FEASIBILITY_PHASE_KEYS = ("seconds", "units", "planned_units", "samples", "gpu_count", "allocation_source")
GENERATION_KEYS = ("attempted", "accepted", "target_accepted", "filter_samples_per_candidate")

RECOVERY_FRACTION = 0.25  # reserve for one retry/restore of the longest phase, as a share of the plan
PROJECTION_NOTE = ("projected, not observed usage; wall time in the full run's schedule as the pilot measured it "
                   "(arms side by side where the run runs them so; concurrency measured, never assumed); service "
                   "time: every unit one after another")

# The pilot's size when the spec states none (the project's choice): one step per arm, 32 eval items.
DEFAULT_PILOT_STEPS_PER_ARM = 1
DEFAULT_PILOT_EVAL_ITEMS = 32
# "timing pilot: 2 steps per arm plus 100 eval items" (spec 001's command, step 2)
STATED_PILOT = re.compile(
    r"timing pilot\W+(\d+)\s+steps?\s+per\s+arm(?:\s+(?:plus|and|\+)\s+(\d+)\s+eval(?:uation)?\s+items?)?",
    re.IGNORECASE)

EMBEDDED_ALLOCATION = (0, "embedded backend started by this run: a CPU-only process, no GPU allocated")
GPU_UNKNOWN_REASON = ("the service does not say how many GPUs serve it (no allocation evidence), so GPU-hours "
                      "are unknown and not projected")


@dataclass(frozen=True)
class PilotSize:
    steps_per_arm: int
    eval_items: int
    source: str  # where the size comes from: the spec's own words, or the project default


def pilot_size(spec: dict[str, Any]) -> PilotSize:
    """The timing pilot's size: the one the spec states (its `command` prose), else the default."""
    for field in ("command", "method"):
        match = STATED_PILOT.search(str(spec.get(field) or ""))
        if match:
            eval_items = int(match.group(2)) if match.group(2) else DEFAULT_PILOT_EVAL_ITEMS
            return PilotSize(int(match.group(1)), eval_items, f"spec {field}: {match.group(0)!r}")
    return PilotSize(DEFAULT_PILOT_STEPS_PER_ARM, DEFAULT_PILOT_EVAL_ITEMS,
                     "project default (the spec states no pilot size)")


@dataclass(frozen=True)
class PhaseUnits:
    """One pilot phase's size: units the pilot measures, units the full run plans, samples drawn."""

    units: int
    planned_units: int
    samples: int = 0


def rl_pilot_units(*, trained_arms: int, seeds: int, base_per_seed: bool, pilot_steps: int, steps: int,
                   pilot_items: int, eval_items: int, rollouts_per_step: int) -> dict[str, PhaseUnits]:
    """The RL timing pilot's phases: the pilot runs each trained arm once (side by side) and scores
    the base model and each arm on its items; the full run trains every arm at every scheduled seed
    and scores each of those replicas, plus the base model once, or at every seed when an untrained
    arm is compared (`base_per_seed`). FEAS-10 holds the measured units to the size the spec states."""
    replicas = trained_arms * seeds
    scored = replicas + (seeds if base_per_seed else 1)
    pilot_scored = pilot_items * (trained_arms + 1)
    per_replica = PhaseUnits(trained_arms, replicas)  # fixed per arm: a client, a final checkpoint, its sampler
    return {"setup": per_replica,
            "training": PhaseUnits(trained_arms * pilot_steps, replicas * steps,
                                   trained_arms * pilot_steps * rollouts_per_step),
            "evaluation": PhaseUnits(pilot_scored, eval_items * scored, pilot_scored),
            # fixed per scored model, whatever its items (EvaluationPace): the base model and each arm
            "evaluation_latency": PhaseUnits(trained_arms + 1, scored),
            "final_checkpoints": per_replica, "sampler_loads": per_replica}


@dataclass(frozen=True)
class ActivationWork:
    """What the activation gate runs after the pilot, in the units the pilot measures (its pilot steps are
    experiment.stats.activation.PILOT_STEPS; the steps in experiment/rl/steps/activation_gate.py and
    experiment/selfgen/steps/activation_gate.py):

    - `clients`: throwaway clients from the initialization checkpoint, created one after another;
    - `steps`: training steps over its pilots (service time), `lane_steps` of them on its longest lane (wall
      time: the GS1 baseline's one step runs beside the treatment's, the self-generated pilots one after
      another);
    - `heldout_samples` and `heldout_samplers`: the GS1 treatment pilot's held-out samples (HELDOUT_SAMPLES per
      step-0 prompt) from a sampler of its own;
    - `calibration_candidates`: further candidates a calibration the spec pre-registers may try (GS1:
      bandwidth in {0.5, 1.0}), each a client and PILOT_STEPS steps, after the first candidate failed."""

    clients: int
    steps: int
    lane_steps: int
    heldout_samples: int = 0
    heldout_samplers: int = 0
    calibration_candidates: int = 0

    @classmethod
    def kernel_pilot(cls, treatment_prompts: int, candidates: int = 1) -> ActivationWork:
        """GS1: a baseline pilot of one step beside the first treatment pilot (held-out samples, PILOT_STEPS)."""
        return cls(clients=2, steps=PILOT_STEPS + 1, lane_steps=PILOT_STEPS,
                   heldout_samples=HELDOUT_SAMPLES * treatment_prompts, heldout_samplers=1,
                   calibration_candidates=max(0, candidates - 1))

    @classmethod
    def generated_tasks_pilot(cls) -> ActivationWork:
        """Self-generated tasks: PILOT_STEPS treatment steps, then one baseline step, one after another."""
        return cls(clients=2, steps=PILOT_STEPS + 1, lane_steps=PILOT_STEPS + 1)


def activation_phases(work: ActivationWork, *, setup: tuple[float, int], steps: tuple[float, int],
                      heldout: tuple[float, int] = (0.0, 0), heldout_sampler_seconds: float = 0.0,
                      gpu_count: int | None, allocation_source: str | None) -> dict[str, PhaseTiming]:
    """The activation gate's phases, projected from the pilot's own measurements: `setup` (the clients' own
    seconds summed, clients), `steps` (the training steps' own seconds summed without the saves arm training
    adds, steps), `heldout` (seconds, samples of a held-out sampling the pilot ran as the activation gate does)
    and the sampler it drew them from. A phase's wall time is its lane's: clients and held-out samples one
    after another, steps `lane_steps` of `steps`. A calibration candidate is one client and PILOT_STEPS steps."""
    (setup_seconds, clients), (step_seconds, step_units) = setup, steps
    if clients <= 0 or step_units <= 0:
        return {}

    def phase(seconds: float, units: int, planned: int, samples: int = 0, wall: float | None = None) -> PhaseTiming:
        return PhaseTiming(seconds, units, planned, samples, gpu_count, allocation_source, wall)
    phases = {"activation_setup": phase(setup_seconds, clients, work.clients),
              "activation_steps": phase(step_seconds, step_units, work.steps, 0,
                                        step_seconds * work.lane_steps / work.steps)}
    heldout_seconds, samples = heldout
    if work.heldout_samples and samples > 0:
        phases["activation_heldout"] = phase(heldout_seconds, samples, work.heldout_samples, samples)
        phases["activation_heldout_sampler"] = phase(heldout_sampler_seconds, 1, work.heldout_samplers)
    if work.calibration_candidates:
        candidate = setup_seconds / clients + PILOT_STEPS * step_seconds / step_units
        phases["activation_calibration"] = phase(candidate, 1, work.calibration_candidates)
    return phases


@dataclass(frozen=True)
class EvaluationPace:
    """One model's pilot evaluation, split into what the evaluation's size scales and what it does not.

    An evaluation call takes a fixed time, paid once whatever its size, plus its items at the service's pace p.
    The fixed time is the requests' round trip and the client fetching the last answers (F, every call), and on
    a freshly loaded sampler the first request's warm-up (W, the first call only). The pilot answers a model's
    n items in three calls (`calls`): one item, then an eighth of the rest, then the remainder. The two later
    calls give the pace, p = (t2 - t1) / (n2 - n1), F cancelling; the first call less its one item gives the
    fixed time of an evaluation, W + F = t0 - p. A pilot that folded the fixed time into its time per item put
    it / n on each of the full evaluation's items: on the profiled backend at factor 1, 0.17 s beside 32 items
    of 0.02 s, a 25% overstatement of a 500-item evaluation; and a two-call split whose first call carried W
    took W from the pace (GS1 with capacity refusals: 11.7 ms an item against 13.8 billed) (docs/service-profile.md).
    Where the calls do not give a positive pace and a fixed time of at least 0 (noise, or too few items to
    split), the whole time counts per item, as before the split."""

    items: int
    seconds: float  # every call
    seconds_per_item: float
    fixed_seconds: float  # once per evaluation

    @staticmethod
    def calls(n: int) -> list[int]:
        """Items per call: [1, an eighth of the rest (at least 1), the remainder]; [n] (one call) below 5 items."""
        if n < 5:
            return [n]
        small = max(1, (n - 1) // 8)
        return [1, small, n - 1 - small]

    @classmethod
    def of_calls(cls, timed: list[tuple[int, float]]) -> EvaluationPace:
        """From each call's (items, seconds), in the order of `calls`."""
        items, seconds = sum(n for n, _ in timed), sum(t for _, t in timed)
        if any(n < 0 for n, _ in timed) or not items:
            raise ValueError(f"an evaluation of {[n for n, _ in timed]} items has no pace")
        if len(timed) == 3:
            (n0, t0), (n1, t1), (n2, t2) = timed
            if n0 == 1 and 0 < n1 < n2:
                per_item = (t2 - t1) / (n2 - n1)
                fixed = t0 - per_item
                if per_item > 0 and fixed >= 0:
                    return cls(items, seconds, per_item, fixed)
        return cls(items, seconds, seconds / items, 0.0)

    @property
    def item_seconds(self) -> float:
        """The part an evaluation's size scales: the items x the pace."""
        return self.seconds_per_item * self.items


# Where a pilot run's service seconds come from (TimeScale.source), best first
SERVICE_REPORTED = "service-reported"
CONTENTION_CORRECTED = "contention-corrected"
CLIENT_SIDE = "client-side"
TIME_SOURCE_NOTES = {
    SERVICE_REPORTED: "the service's own busy seconds for the pilot's session over the run (the embedded backend's "
                      "service_time route: its calls from arrival to result, the client's polling and reading "
                      "excluded) in place of the client-side seconds, in each unit's share",
    CONTENTION_CORRECTED: "the service reports no time of its own: the client-side seconds less the client's CPU "
                          "contention, the largest run-queue wait of one of its threads over the run "
                          "(/proc/self/task/*/schedstat; a lower bound of what contention added: conservative)",
    CLIENT_SIDE: "client-side seconds, uncorrected: the service reports no time of its own and this client cannot "
                 "read its run-queue wait",
}


@dataclass(frozen=True)
class TimeScale:
    """How much of one pilot run's client-side time was the service's (issue 48: a client under CPU contention
    inflates its own timings; the evaluation's service time was over-projected by 29.6% at load 13-34). A run's
    units' client-side seconds are multiplied by `factor`; its wall time is left as measured (the full run's
    client pays the same contention). `of` prefers the service's own reported time, else corrects for the
    client's contention, else leaves the seconds as the client measured them."""

    source: str
    client_wall_seconds: float
    service_seconds: float | None = None  # the service's busy seconds for the run (SERVICE_REPORTED)
    runqueue_wait_seconds: float | None = None  # the client's largest thread run-queue wait (CONTENTION_CORRECTED)

    @classmethod
    def of(cls, client_wall_seconds: float, service_seconds: float | None = None,
           runqueue_wait_seconds: float | None = None) -> TimeScale:
        """A service that reported no time (None) or none at all for the run (0: its calls named no session) is
        not taken at its word."""
        if service_seconds is not None and service_seconds > 0:
            return cls(SERVICE_REPORTED, client_wall_seconds, service_seconds=service_seconds)
        if runqueue_wait_seconds is not None and runqueue_wait_seconds >= 0:
            return cls(CONTENTION_CORRECTED, client_wall_seconds, runqueue_wait_seconds=runqueue_wait_seconds)
        return cls(CLIENT_SIDE, client_wall_seconds)

    @property
    def factor(self) -> float:
        """The service's share of the run's client-side time, in [0, 1] (1: uncorrected)."""
        wall = self.client_wall_seconds
        if wall <= 0 or self.source == CLIENT_SIDE:
            return 1.0
        service = self.service_seconds if self.source == SERVICE_REPORTED else wall - (self.runqueue_wait_seconds or 0.0)
        return min(1.0, max(0.0, (service or 0.0) / wall))

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "client_wall_seconds": self.client_wall_seconds,
                **({"service_seconds": self.service_seconds} if self.service_seconds is not None else {}),
                **({"runqueue_wait_seconds": self.runqueue_wait_seconds}
                   if self.runqueue_wait_seconds is not None else {}),
                "factor": self.factor}


def timing_sources(scales: dict[str, TimeScale]) -> dict[str, Any]:
    """The record's account of where corrected runs' service seconds came from: each run's scale, the sources used
    (best first) and what each means."""
    used = [source for source in TIME_SOURCE_NOTES if any(s.source == source for s in scales.values())]
    return {"sources": used, "runs": {name: scale.to_dict() for name, scale in scales.items()},
            "notes": {source: TIME_SOURCE_NOTES[source] for source in used}}


def service_allocation(service_kind: str) -> tuple[int | None, str | None]:
    """(gpu_count, allocation_source) from explicit allocation evidence only, else (None, None).

    The embedded backend is a CPU process this run started itself. A remote service tells the SDK
    nothing about its GPUs, so its allocation stays unknown (FEAS-6: null for a shared
    service when the allocation is unknown)."""
    return EMBEDDED_ALLOCATION if service_kind == "embedded" else (None, None)


@dataclass(frozen=True)
class PhaseTiming:
    """One measured phase: `seconds` for `units` pilot units (each unit's own time, summed: service
    time), `planned_units` in the full run; `wall_seconds`: the wall time those units took in the
    full run's schedule (units side by side where the run runs them side by side), None when the
    units ran one after another (then it equals `seconds`)."""

    seconds: float
    units: int
    planned_units: int
    samples: int
    gpu_count: int | None
    allocation_source: str | None
    wall_seconds: float | None = None

    @property
    def seconds_per_unit(self) -> float:
        return self.seconds / self.units if self.units else float("nan")

    @property
    def projected_seconds(self) -> float:
        """Service time of the full run's units: every unit one after another."""
        return self.seconds_per_unit * self.planned_units

    @property
    def projected_wall_seconds(self) -> float:
        """Wall time of the full run's units in the schedule the pilot measured."""
        wall = self.seconds if self.wall_seconds is None else self.wall_seconds
        return wall / self.units * self.planned_units if self.units else float("nan")

    def to_dict(self) -> dict[str, Any]:
        return {
            "seconds": self.seconds, "units": self.units, "planned_units": self.planned_units,
            "samples": self.samples, "gpu_count": self.gpu_count,
            "allocation_source": self.allocation_source,
            **({"wall_seconds": self.wall_seconds} if self.wall_seconds is not None else {}),
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
    pilot: dict[str, Any] | None = None,
    capacity_waits_seconds: float = 0.0,
    evaluation_timing: dict[str, TimeScale] | None = None,
) -> dict[str, Any]:
    """The `feasibility` record (FEAS-1..FEAS-8) plus a `projection` block (wall seconds, GPU-hours, fits).

    `config` and `effective_config` are both the full run's configuration and must be identical
    (FEAS-2: any difference means a re-projection); the pilot's own size lives in
    `measurements` (units measured vs planned_units of the full run) and in `pilot`.
    `capacity_waits_seconds`: how long the run has waited for capacity so far; the recovery reserve
    is at least that. `evaluation_timing`: where each evaluation run's service seconds came from (TimeScale; the
    record's `evaluation_timing`, timing_sources)."""
    if config != effective_config:
        changed = sorted(k for k in set(config) | set(effective_config) if config.get(k) != effective_config.get(k))
        raise ValueError(f"feasibility config and effective_config differ in {changed}: re-project the full run")
    phases = {"setup": setup, "training": training, "evaluation": evaluation, **(extra_phases or {})}
    planned = sum(p.projected_wall_seconds for p in phases.values())
    service_seconds = sum(p.projected_seconds for p in phases.values())
    recovery_seconds = max(RECOVERY_FRACTION * planned, capacity_waits_seconds, 1.0)
    wall_seconds = planned + recovery_seconds
    gpu_counts = [p.gpu_count for p in phases.values()]
    if any(c is None for c in gpu_counts):
        gpu_hours = None  # allocation unknown: never invented
        unknown = [name for name, p in phases.items() if p.gpu_count is None]
        gpu_hours_note = f"unknown: {GPU_UNKNOWN_REASON} (phases {', '.join(unknown)})"
    else:
        gpu_hours = sum((p.gpu_count or 0) * p.projected_seconds for p in phases.values()) / 3600
        gpu_hours_note = "projected from the GPU counts the allocation evidence gives for each phase"
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
        **({"pilot": pilot} if pilot else {}),
        **({"evaluation_timing": timing_sources(evaluation_timing)} if evaluation_timing else {}),
        "recovery": {
            "seconds": recovery_seconds,
            "gpu_count": setup.gpu_count,
            "allocation_source": setup.allocation_source,
        },
        "projection": {
            "wall_seconds": wall_seconds,
            "planned_seconds": planned,
            "service_seconds": service_seconds,
            "phases": {name: {"wall_seconds": p.projected_wall_seconds, "service_seconds": p.projected_seconds}
                       for name, p in phases.items()},
            "recovery_basis": (f"{RECOVERY_FRACTION:.0%} of the planned wall time, at least the "
                               f"{capacity_waits_seconds:.0f} s of capacity waits met so far"),
            "capacity_waits_seconds": capacity_waits_seconds,
            "gpu_hours": gpu_hours,
            "gpu_hours_status": "unknown" if gpu_hours is None else "projected",
            "gpu_hours_note": gpu_hours_note,
            "budget_wall_seconds": budget_wall,
            "budget_gpu_hours": budget_gpu,
            "fits": not problems,
            "problems": problems,
            "note": PROJECTION_NOTE,
        },
    }


def budget_use(budget: dict[str, Any], started: str, finished: str) -> dict[str, Any] | None:
    """RESULT.budget_use: the wall time from the run's start (run.json `started`) to its end against the spec's
    wall budget, and a note when the run overran it (a projection that fit by a noisy measurement, or a budget
    the run does not enforce: the record says so instead of leaving it to the reader). None without a budget."""
    minutes = budget.get("max_wall_minutes") if isinstance(budget, dict) else None
    if isinstance(minutes, bool) or not isinstance(minutes, (int, float)) or minutes <= 0:
        return None
    elapsed = (dt.datetime.fromisoformat(finished) - dt.datetime.fromisoformat(started)).total_seconds()
    budget_seconds = float(minutes) * 60
    use = {"budget_wall_seconds": budget_seconds, "elapsed_wall_seconds": elapsed,
           "within_budget": elapsed <= budget_seconds,
           "measured": "wall time from the run's start (run.json started) to its end, any stop before a resume "
                       "included"}
    if elapsed > budget_seconds:
        use["note"] = (f"the run overran its wall budget: {elapsed:.0f} s of a {budget_seconds:.0f} s budget "
                       f"({elapsed / budget_seconds:.1f}x)")
    return use
