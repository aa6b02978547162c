"""The flow with --overlap-gates: independent gates run side by side (experiment.contract.schedule), a failing gate
stops the run with nothing left running, and arm training never starts before every gate it depends on passed.

The gates after spec_intake are fakes (named so): steps that record when they start and end and call the service
through the run's `ctx.call_service`, as every real step does. Side by side is shown without timing: the gates of a
wave meet at a barrier that only gates running at once can pass.
"""

from __future__ import annotations

import threading

import pytest
from suite import FakeTinkerService, GS1_SPEC

from experiment.contract.verdict import GateVerdict
from experiment.gates import GATES, Gate
from experiment.run.store import RunStore
from experiment.service.capacity import CapacityBlocked

RENDEZVOUS_BOUND_S = 60  # a bound against a hang, never the assertion: a barrier passed or broken decides


class FakeGateSteps:
    """Fake steps for every gate after spec_intake; `outcome[gate]` decides what each does."""

    def __init__(self, barriers: dict[str, threading.Barrier] | None = None, failing: str | None = None,
                 waits_for_stop: str | None = None, capacity_blocked: str | None = None):
        self.barriers = barriers or {}
        self.failing, self.waits_for_stop, self.capacity_blocked = failing, waits_for_stop, capacity_blocked
        self.trace: list[tuple[str, str]] = []  # (event, gate) in the order they happened
        self.lock = threading.Lock()
        self.ended = set()

    def _note(self, event: str, gate: str) -> None:
        with self.lock:
            self.trace.append((event, gate))

    def step(self, gate: str):
        def run(ctx) -> GateVerdict:
            self._note("start", gate)
            try:
                ctx.call_service(lambda: None)
                if gate in self.barriers:  # broken (and noted) unless the gates of its wave run at once
                    try:
                        self.barriers[gate].wait(RENDEZVOUS_BOUND_S)
                    except threading.BrokenBarrierError:
                        self._note("met nobody", gate)
                if gate == self.capacity_blocked:  # refusals past the policy, as capacity_guarded_caller raises
                    raise CapacityBlocked("fake: the service stayed busy", 0, 600.0)
                if gate == self.failing:
                    return GateVerdict(gate=gate, status="failed", reasons=["fake failure"], next_diagnostic="none")
                if gate == self.waits_for_stop:  # keeps calling the service until the flow stops it (bounded:
                    pause = threading.Event()    # a flow that never stops it sees it pass after the bound)
                    for _ in range(RENDEZVOUS_BOUND_S * 100):
                        pause.wait(0.01)
                        ctx.call_service(lambda: None)
                return GateVerdict(gate=gate, status="passed")
            finally:
                self._note("end", gate)
        return run

    def install(self, monkeypatch) -> None:
        for name, gate in list(GATES.items()):
            if name != "spec_intake":
                fake = {family: self.step(name) for family in ("rl", "sft", "selfgen")}
                monkeypatch.setitem(GATES, name, Gate(name, gate.decides, gate.does, gate.rules, fake))

    def position(self, event: str, gate: str) -> int:
        return self.trace.index((event, gate))


def _run(tmp_path, overlap: bool = True):
    from flows.experiment_flow import run_experiment

    with FakeTinkerService(["Qwen/Qwen3.5-2B"]) as fake:
        return run_experiment(str(GS1_SPEC), backend=fake.base_url, runs_dir=str(tmp_path), overlap_gates=overlap,
                              return_state=True)


def _gate_events(store: RunStore) -> list[tuple[str, str]]:
    return [(e["gate"], e["status"]) for e in store.read_events() if e["event"] == "gate"]


