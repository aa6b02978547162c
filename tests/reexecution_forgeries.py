"""Forgeries that only a re-run catches (issue 45, item 3), as functions on a RESULT, each consistent with itself:
every number derived from the forged raw measurement recomputed, every hash rewritten (`leaves.rewrite_evidence`).
A plain grade leaves them green; `flows.validate --reproduce` does not (tests/unit/test_grading_reproduce.py,
tests/e2e/test_reproduce_rehearsals.py).

- `trimuon_nll_and_step_time_scaled`: TriMuon's held-out nll_sum x0.99 in its prediction rows and its optim_seconds
  x0.1 in sft-steps.jsonl; loss_eval, metrics, the per-arm metrics, the verdict criteria, effect and verdict follow
  (the verdict flips to supported). Caught by re-scoring the held-out rows from the checkpoints (REPRO-4).
- `generated_label_and_resolver_answer_changed`: one audited generated task's label and the recorded re-solver's
  answer both changed (9 -> 10 where a task has label 9, else n -> n+1). Caught by re-solving the text (REPRO-2).
- `rl_prediction_value_flipped`: one wrong RL prediction written as right (its text's boxed answer set to the
  reference) in the predictions file and the observations, scores and decision recomputed by the record's own
  rules. Caught by re-sampling the item from its checkpoint (REPRO-3).
"""

from __future__ import annotations

import json
import statistics
from typing import Any, Callable

from leaves import _walk, _set, rewrite_evidence


def _files(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["name"]: entry for entry in result["evidence"]["files"]}


def _rows(result: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in _files(result)[name]["content"].splitlines() if line.strip()]


def _write_rows(result: dict[str, Any], name: str, rows: list[dict[str, Any]]) -> None:
    rewrite_evidence(result, name, "".join(json.dumps(row, sort_keys=True) + "\n" for row in rows))


def _replace_numbers(result: dict[str, Any], mapping: dict[float, float], skip: Callable[[str], bool]) -> None:
    """Every number equal to a key of `mapping`, in RESULT and in the inline JSON files not skipped, set to its value
    (files re-hashed)."""
    def replace(value: Any) -> Any:
        for path, leaf in list(_walk(value, ())):
            if isinstance(leaf, float) and leaf in mapping and path:
                _set(value, path, mapping[leaf])
        return value

    replace({key: value for key, value in result.items() if key != "evidence"})
    for key in [k for k in result if k != "evidence"]:
        result[key] = replace({key: result[key]})[key]
    per_arm = result["evidence"].get("per_arm_metrics")
    if per_arm is not None:
        result["evidence"]["per_arm_metrics"] = replace({"x": per_arm})["x"]
    for name, entry in list(_files(result).items()):
        if skip(name) or not name.endswith(".json"):
            continue
        try:
            parsed = json.loads(entry["content"])
        except (ValueError, KeyError, TypeError):
            continue
        changed = replace({"x": parsed})["x"]
        text = json.dumps(changed, indent=2, sort_keys=True)
        if changed != json.loads(entry["content"]):
            rewrite_evidence(result, name, text)


def trimuon_nll_and_step_time_scaled(result: dict[str, Any]) -> None:
    mapping: dict[float, float] = {}
    step_seconds: dict[str, list[float]] = {}
    for name in [n for n in _files(result) if n.startswith("predictions-trimuon")]:
        rows = _rows(result, name)
        for row in rows:
            row["prediction"]["nll_sum"] *= 0.99
        _write_rows(result, name, rows)
    steps = _rows(result, "sft-steps.jsonl")
    for row in steps:
        if row["run"].startswith("trimuon"):
            mapping[row["optim_seconds"]] = row["optim_seconds"] * 0.1
            row["optim_seconds"] *= 0.1
        step_seconds.setdefault(row["run"], []).append(row["optim_seconds"])
    _write_rows(result, "sft-steps.jsonl", steps)
    runs = result["metrics"]["arms"]["trimuon"]["runs"]
    for lr, entry in runs.items():
        old = dict(entry)
        seconds = step_seconds[f"trimuon@lr={lr}"]
        for key in ("heldout_nll_token_mean", "heldout_nll_example_mean"):
            mapping[old[key]] = old[key] * 0.99
        mapping[old["median_optim_step_seconds"]] = statistics.median(seconds)
        mapping[old["mean_optim_step_seconds"]] = statistics.fmean(seconds)
    for entry in [result["loss_eval"]["arms"]["trimuon"], *result["loss_eval"]["arms"]["trimuon"]["runs"].values()]:
        for key in ("value", "token_mean", "example_mean", "nll_sum"):
            mapping[entry[key]] = entry[key] * 0.99
    criteria = json.loads(_files(result)["verdict-criteria.json"]["content"])
    trimuon, dimuon = criteria["per_arm"]["trimuon"], criteria["per_arm"]["dimuon_lite"]
    all_runs = [s for run, values in step_seconds.items() if run.startswith("trimuon") for s in values]
    new_nll = trimuon["heldout_nll_token_mean"] * 0.99
    new_step = mapping[trimuon["median_optim_step_seconds"]]
    for criterion in criteria["criteria"]:
        ours, theirs = (new_nll, dimuon["heldout_nll_token_mean"]) if criterion["id"] == "nll_gap" else \
            (new_step, dimuon["median_optim_step_seconds"])
        mapping[criterion["effect"]] = theirs - ours
    _replace_numbers(result, mapping, skip=lambda name: name.startswith(("predictions-", "sft-steps")))

    def met(value: Any) -> Any:
        if isinstance(value, dict):
            if "effect" in value and "margin" in value and "met" in value:
                value["met"] = value["effect"] > value["margin"]
            for item in value.values():
                met(item)
        elif isinstance(value, list):
            for item in value:
                met(item)
        return value

    criteria = met(json.loads(_files(result)["verdict-criteria.json"]["content"]))
    # one old number may stand for two: set by its key, after the replacement
    criteria["per_arm"]["trimuon"]["median_optim_step_seconds_all_runs"] = statistics.median(all_runs)
    rewrite_evidence(result, "verdict-criteria.json", json.dumps(criteria, indent=2, sort_keys=True))
    met(result)
    _prose_follows(result, mapping)
    result["verdict"] = "supported" if all(c["met"] for c in criteria["criteria"]) else result["verdict"]
    for key in ("summary", "reasoning"):
        result[key] = str(result[key]).replace("refuted", result["verdict"]).replace(" misses ", " clears ")


