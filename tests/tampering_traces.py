"""Tamperings of the leaves a record restates from its run (issue 45 items 6 and 7), as functions on a RESULT
or on a copy of a run directory.

Each bare tampering takes a green wiring record of its family (GS1, self-generated tasks, TriMuon) and edits
it as a submitter who wanted a better grade would: every copy of the leaf changed together, every evidence
file it touches re-hashed with every mention of its old hash (`leaves.rewrite_evidence`). Each graded exactly
as the untouched record before the TRACE rules (experiment/grading/traces.py) and CORR-3's embedded-backend
reading; tests/e2e/test_grader_traces.py holds that each is caught now. A run-directory tampering edits
result.json and, where it edits an evidence file, evidence/, manifest.json and the evidence_added event as the
store writes them (`rewrite_run_evidence`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Callable

from leaves import _walk, rewrite_evidence


def _files(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["name"]: entry for entry in result["evidence"]["files"]}


def _trained(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every trained arm's metrics and their copy under evidence.per_arm_metrics (EVID-5 holds them equal)."""
    return {arm: metrics for arm, metrics in result["metrics"]["arms"].items() if "steps_completed" in metrics}


def _both_copies(result: dict[str, Any], edit: Callable[[str, dict[str, Any]], None]) -> None:
    for arm, metrics in result["metrics"]["arms"].items():
        edit(arm, metrics)
    for arm, metrics in (result["evidence"].get("per_arm_metrics") or {}).items():
        edit(arm, metrics)


def raise_train_rewards(result: dict[str, Any], by: float) -> None:
    """Every RL arm's training rewards in the result raised by `by`, in both copies of its metrics."""
    def edit(arm: str, metrics: dict[str, Any]) -> None:
        for key in ("first_step_mean_reward", "final_step_mean_reward", "mean_train_reward"):
            if key in metrics:
                metrics[key] += by
    _both_copies(result, edit)


def _replace_everywhere(result: dict[str, Any], old: str, new: str, skip: tuple[str, ...] = ()) -> None:
    """`old` becomes `new` in RESULT and in every inline evidence file but `skip` (each re-hashed)."""
    for path, value in list(_walk(result, ())):
        if isinstance(value, str) and old in value and path[:2] != ("evidence", "files"):
            target = result
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = value.replace(old, new)
    for entry in list(result["evidence"]["files"]):
        if entry["name"] not in skip and isinstance(entry.get("content"), str) and old in entry["content"]:
            rewrite_evidence(result, entry["name"], entry["content"].replace(old, new))


# ---------------------------------------------------------------------------- training metrics (TRACE-1)


def training_steps_and_rewards_inflated(result: dict[str, Any]) -> None:
    """steps_completed 40 (the spec's full run) and every training reward raised by 0.3, in both copies."""
    def edit(arm: str, metrics: dict[str, Any]) -> None:
        if "steps_completed" in metrics:
            metrics["steps_completed"] = 40
            for key in ("first_step_mean_reward", "final_step_mean_reward", "mean_train_reward"):
                metrics[key] = metrics[key] + 0.3
    _both_copies(result, edit)


def kernel_bandwidth_changed(result: dict[str, Any]) -> None:
    """The kernel arm reports the other bandwidth of the pre-registered calibration."""
    def edit(arm: str, metrics: dict[str, Any]) -> None:
        if "kernel_bandwidth" in metrics:
            metrics["kernel_bandwidth"] = 0.5 if metrics["kernel_bandwidth"] != 0.5 else 1.0
    _both_copies(result, edit)


def sft_run_numbers_rewritten(result: dict[str, Any]) -> None:
    """Every LR-grid run: 40 steps, its mean optimizer-step time x0.1, a first-step train NLL 1 lower (the
    median, which DEC-12 recomputes, is left as it was)."""
    def edit(arm: str, metrics: dict[str, Any]) -> None:
        for run in (metrics.get("runs") or {}).values():
            run["steps_completed"] = 40
            run["mean_optim_step_seconds"] *= 0.1
            run["first_step_train_nll_token_mean"] -= 1.0
    _both_copies(result, edit)


def sft_lr_grid_rewritten(result: dict[str, Any]) -> None:
    """Each arm claims a four-point LR grid, all four runs completed."""
    def edit(arm: str, metrics: dict[str, Any]) -> None:
        if "lr_grid" in metrics:
            metrics["lr_grid"] = [0.01, *metrics["lr_grid"]]
            metrics["runs_completed"] = len(metrics["lr_grid"])
    _both_copies(result, edit)


