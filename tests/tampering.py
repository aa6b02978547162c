"""The tamperings of issue 28 ("Trust: a grader no tampering fools"), as functions on a RESULT.

Each takes a green record of its spec family and returns the tampered copy; every one of them must
leave green (tests/unit/test_grading_tamper_corpus.py on records built in-process,
tests/e2e/test_grader_trust.py on wiring rehearsals). A tamperer who edits an evidence file
re-hashes it and every mention of its old hash (`leaves.rewrite_evidence`).
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any, Callable

from experiment.stats.evaluation import evaluator_id
from leaves import replace_value_everywhere, rewrite_evidence


def _files(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["name"]: entry for entry in result["evidence"]["files"]}


def _edit_json_file(result: dict[str, Any], name: str, edit: Callable[[Any], None]) -> None:
    value = json.loads(_files(result)[name]["content"])
    edit(value)
    rewrite_evidence(result, name, json.dumps(value, sort_keys=True))


def _edit_jsonl_file(result: dict[str, Any], name: str, edit: Callable[[list[dict[str, Any]]], None]) -> None:
    rows = [json.loads(line) for line in _files(result)[name]["content"].splitlines() if line.strip()]
    edit(rows)
    rewrite_evidence(result, name, "".join(json.dumps(row, sort_keys=True) + "\n" for row in rows))


def _spec_files(result: dict[str, Any]) -> list[str]:
    return [entry["name"] for entry in result["evidence"]["files"] if entry.get("kind") in ("spec", "spec_revision")]


# ---------------------------------------------------------------------------- the decision


def flipped_verdict_moved_effect(result: dict[str, Any]) -> None:
    """The direction verdict flipped and RESULT.effect moved past the margin to match it."""
    result["verdict"] = "supported" if result.get("verdict") == "refuted" else "refuted"
    margin = float(result.get("margin") or 0.0)
    result["effect"] = margin + 0.05 if result["verdict"] == "supported" else margin - 0.05


def flipped_three_way_verdict(result: dict[str, Any]) -> None:
    result["verdict"] = result["outcome_reason"] = "supported" if result.get("verdict") != "supported" else "refuted"


def edited_spec_margin_stronger_verdict(result: dict[str, Any]) -> None:
    """Every carried copy of the spec gets a margin its effect clears; the verdict follows."""
    def lower_margins(spec: Any) -> None:
        for key in ("decision_rule", "verdict_rule"):
            for criterion in (spec.get(key) or {}).get("criteria") or []:
                criterion["margin"] = -10.0

    for name in _spec_files(result):
        _edit_json_file(result, name, lower_margins)
    if "outcome_reason" in result and "confidence" not in result:
        flipped_three_way_verdict(result)
        result["verdict"] = result["outcome_reason"] = "supported"
    else:
        result["verdict"] = "supported"
        result["margin"] = -10.0


def grid_edge_as_number(result: dict[str, Any]) -> None:
    """RESULT.grid_edge and every posted selection's grid_edge written as the number 1 or 0."""
    result["grid_edge"] = int(result.get("grid_edge") or False)
    for entry in ((result.get("metrics") or {}).get("arms") or {}).values():
        if isinstance(entry, dict) and isinstance(entry.get("grid_edge"), bool):
            entry["grid_edge"] = int(entry["grid_edge"])


def dropped_seeds_claim(result: dict[str, Any]) -> None:
    result["seeds"] = int(result.get("seeds") or 1) + 2


def strong_confidence(result: dict[str, Any]) -> None:
    result["confidence"] = "strong"


# ---------------------------------------------------------------------------- activation


def removed_activation_calibration(result: dict[str, Any]) -> None:
    del result["activation_calibration"]


def activation_value_out_of_range(result: dict[str, Any]) -> None:
    values = result["activation_calibration"]["values"]
    key = "pilot_mean_reward" if "pilot_mean_reward" in values else next(iter(values))
    values[key] = 7.5  # outside every range the specs state ([0.1, 0.9] for GS1's pilot reward)


# ---------------------------------------------------------------------------- feasibility


def absurd_feasibility_measurements(result: dict[str, Any]) -> None:
    """Training takes 10^7 seconds while the projection still says it fits."""
    result["feasibility"]["measurements"]["training"]["seconds"] = 1.0e7


def projection_flags_as_numbers(result: dict[str, Any]) -> None:
    """The projection's `fits` written as the number 1 (0 for false), a zero GPU-hours and zero capacity waits as
    false: a JSON boolean is not a number, nor a number a boolean, whatever Python's True == 1 says."""
    projection = result["feasibility"]["projection"]
    projection["fits"] = int(projection["fits"])
    for key in ("gpu_hours", "capacity_waits_seconds"):
        if projection.get(key) == 0:
            projection[key] = False


