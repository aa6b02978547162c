"""Adaptive selection (issue 29 item 3, DEC-13): the split, the choice on selection items only, the frozen
record, and the grader's recomputation of all three.

The record graded here is built with the run's own code (experiment.stats.selection and
experiment.stats.decision, as experiment/rl/steps/decision.py calls them) for the corpus variant
`adaptive-two-treatments` (two treatment candidates, gs1_kernel and grpo_gs4, against the grpo_gs8
baseline). Its predictions are chosen so that the selection items favour gs1_kernel and the
confirmation items favour grpo_gs4: a choice that looked at confirmation items would differ.
Each tampering rewrites the record consistently (hashes, digests, recomputed decision), as a cheater
would, is first shown to grade verified without the guard (DEC-13 taken out), then invalid with it.
"""

from __future__ import annotations

import copy
import hashlib
import json

import pytest
from spec_variants import Variant, both, gs1_adaptive_two_treatments, set_feature, variant, weights, write_variant
from records import (
    ADAPTIVE_BASELINE as BASELINE,
    ADAPTIVE_ITEMS as ITEMS,
    adaptive_decide as _decide,
    graded_decision as _decision,
    adaptive_observations as _observations,
    refreeze_adaptive_selection as _refreeze,
    adaptive_values as _values,
    adaptive_variant_record,
)

from experiment.contract.plan import build_plan
from experiment.contract.spec import load_spec
from experiment.grading import decision as decision_module
from experiment.grading import grade_record
from experiment.grading.predict import predict_grades
from experiment.stats import decision as d
from experiment.stats import selection as sel

CANDIDATES = ("grpo_gs4", "gs1_kernel")


# ---------------------------------------------------------------- the split and the choice


def test_the_split_is_a_function_of_the_item_ids_alone_disjoint_and_covering():
    split = sel.split_items(ITEMS)
    assert split == sel.split_items(list(reversed(ITEMS)))  # the order the items come in does not matter
    assert not set(split.selection_ids) & set(split.confirmation_ids)
    assert sorted(split.selection_ids + split.confirmation_ids) == sorted(ITEMS)
    assert (len(split.selection_ids), len(split.confirmation_ids)) == sel.split_sizes(len(ITEMS)) == (6, 6)
    recorded = split.as_dict()
    assert recorded["selection_ids_sha256"] == hashlib.sha256(json.dumps(split.selection_ids).encode()).hexdigest()
    assert sel.split_sizes(7) == (3, 4)
    with pytest.raises(d.DecisionError, match="at least 2"):
        sel.split_items(["only-one"])
    with pytest.raises(d.DecisionError, match="repeat"):
        sel.split_items(["a", "a", "b"])


CRITERION = {"id": "primary", "metric": "accuracy", "weights": {"treatment": 1, "baseline": -1}, "margin": -0.03,
             "bounds": [0, 1]}


def test_the_choice_reads_the_selection_items_only():
    split = sel.split_items(ITEMS)
    observations = _observations(_values(split))
    # a choice made on every item (the weakened form) takes grpo_gs4 once the confirmation items are seen ...
    peeking, _ = sel.choose(observations, CRITERION, "treatment", list(CANDIDATES), {"baseline": BASELINE}, [0],
                            ITEMS)
    assert peeking == "grpo_gs4"
    # ... the choice on the selection items takes gs1_kernel, whatever the confirmation items hold
    chosen, effects = sel.choose(observations, CRITERION, "treatment", list(CANDIDATES), {"baseline": BASELINE}, [0],
                                 split.selection_ids)
    assert chosen == "gs1_kernel" and effects["gs1_kernel"] > effects["grpo_gs4"]
    flipped = [d.Observation(o.item_id, o.arm, o.seed, o.metric, 1.0 - o.value, o.evaluator_id)
               if o.item_id in split.confirmation_ids else o for o in observations]
    assert sel.choose(flipped, CRITERION, "treatment", list(CANDIDATES), {"baseline": BASELINE}, [0],
                      split.selection_ids) == (chosen, effects)


