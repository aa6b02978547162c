"""A rehearsal does not test the spec's hypothesis: its record says so (issue 28 item 5).

The rehearsal rules replace the model, the training data and the eval set, so RESULT carries
`original_hypothesis_tested: false`, a `tested_instead` that names what ran instead, and every
substitution as a deviation. The grader (GEN-6) rejects a rehearsal record that claims the
hypothesis was tested (the record every rehearsal wrote before), and a direction+confidence verdict on
a changed experiment that claims `strong` confidence (contract C-4)."""

from __future__ import annotations

import copy

import pytest

from experiment.contract import rehearsal as rules
from experiment.contract.spec import load_spec
from experiment.grading import general
from experiment.grading import grade_record

from suite import GS1_SPEC, SELFGEN_SPEC, TRIMUON_SPEC


def _gen6(result) -> list[str]:
    return [p for p in grade_record(result).problems if p.startswith("GEN-6")]


@pytest.mark.parametrize("spec_path", [GS1_SPEC, SELFGEN_SPEC, TRIMUON_SPEC], ids=lambda p: p.stem)
def test_a_rehearsal_says_what_it_tested_instead(spec_path):
    written = load_spec(spec_path).to_dict()
    record = load_spec(spec_path, rehearse=True, rehearsal_scale="wiring").source.rehearsal
    fields = rules.rehearsal_result_fields(record)
    assert fields["original_hypothesis_tested"] is False
    instead = fields["tested_instead"]
    stand_in = rules.STAND_INS[record["stand_in"]["for"]]
    rehearsed = load_spec(spec_path, rehearse=True, rehearsal_scale="wiring").to_dict()
    # model, data, steps and the endpoint's eval set: what ran, and what the spec wrote
    for text in (rules.EMBEDDED_MODEL, written["base_model"], stand_in.train, stand_in.benchmark,
                 f"{rehearsed['steps']} steps instead of {written['steps']}",
                 f"{rehearsed['eval']['n_examples']} items", f"{written['eval']['n_examples']} items"):
        assert text in instead, (text, instead)
    # every substitution is a deviation, and the record keeps no second copy of them
    assert len(fields["deviations"]) == len(record["substitutions"]) > 0
    assert "deviations" not in fields["rehearsal"]


def test_the_selection_text_names_the_steps_that_run():
    written = load_spec(TRIMUON_SPEC).to_dict()["verdict_rule"]["select"]
    rehearsed = load_spec(TRIMUON_SPEC, rehearse=True, rehearsal_scale="wiring")
    assert "at step 80" in written
    select = rehearsed.to_dict()["verdict_rule"]["select"]
    assert f"at step {rehearsed.steps}" in select and "80" not in select
    (substitution,) = [s for s in rehearsed.source.rehearsal["substitutions"] if s["setting"] == "verdict_rule.select"]
    assert substitution["field"] == "steps"


def _rehearsal_record(graded_record, hypothesis_fields: bool):
    """The green paired record, marked as the rehearsal of the self-generated spec; with or without
    the fields a rehearsal now writes (without them: the record every rehearsal wrote before)."""
    result, _ = graded_record("paired")
    record = load_spec(SELFGEN_SPEC, rehearse=True, rehearsal_scale="wiring").source.rehearsal
    result["rehearsal"] = rules.rehearsal_result_fields(record)["rehearsal"]
    if hypothesis_fields:
        result.update(original_hypothesis_tested=False, tested_instead=record["tested_instead"])
    return result


def test_the_grader_rejects_a_rehearsal_that_claims_the_hypothesis(graded_record, monkeypatch):
    old = _rehearsal_record(graded_record, hypothesis_fields=False)
    assert old["original_hypothesis_tested"] is True
    # weakened: without the check, the old record's claim passes unnoticed
    monkeypatch.setattr(general, "CHECKS", [c for c in general.CHECKS if c is not general.GEN_6_hypothesis])
    assert _gen6(old) == []
    monkeypatch.undo()
    assert any("rehearsal" in p and "original_hypothesis_tested" in p for p in _gen6(old))
    assert _gen6(_rehearsal_record(graded_record, hypothesis_fields=True)) == []
    vague = _rehearsal_record(graded_record, hypothesis_fields=True)
    vague["tested_instead"] = "something smaller"
    assert any("does not name the model that ran" in p for p in _gen6(vague))


def test_a_changed_experiment_is_never_strong_and_says_what_ran(graded_record):
    result, _ = graded_record("best_lr")  # direction+confidence, confidence weak
    result.update(original_hypothesis_tested=False, tested_instead="a smaller model on another data set")
    assert _gen6(result) == []
    strong = copy.deepcopy(result)
    strong["confidence"] = "strong"
    assert any("confidence strong" in p for p in _gen6(strong))
    empty = copy.deepcopy(result)
    empty["tested_instead"] = " "
    assert any("tested_instead is empty" in p for p in _gen6(empty))


@pytest.mark.parametrize("scale", ["wiring", "standard"])
@pytest.mark.parametrize("spec_path", [GS1_SPEC, SELFGEN_SPEC, TRIMUON_SPEC], ids=lambda p: p.stem)
def test_the_stated_timing_pilot_fits_the_rehearsal(spec_path, scale, monkeypatch):
    """The self-generated spec's command states "2 steps per arm plus 100 eval items"; a wiring rehearsal
    has 48 held-out items, so the pilot that ran (48) and the size the record names must be the rehearsal's."""
    from experiment.stats.feasibility import pilot_size

    def stated(spec):
        size = pilot_size(spec.to_dict())
        return size.eval_items, spec.to_dict()["eval"]["n_examples"], size.steps_per_arm, spec.steps

    if spec_path == SELFGEN_SPEC and scale == "wiring":  # weakened: the command keeps the spec's pilot size
        monkeypatch.setattr(rules, "_restate_pilot_size", lambda *args: None)
        items, n_eval, _, _ = stated(load_spec(spec_path, rehearse=True, rehearsal_scale=scale))
        assert items == 100 > n_eval == 48
        monkeypatch.undo()
    items, n_eval, steps_per_arm, steps = stated(load_spec(spec_path, rehearse=True, rehearsal_scale=scale))
    assert items <= n_eval and steps_per_arm <= steps


def test_a_changed_experiment_is_a_named_limit_of_a_direction_verdict():
    """Both families' decisions (RL and SFT) add it to the limits their reasoning names (contract C-4)."""
    from experiment.contract.result import changed_experiment_limit

    (limit,) = changed_experiment_limit({"original_hypothesis_tested": False, "tested_instead": "x"})
    assert "changed experiment" in limit and "tested_instead" in limit
    assert changed_experiment_limit({"original_hypothesis_tested": True}) == []
