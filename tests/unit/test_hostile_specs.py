"""Hostile specs (issue 12): each is refused with one line and exit code 2, never a traceback.

Every case goes through the CLI's run path (`flows.run.main`, which refuses before Prefect is
imported) and through `load_spec`. The data-path and size-cap cases first show the attack
working against a weakened reader (monkeypatched), then that the real code holds.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from suite import GS1_SPEC, REPO_ROOT
from experiment import data as data_module
from experiment.contract.spec import MAX_SPEC_DEPTH, SpecError, load_spec
from experiment.contract.text import is_unsafe, printable, unsafe_character
from experiment.data import DataError, read_capped_bytes, resolve_data_path
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


# ---- issue 32: duplicate keys, unsafe text, learning rates, spec-vs-revision contradictions ----

from experiment.contract import spec as spec_module  # noqa: E402

TRIMUON_SPEC = REPO_ROOT / "specs" / "trimuon_vs_dimuon_no_robots.json"


def test_a_repeated_key_is_refused_not_silently_the_last(tmp_path, capsys, monkeypatch):
    path = _with_text(tmp_path, '"steps": 40,', '"steps": 40, "steps": 1,')
    with monkeypatch.context() as weak:  # attack first: plain JSON objects keep the last key; 1 step runs
        weak.setattr(spec_module, "_object_without_duplicate_keys", dict)
        assert load_spec(path).steps == 1
    message = _refused(path, capsys)
    assert message == (f"spec error: {path}: key 'steps' appears twice in one object; JSON keeps only the last, "
                       "so a spec may not repeat a key")


@pytest.mark.parametrize("escape, shown", [
    ("\\ud800", "U+D800 (a lone surrogate)"),
    ("\\u001b[2J", "U+001B (a control character)"),
    ("\\u0000", "U+0000 (a control character)"),
    ("\\r", "U+000D (a control character)"),
    ("\\u202e", "U+202E (a bidirectional override)"),
])
def test_unsafe_characters_in_spec_text_are_refused(tmp_path, capsys, monkeypatch, escape, shown):
    path = _with_text(tmp_path, '"title": "', f'"title": "{escape}')
    with monkeypatch.context() as weak:  # attack first: without the check the raw character is the run's title
        weak.setattr(spec_module, "unsafe_character", lambda text: None)
        title = load_spec(path).title
        assert title != _gs1()["title"] and title.endswith(_gs1()["title"])
    message = _refused(path, capsys)
    assert message.startswith(f"spec error: title: its text holds {shown}")
    assert message.isprintable()


def test_no_unsafe_character_is_printable():
    """unsafe_character and printable pass a printable text without looking at each character: exact only
    because no character they refuse or escape is printable (every code point checked)."""
    assert [char for char in map(chr, range(sys.maxunicode + 1)) if is_unsafe(char) and char.isprintable()] == []
    assert unsafe_character("a printable title") is None and unsafe_character("tab\there") is None
    assert unsafe_character("\u202e") == "U+202E (a bidirectional override)"
    assert printable("a printable title") == "a printable title" and printable("a\u202eb") == "a\\u202eb"


def test_an_unsafe_character_in_a_key_is_refused_and_shown_escaped(tmp_path, capsys):
    message = _refused(_with_text(tmp_path, '"title":', '"x\\u001b[2J": 1, "title":'), capsys)
    assert message.startswith("spec error: x\\x1b[2J: its key holds U+001B") and message.isprintable()


def test_newlines_and_tabs_stay_allowed():
    spec = load_spec(GS1_SPEC)
    assert "\n" in spec.to_dict()["method"]


@pytest.mark.parametrize("literal, problem", [
    ("-1e-4", "learning rate -0.0001 is outside [1e-12, 10]"),
    ("0", "learning rate 0 is outside [1e-12, 10]"),
    ("1e308", "learning rate 1e+308 is outside [1e-12, 10]"),
    ('"4e-5"', "must be a number (got '4e-5')"),
])
def test_optimizer_lr_out_of_range_is_refused(tmp_path, capsys, monkeypatch, literal, problem):
    path = _with_text(tmp_path, '"lr": 4e-05\n  }', f'"lr": {literal}\n  }}')
    # with its revision file, which pins the correctness revisions (--plan refuses the spec alone for them)
    path.with_name("hostile.plan.json").write_text(GS1_SPEC.with_name(GS1_SPEC.stem + ".plan.json").read_text())
    with monkeypatch.context() as weak:  # attack first: unchecked, --plan accepts the rate
        weak.setattr(spec_module, "_check_learning_rates", lambda spec: None)
        assert run_cli.main([str(path), "--plan"]) == run_cli.EXIT_DECISION
        capsys.readouterr()
    assert _refused(path, capsys).startswith(f"spec error: optimizer.lr: {problem}")


def test_an_arm_lr_too_large_is_refused(tmp_path, capsys):
    spec = _gs1()
    spec["arms"][1]["lr"] = 1e308
    assert _refused(_write(tmp_path, spec), capsys).startswith("spec error: arms[1].lr: learning rate 1e+308")


def test_a_learning_rate_that_underflows_to_zero_is_refused(tmp_path, capsys, monkeypatch):
    path = _with_text(tmp_path, '"lr": 4e-05\n  }', '"lr": 1e-400\n  }')
    with monkeypatch.context() as weak:  # attack first: the float parser reads 1e-400 as 0.0
        weak.setattr(spec_module, "_parse_float", float)
        weak.setattr(spec_module, "_check_learning_rates", lambda spec: None)
        assert load_spec(path).section("optimizer")["lr"] == 0.0
    message = _refused(path, capsys)
    assert message.startswith("spec error: optimizer.lr: 1e-400 is too small for a float: it would be read as 0.0")


def test_a_revision_file_whose_lr_grid_leaves_out_the_spec_lr(tmp_path, capsys, monkeypatch):
    spec_path = tmp_path / "trimuon.json"
    spec_path.write_text(TRIMUON_SPEC.read_text().replace('"lr": 0.0001', '"lr": 0.0003'))
    (tmp_path / "trimuon.plan.json").write_text(spec_module.plan_file_path(TRIMUON_SPEC).read_text())
    with monkeypatch.context() as weak:  # attack first: the grid from the revision file runs, 3e-4 never
        weak.setattr(spec_module, "_check_revision_keeps_spec_lr", lambda *args: None)
        assert 0.0003 not in {run["lr"] for run in run_cli.build_plan(load_spec(spec_path)).to_dict()["training_runs"]}
    message = _refused(spec_path, capsys)
    assert message.startswith("spec error: arms[trimuon].lr_grid: revision file ")
    assert "leaves out the spec's optimizer.lr 0.0003; the spec and its revision file contradict each other" in message
