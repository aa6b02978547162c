"""End to end: the local TriMuon spec through every gate on the embedded backend (issue 6 done-when).

One uninterrupted run is checked record by record: status succeeded with a verdict, 6 training
runs, a loss_eval whose values recompute from its totals (every run on the same tokens and
examples), identical adaptation hashes within the pair, the optimizer family of every run
verified from a server response, the correctness record under the plan's tolerances, and the
validator finding no problem. Its pictures (held-out NLL per arm and LR, training curves, step time)
are in plots/ and load in the summary artifact in headless Chromium.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
from pathlib import Path

import pytest

from experiment.sft.adaptation import adaptation_batch_hash
from experiment.stats.evaluation import evaluator_id
from experiment.sft.loss_eval import check
from experiment.contract.spec import load_spec

from suite import REPO_ROOT
from suite import run_cli

TRIMUON_SEED = REPO_ROOT / "specs" / "trimuon_vs_dimuon_no_robots.json"
REHEARSED = load_spec(TRIMUON_SEED, rehearse=True, rehearsal_scale="wiring")
STEPS = REHEARSED.steps  # per training run, as rehearsed
N_EVAL = REHEARSED.to_dict()["eval"]["n_examples"]  # held-out conversations, as rehearsed
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cli_run(wiring_rehearsal):
    """The session's TriMuon wiring rehearsal (tests/e2e/conftest.py), on the session's Prefect server."""
    run = wiring_rehearsal("trimuon")
    return run["run_dir"], run["stdout"] + run["stderr"]


@pytest.fixture(scope="module")
def finished_run(cli_run) -> Path:
    return cli_run[0]


@pytest.fixture(scope="module")
def result(finished_run) -> dict:
    return json.loads((finished_run / "result.json").read_text())


ARMS = ("trimuon", "dimuon_lite")
LRS = ("0.02", "0.04", "0.08")
RUNS = {f"{arm}@lr={lr}" for arm in ARMS for lr in LRS}


def test_run_succeeds_with_a_verdict_and_six_runs(result):
    assert result["status"] == "succeeded"
    assert result["verdict"] in ("supported", "refuted") and result["confidence"] == "weak"
    assert "decision" not in result  # the spec has no decision_rule (DEC-1, GEN-7)
    assert set(result["completed_arms"]) == set(ARMS)  # arms, never runs
    assert set(result["metrics"]["arms"]) == set(ARMS)
    for arm in ARMS:
        per_run = result["metrics"]["arms"][arm]["runs"]
        assert set(per_run) == set(LRS)
        for metrics in per_run.values():
            assert metrics["steps_completed"] == STEPS and metrics["median_optim_step_seconds"] > 0
        assert result["metrics"]["arms"][arm]["selected_lr"] in (0.02, 0.04, 0.08)
    assert result["validation"]["problem_count"] == 0


def test_every_run_trains_and_is_scored_in_its_own_task_run(cli_run):
    """Issue 16: each training run (arm x LR) and each held-out scoring is a task run of its own, with
    its own progress, so the UI shows them side by side under their gate."""
    console = cli_run[1]
    for run in sorted(RUNS):
        slug = run.replace("@lr=", "-lr")
        assert f"Task run 'train-{slug}'" in console and f"training-{slug}: {STEPS}/{STEPS} (100%)" in console
        assert f"Task run 'evaluate-{slug}'" in console and f"evaluation-{slug}: {N_EVAL}/{N_EVAL} (100%)" in console
    assert "Task run 'evaluate-base'" in console and f"evaluation-base: {N_EVAL}/{N_EVAL} (100%)" in console


def test_loss_eval_recomputes_from_its_totals(result):
    record = result["loss_eval"]
    assert record["aggregation"] == "token_mean" and set(record["arms"]) == set(ARMS)
    assert check(record) == []
    for arm, entry in record["arms"].items():
        assert set(entry["runs"]) == set(LRS)
        assert entry["value"] == entry["runs"][entry["selected_run"]]["value"]
        assert entry["value"] == min(run["value"] for run in entry["runs"].values())
        for run in [entry, *entry["runs"].values()]:
            assert math.isclose(run["value"], run["nll_sum"] / run["n_tokens"], rel_tol=1e-6)
            assert run["n_examples"] + run["n_empty"] == N_EVAL  # exactly eval.n_examples conversations


def test_loss_eval_totals_recompute_from_the_retained_per_example_rows(finished_run, result):
    for arm, arm_entry in result["loss_eval"]["arms"].items():
        for label, entry in arm_entry["runs"].items():
            name = f"predictions-{arm}-lr{label}.jsonl"
            rows = [json.loads(line) for line in (finished_run / "evidence" / name).read_text().splitlines()]
            assert len(rows) == N_EVAL and {row["run"] for row in rows} == {f"{arm}@lr={label}"}
            assert {row["arm"] for row in rows} == {arm}
            assert sum(row["prediction"]["nll_sum"] for row in rows) == pytest.approx(entry["nll_sum"], rel=1e-12)
            assert sum(row["prediction"]["n_tokens"] for row in rows) == entry["n_tokens"]


def test_adaptation_hashes_are_identical_within_the_pair(result):
    manifests = result["adaptation_manifests"]
    assert {m["arm"] for m in manifests} == set(ARMS)
    assert {run for m in manifests for run in m["runs"]} == RUNS
    assert len({m["pair"] for m in manifests}) == 1
    assert len({adaptation_batch_hash(m["adaptation_batch_ids"]) for m in manifests}) == 1
    assert all(len(m["adaptation_batch_ids"]) == STEPS and m["warmup_batches"] == 0 for m in manifests)


def test_every_run_optimizer_is_verified_from_a_server_response(result):
    arms = result["initialization_provenance"]["arms"]
    runs = {f"{arm}@lr={label}": entry for arm, arm_entry in arms.items() for label, entry in arm_entry["runs"].items()}
    assert set(runs) == RUNS
    for name, entry in runs.items():
        # created from the saved initialization state: the creation check and the check after restore 1
        assert [c["after_restore"] for c in entry["optimizer_checks"]] == [0, 1] and entry["restore_count"] == 1
        family = "trimuon" if name.startswith("trimuon") else "dimuon"
        for check_entry in entry["optimizer_checks"]:
            assert check_entry["source"] == "server_response" and check_entry["actual_family"] == family
            assert check_entry["mismatches"] == [] and check_entry["not_exposed_keys"] == []
            assert check_entry["actual_config"]["learning_rate"] == float(name.split("=")[1])
    for arm, arm_entry in arms.items():  # every run's load of the initialization state is a restore of its arm
        assert arm_entry["restore_count"] == len(arm_entry["restores"]) == len(arm_entry["runs"])
    assert len({entry["initialization"]["adapter_sha256"] for entry in runs.values()}) == 1
    assert len({entry["initial_output"]["output_sha256"] for entry in runs.values()}) == 1


def test_correctness_record_meets_the_plan_tolerances(result):
    (path,) = result["correctness_preflight"]["paths"]
    assert path["id"] == "trimuon_optimizer_update"
    # the rehearsal's tolerances: the written analysis at the rehearsed LRs and rank, fixed before the run
    rehearsed = load_spec(TRIMUON_SEED, rehearse=True, rehearsal_scale="wiring").to_dict()
    tolerances = rehearsed["correctness_preflight"]["paths"][0]["tolerances"]
    assert set(path["errors"]) == set(tolerances)  # every trained LR, both checks
    assert path["update_learning_rates"] == [0.02, 0.04, 0.08]
    assert path["measured_through"]["families_reported"]["treatment@lr=0.02"] == "trimuon"
    for key, errors in path["errors"].items():
        if key.startswith("baseline_update"):
            assert errors["max_abs_error"] == 0.0  # treatment disabled == dimuon-lite: one code path on this backend
            assert path["parity_sides"][key]["same_code"] is True
        tolerance = tolerances[key]
        assert errors["max_abs_error"] <= tolerance["atol"] + tolerance["rtol"] * errors["reference_max_abs"]
        assert errors["cosine_similarity"] >= tolerance["min_cosine"]
    assert [p["learning_rate"] for p in path["lr_scaling"]] == [0.02, 0.04, 0.08]


def test_evaluator_is_frozen_with_explicit_items(result):
    for stored_id, provenance in result["evaluation"]["evaluators"].items():
        assert evaluator_id(provenance) == stored_id
        assert len(provenance["items"]["ids"]) == N_EVAL


def test_validator_finds_no_problem_and_leaves_only_correctness_unverified(finished_run):
    """Nothing fails but what --plan predicts: the embedded backend's baseline check compares a file with
    itself (CORR-3, same code), and the correctness pins come from the recorded revision, so correctness is
    unverified as the exchange grades it (CORR-6); the exit status is therefore 3 (amber)."""
    checked = run_cli("flows.validate", str(finished_run), "--json", timeout=120)
    graded = json.loads(checked.stdout)
    assert checked.returncode == 3 and graded["level"] == "amber" and graded["problems"] == [], checked.stdout + checked.stderr
    correctness = graded["categories"].pop("correctness")
    issues = correctness["issues"]
    assert correctness["status"] == "unverified"
    assert any(issue.startswith("CORR-3:") and "same code" in issue for issue in issues), issues
    assert all((issue.startswith("CORR-3:") and "same code" in issue) or issue.startswith("CORR-6") for issue in issues), issues
    assert {c["status"] for c in graded["categories"].values()} <= {"verified", "not_applicable"}


def test_the_undeployed_fork_is_a_deviation_and_the_selection_names_the_steps_that_ran(finished_run, result):
    assert any("deployed fork" in d["original"] and d["field"] == "model" for d in result["deviations"])
    evidence = {entry["name"]: entry for entry in result["evidence"]["files"]}
    verdict = json.loads(evidence["verdict-criteria.json"]["content"])
    assert f"after the {STEPS} steps" in verdict["selection"] and "step 80" not in verdict["selection"]


SFT_PICTURES = ["heldout-nll-by-lr.png", "step-time.png", "training-train-nll.png"]


def test_sft_pictures_are_in_plots_and_load_in_the_summary(prefect_server, finished_run, tmp_path):
    """A TriMuon run once left plots/ empty and a summary without images (the pictures read only the RL
    table and the paired decision): now its own three, and the summary's images load in the browser."""
    import matplotlib.image as mpimg

    from experiment.report.plots import PIXEL_SIZE
    from flows.artifacts import keyed

    assert sorted(p.name for p in (finished_run / "plots").glob("*.png")) == SFT_PICTURES
    for name in SFT_PICTURES:
        assert mpimg.imread(finished_run / "plots" / name).shape[:2] == (PIXEL_SIZE[1], PIXEL_SIZE[0])
    spec = importlib.util.spec_from_file_location("ui_browser", Path(__file__).with_name("browser.py"))
    browser = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(browser)
    (flow_run,) = prefect_server.flow_runs_of(finished_run.parent)
    screenshot = Path(os.environ.get("RX_UI_SCREENSHOT_DIR") or tmp_path) / "summary-sft.png"
    sizes = browser.summary_pictures(prefect_server, flow_run["id"], keyed("summary", finished_run.name), screenshot,
                                     expected=len(SFT_PICTURES))
    print(f"SFT summary: {len(sizes)} pictures loaded {sizes}; screenshot {screenshot}")
    assert len(sizes) == len(SFT_PICTURES) and all(width > 0 and height > 0 for width, height in sizes)
