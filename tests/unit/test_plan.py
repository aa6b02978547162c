"""Execution plan: the done-when facts of issue 2 for each spec, and the role/applicability rules."""

from __future__ import annotations

import json

import pytest
from suite import GS1_SPEC, SELFGEN_SPEC, TRIMUON_SPEC

from experiment.gates import GATE_ORDER
from experiment.contract.plan import build_plan, draft_plan
from experiment.contract.spec import SpecError, load_spec, parse_spec


def _plan(path):
    return build_plan(load_spec(path))


def test_every_gate_is_planned_in_order_with_a_reason():
    for path in (GS1_SPEC, SELFGEN_SPEC, TRIMUON_SPEC):
        plan = _plan(path)
        assert tuple(gate.name for gate in plan.gates) == GATE_ORDER
        assert all(gate.reason for gate in plan.gates)
        json.dumps(plan.to_dict())  # plain data


def test_gs1_plan():
    plan = _plan(GS1_SPEC)
    assert plan.gate("correctness_preflight").applicable is True
    assert plan.gate("correctness_preflight").details["revisions_unresolved"] is False  # pinned by its revision file
    assert plan.gate("restoration_preflight").applicable is True
    feasibility = plan.gate("feasibility_pilot")
    assert feasibility.applicable is True and feasibility.enforced is True
    audit = plan.gate("generation_audit")
    assert audit.applicable is False
    assert "generation_audit.required is false" in audit.reason
    activation = plan.gate("activation_gate")
    assert activation.applicable is True
    assert len(activation.details["checks"]) == 6
    assert [(arm.name, arm.role) for arm in plan.arms] == [("grpo_gs8", "baseline"), ("gs1_kernel", "treatment")]
    assert "group-mean" in plan.role_to_arm["baseline"]["reason"]
    assert plan.eval["n_examples"] == 1319 and plan.eval["decoding"] == "greedy"
    assert plan.decision["method"] == "paired_hoeffding"
    [criterion] = plan.criteria
    assert criterion.margin == -0.03
    assert criterion.arm_weights == {"gs1_kernel": 1, "grpo_gs8": -1}
    assert plan.vocabulary == "direction_confidence"
    assert plan.arm("gs1_kernel").optimizer["family"] == "adamw"


def test_selfgen_plan():
    plan = _plan(SELFGEN_SPEC)
    audit = plan.gate("generation_audit")
    assert audit.applicable is True
    assert "generated_training_data is true" in audit.reason
    assert len(plan.arms) == 3
    assert plan.role_to_arm["untrained_base"]["arm"] == "base"
    assert plan.role_to_arm["baseline"]["arm"] == "rl_gsm8k"
    assert plan.role_to_arm["treatment"]["arm"] == "rl_selfgen"
    assert len(plan.criteria) == 2
    assert plan.decision["adjustment"] == "bonferroni"
    assert plan.gate("correctness_preflight").applicable is False
    assert plan.vocabulary == "three_way"
    assert [run.name for run in plan.training_runs] == ["rl_gsm8k", "rl_selfgen"]


def test_trimuon_plan_from_plan_file():
    plan = _plan(TRIMUON_SPEC)
    assert len(plan.training_runs) == 6
    assert {run.lr for run in plan.training_runs} == {5e-05, 1e-04, 2e-04}
    assert "trimuon@lr=0.0001" in [run.name for run in plan.training_runs]
    assert plan.spec_revision["path"].endswith("trimuon_vs_dimuon_no_robots.plan.json")
    correctness = plan.gate("correctness_preflight")
    assert correctness.applicable is True and "forked optimizer" in correctness.reason
    [path] = correctness.details["paths"]
    assert path["reference_file"] == "experiment/stats/optim_reference.py"
    assert "update_learning_rate" not in path  # every trained LR has its own update check
    assert {f"{check}@lr={lr:g}" for check in ("reference_update", "baseline_update")
            for lr in (5e-05, 1e-04, 2e-04)} == set(path["tolerances"])
    assert plan.decision is None and plan.gate("decision").applicable is True  # verdict without a decision object
    assert plan.eval["aggregation"] == "token_mean" and plan.eval["loss_eval"] is True
    assert plan.gate("feasibility_pilot").enforced is False
    assert plan.gate("activation_gate").applicable is False
    assert plan.vocabulary == "direction_confidence"
    assert {arm.service for arm in plan.arms} == {"fork"}  # RUN-2: every arm of the comparison on the fork


