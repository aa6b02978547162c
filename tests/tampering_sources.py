"""Tamperings a self-consistency check cannot see: values that the spec, the data, the run directory's other files or
the record's other half fix, each changed with every copy and hash following (issue 45 deliverables 1-3, 10).

The name is "<class>: <what>"; tools/tamper_corpus.py reports caught/total per class. CORPUS edits a green wiring
record of its family; RUN_DIR_CORPUS edits a copy of the run directory (result.json, evidence/, its manifest,
events.jsonl, run.json, tables/) as a submitter who kept every file consistent would.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from leaves import _walk, rewrite_evidence
from tampering import _edit_json_file, _edit_jsonl_file, _files
from tampering_spec import _edit_evaluator, _rows
from tampering_traces import _both_copies, _events, _replace_everywhere, _result, _write_events, _write_result


# ---------------------------------------------------------------------------- helpers


def _set_everywhere(result: dict[str, Any], key: str, old: Any, new: Any, under: tuple[str, ...] = ()) -> None:
    """Every `key: old` in RESULT (below `under`) becomes `key: new`."""
    for path, value in list(_walk(result, ())):
        if path and path[-1] == key and value == old and path[:len(under)] == under and path[:2] != ("evidence", "files"):
            target = result
            for part in path[:-1]:
                target = target[part]
            target[key] = new


def _edit_json_files(result: dict[str, Any], prefix: str, edit: Callable[[Any], None]) -> None:
    for name in [entry["name"] for entry in result["evidence"]["files"]]:
        if name.startswith(prefix) and name.endswith(".json"):
            _edit_json_file(result, name, edit)


def _deep_replace(value: Any, key: str, old: Any, new: Any) -> Any:
    """`key: old` becomes `key: new` anywhere in a parsed JSON value (in place); returns the value."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k == key and v == old:
                value[k] = new
            else:
                _deep_replace(v, key, old, new)
    elif isinstance(value, list):
        for v in value:
            _deep_replace(v, key, old, new)
    return value


def _rewrite_rows(result: dict[str, Any], name: str, rows: list[dict[str, Any]], compact: bool = False) -> None:
    separators = (",", ":") if compact else None
    rewrite_evidence(result, name, "".join(json.dumps(row, sort_keys=True, separators=separators) + "\n"
                                           for row in rows))


# ---------------------------------------------------------------------------- budgets the spec fixes


def budget_raised_tenfold(result: dict[str, Any]) -> None:
    """The wall budget 3600 s -> 36000 s wherever the record states it (budget_use and the projection)."""
    result["budget_use"]["budget_wall_seconds"] *= 10
    result["feasibility"]["projection"]["budget_wall_seconds"] *= 10


def gpu_budget_raised(result: dict[str, Any]) -> None:
    """The GPU-hour budget x100 in the projection."""
    result["feasibility"]["projection"]["budget_gpu_hours"] *= 100


def elapsed_in_milliseconds(result: dict[str, Any]) -> None:
    """budget_use.elapsed_wall_seconds written in milliseconds; within_budget left true."""
    result["budget_use"]["elapsed_wall_seconds"] *= 1000


# ---------------------------------------------------------------------------- the rehearsal's own statement


def stand_in_test_is_train(result: dict[str, Any]) -> None:
    """The rehearsal says its held-out stand-in was the training file."""
    stand_in = result["rehearsal"]["stand_in"]
    stand_in["test"] = stand_in["train"]


def rehearsal_backend_named_tinker(result: dict[str, Any]) -> None:
    result["rehearsal"]["backend"] = "tinker"


def rehearsal_rules_hash_replaced(result: dict[str, Any]) -> None:
    result["rehearsal"]["rules_sha256"] = "0" * 64


def rehearsal_spec_model_renamed(result: dict[str, Any]) -> None:
    """rehearsal.spec_model and the model deviation's original name another model than the spec's."""
    old = result["rehearsal"]["spec_model"]
    result["rehearsal"]["spec_model"] = "Qwen/Qwen3-8B"
    for entry in result["deviations"] + result["rehearsal"]["substitutions"]:
        if entry.get("original") == old:
            entry["original"] = "Qwen/Qwen3-8B"


def substitution_dropped(result: dict[str, Any]) -> None:
    """The rehearsal's last substitution and its deviation dropped, the count following."""
    dropped = result["rehearsal"]["substitutions"].pop()
    result["rehearsal"]["substitution_count"] = len(result["rehearsal"]["substitutions"])
    result["deviations"] = [d for d in result["deviations"]
                            if not (d.get("field") == dropped.get("field") and d.get("original") == dropped.get("original")
                                    and d.get("effective") == dropped.get("effective"))]


def deviation_field_relabelled(result: dict[str, Any]) -> None:
    """The steps deviation filed under `model` (issue 45 item 11: a label that does not name what changed)."""
    for entry in result["deviations"] + result["rehearsal"]["substitutions"]:
        if entry.get("field") == "steps":
            entry["field"] = "model"


def deviation_effective_rewritten(result: dict[str, Any]) -> None:
    """The steps deviation's effective value says 40 (the spec's), in both lists."""
    for entry in result["deviations"] + result["rehearsal"]["substitutions"]:
        if entry.get("field") == "steps":
            entry["effective"] = entry["original"]


def original_hypothesis_claimed(result: dict[str, Any]) -> None:
    result["original_hypothesis_tested"] = True


# ---------------------------------------------------------------------------- feasibility config (the plan fixes it)


