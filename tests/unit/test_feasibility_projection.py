"""The feasibility projection: wall time from the schedule the pilot measured, service time from
every unit one after another, and a recovery reserve that covers the capacity waits met so far.

The pilot runs the arms side by side as the full run does (experiment/rl/steps/feasibility_pilot.py);
a projection that added the arms one after another overstated the wall time of a two-arm run by
about 2x under the Spindle-shaped profile (docs/service-profile.md), and one that left out the
per-step save_state understated it.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from grading_contexts.feasibility import context

from experiment.grading import feasibility as rules
from experiment.stats.activation import HELDOUT_SAMPLES, PILOT_STEPS
from experiment.stats.feasibility import (CLIENT_SIDE, CONTENTION_CORRECTED, RECOVERY_FRACTION, SERVICE_REPORTED,
                                          ActivationWork, PhaseTiming, TimeScale, activation_phases,
                                          feasibility_record, projection_config, timing_sources)

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


# ---------------------------------------------------------------- the activation gate after the pilot (issue 48)


def _activation(work, **overrides):
    measured = dict(setup=(20.0, 2), steps=(16.0, 2), heldout=(3.2, 32), heldout_sampler_seconds=5.0,
                    gpu_count=None, allocation_source=None)
    measured.update(overrides)
    return activation_phases(work, **measured)


def test_the_gs1_activation_pilot_is_projected_from_the_pilots_clients_steps_and_heldout_samples():
    work = ActivationWork.kernel_pilot(treatment_prompts=64)
    assert (work.clients, work.steps, work.lane_steps) == (2, PILOT_STEPS + 1, PILOT_STEPS)
    assert work.heldout_samples == HELDOUT_SAMPLES * 64 and work.calibration_candidates == 0
    phases = _activation(work)
    setup, steps, heldout, sampler = (phases[name] for name in (
        "activation_setup", "activation_steps", "activation_heldout", "activation_heldout_sampler"))
    # clients one after another: each 10 s of service and of wall
    assert (setup.projected_seconds, setup.projected_wall_seconds) == (20.0, 20.0)
    # 8 s a step: every pilot step in service, the treatment's lane in wall (the baseline's step beside it)
    assert steps.projected_seconds == pytest.approx(8.0 * (PILOT_STEPS + 1))
    assert steps.projected_wall_seconds == pytest.approx(8.0 * PILOT_STEPS)
    # 0.1 s a held-out sample on one lane, and one sampler for them
    assert heldout.projected_seconds == heldout.projected_wall_seconds == pytest.approx(0.1 * HELDOUT_SAMPLES * 64)
    assert sampler.projected_seconds == 5.0
    assert "activation_calibration" not in phases


def test_a_pre_registered_calibration_adds_a_client_and_the_pilot_steps_per_further_candidate():
    phases = _activation(ActivationWork.kernel_pilot(treatment_prompts=64, candidates=2))
    assert phases["activation_calibration"].projected_seconds == pytest.approx(10.0 + PILOT_STEPS * 8.0)


def test_the_generated_tasks_pilots_run_one_after_another_without_heldout_samples():
    phases = _activation(ActivationWork.generated_tasks_pilot())
    assert set(phases) == {"activation_setup", "activation_steps"}
    steps = phases["activation_steps"]
    assert steps.projected_wall_seconds == steps.projected_seconds == pytest.approx(8.0 * (PILOT_STEPS + 1))


def test_a_pilot_that_measured_no_clients_or_steps_projects_no_activation():
    assert _activation(ActivationWork.generated_tasks_pilot(), steps=(0.0, 0)) == {}


def test_the_activation_phases_count_in_the_plan_the_reserve_and_the_graders_recomputation():
    phases = _activation(ActivationWork.kernel_pilot(treatment_prompts=64, candidates=2))
    without, record = _record(), _record(extra_phases=phases)
    added = sum(phase.projected_wall_seconds for phase in phases.values())
    assert record["projection"]["planned_seconds"] == pytest.approx(without["projection"]["planned_seconds"] + added)
    assert record["recovery"]["seconds"] == pytest.approx(RECOVERY_FRACTION * record["projection"]["planned_seconds"])
    ctx = context(record)
    ctx.plan = SimpleNamespace(budget=BUDGET)
    assert rules.FEAS_12(ctx) == []  # the grader recomputes the same projection from the measurements
    record["projection"]["planned_seconds"] = without["projection"]["planned_seconds"]  # activation left out
    assert [issue.rule for issue in rules.FEAS_12(ctx)] == ["FEAS-12"]


def test_a_runs_service_seconds_come_from_the_service_where_it_reports_them_else_from_the_clients_contention():
    reported = TimeScale.of(10.0, service_seconds=7.0, runqueue_wait_seconds=1.0)
    assert (reported.source, reported.factor) == (SERVICE_REPORTED, pytest.approx(0.7))  # preferred to the wait
    corrected = TimeScale.of(10.0, service_seconds=None, runqueue_wait_seconds=2.5)
    assert (corrected.source, corrected.factor) == (CONTENTION_CORRECTED, pytest.approx(0.75))
    # a service that counted none of the run's calls (0) is not taken at its word
    assert TimeScale.of(10.0, service_seconds=0.0, runqueue_wait_seconds=2.5).source == CONTENTION_CORRECTED
    uncorrected = TimeScale.of(10.0)
    assert (uncorrected.source, uncorrected.factor) == (CLIENT_SIDE, 1.0)


def test_the_services_share_of_a_run_stays_between_none_and_all_of_it():
    assert TimeScale.of(10.0, service_seconds=12.0).factor == 1.0  # never more than the client measured
    assert TimeScale.of(10.0, runqueue_wait_seconds=15.0).factor == 0.0
    assert TimeScale.of(0.0, service_seconds=1.0).factor == 1.0  # no wall measured: nothing to scale by


def test_the_record_names_the_source_of_each_runs_service_seconds():
    account = timing_sources({"base": TimeScale.of(4.0, service_seconds=3.0),
                              "arms": TimeScale.of(8.0, runqueue_wait_seconds=2.0)})
    assert account["sources"] == [SERVICE_REPORTED, CONTENTION_CORRECTED]  # best first
    assert account["runs"]["base"] == {"source": SERVICE_REPORTED, "client_wall_seconds": 4.0,
                                       "service_seconds": 3.0, "factor": 0.75}
    assert account["runs"]["arms"]["runqueue_wait_seconds"] == 2.0 and account["runs"]["arms"]["factor"] == 0.75
    assert set(account["notes"]) == {SERVICE_REPORTED, CONTENTION_CORRECTED}
    assert timing_sources({"base": TimeScale.of(4.0)})["sources"] == [CLIENT_SIDE]
    record = _record(evaluation_timing={"heldout": TimeScale.of(4.0, runqueue_wait_seconds=1.0)})
    assert record["evaluation_timing"]["sources"] == [CONTENTION_CORRECTED]
    assert "evaluation_timing" not in _record()  # a pilot that corrected nothing says nothing
