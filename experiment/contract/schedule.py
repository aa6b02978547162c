"""Which gates may run side by side (`--overlap-gates`): waves of gates, from the dependencies of
experiment.contract.dependencies, and what a failing gate could waste under them.

The contract lists the gates in order (exchange-contract.md section 1, "Gates, in order") and states what must
come before what: the probe "before any arm trains", the audit "before ANY optimizer update on generated data
(timing and activation pilots included)", correctness "before any full sweep", restoration ("Full training waits
for *verified* checks"), the feasibility pilot "after the served model is resolved and before the full comparison
... published before continuing", the activation calibration "posted before any full training". Running a gate
beside one listed before it departs from the listed order (the activation gate starts before the feasibility
record is published), so overlapping is opt-in and the default schedule is one gate per wave, in order.

A wave is a set of gates that start together; the next wave starts only when every gate of the wave before it has
passed (arm training therefore never starts before every gate it depends on passed). Waves keep the contract's
order: a gate is never in an earlier wave than a gate listed before it, so recording each wave's verdicts in
GATE_ORDER records the whole run in GATE_ORDER (the grader's events.gate_order). A gate goes in the first wave
after every gate it depends on (a gate that does not run passes its dependencies through, as in critical_path).

When a gate of a wave fails, the gates listed after it in the same wave ran only because of the overlap: their
service time is what the overlap could waste (`failure_exposure`); the flow stops them at their next service call.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from experiment.contract.dependencies import GATE_DEPENDS_ON
from experiment.contract.verdict import GATE_ORDER


def gate_waves(gates: Iterable[str], overlap: bool = True, without_work: Iterable[str] = (),
               depends_on: Mapping[str, tuple[str, ...]] = GATE_DEPENDS_ON) -> list[tuple[str, ...]]:
    """`gates` (those the run executes, any order; they run in GATE_ORDER) as waves. Without `overlap`, one gate
    a wave, in order. With it, each gate in the first wave after everything it depends on, and never before a gate
    listed before it. `without_work`: gates among them that do no work (the plan marks them not applicable): they
    hold nothing back (their dependents wait for what they depend on) and join the wave of the gate with work listed
    before them (so arm training never shares its wave)."""
    listed = set(gates)
    idle = set(without_work) & listed
    if not overlap:
        return [(gate,) for gate in GATE_ORDER if gate in listed]
    gates = [gate for gate in GATE_ORDER if gate in listed - idle]
    running = set(gates)

    def needs(gate: str) -> set[str]:  # the executed gates `gate` waits for, gates that do not run passed through
        found: set[str] = set()
        for dependency in depends_on.get(gate, ()):
            found |= {dependency} if dependency in running else needs(dependency)
        return found

    wave: dict[str, int] = {}
    for gate in gates:
        after_dependencies = max((wave[d] + 1 for d in needs(gate)), default=0)
        not_before_listed = wave[gates[gates.index(gate) - 1]] if gates.index(gate) else 0
        wave[gate] = max(after_dependencies, not_before_listed)
    waves: list[tuple[str, ...]] = []
    for gate in gates:
        if wave[gate] == len(waves):
            waves.append(())
        waves[-1] += (gate,)
    for gate in (g for g in GATE_ORDER if g in idle):  # beside the gate with work listed before it
        earlier = [wave[g] for g in gates if GATE_ORDER.index(g) < GATE_ORDER.index(gate)]
        at = max(earlier) if earlier else 0
        if not waves:
            waves.append(())
        waves[at] = tuple(g for g in GATE_ORDER if g in set(waves[at]) | {gate})
    return waves


def failure_exposure(waves: list[tuple[str, ...]], service_seconds: Mapping[str, float] | None = None,
                     without_work: Iterable[str] = ()) -> dict:
    """For each gate that shares its wave with gates listed after it: those gates (they would not have run had it
    failed first, one gate at a time) and, where `service_seconds` has a figure for each, their service seconds
    (an upper bound: the flow stops them at their first service call after the failure). Gates `without_work`
    neither fail nor spend."""
    idle = set(without_work)
    exposure: dict[str, dict] = {}
    for members in ([g for g in wave if g not in idle] for wave in waves):
        for position, gate in enumerate(members):
            beside = list(members[position + 1:])
            if not beside:
                continue
            known = service_seconds is not None and all(b in service_seconds for b in beside)
            exposure[gate] = {"beside": beside,
                              "service_seconds": round(sum(service_seconds[b] for b in beside), 2) if known else None}
    return exposure


def worst_failure_waste(exposure: Mapping[str, dict]) -> tuple[str, float] | None:
    """The gate whose failure could waste the most service seconds under the waves, and those seconds."""
    figures = [(gate, entry["service_seconds"]) for gate, entry in exposure.items()
               if entry.get("service_seconds") is not None]
    return max(figures, key=lambda item: item[1], default=None)
