"""A run stopped inside activation_gate resumes (issue 47, the kill-prefect drill's exit 3).

benchmarks/cli_fault_drills.py stopped runs at a random time: in 2 of 5 drills the stop fell inside
activation_gate after a pilot's log (`activation-pilot-bw<bandwidth>.jsonl`) was kept, and the re-run pilot kept
other bytes (its step timings), which the store refuses ("evidence names are immutable"): the re-run exited 3.
Here the stop is dealt at a chosen point, deterministically: right after the gate keeps its first pilot log (a
fake stop, raised from the gate's keep_pilot_log), on the GS1 rehearsal at wiring scale against the session's
embedded backend. The gate is then run again on the same store, as a resumed run runs it: it reuses the kept
pilot (experiment.rl.pilot.kept_pilot), passes with the values the log gives, and the record grades the
activation values as recomputed from that log (ACT-2).
"""

from __future__ import annotations


import pytest

import experiment.rl.steps.activation_gate as rl_activation_gate
from embedded_tinker.launch import LOCAL_API_KEY
from experiment.contract.plan import build_plan
from experiment.contract.spec import load_spec
from experiment.gates import GATE_ORDER, RunContext, run_gate
from experiment.grading import grade_record
from experiment.run.clients import release_sessions
from experiment.run.store import RunStore
from experiment.service.target import ServiceTarget
from suite import GS1_SPEC, copy_seed_spec

BEFORE_ACTIVATION = GATE_ORDER[: GATE_ORDER.index("activation_gate")]


class FakeStop(BaseException):
    """A stop dealt inside the gate (what SIGTERM or kill -9 does to the process, at a chosen point)."""


@pytest.fixture
def gs1_spec(tmp_path, monkeypatch):
    monkeypatch.delenv("TINKER_BASE_URL", raising=False)
    monkeypatch.setenv("TINKER_API_KEY", LOCAL_API_KEY)
    return copy_seed_spec(GS1_SPEC, tmp_path / "spec")


def _stopped_after_first_pilot_log(monkeypatch, keep_pilot_log):
    kept = []

    def keep_then_stop(ctx, bandwidth, records, heldout):
        keep_pilot_log(ctx, bandwidth, records, heldout)
        kept.append(bandwidth)
        raise FakeStop(f"stopped after keeping the pilot log of bandwidth {bandwidth}")

    monkeypatch.setattr(rl_activation_gate, "keep_pilot_log", keep_then_stop)
    return kept


def test_a_run_stopped_after_a_pilot_log_was_kept_resumes_the_gate(gs1_spec, tmp_path, monkeypatch, embedded_server):
    spec = load_spec(gs1_spec, rehearse=True, rehearsal_scale="wiring")
    plan = build_plan(spec)
    ctx = RunContext(spec=spec, plan=plan, store=RunStore.create(tmp_path / "runs", spec, plan),
                     service=ServiceTarget("remote", embedded_server.base_url))
    keep_pilot_log = rl_activation_gate.keep_pilot_log
    try:
        for name in BEFORE_ACTIVATION:
            verdict = run_gate(name, ctx)
            assert not verdict.failed, (name, verdict.reasons)
            ctx.state.receive(verdict.state)
        kept = _stopped_after_first_pilot_log(monkeypatch, keep_pilot_log)
        with pytest.raises(FakeStop):
            run_gate("activation_gate", ctx)
        log_name = f"activation-pilot-bw{kept[0]}.jsonl"
        log = (ctx.store.run_dir / "evidence" / log_name).read_bytes()

        monkeypatch.setattr(rl_activation_gate, "keep_pilot_log", keep_pilot_log)
        verdict = run_gate("activation_gate", ctx)  # the resumed run's gate, on the same store
    finally:
        release_sessions(ctx)
    assert verdict.status in ("passed", "failed") and verdict.gate == "activation_gate", verdict.reasons
    assert (ctx.store.run_dir / "evidence" / log_name).read_bytes() == log  # the kept log, unchanged
    reused = [e for e in ctx.store.read_events() if e.get("event") == "activation_pilot_reused"]
    assert [e["evidence"] for e in reused] == [log_name]
    record = ctx.store.read_result()
    assert record["activation_calibration"]["values"]
    graded = grade_record(record, spec=spec)
    assert not [p for p in graded.problems if p.startswith(("ACT-2", "ACT-3"))], graded.problems
