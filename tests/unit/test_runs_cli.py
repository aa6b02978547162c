"""`python -m flows.runs`: list runs from the index, show one run, friendly empty and unknown cases."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest
from suite import REPO_ROOT
from records import BASELINE, TREATMENT, build_gs1_run

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
    assert header.split() == ["run_id", "spec", "scale", "status", "kind", "verdict", "effect", "started", "duration"]
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


# ---- record text printed escaped; run ids that start with '-' ----

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


# ---- for a team: filters, kinds, JSON, sorting, and how to resume ----


def _blocked(store, **record):
    """The store's run stopped as the flow stops it: failed, no verdict, with the record that says why."""
    store.update_result(status="failed", verdict=None, outcome_reason="incomplete_execution", **record)
    store.release()
    return store


@pytest.fixture
def team_runs(tmp_path):
    """Four runs of one runs dir: decided, capacity-blocked, interrupted (GS1) and a gate failure of another spec."""
    from experiment.contract.plan import build_plan
    from experiment.contract.spec import load_spec
    from experiment.run.store import RunStore

    runs = tmp_path / "runs"
    decided = build_gs1_run(runs)
    decided.release()
    blocked = _blocked(build_gs1_run(runs), capacity_block={"gate": "arm_training", "reason": "capacity exhausted"})
    interrupted = _blocked(build_gs1_run(runs), interruption={"reason": "SIGTERM", "at": "now", "resumable": True})
    selfgen = load_spec(REPO_ROOT / "specs" / "selfgen_tasks_vs_gsm8k.json", rehearse=True, rehearsal_scale="wiring")
    other = _blocked(RunStore.create(runs, selfgen, build_plan(selfgen)))  # stopped at a gate: failed, no record
    return runs, {"decided": decided, "capacity_blocked": blocked, "interrupted": interrupted, "gate_failed": other}


def test_the_list_names_each_runs_spec_scale_and_kind(team_runs, capsys):
    runs, stores = team_runs
    assert main(["--runs-dir", str(runs), "--json"]) == 0
    rows = {row["run_id"]: row for row in json.loads(capsys.readouterr().out)}
    assert {rows[store.run_id]["kind"]: kind for kind, store in stores.items()} == {kind: kind for kind in stores}
    gs1 = rows[stores["decided"].run_id]
    assert gs1["spec"] == "gs1_kernel_vs_grpo_gsm8k.json" and gs1["scale"] == "as-written" and gs1["resumable"] is False
    assert gs1["verdict"] is not None
    for kind in ("capacity_blocked", "interrupted"):
        assert rows[stores[kind].run_id]["resumable"] is True and rows[stores[kind].run_id]["verdict"] is None
    assert rows[stores["gate_failed"].run_id]["resumable"] is False


def test_filters_by_spec_status_and_kind_combine(team_runs, capsys):
    runs, stores = team_runs
    assert main(["--runs-dir", str(runs), "--json", "--spec", "selfgen"]) == 0
    assert [row["run_id"] for row in json.loads(capsys.readouterr().out)] == [stores["gate_failed"].run_id]
    assert main(["--runs-dir", str(runs), "--json", "--spec", "GS1", "--status", "failed"]) == 0
    assert {row["run_id"] for row in json.loads(capsys.readouterr().out)} == {
        stores["capacity_blocked"].run_id, stores["interrupted"].run_id}
    assert main(["--runs-dir", str(runs), "--kind", "capacity_blocked"]) == 0
    header, *rows = capsys.readouterr().out.splitlines()
    assert [row.split()[0] for row in rows] == [stores["capacity_blocked"].run_id]
    assert "capacity_blocked (resumable)" in rows[0]
    assert main(["--runs-dir", str(runs), "--kind", "decided", "--spec", "selfgen"]) == 0
    assert capsys.readouterr().out.strip() == f"no runs in {runs} match the filter"


def test_sorting_by_spec_puts_each_spec_together(team_runs, capsys):
    runs, stores = team_runs
    assert main(["--runs-dir", str(runs), "--json", "--sort", "spec"]) == 0
    specs = [row["spec"] for row in json.loads(capsys.readouterr().out)]
    assert specs == sorted(specs) and len(set(specs)) == 2
    assert {row["scale"] for row in json.loads(main(["--runs-dir", str(runs), "--json"]) or capsys.readouterr().out)
            if row["spec"].startswith("selfgen")} == {"wiring"}  # a rehearsal's scale


def test_show_says_how_to_resume_a_blocked_run_and_not_a_decided_one(team_runs, capsys):
    runs, stores = team_runs
    assert main(["--runs-dir", str(runs), "show", stores["capacity_blocked"].run_id]) == 0
    out = capsys.readouterr().out
    assert "  kind:      capacity_blocked (the service refused capacity" in out
    assert f"  resume:    python -m flows.run {stores['capacity_blocked'].run_meta()['spec_path']} --runs-dir {runs}" in out
    assert main(["--runs-dir", str(runs), "show", stores["decided"].run_id]) == 0
    out = capsys.readouterr().out
    assert "  kind:      decided (reached a verdict)" in out and "resume:" not in out
