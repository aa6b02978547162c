"""RESULT builders: the failure shape differs by verdict vocabulary (GEN-3, GEN-4)."""

from __future__ import annotations

from suite import GS1_SPEC, SELFGEN_SPEC, TRIMUON_SPEC

from experiment.gates import GateVerdict
from experiment.contract.plan import build_plan
from experiment.contract.result import THREE_WAY_ABSENT_FIELDS, gate_failure_update, initial_result, intake_update, model_deviation
from experiment.contract.spec import load_spec
from experiment.run.store import RunStore

FAILED = GateVerdict(
    gate="activation_gate",
    status="failed",
    reasons=["kernel_effective_neighbors_p10 = 3.1 is below min 8.0"],
    next_diagnostic="rerun the 2-step pilot with bandwidth 1.0 (the pre-registered calibration)",
)


def _store(tmp_path, path):
    spec = load_spec(path)
    return RunStore.create(tmp_path, spec, build_plan(spec))


def test_direction_confidence_failure_has_no_verdict(tmp_path):
    store = _store(tmp_path, GS1_SPEC)
    store.update_result(verdict="supported", confidence="weak")  # a stale value must not survive
    result = store.update_result(**gate_failure_update(build_plan(load_spec(GS1_SPEC)), FAILED))
    assert result["status"] == "failed"
    assert result["outcome_reason"] == "incomplete_execution"
    assert "verdict" not in result and "confidence" not in result
    assert "activation_gate" in result["summary"]
    assert "bandwidth 1.0" in result["reasoning"]
    assert "below min 8.0" in result["reasoning"]


def test_three_way_failure_is_inconclusive_without_direction_fields(tmp_path):
    store = _store(tmp_path, SELFGEN_SPEC)
    store.update_result(reasoning="left over", confidence="weak")
    result = store.update_result(**gate_failure_update(build_plan(load_spec(SELFGEN_SPEC)), FAILED))
    assert (result["status"], result["verdict"], result["outcome_reason"]) == ("failed", "inconclusive", "incomplete_execution")
    assert not set(THREE_WAY_ABSENT_FIELDS) & set(result)
    assert "bandwidth 1.0" in result["summary"]


def test_initial_result_has_the_contract_skeleton():
    result = initial_result(build_plan(load_spec(GS1_SPEC)))
    assert result["status"] == "running"
    assert result["metrics"] == {"arms": {}} and result["completed_arms"] == [] and result["deviations"] == []
    assert "verdict" not in result


def test_intake_update_names_a_substituted_model_and_the_spec_revision():
    plan = build_plan(load_spec(TRIMUON_SPEC))
    deviation = model_deviation(plan.base_model, "Qwen/Qwen3.5-2B", "not served")
    update = intake_update(plan, "Qwen/Qwen3.5-2B", [deviation])
    assert update["status"] == "running"
    assert update["deviations"] == [deviation]
    assert "instead of Qwen/Qwen3.5-4B" in update["summary"]
    assert "trimuon_vs_dimuon_no_robots.plan.json" in update["summary"]
