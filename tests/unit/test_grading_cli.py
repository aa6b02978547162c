"""python -m flows.validate (the grader CLI), the predicted grades of flows.run --plan, and the
grade shown in the run summary."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from experiment.grading.predict import predict_grades
from experiment.contract.plan import build_plan
from experiment.report.summary import result_markdown
from experiment.contract.spec import load_spec

ROOT = Path(__file__).resolve().parents[2]
CATEGORIES = ["evaluator", "decision", "restoration", "correctness", "feasibility", "generation_audit"]


def cli(module: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, check=False)


def test_bare_result_json_grades_green_then_amber_when_a_category_is_unknown(graded_record, tmp_path):
    result, _ = graded_record("paired")
    path = tmp_path / "result.json"
    path.write_text(json.dumps(result))
    green = cli("flows.validate", str(path))
    assert green.returncode == 0, green.stdout + green.stderr
    lines = green.stdout.splitlines()
    assert [line.split(":")[0] for line in lines if not line.startswith(" ")][:6] == CATEGORIES
    as_json = json.loads(cli("flows.validate", str(path), "--json").stdout)
    assert set(as_json) == {"categories", "problems", "level", "settle"} and as_json["level"] == "green"
    assert list(as_json["categories"]) == CATEGORIES
    assert all(set(entry) >= {"status", "issues"} for entry in as_json["categories"].values())

    result["feasibility"]["config"]["steps"] = 41  # neither effective_config's nor the plan's 40
    path.write_text(json.dumps(result))
    amber = cli("flows.validate", str(path))
    assert amber.returncode == 3, amber.stdout  # amber: unknown, no category invalid, no problem
    assert amber.stdout.splitlines()[-2].startswith("AMBER: ") and "feasibility would be settled by: " in amber.stdout
    assert "feasibility: unknown" in amber.stdout and "FEAS-2: Re-projection required: steps changed" in amber.stdout


def test_grading_against_a_given_spec(graded_record, tmp_path):
    result, _ = graded_record("best_lr")
    path = tmp_path / "result.json"
    path.write_text(json.dumps(result))
    graded = cli("flows.validate", str(path), "--spec", "specs/trimuon_vs_dimuon_no_robots.json", "--json")
    assert graded.returncode == 3, graded.stdout  # amber: its correctness pins come from the recorded revision
    graded = json.loads(graded.stdout)
    assert graded["level"] == "amber" and list(graded["settle"]) == ["correctness"]
    assert "revision file" in graded["settle"]["correctness"]  # CORR-6's hint: what would settle it
    categories = graded["categories"]
    assert [name for name, c in categories.items() if c["status"] not in ("verified", "not_applicable")] == ["correctness"]
    assert categories["correctness"]["status"] == "unverified"
    assert any("unverified until its own spec carries them" in issue for issue in categories["correctness"]["issues"])


@pytest.mark.parametrize("content", [None, "{not json", "[1, 2]"])
def test_unreadable_input_is_one_line_and_exit_2(tmp_path, content):
    path = tmp_path / "result.json"
    if content is not None:
        path.write_text(content)
    run = cli("flows.validate", str(path if content is not None else tmp_path / "nowhere"))
    assert run.returncode == 2
    assert len(run.stderr.strip().splitlines()) == 1 and "Traceback" not in run.stderr


def test_a_key_written_twice_is_refused_as_unreadable_input(graded_record, tmp_path):
    """result.json carrying "verdict" twice (the forged one first, the honest one last) graded as the honest record:
    Python's json keeps the last value, a first-wins reader the first. Ambiguous input is refused (exit 2), in a
    bare result.json and a run directory alike."""
    from experiment.grading import grade_path
    from experiment.grading.grade import GradeInputError

    result, _ = graded_record("paired")
    text = json.dumps(result, indent=2)
    path = tmp_path / "result.json"
    path.write_text(text.replace("{\n", '{\n  "verdict": "supported",\n', 1))
    assert json.loads(path.read_text())["verdict"] == result["verdict"]
    with pytest.raises(GradeInputError, match="verdict"):
        grade_path(path)
    run = cli("flows.validate", str(path))
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1 and "Traceback" not in run.stderr
    assert "'verdict'" in run.stderr


def test_plan_lists_predicted_grades_for_each_exposure():
    plan = cli("flows.run", "specs/gs1_kernel_vs_grpo_gsm8k.json", "--plan", "--exposure", "production")
    assert plan.returncode == 0, plan.stderr
    predicted = json.loads(plan.stdout)["predicted_grades"]
    assert list(predicted) == CATEGORIES
    assert predicted["restoration"]["grade"] == "unverified"
    assert "does not expose the optimizer config" in predicted["restoration"]["reason"]
    assert predicted["correctness"]["grade"] == "unverified"  # the spec's revisions are UNRESOLVED
    embedded = predict_grades(build_plan(load_spec(ROOT / "specs/selfgen_tasks_vs_gsm8k.json")), "embedded")
    assert embedded["restoration"]["grade"] == "verified"
    assert embedded["generation_audit"]["grade"] == "verified"
    assert embedded["correctness"]["grade"] == "not_applicable"
    trimuon = predict_grades(build_plan(load_spec(ROOT / "specs/trimuon_vs_dimuon_no_robots.json")), "embedded")
    assert trimuon["decision"]["grade"] == "not_applicable"  # only the recorded revision has a decision_rule
    assert trimuon["correctness"]["grade"] == "unverified"  # its pins come from the recorded revision (CORR-6)
    assert "exchange grades correctness unverified" in trimuon["correctness"]["reason"]


def test_the_stored_grade_is_shown_in_the_run_summary(graded_record):
    from experiment.grading import grade_record

    result, _ = graded_record("paired")
    result["grade"] = grade_record(result).record()
    text = result_markdown(result, None)
    assert "## Grade" in text and "| restoration | verified |" in text


@pytest.mark.parametrize("where", ["result.json", "events.jsonl"])
def test_a_deeply_nested_record_is_one_line_and_exit_2(graded_record, tmp_path, where):
    from experiment.grading import grade_path

    deep = '{"a":' * 200_000 + "1" + "}" * 200_000
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    result, _ = graded_record("paired")
    (run_dir / "result.json").write_text(deep if where == "result.json" else json.dumps(result))
    (run_dir / "events.jsonl").write_text(deep + "\n" if where == "events.jsonl" else "")
    with pytest.raises(RecursionError):  # attack first: what the CLI called gave a RecursionError traceback
        grade_path(run_dir)
    run = cli("flows.validate", str(run_dir))
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.strip().splitlines() == [f"error: {run_dir}: a record nests too deeply to read (a RESULT is a "
                                               "few levels deep); it was not written by this pipeline"]


def test_record_text_in_the_grade_reaches_the_terminal_escaped(graded_record, tmp_path, monkeypatch, capsys):
    import flows.validate as validate_cli
    from experiment.grading import grade_path

    result, _ = graded_record("paired")
    path = tmp_path / "result.json"
    path.write_text(json.dumps(result))

    def grade_quoting_record_text(path, spec=None):  # FAKE: a problem line quoting hostile record text raw
        grade = grade_path(path, spec=spec)
        grade.problems.append("summary says \x1b[2J\u202eall clear")
        return grade

    monkeypatch.setattr(validate_cli, "grade_path", grade_quoting_record_text)
    with monkeypatch.context() as weak:  # attack first: printed raw, the escape sequence reaches the terminal
        weak.setattr(validate_cli, "printable", lambda text: text)
        validate_cli.main([str(path)])
        assert "\x1b[2J" in capsys.readouterr().out
    validate_cli.main([str(path)])
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out
    assert "  summary says \\x1b[2J\\u202eall clear" in out


def _sparse(path: Path, size: int) -> Path:
    """A file of `size` bytes that takes no disk (a hole): only its size is real."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as handle:
        handle.truncate(size)
    return path


