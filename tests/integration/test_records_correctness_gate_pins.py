"""The correctness gate on the embedded backend (CORR-6, CORR-8).

With the spec's revisions UNRESOLVED the gate measures the path, records it required and
unverified, writes the spec-revision request (evidence + RESULT) and fails, so the run stops
before any full-run spending; the request's values, recorded as the spec's revision file, pass.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from embedded_tinker.launch import LOCAL_API_KEY
from experiment.contract.plan import build_plan, draft_plan
from experiment.contract.spec import SpecError, load_spec
from experiment.gates import GATE_ORDER, RunContext, run_gate
from experiment.run.clients import release_sessions
from experiment.run.store import RunStore
from experiment.service.target import ServiceTarget

# the seed spec as written (its recorded revision file is not copied): both revisions UNRESOLVED
GS1 = Path(__file__).resolve().parents[2] / "specs" / "gs1_kernel_vs_grpo_gsm8k.json"


def _run_until_correctness(spec_path: Path, runs_dir: Path, base_url: str) -> tuple[RunContext, object]:
    spec = load_spec(spec_path, rehearse=True)  # the embedded backend runs the rehearsal scale
    # intake refuses UNRESOLVED pins before any spending (experiment/contract/before_spending.py); the gate's own
    # stop, measured here on the plan without that check, stays as a second line for a plan that reaches it
    plan = draft_plan(spec)
    # the session's embedded backend, reached by URL like any service (no server start per run)
    ctx = RunContext(spec=spec, plan=plan, store=RunStore.create(runs_dir, spec, plan),
                     service=ServiceTarget("remote", base_url))
    try:
        for name in GATE_ORDER[: GATE_ORDER.index("correctness_preflight") + 1]:
            verdict = run_gate(name, ctx)
            ctx.state.receive(verdict.state)
            if verdict.failed:
                break
    finally:
        release_sessions(ctx)
        ctx.service.stop()
    return ctx, verdict


def test_unresolved_revisions_stop_the_run_with_a_request_and_the_pinned_revision_passes(tmp_path, monkeypatch,
                                                                                          embedded_server):
    monkeypatch.delenv("TINKER_BASE_URL", raising=False)
    monkeypatch.setenv("TINKER_API_KEY", LOCAL_API_KEY)
    spec_path = tmp_path / "spec" / GS1.name
    spec_path.parent.mkdir()
    shutil.copy(GS1, spec_path)

    with pytest.raises(SpecError, match="UNRESOLVED and the spec has no revision file"):
        build_plan(load_spec(spec_path, rehearse=True))
    ctx, verdict = _run_until_correctness(spec_path, tmp_path / "runs-unresolved", embedded_server.base_url)
    assert verdict.gate == "correctness_preflight" and verdict.failed
    assert "UNRESOLVED" in verdict.reasons[0] and "unverified" in verdict.reasons[0]
    result = ctx.store.read_result()
    record = result["correctness_preflight"]
    assert record["required"] is True and record["status"] == "unverified"
    path = record["paths"][0]
    assert {entry["status"] for entry in path["revision_check"].values()} == {"unresolved"}
    request = result["spec_revision_request"]
    evidence = {entry["name"]: entry for entry in result["evidence"]["files"]}
    assert json.loads(evidence[request["evidence_ref"]]["content"])["pins"] == request["pins"]
    assert [p["proposed"] for p in request["pins"]] == [path["baseline_revision"], path["reference_revision"]]
    assert not ctx.store.read_table("training_steps")  # nothing of the full run was spent

    spec_path.with_name(spec_path.name.removesuffix(".json") + ".plan.json").write_text(
        json.dumps(request["revision_file_fragment"]))
    build_plan(load_spec(spec_path, rehearse=True))  # pinned: intake plans it
    ctx, verdict = _run_until_correctness(spec_path, tmp_path / "runs-pinned", embedded_server.base_url)
    assert verdict.gate == "correctness_preflight" and verdict.status == "passed", verdict.reasons
    record = ctx.store.read_result()["correctness_preflight"]
    assert "status" not in record
    assert {entry["status"] for entry in record["paths"][0]["revision_check"].values()} == {"matches"}
    assert "spec_revision_request" not in ctx.store.read_result()
    assert "recorded spec revision" in ctx.state.correctness_note
