"""An SFT sweep stopped inside arm_training and resumed records the restores of a sweep never stopped (issue 46),
and its whole record, carried on to its verdict, grades as a fresh run's does (issue 45: an honest record grades
honestly).

A resumed sweep keeps its finished runs and starts an unfinished one over from the initialization state on a new
client. Before, that restart was appended to the arm's provenance only: a TriMuon rehearsal killed halfway and
resumed recorded restore_count 6 where a fresh run records 3 (the superseded attempt's restores counted again), and
its arm's restores were no longer its runs' restores in plan order (TRACE-3 graded the honest record invalid). Now
the restarted attempt's restores replace the superseded attempt's in the run's own entry (kept under
`superseded_attempts`, not counted), the arm restating its runs'.

The stop is dealt at a chosen point, deterministically (a fake stop raised from the second run's last training
step, after its checkpoint_restore mid-run restore when the feature is on), on the TriMuon spec at wiring scale
against the session's embedded backend (stock tinker SDK over HTTP). arm_training then runs again on the same store
with a fresh RunState holding only what the earlier gates handed on, as a resumed process runs it, and the run goes
on through evaluation and decision to its verdict. The run directory is then graded as `flows.validate RUN --spec
SPEC` grades it: every category as --plan predicts for a fresh run, and no problem (before, the stopped attempt's
rows in sft-steps.jsonl and its training_step events were a step logged twice, EVID-11).
"""

from __future__ import annotations

import pytest
from spec_variants import variant, write_variant

import experiment.sft.steps.arm_training as sft_arm_training
from embedded_tinker.launch import LOCAL_API_KEY
from flows.experiment_flow import _mark_rehearsal as mark_rehearsal
from experiment.contract.plan import build_plan
from experiment.contract.spec import load_spec
from experiment.contract.support import designed_restore_step
from experiment.gates import GATE_ORDER, RunContext, run_gate
from experiment.grading import grade_record
from experiment.grading.predict import predict_grades
from experiment.run.clients import release_sessions
from experiment.run.state import RunState
from experiment.run.store import RunStore
from experiment.service.target import ServiceTarget

pytestmark = pytest.mark.slow

BEFORE_TRAINING = GATE_ORDER[: GATE_ORDER.index("arm_training")]
FROM_TRAINING = GATE_ORDER[GATE_ORDER.index("arm_training"):]


class FakeStop(BaseException):
    """A stop dealt inside the step (what SIGTERM or kill -9 does to the process, at a chosen point)."""


TRAIN_STEP = sft_arm_training.train_step


def _stop_in(monkeypatch, run_name: str, step: int) -> None:
    train_step = TRAIN_STEP

    def stopping(client, datums, params, run, at, batch, *, call):
        if run == run_name and at == step:
            raise FakeStop(f"stopped in {run} step {at}")
        return train_step(client, datums, params, run, at, batch, call=call)

    monkeypatch.setattr(sft_arm_training, "train_step", stopping)


@pytest.mark.parametrize("checkpoint_restore", [False, True], ids=["plain", "checkpoint_restore"])
def test_a_resumed_sft_sweep_records_the_restores_of_a_sweep_never_stopped_and_grades_as_a_fresh_run(checkpoint_restore, tmp_path, monkeypatch,
                                                                           embedded_server):
    monkeypatch.delenv("TINKER_BASE_URL", raising=False)
    monkeypatch.setenv("TINKER_API_KEY", LOCAL_API_KEY)
    path = write_variant(variant(f"checkpoint_restore-{str(checkpoint_restore).lower()}", "trimuon"), tmp_path)
    spec = load_spec(path, rehearse=True, rehearsal_scale="wiring")
    plan = build_plan(spec)
    store = RunStore.create(tmp_path / "runs", spec, plan)
    mark_rehearsal(store, spec, spec.source.rehearsal)  # as the flow marks a rehearsal before its first gate
    service = ServiceTarget("embedded", embedded_server.base_url)  # the rehearsal's backend, reached over HTTP
    ctx = RunContext(spec=spec, plan=plan, store=store, service=service)
    handed_on = []
    stopped = plan.training_runs[1]
    try:
        for name in BEFORE_TRAINING:
            verdict = run_gate(name, ctx)
            assert not verdict.failed, (name, verdict.reasons)
            ctx.state.receive(verdict.state)
            store.record_gate(verdict)  # as the flow records each gate's verdict
            handed_on.append(verdict.state)
        _stop_in(monkeypatch, stopped.name, int(spec.steps) - 1)
        with pytest.raises(FakeStop):
            run_gate("arm_training", ctx)
    finally:
        release_sessions(ctx)
    monkeypatch.setattr(sft_arm_training, "train_step", TRAIN_STEP)

    resumed = RunContext(spec=spec, plan=plan, store=store, service=service, state=RunState())
    for state in handed_on:
        resumed.state.receive(state)
    try:
        for name in FROM_TRAINING:  # the resumed process runs on to the verdict
            verdict = run_gate(name, resumed)
            assert verdict.status in ("passed", "not_applicable"), (name, verdict.reasons)
            resumed.state.receive(verdict.state)
            store.record_gate(verdict)
    finally:
        release_sessions(resumed)

    record = store.read_result()
    arms = record["initialization_provenance"]["arms"]
    per_run = 1 + (designed_restore_step(spec) is not None)  # its creation, and checkpoint_restore's mid-run restore
    for arm in plan.trained_arms:
        runs = [run for run in plan.training_runs if run.arm == arm.name]
        entry = arms[arm.name]
        assert [entry["runs"][run.label]["restore_count"] for run in runs] == [per_run] * len(runs)
        assert entry["restore_count"] == per_run * len(runs) == len(entry["restores"])
    superseded = arms[stopped.arm]["runs"][stopped.label]["superseded_attempts"]
    assert [len(attempt["restores"]) for attempt in superseded] == [per_run]  # kept, not counted
    graded = grade_record(record, store.run_dir, spec=spec)  # the whole record and run directory, as flows.validate
    assert graded.problems == []
    assert {name: grade.status for name, grade in graded.categories.items()} == \
        {name: grade["grade"] for name, grade in predict_grades(plan, "embedded").items()}
