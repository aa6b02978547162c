"""Report builders: markdown summary, gate and arm tables, file links, built from a real run directory."""

from __future__ import annotations

import json

import pytest
from test_validation import BASELINE, ITEM_IDS, TREATMENT, build_gs1_run

from experiment.gates import GateVerdict
from experiment.plots import arm_scores_png
from experiment.report import (
    arm_metric_rows,
    arm_score_points,
    gate_table_rows,
    result_markdown,
    run_file_links,
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
    assert cells[5].split()[0] == criterion["status"]


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


def test_run_file_links_cover_result_tables_evidence_and_pictures(run):
    picture = arm_scores_png([{"arm": "a", "value": 0.5, "n": 10}], run.run_dir / "plots" / "arm-scores.png")
    links = run_file_links(run.run_dir)
    keys = [key for key, _, _ in links]
    paths = {path for _, path, _ in links}
    assert len(keys) == len(set(keys))
    assert all(key == key.lower() and " " not in key and "." not in key for key in keys)
    assert (run.run_dir / "result.json").resolve() in paths
    assert (run.run_dir / "tables" / "gates.parquet").resolve() in paths
    assert picture.resolve() in paths
    manifest = run.read_manifest()["files"]
    for entry in manifest:
        assert (run.run_dir / "evidence" / entry["name"]).resolve() in paths


def test_arm_score_points_carry_the_item_count(run):
    result = run.read_result()
    points = arm_score_points(result)
    assert sorted(point["arm"] for point in points) == sorted([BASELINE, TREATMENT])
    for point in points:
        assert point["n"] == len(ITEM_IDS)
        assert point["value"] == result["metrics"]["arms"][point["arm"]]["accuracy"]
    assert arm_score_points(result, metric="nll") == []
