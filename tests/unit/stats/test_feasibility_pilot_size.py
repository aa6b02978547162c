"""experiment.stats.feasibility's pilot size (issue 28 item 7, the complete mutation run's survivors):
the size a spec states in its command or method prose, else the project's default (one step per
arm, 32 eval items), with where it came from."""

from __future__ import annotations

import pytest

from experiment.stats.feasibility import (
    EMBEDDED_ALLOCATION, PROJECTION_KEYS, PhaseTiming, PhaseUnits, PilotSize, feasibility_record, pilot_size,
    projection_config, rl_pilot_units, service_allocation,
)


def test_without_a_stated_size_the_pilot_is_one_step_per_arm_and_32_items():
    assert pilot_size({}) == PilotSize(1, 32, "project default (the spec states no pilot size)")
    assert pilot_size({"command": "train both arms", "method": None}) == pilot_size({})


def test_the_commands_stated_size_wins_and_items_default_to_32():
    stated = pilot_size({"command": "step 2: timing pilot: 2 steps per arm plus 100 eval items"})
    assert (stated.steps_per_arm, stated.eval_items) == (2, 100)
    assert stated.source == "spec command: 'timing pilot: 2 steps per arm plus 100 eval items'"
    steps_only = pilot_size({"method": "a timing pilot - 3 steps per arm"})
    assert (steps_only.steps_per_arm, steps_only.eval_items) == (3, 32)
    assert steps_only.source.startswith("spec method: ")
    both = pilot_size({"command": "timing pilot: 4 steps per arm", "method": "timing pilot: 5 steps per arm"})
    assert both.steps_per_arm == 4


# ---- the RL pilot's units, the allocation evidence, the config keys and the budget checks

def _units_by_enumeration(*, trained_arms, seeds, base_per_seed, pilot_steps, steps, pilot_items, eval_items,
                          rollouts_per_step):
    """The same counts, by listing every unit the pilot and the full run perform."""
    arms = [f"arm{i}" for i in range(trained_arms)]
    replicas = [(arm, seed) for arm in arms for seed in range(seeds)]
    pilot_steps_run = [(arm, step) for arm in arms for step in range(pilot_steps)]
    full_steps_run = [(replica, step) for replica in replicas for step in range(steps)]
    samples = [(unit, rollout) for unit in pilot_steps_run for rollout in range(rollouts_per_step)]
    pilot_scorers = ["base", *arms]
    pilot_scored = [(who, item) for who in pilot_scorers for item in range(pilot_items)]
    base_scorers = [("base", seed) for seed in range(seeds)] if base_per_seed else [("base", 0)]
    full_scored = [(who, item) for who in [*replicas, *base_scorers] for item in range(eval_items)]
    per_replica = PhaseUnits(len(arms), len(replicas), 0)
    return {"setup": per_replica,
            "training": PhaseUnits(len(pilot_steps_run), len(full_steps_run), len(samples)),
            "evaluation": PhaseUnits(len(pilot_scored), len(full_scored), len(pilot_scored)),
            "evaluation_latency": PhaseUnits(len(pilot_scorers), len(replicas) + len(base_scorers), 0),
            "final_checkpoints": per_replica, "sampler_loads": per_replica}


@pytest.mark.parametrize("base_per_seed", [False, True])
@pytest.mark.parametrize("trained_arms,seeds", [(2, 3), (3, 2)])
def test_the_rl_pilot_units_count_every_arm_seed_step_item_and_rollout(trained_arms, seeds, base_per_seed):
    # distinct primes, so no swapped factor or operator gives the same count by accident
    sizes = dict(trained_arms=trained_arms, seeds=seeds, base_per_seed=base_per_seed, pilot_steps=5, steps=7,
                 pilot_items=11, eval_items=13, rollouts_per_step=17)
    assert rl_pilot_units(**sizes) == _units_by_enumeration(**sizes)


def test_a_phase_draws_no_samples_unless_told():
    assert PhaseUnits(units=2, planned_units=6).samples == 0
    units = rl_pilot_units(trained_arms=2, seeds=3, base_per_seed=False, pilot_steps=1, steps=4, pilot_items=8,
                           eval_items=9, rollouts_per_step=16)
    assert units["setup"].samples == units["final_checkpoints"].samples == units["sampler_loads"].samples == 0
    assert units["evaluation_latency"].samples == 0


