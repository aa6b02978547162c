"""Hostile specs (issue 12): each is refused with one line and exit code 2, never a traceback.

Every case goes through the CLI's run path (`flows.run.main`, which refuses before Prefect is
imported) and through `load_spec`. The data-path and size-cap cases first show the attack
working against a weakened reader (monkeypatched), then that the real code holds.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from suite import GS1_SPEC, REPO_ROOT
from experiment.run import data as data_module
from experiment.run.data import DataError, read_capped_bytes, resolve_data_path
from experiment.contract.spec import MAX_SPEC_DEPTH, SpecError, load_spec
from flows import run as run_cli

ARITH_TRAIN = "embedded_tinker/tasks/data/train.jsonl"


def _gs1() -> dict:
    return json.loads(GS1_SPEC.read_text())


def _write(tmp_path: Path, spec: dict | str) -> Path:
    path = tmp_path / "hostile.json"
    path.write_text(spec if isinstance(spec, str) else json.dumps(spec))
    return path


def _refused(path: Path, capsys) -> str:
    """load_spec raises one SpecError line; the CLI run path exits 2 with that line and no traceback."""
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith("spec error: ")
    code = run_cli.main([str(path), "--runs-dir", str(path.parent / "runs")])
    err = capsys.readouterr().err
    assert code == run_cli.EXIT_BAD_INPUT
    assert err.strip() == message and "Traceback" not in err
    assert not (path.parent / "runs").exists()  # refused before any run directory exists
    return message


def _with_text(tmp_path: Path, old: str, new: str) -> Path:
    text = GS1_SPEC.read_text()
    assert old in text
    return _write(tmp_path, text.replace(old, new, 1))


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_number_in_a_known_field(tmp_path, capsys, literal):
    message = _refused(_with_text(tmp_path, '"steps": 40', f'"steps": {literal}'), capsys)
    assert message == f"spec error: steps: {literal} is not a number a spec may hold (numbers must be finite) (in {tmp_path / 'hostile.json'})"


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "1e400"])
def test_non_finite_number_in_an_unknown_field(tmp_path, capsys, literal):
    path = _with_text(tmp_path, '"title":', f'"my_notes": {{"weights": [1, {literal}]}}, "title":')
    assert "my_notes.weights[1]" in _refused(path, capsys)


def test_nesting_deeper_than_the_limit(tmp_path, capsys):
    deep = "[" * (MAX_SPEC_DEPTH + 5) + "]" * (MAX_SPEC_DEPTH + 5)
    message = _refused(_with_text(tmp_path, '"title":', f'"extra": {deep}, "title":'), capsys)
    assert f"nesting deeper than {MAX_SPEC_DEPTH} levels" in message


def test_nesting_deep_enough_to_exhaust_the_parser(tmp_path, capsys):
    deep = "[" * 200_000 + "]" * 200_000
    message = _refused(_with_text(tmp_path, '"title":', f'"extra": {deep}, "title":'), capsys)
    assert "nesting deeper than" in message


def test_steps_ten_to_the_400(tmp_path, capsys):
    message = _refused(_with_text(tmp_path, '"steps": 40', '"steps": 1' + "0" * 400), capsys)
    assert message.startswith("spec error: steps: 100000000000... (401 digits) is too large to run")


@pytest.mark.parametrize("field, value", [("steps", 10**9), ("batch_size", 10**8), ("lora_rank", 10**7)])
def test_counts_too_large_to_run(tmp_path, capsys, field, value):
    spec = _gs1()
    spec[field] = value
    assert "too large to run" in _refused(_write(tmp_path, spec), capsys)


def test_huge_integer_in_an_unknown_field(tmp_path, capsys):
    spec = _gs1()
    spec["extra"] = {"count": 10**30}
    assert _refused(_write(tmp_path, spec), capsys).startswith("spec error: extra.count: ")


def test_empty_lr_grid(tmp_path, capsys):
    spec = _gs1()
    spec["arms"][0]["lr_grid"] = []
    message = _refused(_write(tmp_path, spec), capsys)
    assert message.startswith("spec error: arms[0].lr_grid: is empty")


def test_unknown_training_type(tmp_path, capsys):
    spec = _gs1()
    spec["training_type"] = "dpo"
    message = _refused(_write(tmp_path, spec), capsys)
    assert message.startswith("spec error: training_type: ") and "'rl'" in message and "'dpo'" in message


@pytest.mark.parametrize("section", ["dataset", "eval"])
@pytest.mark.parametrize("path", ["/etc/passwd", "/dev/zero", "../../../../etc/passwd", "data/../../../etc/passwd"])
def test_data_path_outside_the_data_directories(tmp_path, capsys, section, path):
    spec = _gs1()
    spec[section]["path"] = path
    message = _refused(_write(tmp_path, spec), capsys)
    assert message.startswith(f"spec error: {section}.path: {path}: outside the project's data directories")


def test_weakened_path_check_would_open_etc_passwd(tmp_path, capsys, monkeypatch):
    """Attack first: with every directory allowed, /etc/passwd passes the spec and is a readable 'data file'."""
    spec = _gs1()
    spec["dataset"]["path"] = "/etc/passwd"
    path = _write(tmp_path, spec)
    with monkeypatch.context() as weak:
        weak.setattr(data_module, "data_dirs", lambda: [Path("/")])
        assert load_spec(path).to_dict()["dataset"]["path"] == "/etc/passwd"
        assert b"root" in read_capped_bytes(resolve_data_path("/etc/passwd"))
    _refused(path, capsys)


def test_symlink_out_of_a_data_directory_is_refused(tmp_path, monkeypatch):
    allowed = tmp_path / "data"
    allowed.mkdir()
    (allowed / "innocent.jsonl").symlink_to("/etc/passwd")
    monkeypatch.setenv(data_module.DATA_DIRS_ENV, str(allowed))
    with pytest.raises(DataError, match="outside the project's data directories"):
        resolve_data_path(allowed / "innocent.jsonl")


def test_device_inside_an_allowed_directory_is_not_a_regular_file(monkeypatch):
    monkeypatch.setenv(data_module.DATA_DIRS_ENV, "/dev")
    with pytest.raises(DataError, match="not a regular file"):
        resolve_data_path("/dev/zero")
    with pytest.raises(DataError, match="not a regular file"):
        read_capped_bytes("/dev/zero")  # the reader itself refuses a stream, whatever the caller checked


def test_data_files_are_read_with_a_size_cap(tmp_path, monkeypatch):
    big = tmp_path / "big.jsonl"
    big.write_text("".join(f'{{"id": "{i}", "question": "q", "answer": "1"}}\n' for i in range(100)))
    monkeypatch.setenv(data_module.DATA_DIRS_ENV, str(tmp_path))
    with monkeypatch.context() as weak:  # attack first: without a meaningful cap the whole file is taken in
        weak.setattr(data_module, "MAX_DATA_FILE_BYTES", 10**12)
        assert len(data_module.load_task_file(resolve_data_path(big))) == 100
    monkeypatch.setattr(data_module, "MAX_DATA_FILE_BYTES", 1000)
    with pytest.raises(DataError, match="larger than the 1000-byte cap"):
        data_module.load_task_file(resolve_data_path(big))


def test_spec_file_size_cap(tmp_path, capsys):
    spec = _gs1()
    spec["padding"] = "x" * (2 * 1024 * 1024)
    assert "a spec file is at most" in _refused(_write(tmp_path, spec), capsys)


def test_the_project_data_files_still_resolve():
    for relative in (ARITH_TRAIN, "data/gsm8k/test.jsonl", "embedded_tinker/tasks/data/chat_test.jsonl"):
        assert resolve_data_path(relative) == (REPO_ROOT / relative).resolve()
    assert os.path.isfile(resolve_data_path(REPO_ROOT / ARITH_TRAIN))


def test_a_device_as_the_spec_file(capsys):
    code = run_cli.main(["/dev/zero", "--plan"])
    assert code == run_cli.EXIT_BAD_INPUT and capsys.readouterr().err.strip() == "spec error: /dev/zero: not a regular file"