def feasibility_config_n_eval(result: dict[str, Any]) -> None:
    """n_eval 48 -> 500 in the feasibility config and its effective copy."""
    for key in ("config", "effective_config"):
        if "n_eval" in (result["feasibility"].get(key) or {}):
            result["feasibility"][key]["n_eval"] = 500


def feasibility_config_lora_rank(result: dict[str, Any]) -> None:
    for key in ("config", "effective_config"):
        if "lora_rank" in (result["feasibility"].get(key) or {}):
            result["feasibility"][key]["lora_rank"] = 32


def feasibility_config_steps(result: dict[str, Any]) -> None:
    for key in ("config", "effective_config"):
        if "steps" in (result["feasibility"].get(key) or {}):
            result["feasibility"][key]["steps"] = 40


def feasibility_config_dataset_path(result: dict[str, Any]) -> None:
    for key in ("config", "effective_config"):
        dataset = (result["feasibility"].get(key) or {}).get("dataset")
        if isinstance(dataset, dict) and "path" in dataset:
            dataset["path"] = dataset["path"].replace("train", "test")


def gpu_count_claimed(result: dict[str, Any]) -> None:
    """Every measurement ran on one GPU (the allocation prose kept); the GPU-hours left at 0."""
    for entry in result["feasibility"]["measurements"].values():
        if isinstance(entry, dict) and "gpu_count" in entry:
            entry["gpu_count"] = 1


def pilot_size_source_reworded(result: dict[str, Any]) -> None:
    result["feasibility"]["pilot"]["size_source"] = "the spec's pilot size"


def evaluation_timing_factor_changed(result: dict[str, Any]) -> None:
    runs = result["feasibility"]["evaluation_timing"]["runs"]
    for entry in runs.values():
        entry["service_seconds"] = entry["client_wall_seconds"]
        entry["factor"] = 1.0


def recovery_seconds_zeroed(result: dict[str, Any]) -> None:
    result["feasibility"]["recovery"]["seconds"] = 0.0


# ---------------------------------------------------------------------------- optimizer and initialization


def optimizer_beta2_everywhere(result: dict[str, Any]) -> None:
    """beta2 0.95 -> 0.999 in every request, every reported config and every retained restoration file."""
    for path, value in list(_walk(result, ())):
        if path and path[-1] == "beta2" and value == 0.95 and path[:2] != ("evidence", "files"):
            target = result
            for part in path[:-1]:
                target = target[part]
            target["beta2"] = 0.999
    for name in [e["name"] for e in result["evidence"]["files"]]:
        if name.startswith("restoration-") and name.endswith(".json"):
            _edit_json_file(result, name, lambda v: _deep_replace(v, "beta2", 0.95, 0.999))


def init_seed_changed(result: dict[str, Any]) -> None:
    """Every arm's init_seed 0 -> 7 (the LoRA seed the spec fixes), requested seeds following."""
    for arm in result["initialization_provenance"]["arms"].values():
        arm["initialization"]["init_seed"] = 7
        for check in arm.get("optimizer_checks") or []:
            if check.get("requested", {}).get("seed") == 0:
                check["requested"]["seed"] = 7


def restore_with_optimizer_state(result: dict[str, Any]) -> None:
    for arm in result["initialization_provenance"]["arms"].values():
        for restore in arm.get("restores") or []:
            restore["with_optimizer_state"] = True


def restore_method_renamed(result: dict[str, Any]) -> None:
    for arm in result["initialization_provenance"]["arms"].values():
        for restore in arm.get("restores") or []:
            restore["method"] = "load_state"


# ---------------------------------------------------------------------------- correctness prose and numbers


def correctness_precision_reworded(result: dict[str, Any]) -> None:
    for path in result["correctness_preflight"]["paths"]:
        path["precision"] = "float32 throughout"


def correctness_normalization_reworded(result: dict[str, Any]) -> None:
    for path in result["correctness_preflight"]["paths"]:
        if "normalization" in path:
            path["normalization"] = "mean over tokens per sequence"


def correctness_server_loss_moved(result: dict[str, Any]) -> None:
    """GS1: the server's loss sums of the probe moved (both sides alike, so they still agree)."""
    for path in result["correctness_preflight"]["paths"]:
        for sides in (path.get("server_loss_sum") or {}).values():
            for side in sides:
                sides[side] += 1.0


def correctness_fixed_input_description(result: dict[str, Any]) -> None:
    for path in result["correctness_preflight"]["paths"]:
        path["fixed_input"]["description"] = "rollouts of the final checkpoint"


# ---------------------------------------------------------------------------- evaluation: seeds, arms, decoding


def seed_renumbered_everywhere(result: dict[str, Any]) -> None:
    """Seed 0 -> 5 in every score, checkpoint, decision and prediction/observation row (the plan says seed 0)."""
    for score in result["evaluation"]["scores"]:
        score["seed"] = 5
    for checkpoint in result["evidence"]["checkpoints"]:
        if "seed" in checkpoint:
            checkpoint["seed"] = 5
    decision = result["decision"]
    decision["seeds"] = [5 if s == 0 else s for s in decision["seeds"]]
    for criterion in decision["criteria"]:
        for means in (criterion.get("per_arm_seed_means") or {}).values():
            if "0" in means:
                means["5"] = means.pop("0")
        effects = criterion.get("per_seed_effects") or {}
        if "0" in effects:
            effects["5"] = effects.pop("0")
    for entry in list(result["evidence"]["files"]):
        if entry["name"].endswith(".jsonl") and entry["name"].startswith(("predictions-", "scored-observations")):
            rows = _rows(result, entry["name"])
            for row in rows:
                if row.get("seed") == 0:
                    row["seed"] = 5
            compact = '","' in entry["content"] and ", " not in entry["content"][:200]
            _rewrite_rows(result, entry["name"], rows, compact=compact)