def test_a_tie_goes_to_the_first_candidate_by_name_and_seeds_are_averaged():
    split = sel.split_items(ITEMS)
    same = {arm: dict.fromkeys(ITEMS, 1.0) for arm in (*CANDIDATES, BASELINE)}
    assert sel.choose(_observations(same, seeds=(0, 1)), CRITERION, "treatment", ["gs1_kernel", "grpo_gs4"],
                      {"baseline": BASELINE}, [0, 1], split.selection_ids)[0] == "grpo_gs4"


# ---------------------------------------------------------------- the plan


def test_the_plan_shows_the_split_and_predicts_the_decision_verified(tmp_path):
    plan = build_plan(load_spec(write_variant(variant("adaptive-two-treatments"), tmp_path)))
    assert plan.selection["role"] == "treatment" and plan.selection["candidates"] == sorted(CANDIDATES)
    assert plan.selection["split"]["selection_items"] + plan.selection["split"]["confirmation_items"] == \
        plan.eval["n_examples"]
    assert "treatment" not in plan.role_to_arm  # which treatment goes forward is not known before selection
    assert set(plan.criteria[0].arm_weights) == {*CANDIDATES, BASELINE}
    predicted = predict_grades(plan)["decision"]
    assert predicted["grade"] == "verified" and "confirmation items" in predicted["reason"]


# ---------------------------------------------------------------- the graded record


@pytest.fixture
def adaptive(tmp_path):
    """(the variant's spec path, its decision_rule, a finished adaptive record graded against it)."""
    return adaptive_variant_record(tmp_path)


def _without_dec13(monkeypatch):
    """The weakened grader: DEC-13 taken out of the decision checks."""
    monkeypatch.setattr(decision_module, "CHECKS", [c for c in decision_module.CHECKS if c is not decision_module.DEC_13])


def test_an_adaptive_record_made_by_the_run_code_grades_verified(adaptive):
    path, rule, result = adaptive
    assert result["decision"]["selection"]["selected"] == "gs1_kernel"
    assert {o["item_id"] for o in map(json.loads, _file(result, d.OBSERVATIONS_FILE_NAME).splitlines())} == \
        set(result["decision"]["selection"]["split"]["confirmation_ids"])
    assert _decision(result, path) == ("verified", [])


def _file(result, name) -> str:
    return next(f["content"] for f in result["evidence"]["files"] if f["name"] == name)


def _assert_guarded(result, spec_path, monkeypatch, words: str, weakened_status: str = "verified") -> None:
    with monkeypatch.context() as weakened:
        _without_dec13(weakened)
        status, issues = _decision(result, spec_path)  # the tampering gets through without the guard
        assert status == weakened_status and not any("DEC-13" in issue for issue in issues), issues
    status, issues = _decision(result, spec_path)
    assert status == "invalid" and any("DEC-13" in issue and words in issue for issue in issues), issues


def test_observations_from_a_selection_item_are_invalid(adaptive, monkeypatch):
    path, rule, result = adaptive
    selection = result["decision"]["selection"]
    extra_item = selection["split"]["selection_ids"][0]  # a cheater adds a selection item the choice already saw
    rows = [d.observation_from_row(json.loads(line)) for line in _file(result, d.OBSERVATIONS_FILE_NAME).splitlines()]
    values = _values(sel.split_items(ITEMS))
    eid = rows[0].evaluator_id
    rows += [d.Observation(extra_item, arm, 0, "accuracy", values[arm][extra_item], eid)
             for arm in (selection["selected"], BASELINE)]
    _decide(result, rule, rows, selection)
    _assert_guarded(result, path, monkeypatch, "selection items")


@pytest.mark.parametrize("edit", [lambda s: s.update(frozen_before_confirmation=False),
                                  lambda s: s.pop("frozen_before_confirmation")], ids=["false", "removed"])
