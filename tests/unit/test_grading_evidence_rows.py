"""EvidenceAccess.jsonl parses each evidence file once per grade and hands every check the same rows
(experiment/grading/evidence.py). That is only safe while no check changes the rows it reads: a change
would be what every later check of the grade sees. The rows are read-only, so a reader that changes one
fails loudly (EvidenceRowsChanged, a RuntimeError no check catches) instead of corrupting later checks."""

from __future__ import annotations

import copy
import json
import pickle
from types import SimpleNamespace

import pytest

from experiment.grading import evidence
from experiment.grading.evaluator import EVAL_9_values
from experiment.grading.evidence import EvidenceAccess, EvidenceRowsChanged
from experiment.grading.grade import grade_record


def _scored_every_item_correct(access: EvidenceAccess, result: dict) -> None:
    """A faulty reader: 'normalizes' the prediction rows it reads in place, as if every item were correct."""
    for score in result["evaluation"]["scores"]:
        for row in access.jsonl(score["predictions_ref"]):
            row["value"] = 1.0


def _context(result: dict) -> tuple[EvidenceAccess, SimpleNamespace]:
    access = EvidenceAccess(result)
    return access, SimpleNamespace(result=result, evidence=access)


def test_weakened_a_naive_rows_cache_lets_one_reader_corrupt_a_later_check(graded_record, monkeypatch):
    """Weakened: the cache hands out plain (mutable) parsed rows. The faulty reader then changes what
    EVAL-9's score check reads after it: a good record's scores are no longer its rows' means."""
    monkeypatch.setattr(evidence, "_read_only_object", dict)
    monkeypatch.setattr(evidence, "_parse_rows", evidence._parse_rows.__wrapped__)  # parsed here, not the shared parse
    result, _ = graded_record("paired")
    access, ctx = _context(result)
    assert EVAL_9_values(ctx) == []
    _scored_every_item_correct(access, result)
    corrupted = EVAL_9_values(ctx)
    assert corrupted and all("is not the mean of its" in issue.message for issue in corrupted)


def test_a_reader_that_changes_rows_fails_and_later_checks_read_the_evidence_as_retained(graded_record):
    result, _ = graded_record("paired")
    access, ctx = _context(result)
    with pytest.raises(EvidenceRowsChanged):
        _scored_every_item_correct(access, result)
    assert EVAL_9_values(ctx) == []


CHANGES = {
    "set a field": lambda row: row.__setitem__("value", 1.0),
    "delete a field": lambda row: row.__delitem__("value"),
    "pop a field": lambda row: row.pop("value"),
    "popitem": lambda row: row.popitem(),
    "setdefault": lambda row: row.setdefault("grading", "graded"),
    "update": lambda row: row.update(value=1.0),
    "merge in place": lambda row: row.__ior__({"value": 1.0}),
    "clear": lambda row: row.clear(),
    "set a nested field": lambda row: row["nested"].__setitem__("n_tokens", 0),
    "append to a nested list": lambda row: row["nested"]["ids"].append("x"),
    "set a nested list item": lambda row: row["nested"]["ids"].__setitem__(0, "x"),
    "sort a nested list": lambda row: row["nested"]["ids"].sort(),
    "extend a nested list": lambda row: row["nested"]["ids"].__iadd__(["x"]),
    "remove from a list in a list": lambda row: row["nested"]["grid"][0].remove(1),
}


@pytest.mark.parametrize("change", CHANGES)
def test_every_way_of_changing_a_row_is_refused_and_leaves_the_rows_as_retained(change):
    text = '{"item_id": "a", "value": 0.0, "nested": {"n_tokens": 3, "ids": ["b", "a"], "grid": [[1, 2]]}}\n'
    result = {"evidence": {"files": [{"name": "p.jsonl", "kind": "predictions", "content": text}]}}
    access = EvidenceAccess(result)
    row = access.jsonl("p.jsonl")[0]
    with pytest.raises(EvidenceRowsChanged):
        CHANGES[change](row)
    assert access.jsonl("p.jsonl") == [json.loads(text)]


def test_copies_of_rows_are_plain_and_changing_them_leaves_the_shared_rows_alone():
    text = '{"item_id": "a", "value": 0.0, "nested": {"ids": ["b", "a"]}}\n'
    access = EvidenceAccess({"evidence": {"files": [{"name": "p.jsonl", "kind": "predictions", "content": text}]}})
    row = access.jsonl("p.jsonl")[0]
    for copied in (dict(row), {**row}, copy.copy(row), copy.deepcopy(row), pickle.loads(pickle.dumps(row))):
        copied["value"] = 1.0
    deep = copy.deepcopy(row)
    deep["nested"]["ids"].append("c")
    rows = access.jsonl("p.jsonl")
    rows.append({"item_id": "mine"})  # each call hands out its own list of the shared rows
    assert access.jsonl("p.jsonl") == [json.loads(text)] and json.dumps(row) == json.dumps(json.loads(text))


@pytest.mark.parametrize("kind", ["paired", "best_lr"])
def test_a_grade_from_the_shared_rows_is_the_grade_from_a_fresh_parse_per_read(graded_record, kind, monkeypatch):
    """Every check of a whole grade reads the shared rows without changing them (a change would have
    raised), and the grade is the one the grader gave when each read parsed the file again."""
    result, _ = graded_record(kind)
    shared = grade_record(result)
    parse_once = EvidenceAccess.jsonl

    def parse_per_read(self, ref):
        self._rows.clear()
        rows = parse_once(self, ref)
        return copy.deepcopy(rows) if rows is not None else None  # plain rows, as json.loads gives

    monkeypatch.setattr(EvidenceAccess, "jsonl", parse_per_read)
    assert shared.to_dict() == grade_record(result).to_dict()
