"""Predicted grades before spending (experiment/grading/predict.py), on a stub plan whose gates are
set by hand: each category's predicted grade per gate state and exposure (literals)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from experiment.grading.predict import predict_grades


def _plan(gates=None, decision=None, supplied=()):
    """A plan whose every gate is applicable with a pinned plan unless `gates` says otherwise."""
    defaults = {"restoration_preflight": (True, {}), "correctness_preflight": (True, {"paths": ["p1"]}),
                "generation_audit": (True, {}), "feasibility_pilot": (True, {})}
    defaults.update(gates or {})

    def gate(name):
        applicable, details = defaults[name]
        return SimpleNamespace(applicable=applicable, reason=f"{name} reason", details=details)

    return SimpleNamespace(spec_revision={"supplied": list(supplied)} if supplied else None,
                           decision=decision, gate=gate)


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