@pytest.mark.parametrize("kind", ["remote", "cloud", "a", "", "embedded2", "z-service"])
def test_only_the_embedded_backend_has_allocation_evidence(kind):
    assert service_allocation("embedded") == EMBEDDED_ALLOCATION
    assert service_allocation(kind) == (None, None)


def test_a_config_without_every_projection_key_is_refused_naming_the_missing_one():
    complete = {key: index for index, key in enumerate(PROJECTION_KEYS)}
    assert projection_config(**complete) == complete
    for key in PROJECTION_KEYS:
        partial = {k: v for k, v in complete.items() if k != key}
        with pytest.raises(ValueError, match=key):
            projection_config(**partial)


def _config():
    return projection_config(base_model="m", lora_rank=8, dataset={"name": "d"}, steps=1, batch_size=4,
                             max_seq_len=64, max_tokens=8, arms=["a"], n_examples=4, n_eval=4)


def _record(*, setup_seconds, gpu_count=None, budget, **extra):
    """One setup unit taking `setup_seconds`; training and evaluation measured as free."""
    allocation = "evidence" if gpu_count is not None else None

    def phase(seconds):
        return PhaseTiming(seconds, 1, 1, 0, gpu_count, allocation)

    return feasibility_record(config=_config(), effective_config=_config(), primary_endpoint="accuracy",
                              source="pilot", setup=phase(setup_seconds), training=phase(0.0),
                              evaluation=phase(0.0), budget=budget, **extra)


def test_without_capacity_waits_the_record_says_none_were_met():
    projection = _record(setup_seconds=400.0, budget={})["projection"]
    assert projection["capacity_waits_seconds"] == 0.0
    assert "at least the 0 s of capacity waits" in projection["recovery_basis"]


def test_the_recovery_reserve_is_at_least_one_second():
    record = _record(setup_seconds=2.0, budget={})  # a quarter of 2 s is below the 1 s floor
    assert record["recovery"]["seconds"] == 1.0
    assert record["projection"]["wall_seconds"] == 3.0


def test_a_run_without_a_wall_budget_is_not_held_to_one():
    projection = _record(setup_seconds=10_000.0, budget={"gpu_hours": None})["projection"]
    assert projection["budget_wall_seconds"] == 0.0
    assert projection["fits"] is True and projection["problems"] == []


def test_a_projection_exactly_at_the_wall_budget_fits_and_one_over_does_not():
    # 48 s planned + a quarter of it in reserve = 60 s, exactly one minute (every value exact in binary)
    at_budget = _record(setup_seconds=48.0, budget={"max_wall_minutes": 1})["projection"]
    assert at_budget["wall_seconds"] == at_budget["budget_wall_seconds"] == 60.0
    assert at_budget["fits"] is True
    over = _record(setup_seconds=48.5, budget={"max_wall_minutes": 1})["projection"]
    assert over["fits"] is False and over["problems"] == ["projected wall 61s exceeds budget 60s"]
    under = _record(setup_seconds=40.0, budget={"max_wall_minutes": 1})["projection"]
    assert under["fits"] is True


def test_gpu_hours_exactly_at_the_budget_fit_over_it_do_not_and_no_budget_holds_none():
    # one GPU for an hour of setup: 1.0 GPU-hour
    at_budget = _record(setup_seconds=3600.0, gpu_count=1, budget={"gpu_hours": 1})["projection"]
    assert at_budget["gpu_hours"] == 1.0 and at_budget["fits"] is True
    over = _record(setup_seconds=3600.0, gpu_count=1, budget={"gpu_hours": 0.5})["projection"]
    assert over["fits"] is False and over["problems"] == ["projected 1.00 GPU-hours exceeds budget 0.5"]
    unbudgeted = _record(setup_seconds=3600.0, gpu_count=1, budget={"gpu_hours": None})["projection"]
    assert unbudgeted["gpu_hours"] == 1.0 and unbudgeted["fits"] is True


def test_the_gpu_hours_note_names_only_the_phases_without_allocation_evidence():
    known = PhaseTiming(1.0, 1, 1, 0, 1, "evidence")
    unknown = PhaseTiming(1.0, 1, 1, 0, None, None)
    record = feasibility_record(config=_config(), effective_config=_config(), primary_endpoint="accuracy",
                                source="pilot", setup=known, training=unknown, evaluation=known, budget={})
    projection = record["projection"]
    assert projection["gpu_hours"] is None and projection["gpu_hours_status"] == "unknown"
    assert projection["gpu_hours_note"].endswith("(phases training)")
