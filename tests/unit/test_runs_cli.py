"""`python -m flows.runs`: list runs from the index, show one run, friendly empty and unknown cases."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest
from suite import REPO_ROOT
from test_validation import BASELINE, TREATMENT, build_gs1_run

from flows.runs import main


def run_cli(*args: str, env_runs_dir=None) -> subprocess.CompletedProcess:
    import os

    env = {key: value for key, value in os.environ.items() if key != "RX_RUNS_DIR"}
    if env_runs_dir is not None:
        env["RX_RUNS_DIR"] = str(env_runs_dir)
    return subprocess.run(
        [sys.executable, "-m", "flows.runs", *args],
        check=False,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


@pytest.fixture
def runs_dir(tmp_path):
    runs = tmp_path / "runs"
    build_gs1_run(runs)
    return runs


def test_list_shows_one_aligned_row_per_run(runs_dir, capsys):
    second = build_gs1_run(runs_dir)
    assert main(["--runs-dir", str(runs_dir)]) == 0
    lines = capsys.readouterr().out.splitlines()
    header, rows = lines[0], lines[1:]
    assert header.split() == ["run_id", "status", "verdict", "effect", "started", "duration"]
    assert len(rows) == 2
    assert {row.split()[0] for row in rows} == {path.name for path in runs_dir.iterdir() if path.is_dir()
                                                and not path.name.startswith(".")}  # whole ids, never cut
    result = second.read_result()
    row = next(line for line in rows if line.split()[0] == second.run_id)
    assert result["status"] in row and result["verdict"] in row and f"{result['effect']:+.4f}" in row
    status_column = header.index("status")
    assert all(line[status_column:].startswith(result["status"]) for line in rows)  # columns line up


def test_every_listed_id_is_accepted_by_show(tmp_path, capsys):
    """A rehearsal's id is longer than the list once had room for: it was cut in the middle (losing
    "rehearsal") and `show` refused what the list displayed. Now each listed id opens its run."""
    runs = tmp_path / "runs"
    store = build_gs1_run(runs)
    long_id = store.run_id.replace("-", "-kernel-vs-grpo-gsm8k-rehearsal-", 1)
    (runs / store.run_id).rename(runs / long_id)
    index = pd.read_parquet(runs / "index.parquet")
    index["run_id"] = index["run_id"].replace(store.run_id, long_id)
    index.to_parquet(runs / "index.parquet")
    assert main(["--runs-dir", str(runs)]) == 0
    (row,) = capsys.readouterr().out.splitlines()[1:]
    shown = row.split()[0]
    assert shown == long_id and "rehearsal" in shown
    assert main(["--runs-dir", str(runs), "show", shown]) == 0
    assert f"run:       {long_id}" in capsys.readouterr().out


def test_empty_index_is_a_friendly_line(tmp_path):
    done = run_cli("--runs-dir", str(tmp_path / "none"))
    assert done.returncode == 0
    assert done.stdout.strip().startswith("no runs yet") and done.stderr == ""


def test_show_prints_the_run_summary(runs_dir):
    run_id = next(path.name for path in runs_dir.iterdir() if path.is_dir())
    done = run_cli("show", run_id, env_runs_dir=runs_dir)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert f"run:       {run_id}" in text and "status:    succeeded" in text
    assert "verdict:" in text and "ci [" in text
    assert "spec_intake" in text and "decision" in text
    assert f"completed arms: {BASELINE}, {TREATMENT}" in text
    assert f"    {TREATMENT}: accuracy=" in text
    assert str((runs_dir / run_id).resolve()) in text


def test_runs_dir_option_before_or_after_show(runs_dir, capsys):
    run_id = next(path.name for path in runs_dir.iterdir() if path.is_dir())
    assert main(["--runs-dir", str(runs_dir), "show", run_id]) == 0
    before = capsys.readouterr().out
    assert main(["show", run_id, "--runs-dir", str(runs_dir)]) == 0
    assert capsys.readouterr().out == before


def test_unknown_run_id_is_one_line_and_exit_2(runs_dir):
    done = run_cli("show", "no-such-run", "--runs-dir", str(runs_dir))
    assert done.returncode == 2
    assert (
        len(done.stderr.strip().splitlines()) == 1
        and "unknown run id" in done.stderr
        and "Traceback" not in done.stderr
    )


def test_show_accepts_the_unique_tail_the_list_keeps(runs_dir, capsys):
    run_id = next(path.name for path in runs_dir.iterdir() if path.is_dir())
    assert main(["--runs-dir", str(runs_dir), "show", run_id[-22:]]) == 0
    assert f"run:       {run_id}" in capsys.readouterr().out


# ---- issue 32: record text printed escaped; run ids that start with '-' ----

import json  # noqa: E402

import flows.runs as runs_module  # noqa: E402
from experiment.run.store import new_run_id  # noqa: E402


def test_record_text_reaches_the_terminal_escaped(runs_dir, capsys, monkeypatch):
    run_id = next(path.name for path in runs_dir.iterdir() if path.is_dir())
    result_path = runs_dir / run_id / "result.json"
    result = json.loads(result_path.read_text())
    result["summary"] = "\x1b[2J\x1b[Hall clear \u202eevil\ud800"
    result_path.write_text(json.dumps(result))  # a record another process wrote (json escapes the surrogate)
    with monkeypatch.context() as weak:  # attack first: printed raw, the escape sequence clears the screen
        weak.setattr(runs_module, "printable", lambda text: text)
        lines = runs_module.show_run(runs_dir, run_id)
        assert any("\x1b[2J" in line for line in lines)
    assert main(["--runs-dir", str(runs_dir), "show", run_id]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out
    assert "summary:   \\x1b[2J\\x1b[Hall clear \\u202eevil\\ud800" in out


def test_a_spec_name_without_ascii_letters_gives_a_run_id_that_starts_with_a_letter():
    assert new_run_id("\u00fc\u00e4\u00f6").startswith("run-")
    assert new_run_id("gs1_kernel").startswith("gs1-kernel-")


def test_show_takes_a_run_id_that_starts_with_a_dash(runs_dir, capsys, monkeypatch):
    run_id = next(path.name for path in runs_dir.iterdir() if path.is_dir())
    dashed = "-" + run_id.split("-", 3)[-1]  # the id an older run of a non-ASCII spec name has
    (runs_dir / run_id).rename(runs_dir / dashed)
    with monkeypatch.context() as weak:  # attack first: argparse takes the id for an unknown option
        weak.setattr(runs_module, "run_ids_as_positionals", lambda argv: argv)
        with pytest.raises(SystemExit) as exited:
            main(["--runs-dir", str(runs_dir), "show", dashed])
        assert exited.value.code == 2
    capsys.readouterr()
    assert main(["--runs-dir", str(runs_dir), "show", dashed]) == 0
    assert f"run:       {dashed}" in capsys.readouterr().out
    assert main(["show", dashed, "--runs-dir", str(runs_dir)]) == 0
    assert main(["show", "--runs-dir", str(runs_dir), dashed]) == 0