@pytest.mark.parametrize("where", ["result.json", "events.jsonl", "evidence/predictions.jsonl"])
def test_a_file_past_its_cap_is_refused_before_it_is_read(graded_record, tmp_path, monkeypatch, where):
    from experiment.grading import grade, grade_path, input_limits

    result, _ = graded_record("paired")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "result.json").write_text(json.dumps(result))
    read: list[Path] = []
    real_read_text = Path.read_text

    def recording_read_text(self, *args, **kwargs):
        read.append(self)
        return real_read_text(self, *args, **kwargs)

    with monkeypatch.context() as weak:  # attack first: without the check, a file past the cap is read whole
        weak.setattr(grade, "oversized_input", lambda path, run_dir: None)
        weak.setattr(input_limits, "MAX_RESULT_BYTES", 1000)
        weak.setattr(Path, "read_text", recording_read_text)
        grade_path(run_dir / "result.json")
        assert run_dir / "result.json" in read and (run_dir / "result.json").stat().st_size > 1000
    cap = input_limits.MAX_RESULT_BYTES if where == "result.json" else input_limits.MAX_RUN_FILE_BYTES
    path = _sparse(run_dir / where, cap + 1)
    run = cli("flows.validate", str(run_dir))
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.strip().splitlines() == [
        f"error: {path} is {cap + 1:,} bytes; the grader reads at most {cap // input_limits.MIB} MiB for "
        f"{'a RESULT' if where == 'result.json' else 'a file of a run directory'} (more than the pipeline writes), "
        "so it was not read"]


def test_a_file_at_its_cap_is_read(graded_record, tmp_path, monkeypatch):
    from experiment.grading import grade_path, input_limits

    result, _ = graded_record("paired")
    path = tmp_path / "result.json"
    path.write_text(json.dumps(result))
    monkeypatch.setattr(input_limits, "MAX_RESULT_BYTES", path.stat().st_size)
    assert grade_path(path).categories  # graded, not refused


def test_events_are_read_line_by_line_as_the_whole_text_splits_them(tmp_path):
    import random

    from experiment.grading.run_dir import read_event_lines

    rng = random.Random(47)
    pieces = ['{"event": "a"}', '{"event": "b"}', "[1]", "{torn", "", " ", "\n", "\r", "\r\n", "\x0c", "\x1c",
              "\u2028", "\x85", "é", "\n"]
    for _ in range(200):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        (tmp_path / "events.jsonl").write_bytes(text.encode("utf-8") + (b"\xff" if rng.random() < 0.3 else b""))
        lines = (tmp_path / "events.jsonl").read_text(encoding="utf-8", errors="replace").splitlines()
        events, not_json, not_objects = read_event_lines(tmp_path)
        expected_events, expected_not_json, expected_not_objects = [], [], []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                expected_not_json.append(number)
                continue
            (expected_events.append(value) if isinstance(value, dict) else expected_not_objects.append(number))
        assert (events, not_json, not_objects) == (expected_events, expected_not_json, expected_not_objects)
