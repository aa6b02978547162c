"""End to end: the GS1 rehearsal (`--rehearse`, wiring scale) through every gate on the embedded backend
(issue 4 done-when), run once against a real Prefect server, then checked record by record and as a
person sees it in the Prefect UI.

Records: status and verdict, the validator finds no problem, the decision recomputes from the retained
observations with `flows.decide`, evaluator ids recompute from their provenance, adapter and
initial-output hashes match across arms, and the pictures exist.

Prefect, over the REST API: every artifact of the run is attached to the flow run (progress for each
arm's training and evaluation from their own task runs), keys are per run, nothing holds a file://
address, the evidence index is one artifact; the gate tasks form one chain (each waits on the
previous gate) and each arm's training and evaluation is its own task run under its gate.
In headless Chromium: the pictures of the summary load (natural size > 0) and the progress
artifacts are listed on the run's Artifacts tab. Prints the counts and load times it saw.

One run feeds every check, and the clean decision of test_capacity_e2e.py (tests/e2e/conftest.py). The seed spec without
its revision file is tests/e2e/test_gs1_seed_spec_stops.py.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

from experiment.contract.spec import load_spec
from experiment.report.plots import PIXEL_SIZE
from experiment.stats.evaluation import evaluator_id
from flows.artifacts import keyed

from suite import GS1_SPEC, run_cli


pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]  # a full local run on a loaded 2-core machine
WIRING = load_spec(GS1_SPEC, rehearse=True, rehearsal_scale="wiring")  # the sizes the run below has
STEPS, N_EVAL = WIRING.steps, WIRING.to_dict()["eval"]["n_examples"]
ARMS = ("grpo_gs8", "gs1_kernel")


def load_browser():
    spec = importlib.util.spec_from_file_location("ui_browser", Path(__file__).with_name("browser.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def ui_run(gs1_wiring_rehearsal):
    """The session's one GS1 wiring rehearsal through the CLI, recorded on the real Prefect server
    (tests/e2e/conftest.py; test_capacity_e2e.py takes its decision as the clean one)."""
    return gs1_wiring_rehearsal


@pytest.fixture(scope="module")
def finished_run(ui_run) -> Path:
    return ui_run["run_dir"]


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
    # a rehearsal says it does not test the spec's hypothesis, and its verdict's confidence names that
    assert result["original_hypothesis_tested"] is False and WIRING.base_model in result["tested_instead"]
    assert result["confidence"] == "weak" and "changed experiment" in result["reasoning"]
    # each arm was created from the saved initialization state: one restore, recorded (issue 28)
    for arm in result["initialization_provenance"]["arms"].values():
        assert arm["restore_count"] == len(arm["restores"]) == 1
        assert arm["restores"][0]["loaded_from"] == arm["initialization"]["checkpoint_uri"]


def test_validator_finds_no_problem(finished_run):
    """Nothing fails but what --plan predicts: the correctness pins come from the recorded revision, so
    correctness is unverified, as the exchange grades it (CORR-6); the exit status is therefore 3 (amber)."""
    checked = run_cli("flows.validate", str(finished_run), "--json", timeout=120)
    graded = json.loads(checked.stdout)
    assert checked.returncode == 3 and graded["level"] == "amber" and not graded["problems"], checked.stdout + checked.stderr
    failing = {name: c for name, c in graded["categories"].items() if c["status"] not in ("verified", "not_applicable")}
    assert list(failing) == ["correctness"] and failing["correctness"]["status"] == "unverified", failing
    assert all(issue.startswith("CORR-6") for issue in failing["correctness"]["issues"]), failing


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


def artifacts_of(server, flow_run_id: str) -> list[dict]:
    return server.api("POST", "/artifacts/filter", json={"artifacts": {"flow_run_id": {"any_": [flow_run_id]}}})


def test_the_console_ends_with_the_verdict(ui_run):
    result = json.loads((ui_run["run_dir"] / "result.json").read_text())
    lines = ui_run["stdout"].strip().splitlines()
    assert lines[0] == (f"REHEARSAL (wiring scale, not a result to submit): verdict: {result['verdict']} "
                        f"({result['confidence']} confidence)")
    assert any(line.startswith("effect primary: gs1_kernel \u2212 grpo_gs8 = ") and "margin" in line for line in lines)
    assert any(line == f"RESULT in {ui_run['run_dir'] / 'result.json'}" for line in lines)
    for step in range(1, STEPS + 1):  # a console line per arm step
        assert f"training-gs1-kernel: {step}/{STEPS} " in ui_run["stderr"]
    assert f"evaluation-grpo-gs8: {N_EVAL}/{N_EVAL} (100%)" in ui_run["stderr"]


def test_every_artifact_is_on_the_run_once_and_without_file_urls(prefect_server, ui_run):
    flow_run_id = ui_run["flow_run"]["id"]
    run_id = ui_run["run_dir"].name
    artifacts = artifacts_of(prefect_server, flow_run_id)
    keys = [artifact["key"] for artifact in artifacts]
    print(f"{len(artifacts)} artifacts on the flow run: {sorted(keys)}")
    assert len(keys) == len(set(keys))
    assert all(key and key.endswith(keyed("", run_id)) for key in keys)
    progress = {artifact["key"]: artifact for artifact in artifacts if artifact["type"] == "progress"}
    expected = {keyed(f"training-{arm}", run_id) for arm in ARMS}
    expected |= {keyed(f"evaluation-{label}", run_id) for label in ("base", *ARMS)}
    assert set(progress) == expected
    assert all(artifact["data"] == 100 and artifact["task_run_id"] for artifact in progress.values())
    assert {keyed(what, run_id) for what in ("summary", "gates", "arms", "evidence")} <= set(keys)
    assert not any("file://" in json.dumps(artifact["data"]) for artifact in artifacts)
    summary = next(a for a in artifacts if a["key"] == keyed("summary", run_id))["data"]
    assert summary.count("](data:image/png;base64,") == 3
    everything = prefect_server.api("POST", "/artifacts/filter",  # this run's keys, on any flow run of the server
                                    json={"artifacts": {"key": {"like_": run_id}}, "limit": 200})
    stray = [a["key"] for a in everything if (a["key"] or "").endswith(keyed("", run_id)) and a["flow_run_id"] != flow_run_id]
    assert not stray, f"artifacts of this run outside its flow run: {stray}"


def test_the_graph_is_a_gate_chain_with_per_arm_task_runs(prefect_server, ui_run):
    flow_run_id = ui_run["flow_run"]["id"]
    task_runs = prefect_server.api("POST", "/task_runs/filter",
                                   json={"flow_runs": {"id": {"any_": [flow_run_id]}}, "limit": 200})
    by_id = {run["id"]: run for run in task_runs}
    gates = sorted((run for run in task_runs if not run["task_key"].startswith(("arm_work", "publish_records"))),
                   key=lambda run: run["start_time"])
    arm_runs = {run["name"]: run for run in task_runs if run["task_key"].startswith("arm_work")}
    print(f"{len(task_runs)} task runs: {len(gates)} gates, per-arm {sorted(arm_runs)}")
    for earlier, later in zip(gates, gates[1:]):
        waited = {entry["id"] for entry in later["task_inputs"].get("wait_for", [])}
        assert earlier["id"] in waited, f"{later['name']} does not wait on {earlier['name']}"
    assert set(arm_runs) == {f"train-{arm}" for arm in ARMS} | {f"evaluate-{label}" for label in ("base", *ARMS)}
    for name, run in arm_runs.items():
        (parent,) = [entry["id"] for entry in run["task_inputs"]["__parents__"]]
        assert by_id[parent]["name"].startswith("arm-training" if name.startswith("train") else "evaluation")
        assert run["state_type"] == "COMPLETED"
    train = [arm_runs[f"train-{arm}"] for arm in ARMS]
    assert max(r["start_time"] for r in train) < min(r["end_time"] for r in train)  # side by side


CLICK_TAB = ("(() => { const tab = [...document.querySelectorAll('button, a, [role=tab], li')]"
             ".find(e => e.innerText && e.innerText.trim() === 'Artifacts'); if (tab) tab.click(); return !!tab })()")
PNG_IMAGES = "[...document.images].filter(i => i.src.startsWith('data:image/png'))"


def test_the_flow_run_page_shows_pictures_and_progress(prefect_server, ui_run, tmp_path):
    """The run's Artifacts tab lists the summary alone and first, then the records and the progress of every arm; the summary's
    page shows its pictures (loaded from data URIs, natural size > 0)."""
    browser_module = load_browser()
    flow_run_id = ui_run["flow_run"]["id"]
    run_id = ui_run["run_dir"].name
    summary = next(a for a in artifacts_of(prefect_server, flow_run_id) if a["key"] == keyed("summary", run_id))
    screenshot_dir = Path(os.environ.get("RX_UI_SCREENSHOT_DIR") or tmp_path)
    with browser_module.Browser() as browser:
        page_s = browser.open(f"{prefect_server.url}/runs/flow-run/{flow_run_id}")
        browser.wait_for(CLICK_TAB, timeout=60)
        cards_s = browser.wait_for(f"document.body.innerText.includes({json.dumps(keyed('evaluation-base', run_id))})",
                                   timeout=60)
        text = browser.evaluate("document.body.innerText")
        browser.screenshot(screenshot_dir / "flow-run-artifacts.png")
        summary_s = browser.open(f"{prefect_server.url}/artifacts/artifact/{summary['id']}")
        pictures_s = browser.wait_for(
            f"{PNG_IMAGES}.length >= 3 && {PNG_IMAGES}.every(i => i.complete && i.naturalWidth > 0)", timeout=90)
        sizes = browser.evaluate(f"{PNG_IMAGES}.map(i => [i.naturalWidth, i.naturalHeight])")
        summary_text = browser.evaluate("document.body.innerText")
        browser.screenshot(screenshot_dir / "summary-artifact.png")
    print(f"flow-run page {page_s:.1f} s + artifact cards {cards_s:.1f} s; summary page {summary_s:.1f} s + "
          f"{len(sizes)} pictures loaded in {pictures_s:.1f} s {sizes}; screenshots in {screenshot_dir}")
    assert all(width > 0 and height > 0 for width, height in sizes)
    lines = [line.strip() for line in text.splitlines()]
    flow_start = lines.index("Flow run")  # the tab's two sections; the header's "15 Task runs" is another line
    task_start = lines.index("Task runs", flow_start)
    flow_section, task_section = lines[flow_start:task_start], lines[task_start:]
    assert [line for line in flow_section if line.endswith(keyed("", run_id))] == [keyed("summary", run_id)]
    for key in [keyed(f"training-{arm}", run_id) for arm in ARMS] + [keyed(f"evaluation-{arm}", run_id) for arm in ARMS]:
        assert key in task_section
    assert {keyed(what, run_id) for what in ("gates", "arms", "evidence")} <= set(task_section)
    assert "file://" not in text and "file://" not in summary_text
    assert "Verdict:" in summary_text and "margin" in summary_text
