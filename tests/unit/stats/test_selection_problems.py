"""experiment.stats.selection's own checks, called directly (issue 28 item 7, the complete mutation
run's survivors): every problem selection_problems reports, each alone on an otherwise good record,
and the file and digest formats. The grader's tests (test_adaptive_selection.py) see these only
through whole records."""

from __future__ import annotations

import hashlib
import json

import pytest

from experiment.stats.decision import Observation
from experiment.stats.selection import (
    CHOICE_RULE,
    confirmation_only_problems,
    ids_sha256,
    record_sha256,
    selection_file_bytes,
    selection_problems,
    selection_record,
    split_items,
    split_sizes,
)

ITEMS = [f"item-{n}" for n in range(10)]


def _good():
    split = split_items(ITEMS)
    record = selection_record(split, "e" * 64, "treatment", ["t2", "t1"], "primary", "t1", {"t2": 0.25, "t1": 0.5})
    expected = {key: record[key] for key in ("selected", "effects", "role", "candidates", "criterion", "rule",
                                            "evaluator_id")}
    return record, expected


def _rehashed(record):
    body = {k: v for k, v in record.items() if k != "record_sha256"}
    return {**body, "record_sha256": hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":"))
                                                    .encode()).hexdigest()}


def test_a_good_record_has_no_problem():
    record, expected = _good()
    assert selection_problems(record, ITEMS, expected) == []
    assert selection_problems(record, None, None) == []
    assert record["rule"] == CHOICE_RULE and record["candidates"] == ["t1", "t2"]
    assert list(record["effects"]) == ["t1", "t2"]


def test_the_record_digest_is_the_canonical_json_without_itself_or_its_file():
    record, _ = _good()
    body = {k: v for k, v in record.items() if k != "record_sha256"}
    wanted = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    assert record["record_sha256"] == wanted == record_sha256({**record, "file": "adaptive-selection.json"})
    assert selection_file_bytes({"b": 1, "a": 2}) == b'{\n "a": 2,\n "b": 1\n}\n'
    assert ids_sha256(["a", "b"]) == hashlib.sha256(b'["a", "b"]').hexdigest()


def test_split_sizes_floor_half():
    assert [split_sizes(n) for n in (2, 3, 10, 11)] == [(1, 1), (1, 2), (5, 5), (5, 6)]
    with pytest.raises(Exception, match="at least 2 evaluated items"):
        split_items(["only"])
    with pytest.raises(Exception, match="repeat"):
        split_items(["a", "a", "b"])


def test_no_record_at_all():
    assert selection_problems(None, ITEMS, None) == ["adaptive selection needs decision.selection (the record has none)"]
    assert selection_problems([], ITEMS, None)[0].startswith("adaptive selection needs")


@pytest.mark.parametrize("flag", [False, None, 1, "true"])
def test_frozen_must_be_exactly_true(flag):
    record, expected = _good()
    problems = selection_problems(_rehashed({**record, "frozen_before_confirmation": flag}), ITEMS, expected)
    assert problems == ["decision.selection.frozen_before_confirmation is not true"]


@pytest.mark.parametrize("split", [None, {}, {"selection_ids": ["a"]}, {"confirmation_ids": ["a"]},
                                   {"selection_ids": "a", "confirmation_ids": ["b"]}])
def test_a_split_without_both_lists(split):
    record, expected = _good()
    edited = {**record, "frozen_before_confirmation": False, "split": split}
    assert selection_problems(_rehashed(edited), ITEMS, expected) == [
        "decision.selection.frozen_before_confirmation is not true",
        "decision.selection.split lacks selection_ids or confirmation_ids"]


def test_an_overlap_is_reported_with_its_size_and_first_item():
    record, expected = _good()
    split = dict(record["split"])
    split["confirmation_ids"] = sorted(split["confirmation_ids"] + split["selection_ids"][:2])
    split["confirmation_ids_sha256"] = ids_sha256(split["confirmation_ids"])
    problems = selection_problems(_rehashed({**record, "split": split}), None, expected)
    first = sorted(record["split"]["selection_ids"][:2])[0]
    assert problems == [f"selection and confirmation items overlap (2, first {first!r})"]


@pytest.mark.parametrize("key", ["selection_ids_sha256", "confirmation_ids_sha256"])
def test_each_list_digest_is_checked(key):
    record, expected = _good()
    split = {**record["split"], key: "0" * 64}
    assert selection_problems(_rehashed({**record, "split": split}), ITEMS, expected) == [
        f"decision.selection.split.{key} is not the sha256 of its id list"]


@pytest.mark.parametrize("which", ["selection_ids", "confirmation_ids"])
def test_a_split_the_rule_does_not_give(which):
    record, expected = _good()
    split = dict(record["split"])
    other = "confirmation_ids" if which == "selection_ids" else "selection_ids"
    moved = split[other][0]
    split[which] = sorted(split[which] + [moved])
    split[other] = [i for i in split[other] if i != moved]
    for key in ("selection_ids", "confirmation_ids"):
        split[key + "_sha256"] = ids_sha256(split[key])
    problems = selection_problems(_rehashed({**record, "split": split}), ITEMS, expected)
    assert len(problems) == 1 and problems[0].startswith("the split is not the one recomputed")


def test_items_the_split_rule_refuses_are_reported_after_the_other_problems():
    record, expected = _good()
    problems = selection_problems(_rehashed({**record, "frozen_before_confirmation": False}), ["a", "a"], expected)
    assert problems == ["decision.selection.frozen_before_confirmation is not true",
                        "adaptive selection: the evaluator's item ids repeat"]


def test_the_record_digest_is_checked():
    record, expected = _good()
    assert selection_problems({**record, "record_sha256": "0" * 64}, ITEMS, expected) == [
        "decision.selection.record_sha256 is not the sha256 of the selection record"]