def test_overlapped_gates_run_side_by_side_and_arm_training_waits_for_all_of_them(
        tmp_path, prefect_harness, no_service_env, monkeypatch):
    preflights = threading.Barrier(3)
    pilots = threading.Barrier(2)
    fakes = FakeGateSteps(barriers={"preflight_probe": preflights, "correctness_preflight": preflights,
                                    "restoration_preflight": preflights,
                                    "feasibility_pilot": pilots, "activation_gate": pilots})
    fakes.install(monkeypatch)
    _run(tmp_path)
    assert not preflights.broken and not pilots.broken  # each wave's gates were running at the same time
    for gate in ("preflight_probe", "correctness_preflight", "restoration_preflight", "feasibility_pilot",
                 "activation_gate"):
        assert fakes.position("end", gate) < fakes.position("start", "arm_training")
    store = RunStore.open(next(p for p in tmp_path.iterdir() if (p / "result.json").exists()))
    recorded = [gate for gate, _ in _gate_events(store)]
    assert recorded[:8] == ["spec_intake", "preflight_probe", "generation_audit", "correctness_preflight",
                            "restoration_preflight", "feasibility_pilot", "activation_gate", "arm_training"]


def test_one_gate_at_a_time_is_the_default(tmp_path, prefect_harness, no_service_env, monkeypatch):
    """Without --overlap-gates a gate waits for the one before it: a barrier between two of them breaks."""
    preflights = threading.Barrier(2, timeout=0.5)  # the only bound here: a sequential run cannot meet at it
    fakes = FakeGateSteps(barriers={"preflight_probe": preflights, "correctness_preflight": preflights},
                          failing=None)
    fakes.install(monkeypatch)
    _run(tmp_path, overlap=False)
    assert preflights.broken
    assert fakes.position("end", "preflight_probe") < fakes.position("start", "correctness_preflight")


@pytest.mark.parametrize("failing, beside", [("correctness_preflight", "restoration_preflight"),
                                             ("feasibility_pilot", "activation_gate")])
def test_a_failed_gate_in_a_wave_stops_the_gates_beside_it_and_the_run(
        tmp_path, prefect_harness, no_service_env, monkeypatch, failing, beside):
    fakes = FakeGateSteps(failing=failing, waits_for_stop=beside)
    fakes.install(monkeypatch)
    state = _run(tmp_path)
    assert state.is_failed() and state.name == "GateFailed"
    error = state.result(raise_on_failure=False)
    assert error.gate == failing
    assert ("end", beside) in fakes.trace  # it ended: stopped at its next service call, nothing left running
    assert all(("start", later) not in fakes.trace for later in ("arm_training", "evaluation", "decision"))
    store = RunStore.open(error.run_dir)
    events = _gate_events(store)
    assert events[-1] == (failing, "failed") and beside not in dict(events)
    stopped = [e for e in store.read_events() if e["event"] == "gate_beside_stop"]
    assert [(e["gate"], e["status"], e["ended_by"]) for e in stopped] == [(beside, "stopped", failing)]
    result = store.read_result()
    assert result["status"] == "failed" and result["outcome_reason"] == "incomplete_execution"


def test_a_capacity_stop_in_a_wave_stops_the_gates_beside_it_and_keeps_the_passed_ones_for_the_resume(
        tmp_path, prefect_harness, no_service_env, monkeypatch):
    fakes = FakeGateSteps(capacity_blocked="correctness_preflight", waits_for_stop="restoration_preflight")
    fakes.install(monkeypatch)
    state = _run(tmp_path)
    assert state.name == "CapacityBlocked"
    assert ("end", "restoration_preflight") in fakes.trace and ("start", "feasibility_pilot") not in fakes.trace
    store = RunStore.open(next(p for p in tmp_path.iterdir() if (p / "result.json").exists()))
    assert _gate_events(store) == [("spec_intake", "passed"), ("preflight_probe", "passed"),
                                   ("generation_audit", "not_applicable")]  # a resumed run reuses these
    stopped = [(e["gate"], e["status"]) for e in store.read_events() if e["event"] == "gate_beside_stop"]
    assert stopped == [("restoration_preflight", "stopped")]
    result = store.read_result()
    assert result["status"] != "running" and result["capacity_block"]