# ---------------------------------------------------------------------------- restores (TRACE-3)


def _grid_arm(result: dict[str, Any]) -> dict[str, Any]:
    return next(entry for entry in result["initialization_provenance"]["arms"].values() if entry.get("runs"))


def _loaded_at(result: dict[str, Any], name: str, at: str) -> None:
    """The restoration evidence's own time of the load (REST-6 holds a restore's `at` to it), re-hashed."""
    evidence = json.loads(_files(result)[name]["content"])
    evidence["loaded_at"] = at
    rewrite_evidence(result, name, json.dumps(evidence, sort_keys=True))


def restore_times_reversed(result: dict[str, Any]) -> None:
    """The first run's restore happened last: its time moved past the others', in the arm's and the run's copy
    and in the restoration evidence's loaded_at."""
    arm = _grid_arm(result)
    first = arm["restores"][0]
    late = "2026-12-31T23:59:59+00:00"
    for restore in [first, *(r for run in arm["runs"].values() for r in run["restores"] if r["at"] == first["at"]
                             and r["client"] == first["client"])]:
        restore["at"] = late
    _loaded_at(result, first["evidence_ref"], late)


def grid_restores_reordered(result: dict[str, Any]) -> None:
    """The LR-grid arm's restores listed in another order than its runs, renumbered (count unchanged)."""
    arm = _grid_arm(result)
    arm["restores"] = [arm["restores"][1], arm["restores"][0], *arm["restores"][2:]]
    for number, restore in enumerate(arm["restores"], 1):
        restore["restore"] = number


def grid_arm_restore_count_lowered(result: dict[str, Any]) -> None:
    """TriMuon's arm-level restore_count one lower, its last restore and that restore's optimizer check dropped
    (REST-4's count, restores and checks agree)."""
    arm = _grid_arm(result)
    arm["restore_count"] -= 1
    arm["restores"] = arm["restores"][:-1]
    arm["optimizer_checks"] = [c for c in arm["optimizer_checks"] if c["after_restore"] <= arm["restore_count"]]


# ---------------------------------------------------------------------------- final checkpoints (TRACE-2)


def _moved_checkpoint(result: dict[str, Any], new_uri: Callable[[str], str]) -> None:
    checkpoint = result["evidence"]["checkpoints"][-1]
    old = checkpoint["uri"]
    _replace_everywhere(result, old, new_uri(old))


def final_checkpoint_from_another_client(result: dict[str, Any]) -> None:
    """The last arm's final checkpoint is another client's, everywhere it is named (predictions re-hashed)."""
    _moved_checkpoint(result, lambda uri: "tinker://sess-000000000000:train:9/" + uri.split("/", 3)[3])


def final_checkpoint_renamed(result: dict[str, Any]) -> None:
    """The last arm's final checkpoint is an intermediate save's name, everywhere it is named."""
    _moved_checkpoint(result, lambda uri: uri.rsplit("/", 1)[0] + "/intermediate-save")


# ---------------------------------------------------------------------------- adaptation manifests (TRACE-4)


def adaptation_batches_replaced(result: dict[str, Any]) -> None:
    """Every manifest names other batches (the hash recomputed): the sft-steps.jsonl batches are not these."""
    for manifest in result["adaptation_manifests"]:
        ids = [f"step{n:04d}-{hashlib.sha256(str(n).encode()).hexdigest()[:16]}"
               for n in range(len(manifest["adaptation_batch_ids"]))]
        manifest["adaptation_batch_ids"] = ids
        manifest["adaptation_batch_hash"] = hashlib.sha256(json.dumps(ids).encode()).hexdigest()


# ---------------------------------------------------------------------------- service routing (TRACE-5)


def service_routing_says_fork(result: dict[str, Any]) -> None:
    """service-routing.json says the fork was deployed (every arm on it), re-hashed."""
    routing = json.loads(_files(result)["service-routing.json"]["content"])
    routing.update(fork=True, reason="arms ['dimuon_lite', 'trimuon'] need a forked optimizer, so every arm of the "
                                     "comparison runs on the fork at this URL")
    rewrite_evidence(result, "service-routing.json", json.dumps(routing, indent=2, sort_keys=True))


# ---------------------------------------------------------------------------- the re-solver (TRACE-6)


