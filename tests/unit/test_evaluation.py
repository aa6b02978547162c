"""Tests of evaluator provenance, evaluator id and prediction rows (experiment/stats/evaluation.py)."""

import hashlib
import json

import pytest

from experiment.stats.decision import Observation
from experiment.stats.evaluation import (
    EvaluationError,
    code_files_sha256,
    evaluation_record,
    evaluator_id,
    evaluator_provenance,
    observations_from_predictions,
    prediction_row,
    score_entry,
    score_rows,
)

DECODING = {"temperature": 0.0, "max_tokens": 512, "stop": ["<|im_end|>"]}
TEMPLATE = "{question} Write your answer in \\boxed{{}} format."


@pytest.fixture
def code_files(tmp_path):
    parser = tmp_path / "parser.py"
    parser.write_text("def parse(text):\n    return text\n")
    grader = tmp_path / "grader.py"
    grader.write_text("def grade(a, b):\n    return a == b\n")
    return [parser, grader]


def _provenance(code_files, **changes):
    arguments = dict(code_files=code_files, prompt_template=TEMPLATE, decoding=DECODING,
                     parser="last \\boxed{} via math_grading.extract_boxed", item_ids=["test-0", "test-1"])
    arguments.update(changes)
    return evaluator_provenance(**arguments)


def test_code_sha256_is_a_sha256sum_manifest_of_the_files_sorted_by_name(code_files):
    lines = []
    for path in sorted(code_files, key=lambda p: p.name):
        lines.append(f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.name}\n")
    expected = hashlib.sha256("".join(lines).encode()).hexdigest()
    assert code_files_sha256(code_files) == expected
    assert code_files_sha256(list(reversed(code_files))) == expected
    assert _provenance(code_files)["code_sha256"] == expected


def test_evaluator_id_recomputes_from_the_stored_provenance(code_files):
    provenance = _provenance(code_files)
    stored = json.loads(json.dumps(provenance))  # as it would be read back from RESULT
    expected = hashlib.sha256(json.dumps(stored, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                                         allow_nan=False).encode()).hexdigest()
    assert evaluator_id(provenance) == expected
    assert set(provenance) == {"code_sha256", "prompt_template", "decoding", "parser", "items"}
    assert provenance["items"] == {"ids": ["test-0", "test-1"]}


def test_any_change_to_the_evaluator_changes_its_id(code_files, tmp_path):
    original = evaluator_id(_provenance(code_files))
    changed = [
        _provenance(code_files, prompt_template=TEMPLATE + " "),
        _provenance(code_files, decoding=dict(DECODING, max_tokens=256)),
        _provenance(code_files, decoding=dict(DECODING, stop=[])),
        _provenance(code_files, parser="first number"),
        _provenance(code_files, item_ids=["test-0"]),
        _provenance(code_files, item_ids=["test-1", "test-0"]),
    ]
    code_files[0].write_text("def parse(text):\n    return text.strip()\n")
    changed.append(_provenance(code_files))
    ids = [evaluator_id(provenance) for provenance in changed]
    assert original not in ids
    assert len(set(ids)) == len(ids)


@pytest.mark.parametrize("item_ids", ["test[0:1319]", "all 1319 test items", None, [], ["a", "a"], ["a", 3]])
def test_item_ids_must_be_an_explicit_list_of_strings(code_files, item_ids):
    with pytest.raises(EvaluationError, match="item ids"):
        _provenance(code_files, item_ids=item_ids)


def test_prose_range_error_says_what_to_do(code_files):
    with pytest.raises(EvaluationError, match="explicit list of strings"):
        _provenance(code_files, item_ids="test[0:1319]")


@pytest.mark.parametrize("decoding", [
    {"temperature": 0.0, "max_tokens": 512, "stop": "renderer stop sequences (<|im_end|>)"},
    {"temperature": 0.0, "max_tokens": 512},
    {"temperature": float("nan"), "max_tokens": 512, "stop": []},
    dict(DECODING, checkpoint="tinker://run/weights/final"),
])
def test_bad_decoding_is_rejected(code_files, decoding):
    with pytest.raises((EvaluationError, ValueError)):
        _provenance(code_files, decoding=decoding)


def test_prediction_rows_scores_and_observations():
    rows = [
        prediction_row("test-0", "gs1_kernel", "18", "18", True, "e" * 64, 0, "tinker://a/final"),
        prediction_row("test-1", "gs1_kernel", "5", "7", False, "e" * 64, 0, "tinker://a/final"),
        prediction_row("test-2", "gs1_kernel", None, "3", True, "e" * 64, 0, "tinker://a/final",
                       raw_output="I think"),
        prediction_row("test-3", "gs1_kernel", "4", "4", True, "e" * 64, 0, "tinker://a/final"),
    ]
    for key in ("item_id", "arm", "prediction", "reference", "metric", "evaluator_id", "seed", "checkpoint"):
        assert all(key in row for row in rows)
    assert rows[2]["value"] == 0.0  # an unparsable output stays a row and scores 0
    correct = sum(1 for row in rows if row["prediction"] is not None and row["prediction"] == row["reference"])
    assert score_rows(rows) == correct / len(rows)
    observations = observations_from_predictions(rows)
    assert observations[0] == Observation("test-0", "gs1_kernel", 0, "accuracy", 1.0, "e" * 64)
    with pytest.raises(EvaluationError, match="arm"):
        score_rows(rows + [dict(rows[0], arm="grpo_gs8", item_id="test-9")])
    with pytest.raises(EvaluationError, match="twice"):
        score_rows(rows + [rows[0]])


def test_evaluation_record_checks_ids_and_scores(code_files):
    provenance = _provenance(code_files)
    identifier = evaluator_id(provenance)
    scores = [score_entry("gs1_kernel", 0.5, identifier, 0, "predictions-gs1_kernel.jsonl")]
    comparisons = [{"metric": "accuracy", "arms": ["gs1_kernel", "grpo_gs8"]}]
    record = evaluation_record({identifier: provenance}, scores, comparisons)
    assert record["version"] == 1
    assert evaluator_id(record["evaluators"][identifier]) == identifier
    assert "\"arm\":" not in json.dumps(record["evaluators"])
    with pytest.raises(EvaluationError, match="does not match"):
        evaluation_record({"0" * 64: provenance}, [], comparisons)
    with pytest.raises(EvaluationError, match="unknown evaluator"):
        evaluation_record({identifier: provenance}, [dict(scores[0], evaluator_id="f" * 64)], comparisons)
    with pytest.raises(EvaluationError, match="finite"):
        evaluation_record({identifier: provenance}, [dict(scores[0], value=float("nan"))], comparisons)
