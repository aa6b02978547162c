"""Report builders: markdown summary, gate and arm tables, file links, built from a real run directory."""

from __future__ import annotations

import json

import pytest
from records import BASELINE, ITEM_IDS, TREATMENT, build_gs1_run

from experiment.gates import GateVerdict
from experiment.report.plots import arm_scores_png
from experiment.report.summary import (
    arm_metric_rows,
    arm_score_points,
    gate_table_rows,
    closing_lines,
    effect_in_words,
    evidence_index_markdown,
    evidence_index_rows,
    gate_line,
    plan_lines,
    result_markdown,
    subtraction,
)


@pytest.fixture
def run(tmp_path):
    return build_gs1_run(tmp_path / "runs")


def plan_of(run):
    return json.loads((run.run_dir / "evidence" / "execution-plan.json").read_text())


def test_result_markdown_has_status_verdict_and_decision_table(run):
    result = run.read_result()
    text = result_markdown(result, plan_of(run))
    assert text.startswith(f"# {plan_of(run)['spec_title']}")
    assert f"**Status:** {result['status']}" in text
    assert f"**Verdict:** {result['verdict']} ({result['confidence']} confidence)" in text
    criterion = result["decision"]["criteria"][0]
    table_rows = [line for line in text.splitlines() if line.startswith(f"| {criterion['id']} |")]
    assert len(table_rows) == 1
    cells = [cell.strip() for cell in table_rows[0].strip("|").split("|")]
    assert float(cells[1]) == pytest.approx(criterion["effect"], rel=1e-3)
    assert float(cells[2]) == pytest.approx(criterion["lower"], rel=1e-3)
    assert float(cells[3]) == pytest.approx(criterion["upper"], rel=1e-3)
    assert float(cells[4]) == pytest.approx(criterion["margin"])
    expected_claim = {"passes": "shown", "fails": "ruled", "unsettled": "not"}[criterion["status"]]
    assert cells[5].split()[0] == expected_claim


def test_result_markdown_of_a_stopped_run_has_no_decision(run):
    stopped = {
        "status": "failed",
        "summary": "Stopped at the probe.",
        "outcome_reason": "incomplete_execution",
        "completed_arms": [],
    }
    text = result_markdown(stopped, None)
    assert "**Outcome reason:** incomplete_execution" in text
    assert "Verdict" not in text and "## Decision" not in text
    assert "Completed arms: none" in text


def test_gate_table_rows_from_events_and_from_the_gates_table(run):
    from_events = gate_table_rows([e for e in run.read_events() if e["event"] == "gate"])
    from_table = gate_table_rows(run.read_table("gates"))
    assert from_events == from_table
    assert [row["gate"] for row in from_events][:2] == ["spec_intake", "preflight_probe"]
    intake = from_events[0]
    assert intake["status"] == "passed" and intake["measured"] == "deviations=0" and intake["duration"] == "1.5 s"


def test_gate_table_rows_from_gate_verdicts_shorten_measured_values():
    verdict = GateVerdict(
        gate="activation_gate",
        status="failed",
        reasons=["pilot_mean_reward 0.05 below 0.1"],
        measured={"pilot_mean_reward": 0.0512345, "values": {"a": 1}, "note": "x" * 300},
        duration_s=12.34,
    )
    (row,) = gate_table_rows([verdict])
    assert row["measured"].startswith("pilot_mean_reward=0.05123")
    assert len(row["measured"]) <= 120 and row["duration"] == "12.3 s"
    assert row["reasons"] == "pilot_mean_reward 0.05 below 0.1"


def test_arm_metric_rows(run):
    result = run.read_result()
    rows = arm_metric_rows(result)
    assert [row["arm"] for row in rows] == sorted([BASELINE, TREATMENT])
    for row in rows:
        assert row["completed"] is True
        assert row["accuracy"] == result["metrics"]["arms"][row["arm"]]["accuracy"]


def test_evidence_index_lists_every_file_once_without_file_urls(run):
    picture = arm_scores_png([{"arm": "a", "value": 0.5, "n": 10}], run.run_dir / "plots" / "arm-scores.png")
    rows = evidence_index_rows(run.run_dir)
    files = [row["file"] for row in rows]
    assert len(files) == len(set(files))
    assert {"result.json", "tables/gates.parquet", str(picture.relative_to(run.run_dir))} <= set(files)
    manifest = run.read_manifest()["files"]
    for entry in manifest:
        row = next(row for row in rows if row["file"] == f"evidence/{entry['name']}")
        assert entry["sha256"].startswith(row["sha256"]) and row["sha256"]
    text = evidence_index_markdown(run.run_dir)
    assert "file://" not in text and text.count("| `") == len(rows)


def test_summary_embeds_pictures_as_data_uris(run):
    picture = arm_scores_png([{"arm": "a", "value": 0.5, "n": 10}], run.run_dir / "plots" / "arm-scores.png")
    text = result_markdown(run.read_result(), plan_of(run), [picture])
    assert "![arm-scores](data:image/png;base64," in text and "file://" not in text


def test_effect_in_words_follows_the_one_sided_rule():
    unsettled = {"lower": -0.123, "upper": 0.02, "margin": -0.03}
    assert effect_in_words(unsettled).startswith("non-inferiority not shown: lower bound \u22120.123 is below the margin \u22120.03")
    assert effect_in_words({"lower": -0.01, "upper": 0.05, "margin": -0.03}).startswith("non-inferiority shown")
    assert effect_in_words({"lower": -0.2, "upper": -0.05, "margin": -0.03}).startswith("non-inferiority ruled out")
    assert effect_in_words({"lower": 0.01, "upper": 0.05, "margin": 0.0}).startswith("superiority shown")
    assert subtraction({"arm_weights": {"grpo_gs8": -1, "gs1_kernel": 1}}) == "gs1_kernel \u2212 grpo_gs8"