def _prose_follows(result: dict[str, Any], mapping: dict[float, float]) -> None:
    """The numbers the summary and reasoning print, in the formats they print them, follow the mapping."""
    for key in ("summary", "reasoning"):
        text = str(result.get(key, ""))
        for old, new in mapping.items():
            for form in (".4f", ".4g", ".6g", ".3g"):
                text = text.replace(format(old, form), format(new, form))
        result[key] = text


def generated_label_and_resolver_answer_changed(result: dict[str, Any], well_posed: Callable[[str], str | None]) -> str:
    """One audited task's label and its recorded re-solver's answer both n -> n+1 (9 -> 10 where an audited task the
    re-solver `well_posed` answers has label 9); returns the task's id."""
    audit = result["generation_audit"]
    tasks = _rows(result, audit["dataset_file"])
    sampled = {sample["item_id"] for sample in audit["samples"]}
    candidates = [t for t in tasks if t["item_id"] in sampled and well_posed(t["prompt"]) == str(t["answer"])]
    task = next((t for t in candidates if str(t["answer"]) == "9"), candidates[0])
    old, new = str(task["answer"]), str(int(task["answer"]) + 1)
    task["answer"] = new
    _write_rows(result, audit["dataset_file"], tasks)

    def relabel(samples: list[dict[str, Any]]) -> None:
        for sample in samples:
            if sample["item_id"] == task["item_id"]:
                sample["independent_answer"] = new
                if "label" in sample:
                    sample["label"] = new
                if isinstance(sample.get("reasoning"), str):
                    sample["reasoning"] = sample["reasoning"].replace(f"= {old}", f"= {new}")

    relabel(audit["samples"])
    audit_file = json.loads(_files(result)[audit["audit_file"]]["content"])
    relabel(audit_file["samples"] if isinstance(audit_file, dict) else audit_file)
    rewrite_evidence(result, audit["audit_file"], json.dumps(audit_file, indent=2))
    return task["item_id"]


def rl_prediction_rewritten(result: dict[str, Any], arm: str, item: str, gold: str) -> None:
    """One RL prediction of `arm` (an arm no decision criterion weights: the base) rewritten so that it scores the
    other way (its text's boxed answer set to the gold answer, or off it by one) in its predictions file and the
    observations, and the arm's score and reported accuracy recomputed. Its text is consistent with its value, so
    only sampling the item again from the checkpoint shows it was not the model's output."""
    score = next(s for s in result["evaluation"]["scores"] if s["arm"] == arm)
    rows = _rows(result, score["predictions_ref"])
    row = next(r for r in rows if r["item_id"] == item)
    right = row["value"] != 1.0
    row["prediction"] = f"\\boxed{{{gold if right else int(gold) + 1}}}"
    row["value"] = 1.0 if right else 0.0
    _write_rows(result, score["predictions_ref"], rows)
    observations_name = result["decision"]["observations_file"]["name"]
    observations = _rows(result, observations_name)
    for observation in observations:
        if observation["arm"] == arm and observation["item_id"] == item:
            observation["value"] = row["value"]
    rewrite_evidence(result, observations_name, "".join(json.dumps(o, sort_keys=True, separators=(",", ":")) + "\n"
                                                        for o in observations))
    old, new = score["value"], sum(r["value"] for r in rows) / len(rows)
    score["value"] = new
    for holder in (result["metrics"], result["metrics"]["arms"].get(arm, {}),
                   result["evidence"].get("per_arm_metrics", {}).get(arm, {})):
        for key in ("accuracy", f"{arm}_model_accuracy"):
            if holder.get(key) == old:
                holder[key] = new
    _prose_follows(result, {old: new})
