"""The gated flow: gates run in order, a failed gate stops everything downstream with a GateFailed
state and a RESULT that says which gate, why and the cheapest next diagnostic."""

from __future__ import annotations

import pytest
from suite import FakeTinkerService, GS1_SPEC, SELFGEN_SPEC, TRIMUON_SPEC

from experiment.contract.plan import build_plan
from experiment.contract.spec import load_spec
from experiment.gates import GATE_ORDER, RunContext, not_implemented, run_gate
from experiment.run.store import RunStore
from experiment.service.target import ServiceTarget


def _context(tmp_path, spec_path, backend="http://127.0.0.1:9"):
    spec = load_spec(spec_path)
    plan = build_plan(spec)
    return RunContext(spec=spec, plan=plan, store=RunStore.create(tmp_path, spec, plan), service=ServiceTarget.from_backend(backend))


def test_a_gate_without_logic_fails_loudly(tmp_path, no_service_env):
    """An applicable gate whose logic is not built fails, never passes (SFT specs hand their gates to
    experiment/sft/steps/, built one gate at a time)."""
    verdict = not_implemented("arm_training", "SFT loop over the LR grid")
    assert verdict.status == "failed" and verdict.failed
    assert verdict.reasons[0].startswith("not implemented: ")
    assert verdict.next_diagnostic


@pytest.mark.parametrize("gate", GATE_ORDER[1:])
def test_every_gate_of_the_plan_is_either_run_or_not_applicable(tmp_path, gate, no_service_env):
    ctx = _context(tmp_path, GS1_SPEC)
    if not ctx.plan.gate(gate).blocks:
        assert run_gate(gate, ctx).status == "not_applicable"
    else:
        assert ctx.plan.gate(gate).reason


def test_not_applicable_gate_reports_the_plan_reason(tmp_path, no_service_env):
    ctx = _context(tmp_path, GS1_SPEC)
    verdict = run_gate("generation_audit", ctx)
    assert verdict.status == "not_applicable"
    assert verdict.reasons == [ctx.plan.gate("generation_audit").reason]


def test_spec_intake_fails_when_the_service_serves_nothing(tmp_path, no_service_env):
    with FakeTinkerService([]) as fake:
        ctx = _context(tmp_path, GS1_SPEC, backend=fake.base_url)
        verdict = run_gate("spec_intake", ctx)
    assert verdict.status == "failed"
    assert verdict.reasons == ["the service lists no served models"]


def test_spec_intake_never_substitutes_a_model_outside_a_rehearsal(tmp_path, no_service_env):
    """Issue 46: the TriMuon spec (Qwen/Qwen3.5-4B) against a service serving 2B and 27B was run on the 2B model, with
    a deviation, and recorded original_hypothesis_tested true. Outside a rehearsal the gate now fails and names the
    model; the spec's evidence is still recorded."""
    with FakeTinkerService(["Qwen/Qwen3.5-2B", "Qwen/Qwen3.5-27B"]) as fake:
        ctx = _context(tmp_path, TRIMUON_SPEC, backend=fake.base_url)
        verdict = run_gate("spec_intake", ctx)
    assert verdict.status == "failed"
    assert "does not serve Qwen/Qwen3.5-4B (it serves Qwen/Qwen3.5-2B, Qwen/Qwen3.5-27B)" in verdict.reasons[0]
    assert "never substitutes" in verdict.reasons[0]
    result = ctx.store.read_result()
    assert result["deviations"] == [] and "served_model" not in verdict.measured
    names = {entry["name"]: entry["kind"] for entry in result["evidence"]["files"]}
    assert names == {"spec.json": "spec", "spec-revision.plan.json": "spec_revision", "execution-plan.json": "effective_config",
                     "code-revision.json": "code_revision", "pipeline-code.json": "script"}


