"""Predicted grades before spending (experiment/grading/predict.py), on a stub plan whose gates are
set by hand: each category's predicted grade per gate state and exposure (literals)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from experiment.grading.predict import predict_grades, predicted_stop
from experiment.contract.readback import NOT_EXPOSED_IN_PRODUCTION, SAME_CODE_ON_EMBEDDED


def _plan(gates=None, decision=None, supplied=(), families=("adamw", "adam")):
    """A plan whose every gate is applicable with a pinned plan unless `gates` says otherwise, its trained arms
    on these optimizer families."""
    defaults = {"restoration_preflight": (True, {}), "correctness_preflight": (True, {"paths": ["p1"]}),
                "generation_audit": (True, {}), "feasibility_pilot": (True, {})}
    defaults.update(gates or {})

    def gate(name):
        applicable, details = defaults[name]
        return SimpleNamespace(applicable=applicable, reason=f"{name} reason", details=details)

    arms = [SimpleNamespace(name=f"arm{i}", optimizer={"family": family}) for i, family in enumerate(families)]
    return SimpleNamespace(spec_revision={"supplied": list(supplied)} if supplied else None,
                           decision=decision, gate=gate, trained_arms=arms)


def _grades(plan, exposure="embedded"):
    return {name: entry["grade"] for name, entry in predict_grades(plan, exposure).items()}


def test_every_gate_applicable_and_pinned_predicts_verified_except_an_absent_decision():
    assert _grades(_plan(decision={"method": "paired_hoeffding"})) == {
        "evaluator": "verified", "decision": "verified", "restoration": "verified", "correctness": "verified",
        "feasibility": "verified", "generation_audit": "verified"}
    assert _grades(_plan())["decision"] == "not_applicable"


@pytest.mark.parametrize("gate", ["restoration_preflight", "correctness_preflight", "generation_audit"])
@pytest.mark.parametrize("applicable, grade", [(False, "not_applicable"), (None, "unknown")])
def test_a_gate_that_does_not_apply_or_is_undecided(gate, applicable, grade):
    category = {"restoration_preflight": "restoration", "correctness_preflight": "correctness",
                "generation_audit": "generation_audit"}[gate]
    predicted = predict_grades(_plan({gate: (applicable, {})}))[category]
    assert predicted == {"grade": grade, "reason": f"{gate} reason"}


def test_production_restoration_is_unverified_and_an_unknown_exposure_is_refused():
    assert _grades(_plan(), "production")["restoration"] == "unverified"
    with pytest.raises(ValueError, match="exposure must be one of embedded, production"):
        predict_grades(_plan(), "staging")


def test_correctness_unresolved_revisions_or_no_paths_are_unverified():
    unresolved = _plan({"correctness_preflight": (True, {"paths": ["p1"], "revisions_unresolved": True})},
                       decision={"method": "paired_hoeffding"})
    assert _grades(unresolved)["correctness"] == "unverified"
    assert _grades(unresolved)["decision"] == "unknown"  # the run stops before the full run
    assert _grades(_plan({"correctness_preflight": (True, {})}))["correctness"] == "unverified"


def test_a_correctness_plan_from_the_recorded_revision_is_unverified_by_the_exchange():
    assert _grades(_plan(supplied=["correctness_preflight"]))["correctness"] == "unverified"
    pinned_by_revision = _plan({"correctness_preflight": (True, {"paths": ["p1"], "revisions_unresolved": True})},
                               decision={"method": "paired_hoeffding"}, supplied=["correctness_pins"])
    assert _grades(pinned_by_revision)["correctness"] == "unverified"
    assert _grades(pinned_by_revision)["decision"] == "verified"
    assert _grades(_plan(supplied=["correctness_pins"]))["correctness"] == "verified"


@pytest.mark.parametrize("field", ["decision_rule", "verdict_rule"])
def test_a_decision_rule_from_the_recorded_revision_is_not_applicable(field):
    predicted = predict_grades(_plan(decision={"method": "best_lr_threshold"}, supplied=[field]))["decision"]
    assert predicted["grade"] == "not_applicable" and "best_lr_threshold" in predicted["reason"]


def _full_plan(gates=None, decision=None, supplied=(), selection=None, runs=(10,), n_examples=50):
    """_plan with what the decision's selection branch and the feasibility prediction read."""
    plan = _plan(gates, decision, supplied)
    plan.selection = selection
    plan.training_runs = [SimpleNamespace(steps=steps) for steps in runs]
    plan.eval = {"n_examples": n_examples}
    return plan


def test_adaptive_selection_is_predicted_verified_with_its_split_in_the_reason():
    selection = {"role": "treatment", "candidates": ["T1", "T2"],
                 "split": {"selection_items": 20, "confirmation_items": 30}}
    predicted = predict_grades(_full_plan(decision={"method": "paired_hoeffding"}, selection=selection))["decision"]
    assert predicted == {"grade": "verified", "reason": (
        "adaptive selection: treatment chosen among T1, T2 on 20 selection items, frozen before confirmation; "
        "paired_hoeffding on the 30 disjoint confirmation items; the grader recomputes the split, the choice and the "
        "decision from the retained predictions")}
    assert predict_grades(_full_plan(decision={"method": "paired_hoeffding"}))["decision"] == {
        "grade": "verified", "reason": "paired_hoeffding is recomputed from the retained observations"}


