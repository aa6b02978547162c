"""Tamperings of an independent audit (issue 45 deliverable 10), one per line of attack, by class.

Each edits a green wiring record of its family (GS1, self-generated tasks, TriMuon) as a submitter who wanted a
better grade would, keeping every hash consistent (`leaves.rewrite_evidence`, evaluator ids re-derived with
every mention following). The name is "<class>: <what>"; tools/tamper_corpus.py reports caught/total per class.
The RUN_DIR tamperings edit a copy of the run directory (result.json, evidence/ and its manifest, events.jsonl)
alike, and may write result.json as raw text (the JSON games a dict cannot hold).
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
from pathlib import Path
from typing import Any, Callable

from leaves import rewrite_evidence
from tampering import _edit_json_file, _edit_jsonl_file, _files
from tampering_spec import _edit_evaluator, _observations, _rows, redecide
from tampering_traces import _both_copies, _events, _result, _write_events, _write_result, raise_train_rewards


# ---------------------------------------------------------------------------- helpers


def _rescore_arm(result: dict[str, Any], arm: str) -> None:
    """An RL arm's score, posted accuracy and observations recomputed from its (edited) predictions file."""
    score = next(s for s in result["evaluation"]["scores"] if s["arm"] == arm)
    rows = _rows(result, score["predictions_ref"])
    old, new = score["value"], sum(r["value"] for r in rows) / len(rows)
    score["value"] = new
    for holder in (result["metrics"], result["metrics"]["arms"].get(arm, {}),
                   (result["evidence"].get("per_arm_metrics") or {}).get(arm, {})):
        for key in ("accuracy", f"{arm}_model_accuracy"):
            if holder.get(key) == old:
                holder[key] = new
    by_item = {row["item_id"]: row["value"] for row in rows}
    name = result["decision"]["observations_file"]["name"]
    observations = _rows(result, name)
    for observation in observations:
        if observation["arm"] == arm:
            observation["value"] = by_item[observation["item_id"]]
    rewrite_evidence(result, name, "".join(json.dumps(o, sort_keys=True, separators=(",", ":")) + "\n"
                                           for o in observations))


def _wrong_row(result: dict[str, Any], arm: str) -> tuple[str, dict[str, Any]]:
    score = next(s for s in result["evaluation"]["scores"] if s["arm"] == arm)
    row = next(r for r in _rows(result, score["predictions_ref"]) if r["value"] == 0.0)
    return score["predictions_ref"], row


def _treatment(result: dict[str, Any]) -> str:
    return {"gs1": "gs1_kernel", "selfgen": "rl_selfgen"}[result["rehearsal"]["spec"].split("_")[0]]


# ---------------------------------------------------------------------------- eval items


def eval_item_swapped_for_training_item(result: dict[str, Any]) -> None:
    """The last eval item (wrong for the treatment) replaced by a training item's id in the evaluator's items, every
    prediction row and observation: the count stays, the set is not the spec's."""
    ids = next(iter(result["evaluation"]["evaluators"].values()))["items"]["ids"]
    old = ids[-1]
    new = old.replace("-test-", "-train-")
    _edit_evaluator(result, lambda p: p["items"].__setitem__("ids", [new if i == old else i for i in p["items"]["ids"]]))
    for entry in list(result["evidence"]["files"]):
        if entry["name"].startswith(("predictions-", "scored-observations")) and f'"{old}"' in entry["content"]:
            rewrite_evidence(result, entry["name"], entry["content"].replace(f'"{old}"', f'"{new}"'))


def eval_items_reordered(result: dict[str, Any]) -> None:
    """The evaluator's items listed in reverse (the same set), its id re-derived."""
    _edit_evaluator(result, lambda p: p["items"].__setitem__("ids", list(reversed(p["items"]["ids"]))))


def eval_reference_set_to_wrong_answer(result: dict[str, Any]) -> None:
    """A wrong treatment prediction made right by moving its row's reference (gold answer) to what the model said,
    value 1; the score, posted accuracy and observations recomputed, the decision recomputed."""
    arm = _treatment(result)
    name, wrong = _wrong_row(result, arm)
    import re

    said = re.findall(r"\\boxed\{([^}]*)\}", str(wrong["prediction"]))
    answer = said[-1] if said else "0"

    def fix(rows: list[dict[str, Any]]) -> None:
        for row in rows:
            if row["item_id"] == wrong["item_id"]:
                row["reference"] = answer
                row["value"] = 1.0
                if "grading" in row:
                    row["grading"] = "correct" if isinstance(row["grading"], str) else row["grading"]
    _edit_jsonl_file(result, name, fix)
    _rescore_arm(result, arm)
    redecide(result)


def eval_wrong_value_set_right(result: dict[str, Any]) -> None:
    """A wrong treatment prediction's value written 1.0, its text left as the model's; score, observations and
    decision recomputed."""
    arm = _treatment(result)
    name, wrong = _wrong_row(result, arm)
    _edit_jsonl_file(result, name, lambda rows: [row.update(value=1.0) for row in rows
                                                 if row["item_id"] == wrong["item_id"]])
    _rescore_arm(result, arm)
    redecide(result)


def eval_heldout_item_renamed(result: dict[str, Any]) -> None:
    """TriMuon: one held-out conversation's id is a training conversation's, in items and every prediction row."""
    ids = next(iter(result["evaluation"]["evaluators"].values()))["items"]["ids"]
    old = ids[-1]
    new = old.replace("-test-", "-train-")
    _edit_evaluator(result, lambda p: p["items"].__setitem__("ids", [new if i == old else i for i in p["items"]["ids"]]))
    for entry in list(result["evidence"]["files"]):
        if entry["name"].startswith("predictions-") and f'"{old}"' in entry["content"]:
            rewrite_evidence(result, entry["name"], entry["content"].replace(f'"{old}"', f'"{new}"'))


# ---------------------------------------------------------------------------- decision arithmetic


def decision_alpha_loosened(result: dict[str, Any]) -> None:
    """alpha 0.05 -> 0.4 (a narrower interval), the decision recomputed with it."""
    redecide(result, lambda rule: rule.update(alpha=0.4))


def decision_bonferroni_dropped(result: dict[str, Any]) -> None:
    """Self-generated: the simultaneous criteria decided without the Bonferroni split (alpha 0.05 each)."""
    redecide(result, simultaneous=False)