def test_closing_lines_state_verdict_effect_grades_and_paths(run):
    grade = {"categories": {"decision": {"status": "green", "issues": []},
                            "restoration": {"status": "unverified", "issues": ["no restore measured"]}}}
    result = {**run.read_result(), "grade": grade}
    lines = closing_lines(result, run.run_dir, [run.run_dir / "plots" / "paired-effect.png"])
    assert lines[0] == f"verdict: {result['verdict']} ({result['confidence']} confidence)"
    criterion = result["decision"]["criteria"][0]
    assert lines[1].startswith(f"effect {criterion['id']}: {subtraction(criterion)} = ")
    assert effect_in_words(criterion) in lines[1]
    assert "grade: decision: green; restoration: unverified" in lines
    assert f"RESULT in {run.run_dir / 'result.json'}" in lines and lines[-1].startswith("plots: ")


def test_a_rehearsals_first_closing_line_says_rehearsal(run):
    """The first closing line is the one a console reader (and the flow's final state message) shows:
    a rehearsal's says so before its verdict, a run of the spec as written does not."""
    result = run.read_result()
    assert not closing_lines(result, run.run_dir)[0].startswith("REHEARSAL")
    rehearsed = {**result, "rehearsal": {"rehearsal": True, "scale": "wiring"}}
    first = closing_lines(rehearsed, run.run_dir)[0]
    assert first == (f"REHEARSAL (wiring scale, not a result to submit): verdict: {result['verdict']} "
                     f"({result['confidence']} confidence)")
    stopped = {**rehearsed, "status": "failed", "outcome_reason": "incomplete_execution"}
    stopped.pop("verdict")
    assert closing_lines(stopped, run.run_dir)[0].startswith("REHEARSAL (wiring scale, not a result to submit): no verdict")


def test_gate_lines_are_short_and_plan_lines_name_the_gates(run):
    long = GateVerdict(gate="feasibility_pilot", status="passed", reasons=["x" * 500], duration_s=3.2)
    line = gate_line(long)
    assert len(line) <= 111 and line.startswith("gate feasibility_pilot: passed in 3.2 s (")
    plan = plan_of(run)
    lines = plan_lines(plan)
    to_run = [g["name"] for g in plan["gates"] if g["blocks"]]
    assert lines[0].endswith(" \u2192 ".join(to_run))
    assert plan_lines(plan, projected_seconds=125)[-1].startswith("time estimate: 2 min 05 s")


def test_arm_score_points_carry_the_item_count(run):
    result = run.read_result()
    points = arm_score_points(result)
    assert sorted(point["arm"] for point in points) == sorted([BASELINE, TREATMENT])
    for point in points:
        assert point["n"] == len(ITEM_IDS)
        assert point["value"] == result["metrics"]["arms"][point["arm"]]["accuracy"]
    assert arm_score_points(result, metric="nll") == []


def test_a_rehearsals_summary_starts_with_its_banner_above_the_verdict(run):
    """The UI summary's first line under the title says REHEARSAL (issue 49): before, the only such line was
    RESULT.summary's own prefix, printed below the pictures."""
    result = {**run.read_result(), "rehearsal": {"rehearsal": True, "scale": "wiring"},
              "tested_instead": "embedded/tiny-arith on local arithmetic word problems"}
    lines = result_markdown(result, plan_of(run)).splitlines()
    assert lines[2].startswith("> **REHEARSAL (wiring scale): not a result to submit.**")
    assert "embedded/tiny-arith on local arithmetic word problems" in lines[2]
    assert lines.index(lines[2]) < next(i for i, line in enumerate(lines) if line.startswith("**Verdict:**"))
    assert not any("REHEARSAL" in line for line in result_markdown(run.read_result(), plan_of(run)).splitlines()[:3])


def test_a_verdict_without_a_decision_object_says_how_it_was_decided(run):
    """TriMuon: `Verdict: refuted` beside decision not_applicable and an effect without interval is explained."""
    result = {**run.read_result(), "decision": None, "verdict": "refuted", "effect": -0.0123, "margin": 0.0, "ci": None}
    plan = {**plan_of(run), "spec_revision": {"supplied": ["verdict_rule"]}}
    text = result_markdown(result, plan)
    how = next(line for line in text.splitlines() if line.startswith("**How it was decided:**"))
    assert "no decision_rule" in how and "not_applicable" in how and "revision file's verdict_rule" in how
    assert "effect -0.0123 against margin 0" in how and "no interval" in how
    assert "How it was decided" not in result_markdown(run.read_result(), plan_of(run))  # a decision object: its table says it


def test_the_summary_gives_the_grade_level_with_what_would_settle_an_open_category(run):
    grade = {"categories": {"decision": {"status": "verified", "issues": []},
                            "correctness": {"status": "unverified", "issues": ["CORR-6: pins from the revision file."]}},
             "problems": []}
    text = result_markdown({**run.read_result(), "grade": grade}, plan_of(run))
    assert "**Grade level:** AMBER: nothing found wrong, but not everything could be verified (correctness)" in text
    assert "- correctness would be settled by: pin the correctness revisions in the spec itself" in text