def test_a_resolver_that_is_not_independent_makes_the_audit_unknown():
    gates = {"generation_audit": (True, {"resolver_not_independent_of": ["generator", "trained model"]})}
    assert predict_grades(_full_plan(gates))["generation_audit"] == {"grade": "unknown", "reason": (
        "the re-solver is the generator and the trained model: the audit refuses it before generating, so no audit "
        "record is written")}
    assert _grades(_full_plan({"generation_audit": (True, {"resolver_not_independent_of": []})}))[
        "generation_audit"] == "verified"


@pytest.mark.parametrize("items, steps, grade", [
    (50, 10, "verified"), (51, 10, "unknown"), (49, 10, "verified"), (50, 11, "unknown"), (50, 9, "verified")])
def test_a_stated_pilot_larger_than_the_specs_eval_set_or_steps_measures_less(items, steps, grade):
    # the spec has 50 eval items and its shortest training run 10 steps (runs without steps are not counted)
    stated = {"eval_items": items, "steps_per_arm": steps, "source": "spec command"}
    plan = _full_plan({"feasibility_pilot": (True, {"stated_pilot": stated})}, runs=(12, 10, 0))
    predicted = predict_grades(plan)["feasibility"]
    assert predicted["grade"] == grade
    if grade == "unknown":
        assert predicted["reason"] == ("the spec states its pilot (spec command), but this spec has 50 eval items and "
                                       "10 steps per arm, so the pilot measures less than stated")


def test_without_a_stated_pilot_the_feasibility_prediction_is_verified():
    assert _grades(_full_plan(runs=()))["feasibility"] == "verified"


OPTIMIZER = {"kind": "optimizer", "tolerances": {"update_max_abs": 1e-6}}
BASELINE = {"kind": "optimizer", "tolerances": {"baseline_update_max_abs": 1e-6}}


def test_an_optimizer_path_is_unverified_in_production_where_its_weights_cannot_be_read():
    def correctness(paths, exposure="embedded", **details):
        plan = _full_plan({"correctness_preflight": (True, {"paths": paths, **details})})
        return predict_grades(plan, exposure)["correctness"]

    assert correctness([OPTIMIZER]) == {"grade": "verified", "reason": "every check of the spec's plan is measured "
                                                                       "against its tolerances"}
    assert correctness([OPTIMIZER], "production") == {"grade": "unverified", "reason": NOT_EXPOSED_IN_PRODUCTION}
    assert correctness([{"kind": "kernel"}], "production")["grade"] == "verified"  # not an optimizer path
    # a baseline parity check on the embedded backend compares one code path with itself
    assert correctness([OPTIMIZER, BASELINE]) == {"grade": "unverified", "reason": SAME_CODE_ON_EMBEDDED}
    unresolved = correctness([BASELINE], revisions_unresolved=True)
    assert unresolved["grade"] == "unverified"
    assert unresolved["reason"] == ("the spec's correctness revisions are UNRESOLVED: the run stops before any full run "
                                    f"and requests a spec revision; {SAME_CODE_ON_EMBEDDED}")
    plan = _full_plan({"correctness_preflight": (False, {"paths": [OPTIMIZER]})})
    assert predict_grades(plan, "production")["correctness"]["grade"] == "not_applicable"


@pytest.mark.parametrize("kind", ["kernel", "sampler"])
def test_a_path_of_another_kind_on_either_side_of_optimizer_needs_no_weight_readback(kind):
    plan = _full_plan({"correctness_preflight": (True, {"paths": [{"kind": kind, "tolerances": {
        "baseline_update_max_abs": 1e-6}}]})})
    assert predict_grades(plan, "production")["correctness"]["grade"] == "verified"
    assert predict_grades(plan)["correctness"]["grade"] == "verified"


def test_a_stated_pilot_of_one_step_where_no_run_states_its_steps_measures_less():
    stated = {"eval_items": 50, "steps_per_arm": 1, "source": "spec command"}
    plan = _full_plan({"feasibility_pilot": (True, {"stated_pilot": stated})}, runs=(0, None))
    assert predict_grades(plan)["feasibility"] == {"grade": "unknown", "reason": (
        "the spec states its pilot (spec command), but this spec has 50 eval items and 0 steps per arm, so the pilot "
        "measures less than stated")}


def test_an_optimizer_production_does_not_serve_stops_the_run_at_the_probe():
    """Production trains every model with AdamW: arms of another family are refused by the preflight probe, so
    every category whose gate comes later has no record (correctness: a missing required check, unverified)."""
    forked = _plan(families=("trimuon", "dimuon"), supplied=("verdict_rule",))
    gate, why = predicted_stop(forked, "production")
    assert gate == "preflight_probe" and "arm0, arm1" in why and "dimuon, trimuon" in why
    assert _grades(forked, "production") == {
        "evaluator": "unknown", "decision": "unknown", "restoration": "unknown", "correctness": "unverified",
        "feasibility": "unknown", "generation_audit": "unknown"}
    assert _grades(_plan({"generation_audit": (False, {})}, families=("trimuon",)), "production")[
        "generation_audit"] == "not_applicable"  # an opted-out category stays so
    assert _grades(_plan(families=("trimuon",)), "production")["decision"] == "not_applicable"  # no rule at all
    assert predicted_stop(forked, "embedded") is None  # the embedded backend serves every family
    assert predicted_stop(_plan(), "production") is None  # adam is the AdamW family