def _gs1_dict() -> dict:
    return json.loads(GS1_SPEC.read_text())


def _plan_of(raw: dict, tmp_path, name="gs1_variant.json"):
    path = tmp_path / name
    path.write_text(json.dumps(raw))
    return build_plan(load_spec(path))


def test_missing_feature_evidence_is_unknown_not_not_applicable(tmp_path):
    raw = _gs1_dict()
    del raw["experiment_features"]["generated_training_data"]
    path = tmp_path / "gs1_variant.json"
    path.write_text(json.dumps(raw))
    gate = draft_plan(load_spec(path)).gate("generation_audit")  # the spec alone: intake refuses its open pins
    assert gate.applicable == "unknown"
    assert gate.blocks


def test_explicit_role_wins_and_ambiguity_is_an_error(tmp_path):
    raw = _gs1_dict()
    raw["arms"][0]["role"] = "treatment"
    raw["arms"][1]["role"] = "baseline"
    path = tmp_path / "gs1_roles.json"
    path.write_text(json.dumps(raw))
    assert draft_plan(load_spec(path)).role_to_arm["treatment"]["arm"] == "grpo_gs8"
    # the GS1 activation pilot measures a kernel-baseline treatment: this swap is refused at intake
    with pytest.raises(SpecError, match="treatment grpo_gs8 is neither"):
        _plan_of(raw, tmp_path)
    raw["arms"][1]["role"] = "treatment"
    with pytest.raises(SpecError, match="role 'treatment' is ambiguous: arms grpo_gs8, gs1_kernel all hold it; "
                                        "key the weights by arm name instead"):
        _plan_of(raw, tmp_path)


def test_vocabulary_follows_the_spec_family(tmp_path):
    raw = load_spec(SELFGEN_SPEC).to_dict()  # spec + its revision file (which maps arms[].data)
    assert _plan_of(raw, tmp_path, "selfgen_local.json").vocabulary == "three_way"
    raw["verdict_vocabulary"] = "direction_confidence"
    assert _plan_of(raw, tmp_path, "selfgen_local.json").vocabulary == "direction_confidence"


def test_parse_spec_without_a_file_has_no_source():
    spec = parse_spec(_gs1_dict())
    with pytest.raises(RuntimeError):
        spec.source


@pytest.mark.parametrize("leave_out", ["section", "required"])
def test_a_spec_that_leaves_its_correctness_preflight_state_out_is_unknown_and_blocks(tmp_path, leave_out):
    """The self-generated spec is stock-only (no custom/forked path); without its
    `correctness_preflight.required: false` nothing says the preflight may be skipped (issue 17).
    The spec is taken merged with its revision file (which maps arms[].data), so it loads."""
    raw = load_spec(SELFGEN_SPEC).to_dict()
    assert raw["correctness_preflight"]["required"] is False  # what is left out below
    if leave_out == "section":
        del raw["correctness_preflight"]
    else:
        del raw["correctness_preflight"]["required"]
    path = tmp_path / "selfgen_variant.json"
    path.write_text(json.dumps(raw))
    gate = draft_plan(load_spec(path)).gate("correctness_preflight")
    assert gate.applicable == "unknown"
    assert gate.blocks
    # a stock-only RL spec has no correctness path to measure: refused at intake, not failed after the probe
    with pytest.raises(SpecError, match="correctness_preflight: training_type rl checks one custom path"):
        build_plan(load_spec(path))
    # the control: stated as not required, it is not applicable
    explicit = load_spec(SELFGEN_SPEC).to_dict()
    explicit["correctness_preflight"] = {"required": False, "reason": "stock only"}
    assert _plan_of(explicit, tmp_path, name="selfgen_explicit.json").gate("correctness_preflight").applicable is False