def checkpoints_swapped_between_arms(result: dict[str, Any]) -> None:
    """The first two checkpoints' arm labels exchanged (each arm now names the other's final weights)."""
    first, second = result["evidence"]["checkpoints"][:2]
    first["arm"], second["arm"] = second["arm"], first["arm"]


def predictions_swapped_between_arms(result: dict[str, Any]) -> None:
    """The two trained arms' scores point at each other's predictions file (values and observations following)."""
    scores = [s for s in result["evaluation"]["scores"] if s["arm"] != "base"]
    a, b = scores[:2]
    a["predictions_ref"], b["predictions_ref"] = b["predictions_ref"], a["predictions_ref"]
    a["value"], b["value"] = b["value"], a["value"]


def stop_sequence_dropped(result: dict[str, Any]) -> None:
    """The evaluator's stop sequence removed from its decoding, id re-derived."""
    _edit_evaluator(result, lambda p: p["decoding"].pop("stop", None))


def tokenizer_hash_replaced(result: dict[str, Any]) -> None:
    """The evaluator's tokenizer file hash is another file's, id re-derived."""
    def edit(p: dict[str, Any]) -> None:
        files = p.get("code_files") or {}
        for name in files:
            if name.endswith("tokenizer.json"):
                files[name] = "1" * 64
    _edit_evaluator(result, edit)


def comparisons_dropped(result: dict[str, Any]) -> None:
    result["evaluation"]["comparisons"] = []


def comparison_metric_renamed(result: dict[str, Any]) -> None:
    for comparison in result["evaluation"]["comparisons"]:
        comparison["metric"] = "pass_at_1"


def reasoning_method_renamed(result: dict[str, Any]) -> None:
    """The reasoning names a t-test where the decision used the paired Hoeffding bound."""
    result["reasoning"] = result["reasoning"].replace("paired Hoeffding bound", "paired t-test")


def evidence_status_partial(result: dict[str, Any]) -> None:
    result["evidence"]["status"] = "partial"


def budget_measured_reworded(result: dict[str, Any]) -> None:
    result["budget_use"]["measured"] = "wall time of the training phase only"


def grade_spec_source_reworded(result: dict[str, Any]) -> None:
    result["grade"]["spec_source"] = "specs/other.json"


# ---------------------------------------------------------------------------- self-generated tasks


def generator_weights_hash_replaced(result: dict[str, Any]) -> None:
    result["generation_audit"]["compared_identities"]["generator"]["weights_sha256"] = "2" * 64


def filter_model_named_as_trained(result: dict[str, Any]) -> None:
    """The filter's base model named as another model than the trained one."""
    result["generation_audit"]["compared_identities"]["filter_base_model"]["name"] = "Qwen/Qwen3-8B"


def resolver_code_path_generator(result: dict[str, Any]) -> None:
    result["generation_audit"]["resolver"]["code"] = "experiment/selfgen/generator.py"


def evaluation_set_row_dropped(result: dict[str, Any]) -> None:
    """The evaluation split's last question dropped from generation-evaluation-set.jsonl (an overlap hidden)."""
    name = result["generation_audit"]["evaluation_file"]
    _edit_jsonl_file(result, name, lambda rows: rows.pop())


def audit_note_reworded(result: dict[str, Any]) -> None:
    result["generation_audit"]["note"] = "the re-solver establishes semantic truth"


def first_round_passed(result: dict[str, Any]) -> None:
    """The failed first audit round says passed with no label error."""
    first = result["generation_audit"]["rounds"][0]
    first["status"] = "passed"
    first["label_error_count"] = 0


def treatment_fraction_lowered(result: dict[str, Any]) -> None:
    values = result["activation_calibration"]["values"]
    if "treatment_fraction_batches_from_generated_set" in values:
        values["treatment_fraction_batches_from_generated_set"] = 0.9


# ---------------------------------------------------------------------------- TriMuon (SFT LR grid)


def run_mean_optim_seconds_scaled(result: dict[str, Any]) -> None:
    """Every LR-grid run's mean optimizer-step time x0.5 in both copies (the median kept)."""
    def edit(arm: str, metrics: dict[str, Any]) -> None:
        for run in (metrics.get("runs") or {}).values():
            run["mean_optim_step_seconds"] *= 0.5
    _both_copies(result, edit)


def run_heldout_example_mean_lowered(result: dict[str, Any]) -> None:
    def edit(arm: str, metrics: dict[str, Any]) -> None:
        for run in (metrics.get("runs") or {}).values():
            run["heldout_nll_example_mean"] -= 1.0
    _both_copies(result, edit)


def all_runs_median_scaled(result: dict[str, Any]) -> None:
    def edit(arm: str, metrics: dict[str, Any]) -> None:
        if "median_optim_step_seconds_all_runs" in metrics:
            metrics["median_optim_step_seconds_all_runs"] *= 0.5
    _both_copies(result, edit)


def lr_grid_reversed(result: dict[str, Any]) -> None:
    def edit(arm: str, metrics: dict[str, Any]) -> None:
        if isinstance(metrics.get("lr_grid"), list):
            metrics["lr_grid"] = list(reversed(metrics["lr_grid"]))
    _both_copies(result, edit)


