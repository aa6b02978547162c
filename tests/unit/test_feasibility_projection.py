"""The feasibility projection: wall time from the schedule the pilot measured, service time from
every unit one after another, and a recovery reserve that covers the capacity waits met so far.

The pilot runs the arms side by side as the full run does (experiment/rl/steps/feasibility_pilot.py);
a projection that added the arms one after another overstated the wall time of a two-arm run by
about 2x under the Spindle-shaped profile (docs/service-profile.md), and one that left out the
per-step save_state understated it.
"""

from __future__ import annotations

import pytest

from experiment.stats.feasibility import RECOVERY_FRACTION, PhaseTiming, feasibility_record, projection_config

BUDGET = {"gpu_hours": None, "max_wall_minutes": 60}


def _record(**overrides):
    config = projection_config(base_model="m", lora_rank=8, dataset={"name": "d"}, steps=12, batch_size=64,
                               max_seq_len=256, max_tokens=16, arms=["a", "b"], n_examples=768, n_eval=200)
    kwargs = dict(
        config=config, effective_config=dict(config), primary_endpoint="accuracy", source="pilot",
        # two arms side by side: each took 10 s of its own, together 11 s of wall
        setup=PhaseTiming(20.0, 2, 2, 0, None, None, wall_seconds=11.0),
        # one pilot step per arm side by side (2 arm-steps, 8 s each, 9 s wall) of 12 steps per arm
        training=PhaseTiming(16.0, 2, 24, 128, None, None, wall_seconds=9.0),
        # base then both arms on 10 items: 3 x 10 items, 3 s each, 6 s wall
        evaluation=PhaseTiming(9.0, 30, 600, 30, None, None, wall_seconds=6.0),
        budget=BUDGET,
    )
    kwargs.update(overrides)
    return feasibility_record(**kwargs)


def test_wall_time_comes_from_the_measured_schedule_and_service_time_from_every_unit():
    projection = _record()["projection"]
    phases = projection["phases"]
    assert phases["setup"] == {"wall_seconds": 11.0, "service_seconds": 20.0}
    assert phases["training"] == {"wall_seconds": 9.0 * 12, "service_seconds": 16.0 * 12}
    assert phases["evaluation"] == {"wall_seconds": 6.0 * 20, "service_seconds": 9.0 * 20}
    assert projection["planned_seconds"] == pytest.approx(11.0 + 108.0 + 120.0)
    assert projection["service_seconds"] == pytest.approx(20.0 + 192.0 + 180.0)
    assert projection["wall_seconds"] == pytest.approx(projection["planned_seconds"] * (1 + RECOVERY_FRACTION))


def test_a_phase_without_a_measured_schedule_is_projected_one_unit_after_another():
    record = _record(setup=PhaseTiming(20.0, 2, 2, 0, None, None))
    assert record["projection"]["phases"]["setup"] == {"wall_seconds": 20.0, "service_seconds": 20.0}
    assert "wall_seconds" not in record["measurements"]["setup"]  # the contract's keys, as before
    assert record["measurements"]["training"]["wall_seconds"] == 9.0


def test_the_recovery_reserve_covers_the_capacity_waits_met_so_far():
    planned = _record()["projection"]["planned_seconds"]
    assert _record()["recovery"]["seconds"] == pytest.approx(RECOVERY_FRACTION * planned)
    waited = RECOVERY_FRACTION * planned + 100
    record = _record(capacity_waits_seconds=waited)
    assert record["recovery"]["seconds"] == pytest.approx(waited)
    assert record["projection"]["wall_seconds"] == pytest.approx(planned + waited)
    assert f"{waited:.0f} s of capacity waits" in record["projection"]["recovery_basis"]
