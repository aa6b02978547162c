"""The run-dir grader's decision checks under adaptive selection (experiment/grading/run_dir.py `check_decision`,
`_selection_items`, `_check_observation_evaluators`; docs/contract-rules.md DEC-6, DEC-13), each condition from
both sides (issue 28 item 7: survivors of lines 1213-1218, 1240-1242, 1312-1314).

The run directory holds the record records.adaptive_record builds with the run's own code for the corpus
variant `adaptive-two-treatments` (candidates gs1_kernel and grpo_gs4 for the treatment role, baseline
grpo_gs8, 12 items split 6/6): the selection items choose gs1_kernel, the observations are of the confirmation
items only. Its decision has no problem; each test breaks one thing."""

from __future__ import annotations

import json

import pytest
from records import copy_run, edit_result, found, read_jsonl, read_result
from spec_variants import variant, write_variant
from records import ADAPTIVE_ITEMS as ITEMS, adaptive_record as _record

from experiment.contract.plan import build_plan
from experiment.contract.spec import load_spec
from experiment.run.store import RunStore
from experiment.stats.decision import OBSERVATIONS_FILE_NAME
from experiment.stats.selection import SPLIT_RULE, split_items

SPLIT = split_items(ITEMS)


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rd3-adaptive")
    path = write_variant(variant("adaptive-two-treatments"), tmp)
    spec = load_spec(path)
    plan = build_plan(spec)
    record = _record(plan, spec.section("decision_rule"))
    store = RunStore.create(tmp / "runs", spec, plan)
    store.add_evidence("spec.json", "spec", path.read_bytes())
    store.add_evidence("execution-plan.json", "effective_config", json.dumps(plan.to_dict(), sort_keys=True))
    for entry in record["evidence"]["files"]:
        assert entry["encoding"] == "utf-8"
        store.add_evidence(entry["name"], entry["kind"], entry["content"])
    store.update_result(**{key: value for key, value in record.items() if key != "evidence"})
    return store


@pytest.fixture
def run(template, tmp_path):
    return copy_run(template, tmp_path)


def eval_id(run_dir):
    return read_result(run_dir)["decision"]["selection"]["evaluator_id"]


def inline(run_dir, keep=lambda row: True, extra=()):
    """The decision's observations inline (the file's rows that `keep` keeps, plus `extra`)."""
    rows = [row for row in read_jsonl(run_dir, OBSERVATIONS_FILE_NAME) if keep(row)] + list(extra)

    def edit(result):
        result["decision"].pop("observations_file")
        result["decision"]["observations"] = rows
    edit_result(run_dir, edit)
    return rows


def test_the_adaptive_record_maps_the_role_to_the_frozen_choice_and_has_no_decision_problem(run):
    assert read_result(run)["decision"]["selection"]["selected"] == "gs1_kernel"
    assert found(run, "decision.") == []


def test_inline_observations_of_the_confirmation_items_have_no_problem(run):
    rows = inline(run)
    assert {row["item_id"] for row in rows} == set(SPLIT.confirmation_ids)
    assert found(run, "decision.") == []


def test_a_selection_not_frozen_is_reported(run):
    edit_result(run, lambda result: result["decision"]["selection"].update(frozen_before_confirmation=False))
    assert found(run, "decision.") == [
        ("decision.selection", "adaptive selection needs decision.selection.frozen_before_confirmation true")]


def test_observations_of_a_selection_item_are_reported(run):
    rows = read_jsonl(run, OBSERVATIONS_FILE_NAME)
    item = SPLIT.selection_ids[0]
    inline(run, extra=[{**row, "item_id": item} for row in rows if row["item_id"] == SPLIT.confirmation_ids[0]])
    assert found(run, "decision.selection") == [
        ("decision.selection", f"1 observed item(s) are selection items (first {item!r}); observations must use "
                               "confirmation items only")]


def test_the_split_is_recomputed_from_the_items_of_the_evaluator_the_selection_names(run):
    """The evaluator now lists a 13th item: the recorded 6/6 split is not the one its items give."""
    identifier = eval_id(run)
    edit_result(run, lambda result: result["evaluation"]["evaluators"][identifier]["items"].update(
        ids=ITEMS + ["item-12"]))
    assert ("decision.selection", f"the split is not the one recomputed from the evaluator's items ({SPLIT_RULE})") \
        in found(run, "decision.selection")


@pytest.mark.parametrize("evaluation", [None, "see the evaluation file"], ids=["none", "a string"])
def test_without_an_evaluation_record_the_split_is_not_recomputed(run, evaluation):
    """No evaluator lists the items to split: DEC-13 says the selection's evaluator lists none, DEC-7 that the
    observations' evaluator is unknown; no split is recomputed."""
    identifier = eval_id(run)
    edit_result(run, lambda result: result.update(evaluation=evaluation))
    assert found(run, "decision.") == [
        ("decision.evaluator", f"observations name evaluator(s) the evaluation record lacks: {identifier[:12]}"),
        ("decision.selection", f"decision.selection names evaluator '{identifier[:56]}..., which lists no explicit items")]


def test_a_selection_naming_an_unknown_evaluator_is_not_recomputed_from_items(run):
    edit_result(run, lambda result: result["evaluation"]["evaluators"][eval_id(run)]["items"].update(
        ids=ITEMS + ["item-12"]))
    edit_result(run, lambda result: result["decision"]["selection"].update(evaluator_id="f" * 64))
    assert ("decision.selection", f"the split is not the one recomputed from the evaluator's items ({SPLIT_RULE})") \
        not in found(run, "decision.selection")


def cover(missing):
    return ("decision.observations_cover", f"criterion primary: {missing} observations missing (first: grpo_gs8, "
                                           f"{SPLIT.confirmation_ids[0]}, seed 0)")


def test_observations_are_held_to_the_confirmation_items_not_every_item(run):
    """A confirmation item's observations missing: 5 of the 6 confirmation items (not of all 12) are covered."""
    inline(run, keep=lambda row: row["item_id"] != SPLIT.confirmation_ids[0])
    assert found(run, "decision.observations_cover") == [cover(2)]  # both arms


def test_an_evaluator_whose_items_cannot_be_split_is_left_to_the_selection_check(run):
    """Repeated item ids: the split fails, decision.selection says so, the cover check skips the evaluator."""
    identifier = eval_id(run)
    edit_result(run, lambda result: result["evaluation"]["evaluators"][identifier]["items"].update(
        ids=ITEMS + ITEMS[:1]))
    assert found(run, "decision.") == [
        ("decision.selection", "adaptive selection: the evaluator's item ids repeat")]


def test_an_evaluator_whose_items_cannot_be_split_does_not_stop_the_next_ones_cover_check(run):
    identifier = eval_id(run)

    def edit(result):
        provenance = result["evaluation"]["evaluators"][identifier]
        repeated = {**provenance, "items": {"ids": ITEMS + ITEMS[:1]}}
        result["evaluation"]["evaluators"] = {"0" * 64: repeated, identifier: provenance}
    edit_result(run, edit)
    inline(run, keep=lambda row: row["item_id"] != SPLIT.confirmation_ids[0])
    assert found(run, "decision.observations_cover") == [cover(2)]