def run_seed_relabelled(result: dict[str, Any]) -> None:
    def edit(arm: str, metrics: dict[str, Any]) -> None:
        for run in (metrics.get("runs") or {}).values():
            run["seed"] = 3
    _both_copies(result, edit)


def run_optimizer_family_relabelled(result: dict[str, Any]) -> None:
    """The baseline's runs say they ran trimuon."""
    def edit(arm: str, metrics: dict[str, Any]) -> None:
        for run in (metrics.get("runs") or {}).values():
            if run.get("optimizer_family") == "dimuon":
                run["optimizer_family"] = "trimuon"
    _both_copies(result, edit)


def base_heldout_nll_lowered(result: dict[str, Any]) -> None:
    result["metrics"]["base_heldout_nll_token_mean"] -= 1.0


def checkpoint_step_of_one_run(result: dict[str, Any]) -> None:
    result["evidence"]["checkpoints"][0]["step"] = 1


def verdict_criteria_file_edited(result: dict[str, Any]) -> None:
    """verdict-criteria.json: every criterion met (re-hashed)."""
    def edit(value: Any) -> None:
        for path, v in list(_walk(value, ())):
            if path and path[-1] in ("met", "passed") and v is False:
                target = value
                for part in path[:-1]:
                    target = target[part]
                target[path[-1]] = True
    _edit_json_file(result, "verdict-criteria.json", edit)


def routing_target_remote(result: dict[str, Any]) -> None:
    """service-routing.json: the target a remote production service (the run used the embedded one), re-hashed."""
    _edit_json_file(result, "service-routing.json", lambda value: value["target"].update(
        kind="tinker", base_url="https://tinker.example", exposure="production"))


def sft_rows_model_id_swapped(result: dict[str, Any]) -> None:
    """sft-steps.jsonl: the model ids of the two arms' first runs exchanged."""
    rows = _rows(result, "sft-steps.jsonl")
    ids = sorted({r["model_id"] for r in rows})
    if len(ids) >= 2:
        a, b = ids[0], ids[-1]
        for row in rows:
            row["model_id"] = b if row["model_id"] == a else a if row["model_id"] == b else row["model_id"]
    _rewrite_rows(result, "sft-steps.jsonl", rows)


CORPUS: dict[str, dict[str, Callable[[dict[str, Any]], None]]] = {
    "gs1": {
        "spec budget: wall budget x10": budget_raised_tenfold,
        "spec budget: GPU-hour budget x100": gpu_budget_raised,
        "units: elapsed wall seconds in ms": elapsed_in_milliseconds,
        "rehearsal: test stand-in is the training file": stand_in_test_is_train,
        "rehearsal: backend named tinker": rehearsal_backend_named_tinker,
        "rehearsal: rules hash replaced": rehearsal_rules_hash_replaced,
        "rehearsal: spec model renamed": rehearsal_spec_model_renamed,
        "rehearsal: a substitution dropped": substitution_dropped,
        "rehearsal: steps deviation filed as model": deviation_field_relabelled,
        "rehearsal: steps deviation's effective value the spec's": deviation_effective_rewritten,
        "rehearsal: original hypothesis claimed": original_hypothesis_claimed,
        "plan config: n_eval 500": feasibility_config_n_eval,
        "plan config: lora_rank 32": feasibility_config_lora_rank,
        "plan config: steps 40": feasibility_config_steps,
        "plan config: dataset path the test file": feasibility_config_dataset_path,
        "feasibility: GPUs claimed, no GPU-hours": gpu_count_claimed,
        "feasibility: pilot size source reworded": pilot_size_source_reworded,
        "feasibility: evaluation timing factor 1": evaluation_timing_factor_changed,
        "feasibility: recovery seconds zero": recovery_seconds_zeroed,
        "optimizer: beta2 everywhere": optimizer_beta2_everywhere,
        "optimizer: init seed 7": init_seed_changed,
        "restores: with optimizer state": restore_with_optimizer_state,
        "restores: method renamed": restore_method_renamed,
        "correctness: precision reworded": correctness_precision_reworded,
        "correctness: normalization reworded": correctness_normalization_reworded,
        "correctness: server loss sums moved": correctness_server_loss_moved,
        "correctness: fixed input description": correctness_fixed_input_description,
        "arms and seeds: seed 5 everywhere": seed_renumbered_everywhere,
        "arms and seeds: checkpoints swapped between arms": checkpoints_swapped_between_arms,
        "arms and seeds: predictions swapped between arms": predictions_swapped_between_arms,
        "evaluator: stop sequence dropped": stop_sequence_dropped,
        "evaluator: tokenizer hash replaced": tokenizer_hash_replaced,
        "evaluator: comparisons dropped": comparisons_dropped,
        "evaluator: comparison metric renamed": comparison_metric_renamed,
        "prose: method renamed in the reasoning": reasoning_method_renamed,
        "leaves: evidence status partial": evidence_status_partial,
        "leaves: budget measurement reworded": budget_measured_reworded,
        "leaves: self-grade spec source": grade_spec_source_reworded,
    },
    "selfgen": {
        "spec budget: wall budget x10": budget_raised_tenfold,
        "rehearsal: test stand-in is the training file": stand_in_test_is_train,
        "rehearsal: steps deviation filed as model": deviation_field_relabelled,
        "plan config: n_eval 500": feasibility_config_n_eval,
        "optimizer: beta2 everywhere": optimizer_beta2_everywhere,
        "arms and seeds: seed 5 everywhere": seed_renumbered_everywhere,
        "arms and seeds: predictions swapped between arms": predictions_swapped_between_arms,
        "generated tasks: generator weights hash replaced": generator_weights_hash_replaced,
        "generated tasks: filter model renamed": filter_model_named_as_trained,
        "generated tasks: resolver code path the generator's": resolver_code_path_generator,
        "generated tasks: an evaluation question dropped": evaluation_set_row_dropped,
        "generated tasks: audit note reworded": audit_note_reworded,
        "generated tasks: first round passed": first_round_passed,
        "generated tasks: treatment fraction 0.9": treatment_fraction_lowered,
    },
    "trimuon": {
        "spec budget: wall budget x10": budget_raised_tenfold,
        "rehearsal: test stand-in is the training file": stand_in_test_is_train,
        "rehearsal: steps deviation filed as model": deviation_field_relabelled,
        "optimizer: init seed 7": init_seed_changed,
        "correctness: precision reworded": correctness_precision_reworded,
        "sft runs: mean optimizer seconds x0.5": run_mean_optim_seconds_scaled,
        "sft runs: held-out example mean lowered": run_heldout_example_mean_lowered,
        "sft runs: all-runs median x0.5": all_runs_median_scaled,
        "sft runs: LR grid reversed": lr_grid_reversed,
        "sft runs: seed 3": run_seed_relabelled,
        "sft runs: baseline family relabelled": run_optimizer_family_relabelled,
        "sft runs: base held-out NLL lowered": base_heldout_nll_lowered,
        "sft runs: a checkpoint's step": checkpoint_step_of_one_run,
        "sft runs: verdict-criteria all met": verdict_criteria_file_edited,
        "sft runs: routing target a remote service": routing_target_remote,
        "sft runs: sft-steps model ids swapped": sft_rows_model_id_swapped,
    },
}


