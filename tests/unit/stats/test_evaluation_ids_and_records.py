"""Evaluation records (EVAL-1..EVAL-10): ids and hashes recomputed here with hashlib/json
from the contract's definitions, never taken from experiment.stats.evaluation."""

from __future__ import annotations

import hashlib
import json
import math

import pytest

from experiment.stats.decision import Observation
from experiment.stats.evaluation import (
    EvaluationError,
    code_files_sha256,
    evaluation_record,
    evaluator_id,
    evaluator_provenance,
    grading_failures,
    observations_from_predictions,
    prediction_row,
    score_entry,
    score_rows,
)

DECODING = {"temperature": 0.0, "max_tokens": 16, "stop": ["\n"]}


def _canonical_sha(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _provenance(**overrides):
    base = {"code_sha256": "c" * 64, "prompt_template": "Q: {q}", "decoding": dict(DECODING),
            "parser": "boxed", "items": {"ids": ["a", "b"]}}
    base.update(overrides)
    return base


def test_evaluator_id_is_sha256_of_canonical_json():
    provenance = _provenance()
    assert evaluator_id(provenance) == _canonical_sha(provenance)
    assert evaluator_id({"b": 1, "a": [1, 2]}) == hashlib.sha256(b'{"a":[1,2],"b":1}').hexdigest()


def test_code_hash_is_sha256sum_manifest_sorted_by_name(tmp_path):
    (tmp_path / "pkg").mkdir()
    b = tmp_path / "pkg" / "b.py"
    a = tmp_path / "a.py"
    b.write_bytes(b"B\n")
    a.write_bytes(b"A\n")
    manifest = (f"{hashlib.sha256(b'A' + bytes([10])).hexdigest()}  a.py\n"
                f"{hashlib.sha256(b'B' + bytes([10])).hexdigest()}  pkg/b.py\n")
    assert code_files_sha256([b, a], code_root=tmp_path) == hashlib.sha256(manifest.encode()).hexdigest()
    base_names = (f"{hashlib.sha256(b'A' + bytes([10])).hexdigest()}  a.py\n"
                  f"{hashlib.sha256(b'B' + bytes([10])).hexdigest()}  b.py\n")
    assert code_files_sha256([b, a]) == hashlib.sha256(base_names.encode()).hexdigest()
    with pytest.raises(EvaluationError, match="no evaluator code files"):
        code_files_sha256([])
    (tmp_path / "x").mkdir()
    twin = tmp_path / "x" / "a.py"
    twin.write_bytes(b"other")
    with pytest.raises(EvaluationError, match="share the name"):
        code_files_sha256([a, twin])


def test_evaluator_provenance_shape_and_checks(tmp_path):
    code = tmp_path / "grader.py"
    code.write_bytes(b"x")
    provenance = evaluator_provenance([code], "Q: {q}", dict(DECODING), "boxed", ["i1", "i2"])
    assert provenance == {
        "code_sha256": hashlib.sha256(f"{hashlib.sha256(b'x').hexdigest()}  grader.py\n".encode()).hexdigest(),
        "prompt_template": "Q: {q}", "decoding": DECODING, "parser": "boxed", "items": {"ids": ["i1", "i2"]}}
    for bad_template in ("", None):
        with pytest.raises(EvaluationError, match="prompt_template"):
            evaluator_provenance([code], bad_template, dict(DECODING), "boxed", ["i1"])
    for bad_parser in ("", 3):
        with pytest.raises(EvaluationError, match="parser"):
            evaluator_provenance([code], "Q", dict(DECODING), bad_parser, ["i1"])


@pytest.mark.parametrize("key", ["arm", "checkpoint"])
def test_decoding_naming_an_arm_or_checkpoint_is_refused(tmp_path, key):
    code = tmp_path / "grader.py"
    code.write_bytes(b"x")
    with pytest.raises(EvaluationError, match="must not name the scored model"):
        evaluator_provenance([code], "Q", {**DECODING, key: "treatment"}, "boxed", ["i1"])


def test_decoding_checks(tmp_path):
    code = tmp_path / "grader.py"
    code.write_bytes(b"x")
    for missing in ("temperature", "max_tokens", "stop"):
        decoding = {k: v for k, v in DECODING.items() if k != missing}
        with pytest.raises(EvaluationError, match=f"decoding lacks {missing}"):
            evaluator_provenance([code], "Q", decoding, "boxed", ["i1"])
    for stop in ("\n", ["\n", 3]):
        with pytest.raises(EvaluationError, match="decoding.stop"):
            evaluator_provenance([code], "Q", {**DECODING, "stop": stop}, "boxed", ["i1"])
    with pytest.raises(EvaluationError, match="decoding must be a dict"):
        evaluator_provenance([code], "Q", [1], "boxed", ["i1"])
    with pytest.raises(ValueError):
        evaluator_provenance([code], "Q", {**DECODING, "temperature": math.nan}, "boxed", ["i1"])


@pytest.mark.parametrize("ids, message", [
    ("i1", "explicit list"), ({"i1"}, "explicit list"), ([], "empty"), (["i1", ""], "non-empty strings"),
    (["i1", 2], "non-empty strings"), (["i1", "i1"], "duplicates"),
])
def test_item_ids_must_be_an_explicit_list_of_distinct_strings(tmp_path, ids, message):
    code = tmp_path / "grader.py"
    code.write_bytes(b"x")
    with pytest.raises(EvaluationError, match=message):
        evaluator_provenance([code], "Q", dict(DECODING), "boxed", ids)
    assert evaluator_provenance([code], "Q", dict(DECODING), "boxed", ("i1", "i2"))["items"] == {"ids": ["i1", "i2"]}


# ---- the evaluation record

@pytest.mark.parametrize("where", ["top", "decoding", "items"])
@pytest.mark.parametrize("key", ["arm", "checkpoint"])
def test_record_refuses_provenance_naming_an_arm_or_checkpoint(where, key):
    provenance = _provenance()
    if where == "top":
        provenance[key] = "treatment"
    else:
        provenance[where][key] = "treatment"
    identifier = _canonical_sha(provenance)  # the id matches, so only the forbidden key can be the reason
    with pytest.raises(EvaluationError, match=f"contains '{key}'"):
        evaluation_record({identifier: provenance}, [], [])


def test_record_accepts_a_clean_provenance_and_keeps_everything():
    provenance = _provenance()
    identifier = _canonical_sha(provenance)
    scores = [score_entry("t", 0.5, identifier, 0, "predictions-t.jsonl"),
              score_entry("b", 1, identifier, 0, "predictions-b.jsonl", metric="acc")]
    comparisons = [{"arms": ["t", "b"]}]
    record = evaluation_record({identifier: provenance}, scores, comparisons)
    assert record == {"version": 1, "evaluators": {identifier: provenance}, "scores": scores,
                      "comparisons": comparisons}
    assert scores[1] == {"arm": "b", "metric": "acc", "value": 1, "evaluator_id": identifier, "seed": 0,
                         "predictions_ref": "predictions-b.jsonl"}
    # a value merely mentioning the word "arm" is not a key
    text_only = _provenance(prompt_template="which arm? checkpoint")
    evaluation_record({_canonical_sha(text_only): text_only}, [], [])


def test_record_checks_ids_scores_and_comparisons():
    provenance = _provenance()
    identifier = _canonical_sha(provenance)
    with pytest.raises(EvaluationError, match="does not match its provenance"):
        evaluation_record({"0" * 64: provenance}, [], [])
    with pytest.raises(EvaluationError, match="unknown evaluator"):
        evaluation_record({identifier: provenance}, [score_entry("t", 0.5, "f" * 64, 0, "p")], [])
    for value in (math.nan, math.inf, True, "0.5", None):
        with pytest.raises(EvaluationError, match="no finite value"):
            evaluation_record({identifier: provenance}, [score_entry("t", value, identifier, 0, "p")], [])
    for arms in ([], ["t"]):
        with pytest.raises(EvaluationError, match="at least two arms"):
            evaluation_record({identifier: provenance}, [], [{"arms": arms}])
    with pytest.raises(EvaluationError, match="at least two arms"):
        evaluation_record({identifier: provenance}, [], [{}])
    bad_items = _provenance(items={"ids": "0-99"})
    with pytest.raises(EvaluationError, match="explicit list"):
        evaluation_record({_canonical_sha(bad_items): bad_items}, [], [])
    no_items = {k: v for k, v in _provenance().items() if k != "items"}
    with pytest.raises(EvaluationError):
        evaluation_record({_canonical_sha(no_items): no_items}, [], [])


# ---- prediction rows and scores

def test_prediction_rows_score_invalid_outputs_as_zero():
    ok = prediction_row("i1", "t", "4", "4", True, "e", 0, "tinker://c", raw_output="4")
    assert ok == {"item_id": "i1", "arm": "t", "prediction": "4", "reference": "4", "metric": "accuracy",
                  "value": 1.0, "evaluator_id": "e", "seed": 0, "checkpoint": "tinker://c", "raw_output": "4"}
    assert prediction_row("i1", "t", None, "4", True, "e", 0, None)["value"] == 0.0
    assert prediction_row("i1", "t", "5", "4", False, "e", 0, None)["value"] == 0.0
    assert prediction_row("i1", "t", "4", "4", True, "e", 0, None, metric="m")["metric"] == "m"


def test_score_rows_is_the_mean_and_refuses_mixed_rows():
    rows = [prediction_row(f"i{j}", "t", "x", "x", j % 4 == 0, "e", 0, None) for j in range(8)]
    assert score_rows(rows) == 2 / 8
    with pytest.raises(EvaluationError, match="no prediction rows"):
        score_rows([])
    for key, other in (("arm", "b"), ("seed", 1), ("metric", "m"), ("evaluator_id", "f")):
        mixed = rows[:-1] + [{**rows[-1], key: other}]
        with pytest.raises(EvaluationError, match=f"several values of {key}"):
            score_rows(mixed)
    with pytest.raises(EvaluationError, match="item twice"):
        score_rows(rows + rows[:1])


def test_observations_from_predictions():
    rows = [prediction_row("i1", "t", "4", "4", True, "e", 3, None),
            prediction_row("i2", "t", None, "4", True, "e", 3, None, metric="m")]
    assert observations_from_predictions(rows) == [Observation("i1", "t", 3, "accuracy", 1.0, "e"),
                                                   Observation("i2", "t", 3, "m", 0.0, "e")]


def test_score_rows_with_many_distinct_items():
    # more rows than CPython's small-integer cache (256): equal counts must still compare equal
    rows = [prediction_row(f"i{j}", "t", "x", "x", j < 100, "e", 0, None) for j in range(300)]
    assert score_rows(rows) == 100 / 300


# ---------------------------------------------------------------- canonical JSON, code files, arms, failures
# experiment.stats.evaluation beyond the tests above (issue 28 item 7, the complete mutation
# run's survivors): the contract's canonical JSON escapes non-ASCII, named code files, an id that sorts
# after the true one, comparisons of more than two arms, and grading failures. Expected values are
# literals or the contract's formulas (exchange-contract.md, EVAL-2).


def _contract_id(provenance: dict) -> str:
    return hashlib.sha256(json.dumps(provenance, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                                     allow_nan=False).encode()).hexdigest()


def _provenance_deciding_at_temperature_zero(**overrides):
    base = {"code_sha256": "c" * 64, "prompt_template": "Q: {q}", "decoding": {"temperature": 0.0},
            "parser": "boxed", "items": {"ids": ["a", "b"]}}
    base.update(overrides)
    return base


def test_the_evaluator_id_hashes_non_ascii_text_escaped():
    provenance = _provenance_deciding_at_temperature_zero(prompt_template="Frage: {q} — Antwort (café)")
    assert evaluator_id(provenance) == _contract_id(provenance)
    assert evaluator_id({"t": "é"}) == hashlib.sha256(b'{"t":"\\u00e9"}').hexdigest()


def test_named_code_files_hash_as_a_manifest_under_their_names(tmp_path):
    (tmp_path / "one.py").write_bytes(b"print(1)\n")
    (tmp_path / "two.py").write_bytes(b"print(2)\n")
    digest = code_files_sha256({"pkg/z.py": tmp_path / "one.py", "app/a.py": tmp_path / "two.py"})
    one, two = (hashlib.sha256(data).hexdigest() for data in (b"print(1)\n", b"print(2)\n"))
    assert digest == hashlib.sha256(f"{two}  app/a.py\n{one}  pkg/z.py\n".encode()).hexdigest()


def test_an_id_that_sorts_after_the_true_one_is_refused():
    provenance = _provenance_deciding_at_temperature_zero()
    for wrong in ("f" * 64, "0" * 64, _contract_id(provenance)[:-1] + "g"):
        with pytest.raises(EvaluationError, match="does not match its provenance"):
            evaluation_record({wrong: provenance}, [], [])


def test_a_comparison_of_three_arms_is_accepted():
    provenance = _provenance_deciding_at_temperature_zero()
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