def test_a_selection_not_frozen_before_confirmation_is_invalid(adaptive, monkeypatch, edit):
    path, rule, result = adaptive
    _refreeze(result, edit)
    _assert_guarded(result, path, monkeypatch, "frozen_before_confirmation")


def test_an_overlapping_split_is_invalid(adaptive, monkeypatch):
    path, rule, result = adaptive

    def overlap(selection):
        split = selection["split"]
        split["selection_ids"] = sorted(split["selection_ids"] + split["confirmation_ids"][:1])
        split["selection_ids_sha256"] = sel.ids_sha256(split["selection_ids"])

    _refreeze(result, overlap)
    _assert_guarded(result, path, monkeypatch, "overlap")


def test_a_split_the_rule_does_not_give_is_invalid(adaptive, monkeypatch):
    """A cheater picks the selection items (here: those where the chosen candidate did best); disjoint and covering,
    but not the split the recorded rule gives the evaluator's items."""
    path, rule, result = adaptive

    def chosen_split(selection):
        split = selection["split"]
        swapped = split["confirmation_ids"][:1] + split["selection_ids"][1:], \
            split["selection_ids"][:1] + split["confirmation_ids"][1:]
        split["selection_ids"], split["confirmation_ids"] = (sorted(ids) for ids in swapped)
        for key in ("selection_ids", "confirmation_ids"):
            split[f"{key}_sha256"] = sel.ids_sha256(split[key])

    _refreeze(result, chosen_split)
    rows = [o for o in _observations(_values(sel.split_items(ITEMS)), result["decision"]["selection"]["evaluator_id"])
            if o.arm in {"gs1_kernel", BASELINE} and o.item_id in result["decision"]["selection"]["split"]
            ["confirmation_ids"]]
    _decide(result, rule, rows, result["decision"]["selection"])
    # without the guard the record only looks incomplete (DEC-6 misses the rule's confirmation item): unverified
    _assert_guarded(result, path, monkeypatch, "not the one recomputed", weakened_status="unverified")


def test_a_choice_the_selection_items_do_not_give_is_invalid(adaptive, monkeypatch):
    """A cheater records the candidate that does best on the confirmation items, with its decision."""
    path, rule, result = adaptive
    _refreeze(result, lambda s: s.update(selected="grpo_gs4"))
    eid = result["decision"]["selection"]["evaluator_id"]
    split = sel.split_items(ITEMS)
    rows = [o for o in _observations(_values(split), eid)
            if o.arm in {"grpo_gs4", BASELINE} and o.item_id in split.confirmation_ids]
    _decide(result, rule, rows, result["decision"]["selection"])
    status, issues = _decision(result, path)
    assert status == "invalid" and any("DEC-13" in i and "recomputed choice" in i for i in issues), issues


def test_a_selection_retained_after_the_observations_is_invalid(adaptive, monkeypatch):
    path, rule, result = adaptive
    files = result["evidence"]["files"]
    frozen = next(f for f in files if f["name"] == sel.SELECTION_FILE_NAME)
    result["evidence"]["files"] = [f for f in files if f is not frozen] + [frozen]
    _assert_guarded(result, path, monkeypatch, "retained after")


def test_a_selection_the_spec_does_not_ask_for_is_invalid(adaptive, tmp_path):
    path, rule, result = adaptive
    plain = Variant("plain", "gs1", both(gs1_adaptive_two_treatments, set_feature("adaptive_selection", False),
                                         weights({"gs1_kernel": 1, "grpo_gs8": -1})), None)
    (tmp_path / "plain").mkdir()
    status, issues = _decision(result, write_variant(plain, tmp_path / "plain"))
    assert status == "invalid" and any("asks for no adaptive selection" in i for i in issues), issues


