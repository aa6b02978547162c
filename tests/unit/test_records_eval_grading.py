"""The frozen evaluator (EVAL-1..EVAL-11).

Its code hash covers prompt construction and the renderer, not only the grader; a grading
timeout or grader error is recorded in the item's row (and named in the score), never a silent 0.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from tinker_cookbook.recipes.math_rl import math_env

import experiment.rl.math_eval as math_eval
from experiment.stats import evaluation as ev
from experiment.rl.recipe import renderer_named

TOKENIZER_DIR = Path(__file__).resolve().parents[2] / "embedded_tinker" / "assets" / "tokenizer"


def _slow_grader(seconds: float):
    def grade(given: str, reference: str) -> bool:
        time.sleep(seconds)
        return given == reference
    return grade


@pytest.fixture(scope="module")
def renderer():
    return renderer_named(str(TOKENIZER_DIR), "qwen3_5_disable_thinking")


def test_the_cookbook_grader_turns_a_timeout_into_a_silent_false(monkeypatch):
    """The weakness this evaluator closes: the cookbook's safe_grade returns False on a timeout,
    indistinguishable from a wrong answer."""
    monkeypatch.setattr(math_env, "grade_answer", _slow_grader(1.3))
    assert math_env.safe_grade("7", "7", "sympy", timeout=1.0) is False


def test_a_grading_timeout_is_recorded_in_its_row_and_named_in_the_score(monkeypatch):
    monkeypatch.setattr(math_eval, "GRADING_TIMEOUT_SECONDS", 0.05)
    monkeypatch.setattr(math_eval, "GRADING_RETRY_TIMEOUT_SECONDS", 0.1)
    graded = math_eval.grade_answer("so \\boxed{7}", "7", grader=_slow_grader(0.5))
    assert graded["correct"] is False and graded["grading"] == "timeout"
    assert "did not finish" in graded["grading_error"]
    row = ev.prediction_row("arith-1", "grpo_gs8", "so \\boxed{7}", "7", graded["correct"], "e" * 64, 0, None,
                            grading=graded["grading"], grading_error=graded["grading_error"])
    ok = ev.prediction_row("arith-2", "grpo_gs8", "\\boxed{3}", "3", True, "e" * 64, 0, None, grading="graded")
    assert row["grading"] == "timeout" and row["value"] == 0.0  # failures count as 0, and say why
    failures = ev.grading_failures([row, ok])
    assert failures == {"timeout": ["arith-1"]}
    score = ev.score_entry("grpo_gs8", ev.score_rows([row, ok]), "e" * 64, 0, "predictions-grpo_gs8.jsonl",
                           grading_failures=failures)
    assert score["grading_failures"] == {"timeout": ["arith-1"]} and score["value"] == 0.5


def test_a_grader_that_finishes_within_the_retry_is_graded(monkeypatch):
    monkeypatch.setattr(math_eval, "GRADING_TIMEOUT_SECONDS", 0.05)
    monkeypatch.setattr(math_eval, "GRADING_RETRY_TIMEOUT_SECONDS", 2.0)
    assert math_eval.grade_answer("\\boxed{7}", "7", grader=_slow_grader(0.2)) == {"correct": True, "grading": "graded"}


def test_grader_errors_and_missing_boxes_are_named():
    def crash(given: str, reference: str) -> bool:
        raise RuntimeError("sympy blew up")

    crashed = math_eval.grade_answer("\\boxed{7}", "7", grader=crash)
    assert crashed["grading"] == "grader_error" and "sympy blew up" in crashed["grading_error"]
    assert math_eval.grade_answer("seven", "7") == {"correct": False, "grading": "no_boxed"}
    assert math_eval.grade_answer("\\boxed{7}", "7") == {"correct": True, "grading": "graded"}


def test_the_code_hash_covers_prompt_construction_and_the_renderer(renderer):
    files = math_eval.evaluator_code_files(renderer)
    assert {"experiment/rl/math_eval.py", "experiment/rl/loop.py", "experiment/data.py",
            "tinker_cookbook/recipes/math_rl/math_grading.py", "tinker_cookbook/renderers/base.py"} <= set(files)
    renderer_modules = [name for name in files if name.startswith("tinker_cookbook/renderers/qwen3")]
    assert renderer_modules, "the renderer's own module is hashed"
    assert "tokenizer/tokenizer_config.json" in files or "tokenizer/tokenizer.json" in files
    assert all(path.is_file() for path in files.values())


def test_a_change_to_prompt_construction_or_renderer_changes_the_evaluator_id(renderer, tmp_path):
    files = math_eval.evaluator_code_files(renderer)

    def evaluator_id(code_files) -> str:
        return ev.evaluator_id(ev.evaluator_provenance(code_files, "user: {question}", {
            "temperature": 0.0, "max_tokens": 16, "stop": ["<|im_end|>"]}, math_eval.PARSER_DESCRIPTION, ["a", "b"]))

    frozen = evaluator_id(files)
    assert evaluator_id(dict(files)) == frozen  # the hash is of the bytes and stable names only
    for name in ("experiment/rl/loop.py", renderer_modules_of(files)[0]):
        edited = tmp_path / Path(name).name
        edited.write_bytes(files[name].read_bytes() + b"\n# edited\n")
        assert evaluator_id({**files, name: edited}) != frozen, name


def renderer_modules_of(files: dict) -> list[str]:
    return [name for name in files if name.startswith("tinker_cookbook/renderers/qwen3")]
