"""TRACE-1..8 (experiment/grading/traces.py) and CORR-3 on the embedded backend, on the grading tests'
in-process records (conftest.graded_record: the self-generated spec's record, "paired", and the TriMuon
best-LR record, "best_lr"), given the leaves a run writes where those records leave them out.

Each rule passes the honest leaf and finds the edited one; the run-directory parts read `ctx.events` as the
grader hands them over. tests/e2e/test_grader_traces.py runs the tamper corpus on the wiring records.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import pytest

from experiment.grading import grade_record, traces
from experiment.grading.common import GradeContext
from experiment.grading.evidence import EvidenceAccess
from grading_contexts.general import attested_context, attested_messages
from leaves import rewrite_evidence


_ctx, _messages = attested_context, attested_messages


def _statuses(check, result, **kwargs):
    return {issue.status for issue in check(_ctx(result, **kwargs))}


def _files(result):
    return {entry["name"]: entry for entry in result["evidence"]["files"]}


def _add_file(result, name, text, kind="metrics"):
    result["evidence"]["files"].append({"name": name, "kind": kind, "encoding": "utf-8", "content": text,
                                        "sha256": hashlib.sha256(text.encode()).hexdigest()})


# ---------------------------------------------------------------------------- TRACE-1, RL arms


@pytest.fixture
def rl_record(graded_record):
    """The self-generated record with each trained arm's training numbers as the RL step posts them."""
    result, _ = graded_record("paired")
    plan = _ctx(result).plan
    for arm in plan.trained_arms:
        for copy_ in (result["metrics"]["arms"][arm.name], result["evidence"]["per_arm_metrics"][arm.name]):
            copy_.update(steps_completed=arm.steps, learning_rate=arm.lr, first_step_mean_reward=0.25,
                         final_step_mean_reward=0.5, mean_train_reward=0.375, median_optimizer_step_seconds=0.02)
    return result


def _rl_events(result, drop=None):
    events = [{"event": "run_created", "ts": "2026-12-07T10:00:00+00:00"}]
    for arm in _ctx(result).plan.trained_arms:
        rewards = [0.25] + [0.375] * (arm.steps - 2) + [0.5] if arm.steps > 1 else [0.25]
        events += [{"event": "training_step", "ts": "2026-12-07T10:01:00+00:00", "arm": arm.name, "step": step,
                    "mean_reward": rewards[step], "optim_seconds": 0.02} for step in range(arm.steps)]
    return [e for e in events if e is not drop]


def test_rl_arm_metrics_are_the_plans(rl_record):
    assert _messages(traces.TRACE_1, rl_record) == []
    wrong = copy.deepcopy(rl_record)
    wrong["metrics"]["arms"]["rl_selfgen"]["steps_completed"] += 5
    wrong["metrics"]["arms"]["rl_gsm8k"]["learning_rate"] *= 10
    found = _messages(traces.TRACE_1, wrong)
    assert len(found) == 2 and "steps_completed" in found[0] + found[1] and "learning_rate" in found[0] + found[1]


def test_an_unfinished_arm_is_not_held_to_the_plans_steps(rl_record):
    rl_record["metrics"]["arms"]["rl_selfgen"]["steps_completed"] = 1
    rl_record["status"] = "failed"
    assert _messages(traces.TRACE_1, rl_record) == []


def test_a_step_count_must_be_an_integer(rl_record):
    rl_record["metrics"]["arms"]["rl_selfgen"]["steps_completed"] = 1.5
    rl_record["status"] = "failed"
    assert _messages(traces.TRACE_1, rl_record) == ["metrics.arms.rl_selfgen.steps_completed 1.5 is no step count"]


def test_rl_rewards_and_timings_recompute_from_the_training_step_events(rl_record, tmp_path):
    events = _rl_events(rl_record)
    assert _messages(traces.TRACE_1, rl_record, events=events, run_dir=tmp_path) == []
    assert _messages(traces.TRACE_1, rl_record, events=events) == []  # a bare record has no events to read
    raised = copy.deepcopy(rl_record)
    raised["metrics"]["arms"]["rl_gsm8k"]["mean_train_reward"] = 0.9
    raised["metrics"]["arms"]["rl_gsm8k"]["median_optimizer_step_seconds"] = 0.002
    found = _messages(traces.TRACE_1, raised, events=events, run_dir=tmp_path)
    assert len(found) == 2 and all("recomputed from the training_step events" in m for m in found)


def test_a_dropped_training_step_event_is_seen(rl_record, tmp_path):
    events = _rl_events(rl_record)
    last = max(i for i, e in enumerate(events) if e.get("arm") == "rl_selfgen")
    found = _messages(traces.TRACE_1, rl_record, events=events[:last] + events[last + 1:], run_dir=tmp_path)
    assert any("events.jsonl logged" in m for m in found)


def test_training_step_events_must_be_steps_from_zero(rl_record, tmp_path):
    events = [e if e.get("arm") != "rl_selfgen" else {**e, "step": e["step"] + 1} for e in _rl_events(rl_record)]
    found = _messages(traces.TRACE_1, rl_record, events=events, run_dir=tmp_path)
    assert any("are not steps 0.." in m for m in found)


def test_a_kernel_bandwidth_is_that_of_the_last_pilot_log(rl_record):
    rl_record["metrics"]["arms"]["rl_selfgen"]["kernel_bandwidth"] = 1.0
    assert _messages(traces.TRACE_1, rl_record) == [
        "metrics.arms.rl_selfgen.kernel_bandwidth 1.0: no activation pilot log names a bandwidth"]
    for bandwidth in ("0.5", "1.0"):
        _add_file(rl_record, f"activation-pilot-bw{bandwidth}.jsonl", "{}\n")
    assert _messages(traces.TRACE_1, rl_record) == []
    rl_record["metrics"]["arms"]["rl_selfgen"]["kernel_bandwidth"] = 0.5
    assert _messages(traces.TRACE_1, rl_record) == [
        "metrics.arms.rl_selfgen.kernel_bandwidth 0.5 is not 1.0 (the bandwidth of activation-pilot-bw1.0.jsonl)"]


# ---------------------------------------------------------------------------- TRACE-1, SFT runs


