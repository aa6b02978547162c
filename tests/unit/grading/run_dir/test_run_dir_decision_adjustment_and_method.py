"""Run directories the run-dir grader accepted although the contract says it should not (found by helper rd3 while
killing the mutants of experiment/grading/run_dir.py; each test ran as a strict xfail on that code and holds the fix):

- DEC-8: the adjustment was the retained execution-plan.json's word, never compared with the spec (the plan builder,
  experiment/contract/plan.py, sets `bonferroni` whenever a paired_hoeffding rule has more than one criterion), so a
  two-criteria run whose plan was edited to `none`, with a decision on unadjusted intervals, passed;
- a retained spec naming a decision method the contract does not define passed unchecked;
- RESULT margin and ci were compared only when RESULT had an effect;
- a scores[] entry that is no object was skipped without a word (EVAL-7)."""

from __future__ import annotations

import json

import pytest
from records import PLAN, SPEC, build_gs1_run, edit_json_evidence, edit_result, found
from grading_contexts.run_dir import spec_with_rule as _spec, two_criteria as _two_criteria, record_decision


def test_a_two_criteria_decision_on_unadjusted_intervals_is_not_accepted(tmp_path):
    store = build_gs1_run(tmp_path / "runs", _spec(tmp_path, "two", _two_criteria))
    run = store.run_dir
    assert json.loads((run / "evidence" / PLAN).read_text())["decision"]["adjustment"] == "bonferroni"
    edit_json_evidence(run, PLAN, lambda plan: plan["decision"].update(adjustment="none"))
    record_decision(run, simultaneous=False)
    assert found(run, "") != []


def test_a_decision_under_an_unknown_method_is_not_accepted_unchecked(tmp_path):
    """DEC-8 recomputes with the spec's method, paired_hoeffding or best_lr_threshold. `check_decision` returns
    early for every method but paired_hoeffding (meant for the TriMuon plan's best_lr_threshold), so a retained
    spec naming a method no grader knows ("welch_t"), with a verdict the paired observations do not give
    ("supported": they give refuted), passes every check; decision_summary itself would refuse the method
    (DecisionError "unsupported decision method")."""
    run = build_gs1_run(tmp_path / "runs").run_dir
    edit_json_evidence(run, SPEC, lambda spec: spec["decision_rule"].update(method="welch_t"))
    edit_result(run, lambda result: result.update(verdict="supported"))
    assert found(run, "") != []


def test_a_wrong_margin_and_ci_without_an_effect_are_reported(tmp_path):
    """docs/contract-rules.md: decision.margin "RESULT margin is the criterion's margin", decision.ci "RESULT ci
    is the recomputed interval". `_compare_decision` compares both only under `"effect" in self.result`, so a
    direction_confidence RESULT without an effect, with margin 0.5 (the criterion's is -0.03) and ci [0, 1],
    passes every check."""
    run = build_gs1_run(tmp_path / "runs").run_dir
    edit_result(run, lambda result: (result.pop("effect"), result.update(margin=0.5, ci=[0.0, 1.0])))
    assert {check for check, _ in found(run, "")} >= {"decision.margin", "decision.ci"}


def test_a_score_that_is_no_object_is_reported(tmp_path):
    """EVAL-7 (evaluation.scores): every score names a known evaluator and a finite value. A scores[] entry that
    is a string names neither; `check_evaluation` (run_dir.py line 1045, outside rd3's range) `continue`s past it
    and nothing else reports it, so the run passes every check."""
    run = build_gs1_run(tmp_path / "runs").run_dir
    edit_result(run, lambda result: result["evaluation"]["scores"].append("not a score"))
    assert found(run, "") != []
