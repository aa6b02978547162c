"""End to end: the local TriMuon spec through every gate on the embedded backend (issue 6 done-when).

One uninterrupted run is checked record by record: status succeeded with a verdict, 6 training
runs, a loss_eval whose values recompute from its totals (every run on the same tokens and
examples), identical adaptation hashes within the pair, the optimizer family of every run
verified from a server response, the correctness record under the plan's tolerances, and the
validator finding no problem.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from experiment.adaptation import adaptation_batch_hash
from experiment.evaluation import evaluator_id
from experiment.loss_eval import check

from conftest import REPO_ROOT
from test_local_gs1_run import only_run_dir, run_cli

LOCAL_TRIMUON = REPO_ROOT / "specs" / "local" / "trimuon_vs_dimuon_local.json"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    runs_dir = tmp_path_factory.mktemp("runs")
    done = run_cli("flows.run", str(LOCAL_TRIMUON), "--runs-dir", str(runs_dir))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return only_run_dir(runs_dir)


@pytest.fixture(scope="module")
def result(finished_run) -> dict:
    return json.loads((finished_run / "result.json").read_text())


RUNS = {f"{arm}@lr={lr:g}" for arm in ("trimuon", "dimuon_lite") for lr in (0.02, 0.04, 0.08)}


def test_run_succeeds_with_a_verdict_and_six_runs(result):
    assert result["status"] == "succeeded"
    assert result["verdict"] in ("supported", "refuted") and result["confidence"] == "weak"
    assert set(result["completed_arms"]) == RUNS | {"trimuon", "dimuon_lite"}
    for run in RUNS:
        metrics = result["metrics"]["arms"][run]
        assert metrics["steps_completed"] == 20 and metrics["median_optim_step_seconds"] > 0
    for arm in ("trimuon", "dimuon_lite"):
        assert result["metrics"]["arms"][arm]["selected_lr"] in (0.02, 0.04, 0.08)
    assert result["validation"]["problem_count"] == 0


def test_loss_eval_recomputes_from_its_totals(result):
    record = result["loss_eval"]
    assert record["aggregation"] == "token_mean" and set(record["arms"]) == RUNS
    assert check(record) == []
    for entry in record["arms"].values():
        assert math.isclose(entry["value"], entry["nll_sum"] / entry["n_tokens"], rel_tol=1e-6)
        assert entry["n_examples"] + entry["n_empty"] == 64  # exactly eval.n_examples conversations


def test_loss_eval_totals_recompute_from_the_retained_per_example_rows(finished_run, result):
    for run, entry in result["loss_eval"]["arms"].items():
        name = f"predictions-{run.replace('@lr=', '-lr')}.jsonl"
        rows = [json.loads(line) for line in (finished_run / "evidence" / name).read_text().splitlines()]
        assert len(rows) == 64 and {row["run"] for row in rows} == {run}
        assert sum(row["prediction"]["nll_sum"] for row in rows) == pytest.approx(entry["nll_sum"], rel=1e-12)
        assert sum(row["prediction"]["n_tokens"] for row in rows) == entry["n_tokens"]


def test_adaptation_hashes_are_identical_within_the_pair(result):
    manifests = result["adaptation_manifests"]
    assert {m["arm"] for m in manifests} == RUNS
    assert len({m["pair"] for m in manifests}) == 1
    assert len({adaptation_batch_hash(m["adaptation_batch_ids"]) for m in manifests}) == 1
    assert all(len(m["adaptation_batch_ids"]) == 20 and m["warmup_batches"] == 0 for m in manifests)


def test_every_run_optimizer_is_verified_from_a_server_response(result):
    arms = result["initialization_provenance"]["arms"]
    runs = {name: entry for arm in arms.values() for name, entry in arm["runs"].items()}
    assert set(runs) == RUNS
    for name, entry in runs.items():
        (check_entry,) = entry["optimizer_checks"]
        family = "trimuon" if name.startswith("trimuon") else "dimuon"
        assert check_entry["source"] == "server_response" and check_entry["actual_family"] == family
        assert check_entry["mismatches"] == [] and check_entry["not_exposed_keys"] == []
        assert check_entry["actual_config"]["learning_rate"] == float(name.split("=")[1])
    assert len({entry["initialization"]["adapter_sha256"] for entry in runs.values()}) == 1
    assert len({entry["initial_output"]["output_sha256"] for entry in runs.values()}) == 1


def test_correctness_record_meets_the_plan_tolerances(result):
    (path,) = result["correctness_preflight"]["paths"]
    assert path["id"] == "trimuon_optimizer_update"
    assert set(path["errors"]) == {"reference_update", "baseline_update"}
    assert path["errors"]["baseline_update"]["max_abs_error"] == 0.0  # treatment disabled == dimuon-lite
    reference = path["errors"]["reference_update"]
    assert reference["max_abs_error"] <= 1e-6 + 1e-5 * reference["reference_max_abs"]
    assert reference["cosine_similarity"] >= 0.99999
    assert [p["learning_rate"] for p in path["lr_scaling"]] == [0.02, 0.04, 0.08]


def test_evaluator_is_frozen_with_explicit_items(result):
    for stored_id, provenance in result["evaluation"]["evaluators"].items():
        assert evaluator_id(provenance) == stored_id
        assert len(provenance["items"]["ids"]) == 64


def test_validator_finds_no_problem(finished_run):
    checked = run_cli("flows.validate", str(finished_run), timeout=120)
    assert checked.returncode == 0, checked.stdout + checked.stderr