def resolver_code_hash_replaced(result: dict[str, Any]) -> None:
    """The re-solver's code_sha256 (and the 12-hex prefix its samples quote) is not its retained code's: the
    audit and its files say so consistently, the pipeline code is left as it was."""
    old = result["generation_audit"]["resolver"]["code_sha256"]
    new = hashlib.sha256(b"another re-solver").hexdigest()
    _replace_everywhere(result, old, new, skip=("pipeline-code.json", "code-revision.json"))
    _replace_everywhere(result, f"sha256:{old[:12]}", f"sha256:{new[:12]}",
                        skip=("pipeline-code.json", "code-revision.json"))


# ---------------------------------------------------------------------------- unread evidence (TRACE-7)


def contradicting_file_added(result: dict[str, Any]) -> None:
    """An extra evidence file, named by nothing, says every arm scored 1.0."""
    rows = [{"arm": arm, "metric": "accuracy", "value": 1.0} for arm in result["completed_arms"]]
    content = "".join(json.dumps(row) + "\n" for row in rows)
    result["evidence"]["files"].append({"name": "final-scores.jsonl", "kind": "metrics", "encoding": "utf-8",
                                        "sha256": hashlib.sha256(content.encode()).hexdigest(), "content": content})


# ---------------------------------------------------------------------------- the record's self-check (TRACE-8)


def self_grade_upgraded(result: dict[str, Any]) -> None:
    """RESULT.grade says every failing category verified, with no issues."""
    for category in result["grade"]["categories"].values():
        if category["status"] in ("invalid", "unverified", "unknown"):
            category.update(status="verified", issues=[])


def validation_status_passed_over_a_problem(result: dict[str, Any]) -> None:
    """RESULT.validation lists a problem but says passed, 0 problems, no failed check."""
    result["validation"] = {"version": 1, "status": "passed", "problem_count": 0, "failed_checks": [],
                            "problems": ["evaluation.score_reproduces: a score is not the mean of its rows"]}


# ---------------------------------------------------------------------------- a disguised parity check (item 7)


def disguised_same_code_parity(result: dict[str, Any]) -> None:
    """issue 45 item 7: parity_sides removed, the exact-zero errors set to 3e-9, baseline_revision the spec's pin;
    the probe's own record (correctness-preflight.json) edited alike and re-hashed."""
    spec = json.loads(_files(result)["rehearsal-spec.json"]["content"] if "rehearsal-spec.json" in _files(result)
                      else _files(result)["spec.json"]["content"])
    revision = json.loads(_files(result)["spec-revision.plan.json"]["content"])

    def disguise(path: dict[str, Any]) -> None:
        path.pop("parity_sides", None)
        for entry in path["errors"].values():
            for key in ("max_abs_error", "relative_l2_error"):
                if entry[key] == 0.0:
                    entry[key] = 3e-9
        pins = [p for p in (spec.get("correctness_preflight") or {}).get("paths", []) if p["id"] == path["id"]]
        pins += [p for p in (revision.get("correctness_preflight") or {}).get("paths", []) if p["id"] == path["id"]]
        pinned = next(p["baseline_revision"] for p in pins if "UNRESOLVED" not in str(p.get("baseline_revision")))
        path["baseline_revision"] = pinned

    for path in result["correctness_preflight"]["paths"]:
        disguise(path)
    probe = json.loads(_files(result)["correctness-preflight.json"]["content"])
    for path in probe if isinstance(probe, list) else [probe]:
        disguise(path)
    rewrite_evidence(result, "correctness-preflight.json", json.dumps(probe, sort_keys=True))


# family -> tampering name -> function (each runs on the wiring record of that family). The disguised parity check
# (item 7) is not here: it aims at removing a finding, not at evading a new one, so what holds it is that the
# same-code finding stays (tests/e2e/test_grader_traces.py).
CORPUS: dict[str, dict[str, Callable[[dict[str, Any]], None]]] = {
    "gs1": {
        "training steps 40 and rewards raised": training_steps_and_rewards_inflated,
        "kernel bandwidth changed": kernel_bandwidth_changed,
        "final checkpoint from another client": final_checkpoint_from_another_client,
        "unread contradicting file added": contradicting_file_added,
        "self-grade upgraded": self_grade_upgraded,
        "validation passed over a problem": validation_status_passed_over_a_problem,
    },
    "selfgen": {
        "training steps 40 and rewards raised": training_steps_and_rewards_inflated,
        "final checkpoint renamed": final_checkpoint_renamed,
        "re-solver code hash replaced": resolver_code_hash_replaced,
        "unread contradicting file added": contradicting_file_added,
    },
    "trimuon": {
        "SFT run numbers rewritten": sft_run_numbers_rewritten,
        "LR grid rewritten": sft_lr_grid_rewritten,
        "restore times reversed": restore_times_reversed,
        "LR-grid restores reordered": grid_restores_reordered,
        "arm-level restore_count lowered": grid_arm_restore_count_lowered,
        "final checkpoint renamed": final_checkpoint_renamed,
        "adaptation batches replaced": adaptation_batches_replaced,
        "service routing says fork": service_routing_says_fork,
        "unread contradicting file added": contradicting_file_added,
        "self-grade upgraded": self_grade_upgraded,
    },
}


