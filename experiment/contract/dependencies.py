"""Which gates' service work depends on which, and the longest chain of it (the dependency critical path).

The contract runs the gates in GATE_ORDER, but not every gate needs the one before it. What a gate needs is
what it reads (the state an earlier gate leaves: the tokenizer, the initialization checkpoint, the audited
tasks, the trained checkpoints) and what the contract makes it wait for (exchange-contract.md section 1):

- the preflights that read only the initial state (the probe, the correctness preflight, the restoration
  preflight, which writes the initialization checkpoint) need nothing but the spec's intake;
- the generation audit reads the tokenizer the probe resolved;
- the feasibility pilot and the activation gate train on the initialization checkpoint, and on generated
  tasks only after the audit passed ("before ANY optimizer update on generated data ... timing and
  activation pilots included"); neither reads the other;
- arm training waits for every gate before it ("full training waits for verified checks"; the activation
  calibration is posted "before any full training"); the arms run side by side inside it;
- evaluation reads the trained checkpoints, the decision the evaluation.

`critical_path` takes per-gate durations (measured from a run's events, or projected) and gives the longest
chain of dependent work: the shortest time to verdict any schedule that respects these dependencies could
reach, against which a run's time to verdict is compared (benchmarks/bench_pipeline.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from experiment.contract.verdict import GATE_ORDER

INITIAL_STATE_PREFLIGHTS = ("preflight_probe", "correctness_preflight", "restoration_preflight")
PILOTS = ("feasibility_pilot", "activation_gate")

GATE_DEPENDS_ON: dict[str, tuple[str, ...]] = {
    "spec_intake": (),
    "preflight_probe": ("spec_intake",),
    "generation_audit": ("preflight_probe",),
    "correctness_preflight": ("spec_intake",),
    "restoration_preflight": ("spec_intake",),
    "feasibility_pilot": ("restoration_preflight", "generation_audit"),
    "activation_gate": ("restoration_preflight", "generation_audit"),
    "arm_training": tuple(GATE_ORDER[:GATE_ORDER.index("arm_training")]),
    "evaluation": ("arm_training",),
    "decision": ("evaluation",),
}


@dataclass(frozen=True)
class CriticalPath:
    """The longest chain of dependent gates: its seconds, its gates in order (those with time on it), and
    each gate's earliest finish under the dependencies."""

    seconds: float
    chain: tuple[str, ...]
    finish: dict[str, float]

    def to_dict(self) -> dict:
        return {"seconds": round(self.seconds, 2), "chain": list(self.chain),
                "earliest_finish_s": {gate: round(t, 2) for gate, t in self.finish.items()}}


def critical_path(seconds: Mapping[str, float], gates: Iterable[str] = GATE_ORDER,
                  depends_on: Mapping[str, tuple[str, ...]] = GATE_DEPENDS_ON) -> CriticalPath:
    """The longest chain through `gates` (in an order where every gate comes after what it depends on, as
    GATE_ORDER is) with each gate taking `seconds[gate]` (0 for a gate without a figure: one that did not run,
    or used no service). A dependency outside `gates` is passed through to what it depends on."""
    gates = list(gates)
    running = set(gates)
    finish: dict[str, float] = {}
    previous: dict[str, str | None] = {}

    def needs(gate: str) -> set[str]:  # the gates of `gates` that `gate` waits for, skipped ones passed through
        found: set[str] = set()
        for dependency in depends_on.get(gate, ()):
            found |= {dependency} if dependency in running else needs(dependency)
        return found

    for gate in gates:
        before = [d for d in needs(gate) if d in finish]
        if len(before) != len(needs(gate)):
            raise ValueError(f"gate {gate} comes before a gate it depends on ({sorted(needs(gate) - set(finish))})")
        latest = max(before, key=lambda d: (finish[d], gates.index(d)), default=None)
        previous[gate] = latest
        finish[gate] = (finish[latest] if latest else 0.0) + max(0.0, float(seconds.get(gate, 0.0)))
    if not finish:
        return CriticalPath(0.0, (), {})
    last = max(finish, key=lambda g: (finish[g], gates.index(g)))
    chain: list[str] = []
    gate: str | None = last
    while gate is not None:
        if seconds.get(gate, 0.0) > 0:
            chain.append(gate)
        gate = previous[gate]
    return CriticalPath(finish[last], tuple(reversed(chain)), finish)