# ---------------------------------------------------------------------------- run directories


def _run_json(run: Path) -> dict[str, Any]:
    return json.loads((run / "run.json").read_text())


def _write_run_json(run: Path, value: dict[str, Any]) -> None:
    (run / "run.json").write_text(json.dumps(value, indent=2))


def run_json_scale_standard(run: Path) -> None:
    value = _run_json(run)
    value["scale"] = "standard"
    _write_run_json(run, value)


def run_json_spec_other(run: Path) -> None:
    value = _run_json(run)
    value["spec"] = "other.json"
    value["spec_path"] = "specs/other.json"
    _write_run_json(run, value)


def run_json_spec_sha_replaced(run: Path) -> None:
    value = _run_json(run)
    value["spec_sha256"] = "3" * 64
    _write_run_json(run, value)


def _table(run: Path, name: str):
    import pyarrow.parquet as pq

    return pq.read_table(run / "tables" / f"{name}.parquet").to_pylist()


def _write_table(run: Path, name: str, rows: list[dict[str, Any]]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), run / "tables" / f"{name}.parquet")


def table_gate_failed(run: Path) -> None:
    """tables/gates.parquet: the activation gate's row says failed."""
    rows = _table(run, "gates")
    for row in rows:
        if row.get("gate") in ("activation_gate", "correctness_preflight") and "status" in row:
            row["status"] = "failed"
    _write_table(run, "gates", rows)


def table_checkpoint_uri(run: Path) -> None:
    """tables/arm_checkpoints.parquet: the last row names the other arm's checkpoint of that step."""
    rows = _table(run, "arm_checkpoints")
    last = rows[-1]
    other = next(row for row in rows if row["arm"] != last["arm"] and row["step"] == last["step"])
    last["uri"] = other["uri"]
    _write_table(run, "arm_checkpoints", rows)


def table_training_rewards(run: Path) -> None:
    rows = _table(run, "training_steps")
    for row in rows:
        for key in ("mean_reward",):
            if isinstance(row.get(key), float):
                row[key] = min(1.0, row[key] + 0.3)
    _write_table(run, "training_steps", rows)


def event_gate_failed(run: Path) -> None:
    """events.jsonl: the activation gate's event says failed; the run still went on."""
    events = _events(run)
    for event in events:
        if event.get("event") == "gate" and event.get("gate") == "activation_gate":
            event["status"] = "failed"
    _write_events(run, events)


def event_training_step_duplicated(run: Path) -> None:
    events = _events(run)
    index = next(i for i, e in enumerate(events) if e.get("event") == "training_step")
    events.insert(index + 1, dict(events[index]))
    _write_events(run, events)


def event_checkpoint_uri(run: Path) -> None:
    events = _events(run)
    for event in events:
        if event.get("event") == "checkpoint":
            event["uri"] = event["uri"].replace("-final", "-other")
    _write_events(run, events)


def event_evaluator_frozen_other_count(run: Path) -> None:
    events = _events(run)
    for event in events:
        if event.get("event") == "evaluator_frozen":
            event["n_items"] = 500
    _write_events(run, events)


def event_evaluation_gate_other_accuracy(run: Path) -> None:
    """events.jsonl: the evaluation gate's measured treatment accuracy 0.9."""
    events = _events(run)
    for event in events:
        if event.get("event") == "gate" and event.get("gate") == "evaluation":
            for arm, value in (event.get("measured", {}).get("accuracy") or {}).items():
                if arm != "base":
                    event["measured"]["accuracy"][arm] = 0.9
    _write_events(run, events)


