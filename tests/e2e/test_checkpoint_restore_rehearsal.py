"""experiment_features.checkpoint_restore (issue 46, deliverable 3): a designed mid-run save and restore of every
RL arm and of every SFT training run, proven by the restoration evidence. Before: refused at intake ("true is not
supported"; then, for training_type sft, "true is supported for training_type rl only").

The GS1 spec with the feature true is rehearsed at the wiring scale on the embedded backend (stock tinker SDK over
real HTTP): every trained arm records one restore more than its creation, loaded from its own state saved after
the step before its midpoint, with the optimizer verified from the server's response before the next update, and
the grader verifies the restoration category (and every other category as --plan predicted). The SFT side (every
training run of every LR grid saved and restored at its midpoint, graded whole against --plan's prediction) is
proven by tests/integration/test_sft_arm_training_resume.py[checkpoint_restore], which runs the TriMuon variant to
its verdict: one TriMuon rehearsal fewer in the suite.
"""

from __future__ import annotations

import json

import pytest
from spec_variants import variant, write_variant
from suite import GS1_WIRING_ARGS, only_run_dir, run_cli, run_main

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def test_every_arm_is_saved_and_restored_mid_run_and_the_restore_is_graded(tmp_path, prefect_server):
    spec = write_variant(variant("checkpoint_restore-true", "gs1"), tmp_path)
    planned = run_main("flows.run", str(spec), "--plan", *GS1_WIRING_ARGS)
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
    graded = json.loads(run_main("flows.validate", str(run_dir), "--spec", str(spec), "--json").stdout)["categories"]
    assert graded["restoration"]["status"] == "verified", graded["restoration"]
