"""The TriMuon correctness gate measured through the service API, against backends reached by URL.

The stock SDK against a real embedded server (served on its own, as a fork would be): a fixed batch,
forward_backward and optim_step, the weights read back through the export routes, the update compared
with the float64 reference. A fork whose TriMuon drops its preconditioner fails; a service without the
export routes (the production exposure) leaves the path unverified with the way to expose them; the
baseline check, whose two sides are the same code on this backend, is reported so and grades unverified.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import torch

from embedded_tinker.launch import LOCAL_API_KEY, start_server
from experiment.contract.plan import build_plan
from experiment.contract.spec import load_spec
from experiment.gates import GATE_ORDER, RunContext, run_gate
from experiment.grading import grade_record
from experiment.run.clients import release_sessions
from experiment.run.store import RunStore
from experiment.service.target import ServiceTarget
from suite import TRIMUON_SPEC, copy_seed_spec


@pytest.fixture
def trimuon_spec(tmp_path, monkeypatch):
    monkeypatch.delenv("TINKER_BASE_URL", raising=False)
    monkeypatch.setenv("TINKER_API_KEY", LOCAL_API_KEY)
    return copy_seed_spec(TRIMUON_SPEC, tmp_path / "spec")


def _run_gates(spec_path: Path, runs_dir: Path, base_url: str, gates: tuple[str, ...]) -> tuple[RunContext, object]:
    spec = load_spec(spec_path, rehearse=True, rehearsal_scale="wiring")
    plan = build_plan(spec)
    ctx = RunContext(spec=spec, plan=plan, store=RunStore.create(runs_dir, spec, plan),
                     service=ServiceTarget("remote", base_url))
    try:
        for name in gates:
            verdict = run_gate(name, ctx)
            ctx.state.receive(verdict.state)
            if verdict.failed:
                break
    finally:
        release_sessions(ctx)
    return ctx, verdict


UNTIL_CORRECTNESS = GATE_ORDER[: GATE_ORDER.index("correctness_preflight") + 1]


class UpdatesReadAfterTheReferenceStarted:
    """service_probe.read_adapter, holding every job's update read-back until the float64 reference has started
    (or `patience_s`, so that a gate computing the reference after the jobs fails instead of hanging)."""

    def __init__(self, read_adapter, reference_updates, patience_s: float = 120.0):
        self.read_adapter, self.reference_updates, self.patience_s = read_adapter, reference_updates, patience_s
        self.started = threading.Event()
        self.started_before_update_reads: list[bool] = []

    def reference(self, *args, **kwargs):
        self.started.set()
        return self.reference_updates(*args, **kwargs)

    def read(self, session, client, name):
        if not name.endswith(("-start", "-gradient")):  # a job's update, not the input
            self.started_before_update_reads.append(self.started.wait(self.patience_s))
        return self.read_adapter(session, client, name)


def test_the_update_is_measured_through_a_served_backend_and_same_code_parity_grades_unverified(
        trimuon_spec, tmp_path, embedded_server, monkeypatch):
    import experiment.sft.service_probe as service_probe
    import experiment.sft.steps.correctness_preflight as sft_correctness

    held = UpdatesReadAfterTheReferenceStarted(service_probe.read_adapter, sft_correctness.reference_updates)
    monkeypatch.setattr(service_probe, "read_adapter", held.read)
    monkeypatch.setattr(sft_correctness, "reference_updates", held.reference)
    ctx, verdict = _run_gates(trimuon_spec, tmp_path / "runs", embedded_server.base_url, UNTIL_CORRECTNESS)
    assert verdict.gate == "correctness_preflight" and verdict.status == "passed", verdict.reasons
    # the reference was computed while the service ran the update jobs, not after them
    assert held.started_before_update_reads and all(held.started_before_update_reads)
    result = ctx.store.read_result()
    path = result["correctness_preflight"]["paths"][0]
    assert path["measured_through"]["service"]["kind"] == "remote"
    assert set(path["measured_through"]["families_reported"].values()) == {"adamw", "trimuon", "dimuon"}
    recovery = path["gradient_recovery"]
    assert recovery["recovered_grad_norm"] == pytest.approx(recovery["reported_grad_norm"], rel=1e-5)
    for key, errors in path["errors"].items():
        if key.startswith("reference_update"):  # a real comparison: nonzero, far inside the tolerances
            assert 0.0 < errors["max_abs_error"] <= path["input_tolerances"][key]["atol"]
            assert errors["cosine_similarity"] > 0.9999
        else:  # one code path compared with itself on this backend: reported as such, never as a parity
            assert errors["max_abs_error"] == 0.0
            assert path["parity_sides"][key]["same_code"] is True
            assert path["parity_sides"][key]["status"] == "unverified"
    assert "stock service" not in path["baseline_revision"]
    assert "same code" in path["baseline_revision"]
    assert "baseline parity check is unverified" in ctx.state.correctness_note
    evidence = {entry["name"] for entry in result["evidence"]["files"]}
    assert {"correctness-fixed-batch.json", "correctness-start-state.npz", "script-service_probe.py"} <= evidence

    graded = grade_record(result, run_dir=ctx.store.run_dir).categories["correctness"]
    assert graded.status == "unverified"
    assert any(issue.rule == "CORR-3" and "same code" in issue.message for issue in graded.issues)
    # the grader recognises the same code from the errors alone: with the record's own statement removed
    for entry in path["parity_sides"].values():
        entry["same_code"] = False
    regraded = grade_record(result, run_dir=ctx.store.run_dir).categories["correctness"]
    assert any(issue.rule == "CORR-3" and "bitwise-identical" in issue.message for issue in regraded.issues)


def test_a_fork_whose_trimuon_drops_its_preconditioner_fails_the_reference_check(trimuon_spec, tmp_path, monkeypatch):
    """A defective fork, made by patching the in-process server's TriMuon (a fault no URL can produce)."""
    import embedded_tinker.muon as muon

    monkeypatch.setattr(muon, "factor_preconditioner", lambda gram: torch.eye(gram.shape[0], dtype=gram.dtype))
    with start_server(checkpoint_dir=tmp_path / "ckpt", in_process=True) as broken_fork:
        ctx, verdict = _run_gates(trimuon_spec, tmp_path / "runs", broken_fork.base_url, UNTIL_CORRECTNESS)
    assert verdict.gate == "correctness_preflight" and verdict.failed
    failing = [reason for reason in verdict.reasons if reason.startswith("reference_update")
               and ("exceeds" in reason or "below min_cosine" in reason)]
    assert failing, verdict.reasons
    # the plan's tolerances alone (fixed on the synthetic input) would let this fork through at some LR:
    # the bound evaluated on the read-back input is what catches it
    assert any("plan max_abs_error" in reason and "<=" in reason.split(";")[0] for reason in failing)
    graded = grade_record(ctx.store.read_result(), run_dir=ctx.store.run_dir).categories["correctness"]
    assert graded.status == "invalid"
    # the grader recomputes the bound on the retained read-back input, whatever the record says it was
    assert any(issue.rule == "CORR-4" and "on the read-back input" in issue.message for issue in graded.issues)


def test_a_service_without_weight_export_is_unverified_with_the_way_to_expose_them(trimuon_spec, tmp_path):
    from experiment.grading.predict import predict_grades

    predicted = predict_grades(build_plan(load_spec(trimuon_spec, rehearse=True, rehearsal_scale="wiring")),
                               exposure="production")["correctness"]
    assert predicted["grade"] == "unverified" and "save_weights_external" in predicted["reason"]
    with start_server(checkpoint_dir=tmp_path / "ckpt", exposure="production") as production:
        ctx, verdict = _run_gates(trimuon_spec, tmp_path / "runs", production.base_url,
                                  ("spec_intake", "correctness_preflight"))
    assert verdict.gate == "correctness_preflight" and verdict.failed
    assert "required/unverified" in verdict.reasons[0] and "save_weights_external" in verdict.reasons[0]
    assert "external_weights_urls" in verdict.next_diagnostic
    record = ctx.store.read_result()["correctness_preflight"]
    assert record["status"] == "unverified" and "adapter weights" in record["unverified_reason"]
    assert not ctx.store.read_table("training_steps")
    graded = grade_record(ctx.store.read_result(), run_dir=ctx.store.run_dir).categories["correctness"]
    assert graded.status == predicted["grade"]
