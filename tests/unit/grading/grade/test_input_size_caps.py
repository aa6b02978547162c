"""The grader's input caps (experiment/grading/input_limits.py): a file is refused on its size alone, at one byte past
its cap and not at the cap, with one line naming the file, its size and the cap in MiB. The caps are stated in the
module's docstring (256 MiB for result.json, 256 MiB for any other file of a run directory); the files here are
sparse (a hole: only their size is real), so they take no disk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiment.grading.grade import GradeInputError, load_input
from experiment.grading.input_limits import oversized_input

CAP = 256 * 1024 * 1024  # both caps, as the docstring states them


def _sparse(path: Path, size: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as handle:
        handle.truncate(size)
    return path


def _refusal(path: Path, size: int, what: str) -> str:
    return (f"{path} is {size:,} bytes; the grader reads at most 256 MiB for {what} (more than the pipeline "
            "writes), so it was not read")


def _run_dir(tmp_path: Path) -> Path:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "result.json").write_text(json.dumps({"version": 1}))
    return run_dir


def test_a_result_at_its_cap_is_read_and_one_byte_more_is_refused(tmp_path):
    path = _sparse(tmp_path / "result.json", CAP)
    assert oversized_input(path, None) is None
    _sparse(path, CAP + 1)
    assert oversized_input(path, None) == _refusal(path, CAP + 1, "a RESULT")


def test_a_run_directory_file_at_its_cap_is_read_and_one_byte_more_is_refused(tmp_path):
    run_dir = _run_dir(tmp_path)
    events = _sparse(run_dir / "events.jsonl", CAP)
    assert oversized_input(run_dir / "result.json", run_dir) is None
    _sparse(events, CAP + 1)
    assert oversized_input(run_dir / "result.json", run_dir) == _refusal(events, CAP + 1, "a file of a run directory")


def test_a_nested_evidence_file_past_its_cap_is_named(tmp_path):
    run_dir = _run_dir(tmp_path)
    evidence = _sparse(run_dir / "evidence" / "predictions.jsonl", CAP + 7)
    assert oversized_input(run_dir / "result.json", run_dir) == _refusal(evidence, CAP + 7, "a file of a run directory")


def test_the_first_oversized_file_in_path_order_is_the_one_named(tmp_path):
    run_dir = _run_dir(tmp_path)
    later = _sparse(run_dir / "tables" / "z.parquet", CAP + 2)
    first = _sparse(run_dir / "evidence" / "a.jsonl", CAP + 1)
    assert first < later
    assert oversized_input(run_dir / "result.json", run_dir) == _refusal(first, CAP + 1, "a file of a run directory")


def test_an_oversized_result_in_a_run_directory_is_refused_as_a_result(tmp_path):
    run_dir = _run_dir(tmp_path)
    result = _sparse(run_dir / "result.json", CAP + 3)
    assert oversized_input(result, run_dir) == _refusal(result, CAP + 3, "a RESULT")


def test_without_a_run_directory_only_the_result_is_measured(tmp_path):
    result = tmp_path / "result.json"
    result.write_text("{}")
    _sparse(tmp_path / "events.jsonl", CAP + 1)  # beside it, but no run directory was given
    assert oversized_input(result, None) is None


def test_directories_and_absent_paths_are_not_refused_for_size(tmp_path):
    run_dir = _run_dir(tmp_path)
    (run_dir / "evidence" / "empty").mkdir(parents=True)
    (run_dir / "dangling").symlink_to(run_dir / "nowhere")
    assert oversized_input(run_dir / "result.json", run_dir) is None
    assert oversized_input(tmp_path / "absent.json", None) is None


def test_reading_a_run_directory_refuses_an_oversized_file_before_reading_it(tmp_path):
    run_dir = _run_dir(tmp_path)
    events = _sparse(run_dir / "events.jsonl", CAP + 1)
    with pytest.raises(GradeInputError) as refused:
        load_input(run_dir)
    assert str(refused.value) == _refusal(events, CAP + 1, "a file of a run directory")
    _sparse(run_dir / "result.json", CAP + 1)  # no longer JSON: refused for its size, not for its text
    with pytest.raises(GradeInputError) as refused:
        load_input(run_dir / "result.json")
    assert str(refused.value) == _refusal(run_dir / "result.json", CAP + 1, "a RESULT")


def test_an_oversized_file_sorting_after_the_result_is_refused(tmp_path):
    """Every file of the run directory but result.json itself is measured, those named after it too."""
    run_dir = _run_dir(tmp_path)
    table = _sparse(run_dir / "tables" / "sft_steps.parquet", CAP + 1)
    assert table > run_dir / "result.json"
    assert oversized_input(run_dir / "result.json", run_dir) == _refusal(table, CAP + 1, "a file of a run directory")


def test_a_path_the_system_cannot_measure_is_left_to_the_reader(tmp_path):
    """A name too long to stat (ENAMETOOLONG, which Path.is_file raises) is no size refusal: the read that
    follows says what is wrong with it."""
    assert oversized_input(tmp_path / ("x" * 5000), None) is None
