"""The spec-variant corpus (tests/spec_variants.py) through intake: every variant is either planned, with
predicted grades, or refused before anything runs, with exit 2 and one line that says what is supported.

Issue 29: a spec `--plan` accepted could crash or go red only after every training call was paid for
(two seeds: DecisionError, exit 3; adaptive selection: decision invalid), and declared features were
ignored without a word. The rehearsed half of the corpus (tests/e2e/test_spec_corpus_rehearsals.py)
checks that the predicted grades come true.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from spec_variants import CORPUS, FEATURES, SEEDS, variant, write_variant
from suite import REPO_ROOT

import experiment.contract.plan as plan_module
from experiment.contract.plan import build_plan
from experiment.contract.spec import SpecError, load_spec
from experiment.data import DATA_DIRS_ENV
from experiment.grading.predict import EXPOSURES, predict_grades


def _intake(path, rehearse: bool):
    """(plan, None) or (None, the refusal line)."""
    try:
        return build_plan(load_spec(path, rehearse=rehearse, rehearsal_scale="wiring")), None
    except SpecError as err:
        return None, str(err)


@pytest.mark.parametrize("case", CORPUS, ids=[f"{v.seed}-{v.name}" for v in CORPUS])
def test_every_variant_is_planned_or_refused_at_intake(case, tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_DIRS_ENV, str(tmp_path))  # a variant's own data files lie beside it
    path = write_variant(case, tmp_path)
    for rehearse in (False, True):
        plan, refusal = _intake(path, rehearse)
        if case.refused is not None:  # as written: the named refusal; a rehearsal may refuse earlier (stand-ins)
            assert refusal is not None, f"{case.seed}-{case.name} was planned (rehearse={rehearse})"
            assert (case.refused in refusal or rehearse) and "\n" not in refusal, refusal
            continue
        assert refusal is None, refusal
        assert plan.seeds == (json.loads(path.read_text()).get("decision_rule") or {}).get("seeds", plan.seeds)
        assert {(r.arm, r.seed) for r in plan.replicas} == {(a.name, s) for a in plan.arms for s in plan.seeds}
        for exposure in EXPOSURES:
            assert set(predict_grades(plan, exposure)) == {"evaluator", "decision", "restoration", "correctness",
                                                           "feasibility", "generation_audit"}


def test_the_corpus_covers_every_feature_both_ways_on_every_seed_and_refuses_some_of_everything():
    names = {(v.seed, v.name) for v in CORPUS}
    assert {(seed, f"{feature}-{value}") for seed in SEEDS for feature in FEATURES for value in ("true", "false")} \
        <= names
    for topic in ("seeds", "three-arms", "weights", "lr-grid", "vocabulary", "dataset", "eval"):
        kinds = {v.refused is None for v in CORPUS if v.name.startswith(topic)}
        assert kinds == {True, False} or topic in ("weights", "eval"), topic
    assert len(CORPUS) >= 100


def test_refusals_are_the_check_of_intake_not_luck(tmp_path, monkeypatch):
    """The issue's adaptive-selection variant (one treatment arm: nothing to choose between): without the intake
    check it is planned and predicted `verified` (the run then trained everything and graded decision invalid,
    DEC-13); with it, refused with what would work (two or more candidate arms)."""
    path = write_variant(variant("adaptive_selection-true"), tmp_path)
    monkeypatch.setattr(plan_module, "check_supported", lambda spec, plan: None)
    weakened = build_plan(load_spec(path))
    assert predict_grades(weakened)["decision"]["grade"] == "verified"
    monkeypatch.undo()
    with pytest.raises(SpecError, match="adaptive_selection: true chooses between candidate arms"):
        build_plan(load_spec(path))


def test_a_refused_variant_exits_2_with_one_line_and_leaves_no_run(tmp_path):
    path = write_variant(variant("seeds-sft", "trimuon"), tmp_path)
    runs = tmp_path / "runs"
    done = subprocess.run([sys.executable, "-m", "flows.run", str(path), "--rehearse", "--runs-dir", str(runs)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().count("\n") == 0 and "Traceback" not in done.stderr
    assert "verdict_rule: the spec has a decision_rule too: one rule decides" in done.stderr
    assert not runs.exists() or not any(runs.iterdir())


def test_a_two_seed_plan_schedules_every_arm_at_every_seed(tmp_path):
    plan = build_plan(load_spec(write_variant(variant("seeds-0-1"), tmp_path)))
    assert [(r.label, r.arm, r.seed) for r in plan.replicas] == [
        ("grpo_gs8", "grpo_gs8", 0), ("gs1_kernel", "gs1_kernel", 0),
        ("grpo_gs8-seed1", "grpo_gs8", 1), ("gs1_kernel-seed1", "gs1_kernel", 1)]
    assert plan.decision["seeds"] == [0, 1]


def test_a_two_seed_sft_plan_trains_every_lr_grid_point_at_every_seed(tmp_path):
    """verdict_rule.seeds [0, 1] (the TriMuon spec's optional second seed, scheduled before anything is measured):
    every arm x LR at seed 0 under the run names of one seed, then again at seed 1 (issue 46: refused before)."""
    plan = build_plan(load_spec(write_variant(variant("verdict-seeds-0-1", "trimuon"), tmp_path)))
    assert plan.seeds == [0, 1]
    first = [(r.name, r.seed) for r in plan.training_runs if r.seed == 0]
    again = [(r.name, r.seed) for r in plan.training_runs if r.seed == 1]
    assert again == [(f"{name}-seed1", 1) for name, _ in first] and len(first) == 6
    assert [r.label for r in plan.training_runs if r.arm == "trimuon"] == [
        "5e-05", "0.0001", "0.0002", "5e-05-seed1", "0.0001-seed1", "0.0002-seed1"]


def test_intake_knows_exactly_the_metrics_the_activation_pilots_measure():
    from types import SimpleNamespace

    from experiment.stats import activation

    no_step = SimpleNamespace(item_ids=[], baseline_values=[])
    assert tuple(activation.gs1_activation_values([], [], {}, no_step)) == activation.GS1_ACTIVATION_METRICS
    assert tuple(activation.selfgen_activation_values([], [], set(), set(), 0)) == activation.SELFGEN_ACTIVATION_METRICS


def test_a_spec_too_small_for_the_pilot_it_states_predicts_feasibility_unknown(tmp_path):
    """The self-generated spec states "2 steps per arm plus 100 eval items" (FEAS-10): a spec with fewer eval
    items than that measures less than it states, and the grader says unknown, so --plan says so first
    (measured: a two-seed selfgen wiring rehearsal once graded feasibility unknown while --plan said verified).
    A rehearsal restates the stated pilot to its own size (a deviation), so it predicts verified."""
    path = write_variant(variant("seeds-0-1", "selfgen"), tmp_path)
    rehearsed = predict_grades(build_plan(load_spec(path, rehearse=True, rehearsal_scale="wiring")))["feasibility"]
    assert predict_grades(build_plan(load_spec(path)))["feasibility"]["grade"] == "verified"
    assert rehearsed["grade"] == "verified"
    spec = json.loads(path.read_text())
    spec["eval"]["n_examples"] = 48
    path.write_text(json.dumps(spec))
    too_small = predict_grades(build_plan(load_spec(path)))["feasibility"]
    assert too_small["grade"] == "unknown" and "100 eval items" in too_small["reason"]