def event_decision_gate_supported(run: Path) -> None:
    events = _events(run)
    for event in events:
        if event.get("event") == "gate" and event.get("gate") == "decision":
            event["reasons"] = ["verdict supported"] + event["reasons"][1:]
            if isinstance(event.get("measured"), dict) and "verdict" in event["measured"]:
                event["measured"]["verdict"] = "supported"
    _write_events(run, events)


def event_run_config_backend(run: Path) -> None:
    """events.jsonl: run_config says the run used a remote tinker service."""
    events = _events(run)
    for event in events:
        if event.get("event") == "run_config":
            event["backend"] = {"kind": "tinker", "base_url": "https://tinker.example", "exposure": "production"}
            event["exposure"] = "production"
    _write_events(run, events)


def event_resume_marker(run: Path) -> None:
    """events.jsonl: a `resumed` event in the middle of training (the record says nothing of a resume)."""
    events = _events(run)
    index = next(i for i, e in enumerate(events) if e.get("event") == "training_step")
    events.insert(index, {"ts": events[index]["ts"], "event": "resumed", "attempt": 2, "reason": "crash"})
    _write_events(run, events)


def event_result_updated_verdict(run: Path) -> None:
    """The last result_updated event says the verdict was supported."""
    events = _events(run)
    last = max(i for i, e in enumerate(events) if e.get("event") == "result_updated")
    events[last]["verdict"] = "supported"
    _write_events(run, events)


def plot_replaced(run: Path) -> None:
    plots = sorted((run / "plots").glob("*.png")) if (run / "plots").is_dir() else []
    if plots:
        plots[0].write_bytes(plots[-1].read_bytes() if len(plots) > 1 else b"")


def disk_evidence_extra_unlisted(run: Path) -> None:
    """evidence/: an extra file on disk that neither the manifest nor the record names."""
    (run / "evidence" / "predictions-gs1_kernel-rerun.jsonl").write_text('{"item_id": "x", "value": 1.0}\n')


def result_summary_disagrees_with_event(run: Path) -> None:
    """result.json's verdict-free fields edited only on disk: the summary names 500 items where no prose check reads."""
    result = _result(run)
    result["budget_use"]["measured"] = "wall time of the training phase only"
    _write_result(run, result)


RUN_DIR_CORPUS: dict[str, dict[str, Callable[[Path], None]]] = {
    "gs1": {
        "run files (run dir): run.json scale standard": run_json_scale_standard,
        "run files (run dir): run.json names another spec": run_json_spec_other,
        "run files (run dir): run.json spec hash replaced": run_json_spec_sha_replaced,
        "run files (run dir): gates table says failed": table_gate_failed,
        "run files (run dir): checkpoint table uri": table_checkpoint_uri,
        "run files (run dir): training table rewards": table_training_rewards,
        "events (run dir): activation gate failed": event_gate_failed,
        "events (run dir): a training step duplicated": event_training_step_duplicated,
        "events (run dir): checkpoint uri": event_checkpoint_uri,
        "events (run dir): evaluator frozen on 500 items": event_evaluator_frozen_other_count,
        "events (run dir): evaluation gate accuracy": event_evaluation_gate_other_accuracy,
        "events (run dir): decision gate supported": event_decision_gate_supported,
        "events (run dir): run_config remote backend": event_run_config_backend,
        "events (run dir): resume marker": event_resume_marker,
        "events (run dir): last result_updated verdict": event_result_updated_verdict,
        "run files (run dir): plot replaced": plot_replaced,
        "run files (run dir): unlisted evidence file": disk_evidence_extra_unlisted,
    },
    "selfgen": {
        "run files (run dir): run.json scale standard": run_json_scale_standard,
        "events (run dir): checkpoint uri": event_checkpoint_uri,
        "events (run dir): evaluator frozen on 500 items": event_evaluator_frozen_other_count,
        "events (run dir): run_config remote backend": event_run_config_backend,
    },
    "trimuon": {
        "run files (run dir): run.json scale standard": run_json_scale_standard,
        "events (run dir): checkpoint uri": event_checkpoint_uri,
        "events (run dir): evaluator frozen on 500 items": event_evaluator_frozen_other_count,
        "events (run dir): decision gate supported": event_decision_gate_supported,
    },
}


# ---------------------------------------------------------------------------- more record leaves


def primary_endpoint_renamed(result: dict[str, Any]) -> None:
    result["feasibility"]["primary_endpoint"] = "gsm8k_train_exact_match_accuracy"


def effective_config_arms_dropped(result: dict[str, Any]) -> None:
    """The feasibility config's arms list only the treatment (the projection's arms)."""
    for key in ("config", "effective_config"):
        arms = (result["feasibility"].get(key) or {}).get("arms")
        if isinstance(arms, list) and len(arms) > 1:
            result["feasibility"][key]["arms"] = arms[-1:]


def recovery_basis_reworded(result: dict[str, Any]) -> None:
    projection = result["feasibility"]["projection"]
    projection["recovery_basis"] = projection["recovery_basis"].replace("25%", "5%")


def gpu_hours_status_observed(result: dict[str, Any]) -> None:
    result["feasibility"]["projection"]["gpu_hours_status"] = "observed"


def measurement_wall_seconds_halved(result: dict[str, Any]) -> None:
    """Every measurement's wall_seconds halved (the projection's phases keep the old ones)."""
    for entry in result["feasibility"]["measurements"].values():
        if isinstance(entry, dict) and "wall_seconds" in entry:
            entry["wall_seconds"] /= 2


def criterion_id_renamed(result: dict[str, Any]) -> None:
    for criterion in result["decision"]["criteria"]:
        criterion["id"] = "secondary_" + criterion["id"]


