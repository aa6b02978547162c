"""The dependency critical path over a plan's gates (experiment.contract.dependencies)."""

from __future__ import annotations

import random

import pytest

from experiment.contract.dependencies import GATE_DEPENDS_ON, critical_path
from experiment.contract.verdict import GATE_ORDER

# GS1's gates as issue 48 measured them (service seconds), no generation audit
GS1 = {"spec_intake": 1.0, "preflight_probe": 44.0, "correctness_preflight": 74.0, "restoration_preflight": 148.0,
       "feasibility_pilot": 68.0, "activation_gate": 267.0, "arm_training": 414.0, "evaluation": 55.0,
       "decision": 1.0}


def test_initial_state_preflights_overlap_and_the_longest_one_is_on_the_path():
    path = critical_path(GS1)
    assert path.chain == ("spec_intake", "restoration_preflight", "activation_gate", "arm_training", "evaluation",
                          "decision")
    assert path.seconds == pytest.approx(1 + 148 + 267 + 414 + 55 + 1)


def test_the_pilots_overlap_each_other_but_not_arm_training():
    path = critical_path({**GS1, "feasibility_pilot": 300.0})
    assert "feasibility_pilot" in path.chain and "activation_gate" not in path.chain
    assert path.finish["arm_training"] == pytest.approx(1 + 148 + 300 + 414)


def test_generation_audit_waits_for_the_probe_and_the_pilots_wait_for_the_audit():
    seconds = {"spec_intake": 0.0, "preflight_probe": 10.0, "generation_audit": 100.0, "correctness_preflight": 50.0,
               "restoration_preflight": 20.0, "feasibility_pilot": 5.0, "activation_gate": 7.0}
    path = critical_path(seconds)
    assert path.finish["generation_audit"] == pytest.approx(110.0)
    assert path.finish["feasibility_pilot"] == pytest.approx(115.0)
    assert path.finish["activation_gate"] == pytest.approx(117.0)


def test_a_gate_the_plan_leaves_out_passes_its_dependencies_through():
    gates = [g for g in GATE_ORDER if g != "restoration_preflight"]
    path = critical_path(GS1, gates)
    assert "restoration_preflight" not in path.finish
    # the pilots then wait only for the generation audit's place: after the probe
    assert path.chain[:3] == ("spec_intake", "preflight_probe", "activation_gate")


def test_a_gate_ordered_before_its_dependency_is_refused():
    with pytest.raises(ValueError, match="depends on"):
        critical_path(GS1, ["arm_training", "spec_intake"])


def test_the_path_is_never_longer_than_the_gates_one_after_another_nor_shorter_than_any_gate():
    rng = random.Random(48)
    for _ in range(200):
        seconds = {gate: rng.choice([0.0, rng.uniform(0, 500)]) for gate in GATE_ORDER}
        path = critical_path(seconds)
        assert path.seconds <= sum(seconds.values()) + 1e-9
        assert path.seconds >= max(seconds.values()) - 1e-9
        assert path.seconds == pytest.approx(sum(seconds[g] for g in path.chain))


def test_every_dependency_is_a_gate_that_comes_earlier_in_the_contract_order():
    for gate, dependencies in GATE_DEPENDS_ON.items():
        assert all(GATE_ORDER.index(d) < GATE_ORDER.index(gate) for d in dependencies)
    assert set(GATE_DEPENDS_ON) == set(GATE_ORDER)