def test_a_choice_other_than_the_recomputed_one():
    record, expected = _good()
    problems = selection_problems(_rehashed({**record, "selected": "t2"}), ITEMS, expected)
    assert problems == ["selected 't2' is not the recomputed choice 't1'"]


@pytest.mark.parametrize("effects", [{"t1": 0.5}, {"t1": 0.5, "t2": 0.25, "t3": 0.0}, {"t1": 0.5, "t2": 0.26},
                                     {"t1": 0.5, "t2": True}, {"t1": 0.5, "t2": "0.25"}, None])
def test_effects_must_be_the_recomputed_ones(effects):
    record, expected = _good()
    problems = selection_problems(_rehashed({**record, "effects": effects}), ITEMS, expected)
    assert problems == ["the candidates' selection effects are not the ones recomputed from the selection items"]


def test_effects_within_rounding_are_accepted():
    record, expected = _good()
    nearly = {"t1": 0.5 * (1 + 1e-12), "t2": 0.25}
    assert selection_problems(_rehashed({**record, "effects": nearly}), ITEMS, expected) == []


@pytest.mark.parametrize("key, value", [("role", "baseline"), ("candidates", ["t1"]), ("criterion", "other"),
                                        ("rule", "largest"), ("evaluator_id", "f" * 64)])
def test_each_described_field_is_compared(key, value):
    record, expected = _good()
    problems = selection_problems(_rehashed({**record, key: value}), ITEMS, expected)
    assert problems == [f"decision.selection.{key} {value!r} is not {expected[key]!r}"]


def test_the_smallest_splits_are_one_and_one_then_one_and_two():
    assert split_items(["a", "b"]).selection_ids.__len__() == 1
    three = split_items(["a", "b", "c"])
    assert (len(three.selection_ids), len(three.confirmation_ids)) == (1, 2)
    assert sorted(three.selection_ids + three.confirmation_ids) == ["a", "b", "c"]


def test_the_record_is_version_1_with_every_effect():
    record, _ = _good()
    assert record["version"] == 1 and record["effects"] == {"t1": 0.5, "t2": 0.25}
    assert record["frozen_before_confirmation"] is True and record["selected"] == "t1"


def test_a_boolean_is_not_an_effect_even_where_it_equals_one():
    record, expected = _good()
    expected = {**expected, "effects": {"t1": 1.0, "t2": 0.25}}
    assert selection_problems(_rehashed({**record, "effects": {"t1": 1.0, "t2": 0.25}}), ITEMS, expected) == []
    assert selection_problems(_rehashed({**record, "effects": {"t1": True, "t2": 0.25}}), ITEMS, expected) == [
        "the candidates' selection effects are not the ones recomputed from the selection items"]
    assert selection_problems(_rehashed({**record, "effects": {"t1": 1.0 + 1e-6, "t2": 0.25}}), ITEMS, expected) != []
    zero = {**expected, "effects": {"t1": 0.0, "t2": 0.25}}
    assert selection_problems(_rehashed({**record, "effects": {"t1": 1e-13, "t2": 0.25}}), ITEMS, zero) == []
    assert selection_problems(_rehashed({**record, "effects": {"t1": 1e-10, "t2": 0.25}}), ITEMS, zero) != []


def _observed(*item_ids):
    return [Observation(item_id=i, arm="t1", seed=0, metric="accuracy", value=1.0) for i in item_ids]


def test_observations_must_come_from_confirmation_items_only():
    record, _ = _good()
    selection, confirmation = record["split"]["selection_ids"], record["split"]["confirmation_ids"]
    assert confirmation_only_problems(_observed(*confirmation), record) == []
    assert confirmation_only_problems(_observed(confirmation[0], *selection[1:3]), record) == [
        f"2 observed item(s) are selection items (first {sorted(selection[1:3])[0]!r}); observations must use "
        "confirmation items only"]
    assert confirmation_only_problems(_observed(confirmation[0], "zz-unlisted", "aa-unlisted"), record) == [
        "2 observed item(s) are not confirmation items (first 'aa-unlisted')"]
    # without a split every observed item is outside it
    assert confirmation_only_problems(_observed("a"), None) == ["1 observed item(s) are not confirmation items (first 'a')"]
    assert confirmation_only_problems(_observed("a"), {"split": "x"}) == [
        "1 observed item(s) are not confirmation items (first 'a')"]


@pytest.mark.parametrize("which", ["selection_ids", "confirmation_ids"])
@pytest.mark.parametrize("edit", ["reversed", "smaller first item"])
def test_one_list_alone_differing_from_the_rule_is_reported(which, edit):
    record, expected = _good()
    split = dict(record["split"])
    ids = list(split[which])
    split[which] = ids[::-1] if edit == "reversed" else ["a-not-an-item"] + ids[1:]
    split[which + "_sha256"] = ids_sha256(split[which])
    problems = selection_problems(_rehashed({**record, "split": split}), ITEMS, expected)
    assert len(problems) == 1 and problems[0].startswith("the split is not the one recomputed")


@pytest.mark.parametrize("wrong", ["0" * 64, "f" * 64])
def test_wrong_digests_on_either_side_of_the_true_one(wrong):
    record, expected = _good()
    for key in ("selection_ids_sha256", "confirmation_ids_sha256"):
        split = {**record["split"], key: wrong}
        assert selection_problems(_rehashed({**record, "split": split}), ITEMS, expected) == [
            f"decision.selection.split.{key} is not the sha256 of its id list"]
    assert selection_problems({**record, "record_sha256": wrong}, ITEMS, expected) == [
        "decision.selection.record_sha256 is not the sha256 of the selection record"]