def test_spec_intake_fails_on_data_a_run_outside_a_rehearsal_cannot_read(tmp_path, no_service_env, monkeypatch):
    """A deployment run (no CLI preconditions): the TriMuon spec's Hub dataset read offline stops the run at spec
    intake, before any training call (before: a crash at preflight_probe, exit 3)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with FakeTinkerService(["Qwen/Qwen3.5-4B"]) as fake:
        ctx = _context(tmp_path, TRIMUON_SPEC, backend=fake.base_url)
        verdict = run_gate("spec_intake", ctx)
    assert verdict.status == "failed"
    assert verdict.reasons[0].startswith("dataset.hf_path: HuggingFaceH4/no_robots cannot be read here")


def test_spec_intake_substitutes_a_model_only_in_a_rehearsal_and_as_a_deviation(tmp_path, no_service_env):
    spec = load_spec(TRIMUON_SPEC, rehearse=True, rehearsal_scale="wiring")
    plan = build_plan(spec)
    with FakeTinkerService(["Qwen/Qwen3.5-2B"]) as fake:
        ctx = RunContext(spec=spec, plan=plan, store=RunStore.create(tmp_path, spec, plan),
                         service=ServiceTarget.from_backend(fake.base_url))
        verdict = run_gate("spec_intake", ctx)
    assert verdict.status == "passed" and verdict.measured["served_model"] == "Qwen/Qwen3.5-2B"
    deviation = {"field": "model", "original": plan.base_model, "effective": "Qwen/Qwen3.5-2B",
                 "reason": verdict.reasons[0]}
    assert deviation in ctx.store.read_result()["deviations"]


def test_flow_stops_at_the_first_failed_gate(tmp_path, prefect_harness, no_service_env):
    from flows.experiment_flow import GateFailedError, run_experiment

    with FakeTinkerService(["Qwen/Qwen3.5-2B"]) as fake:
        state = run_experiment(str(GS1_SPEC), backend=fake.base_url, runs_dir=str(tmp_path), return_state=True)
    assert state.is_failed() and state.name == "GateFailed"
    error = state.result(raise_on_failure=False)
    assert isinstance(error, GateFailedError) and error.gate == "preflight_probe"
    store = RunStore.open(error.run_dir)
    gate_events = [(e["gate"], e["status"]) for e in store.read_events() if e["event"] == "gate"]
    assert gate_events == [("spec_intake", "passed"), ("preflight_probe", "failed")]
    assert [row["gate"] for row in store.read_table("gates")] == ["spec_intake", "preflight_probe"]
    result = store.read_result()
    assert result["status"] == "failed" and result["outcome_reason"] == "incomplete_execution"
    assert "verdict" not in result
    # the stand-in service answers create_model with nothing usable: the probe names the arms it could not create
    assert "preflight_probe" in result["summary"] and "create_model" in result["reasoning"]


def test_flow_three_way_failure_is_inconclusive(tmp_path, prefect_harness, no_service_env):
    from flows.experiment_flow import run_experiment

    with FakeTinkerService(["Qwen/Qwen3.5-2B"]) as fake:
        state = run_experiment(str(SELFGEN_SPEC), backend=fake.base_url, runs_dir=str(tmp_path), return_state=True)
    result = RunStore.open(state.result(raise_on_failure=False).run_dir).read_result()
    assert (result["verdict"], result["outcome_reason"]) == ("inconclusive", "incomplete_execution")


def test_flow_publishes_ui_artifacts(tmp_path, prefect_harness, no_service_env):
    """The Prefect UI gets the RESULT summary, the gate table and links to the run's files."""
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    from flows.experiment_flow import run_experiment

    with FakeTinkerService(["Qwen/Qwen3.5-2B"]) as fake:
        state = run_experiment(str(GS1_SPEC), backend=fake.base_url, runs_dir=str(tmp_path), return_state=True)

    async def artifacts():
        async with get_client() as client:
            return await client.read_artifacts(
                flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[state.state_details.flow_run_id])))

    from flows.artifacts import keyed

    found = asyncio.run(artifacts())
    run_id = RunStore.open(state.result(raise_on_failure=False).run_dir).run_id
    by_key = {artifact.key: artifact for artifact in found}
    assert {keyed("summary", run_id), keyed("gates", run_id), keyed("evidence", run_id)} <= set(by_key)
    assert len(by_key) == len(found)  # each artifact once
    summary = by_key[keyed("summary", run_id)]
    assert summary.type == "markdown" and "preflight_probe" in summary.data
    assert by_key[keyed("gates", run_id)].type == "table"
    assert "result.json" in by_key[keyed("evidence", run_id)].data
    assert all("file://" not in str(artifact.data) for artifact in found)


@pytest.mark.parametrize("rehearse", [False, True], ids=["as-written", "rehearsal"])
def test_flow_run_is_named_after_its_run_and_tagged(tmp_path, prefect_harness, no_service_env, rehearse):
    """Operators find a run in the UI by its run id (the flow run's name, not a random pair of words)
    and filter by tags: the spec, rehearsal or production, the exposure profile and the scale."""
    from prefect.client.orchestration import get_client

    from flows.experiment_flow import run_experiment

    with FakeTinkerService(["Qwen/Qwen3.5-2B"]) as fake:
        state = run_experiment(str(GS1_SPEC), backend=fake.base_url, runs_dir=str(tmp_path), rehearse=rehearse,
                               rehearsal_scale="wiring" if rehearse else "standard", return_state=True)
    run_id = RunStore.open(state.result(raise_on_failure=False).run_dir).run_id
    with get_client(sync_client=True) as client:
        flow_run = client.read_flow_run(state.state_details.flow_run_id)
    assert flow_run.name == run_id and ("-rehearsal-" in run_id) == rehearse
    expected = ({"spec:gs1_kernel_vs_grpo_gsm8k", "rehearsal", "exposure:embedded", "scale:wiring"} if rehearse
                else {"spec:gs1_kernel_vs_grpo_gsm8k", "production", "exposure:embedded", "scale:as-written"})
    assert set(flow_run.tags) == expected


def test_flow_refuses_a_backend_parameter_with_credentials(tmp_path, prefect_harness, no_service_env, monkeypatch,
                                                           caplog, capfd):
    """A deployment run given `--param backend=https://user:key@...` never runs with it: the flow ends
    Failed(CredentialsInParameter) before touching the service or the runs directory, and its message
    says where credentials go without echoing them."""
    import flows.experiment_flow as experiment_flow

    secret = "tml-PARAM-SECRET-77"
    with FakeTinkerService([]) as fake:
        host = fake.base_url.split("://", 1)[1]
        backend = f"http://alice:{secret}@{host}/?api_key={secret}"
        # the weakened flow (no check) goes ahead with the parameter: it reaches the service and starts a run
        with monkeypatch.context() as weakened:
            weakened.setattr(experiment_flow, "credentials_refusal", lambda backend: None)
            state = experiment_flow.run_experiment(str(GS1_SPEC), backend=backend, runs_dir=str(tmp_path / "weak"),
                                                   return_state=True)
        assert state.name == "GateFailed" and fake.requests and any((tmp_path / "weak").iterdir())
        fake.requests.clear()

        state = experiment_flow.run_experiment(str(GS1_SPEC), backend=backend, runs_dir=str(tmp_path / "real"),
                                               return_state=True)
    assert state.is_failed() and state.name == "CredentialsInParameter"
    assert fake.requests == [] and not (tmp_path / "real").exists()
    assert "TINKER_API_KEY" in state.message and "userinfo" in state.message and "'api_key'" in state.message
    out, err = capfd.readouterr()
    for text in (state.message, caplog.text, out, err):
        assert secret not in text
