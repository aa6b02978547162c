"""The feasibility record (FEAS-1..FEAS-11).

`config` and `effective_config` both record the full run's ten projection keys, identically; the
pilot's size lives in `measurements` (units vs planned_units); a spec's stated pilot size is
honoured; GPU-hours are projected only from allocation evidence, else said to be unknown.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiment.stats.feasibility import (
    DEFAULT_PILOT_EVAL_ITEMS,
    DEFAULT_PILOT_STEPS_PER_ARM,
    PROJECTION_KEYS,
    PhaseTiming,
    feasibility_record,
    pilot_size,
    projection_config,
    service_allocation,
)

SPECS = Path(__file__).resolve().parents[2] / "specs"
BUDGET = {"gpu_hours": 2.0, "max_wall_minutes": 60}


def _full_run() -> dict:
    return projection_config(base_model="embedded/tiny-arith", lora_rank=8, dataset={"name": "arith"}, steps=12,
                             batch_size=64, max_seq_len=256, max_tokens=16, arms=["grpo_gs8", "gs1_kernel"],
                             n_examples=768, n_eval=500)


def _record(gpu_count, allocation, **overrides):
    config = _full_run()
    kwargs = dict(
        config=config, effective_config=dict(config), primary_endpoint="accuracy", source="pilot",
        setup=PhaseTiming(2.0, 2, 2, 0, gpu_count, allocation),
        training=PhaseTiming(6.0, 4, 24, 256, gpu_count, allocation),  # 2 pilot steps x 2 arms of 12 x 2
        evaluation=PhaseTiming(5.0, 100, 1500, 100, gpu_count, allocation),
        budget=BUDGET, pilot={"steps_per_arm": 2, "eval_items": 100},
    )
    kwargs.update(overrides)
    return feasibility_record(**kwargs)


def test_the_self_generated_spec_states_its_pilot_size():
    size = pilot_size(json.loads((SPECS / "selfgen_tasks_vs_gsm8k.json").read_text()))
    assert (size.steps_per_arm, size.eval_items) == (2, 100)
    assert "2 steps per arm plus 100 eval items" in size.source


def test_a_spec_without_a_stated_pilot_gets_the_default_and_says_so():
    size = pilot_size(json.loads((SPECS / "gs1_kernel_vs_grpo_gsm8k.json").read_text()))
    assert (size.steps_per_arm, size.eval_items) == (DEFAULT_PILOT_STEPS_PER_ARM, DEFAULT_PILOT_EVAL_ITEMS)
    assert "default" in size.source
    assert pilot_size({"command": "Step 2, timing pilot: 3 steps per arm."}).steps_per_arm == 3


def test_config_and_effective_config_are_the_full_run_identically():
    record = _record(*service_allocation("embedded"))
    assert record["config"] == record["effective_config"]
    assert set(record["config"]) == set(PROJECTION_KEYS)
    assert record["config"]["steps"] == 12 and record["config"]["n_eval"] == 500
    training = record["measurements"]["training"]
    assert (training["units"], training["planned_units"]) == (4, 24)  # the pilot's size lives here
    assert record["pilot"] == {"steps_per_arm": 2, "eval_items": 100}


def test_a_pilot_config_that_differs_from_the_full_run_is_refused():
    piloted = dict(_full_run(), steps=2, n_eval=100)
    with pytest.raises(ValueError, match=r"differ in \['n_eval', 'steps'\]"):
        _record(0, "cpu", config=piloted)


def test_gpu_hours_are_projected_from_allocation_evidence():
    record = _record(*service_allocation("embedded"))
    projection = record["projection"]
    assert record["measurements"]["setup"]["gpu_count"] == 0
    assert "CPU-only" in record["measurements"]["setup"]["allocation_source"]
    assert projection["gpu_hours"] == 0 and projection["gpu_hours_status"] == "projected"
    on_two = _record(2, "service allocation: 2 GPUs")["projection"]
    # (2 + 36 + 75 projected seconds) x 2 GPUs
    assert on_two["gpu_hours"] == pytest.approx((2.0 + 36.0 + 75.0) * 2 / 3600)


def test_gpu_hours_are_said_unknown_when_the_service_does_not_say():
    gpu_count, allocation = service_allocation("remote")
    assert (gpu_count, allocation) == (None, None)
    record = _record(gpu_count, allocation)
    projection = record["projection"]
    assert projection["gpu_hours"] is None
    assert projection["gpu_hours_status"] == "unknown"
    assert "does not say how many GPUs" in projection["gpu_hours_note"]
    assert record["measurements"]["training"]["gpu_count"] is None
    assert projection["wall_seconds"] > 0 and projection["fits"]  # the wall projection stands on its own