def decision_range_halved(result: dict[str, Any]) -> None:
    """Each criterion's range 2 -> 1 in the decision record (bounds kept), half-width, bounds and ci recomputed from
    it: a narrower interval than the observations' range allows."""
    for criterion in result["decision"]["criteria"]:
        criterion["range"] = criterion["range"] / 2
        half = criterion["range"] * math.sqrt(math.log(1 / criterion["alpha"]) / (2 * criterion["n"]))
        criterion.update(half_width=half, lower=criterion["effect"] - half, upper=criterion["effect"] + half)
    if "ci" in result:
        primary = result["decision"]["criteria"][0]
        result["ci"] = [primary["lower"], primary["upper"]]


def decision_base_weight_zeroed(result: dict[str, Any]) -> None:
    """Self-generated: recovered_half_gain weights the base 0 instead of -0.5 (the gain over the base dropped)."""
    def edit(rule: dict[str, Any]) -> None:
        for criterion in rule["criteria"]:
            if "base" in criterion["weights"]:
                criterion["weights"]["base"] = 0.0
    redecide(result, edit)


def decision_margin_lowered_in_record(result: dict[str, Any]) -> None:
    """The criterion's margin -0.03 -> -0.5 in the decision and RESULT.margin (the spec files left as written)."""
    redecide(result, lambda rule: [c.update(margin=c["margin"] - 0.47) for c in rule["criteria"]])


def decision_second_seed_duplicated(result: dict[str, Any]) -> None:
    """Every observation copied as seed 1 (the spec schedules seed 0): two 'seeds' settle confidence."""
    from dataclasses import replace

    observations = _observations(result)
    doubled = observations + [replace(o, seed=1) for o in observations]
    redecide(result, lambda rule: rule.update(seeds=[0, 1]), observations=doubled)
    result["seeds"] = 2


def decision_n_inflated(result: dict[str, Any]) -> None:
    """Each criterion claims n = 480 with the half-width recomputed for it (the observations left at 48)."""
    for criterion in result["decision"]["criteria"]:
        criterion["n"] = 480
        half = criterion["range"] * math.sqrt(math.log(1 / criterion["alpha"]) / (2 * 480))
        criterion.update(half_width=half, lower=criterion["effect"] - half, upper=criterion["effect"] + half)
    if "ci" in result:
        primary = result["decision"]["criteria"][0]
        result["ci"] = [primary["lower"], primary["upper"]]


def decision_criterion_status_passed(result: dict[str, Any]) -> None:
    """decision.criteria[*].status 'unsettled' -> 'passed' (the numbers left)."""
    for criterion in result["decision"]["criteria"]:
        criterion["status"] = "passed"


def decision_simultaneous_flag_false(result: dict[str, Any]) -> None:
    """decision.simultaneous false while adjustment stays bonferroni and the alphas stay split."""
    result["decision"]["simultaneous"] = False


def decision_roles_swapped(result: dict[str, Any]) -> None:
    """GS1: role_to_arm says the baseline is the treatment and the other way round; the decision recomputed under it."""
    def swap(rule: dict[str, Any]) -> None:
        for criterion in rule["criteria"]:
            w = criterion["weights"]
            w["treatment"], w["baseline"] = w["baseline"], w["treatment"]
    redecide(result, swap)


# ---------------------------------------------------------------------------- the SFT comparison (no decision_rule)


def _criteria(result: dict[str, Any]) -> dict[str, Any]:
    return json.loads(_files(result)["verdict-criteria.json"]["content"])


def sft_margins_loosened(result: dict[str, Any]) -> None:
    """verdict-criteria.json's margins lowered until both criteria are met, RESULT.margin and the verdict follow."""
    criteria = _criteria(result)
    for criterion in criteria["criteria"]:
        criterion["margin"] = round(criterion["effect"] - 0.01, 6)
        criterion["met"] = True
    rewrite_evidence(result, "verdict-criteria.json", json.dumps(criteria, indent=2, sort_keys=True))
    result["margin"] = criteria["criteria"][0]["margin"]
    result["verdict"] = "supported"
    for key in ("summary", "reasoning"):
        result[key] = result[key].replace("refuted", "supported").replace(" misses ", " clears ")


def sft_baseline_selection_moved(result: dict[str, Any]) -> None:
    """dimuon_lite's selected LR moved from its best run to 0.02 (its worst), the per-arm numbers, loss_eval's
    selected run, the criteria's effects and the verdict following."""
    criteria = _criteria(result)
    run = result["metrics"]["arms"]["dimuon_lite"]["runs"]["0.02"]
    per_arm = criteria["per_arm"]["dimuon_lite"]
    per_arm.update(selected_lr=0.02, selected_run="dimuon_lite@lr=0.02", grid_edge=True,
                   heldout_nll_token_mean=run["heldout_nll_token_mean"],
                   median_optim_step_seconds=run["median_optim_step_seconds"])
    trimuon = criteria["per_arm"]["trimuon"]
    for criterion in criteria["criteria"]:
        key = criterion["metric"]
        criterion["effect"] = per_arm[key] - trimuon[key]
        criterion["met"] = criterion["effect"] > criterion["margin"]
    rewrite_evidence(result, "verdict-criteria.json", json.dumps(criteria, indent=2, sort_keys=True))

    def edit(arm: str, metrics: dict[str, Any]) -> None:
        if arm == "dimuon_lite":
            metrics.update(selected_lr=0.02, selected_run="dimuon_lite@lr=0.02",
                           heldout_nll_token_mean=run["heldout_nll_token_mean"],
                           median_optim_step_seconds=run["median_optim_step_seconds"])
    _both_copies(result, edit)
    loss = result["loss_eval"]["arms"]["dimuon_lite"]
    selected = loss["runs"]["0.02"]
    loss.update({k: selected[k] for k in ("value", "token_mean", "example_mean", "nll_sum", "n_tokens")},
                selected_run="0.02")
    result["effect"] = criteria["criteria"][0]["effect"]
    if all(c["met"] for c in criteria["criteria"]):
        result["verdict"] = "supported"


def sft_selected_run_label_only(result: dict[str, Any]) -> None:
    """metrics.arms.trimuon.selected_run names the 0.04 run while every number is the 0.08 run's."""
    _both_copies(result, lambda arm, m: m.update(selected_run="trimuon@lr=0.04") if arm == "trimuon" else None)


