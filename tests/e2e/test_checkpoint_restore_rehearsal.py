"""experiment_features.checkpoint_restore (issue 46, deliverable 3): a designed mid-run save and restore of every
RL arm and of every SFT training run, proven by the restoration evidence. Before: refused at intake ("true is not
supported"; then, for training_type sft, "true is supported for training_type rl only").

The GS1 spec with the feature true is rehearsed at the wiring scale on the embedded backend (stock tinker SDK over
real HTTP): every trained arm records one restore more than its creation, loaded from its own state saved after
the step before its midpoint, with the optimizer verified from the server's response before the next update, and
the grader verifies the restoration category (and every other category as --plan predicted).
"""

from __future__ import annotations

import json

import pytest
from spec_variants import variant, write_variant
from suite import GS1_WIRING_ARGS, only_run_dir, run_cli

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def test_every_arm_is_saved_and_restored_mid_run_and_the_restore_is_graded(tmp_path, prefect_server):
    spec = write_variant(variant("checkpoint_restore-true", "gs1"), tmp_path)
    planned = run_cli("flows.run", str(spec), "--plan", *GS1_WIRING_ARGS)
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    runs = tmp_path / "runs"
    done = run_cli("flows.run", str(spec), *GS1_WIRING_ARGS, "--runs-dir", str(runs),
                   env_extra=prefect_server.cli_env, timeout=1500)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    run_dir = only_run_dir(runs)
    result = json.loads((run_dir / "result.json").read_text())
    steps = json.loads((run_dir / "evidence" / "rehearsal-spec.json").read_text())["steps"]
    midpoint = max(1, steps // 2)  # the restore comes before this 0-based step, from the state saved after the last
    for arm in (a["name"] for a in plan["arms"] if a["trained"]):
        entry = result["initialization_provenance"]["arms"][arm]
        designed = [r for r in entry["restores"] if r["loaded_from"].endswith(f"/{arm}-step-{midpoint:04d}")]
        assert len(designed) == 1 and designed[0]["with_optimizer_state"] is True, entry["restores"]
        assert entry["restore_count"] == len(entry["restores"])
        checks = [c for c in entry["optimizer_checks"] if c["after_restore"] == designed[0]["restore"]]
        assert len(checks) == 1 and checks[0]["before_next_update"] is True
        assert (run_dir / "evidence" / designed[0]["evidence_ref"]).is_file()
    graded = json.loads(run_cli("flows.validate", str(run_dir), "--spec", str(spec), "--json").stdout)["categories"]
    assert graded["restoration"]["status"] == "verified", graded["restoration"]


def test_every_sft_run_is_saved_and_restored_mid_run_and_the_restore_is_graded(tmp_path, prefect_server):
    """The TriMuon spec with the feature true, rehearsed at the wiring scale: every training run (each LR of each
    arm's grid) records its creation and one restore from its own state saved at its midpoint step, with the
    optimizer state verified from the server's response, its arm restating its runs' restores; the grader verifies
    the restoration category, and every category grades as --plan predicted."""
    spec = write_variant(variant("checkpoint_restore-true", "trimuon"), tmp_path)
    planned = run_cli("flows.run", str(spec), "--plan", *GS1_WIRING_ARGS)
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    runs = tmp_path / "runs"
    done = run_cli("flows.run", str(spec), *GS1_WIRING_ARGS, "--runs-dir", str(runs),
                   env_extra=prefect_server.cli_env, timeout=1500)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    run_dir = only_run_dir(runs)
    result = json.loads((run_dir / "result.json").read_text())
    midpoint = max(1, plan["training_runs"][0]["steps"] // 2)
    arms = result["initialization_provenance"]["arms"]
    for arm in (a["name"] for a in plan["arms"] if a["trained"]):
        runs_of_arm = [run for run in plan["training_runs"] if run["arm"] == arm]
        for run in runs_of_arm:
            entry = arms[arm]["runs"][f"{run['lr']:g}"]
            slug = run["name"].replace("@lr=", "-lr")
            assert [r["loaded_from"].endswith(f"/{slug}-step-{midpoint:04d}") for r in entry["restores"]] == [False, True]
            designed = entry["restores"][1]
            assert designed["with_optimizer_state"] is True and entry["restore_count"] == 2
            check = next(c for c in entry["optimizer_checks"] if c["after_restore"] == 2)
            assert check["before_next_update"] is True and check["mismatches"] == [] and check["source"] == "server_response"
            assert (run_dir / "evidence" / designed["evidence_ref"]).is_file()
        assert arms[arm]["restore_count"] == 2 * len(runs_of_arm) == len(arms[arm]["restores"])
    graded = json.loads(run_cli("flows.validate", str(run_dir), "--spec", str(spec), "--json").stdout)["categories"]
    assert graded["restoration"]["status"] == "verified", graded["restoration"]
    assert {name: grade["status"] for name, grade in graded.items()} == \
        {name: grade["grade"] for name, grade in plan["predicted_grades"].items()}