def score_metric_renamed(result: dict[str, Any]) -> None:
    """Every score, comparison and criterion metric says pass_at_1."""
    old = result["evaluation"]["scores"][0]["metric"]
    _set_everywhere(result, "metric", old, "pass_at_1")


def checkpoint_scheme_file(result: dict[str, Any]) -> None:
    """The final checkpoints named as local files, everywhere they are named."""
    for checkpoint in result["evidence"]["checkpoints"]:
        old = checkpoint["uri"]
        _replace_everywhere(result, old, old.replace("tinker://", "file:///tmp/"))


def initial_output_hash_replaced(result: dict[str, Any]) -> None:
    """Every arm's initial-output hash replaced, in the record and in its restoration file."""
    arms = result["initialization_provenance"]["arms"]
    old = next(iter(arms.values()))["initial_output"]["output_sha256"]
    _replace_everywhere(result, old, "4" * 64)


def base_checkpoint_renamed(result: dict[str, Any]) -> None:
    for arm in result["initialization_provenance"]["arms"].values():
        arm["initialization"]["base_checkpoint"] = "Qwen/Qwen3.5-2B"


def confidence_dropped(result: dict[str, Any]) -> None:
    result.pop("confidence", None)


def extra_top_level_key(result: dict[str, Any]) -> None:
    result["exchange_grade"] = {"decision": "verified", "verdict": "supported"}


def scale_purpose_reworded(result: dict[str, Any]) -> None:
    result["rehearsal"]["scale_purpose"] = "a standard-scale run whose verdict stands"


def audit_stage_after_training(result: dict[str, Any]) -> None:
    result["generation_audit"]["stage"] = "after_training"


def sample_method_renamed(result: dict[str, Any]) -> None:
    for sample in result["generation_audit"]["samples"]:
        sample["method"] = "generator_self_check"


def round_counts_rewritten(result: dict[str, Any]) -> None:
    """The failed first round's counts say it generated as many as the second."""
    rounds = result["generation_audit"]["rounds"]
    rounds[0]["counts"] = dict(result["generation_audit"]["counts"])


def heldout_tokens_relabelled(result: dict[str, Any]) -> None:
    """TriMuon: every run's heldout_n_tokens x2 (both copies): the per-token mean would halve."""
    def edit(arm: str, metrics: dict[str, Any]) -> None:
        for run in (metrics.get("runs") or {}).values():
            run["heldout_n_tokens"] *= 2
    _both_copies(result, edit)


def sft_rows_reordered(result: dict[str, Any]) -> None:
    rows = _rows(result, "sft-steps.jsonl")
    _rewrite_rows(result, "sft-steps.jsonl", list(reversed(rows)))


def restoration_file_loaded_from_other(result: dict[str, Any]) -> None:
    """TriMuon: one LR run's restoration file says it loaded another run's final state (re-hashed)."""
    name = next(e["name"] for e in result["evidence"]["files"] if e["name"].startswith("restoration-trimuon"))
    _edit_json_file(result, name, lambda v: v.update(note="loaded from dimuon_lite-lr0.08 final state"))


for _family, _extra in {
    "gs1": {
        "feasibility: primary endpoint renamed": primary_endpoint_renamed,
        "plan config: arms cut to the treatment": effective_config_arms_dropped,
        "feasibility: recovery basis 5%": recovery_basis_reworded,
        "feasibility: GPU-hours observed": gpu_hours_status_observed,
        "feasibility: measurement wall seconds halved": measurement_wall_seconds_halved,
        "leaves: criterion id renamed": criterion_id_renamed,
        "evaluator: metric renamed everywhere": score_metric_renamed,
        "arms and seeds: checkpoints as local files": checkpoint_scheme_file,
        "restores: initial output hash replaced": initial_output_hash_replaced,
        "restores: base checkpoint the spec's model": base_checkpoint_renamed,
        "leaves: confidence dropped": confidence_dropped,
        "leaves: an extra top-level grade": extra_top_level_key,
        "rehearsal: scale purpose reworded": scale_purpose_reworded,
    },
    "selfgen": {
        "generated tasks: audit stage after training": audit_stage_after_training,
        "generated tasks: sample method renamed": sample_method_renamed,
        "generated tasks: first round's counts rewritten": round_counts_rewritten,
        "leaves: an extra top-level grade": extra_top_level_key,
    },
    "trimuon": {
        "sft runs: held-out token counts x2": heldout_tokens_relabelled,
        "sft runs: sft-steps rows reversed": sft_rows_reordered,
        "sft runs: a restoration file's note": restoration_file_loaded_from_other,
        "leaves: an extra top-level grade": extra_top_level_key,
        "evaluator: metric renamed everywhere": score_metric_renamed,
    },
}.items():
    CORPUS[_family].update(_extra)


def run_json_run_id_other(run: Path) -> None:
    value = _run_json(run)
    value["run_id"] = value["run_id"].replace("rehearsal", "run")
    _write_run_json(run, value)


def run_json_title_other(run: Path) -> None:
    value = _run_json(run)
    value["spec_title"] = "Another experiment"
    _write_run_json(run, value)


def event_run_created_spec_sha(run: Path) -> None:
    events = _events(run)
    events[0]["spec_sha256"] = "5" * 64
    _write_events(run, events)