def sft_train_nll_rewritten(result: dict[str, Any]) -> None:
    """Every trimuon row of sft-steps.jsonl: train NLL and loss_sum 10% lower (consistent), the runs' first/last
    step train NLL in metrics following."""
    rows = _rows(result, "sft-steps.jsonl")
    for row in rows:
        if row["run"].startswith("trimuon"):
            row["train_nll_token_mean"] *= 0.9
            row["loss_sum"] *= 0.9
    rewrite_evidence(result, "sft-steps.jsonl", "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))

    def edit(arm: str, metrics: dict[str, Any]) -> None:
        if arm == "trimuon":
            for run in metrics["runs"].values():
                run["first_step_train_nll_token_mean"] *= 0.9
                run["last_step_train_nll_token_mean"] *= 0.9
    _both_copies(result, edit)


def sft_token_counts_shifted(result: dict[str, Any]) -> None:
    """Every held-out row of every run counts one token more (n_tokens + 1) and loss_eval/metrics recomputed: the
    held-out NLL per token drops for every arm alike."""
    for entry in list(result["evidence"]["files"]):
        if entry["name"].startswith("predictions-") and entry["name"] != "predictions-base.jsonl":
            def more(rows: list[dict[str, Any]]) -> None:
                for row in rows:
                    row["prediction"]["n_tokens"] += 1
            _edit_jsonl_file(result, entry["name"], more)
    for arm, loss in result["loss_eval"]["arms"].items():
        for lr, run in (loss.get("runs") or {}).items():
            rows = _rows(result, f"predictions-{arm}-lr{lr}.jsonl")
            n = sum(r["prediction"]["n_tokens"] for r in rows)
            run.update(n_tokens=n, token_mean=run["nll_sum"] / n, value=run["nll_sum"] / n,
                       example_mean=sum(r["prediction"]["nll_sum"] / r["prediction"]["n_tokens"] for r in rows) / len(rows))
            metrics = result["metrics"]["arms"][arm]["runs"][lr]
            metrics.update(heldout_nll_token_mean=run["token_mean"], heldout_nll_example_mean=run["example_mean"],
                           heldout_n_tokens=n)
        selected = loss["runs"][loss["selected_run"]]
        loss.update({k: selected[k] for k in ("value", "token_mean", "example_mean", "n_tokens")})
        result["metrics"]["arms"][arm]["heldout_nll_token_mean"] = selected["token_mean"]
    result["evidence"]["per_arm_metrics"] = copy.deepcopy({a: result["metrics"]["arms"][a]
                                                           for a in result["evidence"]["per_arm_metrics"]})


# ---------------------------------------------------------------------------- the spec's fixed values


def steps_deviation_rewritten(result: dict[str, Any]) -> None:
    """The steps deviation says the spec asked for 2 steps (original '2'): no change of step count admitted."""
    for deviation in result["deviations"]:
        if deviation["field"] == "steps":
            deviation["original"] = deviation["effective"]


def rehearsal_scale_claimed_standard(result: dict[str, Any]) -> None:
    """RESULT.rehearsal says standard scale (the record is the wiring one); summary follows."""
    result["rehearsal"]["scale"] = "standard"
    result["summary"] = result["summary"].replace("at the wiring scale", "at the standard scale")


def audit_sample_seed_changed(result: dict[str, Any]) -> None:
    """generation_audit.sample_seed 1 -> 7, the samples re-sorted by the contract's sha256([seed, item_id]) order."""
    audit = result["generation_audit"]
    audit["sample_seed"] = 7
    key = lambda s: hashlib.sha256(json.dumps([7, s["item_id"]]).encode()).hexdigest()  # noqa: E731
    audit["samples"] = sorted(audit["samples"], key=key)
    audit_file = json.loads(_files(result)[audit["audit_file"]]["content"])
    if isinstance(audit_file, dict):
        if "sample_seed" in audit_file:
            audit_file["sample_seed"] = 7
        if "samples" in audit_file:
            audit_file["samples"] = sorted(audit_file["samples"], key=key)
    rewrite_evidence(result, audit["audit_file"], json.dumps(audit_file, indent=2))


def audit_comparison_loosened(result: dict[str, Any]) -> None:
    """answer_comparison numeric_exact -> numeric_tolerance (a label off by a little would pass)."""
    result["generation_audit"]["answer_comparison"] = "numeric_tolerance"


# ---------------------------------------------------------------------------- activation (re-executable)


def activation_value_moved_in_range(result: dict[str, Any]) -> None:
    """GS1: kernel_effective_neighbors_p10 moved to another in-range number, the pilot log left as it was."""
    values = result["activation_calibration"]["values"]
    values["kernel_effective_neighbors_p10"] = round(values["kernel_effective_neighbors_p10"] + 5.0, 6)


def activation_pilot_rewards_raised(result: dict[str, Any]) -> None:
    """The chosen pilot log's rewards: every 0 reward of the treatment written 1 in its first step, the step's
    mean_reward and pilot_mean_reward following."""
    name = sorted(n for n in _files(result) if n.startswith("activation-pilot-"))[-1]
    rows = _rows(result, name)
    first = rows[0]
    first["rewards"] = [1.0 if r == 0.0 else r for r in first["rewards"]]
    first["mean_reward"] = sum(first["rewards"]) / len(first["rewards"])
    rewrite_evidence(result, name, "".join(json.dumps(r) + "\n" for r in rows))
    treated = [r for r in rows if r.get("arm") == first.get("arm")]
    values = result["activation_calibration"]["values"]
    key = next(k for k in values if "mean" in k and "reward" in k)
    values[key] = sum(r["mean_reward"] for r in treated) / len(treated)


# ---------------------------------------------------------------------------- required evidence


def _drop_files(result: dict[str, Any], keep: Callable[[str], bool]) -> None:
    before = len(result["evidence"]["files"])
    result["evidence"]["files"] = [e for e in result["evidence"]["files"] if keep(e["name"])]
    assert len(result["evidence"]["files"]) < before, "nothing dropped"


def probe_script_dropped(result: dict[str, Any]) -> None:
    """The correctness probe's independent reference (script-*reference*.py) dropped from the evidence and from the
    retained pipeline code and code revision alike (re-hashed): probe scripts are kept (§4)."""
    dropped = [n for n in _files(result) if n.startswith("script-") and "reference" in n]
    _drop_files(result, lambda name: name not in dropped)
    stems = [name[len("script-"):] for name in dropped]

    def unlist(files: Any) -> None:
        for path in [p for p in files if any(p.endswith("/" + stem) for stem in stems)]:
            del files[path]
    _edit_json_file(result, "pipeline-code.json", lambda bundle: unlist(bundle["files"]))
    _edit_json_file(result, "code-revision.json", lambda revision: unlist(revision["files_sha256"]))


def restoration_update_check_dropped(result: dict[str, Any]) -> None:
    _drop_files(result, lambda name: name != "restoration-update-check.json")


def first_generation_round_dropped(result: dict[str, Any]) -> None:
    """Self-generated: round 1's candidates and audit (the failed round) dropped, only round 2 kept."""
    _drop_files(result, lambda name: not name.endswith("-v1.jsonl") and not name.endswith("-v1.json"))


def sft_steps_log_dropped(result: dict[str, Any]) -> None:
    _drop_files(result, lambda name: name != "sft-steps.jsonl")


def correctness_start_state_dropped(result: dict[str, Any]) -> None:
    _drop_files(result, lambda name: name != "correctness-start-state.npz")


def restoration_file_shared(result: dict[str, Any]) -> None:
    """GS1: gs1_kernel's restoration evidence dropped and every reference to it pointed at grpo_gs8's file."""
    _drop_files(result, lambda name: name != "restoration-gs1_kernel.json")
    arm = result["initialization_provenance"]["arms"]["gs1_kernel"]
    text = json.dumps(arm).replace("restoration-gs1_kernel.json", "restoration-grpo_gs8.json")
    result["initialization_provenance"]["arms"]["gs1_kernel"] = json.loads(text)


# ---------------------------------------------------------------------------- prose


def rehearsal_prefix_reworded(result: dict[str, Any]) -> None:
    """The summary still starts 'REHEARSAL' but says it is a result to submit at full scale."""
    text = result["summary"]
    result["summary"] = "REHEARSAL-checked, full-scale result to submit" + text[text.index(" ("):]


def summary_item_count_in_words(result: dict[str, Any]) -> None:
    """'on 48 held-out items' -> 'on all 1,319 held-out items' (a thousands separator)."""
    n = len(next(iter(result["evaluation"]["evaluators"].values()))["items"]["ids"])
    assert f"on {n} held-out items" in result["summary"]
    result["summary"] = result["summary"].replace(f"on {n} held-out items", "on all 1,319 held-out items")


def summary_verdict_zero_width(result: dict[str, Any]) -> None:
    """Self-generated: 'Verdict inconclusive (insufficient_evidence)' -> 'Verdict s\u200bupported (s\u200bupported)':
    reads 'supported', matches no word 'supported'."""
    zw = "s\u200bupported"
    result["summary"] = result["summary"].replace(f"Verdict {result['verdict']} ({result['outcome_reason']})",
                                                  f"Verdict {zw} ({zw})")
    assert zw in result["summary"]


def summary_verdict_homoglyph(result: dict[str, Any]) -> None:
    """GS1: the summary ends 'The claim is \u0455upported.' (Cyrillic dze for s)."""
    result["summary"] = result["summary"].rstrip().rstrip(".") + "; the claim is \u0455upported."


def reasoning_misses_reworded_clears(result: dict[str, Any]) -> None:
    """TriMuon: the reasoning says each criterion's effect 'clears' its margin (numbers left as they are)."""
    assert " misses " in result["reasoning"]
    result["reasoning"] = result["reasoning"].replace(" misses ", " clears ")


def reasoning_confidence_strong(result: dict[str, Any]) -> None:
    """GS1: 'Confidence is weak because of:' -> 'Confidence is strong despite:'."""
    assert "Confidence is weak" in result["reasoning"]
    result["reasoning"] = result["reasoning"].replace("Confidence is weak because of:", "Confidence is strong despite:")


def summary_learning_rate_at_spec_scale(result: dict[str, Any]) -> None:
    """TriMuon: the summary's 'lr 0.04; lr_grid [0.02, 0.04, 0.08]' says the spec's scale, 'lr 0.0001; lr_grid
    [5e-05, 0.0001, 0.0002]'."""
    old = "lr 0.04; lr_grid [0.02, 0.04, 0.08]"
    assert old in result["summary"]
    result["summary"] = result["summary"].replace(old, "lr 0.0001; lr_grid [5e-05, 0.0001, 0.0002]")


# ---------------------------------------------------------------------------- leaves


def checkpoint_steps_claimed(result: dict[str, Any]) -> None:
    """Every listed checkpoint's step 2 -> 40 (the spec's full run)."""
    for checkpoint in result["evidence"]["checkpoints"]:
        checkpoint["step"] = 40


def budget_overrun_within(result: dict[str, Any]) -> None:
    """budget_use: 5400 s elapsed of a 3600 s budget, still within_budget true."""
    result["budget_use"]["elapsed_wall_seconds"] = 5400.0
    result["budget_use"]["within_budget"] = True


def rehearsal_note_reworded(result: dict[str, Any]) -> None:
    """RESULT.rehearsal.note says the record may be submitted."""
    result["rehearsal"]["note"] = "REHEARSAL passed: the result may be submitted"


def audit_resolver_independent_claim(result: dict[str, Any]) -> None:
    """The re-solver is named as the generator's own checkpoint, resolver_independent kept true."""
    audit = result["generation_audit"]
    audit["resolver"]["name"] = audit["compared_identities"]["generator"]["name"]


# ---------------------------------------------------------------------------- disguised checks


def parity_same_code_flag_cleared(result: dict[str, Any]) -> None:
    """TriMuon: every parity side says same_code false with a reason that names another implementation, in RESULT and
    the probe's record alike (errors left at exactly zero)."""
    def clear(path: dict[str, Any]) -> None:
        for side in (path.get("parity_sides") or {}).values():
            side["same_code"] = False
            side["reason"] = "the baseline side runs the reference implementation of DiMuon-lite"
    for path in result["correctness_preflight"]["paths"]:
        clear(path)
    probe = json.loads(_files(result)["correctness-preflight.json"]["content"])
    for path in probe if isinstance(probe, list) else [probe]:
        clear(path)
    rewrite_evidence(result, "correctness-preflight.json", json.dumps(probe, sort_keys=True))


# ---------------------------------------------------------------------------- precedence


def observations_dropped_verdict_flipped(result: dict[str, Any]) -> None:
    """GS1: the observations file dropped and the verdict written supported with strong confidence: the decision is
    unverified for the missing file, the verdict still a value the record carries."""
    _drop_files(result, lambda name: name != result["decision"]["observations_file"]["name"])
    result["verdict"] = "supported"
    result["confidence"] = "strong"


# ---------------------------------------------------------------------------- feasibility


def feasibility_training_seconds_scaled(result: dict[str, Any]) -> None:
    """The pilot's training seconds and wall seconds x0.1, the projection's training phase and totals following."""
    feasibility = result["feasibility"]
    training = feasibility["measurements"]["training"]
    saved = training["seconds"] * 0.9
    training["seconds"] *= 0.1
    training["wall_seconds"] *= 0.1
    projection = feasibility["projection"]
    phase = projection["phases"]["training"]
    saved_wall = phase["wall_seconds"] * 0.9
    saved_service = phase["service_seconds"] * 0.9
    phase["wall_seconds"] *= 0.1
    phase["service_seconds"] *= 0.1
    projection["wall_seconds"] -= saved_wall
    projection["service_seconds"] -= saved_service
    if "planned_seconds" in projection:
        projection["planned_seconds"] = max(0.0, projection["planned_seconds"] - saved)


def feasibility_eval_count_halved(result: dict[str, Any]) -> None:
    """config and effective_config n_eval halved (the projection then covers half the evaluation)."""
    for key in ("config", "effective_config"):
        config = result["feasibility"][key]
        config["n_eval"] = config["n_eval"] // 2


def feasibility_planned_units_halved(result: dict[str, Any]) -> None:
    for phase in result["feasibility"]["measurements"].values():
        if isinstance(phase, dict) and isinstance(phase.get("planned_units"), int) and phase["planned_units"] > 1:
            phase["planned_units"] //= 2


# ---------------------------------------------------------------------------- capacity_block


def reported_as_capacity_stop(result: dict[str, Any]) -> None:
    """A finished comparison reported as stopped by capacity before any comparison step: status failed, no verdict,
    incomplete_execution, capacity_block with 0 steps (the arms' metrics say 2 ran)."""
    result["status"] = "failed"
    for key in ("verdict", "confidence", "effect", "ci", "margin"):
        result.pop(key, None)
    result["outcome_reason"] = "incomplete_execution"
    if result["rehearsal"]["spec"].startswith("selfgen"):
        result["verdict"] = "inconclusive"
    result["capacity_block"] = {"error": "HTTP 429 trainer capacity exhausted", "comparison_steps_completed": 0,
                                "released_clients": True}


def capacity_block_on_success(result: dict[str, Any]) -> None:
    result["capacity_block"] = {"error": "", "comparison_steps_completed": 2, "released_clients": True}


# ---------------------------------------------------------------------------- manifest games (bare)


def predictions_copy_edited(result: dict[str, Any]) -> None:
    """A copy of the treatment's predictions under a new name, its wrong rows marked right; the score's
    predictions_ref points at the copy, score and observations follow; the original left as it was."""
    arm = _treatment(result)
    score = next(s for s in result["evaluation"]["scores"] if s["arm"] == arm)
    original = _files(result)[score["predictions_ref"]]
    rows = _rows(result, score["predictions_ref"])
    for row in rows[:6]:
        row["value"] = 1.0
    content = "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows)
    name = score["predictions_ref"].replace(".jsonl", "-final.jsonl")
    result["evidence"]["files"].append({**original, "name": name, "content": content,
                                        "sha256": hashlib.sha256(content.encode()).hexdigest()})
    score["predictions_ref"] = name
    _rescore_arm(result, arm)
    redecide(result)


def evidence_entry_duplicated(result: dict[str, Any]) -> None:
    """The observations file listed a second time under the same name with other content and its own hash."""
    name = result["decision"]["observations_file"]["name"]
    entry = _files(result)[name]
    content = entry["content"].replace('"value":0.0', '"value":1.0')
    result["evidence"]["files"].append({**entry, "content": content,
                                        "sha256": hashlib.sha256(content.encode()).hexdigest()})


def sha256_uppercase(result: dict[str, Any]) -> None:
    """Every evidence file's sha256 written in upper-case hex (the same hash, another string)."""
    for entry in result["evidence"]["files"]:
        entry["sha256"] = entry["sha256"].upper()


# ---------------------------------------------------------------------------- number formats


def effect_nan(result: dict[str, Any]) -> None:
    """effect and ci written NaN (json.dumps writes the literal NaN; every comparison with it is false)."""
    result["effect"] = float("nan")
    result["ci"] = [float("nan"), float("nan")]


def activation_value_nan(result: dict[str, Any]) -> None:
    values = result["activation_calibration"]["values"]
    values[next(iter(values))] = float("nan")


def loss_value_infinite(result: dict[str, Any]) -> None:
    """TriMuon: dimuon_lite's loss_eval value (and token_mean) written Infinity."""
    entry = result["loss_eval"]["arms"]["dimuon_lite"]
    entry["value"] = entry["token_mean"] = float("inf")


def item_id_trailing_space(result: dict[str, Any]) -> None:
    """One eval item id with a trailing space, in items, rows and observations."""
    ids = next(iter(result["evaluation"]["evaluators"].values()))["items"]["ids"]
    old = ids[0]
    new = old + " "
    _edit_evaluator(result, lambda p: p["items"].__setitem__("ids", [new if i == old else i for i in p["items"]["ids"]]))
    for entry in list(result["evidence"]["files"]):
        if entry["name"].startswith(("predictions-", "scored-observations")) and f'"{old}"' in entry["content"]:
            rewrite_evidence(result, entry["name"], entry["content"].replace(f'"{old}"', f'"{new}"'))


def restore_count_huge(result: dict[str, Any]) -> None:
    """An arm's restore_count 2**64 + 1 (a float of it rounds to 2**64)."""
    arm = next(iter(result["initialization_provenance"]["arms"].values()))
    arm["restore_count"] = 2 ** 64 + 1


def completed_arm_homoglyph(result: dict[str, Any]) -> None:
    """completed_arms names the treatment with a Cyrillic o (another arm to the grader, the same to a reader)."""
    result["completed_arms"] = [arm.replace("e", "\u0435", 1) if arm == _treatment(result) else arm
                                for arm in result["completed_arms"]]


def summary_item_count_other_noun(result: dict[str, Any]) -> None:
    """'on 48 held-out items' -> 'on 1319 GSM8K test items' (the spec's count, another noun)."""
    n = len(next(iter(result["evaluation"]["evaluators"].values()))["items"]["ids"])
    assert f"on {n} held-out items" in result["summary"]
    result["summary"] = result["summary"].replace(f"on {n} held-out items", "on 1319 GSM8K test items")


def reasoning_item_count_over(result: dict[str, Any]) -> None:
    """GS1's reasoning: 'The paired Hoeffding bound over 48 items' -> 'over 1319 items'."""
    n = len(next(iter(result["evaluation"]["evaluators"].values()))["items"]["ids"])
    assert f"over {n} items" in result["reasoning"]
    result["reasoning"] = result["reasoning"].replace(f"over {n} items", "over 1319 items")


def summary_model_claimed(result: dict[str, Any]) -> None:
    """The summary's body says every arm trained on the spec's model (the rehearsal mark left as it is)."""
    model, spec_model = result["rehearsal"]["model"], result["rehearsal"]["spec_model"]
    old = f"on {model} (a rehearsal substitute for {spec_model})"
    assert old in result["summary"]
    result["summary"] = result["summary"].replace(old, f"on {spec_model}")


def eval_question_planted_as_task(result: dict[str, Any]) -> None:
    """Self-generated: an accepted task that the audit did not sample gets a held-out question's text (the
    evaluation set file left as it is); overlap_count stays 0."""
    audit = result["generation_audit"]
    evaluation = _rows(result, audit["evaluation_file"])
    sampled = {sample["item_id"] for sample in audit["samples"]}
    tasks = _rows(result, audit["dataset_file"])
    task = next((t for t in tasks if t["disposition"] == "accepted" and t["item_id"] not in sampled),
                next(t for t in tasks if t["disposition"] == "accepted"))
    task["prompt"] = evaluation[3]["prompt"]
    rewrite_evidence(result, audit["dataset_file"], "".join(json.dumps(t) + "\n" for t in tasks))


def eval_first_item_dropped(result: dict[str, Any]) -> None:
    """GS1: the first eval item dropped from items, every predictions file and the observations; scores, accuracy and
    the decision recomputed (47 items)."""
    first = next(iter(result["evaluation"]["evaluators"].values()))["items"]["ids"][0]
    _edit_evaluator(result, lambda p: p["items"].__setitem__("ids", p["items"]["ids"][1:]))
    for score in result["evaluation"]["scores"]:
        _edit_jsonl_file(result, score["predictions_ref"],
                         lambda rows: rows.__setitem__(slice(None), [r for r in rows if r["item_id"] != first]))
    name = result["decision"]["observations_file"]["name"]
    kept = [o for o in _rows(result, name) if o["item_id"] != first]
    rewrite_evidence(result, name, "".join(json.dumps(o, sort_keys=True, separators=(",", ":")) + "\n" for o in kept))
    for score in result["evaluation"]["scores"]:
        _rescore_arm(result, score["arm"]) if score["arm"] in result["metrics"]["arms"] else None
    redecide(result)


def loss_tokens_huge(result: dict[str, Any]) -> None:
    """TriMuon: dimuon_lite's loss_eval n_tokens 10**400 (a JSON integer no float holds)."""
    result["loss_eval"]["arms"]["dimuon_lite"]["n_tokens"] = 10 ** 400


def criteria_met_written_twice(result: dict[str, Any]) -> None:
    """TriMuon: verdict-criteria.json says "met": true and then the honest "met": false for each criterion (Python's
    json keeps the last value, a first-wins reader the first), re-hashed."""
    text = _files(result)["verdict-criteria.json"]["content"]
    assert '"met": false' in text
    rewrite_evidence(result, "verdict-criteria.json", text.replace('"met": false', '"met": true,\n      "met": false'))


def observation_value_written_twice(result: dict[str, Any]) -> None:
    """GS1: every wrong observation of the treatment says "value":1.0 and then the honest "value":0.0, re-hashed."""
    arm = _treatment(result)
    name = result["decision"]["observations_file"]["name"]
    lines = _files(result)[name]["content"].splitlines(keepends=True)
    edited = [line.replace('"value":0.0', '"value":1.0,"value":0.0') if f'"arm":"{arm}"' in line else line
              for line in lines]
    assert edited != lines
    rewrite_evidence(result, name, "".join(edited))


CORPUS: dict[str, dict[str, Callable[[dict[str, Any]], None]]] = {
    "gs1": {
        "eval items: an item swapped for a training item": eval_item_swapped_for_training_item,
        "eval items: items reordered": eval_items_reordered,
        "re-executable: a row's reference moved to the wrong answer": eval_reference_set_to_wrong_answer,
        "re-executable: a wrong row's value written 1": eval_wrong_value_set_right,
        "decision arithmetic: alpha loosened, recomputed": decision_alpha_loosened,
        "decision arithmetic: range halved in the record": decision_range_halved,
        "decision arithmetic: margin lowered in the record": decision_margin_lowered_in_record,
        "decision arithmetic: a second seed duplicated": decision_second_seed_duplicated,
        "decision arithmetic: n inflated": decision_n_inflated,
        "decision arithmetic: roles swapped, recomputed": decision_roles_swapped,
        "leaves: criterion status passed": decision_criterion_status_passed,
        "spec values: steps deviation's original rewritten": steps_deviation_rewritten,
        "spec values: rehearsal scale claimed standard": rehearsal_scale_claimed_standard,
        "re-executable: activation value moved in range": activation_value_moved_in_range,
        "re-executable: pilot rewards raised": activation_pilot_rewards_raised,
        "required evidence: probe reference script dropped": probe_script_dropped,
        "required evidence: restoration update check dropped": restoration_update_check_dropped,
        "restoration evidence: one arm's file shared with the other": restoration_file_shared,
        "prose: REHEARSAL prefix reworded": rehearsal_prefix_reworded,
        "prose: item count with a thousands separator": summary_item_count_in_words,
        "prose: homoglyph 'supported'": summary_verdict_homoglyph,
        "prose: confidence strong in reasoning": reasoning_confidence_strong,
        "leaves: checkpoint steps 40": checkpoint_steps_claimed,
        "leaves: budget overrun within_budget": budget_overrun_within,
        "leaves: rehearsal note reworded": rehearsal_note_reworded,
        "precedence: observations dropped, verdict flipped": observations_dropped_verdict_flipped,
        "feasibility: training seconds x0.1, projection follows": feasibility_training_seconds_scaled,
        "feasibility: planned units halved": feasibility_planned_units_halved,
        "capacity_block: finished run reported as a capacity stop": reported_as_capacity_stop,
        "manifest: predictions copy edited and referenced": predictions_copy_edited,
        "manifest: observations listed twice": evidence_entry_duplicated,
        "manifest: sha256 in upper case": sha256_uppercase,
        "number format: effect and ci NaN": effect_nan,
        "number format: restore_count 2**64+1": restore_count_huge,
        "unicode: completed arm homoglyph": completed_arm_homoglyph,
        "prose: item count with another noun": summary_item_count_other_noun,
        "prose: item count 'over N items' in reasoning": reasoning_item_count_over,
        "prose: the spec's model claimed in the summary": summary_model_claimed,
        "eval items: the first item dropped, recomputed": eval_first_item_dropped,
        "number format: observation value written twice": observation_value_written_twice,
    },
    "selfgen": {
        "re-executable: a row's reference moved to the wrong answer": eval_reference_set_to_wrong_answer,
        "decision arithmetic: Bonferroni dropped": decision_bonferroni_dropped,
        "decision arithmetic: base weight zeroed": decision_base_weight_zeroed,
        "leaves: simultaneous false": decision_simultaneous_flag_false,
        "spec values: audit sample seed changed": audit_sample_seed_changed,
        "spec values: audit answer comparison loosened": audit_comparison_loosened,
        "required evidence: first generation round dropped": first_generation_round_dropped,
        "prose: zero-width 'supported'": summary_verdict_zero_width,
        "leaves: resolver named as the generator": audit_resolver_independent_claim,
        "feasibility: eval count halved": feasibility_eval_count_halved,
        "capacity_block: finished run reported as a capacity stop": reported_as_capacity_stop,
        "number format: activation value NaN": activation_value_nan,
        "unicode: item id with a trailing space": item_id_trailing_space,
        "manifest: predictions copy edited and referenced": predictions_copy_edited,
        "spec values: an eval question planted as a task": eval_question_planted_as_task,
    },
    "trimuon": {
        "eval items: a held-out item renamed to a training item": eval_heldout_item_renamed,
        "decision arithmetic: SFT margins loosened": sft_margins_loosened,
        "decision arithmetic: baseline selection moved to its worst LR": sft_baseline_selection_moved,
        "leaves: selected_run label only": sft_selected_run_label_only,
        "re-executable: train NLL rewritten in sft-steps and metrics": sft_train_nll_rewritten,
        "re-executable: held-out token counts +1": sft_token_counts_shifted,
        "required evidence: sft-steps.jsonl dropped": sft_steps_log_dropped,
        "required evidence: correctness start state dropped": correctness_start_state_dropped,
        "prose: reasoning says clears": reasoning_misses_reworded_clears,
        "prose: learning rate at the spec's scale": summary_learning_rate_at_spec_scale,
        "disguised check: parity same_code cleared": parity_same_code_flag_cleared,
        "capacity_block: on a succeeded run": capacity_block_on_success,
        "number format: loss value Infinity": loss_value_infinite,
        "number format: n_tokens 10**400": loss_tokens_huge,
        "number format: criteria met written twice": criteria_met_written_twice,
    },
}


# ---------------------------------------------------------------------------- run directories


def _manifest(run: Path) -> dict[str, Any]:
    return json.loads((run / "evidence" / "manifest.json").read_text())


def _write_manifest(run: Path, manifest: dict[str, Any]) -> None:
    (run / "evidence" / "manifest.json").write_text(json.dumps(manifest, indent=2))


def run_duplicate_verdict_key(run: Path) -> None:
    """result.json carries "verdict" twice: "supported" first, the honest verdict last (Python's json keeps the
    last; a first-wins reader sees supported)."""
    text = (run / "result.json").read_text()
    result = json.loads(text)
    assert '"verdict": ' in text
    (run / "result.json").write_text(text.replace("{\n", '{\n  "verdict": "supported",\n', 1))
    assert json.loads((run / "result.json").read_text())["verdict"] == result["verdict"]


def run_nan_literal_in_ci(run: Path) -> None:
    """result.json's ci written [NaN, NaN] as raw literals."""
    result = _result(run)
    result["ci"] = [float("nan"), float("nan")]
    _write_result(run, result)


def run_extra_listed_file(run: Path) -> None:
    """An extra evidence file, on disk and in the manifest (with its hash) but not in RESULT, says every arm scored
    1.0."""
    content = "".join(json.dumps({"arm": a, "metric": "accuracy", "value": 1.0}) + "\n"
                      for a in _result(run)["completed_arms"])
    (run / "evidence" / "final-scores.jsonl").write_text(content)
    manifest = _manifest(run)
    manifest["files"].append({"name": "final-scores.jsonl", "kind": "metrics", "bytes": len(content),
                              "sha256": hashlib.sha256(content.encode()).hexdigest(), "inline": True})
    _write_manifest(run, manifest)


def run_disk_copy_differs_from_inline(run: Path) -> None:
    """evidence/ on disk holds an edited predictions file (manifest re-hashed), result.json's inline copy is the
    honest one with its honest hash."""
    result = _result(run)
    name = next(e["name"] for e in result["evidence"]["files"] if e["name"].startswith("predictions-")
                and e["name"] != "predictions-base.jsonl")
    text = (run / "evidence" / name).read_text()
    edited = text.replace('"value": 0.0', '"value": 1.0', 3)
    assert edited != text
    (run / "evidence" / name).write_text(edited)
    manifest = _manifest(run)
    for entry in manifest["files"]:
        if entry["name"] == name:
            entry.update(sha256=hashlib.sha256(edited.encode()).hexdigest(), bytes=len(edited.encode()))
    _write_manifest(run, manifest)


def run_manifest_entry_duplicated(run: Path) -> None:
    """manifest.json lists the verdict criteria twice, the second entry with another hash."""
    manifest = _manifest(run)
    entry = next(e for e in manifest["files"] if e["name"] in ("verdict-criteria.json", "scored-observations.jsonl"))
    manifest["files"].append({**entry, "sha256": hashlib.sha256(b"other").hexdigest()})
    _write_manifest(run, manifest)


def run_evidence_symlink(run: Path) -> None:
    """evidence/'s predictions file for the baseline replaced by a symlink to the treatment's (hashes rewritten to
    the treatment's bytes in the manifest)."""
    result = _result(run)
    names = sorted(e["name"] for e in result["evidence"]["files"] if e["name"].startswith("predictions-")
                   and e["name"] != "predictions-base.jsonl")
    target, link = names[0], names[1]
    (run / "evidence" / link).unlink()
    (run / "evidence" / link).symlink_to(target)


def run_predictions_before_training_end(run: Path) -> None:
    """The treatment's predictions evidence_added event moved before the first training step (order and time)."""
    events = _events(run)
    added = next(e for e in events if e.get("event") == "evidence_added" and str(e.get("name")).startswith("predictions-")
                 and e["name"] != "predictions-base.jsonl")
    events.remove(added)
    first = next(i for i, e in enumerate(events) if e.get("event") == "training_step")
    added["ts"] = events[first]["ts"]
    events.insert(first, added)
    _write_events(run, events)


def run_gate_times_out_of_order(run: Path) -> None:
    """Every gate event keeps its place, but the correctness (or first) gate's time is set after the last training
    step's: the log's order and its times disagree."""
    events = _events(run)
    last_step = max(e["ts"] for e in events if e.get("event") == "training_step")
    gate = next(e for e in events if e.get("event") == "gate")
    gate["ts"] = last_step.replace("+00:00", "") + "+00:00" if "+" in last_step else last_step
    gate["ts"] = "2026-12-31T23:59:59+00:00"
    _write_events(run, events)


def run_audit_gate_after_training(run: Path) -> None:
    """Self-generated: the generation_audit gate event moved after the first training step."""
    events = _events(run)
    gate = next(e for e in events if e.get("event") == "gate" and "audit" in str(e.get("gate")))
    events.remove(gate)
    step = next(i for i, e in enumerate(events) if e.get("event") == "training_step")
    gate["ts"] = events[step]["ts"]
    events.insert(step + 1, gate)
    _write_events(run, events)


def run_started_later(run: Path) -> None:
    """run.json's started moved 50 minutes later (a 60-minute budget looks kept whatever the run took)."""
    meta = json.loads((run / "run.json").read_text())
    meta["started"] = meta["started"].replace("T", "T", 1)
    from datetime import datetime, timedelta

    started = datetime.fromisoformat(meta["started"]) + timedelta(minutes=50)
    meta["started"] = started.isoformat()
    (run / "run.json").write_text(json.dumps(meta, indent=2))


def run_evaluator_frozen_retimed(run: Path) -> None:
    """evaluator_frozen keeps its place in events.jsonl but its time is after the first evaluation progress event."""
    events = _events(run)
    frozen = next(e for e in events if e.get("event") == "evaluator_frozen")
    progress = [e for e in events if e.get("event") in ("evaluation_progress",)]
    frozen["ts"] = "2026-12-31T23:59:59+00:00" if not progress else progress[-1]["ts"].replace(
        progress[-1]["ts"][:4], "2027")
    _write_events(run, events)


def run_inline_predictions_edited(run: Path) -> None:
    """result.json's inline treatment predictions: three wrong rows written right and re-hashed in RESULT only
    (evidence/, the manifest and the events keep the honest file)."""
    result = _result(run)
    name = next(e["name"] for e in result["evidence"]["files"] if e["name"].startswith("predictions-")
                and e["name"] != "predictions-base.jsonl")
    rewrite_evidence(result, name, _files(result)[name]["content"].replace('"value": 0.0', '"value": 1.0', 3))
    _write_result(run, result)


def run_training_rewards_rewritten_everywhere(run: Path) -> None:
    """Every training_step event's mean reward +0.25, the result's training rewards (both copies) following: a
    consistent log, only re-training could contradict it."""
    events = _events(run)
    for event in events:
        if event.get("event") == "training_step" and isinstance(event.get("mean_reward"), (int, float)):
            event["mean_reward"] += 0.25
    _write_events(run, events)
    result = _result(run)
    raise_train_rewards(result, 0.25)
    _write_result(run, result)
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = run / "tables" / "training_steps.parquet"
    if path.is_file():
        read = pq.read_table(path)
        rows = [{**row, "mean_reward": row["mean_reward"] + 0.25} if row.get("mean_reward") is not None else row
                for row in read.to_pylist()]
        pq.write_table(pa.Table.from_pylist(rows, schema=read.schema), path)


RUN_DIR_CORPUS: dict[str, dict[str, Callable[[Path], None]]] = {
    "gs1": {
        "number format (run dir): duplicate verdict key": run_duplicate_verdict_key,
        "number format (run dir): NaN literals in ci": run_nan_literal_in_ci,
        "manifest (run dir): extra listed file": run_extra_listed_file,
        "manifest (run dir): disk copy differs from inline": run_disk_copy_differs_from_inline,
        "manifest (run dir): symlinked predictions": run_evidence_symlink,
        "timestamps (run dir): predictions before training": run_predictions_before_training_end,
        "timestamps (run dir): gate time after training": run_gate_times_out_of_order,
        "timestamps (run dir): run.json started later": run_started_later,
        "manifest (run dir): inline predictions edited": run_inline_predictions_edited,
        "re-executable (run dir): training rewards rewritten everywhere": run_training_rewards_rewritten_everywhere,
    },
    "selfgen": {
        "timestamps (run dir): audit gate after training": run_audit_gate_after_training,
        "timestamps (run dir): evaluator_frozen retimed": run_evaluator_frozen_retimed,
        "manifest (run dir): extra listed file": run_extra_listed_file,
    },
    "trimuon": {
        "number format (run dir): duplicate verdict key": run_duplicate_verdict_key,
        "manifest (run dir): duplicated manifest entry": run_manifest_entry_duplicated,
        "timestamps (run dir): evaluator_frozen retimed": run_evaluator_frozen_retimed,
    },
}