# ---------------------------------------------------------------------------- run directories


def _result(run: Path) -> dict[str, Any]:
    return json.loads((run / "result.json").read_text())


def _write_result(run: Path, result: dict[str, Any]) -> None:
    (run / "result.json").write_text(json.dumps(result, indent=2))


def _events(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines() if line.strip()]


def _write_events(run: Path, events: list[dict[str, Any]]) -> None:
    (run / "events.jsonl").write_text("".join(json.dumps(event) + "\n" for event in events))


def rewrite_run_evidence(run: Path, result: dict[str, Any], name: str, text: str) -> None:
    """`name` rewritten as the store would have written it: inline in RESULT (every hash mention following),
    in evidence/, in manifest.json and in its evidence_added event."""
    old = _files(result)[name]["sha256"]
    rewrite_evidence(result, name, text)
    new = _files(result)[name]["sha256"]
    (run / "evidence" / name).write_text(text)
    manifest = json.loads((run / "evidence" / "manifest.json").read_text())
    for entry in manifest["files"]:
        if entry["name"] == name:
            entry.update(sha256=new, bytes=len(text.encode()))
    (run / "evidence" / "manifest.json").write_text(json.dumps(manifest, indent=2))
    _write_events(run, [{**e, "sha256": new} if e.get("event") == "evidence_added" and e.get("sha256") == old else e
                        for e in _events(run)])


def run_rewards_raised(run: Path) -> None:
    """result.json: every RL arm's training rewards raised by 0.2 (both copies); the events say otherwise."""
    result = _result(run)
    raise_train_rewards(result, 0.2)
    _write_result(run, result)


def run_last_training_step_dropped(run: Path) -> None:
    """events.jsonl: the last training_step event dropped (the arm's steps_completed stays)."""
    events = _events(run)
    last = max(i for i, e in enumerate(events) if e.get("event") == "training_step")
    _write_events(run, events[:last] + events[last + 1:])


def run_restore_before_the_run(run: Path) -> None:
    """The first arm's creation restore dated a year before the run, in result.json and its restoration
    evidence (re-hashed wherever the store names it)."""
    result = _result(run)
    arm = next(iter(result["initialization_provenance"]["arms"].values()))
    arm["restores"][0]["at"] = "2025-12-07T00:00:00+00:00"
    name = arm["restores"][0]["evidence_ref"]
    evidence = json.loads(_files(result)[name]["content"])
    evidence["loaded_at"] = arm["restores"][0]["at"]
    rewrite_run_evidence(run, result, name, json.dumps(evidence, sort_keys=True))
    _write_result(run, result)


def run_sft_step_timings_scaled(run: Path) -> None:
    """sft-steps.jsonl: every trimuon row's forward_backward_seconds x0.1 (a timing no verdict reads), re-hashed
    everywhere the store names it; the training_step events say otherwise."""
    result = _result(run)
    rows = [json.loads(line) for line in _files(result)["sft-steps.jsonl"]["content"].splitlines() if line.strip()]
    for row in rows:
        if row["run"].startswith("trimuon"):
            row["forward_backward_seconds"] *= 0.1
    rewrite_run_evidence(run, result, "sft-steps.jsonl", "".join(json.dumps(row, sort_keys=True) + "\n" for row in rows))
    _write_result(run, result)


RUN_DIR_CORPUS: dict[str, dict[str, Callable[[Path], None]]] = {
    "gs1": {"rewards raised in result.json": run_rewards_raised,
            "creation restore dated before the run": run_restore_before_the_run},
    "selfgen": {"last training_step event dropped": run_last_training_step_dropped},
    "trimuon": {"sft-steps.jsonl step timings scaled": run_sft_step_timings_scaled},
}
