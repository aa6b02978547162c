"""Gate waves for --overlap-gates (experiment.contract.schedule): dependencies, contract order, what a failing gate
could waste, and --plan's statement of it (experiment.run.schedule_outlook)."""

from __future__ import annotations

import random

import pytest
from suite import GS1_SPEC, SELFGEN_SPEC, TRIMUON_SPEC

from experiment.contract.dependencies import GATE_DEPENDS_ON
from experiment.contract.plan import build_plan
from experiment.contract.schedule import failure_exposure, gate_waves, worst_failure_waste
from experiment.contract.spec import load_spec
from experiment.contract.verdict import GATE_ORDER
from experiment.run.schedule_outlook import gate_schedule_outlook

SEED_SPECS = (GS1_SPEC, SELFGEN_SPEC, TRIMUON_SPEC)


def _waves_of(spec_path, rehearse=False):
    plan = build_plan(load_spec(spec_path, rehearse=rehearse))
    idle = [gate.name for gate in plan.gates if not gate.blocks]
    return gate_waves([gate.name for gate in plan.gates], without_work=idle), idle


def _wave_index(waves) -> dict[str, int]:
    return {gate: index for index, wave in enumerate(waves) for gate in wave}


def _waits_for(gate: str, running: set[str]) -> set[str]:
    found: set[str] = set()
    for dependency in GATE_DEPENDS_ON[gate]:
        found |= {dependency} if dependency in running else _waits_for(dependency, running)
    return found


def _assert_schedulable(waves, gates, idle=()):
    at = _wave_index(waves)
    assert sorted(at) == sorted(gates) and sum(map(len, waves)) == len(gates)  # every gate once
    assert [g for wave in waves for g in wave] == [g for g in GATE_ORDER if g in set(gates)]  # contract order kept
    running = set(gates) - set(idle)
    for gate in running:
        assert all(at[d] < at[gate] for d in _waits_for(gate, running)), gate


@pytest.mark.parametrize("spec_path", SEED_SPECS, ids=lambda p: p.stem)
@pytest.mark.parametrize("rehearse", [False, True])
def test_seed_spec_waves_follow_the_dependencies_and_the_contract_order(spec_path, rehearse):
    waves, idle = _waves_of(spec_path, rehearse)
    _assert_schedulable(waves, GATE_ORDER, idle)
    at = _wave_index(waves)
    assert waves[at["arm_training"]] == ("arm_training",)  # arm training shares its wave with nothing
    assert all(at[gate] < at["arm_training"] for gate in GATE_ORDER[:GATE_ORDER.index("arm_training")])


def test_gs1_runs_its_initial_state_preflights_then_its_two_pilots_side_by_side():
    waves, _ = _waves_of(GS1_SPEC)
    assert waves == [("spec_intake",),
                     ("preflight_probe", "generation_audit", "correctness_preflight", "restoration_preflight"),
                     ("feasibility_pilot", "activation_gate"),
                     ("arm_training",), ("evaluation",), ("decision",)]


def test_the_generation_audit_waits_for_the_probe_and_the_preflights_listed_after_it_wait_with_it():
    """Self-generated tasks: the audit reads the probe's tokenizer; the correctness and restoration preflights are
    listed after the audit, so they start with it, never before it (the recorded gates stay in contract order)."""
    waves, _ = _waves_of(SELFGEN_SPEC)
    assert waves[1] == ("preflight_probe",)
    assert waves[2] == ("generation_audit", "correctness_preflight", "restoration_preflight")


def test_without_overlap_every_gate_is_its_own_wave_in_contract_order():
    assert gate_waves(GATE_ORDER, overlap=False) == [(gate,) for gate in GATE_ORDER]


def test_waves_of_any_subset_of_gates_are_schedulable():
    rng = random.Random(48)
    for _ in range(200):
        gates = [gate for gate in GATE_ORDER if rng.random() < 0.7]
        idle = [gate for gate in gates if rng.random() < 0.2]
        _assert_schedulable(gate_waves(gates, without_work=idle), gates, idle)


def test_a_failing_gate_could_waste_the_gates_listed_after_it_in_its_wave():
    waves, idle = _waves_of(GS1_SPEC)
    seconds = {"preflight_probe": 44.0, "correctness_preflight": 74.0, "restoration_preflight": 148.0,
               "feasibility_pilot": 68.0, "activation_gate": 267.0}
    exposure = failure_exposure(waves, seconds, without_work=idle)
    assert exposure == {
        "preflight_probe": {"beside": ["correctness_preflight", "restoration_preflight"], "service_seconds": 222.0},
        "correctness_preflight": {"beside": ["restoration_preflight"], "service_seconds": 148.0},
        "feasibility_pilot": {"beside": ["activation_gate"], "service_seconds": 267.0},
    }
    assert worst_failure_waste(exposure) == ("feasibility_pilot", 267.0)
    assert failure_exposure(gate_waves(GATE_ORDER, overlap=False), seconds) == {}


def test_plan_states_no_extra_waste_without_overlap_and_names_the_gates_with_it(tmp_path):
    plan = build_plan(load_spec(GS1_SPEC))
    one_at_a_time = gate_schedule_outlook(plan, False, tmp_path)
    assert one_at_a_time["extra_service_seconds_if_a_gate_fails"] == 0.0
    overlapped = gate_schedule_outlook(plan, True, tmp_path)  # no run of the spec here: names, no seconds
    assert overlapped["with_overlap_gates"]["a_failing_gate_could_waste"]["feasibility_pilot"]["beside"] == \
        ["activation_gate"]
    assert overlapped["extra_service_seconds_if_a_gate_fails"] is None


def test_plan_takes_the_seconds_from_the_last_run_of_the_spec(tmp_path):
    from experiment.contract.verdict import GateVerdict
    from experiment.run.store import RunStore

    spec = load_spec(GS1_SPEC)
    plan = build_plan(spec)
    store = RunStore.create(tmp_path, spec, plan)
    for gate, seconds in (("preflight_probe", 44.0), ("correctness_preflight", 74.0), ("restoration_preflight", 148.0),
                          ("feasibility_pilot", 68.0), ("activation_gate", 267.0)):
        store.record_gate(GateVerdict(gate=gate, status="passed", duration_s=seconds))
    outlook = gate_schedule_outlook(plan, True, tmp_path)
    assert outlook["extra_service_seconds_if_a_gate_fails"] == 267.0
    assert outlook["with_overlap_gates"]["worst"] == {"gate": "feasibility_pilot", "service_seconds": 267.0}
    assert store.run_id in outlook["with_overlap_gates"]["seconds_from"]
