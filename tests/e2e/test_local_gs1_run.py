"""End to end: the GS1 rehearsal (`--rehearse`) through every gate on the embedded backend (issue 4 done-when).

One uninterrupted run is checked record by record: status and verdict, the validator finds no
problem, the decision recomputes from the retained observations with `flows.decide`, evaluator
ids recompute from their provenance, adapter and initial-output hashes match across arms, and
the pictures exist. The seed GS1 spec without its revision file stops before any arm trains.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from experiment.stats.evaluation import evaluator_id
from experiment.report.plots import PIXEL_SIZE

from suite import GS1_SPEC, REPO_ROOT, only_run_dir, run_cli


pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    runs_dir = tmp_path_factory.mktemp("runs")
    done = run_cli("flows.run", str(GS1_SPEC), "--rehearse", "--rehearsal-scale", "wiring", "--runs-dir", str(runs_dir))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return only_run_dir(runs_dir)


def test_run_succeeds_with_a_verdict_and_every_record(finished_run):
    result = json.loads((finished_run / "result.json").read_text())
    assert result["status"] == "succeeded"
    assert result["verdict"] in ("supported", "refuted")
    assert result["confidence"] in ("strong", "weak")
    assert set(result["completed_arms"]) == {"grpo_gs8", "gs1_kernel"}
    for record in ("correctness_preflight", "initialization_provenance", "feasibility", "activation_calibration",
                   "evaluation", "decision"):
        assert result.get(record), f"RESULT lacks {record}"
    assert result["validation"]["status"] == "passed" and result["validation"]["problem_count"] == 0
    assert result["rehearsal"]["rehearsal"] is True and result["summary"].startswith("REHEARSAL")
    assert result["deviations"] and all(d["reason"].startswith("rehearsal: ") for d in result["deviations"])


def test_validator_finds_no_problem(finished_run):
    checked = run_cli("flows.validate", str(finished_run), timeout=120)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_decision_recomputes_from_the_retained_observations(finished_run):
    result = json.loads((finished_run / "result.json").read_text())
    observations = finished_run / "evidence" / result["decision"]["observations_file"]["name"]
    decided = run_cli("flows.decide", str(GS1_SPEC), str(observations), timeout=120)
    assert decided.returncode == 0, decided.stderr
    recomputed = json.loads(decided.stdout)
    primary = recomputed["criteria"][0]
    assert primary["effect"] == pytest.approx(result["effect"], abs=1e-12)
    assert [primary["lower"], primary["upper"]] == pytest.approx(result["ci"], abs=1e-12)
    assert recomputed["verdict"] == result["verdict"]


def test_evaluator_ids_recompute_and_hashes_match_across_arms(finished_run):
    result = json.loads((finished_run / "result.json").read_text())
    for stored_id, provenance in result["evaluation"]["evaluators"].items():
        assert evaluator_id(provenance) == stored_id
        assert isinstance(provenance["items"]["ids"], list) and len(provenance["items"]["ids"]) == 48  # the wiring scale's eval size
    arms = result["initialization_provenance"]["arms"]
    assert len({arm["initialization"]["adapter_sha256"] for arm in arms.values()}) == 1
    assert len({arm["initial_output"]["output_sha256"] for arm in arms.values()}) == 1
    assert all(check["actual_family"] == "adamw" and not check["mismatches"]
               for arm in arms.values() for check in arm["optimizer_checks"])


def test_pictures_are_written(finished_run):
    import matplotlib.image as mpimg

    pictures = sorted((finished_run / "plots").glob("*.png"))
    assert {p.name for p in pictures} >= {"training-mean-reward.png", "paired-effect.png", "arm-accuracy.png"}
    for picture in pictures:
        height, width = mpimg.imread(picture).shape[:2]
        assert (width, height) == PIXEL_SIZE


def test_seed_spec_without_its_revision_file_stops_before_any_arm_trains(tmp_path):
    """The GS1 spec copied alone keeps its correctness revisions UNRESOLVED ("No full run happens while
    correctness_preflight is unresolved"): it stops at a gate and no arm trains."""
    alone = tmp_path / "spec" / GS1_SPEC.name
    alone.parent.mkdir()
    shutil.copy(GS1_SPEC, alone)
    runs = tmp_path / "runs"
    done = run_cli("flows.run", str(alone), "--rehearse", "--runs-dir", str(runs), timeout=1500)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stdout + done.stderr
    run_dir = only_run_dir(runs)
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "failed" and "verdict" not in result and not result["completed_arms"]
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert not any(e["event"] == "gate" and e["gate"] == "arm_training" for e in events)
    failed = [e["gate"] for e in events if e["event"] == "gate" and e.get("status") == "failed"]
    assert failed == ["correctness_preflight"], failed
    request = result["spec_revision_request"]  # what to pin, with the values the pipeline would pin
    assert {pin["field"].rsplit(".", 1)[1] for pin in request["pins"]} == {"baseline_revision", "reference_revision"}
    assert all(pin["proposed"] and "UNRESOLVED" not in pin["proposed"] for pin in request["pins"])
    assert result["correctness_preflight"]["status"] == "unverified"


def test_seed_spec_on_the_embedded_backend_stops_at_a_gate(tmp_path):
    alone = tmp_path / "spec" / GS1_SPEC.name
    alone.parent.mkdir()
    shutil.copy(GS1_SPEC, alone)
    runs = tmp_path / "runs"
    done = run_cli("flows.run", str(alone), "--runs-dir", str(runs), timeout=1500)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stdout + done.stderr
    result = json.loads((only_run_dir(runs) / "result.json").read_text())
    assert result["status"] == "failed" and "verdict" not in result
    assert result["outcome_reason"] == "incomplete_execution"
    assert "embedded/tiny-arith instead of Qwen/Qwen3.5-2B" in result["summary"]
    assert any(d["field"] == "model" for d in result["deviations"])