@pytest.fixture
def sft_record(graded_record):
    """The TriMuon record with its step rows, run metrics and manifests as the SFT step writes them."""
    result, _ = graded_record("best_lr")
    plan = _ctx(result).plan
    rows, arms = [], {}
    for index, run in enumerate(plan.training_runs):
        ids = [f"step{step:04d}-{'ab' * 8}" for step in range(run.steps)]
        run_rows = [{"run": run.name, "step": step, "batch_id": ids[step], "loss_sum": 30.0 - step - index,
                     "n_tokens": 10, "train_nll_token_mean": (30.0 - step - index) / 10, "optim_seconds": 0.03,
                     "forward_backward_seconds": 0.5, "grad_norm": 1.0, "model_id": f"s:train:{index}"}
                    for step in range(run.steps)]
        rows += run_rows
        arms.setdefault(run.arm, {"runs": {}, "runs_completed": 0, "lr_grid": []})
        arms[run.arm]["runs"][f"{run.lr:g}"] = {
            "optimizer_family": result["initialization_provenance"]["arms"][run.arm]["optimizer_checks"][0]["requested"]["family"],
            "learning_rate": run.lr, "steps_completed": run.steps, "median_optim_step_seconds": 0.03,
            "mean_optim_step_seconds": 0.03, "first_step_train_nll_token_mean": run_rows[0]["train_nll_token_mean"],
            "last_step_train_nll_token_mean": run_rows[-1]["train_nll_token_mean"]}
        arms[run.arm]["runs_completed"] += 1
        arms[run.arm]["lr_grid"].append(run.lr)
    rewrite_evidence(result, "sft-steps.jsonl", "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    result["metrics"]["arms"].update(arms)
    result["completed_arms"] = list(arms)  # the SFT step completes an arm once its whole grid trained
    for checkpoint in result["evidence"]["checkpoints"]:
        index = [run.name for run in plan.training_runs].index(checkpoint["arm"])
        old = checkpoint["uri"]
        checkpoint["uri"] = old.replace(old.split("/")[2], f"s:train:{index}")
    result["adaptation_manifests"] = [
        {"arm": arm, "pair": "lr_grid_comparison", "warmup_batches": 0,
         "adaptation_batch_ids": [r["batch_id"] for r in rows if r["run"] == names[0]],
         "adaptation_batch_hash": "", "runs": names}
        for arm, names in {a: [r.name for r in plan.training_runs if r.arm == a] for a in arms}.items()]
    return result


def _trimuon_run(result, label=None):
    runs = result["metrics"]["arms"]["trimuon"]["runs"]
    return runs[label or next(iter(runs))]


def test_sft_run_metrics_recompute_from_sft_steps(sft_record):
    assert _messages(traces.TRACE_1, sft_record) == []
    run = _trimuon_run(sft_record)
    run.update(mean_optim_step_seconds=0.003, first_step_train_nll_token_mean=1.0, steps_completed=40)
    found = _messages(traces.TRACE_1, sft_record)
    assert len(found) == 4, found  # steps against the plan and against the rows, the mean time, the first NLL
    assert sum(f"recomputed from {traces.SFT_STEPS}" in m for m in found) == 2


def test_sft_run_settings_are_the_plans(sft_record):
    run = _trimuon_run(sft_record)
    run.update(learning_rate=1.0, optimizer_family="adamw")
    found = _messages(traces.TRACE_1, sft_record)
    assert len(found) == 2 and all("(the plan)" in m for m in found)


def test_an_lr_grid_and_its_completed_runs_are_the_plans(sft_record):
    arm = sft_record["metrics"]["arms"]["trimuon"]
    arm["lr_grid"] = [0.01, *arm["lr_grid"]]
    arm["runs_completed"] += 1
    found = _messages(traces.TRACE_1, sft_record)
    assert len(found) == 2 and "lr_grid" in found[0] and "runs_completed" in found[1]


def test_an_lr_grid_is_stated_in_the_plans_order(sft_record):
    """issue 45: a grid listed in another order than the plan's (its runs are restored in plan order) is not the plan's."""
    arm = sft_record["metrics"]["arms"]["trimuon"]
    arm["lr_grid"] = list(reversed(arm["lr_grid"]))
    found = _messages(traces.TRACE_1, sft_record)
    assert len(found) == 1 and "lr_grid" in found[0] and "in its order" in found[0]


def test_each_grid_run_states_the_plans_seed(sft_record):
    assert _messages(traces.TRACE_1, sft_record) == []
    for run in sft_record["metrics"]["arms"]["trimuon"]["runs"].values():
        run["seed"] = 0
    assert _messages(traces.TRACE_1, sft_record) == []
    _trimuon_run(sft_record)["seed"] = 3
    found = _messages(traces.TRACE_1, sft_record)
    assert len(found) == 1 and ".seed 3" in found[0] and "(the plan)" in found[0]


def test_an_arms_all_runs_median_is_the_median_of_its_runs_medians(sft_record):
    arm = sft_record["metrics"]["arms"]["trimuon"]
    arm["median_optim_step_seconds_all_runs"] = 0.03  # every run's steps took 0.03 s
    assert _messages(traces.TRACE_1, sft_record) == []
    arm["median_optim_step_seconds_all_runs"] = 0.015
    found = _messages(traces.TRACE_1, sft_record)
    assert len(found) == 1 and "median_optim_step_seconds_all_runs" in found[0]


def test_sft_steps_lists_each_runs_rows_in_the_order_they_ran(sft_record):
    """issue 45: a log is written as the steps run; its rows reordered (every number kept) are not that log."""
    rows = [json.loads(line) for line in _files(sft_record)[traces.SFT_STEPS]["content"].splitlines()]
    rewrite_evidence(sft_record, traces.SFT_STEPS, "".join(json.dumps(r, sort_keys=True) + "\n" for r in reversed(rows)))
    found = _messages(traces.TRACE_1, sft_record)
    assert len(found) == 1 and "not in the order its steps ran" in found[0], found


def test_heldout_numbers_of_a_run_are_loss_evals(sft_record):
    label = next(iter(_trimuon_run(sft_record) and sft_record["metrics"]["arms"]["trimuon"]["runs"]))
    sft_record["loss_eval"]["arms"]["trimuon"] = {"runs": {label: {"token_mean": 3.0, "example_mean": 3.1,
                                                                    "n_tokens": 60}}}
    _trimuon_run(sft_record, label).update(heldout_nll_token_mean=3.0, heldout_nll_example_mean=3.1, heldout_n_tokens=60)
    assert _messages(traces.TRACE_1, sft_record) == []
    _trimuon_run(sft_record, label)["heldout_nll_token_mean"] = 2.0
    assert _messages(traces.TRACE_1, sft_record)[0].endswith("is not 3.0 (loss_eval)")


def test_a_steps_train_nll_is_its_loss_over_its_tokens(sft_record):
    rows = [json.loads(line) for line in _files(sft_record)[traces.SFT_STEPS]["content"].splitlines()]
    rows[0]["loss_sum"] += 5.0
    rewrite_evidence(sft_record, traces.SFT_STEPS, "".join(json.dumps(r) + "\n" for r in rows))
    assert ["loss_sum / n_tokens" in m for m in _messages(traces.TRACE_1, sft_record)] == [True]


def test_a_steps_train_nll_without_its_loss_is_reported(sft_record):
    rows = [json.loads(line) for line in _files(sft_record)[traces.SFT_STEPS]["content"].splitlines()]
    del rows[0]["loss_sum"]
    rewrite_evidence(sft_record, traces.SFT_STEPS, "".join(json.dumps(r) + "\n" for r in rows))
    assert ["without the loss_sum and n_tokens" in m for m in _messages(traces.TRACE_1, sft_record)] == [True]


def test_sft_rows_are_their_training_step_events(sft_record, tmp_path):
    rows = [json.loads(line) for line in _files(sft_record)[traces.SFT_STEPS]["content"].splitlines()]
    events = [{"event": "training_step", "ts": "2026-12-07T10:00:00+00:00",
               **{k: v for k, v in row.items() if k != "model_id"}} for row in rows]
    assert _messages(traces.TRACE_1, sft_record, events=events, run_dir=tmp_path) == []
    events[1]["forward_backward_seconds"] = 5.0
    assert _messages(traces.TRACE_1, sft_record, events=events, run_dir=tmp_path) == [
        f"{traces.SFT_STEPS}: {rows[1]['run']} step 1: forward_backward_seconds differ from its training_step event"]
    found = _messages(traces.TRACE_1, sft_record, events=events[1:], run_dir=tmp_path)
    assert any("events.jsonl logged" in m for m in found)


# ---------------------------------------------------------------------------- TRACE-2, final checkpoints


def test_a_final_checkpoint_is_saved_by_its_training_client_under_its_name(graded_record):
    result, _ = graded_record("paired")
    assert _messages(traces.TRACE_2, result) == []
    renamed, moved = copy.deepcopy(result), copy.deepcopy(result)
    renamed["evidence"]["checkpoints"][0]["uri"] += "-again"
    moved["evidence"]["checkpoints"][0]["uri"] = moved["evidence"]["checkpoints"][0]["uri"].replace("s:train:", "t:train:")
    assert ["is not named" in m for m in _messages(traces.TRACE_2, renamed)] == [True]
    assert ["was not saved by its training client" in m for m in _messages(traces.TRACE_2, moved)] == [True]


def test_an_sft_runs_checkpoint_is_saved_by_the_client_of_its_step_rows(sft_record):
    assert _messages(traces.TRACE_2, sft_record) == []
    first = sft_record["evidence"]["checkpoints"][0]
    first["uri"] = first["uri"].replace("s:train:0", "s:train:5")
    assert ["was not saved by its training client 's:train:0'" in m for m in _messages(traces.TRACE_2, sft_record)] == [True]


def test_a_succeeded_run_lists_one_final_checkpoint_per_trained_arm(graded_record):
    result, _ = graded_record("paired")
    result["evidence"]["checkpoints"] = result["evidence"]["checkpoints"][:1]
    assert ["final checkpoints of" in m for m in _messages(traces.TRACE_2, result)] == [True]


def test_a_run_directorys_checkpoints_are_the_logged_ones(graded_record, tmp_path):
    result, _ = graded_record("paired")
    events = [{"event": "checkpoint", "ts": "2026-12-07T10:00:00+00:00", **c} for c in result["evidence"]["checkpoints"]]
    assert _messages(traces.TRACE_2, result, events=events, run_dir=tmp_path) == []
    assert ["not the checkpoints events.jsonl logged" in m
            for m in _messages(traces.TRACE_2, result, events=events[1:], run_dir=tmp_path)] == [True]


# ---------------------------------------------------------------------------- TRACE-3, restores


def _grid(result):
    """TriMuon's arm as an LR-grid arm: its runs' entries, the arm restating their restores."""
    arm = result["initialization_provenance"]["arms"]["trimuon"]
    restore = arm["restores"][0]
    labels = [f"{run.lr:g}" for run in _ctx(result).plan.training_runs if run.arm == "trimuon"]
    arm["runs"] = {label: {"restore_count": 1, "restores": [{**restore, "at": f"2026-01-01T00:00:0{i}+00:00"}]}
                   for i, label in enumerate(labels)}
    arm["restores"] = [{**run["restores"][0], "restore": n, "run": f"trimuon@lr={label}"}
                       for n, (label, run) in enumerate(arm["runs"].items(), 1)]
    arm["restore_count"] = len(labels)
    return arm


def test_an_lr_grid_arm_restates_its_runs_restores_in_plan_order(graded_record):
    result, _ = graded_record("best_lr")
    arm = _grid(result)
    assert _messages(traces.TRACE_3, result) == []
    arm["restores"] = [arm["restores"][1], arm["restores"][0], *arm["restores"][2:]]
    for number, restore in enumerate(arm["restores"], 1):
        restore["restore"] = number
    found = _messages(traces.TRACE_3, result)  # (the swapped creations also go back in time: a second finding)
    assert ["not its runs' restores in plan order" in m for m in found].count(True) == 1


def _restored_mid_run(arm):
    """checkpoint_restore on an LR-grid arm: every run created first (the restoration preflight), then each run in
    turn restored mid-run from its own saved state (the sweep); the arm restates its runs' restores in plan order."""
    for i, (label, run) in enumerate(arm["runs"].items()):
        run["restores"].append({**run["restores"][0], "restore": 2, "with_optimizer_state": True,
                                "method": "create_training_client_from_state_with_optimizer",
                                "loaded_from": f"tinker://arms/weights/trimuon-lr{label}-step-0001",
                                "at": f"2026-01-01T00:01:0{i}+00:00"})
        run["restore_count"] = 2
    names = {restore["run"].split("@lr=")[1]: restore["run"] for restore in arm["restores"]}
    arm["restores"] = [{**restore, "restore": number, "run": name}
                       for number, (name, restore) in enumerate(
                           ((names[label], r) for label, run in arm["runs"].items() for r in run["restores"]), 1)]
    arm["restore_count"] = len(arm["restores"])
    return arm


def test_an_lr_grid_arm_whose_runs_are_restored_mid_run_keeps_each_runs_restores_in_time(graded_record):
    """Restated in plan order, the arm's restores go back in time (the next run's creation precedes this run's
    mid-run restore): the order in time is each run's. Before, TRACE-3 read the arm's list as one client's and
    graded this honest record invalid."""
    result, _ = graded_record("best_lr")
    arm = _restored_mid_run(_grid(result))
    assert _messages(traces.TRACE_3, result) == []
    label, run = next(iter(arm["runs"].items()))
    run["restores"][1]["at"] = arm["restores"][1]["at"] = "2025-12-31T00:00:00+00:00"  # restored before its creation
    assert _messages(traces.TRACE_3, result) == [
        "arm trimuon: restores are not in the order they happened (a later restore is earlier)",
        f"arm trimuon run {label}: restores are not in the order they happened (a later restore is earlier)"]


def test_an_lr_grid_arms_runs_are_created_in_plan_order(graded_record):
    """The runs of an LR grid start in plan order, so their first restores (each run's creation) never go back in
    time, with or without a mid-run restore. Before, TRACE-3 read the arm's restores run by run only: the first
    run's creation moved past the others' (in the arm's copy and the run's, each run holding one restore) passed."""
    for mid_run in (False, True):
        result, _ = graded_record("best_lr")
        arm = _grid(result)
        if mid_run:
            _restored_mid_run(arm)
        assert _messages(traces.TRACE_3, result) == []
        label, run = next(iter(arm["runs"].items()))
        run["restores"][0]["at"] = arm["restores"][0]["at"] = "2026-01-01T00:00:59+00:00"  # after the next creations
        if mid_run:  # still before its own mid-run restore: the run's own order holds
            assert run["restores"][0]["at"] < run["restores"][1]["at"]
        assert _messages(traces.TRACE_3, result) == [
            "arm trimuon: restores are not in the order they happened (a later restore is earlier)"]


def test_an_lr_grid_arms_restore_count_is_its_runs_sum(graded_record):
    result, _ = graded_record("best_lr")
    arm = _grid(result)
    arm["restore_count"] -= 1
    assert ["is not the sum of its runs'" in m for m in _messages(traces.TRACE_3, result)] == [True]


def _restoration_events(result, start="2026-01-01T00:00:00+00:00", step="2026-01-01T00:00:05+00:00"):
    arms = result["initialization_provenance"]["arms"]
    return [{"event": "run_created", "ts": start},
            {"event": "gate", "gate": "restoration_preflight", "ts": start, "measured": {
                "init_checkpoint": next(iter(arms.values()))["initialization"]["checkpoint_uri"],
                "output_sha256": {a: e["initial_output"]["output_sha256"] for a, e in arms.items()}}},
            *({"event": "training_step", "ts": step, "arm": arm, "step": 0} for arm in arms),
            {"event": "gate", "gate": "decision", "ts": "2026-01-01T00:10:00+00:00"}]


def test_a_run_directorys_restores_lie_within_the_run_before_the_first_step(graded_record, tmp_path):
    result, _ = graded_record("paired")
    events = _restoration_events(result)
    assert _messages(traces.TRACE_3, result, events=events, run_dir=tmp_path) == []
    early, late = copy.deepcopy(result), copy.deepcopy(result)
    early["initialization_provenance"]["arms"]["rl_gsm8k"]["restores"][0]["at"] = "2025-01-01T00:00:00+00:00"
    late["initialization_provenance"]["arms"]["rl_gsm8k"]["restores"][0]["at"] = "2026-01-01T00:00:06+00:00"
    assert ["outside the run's events" in m for m in _messages(traces.TRACE_3, early, events=events, run_dir=tmp_path)] \
        == [True]
    assert ["after its first training step" in m
            for m in _messages(traces.TRACE_3, late, events=events, run_dir=tmp_path)] == [True]


def test_a_retried_runs_new_creation_restore_precedes_its_restart(graded_record, tmp_path):
    """A run that crashed and started over from the initialization state has a second creation restore after its
    first attempt's steps, before its restart's step 0; a restore time without a zone is UTC."""
    result, _ = graded_record("paired")
    events = _restoration_events(result)
    events.append({"event": "training_step", "ts": "2026-01-01T00:00:08+00:00", "arm": "rl_gsm8k", "step": 0})
    arm = result["initialization_provenance"]["arms"]["rl_gsm8k"]
    arm["restores"].append({**arm["restores"][0], "restore": 2, "at": "2026-01-01T00:00:07"})
    assert _messages(traces.TRACE_3, result, events=events, run_dir=tmp_path) == []


def test_a_run_directorys_restoration_gate_logged_the_records_initial_state(graded_record, tmp_path):
    result, _ = graded_record("paired")
    events = _restoration_events(result)
    arm = result["initialization_provenance"]["arms"]["rl_gsm8k"]
    arm["initial_output"]["output_sha256"] = "0" * 64
    arm["initialization"]["checkpoint_uri"] = "tinker://elsewhere/weights/init"
    found = _messages(traces.TRACE_3, result, events=events, run_dir=tmp_path)
    assert len(found) == 2 and "initial_output" in found[0] and "checkpoint_uri" in found[1]


# ---------------------------------------------------------------------------- TRACE-4, adaptation manifests


def test_an_adaptation_manifest_restates_the_batches_its_runs_consumed(sft_record):
    assert _messages(traces.TRACE_4, sft_record) == []
    manifest = sft_record["adaptation_manifests"][0]
    manifest["adaptation_batch_ids"] = [i.replace("abab", "cdcd") for i in manifest["adaptation_batch_ids"]]
    assert len(_messages(traces.TRACE_4, sft_record)) == len(manifest["runs"])


def test_an_adaptation_manifest_is_the_grids_pair_with_the_plans_runs(sft_record):
    manifest = sft_record["adaptation_manifests"][0]
    manifest.update(pair="warmup", runs=manifest["runs"][:1])
    manifest["adaptation_batch_ids"] = list(reversed(manifest["adaptation_batch_ids"]))
    found = _messages(traces.TRACE_4, sft_record)
    assert any("pair lr_grid_comparison" in m for m in found) and any("not the plan's runs" in m for m in found)
    assert any("numbered by the step" in m for m in found)


def test_an_adaptation_manifest_without_its_step_log_is_unverified(sft_record):
    sft_record["evidence"]["files"] = [e for e in sft_record["evidence"]["files"] if e["name"] != traces.SFT_STEPS]
    assert _statuses(traces.TRACE_4, sft_record) == {"unverified"}


# ---------------------------------------------------------------------------- TRACE-5, service routing


def _routed(result, **changes):
    plan = _ctx(result).plan
    routing = {"fork": False, "planned_services": {arm.name: arm.service for arm in plan.trained_arms},
               "target": {"kind": "embedded", "base_url": "http://127.0.0.1:1", "exposure": "embedded"},
               "reason": "one server", **changes}
    _add_file(result, traces.SERVICE_ROUTING, json.dumps(routing, indent=2, sort_keys=True), "effective_config")
    return routing


def test_service_routing_is_the_plans_on_the_service_used(graded_record):
    result, _ = graded_record("best_lr")
    routing = _routed(result)
    assert _messages(traces.TRACE_5, result) == []
    forked, production = copy.deepcopy(result), copy.deepcopy(result)
    rewrite_evidence(forked, traces.SERVICE_ROUTING, json.dumps({**routing, "fork": True}))
    assert ["fork True is not False" in m for m in _messages(traces.TRACE_5, forked)] == [True]
    target = {**routing["target"], "kind": "production"}  # off the embedded backend an arm that needs it gets the fork
    rewrite_evidence(production, traces.SERVICE_ROUTING, json.dumps({**routing, "target": target}))
    assert ["fork False is not True" in m for m in _messages(traces.TRACE_5, production)] == [True]


def test_service_routing_names_each_arms_planned_service(graded_record):
    result, _ = graded_record("best_lr")
    routing = _routed(result)
    routing["planned_services"] = {arm: "shared" for arm in routing["planned_services"]}
    rewrite_evidence(result, traces.SERVICE_ROUTING, json.dumps(routing))
    assert ["planned_services" in m for m in _messages(traces.TRACE_5, result)] == [True]


def test_service_routing_is_where_the_probe_measured_and_what_the_event_logged(graded_record, tmp_path):
    result, _ = graded_record("best_lr")
    routing = _routed(result)
    result["correctness_preflight"]["paths"][0]["measured_through"] = {"service": {**routing["target"], "base_url": "x"}}
    assert ["not the service the correctness probe measured through" in m
            for m in _messages(traces.TRACE_5, result)] == [True]
    result["correctness_preflight"]["paths"][0]["measured_through"] = {"service": routing["target"]}
    logged = {"event": "service_routing", "ts": "2026-01-01T00:00:00+00:00", **routing}
    assert _messages(traces.TRACE_5, result, events=[logged], run_dir=tmp_path) == []
    assert ["service_routing event" in m for m in _messages(traces.TRACE_5, result, events=[{**logged, "fork": True}],
                                                             run_dir=tmp_path)] == [True]


def test_unreadable_service_routing_is_unverified(graded_record):
    result, _ = graded_record("best_lr")
    _add_file(result, traces.SERVICE_ROUTING, "not json")
    assert _statuses(traces.TRACE_5, result) == {"unverified"}


# ---------------------------------------------------------------------------- TRACE-6, the re-solver's code


def test_the_resolvers_code_hash_is_the_retained_codes(graded_record):
    result, _ = graded_record("paired")
    code = "def solve(text):\n    return 0\n"
    digest = hashlib.sha256(code.encode()).hexdigest()
    result["generation_audit"]["resolver"] = {"name": "exact", "code": "experiment/selfgen/exact_solver.py"}
    assert _statuses(traces.TRACE_6, result) == {"unverified"}  # the code is not retained
    _add_file(result, traces.PIPELINE_CODE, json.dumps({"files": {"experiment/selfgen/exact_solver.py": {
        "content": code, "sha256": digest}}}), "pipeline_code")
    result["generation_audit"]["resolver"]["code_sha256"] = digest
    for sample in result["generation_audit"]["samples"]:
        sample["resolver_id"] = f"exact (sha256:{digest[:12]})"
    assert _messages(traces.TRACE_6, result) == []
    result["generation_audit"]["resolver"]["code_sha256"] = "1" * 64
    result["generation_audit"]["samples"][0]["resolver_id"] = "exact (sha256:111111111111)"
    found = _messages(traces.TRACE_6, result)
    assert len(found) == 2 and "is not the hash of the retained" in found[0] and "1 audit sample(s)" in found[1]


# ---------------------------------------------------------------------------- TRACE-7, unread evidence


def test_an_evidence_file_nothing_reads_is_reported(graded_record):
    result, _ = graded_record("paired")
    assert _messages(traces.TRACE_7, result) == []
    _add_file(result, "final-scores.jsonl", '{"arm": "rl_selfgen", "value": 1.0}\n')
    assert _messages(traces.TRACE_7, result) == [
        "evidence final-scores.jsonl is read by no rule and named by no field of RESULT: an unchecked file"]
    result["summary_file"] = "final-scores.jsonl"  # a file a field of RESULT names is not unread
    assert _messages(traces.TRACE_7, result) == []


def test_a_second_predictions_file_of_a_finished_run_is_read_only_where_a_score_names_it(graded_record):
    """A copy of an arm's predictions with wrong rows marked right, the score pointing at the copy, the original left
    beside it: both passed as files rules read by name (predictions-*.jsonl) before; in a finished run a predictions
    file is read where a score names it, and the one no score names is reported (issue 45)."""
    result, _ = graded_record("paired")
    score = result["evaluation"]["scores"][0]
    original = score["predictions_ref"]
    _add_file(result, "predictions-copy.jsonl", next(e for e in result["evidence"]["files"]
                                                     if e["name"] == original)["content"])
    score["predictions_ref"] = "predictions-copy.jsonl"
    assert _messages(traces.TRACE_7, result) == [
        f"evidence {original} is read by no rule and named by no field of RESULT: an unchecked file"]
    result["status"] = "running"  # a file written before its score is posted: not yet unread
    assert _messages(traces.TRACE_7, result) == []


# ---------------------------------------------------------------------------- TRACE-8, the record's self-check


def test_a_validation_summary_says_what_its_problems_give(graded_record):
    result, _ = graded_record("paired")
    result["validation"] = {"version": 1, "status": "failed", "problem_count": 1, "failed_checks": ["decision.ci"],
                            "problems": ["decision.ci: the interval differs"]}
    assert _messages(traces.TRACE_8_validation, result) == []
    result["validation"].update(status="passed", problem_count=0, failed_checks=[])
    assert len(_messages(traces.TRACE_8_validation, result)[0].split(";")) == 3
    result["validation"] = {"version": 1, "status": "passed"}
    assert _messages(traces.TRACE_8_validation, result) == ["RESULT.validation has no list of problems"]


def test_a_stored_grade_is_what_grading_afresh_gives(graded_record):
    result, _ = graded_record("best_lr")
    result["grade"] = grade_record(result, self_consistency=False).record()
    graded = grade_record(result)
    assert not graded.problems, graded.problems
    upgraded = copy.deepcopy(result)
    upgraded["grade"]["categories"]["correctness"].update(status="verified", issues=[])
    assert [p.startswith("TRACE-8: RESULT.grade is not what grading the record afresh gives: categories.correctness")
            for p in grade_record(upgraded).problems] == [True]


def test_a_stored_grade_that_records_a_grader_failure_is_reported():
    assert traces.self_grade_problems({"version": 1, "categories": {}, "problems": ["grader failed: KeyError"]},
                                      {"categories": {}}) == [
        "TRACE-8: RESULT.grade records that the run's grader failed; graded afresh here."]


def test_a_stored_grade_with_keys_a_grade_does_not_have_is_reported():
    fresh = {"version": 1, "spec_source": "s", "categories": {"evaluator": {"status": "verified", "issues": []}},
             "problems": []}
    assert traces.self_grade_problems(copy.deepcopy(fresh), fresh) == []
    assert traces.self_grade_problems({**fresh, "trusted": True}, fresh) == [
        "TRACE-8: RESULT.grade is not what grading the record afresh gives: key trusted."]
    assert traces.self_grade_problems({**fresh, "categories": {}}, fresh)[0].endswith("categories.")


def test_a_stored_grade_is_compared_by_its_findings_rules_not_their_wording():
    fresh = {"version": 1, "spec_source": "s", "problems": ["EVID-6: a checkpoint is listed twice."],
             "categories": {"correctness": {"status": "unverified", "issues": ["CORR-6: its pins come from a revision."]}}}
    reworded = copy.deepcopy(fresh)
    reworded["categories"]["correctness"]["issues"] = ["CORR-6: the pins are the revision's."]
    reworded["problems"] = ["EVID-6: checkpoint listed twice."]
    assert traces.self_grade_problems(reworded, fresh) == []
    hidden = copy.deepcopy(fresh)
    hidden["categories"]["correctness"]["issues"] = []
    hidden["problems"] = []
    assert traces.self_grade_problems(hidden, fresh) == [
        "TRACE-8: RESULT.grade is not what grading the record afresh gives: problems, categories.correctness "
        "(stored 'unverified', afresh unverified)."]


# ---------------------------------------------------------------------------- CORR-3 on the embedded backend


def test_a_baseline_parity_check_on_the_embedded_backend_is_the_same_code(graded_record):
    """Issue 45 item 7: without parity_sides, non-zero errors and a pinned baseline, a baseline_update check
    measured on the embedded backend still measures nothing."""
    from experiment.grading import correctness

    result, _ = graded_record("best_lr")
    path = result["correctness_preflight"]["paths"][0]
    baseline = [key for key in path["errors"] if key.startswith("baseline_update")]
    assert baseline and _messages(correctness.CORR_3_same_code, result) == []
    path["measured_through"] = {"service": {"kind": "embedded", "base_url": "http://127.0.0.1:1"}}
    found = _messages(correctness.CORR_3_same_code, result)
    assert len(found) == len(baseline) and all("the embedded backend serves both sides" in m for m in found)
    del path["measured_through"]
    ctx = _ctx(result)
    result["rehearsal"] = {"backend": "embedded"}  # after the spec is read: a rehearsal's own spec is derived
    assert len(correctness.CORR_3_same_code(ctx)) == len(baseline)


def test_each_seeds_final_checkpoint_is_its_replicas():
    """Several scheduled seeds: an arm lists one final checkpoint per seed, each saved by that seed's replica
    (`<arm>-seed<s>` after the first seed) under the replica's name."""
    from types import SimpleNamespace

    replicas = [SimpleNamespace(label="a", arm="a", seed=0), SimpleNamespace(label="a-seed1", arm="a", seed=1)]
    plan = SimpleNamespace(training_runs=[], trained_arms=[SimpleNamespace(name="a")], seeds=[0, 1], replicas=replicas)
    checkpoints = [{"arm": "a", "step": 2, "seed": 0, "uri": "tinker://c0/sampler_weights/a-final"},
                   {"arm": "a", "step": 2, "seed": 1, "uri": "tinker://c1/sampler_weights/a-seed1-final"}]
    result = {"status": "succeeded", "completed_arms": ["a"], "evidence": {"files": [], "checkpoints": checkpoints},
              "initialization_provenance": {"arms": {"a": {"restores": [{"client": "c0"}]},
                                                     "a-seed1": {"restores": [{"client": "c1"}]}}}}

    def messages(record):
        return [i.message for i in traces.TRACE_2(GradeContext(result=record, evidence=EvidenceAccess(record), plan=plan))]

    assert messages(result) == []
    swapped = copy.deepcopy(result)
    swapped["evidence"]["checkpoints"][1]["uri"] = "tinker://c0/sampler_weights/a-seed1-final"
    assert ["was not saved by its training client 'c1'" in m for m in messages(swapped)] == [True]
    one = copy.deepcopy(result)
    one["evidence"]["checkpoints"] = one["evidence"]["checkpoints"][:1]
    assert messages(one) == ["evidence.checkpoints lists 1 final checkpoints of a, not 2"]


def test_a_succeeded_lr_grid_comparison_has_one_manifest_per_arm(sft_record):
    dropped, doubled = copy.deepcopy(sft_record), copy.deepcopy(sft_record)
    del dropped["adaptation_manifests"]
    assert _messages(traces.TRACE_4, dropped) == [
        "a succeeded LR-grid comparison retains its step log but no adaptation_manifests"]
    doubled["adaptation_manifests"].append(doubled["adaptation_manifests"][-1])
    assert ["not each of the plan's" in m for m in _messages(traces.TRACE_4, doubled)] == [True]


# ---------------------------------------------------------------------------- the helpers, at their edges


def test_a_bare_record_reads_no_events_and_a_run_directory_only_well_formed_ones(rl_record, tmp_path):
    raised = [{**e, "mean_reward": 0.9} if e.get("event") == "training_step" else e for e in _rl_events(rl_record)]
    assert _messages(traces.TRACE_1, rl_record, events=raised) == []  # no run directory: nothing to read
    noise = ["not an event", {"event": "training_step", "arm": 5, "step": 0, "mean_reward": 0.0},
             {"event": "training_step", "arm": "rl_gsm8k", "step": None, "mean_reward": 0.0},
             {"event": "training_step", "arm": "rl_gsm8k", "step": True, "mean_reward": 0.0}]
    assert _messages(traces.TRACE_1, rl_record, events=_rl_events(rl_record) + noise, run_dir=tmp_path) == []


def test_a_redone_step_counts_once_with_its_last_log():
    rows = [{"arm": "a", "step": 0, "mean_reward": 0.0}, {"arm": "a", "step": 1, "mean_reward": 0.1},
            {"arm": "a", "step": 0, "mean_reward": 0.5}, {"arm": "b", "step": 0, "mean_reward": 0.2}]
    assert traces._by_step(rows, "arm") == {"a": [rows[2], rows[1]], "b": [rows[3]]}


def test_the_same_measurement_is_a_number_within_float_noise_or_equal_json():
    assert traces._same(1, 1.0) and traces._same(0.1 + 0.2, 0.3) and traces._same("x", "x")
    assert not traces._same(True, 1) and not traces._same(None, 0) and not traces._same(1.0, 1.001)
    assert not traces._same("1", 1)


def test_a_log_with_a_value_that_is_no_number_recomputes_nothing():
    rows = [{"mean_reward": 0.5, "optim_seconds": 0.1}, {"mean_reward": None, "optim_seconds": 0.1}]
    assert traces._rl_expected(rows) == {} and traces._rl_expected([]) == {}
    assert traces._rl_expected(rows[:1]) == {"first_step_mean_reward": 0.5, "final_step_mean_reward": 0.5,
                                             "mean_train_reward": 0.5, "median_optimizer_step_seconds": 0.1}
    sft = [{"optim_seconds": 0.1, "train_nll_token_mean": 2.0}, {"optim_seconds": 0.3, "train_nll_token_mean": "x"}]
    assert traces._sft_expected(sft) == {} and traces._sft_expected([]) == {}
    assert traces._sft_expected([sft[0], {**sft[1], "train_nll_token_mean": 1.0}]) == {
        "median_optim_step_seconds": 0.2, "mean_optim_step_seconds": 0.2, "first_step_train_nll_token_mean": 2.0,
        "last_step_train_nll_token_mean": 1.0}


def test_a_step_rows_nll_message_names_the_recomputed_value():
    rows = {"r": [{"step": 0, "loss_sum": 9.0, "n_tokens": 3, "train_nll_token_mean": 2.0},
                  {"step": 1, "loss_sum": 9.0, "n_tokens": 0, "train_nll_token_mean": 3.0},
                  {"step": 2, "loss_sum": 9.0, "n_tokens": 3, "train_nll_token_mean": 3.0}]}
    assert traces._sft_row_problems(rows) == [
        "sft-steps.jsonl: r step 0: train_nll_token_mean 2.0 is not loss_sum / n_tokens (3)",
        "sft-steps.jsonl: r step 1: a train NLL without the loss_sum and n_tokens it is computed from"]


def test_every_runs_rows_are_held_to_its_events(sft_record, tmp_path):
    rows = [json.loads(line) for line in _files(sft_record)[traces.SFT_STEPS]["content"].splitlines()]
    events = [{"event": "training_step", "ts": "t", **{k: v for k, v in row.items() if k != "model_id"}} for row in rows]
    first, second = sorted({row["run"] for row in rows})[:2]  # checked in this order
    extra = {**next(e for e in events if e["run"] == first), "step": 99}
    wrong = [{**e, "grad_norm": 7.0} if e["run"] == second and e["step"] == 0 else e for e in events]
    found = _messages(traces.TRACE_1, sft_record, events=wrong + [extra], run_dir=tmp_path)
    assert found == [f"{traces.SFT_STEPS}: {first} has {sum(r['run'] == first for r in rows)} step rows, events.jsonl "
                     f"logged {sum(r['run'] == first for r in rows) + 1} steps",
                     f"{traces.SFT_STEPS}: {second} step 0: grad_norm differ from its training_step event"]


def test_an_arms_step_count_is_held_to_its_events_either_way():
    rows = [{"step": 0, "mean_reward": 0.5, "optim_seconds": 0.1}, {"step": 1, "mean_reward": 0.5, "optim_seconds": 0.1}]
    entry = {"steps_completed": 2}
    assert traces._rl_log_problems("m", entry, rows) == []
    assert traces._rl_log_problems("m", {"steps_completed": 3}, rows) == [
        "m.steps_completed 3, but events.jsonl logged 2 training steps"]
    assert traces._rl_log_problems("m", {"steps_completed": 1}, rows)[0] == \
        "m.steps_completed 1, but events.jsonl logged 2 training steps"
    assert traces._rl_log_problems("m", entry, [rows[0], {**rows[1], "step": 2}]) == [
        "m: the training_step events are not steps 0..1"]


def test_a_run_without_metrics_does_not_hide_the_next_runs(sft_record):
    runs = sft_record["metrics"]["arms"]["trimuon"]["runs"]
    first, second = list(runs)[:2]
    del runs[first]
    runs[second]["steps_completed"] += 1
    assert [f"runs.{second}.steps_completed" in m for m in _messages(traces.TRACE_1, sft_record)] == [True, True]


def _trace_2(result, plan):
    return [i.message for i in traces.TRACE_2(GradeContext(result=result, evidence=EvidenceAccess(result), plan=plan))]


def _one_arm(seeds=(0,), checkpoints=(), status="succeeded", provenance=None, files=()):
    from types import SimpleNamespace

    replicas = [SimpleNamespace(label="a" if s == seeds[0] else f"a-seed{s}", arm="a", seed=s) for s in reversed(seeds)]
    plan = SimpleNamespace(training_runs=[], trained_arms=[SimpleNamespace(name="a")], seeds=list(seeds),
                           replicas=replicas)
    result = {"status": status, "completed_arms": ["a"], "evidence": {"files": list(files), "checkpoints": list(checkpoints)},
              "initialization_provenance": {"arms": provenance or {}}}
    return result, plan


def test_a_single_seed_arm_lists_exactly_one_final_checkpoint_and_a_failed_run_is_not_counted():
    uri = "tinker://c/sampler_weights/a-final"
    twice, plan = _one_arm(checkpoints=[{"arm": "a", "uri": uri}, {"arm": "a", "uri": uri + "2"}])
    assert "evidence.checkpoints lists 2 final checkpoints of a, not 1" in _trace_2(twice, plan)
    failed, plan = _one_arm(status="failed")
    assert _trace_2(failed, plan) == []
    unseeded, plan = _one_arm(seeds=(0, 1), checkpoints=[{"arm": "a", "uri": uri}])
    assert _trace_2(unseeded, plan) == []  # checkpoints that name no seed: one final checkpoint


def test_each_of_three_seeds_is_its_own_replica():
    checkpoints = [{"arm": "a", "seed": s, "uri": f"tinker://c{s}/sampler_weights/{'a' if s == 0 else f'a-seed{s}'}-final"}
                   for s in (0, 1, 2)]
    provenance = {("a" if s == 0 else f"a-seed{s}"): {"restores": [{"client": f"c{s}"}]} for s in (0, 1, 2)}
    result, plan = _one_arm(seeds=(0, 1, 2), checkpoints=checkpoints, provenance=provenance)
    assert _trace_2(result, plan) == []


def test_the_training_client_is_the_last_restores_or_the_step_rows_one():
    provenance = {"a": {"restores": [{"client": "first"}, {"client": "last"}]}}
    on_last, plan = _one_arm(checkpoints=[{"arm": "a", "uri": "tinker://last/sampler_weights/a-final"}],
                             provenance=provenance)
    assert _trace_2(on_last, plan) == []
    on_first, plan = _one_arm(checkpoints=[{"arm": "a", "uri": "tinker://first/sampler_weights/a-final"}],
                              provenance=provenance)
    assert ["'last'" in m for m in _trace_2(on_first, plan)] == [True]
    rows = "".join(json.dumps({"run": "a", "step": s, "model_id": m}) + "\n" for s, m in enumerate(["x", "y"]))
    two_clients, plan = _one_arm(checkpoints=[{"arm": "a", "uri": "tinker://last/sampler_weights/a-final"}],
                                 provenance=provenance)
    _add_file(two_clients, traces.SFT_STEPS, rows)
    assert _trace_2(two_clients, plan) == []  # rows that name two clients name none: the last restore's is used


def test_an_lr_grid_runs_client_is_its_runs_last_restore():
    from types import SimpleNamespace

    plan = SimpleNamespace(training_runs=[SimpleNamespace(name="a@lr=0.02", arm="a")], trained_arms=[], seeds=[0],
                           replicas=[])
    result = {"status": "succeeded", "completed_arms": ["a"],
              "evidence": {"files": [], "checkpoints": [{"arm": "a@lr=0.02", "uri": "tinker://r/sampler_weights/a-lr0.02-final"}]},
              "initialization_provenance": {"arms": {"a": {"runs": {"0.02": {"restores": [{"client": "r"}]}}}}}}
    assert _trace_2(result, plan) == []
    result["evidence"]["checkpoints"][0]["uri"] = "tinker://s/sampler_weights/a-lr0.02-final"
    assert ["training client 'r'" in m for m in _trace_2(result, plan)] == [True]
    assert traces._is_float("0.02") and not traces._is_float("lr")


def test_logged_checkpoints_are_compared_whatever_their_key_order():
    uri = "tinker://c/sampler_weights/a-final"
    result, plan = _one_arm(checkpoints=[{"arm": "a", "step": 2, "uri": uri}])
    logged = [{"uri": uri, "event": "checkpoint", "step": 2, "ts": "t", "arm": "a"}]
    ctx = GradeContext(result=result, evidence=EvidenceAccess(result), plan=plan, run_dir=Path("."), events=logged)
    assert traces.TRACE_2(ctx) == []
    extra = [*logged, {**logged[0], "uri": "tinker://b/sampler_weights/a-final"}]
    ctx = GradeContext(result=result, evidence=EvidenceAccess(result), plan=plan, run_dir=Path("."), events=extra)
    assert [i.message for i in traces.TRACE_2(ctx)] == [
        "evidence.checkpoints are not the checkpoints events.jsonl logged (1 listed, 2 logged, 1 differ)"]


def test_an_arms_restores_never_go_back_in_time_and_may_share_a_second(graded_record):
    result, _ = graded_record("paired")
    arm = result["initialization_provenance"]["arms"]["rl_gsm8k"]
    arm["restores"] = [{**arm["restores"][0], "at": "2026-01-01T00:00:05+00:00"},
                       {**arm["restores"][0], "restore": 2, "at": "2026-01-01T00:00:05+00:00"}]
    assert _messages(traces.TRACE_3, result) == []
    arm["restores"][1]["at"] = "2026-01-01T00:00:04+00:00"
    assert _messages(traces.TRACE_3, result) == [
        "arm rl_gsm8k: restores are not in the order they happened (a later restore is earlier)"]
    assert traces._time("not a time") is None and traces._time(None) is None


def test_an_lr_grid_arms_restores_follow_the_plans_order_not_the_records_key_order(graded_record):
    result, _ = graded_record("best_lr")
    arm = _grid(result)
    arm["runs"] = dict(reversed(list(arm["runs"].items())))  # written in another order than the plan's
    assert _messages(traces.TRACE_3, result) == []


def _restore_at(result, at, arm="rl_gsm8k"):
    result["initialization_provenance"]["arms"][arm]["restores"][0]["at"] = at
    return result


def test_a_restore_is_dated_against_the_runs_first_and_last_events(graded_record, tmp_path):
    result, _ = graded_record("paired")
    events = [e for e in _restoration_events(result) if e["event"] != "training_step"]  # dated by the run alone
    events.insert(1, {"event": "run_config", "ts": "2026-01-01T00:00:03+00:00"})
    assert _messages(traces.TRACE_3, _restore_at(result, "2026-01-01T00:00:02+00:00"), events=events,
                     run_dir=tmp_path) == []  # after the first event, before a later one
    assert _messages(traces.TRACE_3, _restore_at(result, "2026-01-01T00:10:00+00:00"), events=events,
                     run_dir=tmp_path) == []  # at the last event
    late = _messages(traces.TRACE_3, _restore_at(result, "2026-01-01T00:10:01+00:00"), events=events, run_dir=tmp_path)
    assert late == ["arm rl_gsm8k: restore 1 at 2026-01-01T00:10:01+00:00 is outside the run's events"]
    assert _messages(traces.TRACE_3, result, events=events) == []  # a bare record has no events to date it by


def test_a_creation_restore_may_share_its_second_with_the_first_step(graded_record, tmp_path):
    result, _ = graded_record("paired")
    events = _restoration_events(result, step="2026-01-01T00:00:05+00:00")
    events.append({"event": "training_step", "ts": "2026-01-01T00:00:09+00:00", "arm": "rl_gsm8k", "step": 1})
    assert _messages(traces.TRACE_3, _restore_at(result, "2026-01-01T00:00:05+00:00"), events=events,
                     run_dir=tmp_path) == []
    after = _messages(traces.TRACE_3, _restore_at(result, "2026-01-01T00:00:06+00:00"), events=events, run_dir=tmp_path)
    assert after == ["arm rl_gsm8k: restore 1 created rl_gsm8k at 2026-01-01T00:00:06+00:00, after its first training step"]


def test_an_lr_grid_runs_restores_are_dated_too_and_the_last_restoration_gate_counts(graded_record, tmp_path):
    result, _ = graded_record("best_lr")
    arm = _grid(result)
    label = next(iter(arm["runs"]))
    events = [{"event": "run_created", "ts": "2026-01-01T00:00:00+00:00"},
              {"event": "gate", "gate": "restoration_preflight", "ts": "2026-01-01T00:00:09+00:00",
               "measured": {"init_checkpoint": arm["initialization"]["checkpoint_uri"]}},
              {"event": "gate", "gate": "summary", "ts": "2026-01-01T00:00:10+00:00",
               "measured": {"init_checkpoint": "tinker://elsewhere"}}]
    assert _messages(traces.TRACE_3, result, events=events, run_dir=tmp_path) == []
    arm["runs"][label]["restores"][0]["at"] = "2025-01-01T00:00:00+00:00"
    found = _messages(traces.TRACE_3, result, events=events, run_dir=tmp_path)
    assert any("is outside the run's events" in m for m in found)


def test_missing_manifests_are_reported_only_for_a_succeeded_lr_grid_with_its_log(sft_record, rl_record):
    failed, no_log = copy.deepcopy(sft_record), copy.deepcopy(sft_record)
    for record in (failed, no_log):
        del record["adaptation_manifests"]
    failed["status"] = "failed"
    no_log["evidence"]["files"] = [e for e in no_log["evidence"]["files"] if e["name"] != traces.SFT_STEPS]
    assert _messages(traces.TRACE_4, failed) == [] and _messages(traces.TRACE_4, no_log) == []
    assert _messages(traces.TRACE_4, rl_record) == []  # an RL comparison has no LR grid
    short_ = copy.deepcopy(sft_record)
    short_["adaptation_manifests"] = short_["adaptation_manifests"][:1]
    assert ["not each of the plan's" in m for m in _messages(traces.TRACE_4, short_)] == [True]


def test_service_routing_is_logged_exactly_once(graded_record, tmp_path):
    result, _ = graded_record("best_lr")
    routing = _routed(result)
    logged = {"event": "service_routing", "ts": "t", **routing}
    for events in ([], [logged, logged]):
        assert _messages(traces.TRACE_5, result, events=events, run_dir=tmp_path) == [
            f"{traces.SERVICE_ROUTING} is not the routing the service_routing event logged"]


def test_a_resolver_hash_is_compared_in_full_and_quoted_by_twelve_characters(graded_record):
    result, _ = graded_record("paired")
    code = "def solve(text):\n    return 0\n"
    digest = hashlib.sha256(code.encode()).hexdigest()
    _add_file(result, traces.PIPELINE_CODE, json.dumps({"files": {"s.py": {"content": code}}}), "pipeline_code")
    result["generation_audit"]["resolver"] = {"code": "s.py", "code_sha256": digest}
    for sample in result["generation_audit"]["samples"]:
        sample["resolver_id"] = f"exact (sha256:{digest[:12]})"
    assert _messages(traces.TRACE_6, result) == []
    for other in ("0" * 64, "f" * 64):
        result["generation_audit"]["resolver"]["code_sha256"] = other
        assert _messages(traces.TRACE_6, result) == [
            f"generation_audit.resolver.code_sha256 '{other[:56]}... is not the hash of the retained s.py "
            f"({digest[:12]}...)"]
    result["generation_audit"]["resolver"]["code_sha256"] = digest
    wrong_twelfth = digest[:11] + ("0" if digest[11] != "0" else "1")
    result["generation_audit"]["samples"][0]["resolver_id"] = f"exact (sha256:{wrong_twelfth})"
    assert _messages(traces.TRACE_6, result) == ["1 audit sample(s) name a re-solver whose code hash is not the "
                                                 "retained s.py's"]


def test_a_file_named_inside_a_list_field_is_read_and_the_evidence_list_names_nothing(graded_record):
    result, _ = graded_record("paired")
    _add_file(result, "extra.jsonl", "{}\n")
    result["notes_files"] = [{"file": "extra.jsonl"}]
    assert _messages(traces.TRACE_7, result) == []
    del result["notes_files"]
    result["evidence"]["extra_refs"] = ["extra.jsonl"]  # the evidence block lists files; listing is not reading
    assert len(_messages(traces.TRACE_7, result)) == 1


def test_a_validation_summary_holds_strings_and_takes_each_problems_check(graded_record):
    result, _ = graded_record("paired")
    result["validation"] = {"version": 1, "status": "failed", "problem_count": 1, "failed_checks": ["x"],
                            "problems": [1]}
    assert _messages(traces.TRACE_8_validation, result) == ["RESULT.validation has no list of problems"]
    result["validation"] = {"version": 2, "status": "failed", "problem_count": 2, "failed_checks": ["a.b", "c.d"],
                            "problems": ["c.d: one: two", "a.b: three"]}
    assert _messages(traces.TRACE_8_validation, result) == [
        "RESULT.validation: version 2 (its problems give 1)"]


def test_a_stored_grade_differs_in_any_direction():
    fresh = {"version": 1, "spec_source": "s", "problems": ["B-1: x"],
             "categories": {"c": {"status": "unverified", "issues": ["B-2: y"]}}}
    variants = {"problems": {**fresh, "problems": ["A-1: x"]}, "problems ": {**fresh, "problems": ["C-1: x"]},
                "spec_source": {**fresh, "spec_source": "t"}, "version": {**fresh, "version": 2},
                "categories": {**fresh, "categories": {**fresh["categories"], "d": {"status": "verified", "issues": []}}}}
    for key, stored in variants.items():
        assert traces.self_grade_problems(stored, fresh) == [
            f"TRACE-8: RESULT.grade is not what grading the record afresh gives: {key.strip()}."], key
    for status in ("invalid", "verified"):
        stored = {**fresh, "categories": {"c": {"status": status, "issues": ["B-2: y"]}}}
        assert traces.self_grade_problems(stored, fresh)[0].endswith(f"categories.c (stored '{status}', afresh unverified).")
    for issues in (["A-2: y"], ["C-2: y"], "B-2: y"):
        stored = {**fresh, "categories": {"c": {"status": "unverified", "issues": issues}}}
        assert traces.self_grade_problems(stored, fresh)[0].endswith("categories.c (stored 'unverified', afresh unverified).")
    assert traces.self_grade_problems({**fresh, "problems": "B-1: x"}, fresh)[0].endswith(": problems.")
    assert traces._rule_ids(["A-1: x: y", "B-2"]) == ["A-1", "B-2"]


@pytest.mark.parametrize("edit", ["pair a", "pair z", "runs fewer", "runs more", "ids earlier", "ids later",
                                  "consumed fewer", "consumed more"])
def test_an_adaptation_manifest_differs_in_any_direction(sft_record, edit):
    manifest = sft_record["adaptation_manifests"][0]
    ids = manifest["adaptation_batch_ids"]
    what, how = edit.split()
    if what == "pair":
        manifest["pair"] = how
    elif what == "runs":
        manifest["runs"] = manifest["runs"][:-1] if how == "fewer" else [*manifest["runs"], "zz@lr=1"]
    elif what == "ids":
        manifest["adaptation_batch_ids"] = [ids[0].replace("step0000", "step0001" if how == "later" else "step000x"),
                                            *ids[1:]]
    else:
        manifest["adaptation_batch_ids"] = ids[:-1] if how == "fewer" else [*ids, f"step{len(ids):04d}-{'ab' * 8}"]
    assert _messages(traces.TRACE_4, sft_record), edit


def test_the_service_routing_event_is_told_from_events_named_around_it(graded_record, tmp_path):
    result, _ = graded_record("best_lr")
    routing = _routed(result)
    around = [{"event": "run_created", "ts": "t", **routing}, {"event": "training_step", "ts": "t", **routing}]
    logged = {"event": "service_routing", "ts": "t", **routing}
    assert _messages(traces.TRACE_5, result, events=[around[0], logged, around[1]], run_dir=tmp_path) == []


def test_a_record_without_a_status_is_held_to_no_planned_step_count(rl_record):
    rl_record["metrics"]["arms"]["rl_selfgen"]["steps_completed"] = 1
    del rl_record["status"]
    assert _messages(traces.TRACE_1, rl_record) == []


def test_a_step_of_one_counted_token_has_its_loss_as_its_nll():
    rows = {"r": [{"step": 0, "loss_sum": 2.5, "n_tokens": 1, "train_nll_token_mean": 2.5},
                  {"step": 1, "loss_sum": 2.5, "n_tokens": 1, "train_nll_token_mean": 2.0}]}
    assert traces._sft_row_problems(rows) == [
        "sft-steps.jsonl: r step 1: train_nll_token_mean 2.0 is not loss_sum / n_tokens (2.5)"]


def test_a_step_of_a_negative_token_count_has_no_nll_to_state():
    rows = {"r": [{"step": 0, "loss_sum": -5.0, "n_tokens": -2, "train_nll_token_mean": 2.5}]}
    assert traces._sft_row_problems(rows) == [
        "sft-steps.jsonl: r step 0: a train NLL without the loss_sum and n_tokens it is computed from"]


def test_a_step_without_a_stated_nll_or_counted_tokens_states_nothing_to_check():
    assert traces._sft_row_problems({"r": [{"step": 0, "loss_sum": 0.0, "n_tokens": 0},
                                           {"step": 1, "loss_sum": 4.0, "n_tokens": -2}]}) == []


def test_an_lr_grid_arm_without_run_metrics_is_still_held_to_the_plans_grid(sft_record):
    arm = sft_record["metrics"]["arms"]["trimuon"]
    del arm["runs"]
    arm["lr_grid"] = [0.01, *arm["lr_grid"]]
    found = _messages(traces.TRACE_1, sft_record)
    assert len(found) == 1 and found[0].startswith("metrics.arms.trimuon.lr_grid ")


def test_a_training_step_event_of_an_lr_grid_run_is_no_rl_arms_step(rl_record, tmp_path):
    events = _rl_events(rl_record) + [{"event": "training_step", "ts": "2026-12-07T10:02:00+00:00", "arm": "rl_gsm8k",
                                       "run": "rl_gsm8k@lr=0.01", "step": 9, "mean_reward": 0.0, "optim_seconds": 9.0}]
    assert _messages(traces.TRACE_1, rl_record, events=events, run_dir=tmp_path) == []


def _bare_ctx(result, plan=None, events=None, run_dir=None):
    result.setdefault("evidence", {"files": []})
    return GradeContext(result=result, evidence=EvidenceAccess(result), plan=plan, run_dir=run_dir, events=events)


def test_training_step_events_numbered_below_zero_are_not_steps_from_zero():
    rows = [{"step": -1, "mean_reward": 0.5, "optim_seconds": 0.1}, {"step": 0, "mean_reward": 0.5, "optim_seconds": 0.1}]
    assert traces._rl_log_problems("m", {"steps_completed": 2}, rows) == ["m: the training_step events are not steps 0..1"]


def test_an_arms_optimizer_family_is_the_one_its_creation_check_requested():
    """The first optimizer check is the creation check; a later check (after a restore) does not rename the family."""
    checks = [{"requested": {"family": "trimuon"}}, {"requested": {"family": "adamw"}}, {"requested": {"family": "muon"}}]
    ctx = _bare_ctx({"initialization_provenance": {"arms": {"a": {"optimizer_checks": checks}}}})
    assert traces._requested_family(ctx, "a") == "trimuon"
    assert traces._requested_family(ctx, "b") is None


def test_a_seeds_replica_label_is_its_own_arms_whatever_the_order_of_the_replicas():
    from types import SimpleNamespace

    replicas = [SimpleNamespace(label=f"{arm}-seed1" if seed else arm, arm=arm, seed=seed)
                for arm in ("b", "a", "c") for seed in (0, 1)]
    ctx = _bare_ctx({}, plan=SimpleNamespace(replicas=replicas))
    assert [traces._replica_label(ctx, arm, 1) for arm in ("a", "b", "c")] == ["a-seed1", "b-seed1", "c-seed1"]
    assert traces._replica_label(ctx, "a", None) == "a"  # a checkpoint that names no seed: the arm's own name


def test_a_checkpoint_without_a_uri_does_not_hide_the_next_ones_name():
    result, plan = _one_arm(checkpoints=[{"arm": "a"}, {"arm": "a", "uri": "tinker://c/sampler_weights/a-other"}])
    assert "checkpoint 'tinker://c/sampler_weights/a-other' of a is not named a-final" in _trace_2(result, plan)


def test_an_lr_grid_arms_restore_count_is_unchecked_where_a_run_states_none():
    ctx = _bare_ctx({})
    runs = {"0.01": {"restores": [], "restore_count": 1}, "0.02": {"restores": []}}
    assert traces._grid_restores(ctx, "a", {"restores": [], "restore_count": 7}, runs) == []
    runs["0.02"]["restore_count"] = 2
    assert traces._grid_restores(ctx, "a", {"restores": [], "restore_count": 7}, runs) == [
        "arm a: restore_count 7 is not the sum of its runs' (3)"]


def test_a_training_step_event_without_a_step_number_starts_no_run(tmp_path):
    events = [{"event": "run_created", "ts": "2026-01-01T00:00:00+00:00"},
              {"event": "training_step", "ts": "2026-01-01T00:00:01+00:00", "arm": "a", "step": None},
              {"event": "training_step", "ts": "2026-01-01T00:00:02+00:00", "arm": "a", "step": -1},
              {"event": "run_finished", "ts": "2026-01-01T00:00:09+00:00"}]
    arms = {"a": {"restores": [{"restore": 1, "at": "2026-01-01T00:00:05+00:00", "with_optimizer_state": False}]}}
    assert traces._restores_in_run(_bare_ctx({}, events=events, run_dir=tmp_path), arms) == []
    started = events[:3] + [{"event": "training_step", "ts": "2026-01-01T00:00:03+00:00", "arm": "a", "step": 0}] + events[3:]
    assert traces._restores_in_run(_bare_ctx({}, events=started, run_dir=tmp_path), arms) == [
        "arm a: restore 1 created a at 2026-01-01T00:00:05+00:00, after its first training step"]


def test_an_undated_restore_does_not_hide_the_next_ones_date(tmp_path):
    events = [{"event": "run_created", "ts": "2026-01-01T00:00:00+00:00"},
              {"event": "run_finished", "ts": "2026-01-01T00:00:09+00:00"}]
    arms = {"a": {"restores": [{"restore": 1}, {"restore": 2, "at": "2020-01-01T00:00:00+00:00"}]}}
    assert traces._restores_in_run(_bare_ctx({}, events=events, run_dir=tmp_path), arms) == [
        "arm a: restore 2 at 2020-01-01T00:00:00+00:00 is outside the run's events"]


def _manifest(arm, ids, **changes):
    return {"arm": arm, "pair": traces.ADAPTATION_PAIR, "warmup_batches": 0, "runs": [f"{arm}@lr=0.01"],
            "adaptation_batch_ids": ids, **changes}


def _trace_4(manifests):
    return [(i.status, i.message) for i in traces.TRACE_4(_bare_ctx({"status": "failed",
                                                                     "adaptation_manifests": manifests}))]


def test_manifest_batch_ids_are_numbered_from_zero_by_step_either_way():
    misnumbered = "adaptation_manifests[0] ('a'): batch ids are not numbered by the step that consumed them"
    unread = "adaptation_manifests[0] ('a'): sft-steps.jsonl is not retained, so the consumed batches cannot be read"
    assert _trace_4([_manifest("a", ["step0000-ab", "step0001-cd"])]) == [("unverified", unread)]
    assert _trace_4([_manifest("a", ["step0001-ab"])]) == [("invalid", misnumbered), ("unverified", unread)]
    assert _trace_4([_manifest("a", ["step0000-ab", "step0000-cd"])]) == [("invalid", misnumbered), ("unverified", unread)]


def test_every_manifest_is_read_past_an_rl_pairs_or_one_without_batch_ids():
    rl_pair = {"arm": "x", "pair": "rl"}
    no_ids = _manifest("b", None)
    found = _trace_4([rl_pair, no_ids, _manifest("a", ["step0001-ab"]), _manifest("c", ["step0000-ab"])])
    assert [message.split(": ", 1)[1] for _, message in found] == [
        "batch ids are not numbered by the step that consumed them",
        "sft-steps.jsonl is not retained, so the consumed batches cannot be read",
        "sft-steps.jsonl is not retained, so the consumed batches cannot be read"]
    assert [message.split(":", 1)[0] for _, message in found] == [
        "adaptation_manifests[2] ('a')", "adaptation_manifests[2] ('a')", "adaptation_manifests[3] ('c')"]


def test_a_routing_target_of_no_or_an_unknown_kind_is_no_embedded_backend():
    from types import SimpleNamespace

    plan = SimpleNamespace(trained_arms=[SimpleNamespace(name="a", service="fork"), SimpleNamespace(name="b", service="base")])
    ctx = _bare_ctx({}, plan=plan)
    for target in ({}, {"kind": "api"}, {"kind": "remote"}):
        assert traces.expected_routing(ctx, target) == {"fork": True, "planned_services": {"a": "fork", "b": "base"}}
    assert traces.expected_routing(ctx, {"kind": "embedded"})["fork"] is False


def test_a_file_named_by_a_field_sorting_before_evidence_is_read(graded_record):
    result, _ = graded_record("paired")
    _add_file(result, "extra.jsonl", "{}\n")
    result["attachments"] = {"file": "extra.jsonl"}
    assert _messages(traces.TRACE_7, result) == []


def test_each_seeds_numbers_are_the_plans_past_a_seed_without_numbers(rl_record):
    arm = rl_record["metrics"]["arms"]["rl_selfgen"]
    arm["seeds"] = {"0": {}, "1": {"learning_rate": arm["learning_rate"] * 10}}
    found = _messages(traces.TRACE_1, rl_record)
    assert len(found) == 1 and found[0].startswith("metrics.arms.rl_selfgen.seeds.1.learning_rate ")


def test_every_lr_grid_arms_runs_are_checked_not_only_the_first_arms(sft_record):
    arms = sft_record["metrics"]["arms"]
    grid_arms = [name for name, arm in arms.items() if isinstance(arm, dict) and arm.get("runs")]
    for name in grid_arms:
        next(iter(arms[name]["runs"].values()))["learning_rate"] = 9.0
    found = _messages(traces.TRACE_1, sft_record)
    assert len(grid_arms) > 1 and sorted(m.split(".runs.")[0] for m in found) == sorted(
        f"metrics.arms.{name}" for name in grid_arms)


def test_without_a_step_log_every_runs_settings_are_still_the_plans(sft_record):
    sft_record["evidence"]["files"] = [e for e in sft_record["evidence"]["files"] if e["name"] != traces.SFT_STEPS]
    runs = sft_record["metrics"]["arms"]["trimuon"]["runs"]
    last = list(runs)[-1]
    runs[last]["learning_rate"] = 9.0
    found = _messages(traces.TRACE_1, sft_record)
    assert len(runs) > 1 and [m.startswith(f"metrics.arms.trimuon.runs.{last}.learning_rate 9.0") for m in found] == [True]


def test_listed_checkpoints_are_compared_whatever_their_own_key_order():
    uri = "tinker://c/sampler_weights/a-final"
    result, plan = _one_arm(checkpoints=[{"uri": uri, "step": 2, "arm": "a"}])  # keys not in sorted order
    logged = [{"arm": "a", "event": "checkpoint", "step": 2, "ts": "t", "uri": uri}]
    ctx = GradeContext(result=result, evidence=EvidenceAccess(result), plan=plan, run_dir=Path("."), events=logged)
    assert traces.TRACE_2(ctx) == []


def test_an_lr_grid_runs_own_restores_never_go_back_in_time():
    runs = {"0.01": {"restores": [{"at": "2026-01-01T00:00:05+00:00"}, {"at": "2026-01-01T00:00:01+00:00"}]}}
    found = [i.message for i in traces.TRACE_3(_bare_ctx({"initialization_provenance": {"arms": {"a": {"runs": runs}}}}))]
    assert "arm a run 0.01: restores are not in the order they happened (a later restore is earlier)" in found


def test_an_lr_grid_arms_restores_are_its_own_runs_not_another_arms_of_the_same_rate():
    from types import SimpleNamespace

    plan = SimpleNamespace(training_runs=[SimpleNamespace(arm=arm, lr=0.01, name=f"{arm}@lr=0.01") for arm in "abc"])
    restore = {"client": "c", "at": "2026-01-01T00:00:01+00:00"}
    for arm in "abc":
        entry = {"restores": [{**restore, "run": f"{arm}@lr=0.01", "restore": 1}], "restore_count": 1}
        runs = {"0.01": {"restores": [restore], "restore_count": 1}}
        assert traces._grid_restores(_bare_ctx({}, plan=plan), arm, entry, runs) == []


def _pair_plan(training_type, seeds=(3, 4)):
    from types import SimpleNamespace

    runs = [SimpleNamespace(arm=arm, name=arm, lr=lr, seed=seeds[0]) for arm, lr in (("a", 0.01), ("b", 0.02))]
    return SimpleNamespace(training_runs=runs, training_type=training_type, seeds=list(seeds))


def _pair_manifests(*arms):
    return [{"arm": arm, "pair": traces.ADAPTATION_PAIR, "warmup_batches": 0, "runs": [arm],
             "adaptation_batch_ids": ["step0000-ab"]} for arm in arms]


def test_an_sft_comparisons_runs_of_one_rate_each_are_its_pairs_at_the_first_scheduled_seed():
    """A paired SFT comparison (one LR per arm, runs named after their arms) pairs its runs like an LR grid; the
    first scheduled seed (3 here, not 0) is the plain pair."""
    result = {"status": "succeeded", "adaptation_manifests": _pair_manifests("a", "b")}
    found = [(i.status, i.message) for i in traces.TRACE_4(_bare_ctx(result, plan=_pair_plan("sft")))]
    assert [status for status, _ in found] == ["unverified", "unverified"]  # only the step log is missing


def test_an_rl_comparisons_runs_have_no_lr_grid_pair():
    result = {"status": "succeeded", "adaptation_manifests": _pair_manifests("a")}
    found = [i.message for i in traces.TRACE_4(_bare_ctx(result, plan=_pair_plan("rl")))]
    assert "adaptation_manifests[0] ('a'): runs ['a'] are not the plan's runs of 'a'" in found


def test_a_plan_that_schedules_no_seeds_pairs_its_runs_at_seed_zero():
    plan = _pair_plan("sft", seeds=(0,))
    del plan.seeds
    result = {"status": "succeeded", "adaptation_manifests": _pair_manifests("a", "b")}
    assert [i.status for i in traces.TRACE_4(_bare_ctx(result, plan=plan))] == ["unverified", "unverified"]


_ORDER = "restores are not in the order they happened (a later restore is earlier)"


def _at(second):
    return f"2026-01-01T00:00:{second:02d}+00:00"


def _trace_3_messages(arms, plan=None):
    return [i.message for i in traces.TRACE_3(_bare_ctx({"initialization_provenance": {"arms": arms}}, plan=plan))]


def test_a_restore_list_that_is_no_arms_restatement_is_read_as_one_clients_whatever_runs_it_names():
    """Only an LR-grid arm's own list restates several runs; an arm without runs, and a run's own list, are one
    client's restores: labelling them with runs does not split them into lists that each look in order."""
    labelled = [{"at": _at(1), "run": "x"}, {"at": _at(3), "run": "y"}, {"at": _at(2), "run": "x"}]
    assert _trace_3_messages({"a": {"restores": labelled}}) == [f"arm a: {_ORDER}"]
    assert f"arm a run 0.01: {_ORDER}" in _trace_3_messages({"a": {"runs": {"0.01": {"restores": labelled}}}})


def _two_run_grid(first_restores, second_restores):
    """An LR-grid arm of two runs (plan order 0.01, 0.02) whose list restates its runs' restores in plan order."""
    from types import SimpleNamespace

    plan = SimpleNamespace(training_runs=[SimpleNamespace(arm="a", lr=lr, name=f"a@lr={lr:g}") for lr in (0.01, 0.02)])
    runs = {"0.01": {"restores": first_restores}, "0.02": {"restores": second_restores}}
    restated = [{**r, "run": f"a@lr={label}"} for label, run in runs.items() for r in run["restores"]]
    return {"a": {"runs": runs, "restores": [{**r, "restore": n} for n, r in enumerate(restated, 1)]}}, plan


def test_the_second_of_two_lr_grid_runs_is_created_after_the_first():
    arms, plan = _two_run_grid([{"at": _at(1)}], [{"at": _at(2)}])
    assert _trace_3_messages(arms, plan) == []
    arms, plan = _two_run_grid([{"at": _at(2)}], [{"at": _at(1)}])
    assert _trace_3_messages(arms, plan) == [f"arm a: {_ORDER}"]


def test_a_restore_list_that_goes_back_in_time_is_one_finding_however_many_of_its_runs_do():
    arms, plan = _two_run_grid([{"at": _at(2)}, {"at": _at(1)}], [{"at": _at(4)}, {"at": _at(3)}])
    assert _trace_3_messages(arms, plan) == [f"arm a: {_ORDER}", f"arm a run 0.01: {_ORDER}", f"arm a run 0.02: {_ORDER}"]


def test_a_one_run_grid_arms_restated_restores_are_read_run_by_run_and_their_names_held_to_the_plan():
    """A grid arm of one run restates it like any grid arm: its list is read run by run as it names them, and
    names that are not the plan's run are the restatement finding (one finding, not a second one about time)."""
    from types import SimpleNamespace

    plan = SimpleNamespace(training_runs=[SimpleNamespace(arm="a", lr=0.01, name="a@lr=0.01")])
    runs = {"0.01": {"restores": [{"at": _at(1)}, {"at": _at(2)}, {"at": _at(3)}]}}
    restated = [{"at": _at(1), "run": "x", "restore": 1}, {"at": _at(3), "run": "y", "restore": 2},
                {"at": _at(2), "run": "x", "restore": 3}]
    assert _trace_3_messages({"a": {"runs": runs, "restores": restated}}, plan) == [
        "arm a: its restores are not its runs' restores in plan order"]


def _seed_pair_plan(seeds):
    """An SFT comparison of arms a and b (one LR each) at two scheduled seeds, the first listed first."""
    from types import SimpleNamespace

    runs = [SimpleNamespace(arm=arm, name=arm if seed == seeds[0] else f"{arm}-seed{seed}", lr=0.01, seed=seed)
            for seed in seeds for arm in ("a", "b")]
    return SimpleNamespace(training_runs=runs, training_type="sft", seeds=list(seeds))


def _seed_pair_manifests(seeds):
    return [{"arm": arm, "pair": traces.ADAPTATION_PAIR + ("" if seed == seeds[0] else f"-seed{seed}"),
             "warmup_batches": 0, "runs": [arm if seed == seeds[0] else f"{arm}-seed{seed}"],
             "adaptation_batch_ids": ["step0000-ab"]} for seed in seeds for arm in ("a", "b")]


@pytest.mark.parametrize("seeds", [(3, 4), (4, 3)])
def test_a_further_scheduled_seeds_runs_are_their_own_pair_whichever_way_the_seeds_sort(seeds):
    """The first scheduled seed (the first listed, not the smallest) pairs as lr_grid_comparison, each further seed as
    lr_grid_comparison-seed<s> with its own runs: only the step log's absence is found."""
    result = {"status": "succeeded", "adaptation_manifests": _seed_pair_manifests(seeds)}
    found = [(i.status, i.message) for i in traces.TRACE_4(_bare_ctx(result, plan=_seed_pair_plan(seeds)))]
    assert [status for status, _ in found] == ["unverified"] * 4, found
    wrong = copy.deepcopy(result)
    wrong["adaptation_manifests"][2]["runs"] = ["a"]  # the further seed's manifest naming the first seed's run
    found = [i.message for i in traces.TRACE_4(_bare_ctx(wrong, plan=_seed_pair_plan(seeds)))]
    assert f"adaptation_manifests[2] ('a'): runs ['a'] are not the plan's runs of 'a'" in found
