"""experiment.stats.evaluation beyond test_evaluation_ids_and_records.py (issue 28 item 7, the complete mutation
run's survivors): the contract's canonical JSON escapes non-ASCII, named code files, an id that sorts
after the true one, comparisons of more than two arms, and grading failures. Expected values are
literals or the contract's formulas (exchange-contract.md, EVAL-2)."""

from __future__ import annotations

import hashlib
import json

import pytest

from experiment.stats.evaluation import (
    EvaluationError,
    code_files_sha256,
    evaluation_record,
    evaluator_id,
    grading_failures,
    score_entry,
)


def _contract_id(provenance: dict) -> str:
    return hashlib.sha256(json.dumps(provenance, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                                     allow_nan=False).encode()).hexdigest()


def _provenance(**overrides):
    base = {"code_sha256": "c" * 64, "prompt_template": "Q: {q}", "decoding": {"temperature": 0.0},
            "parser": "boxed", "items": {"ids": ["a", "b"]}}
    base.update(overrides)
    return base


def test_the_evaluator_id_hashes_non_ascii_text_escaped():
    provenance = _provenance(prompt_template="Frage: {q} — Antwort (café)")
    assert evaluator_id(provenance) == _contract_id(provenance)
    assert evaluator_id({"t": "é"}) == hashlib.sha256(b'{"t":"\\u00e9"}').hexdigest()


def test_named_code_files_hash_as_a_manifest_under_their_names(tmp_path):
    (tmp_path / "one.py").write_bytes(b"print(1)\n")
    (tmp_path / "two.py").write_bytes(b"print(2)\n")
    digest = code_files_sha256({"pkg/z.py": tmp_path / "one.py", "app/a.py": tmp_path / "two.py"})
    one, two = (hashlib.sha256(data).hexdigest() for data in (b"print(1)\n", b"print(2)\n"))
    assert digest == hashlib.sha256(f"{two}  app/a.py\n{one}  pkg/z.py\n".encode()).hexdigest()


def test_an_id_that_sorts_after_the_true_one_is_refused():
    provenance = _provenance()
    for wrong in ("f" * 64, "0" * 64, _contract_id(provenance)[:-1] + "g"):
        with pytest.raises(EvaluationError, match="does not match its provenance"):
            evaluation_record({wrong: provenance}, [], [])


def test_a_comparison_of_three_arms_is_accepted():
    provenance = _provenance()
    identifier = _contract_id(provenance)
    record = evaluation_record({identifier: provenance}, [], [{"arms": ["base", "t", "b"]}])
    assert record["comparisons"] == [{"arms": ["base", "t", "b"]}]


def test_grading_failures_are_grouped_by_kind_and_graded_rows_left_out():
    rows = [{"item_id": "a", "grading": "timeout"}, {"item_id": "b", "grading": "graded"},
            {"item_id": "c", "grading": "grader_error"}, {"item_id": "d"}, {"item_id": "e", "grading": "timeout"}]
    assert grading_failures(rows) == {"timeout": ["a", "e"], "grader_error": ["c"]}
    assert grading_failures([{"item_id": "a", "grading": "graded"}]) == {}


def test_a_score_entry_names_its_grading_failures():
    entry = score_entry("t", 0.5, "e" * 64, 0, "predictions-t.jsonl", grading_failures={"timeout": ("a", "e")})
    assert entry["grading_failures"] == {"timeout": ["a", "e"]}
    assert "grading_failures" not in score_entry("t", 0.5, "e" * 64, 0, "p", grading_failures={})
