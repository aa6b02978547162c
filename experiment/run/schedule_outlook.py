"""`--plan`'s `gate_schedule`: the waves a run takes and, under `--overlap-gates`, what a failing gate could waste.

The waves come from the plan (experiment.contract.schedule.gate_waves; a gate the plan marks not applicable does no
work). The seconds are the gates' recorded durations in the newest run of the same spec content in the runs
directory, when there is one (a gate's service time is at least its duration when it keeps one lane busy; the
activation gate's baseline lane beside its treatment lane bills more): the plan contacts no service and the static
cost estimate (experiment.contract.cost) has no per-gate figures, so a spec never run here gets the gates' names
and no seconds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from experiment.contract.schedule import failure_exposure, gate_waves, worst_failure_waste
from experiment.run.store import RunStore


def last_run_gate_seconds(runs_dir: str | Path | None, spec_sha256: str) -> tuple[dict[str, float] | None, str | None]:
    """{gate: duration_s} of the newest run of this spec content that recorded gates, and that run's id."""
    try:
        store = RunStore.latest(runs_dir, spec_sha256)
        rows = store.read_table("gates") if store is not None else []
    except Exception:  # noqa: BLE001 - no runs directory, no index, an unreadable table: no figures, no refusal
        return None, None
    seconds = {str(row["gate"]): float(row["duration_s"]) for row in (rows.to_dict("records") if hasattr(rows, "to_dict")
                                                                      else rows)
               if row.get("status") in ("passed", "failed") and float(row.get("duration_s") or 0) > 0}
    return (seconds or None), (store.run_id if seconds else None)


def gate_schedule_outlook(plan: Any, overlap: bool, runs_dir: str | Path | None) -> dict[str, Any]:
    gates = [gate.name for gate in plan.gates]
    idle = [gate.name for gate in plan.gates if not gate.blocks]
    seconds, run_id = last_run_gate_seconds(runs_dir, plan.spec_sha256)
    overlapped = gate_waves(gates, overlap=True, without_work=idle)
    exposure = failure_exposure(overlapped, seconds, without_work=idle)
    worst = worst_failure_waste(exposure)
    return {
        "overlap_gates": overlap,
        "waves": [list(wave) for wave in (overlapped if overlap else gate_waves(gates, overlap=False))],
        "with_overlap_gates": {
            "waves": [list(wave) for wave in overlapped],
            "a_failing_gate_could_waste": exposure,
            "worst": {"gate": worst[0], "service_seconds": worst[1]} if worst else None,
            "seconds_from": (f"gate durations of run {run_id} of this spec (a lower bound on service time)" if run_id
                             else "no run of this spec here yet: the gates beside each failing gate, no seconds"),
            "bound": "at most: the gates beside a failing one stop at their next service call after its failure",
        },
        "extra_service_seconds_if_a_gate_fails": (worst[1] if worst else None) if overlap else 0.0,
    }