def test_flows_decide_maps_the_role_to_the_one_candidate_the_confirmation_observations_hold(adaptive, tmp_path):
    from flows.decide import decide

    path, rule, result = adaptive
    observations = tmp_path / "observations.jsonl"
    observations.write_text(_file(result, d.OBSERVATIONS_FILE_NAME))
    decided = decide(path, observations)
    assert decided["role_to_arm"]["treatment"] == result["decision"]["selection"]["selected"]
    assert decided["criteria"] == result["decision"]["criteria"]
    both_candidates = _observations(_values(sel.split_items(ITEMS)), result["decision"]["selection"]["evaluator_id"])
    observations.write_bytes(d.observations_jsonl_bytes(both_candidates))
    with pytest.raises(ValueError, match="exactly one of the candidates"):
        decide(path, observations)


def test_a_spec_given_for_a_rehearsal_record_is_graded_as_rehearsed(adaptive, monkeypatch):
    """`flows.validate RUN --spec VARIANT`: a rehearsal record is graded against the variant rehearsed at the record's
    scale, as an attested spec is; graded against the variant as written, the wiring rehearsal of this variant
    was red (REST-2: base_checkpoint embedded/tiny-arith is not the spec's Qwen model; REST-5; FEAS-12; EVID-9)."""
    from experiment.grading import grade as grade_module

    path, _, result = adaptive
    rehearsal = {**result, "rehearsal": {"scale": "wiring"}}
    built = []
    real_draft_plan = grade_module.draft_plan
    monkeypatch.setattr(grade_module, "draft_plan", lambda spec: built.append(real_draft_plan(spec)) or built[-1])
    graded = grade_record(rehearsal, spec=path, self_consistency=False)
    assert graded.spec_source.endswith("rehearsed at the wiring scale by the rules")
    assert built[-1].base_model == "embedded/tiny-arith" and built[-1].eval["n_examples"] == 48
    assert any(p.startswith("SPEC-2") for p in graded.problems)  # the record's rehearsal is re-derived and compared
    grade_record(result, spec=path, self_consistency=False)  # not a rehearsal: the spec as written
    assert built[-1].base_model == "Qwen/Qwen3.5-2B"


@pytest.mark.parametrize("frozen_first", [True, False], ids=["frozen-first", "frozen-after"])
def test_in_a_run_directory_the_event_log_holds_the_freeze_before_the_observations(adaptive, tmp_path, monkeypatch,
                                                                                   frozen_first):
    path, _, result = adaptive
    by_name = {f["name"]: f for f in result["evidence"]["files"]}
    added = [{"event": "evidence_added", "name": name, "kind": "metrics", "sha256": by_name[name]["sha256"]}
             for name in ([sel.SELECTION_FILE_NAME, d.OBSERVATIONS_FILE_NAME] if frozen_first
                          else [d.OBSERVATIONS_FILE_NAME, sel.SELECTION_FILE_NAME])]
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    events = added + [{"event": "gate", "gate": "decision", "status": "passed"}]
    (run_dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))

    def decision_in_run_dir():
        graded = grade_record(copy.deepcopy(result), run_dir=run_dir, spec=path, self_consistency=False)
        return graded.categories["decision"].status, [i.sentence() for i in graded.categories["decision"].issues]

    if frozen_first:
        assert decision_in_run_dir() == ("verified", [])
        return
    with monkeypatch.context() as weakened:
        _without_dec13(weakened)
        assert decision_in_run_dir() == ("verified", [])
    status, issues = decision_in_run_dir()
    assert status == "invalid" and any("events.jsonl does not log" in issue for issue in issues), issues


def test_the_run_summary_says_what_was_chosen_on_how_many_items(adaptive):
    from experiment.report.summary import result_markdown

    _, _, result = adaptive
    line = next(line for line in result_markdown(result, None).splitlines() if line.startswith("**Adaptive selection"))
    assert "gs1_kernel chosen as treatment on 6 selection items" in line and "6 confirmation items only" in line
    assert "frozen before confirmation (yes)" in line