def event_spec_intake_served_model(run: Path) -> None:
    events = _events(run)
    for event in events:
        if event.get("event") == "gate" and event.get("gate") == "spec_intake":
            event.setdefault("measured", {})["served_model"] = "Qwen/Qwen3.5-2B"
            event["reasons"] = ["Qwen/Qwen3.5-2B is served"]
    _write_events(run, events)


def event_evaluation_progress_partial(run: Path) -> None:
    """events.jsonl: the treatment's evaluation reached only half of its items."""
    events = _events(run)
    for event in events:
        if event.get("event") == "evaluation_progress" and event.get("arm") != "base":
            event["done"] = event["total"] // 2
    _write_events(run, events)


def event_probe_loss_nan(run: Path) -> None:
    events = _events(run)
    for event in events:
        if event.get("event") == "probe":
            for arm in (event.get("arms") or {}).values():
                if isinstance(arm, dict) and "finite_loss" in arm:
                    arm["finite_loss"] = False
    _write_events(run, events)


def event_activation_pilot_values(run: Path) -> None:
    events = _events(run)
    for event in events:
        if event.get("event") == "activation_pilots":
            for pilot in event.get("pilots") or []:
                for key in pilot.get("values") or {}:
                    pilot["values"][key] = 0.0
    _write_events(run, events)


def event_service_exposure_production(run: Path) -> None:
    events = _events(run)
    for event in events:
        if event.get("event") == "service_exposure":
            event["exposure"] = "production"
            event["base_url"] = "https://tinker.example"
    _write_events(run, events)


def event_training_step_group_size(run: Path) -> None:
    """events.jsonl: the baseline's steps ran at group size 16 (the table says 8)."""
    events = _events(run)
    for event in events:
        if event.get("event") == "training_step" and event.get("executed_group_size") == 8.0:
            event["executed_group_size"] = 16.0
    _write_events(run, events)


def manifest_kind_relabelled(run: Path) -> None:
    manifest = json.loads((run / "evidence" / "manifest.json").read_text())
    for entry in manifest["files"]:
        if entry.get("kind") == "predictions":
            entry["kind"] = "notes"
    (run / "evidence" / "manifest.json").write_text(json.dumps(manifest, indent=2))


def sft_table_attempt(run: Path) -> None:
    """tables/sft_steps.parquet: every row says attempt 2 (a resumed sweep the record does not show)."""
    rows = _table(run, "sft_steps")
    for row in rows:
        row["attempt"] = 2
    _write_table(run, "sft_steps", rows)


def sft_finished_runs_sampler(run: Path) -> None:
    rows = _table(run, "sft_finished_runs")
    for row in rows:
        if isinstance(row.get("sampler_path"), str):
            row["sampler_path"] = row["sampler_path"].replace("-final", "-other")
    _write_table(run, "sft_finished_runs", rows)


def sft_table_loss(run: Path) -> None:
    rows = _table(run, "sft_steps")
    for row in rows:
        row["train_nll_token_mean"] = row["train_nll_token_mean"] - 1.0
    _write_table(run, "sft_steps", rows)


for _family, _extra in {
    "gs1": {
        "run files (run dir): run.json run id": run_json_run_id_other,
        "run files (run dir): run.json title": run_json_title_other,
        "events (run dir): run_created spec hash": event_run_created_spec_sha,
        "events (run dir): spec intake served the spec's model": event_spec_intake_served_model,
        "events (run dir): evaluation progress half done": event_evaluation_progress_partial,
        "events (run dir): probe loss not finite": event_probe_loss_nan,
        "events (run dir): activation pilot values zero": event_activation_pilot_values,
        "events (run dir): service exposure production": event_service_exposure_production,
        "events (run dir): baseline group size 16": event_training_step_group_size,
        "run files (run dir): manifest kind relabelled": manifest_kind_relabelled,
    },
    "trimuon": {
        "run files (run dir): sft_steps table attempt 2": sft_table_attempt,
        "run files (run dir): sft finished runs sampler path": sft_finished_runs_sampler,
        "run files (run dir): sft_steps table NLL": sft_table_loss,
        "run files (run dir): run.json spec hash replaced": run_json_spec_sha_replaced,
    },
}.items():
    RUN_DIR_CORPUS[_family].update(_extra)


def step_time_in_milliseconds(result: dict[str, Any]) -> None:
    """TriMuon: the reasoning's optimizer-step times written in ms (a thousandfold claim), numbers kept."""
    import re

    result["reasoning"] = re.sub(r"(median optimizer step [^.;]*?\d)s\b", r"\1ms", result["reasoning"])
    result["reasoning"] = re.sub(r"(\d)s, (\w+ \d)", r"\1ms, \2", result["reasoning"])


def selected_lr_in_reasoning(result: dict[str, Any]) -> None:
    """TriMuon: the reasoning gives the first arm's best LR as another grid point than its selected_lr."""
    import re

    def other(match: "re.Match[str]") -> str:
        arm = match.group(1)
        entry = result["metrics"]["arms"].get(arm) or {}
        grid = [lr for lr in entry.get("lr_grid") or [] if lr != entry.get("selected_lr")]
        return match.group(0).replace(f"(LR {match.group(2)})", f"(LR {grid[0]:g})") if grid else match.group(0)
    result["reasoning"] = re.sub(r"\b([\w.-]+) [+\-]?\d+(?:\.\d+)? \(LR ([\d.e-]+)\)", other, result["reasoning"], count=1)


CORPUS["trimuon"].update({
    "prose: optimizer-step times in ms": step_time_in_milliseconds,
    "prose: a selected LR in the reasoning": selected_lr_in_reasoning,
})