# ---------------------------------------------------------------------------- loss evaluation


def rehashed_predictions(result: dict[str, Any]) -> None:
    """Per-example held-out NLL rows changed, every hash recomputed."""
    score = next(s for s in result["evaluation"]["scores"] if s["arm"] != "base")

    def halve(rows: list[dict[str, Any]]) -> None:
        for row in rows[: max(1, len(rows) // 2)]:
            prediction = row["prediction"]
            if isinstance(prediction, dict) and "nll_sum" in prediction:
                prediction["nll_sum"] *= 0.5
            else:
                row["value"] = 1.0 - float(row.get("value") or 0.0)
                row["prediction"] = str(prediction) + "0"

    _edit_jsonl_file(result, score["predictions_ref"], halve)


def loss_eval_zero_counts_as_false(result: dict[str, Any]) -> None:
    """Every loss_eval entry's (and LR-grid run's) count of empty examples, 0, written as false."""
    def falsify(entry: dict[str, Any]) -> None:
        if entry.get("n_empty") == 0:
            entry["n_empty"] = False
        for run in (entry.get("runs") or {}).values():
            falsify(run)

    for entry in result["loss_eval"]["arms"].values():
        falsify(entry)


def relabelled_loss_aggregation(result: dict[str, Any]) -> None:
    """loss_eval says example_mean (value = example_mean) although the spec asks for token_mean."""
    loss = result["loss_eval"]
    loss["aggregation"] = "example_mean"

    def relabel(entry: dict[str, Any]) -> None:
        entry["aggregation"] = "example_mean"
        entry["value"] = entry["example_mean"]
        for run in (entry.get("runs") or {}).values():
            relabel(run)

    for entry in loss["arms"].values():
        relabel(entry)


# ---------------------------------------------------------------------------- correctness


def buried_correctness_pin(result: dict[str, Any]) -> None:
    path = result["correctness_preflight"]["paths"][0]
    path["baseline_revision"] = f"an unpinned local patch (not {path['baseline_revision']})"


def _is_named_input(entry: dict[str, Any], digests: set[Any]) -> bool:
    """The file's bytes hash to a digest, or its JSON does canonically (a path names its input either way)."""
    if entry.get("sha256") in digests:
        return True
    try:
        value = json.loads(entry.get("content") or "")
    except (TypeError, ValueError):
        return False
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest() in digests


def removed_fixed_input(result: dict[str, Any]) -> None:
    """Every evidence file a correctness path names as its fixed input (by sha256) dropped; the digest stays in
    the record (and may appear in other text, e.g. the path's description)."""
    digests = {(path.get("fixed_input") or {}).get("sha256") for path in result["correctness_preflight"]["paths"]}
    kept = [e for e in result["evidence"]["files"] if not _is_named_input(e, digests)]
    assert len(kept) < len(result["evidence"]["files"]), "no evidence file is the fixed input"
    result["evidence"]["files"] = kept


# ---------------------------------------------------------------------------- restoration


def changed_learning_rate_both_sides(result: dict[str, Any]) -> None:
    """Requested and server-reported learning rates both x10 (they agree with each other, not with the spec)."""
    for arm in result["initialization_provenance"]["arms"].values():
        for entry in [arm, *(arm.get("runs") or {}).values()]:
            for check in entry.get("optimizer_checks") or []:
                check["requested"]["learning_rate"] *= 10
                check["actual_config"]["learning_rate"] *= 10


def restore_counts_as_booleans(result: dict[str, Any]) -> None:
    """Every restore_count and optimizer check's after_restore written as a boolean (false for 0, true for 1)."""
    for arm in result["initialization_provenance"]["arms"].values():
        for entry in [arm, *(arm.get("runs") or {}).values()]:
            if "restore_count" in entry:
                entry["restore_count"] = bool(entry["restore_count"])
            for check in entry.get("optimizer_checks") or []:
                check["after_restore"] = bool(check["after_restore"])


def zero_optimizer_settings_as_false(result: dict[str, Any]) -> None:
    """Every optimizer check's zero setting (grad_clip_norm 0.0, weight_decay 0.0, ...), requested and reported
    alike, written as false."""
    for arm in result["initialization_provenance"]["arms"].values():
        for entry in [arm, *(arm.get("runs") or {}).values()]:
            for check in entry.get("optimizer_checks") or []:
                for side in ("requested", "actual_config"):
                    settings = check.get(side) or {}
                    for key, value in settings.items():
                        if not isinstance(value, bool) and value == 0:
                            settings[key] = False


# ---------------------------------------------------------------------------- generation audit


def audit_zero_counts_as_false(result: dict[str, Any]) -> None:
    """The generation audit's zero counts (label errors, overlaps, duplicates, a disposition nobody got), the
    record's and every round's, written as false."""
    audit = result["generation_audit"]
    for entry in [audit, *(audit.get("rounds") or [])]:
        for key in ("label_error_count", "overlap_count", "duplicate_count"):
            if entry.get(key) == 0 and not isinstance(entry.get(key), bool):
                entry[key] = False
        counts = entry.get("counts") or {}
        for key, value in counts.items():
            if value == 0 and not isinstance(value, bool):
                counts[key] = False


# ---------------------------------------------------------------------------- evaluator


def base_left_out_of_comparisons(result: dict[str, Any]) -> None:
    for comparison in result["evaluation"]["comparisons"]:
        comparison["arms"] = [arm for arm in comparison["arms"] if arm != "base"]


def boolean_max_tokens(result: dict[str, Any]) -> None:
    """Every evaluator's decoding says max_tokens true (no integer budget), its id re-derived from the edited
    provenance and every mention of the old id (scores, prediction rows, re-hashed) following it."""
    evaluators = result["evaluation"]["evaluators"]
    for old in list(evaluators):
        provenance = evaluators.pop(old)
        provenance["decoding"]["max_tokens"] = True
        new = evaluator_id(provenance)
        evaluators[new] = provenance
        replace_value_everywhere(result, old, new)


# family -> tampering name -> function. GS1 and TriMuon speak direction+confidence, the self-generated
# spec three-way; every tampering runs on each family whose records carry what it edits.
CORPUS: dict[str, dict[str, Callable[[dict[str, Any]], None]]] = {
    "gs1": {
        "flipped verdict, moved effect": flipped_verdict_moved_effect,
        "edited spec margin, stronger verdict": edited_spec_margin_stronger_verdict,
        "activation_calibration removed": removed_activation_calibration,
        "activation value out of range": activation_value_out_of_range,
        "absurd feasibility measurements, fits true": absurd_feasibility_measurements,
        "predictions changed and re-hashed": rehashed_predictions,
        "correctness pin buried in other text": buried_correctness_pin,
        "fixed input removed": removed_fixed_input,
        "learning rate changed, requested and reported": changed_learning_rate_both_sides,
        "projection flags written as numbers": projection_flags_as_numbers,
        "max_tokens true, evaluator id re-derived": boolean_max_tokens,
        "restore counts written as booleans": restore_counts_as_booleans,
    },
    "trimuon": {
        "grid_edge written as a number": grid_edge_as_number,
        "loss_eval zero counts written as false": loss_eval_zero_counts_as_false,
        "zero optimizer settings written as false": zero_optimizer_settings_as_false,
        "flipped verdict, moved effect": flipped_verdict_moved_effect,
        "edited spec margin, stronger verdict": edited_spec_margin_stronger_verdict,
        "seeds claimed": dropped_seeds_claim,
        "confidence strong": strong_confidence,
        "absurd feasibility measurements, fits true": absurd_feasibility_measurements,
        "predictions changed and re-hashed": rehashed_predictions,
        "loss aggregation relabelled": relabelled_loss_aggregation,
        "correctness pin buried in other text": buried_correctness_pin,
        "fixed input removed": removed_fixed_input,
        "learning rate changed, requested and reported": changed_learning_rate_both_sides,
        "projection flags written as numbers": projection_flags_as_numbers,
        "max_tokens true, evaluator id re-derived": boolean_max_tokens,
        "restore counts written as booleans": restore_counts_as_booleans,
    },
    "selfgen": {
        "flipped verdict": flipped_three_way_verdict,
        "edited spec margin, stronger verdict": edited_spec_margin_stronger_verdict,
        "activation_calibration removed": removed_activation_calibration,
        "activation value out of range": activation_value_out_of_range,
        "absurd feasibility measurements, fits true": absurd_feasibility_measurements,
        "predictions changed and re-hashed": rehashed_predictions,
        "learning rate changed, requested and reported": changed_learning_rate_both_sides,
        "base left out of the comparisons": base_left_out_of_comparisons,
        "projection flags written as numbers": projection_flags_as_numbers,
        "max_tokens true, evaluator id re-derived": boolean_max_tokens,
        "restore counts written as booleans": restore_counts_as_booleans,
        "audit zero counts written as false": audit_zero_counts_as_false,
    },
}


def tampered(result: dict[str, Any], tamper: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    copy_ = copy.deepcopy(result)
    tamper(copy_)
    return copy_


# tampering name -> the class it belongs to (issue 45's classes; "issue 28" for the earlier round's edits that keep a
# record consistent with itself). tools/tamper_corpus.py reports caught/total per class.
ISSUE_28 = "issue 28: a consistent edit of the record"
CLASSES: dict[str, str] = {name: ISSUE_28 for tampers in CORPUS.values() for name in tampers}
