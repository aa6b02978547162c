"""The test suite's one builder of records and run directories (non-test module; tests import it by name).

- `build_gs1_run(runs_dir)` writes small but real run directories with RunStore: a finished GS1 run whose every
  record is consistent (spec and plan evidence, gate events, a pinned correctness record, restoration
  provenance with retained evidence, a frozen evaluator with prediction files, a retained observations file and
  the decision recomputed from it, and a feasibility record). Tests then break one thing at a time.
- The run-directory edits (copy_run, edit_result, put_evidence, ...) start from that consistent run and change
  one record or file the way a broken pipeline or a tampering hand would, keeping the manifest and
  RESULT.evidence in step with a rewritten evidence file so that only the change under test stands out."""

from __future__ import annotations

import copy
import hashlib
import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

import leaves as L
import numpy as np
from spec_variants import variant, write_variant
from suite import GS1_SPEC, REPO_ROOT

from experiment.contract.plan import build_plan
from experiment.contract.result_models import evidence_file
from experiment.contract.spec import canonical_sha256, load_spec
from experiment.gates import GateVerdict
from experiment.grading import grade_record
from experiment.grading import restoration as restoration_rules
from experiment.grading.run_dir import validate_run
from experiment.rl import restoration
from experiment.run.store import RunStore
from experiment.selfgen import generation_audit as ga
from experiment.stats.generation_audit import counts_of
from experiment.stats import decision as d
from experiment.stats import selection as sel
from experiment.stats.correctness import parity_errors
from experiment.stats.decision import (
    OBSERVATIONS_FILE_NAME,
    decision_record,
    decision_summary,
    observations_jsonl_bytes,
)
from experiment.stats.evaluation import (
    evaluator_id,
    observations_from_predictions,
    prediction_row,
    score_entry,
)
from experiment.stats.feasibility import PhaseTiming, feasibility_record, projection_config


ITEM_IDS = [f"gsm8k-test-{index:04d}" for index in range(24)]
TREATMENT, BASELINE = "gs1_kernel", "grpo_gs8"
BASE_MODEL = "Qwen/Qwen3.5-2B"


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def arm_is_correct(arm: str, index: int) -> bool:
    """A fixed pattern: the baseline solves 2 of 3 items, the treatment 3 of 4."""
    return index % 3 != 0 if arm == BASELINE else index % 4 != 0


def record_gate(store: RunStore, gate: str, status: str, **measured: Any) -> None:
    store.record_gate(GateVerdict(gate=gate, status=status, reasons=[f"{gate} {status}"], measured=measured,
                                  duration_s=1.5))


def evaluator() -> tuple[str, dict[str, Any]]:
    provenance = {
        "code_sha256": sha256_text("def grade(prediction, reference): ..."),
        "prompt_template": "{question} Write your answer in \\boxed{} format.",
        "decoding": {"temperature": 0, "max_tokens": 512, "stop": ["<|im_end|>"]},
        "parser": "last \\boxed{} integer",
        "items": {"ids": list(ITEM_IDS)},
    }
    return evaluator_id(provenance), provenance


INIT_URI = "tinker://run/init/state-0000"  # the full-initialization checkpoint every arm is created from
REQUESTED = {"family": "adamw", "learning_rate": 4e-05, "beta1": 0.9, "beta2": 0.95, "eps": 1e-08, "lora_rank": 32,
             "seed": 0}  # the spec's restoration group optimizer, normalised as the run requests it
FIXED_BATCH = [{"model_input": [1, 2, 3], "target_tokens": [2, 3, 4]}, {"model_input": [5, 6], "target_tokens": [6, 7]}]
FIXED_BATCH_EVIDENCE = "restoration-fixed-batch.json"
INITIAL_LOGPROBS = [[-1.25, -0.5, -2.0], [-0.75, -3.5]]  # the fixed batch's outputs, the same for every arm
LOADED_AT = "2026-12-01T10:00:00+00:00"


def restoration_evidence(arm: str) -> str:
    """The arm's retained restoration responses (the run's `restoration-<arm>.json`)."""
    return f"restoration-{arm}.json"


def _client(arm: str) -> str:
    return f"sess-{arm}:train:0"


def _server_info() -> SimpleNamespace:
    """The get_info the service answers for an arm created with REQUESTED (its optimizer config and LoRA rank)."""
    config = {"type": REQUESTED["family"], **{k: v for k, v in REQUESTED.items() if k not in ("family", "lora_rank", "seed")}}
    return SimpleNamespace(optimizer_config=SimpleNamespace(model_dump=lambda: dict(config)),
                           lora_rank=REQUESTED["lora_rank"])


def _optimizer_state() -> dict[str, Any]:
    """The optimizer config the service reports for a state before any update."""
    return {**_server_info().optimizer_config.model_dump(), "optimizer_step": 0, "last_optim_params": None}


def initial_output_sha256() -> str:
    """experiment.rl.restoration.output_sha256 of a forward output carrying INITIAL_LOGPROBS."""
    outputs = [{"logprobs": SimpleNamespace(to_numpy=lambda v=v: np.asarray(v, dtype=np.float32))}
               for v in INITIAL_LOGPROBS]
    return restoration.output_sha256(SimpleNamespace(loss_fn_outputs=outputs))


def restoration_response(arm: str) -> dict[str, Any]:
    """What the run retains of the service's answers for one arm: the load of the initialization checkpoint, the
    get_info after creation, the checkpoint's weights info and the initial output on the fixed batch."""
    return {
        "loaded_from": INIT_URI, "load_method": restoration.CREATE_FROM_STATE, "loaded_at": LOADED_AT,
        "load_response": {"path": INIT_URI, "type": "load_weights"},
        "get_info_after_creation": {"type": "get_info", "model_id": _client(arm), "model_name": BASE_MODEL,
                                    "model_data": {"arch": "qwen3", "model_name": BASE_MODEL}, "is_lora": True,
                                    "lora_rank": REQUESTED["lora_rank"], "optimizer_config": _optimizer_state()},
        "checkpoint_weights_info": {"base_model": BASE_MODEL, "is_lora": True, "lora_rank": REQUESTED["lora_rank"],
                                    "optimizer_config": _optimizer_state()},
        "initial_output_logprobs": INITIAL_LOGPROBS,
    }


def optimizer_check(after_restore: int, arm: str = BASELINE) -> dict[str, Any]:
    """The arm's optimizer check as the run writes it (experiment.rl.restoration.optimizer_check) from the
    retained get_info."""
    return restoration.optimizer_check(_server_info(), dict(REQUESTED), after_restore, restoration_evidence(arm))


def provenance_entry(arm: str = BASELINE) -> dict[str, Any]:
    """The arm's initialization_provenance entry as the run writes it: created from the immutable
    full-initialization checkpoint (one restore of it), an optimizer check at creation and after that restore,
    the initial output on the retained fixed batch."""
    ref = restoration_evidence(arm)
    load_response = SimpleNamespace(path=INIT_URI, model_dump=lambda mode="json": {"path": INIT_URI, "type": "load_weights"})
    return {
        "initialization": restoration.initialization_from_checkpoint(BASE_MODEL, INIT_URI, load_response, ref, 0),
        "restore_count": 1,
        "restores": [restoration.restore_record(1, _client(arm), restoration.CREATE_FROM_STATE, INIT_URI, False, ref,
                                                LOADED_AT, load_response=load_response)],
        "optimizer_checks": [optimizer_check(0, arm), optimizer_check(1, arm)],
        "initial_output": {
            "available": True,
            "batch_sha256": canonical_sha256(FIXED_BATCH),
            "output_sha256": initial_output_sha256(),
            "evidence_ref": ref,
            "before_first_update": True,
        },
    }


def update_check() -> dict[str, Any]:
    """The create-save-restore check (restoration-update-check.json) as the run retains it for the first arm: a
    client restored with its optimizer state takes the same second update as the uninterrupted one."""
    probe, ref = "tinker://run/probe/state-0001", restoration_rules.REST10_EVIDENCE
    after = [[-1.0, -0.5], [-2.0]]
    return {BASELINE: {
        "label": BASELINE, "checkpoint_uri": INIT_URI, "restored_from": probe, "steps_before_save": 1,
        "optimizer_state_restored": True,
        "clients": {"uninterrupted": "s:train:1", "interrupted": "s:train:2", "restored": "s:train:3"},
        "restore": restoration.restore_record(1, "s:train:3", restoration.CREATE_FROM_STATE_WITH_OPTIMIZER, probe, True,
                                              ref, LOADED_AT),
        "optimizer_check_after_restore": restoration.optimizer_check(_server_info(), dict(REQUESTED), 1, ref),
        "batch_sha256": canonical_sha256(FIXED_BATCH),
        "update": {**{k: v for k, v in REQUESTED.items() if k in restoration_rules.STEP_SETTINGS}, "weight_decay": 0.0},
        "max_abs_difference": 0.0, "atol": restoration.RESTORE_UPDATE_ATOL, "problems": [], "passed": True,
        "output_sha256": {name: canonical_sha256(after) for name in ("uninterrupted", "restored")},
        "logprobs_after_second_step": {"uninterrupted": after, "restored": after}}}


REVISION = GS1_SPEC.with_name(GS1_SPEC.name.removesuffix(".json") + ".plan.json")  # pins the correctness revisions
REFERENCE_FILE = "experiment/rl/gs1_reference.py"  # the independent reference the revision pins, by its sha256
FIXED_INPUT = {"rewards": [[1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0]], "note": "8 rollouts, fixed rewards"}
CORRECTNESS_FIXED_INPUT, CORRECTNESS_PROBE = "correctness-fixed-input.json", "correctness-preflight.json"


def correctness_record() -> dict[str, Any]:
    """The GS1 path's record as the probe writes it: measured on the retained fixed input, against the revisions
    the spec's recorded revision pins."""
    errors = parity_errors([0.5, -1.25, 2.0], [0.5, -1.25, 2.0 + 1e-9])
    pins = json.loads(REVISION.read_text())["correctness_preflight"]["paths"][0]
    return {
        "required": True,
        "paths": [
            {
                "id": "gs1_kernel_advantage_loop",
                "fixed_input": {
                    "sha256": canonical_sha256(FIXED_INPUT),
                    "description": "8 rollouts, fixed rewards",
                },
                "baseline_revision": pins["baseline_revision"],
                "reference_revision": pins["reference_revision"],
                "implementation_revision": "experiment/rl/advantages.py sha256:" + sha256_text("implementation"),
                "precision": "float64",
                "normalization": "sum over tokens",
                "errors": {
                    key: dict(errors)
                    for key in ("baseline_loss", "baseline_gradient", "reference_loss", "reference_gradient")
                },
                "lr_scaling": [
                    {"learning_rate": 4e-05, "update_norm": 0.01},
                    {"learning_rate": 8e-05, "update_norm": 0.02},
                ],
            }
        ],
    }


def feasibility() -> dict[str, Any]:
    config = projection_config(
        base_model="Qwen/Qwen3.5-2B",
        lora_rank=32,
        dataset="openai/gsm8k main/train",
        steps=40,
        batch_size=64,
        max_seq_len=1024,
        max_tokens=512,
        arms=[BASELINE, TREATMENT],
        n_examples=2560,
        n_eval=1319,
    )
    phase = PhaseTiming(seconds=12.0, units=2, planned_units=40, samples=128, gpu_count=None, allocation_source=None)
    return feasibility_record(
        config=config,
        effective_config=dict(config),
        primary_endpoint="gsm8k_test_exact_match_accuracy_final_checkpoint",
        source="feasibility-pilot.json",
        setup=phase,
        training=phase,
        evaluation=phase,
        budget={"gpu_hours": 2.0, "max_wall_minutes": 120},
    )


def activation_values(plan) -> dict[str, Any]:
    """A measured value inside every prespecified range of the plan's activation checks."""
    values = {}
    for check in plan.gate("activation_gate").details["checks"]:
        if "one_of" in check:
            values[check["metric"]] = int(check["one_of"][0])
        else:
            low = check.get("min", 0.0)
            values[check["metric"]] = (low + check["max"]) / 2 if "max" in check else low + 1.0
    return values


def build_gs1_run(runs_dir: Path, spec_path: Path = GS1_SPEC) -> RunStore:
    spec = load_spec(spec_path)
    plan = build_plan(spec)
    store = RunStore.create(runs_dir, spec, plan)
    store.add_evidence("spec.json", "spec", spec_path.read_bytes())
    revision = spec_path.with_name(spec_path.name.removesuffix(".json") + ".plan.json")
    if revision.is_file():
        store.add_evidence("spec-revision.plan.json", "spec_revision", revision.read_bytes())
    store.add_evidence("execution-plan.json", "effective_config", json.dumps(plan.to_dict(), indent=2, sort_keys=True))
    record_gate(store, "spec_intake", "passed", deviations=0)
    store.update_result(status="running", summary="Running the GS1 spec as written.", deviations=[])
    for gate in ("preflight_probe",):
        record_gate(store, gate, "passed")
    record_gate(store, "generation_audit", "not_applicable")
    correctness = correctness_record()
    store.add_evidence(CORRECTNESS_FIXED_INPUT, "metrics", json.dumps(FIXED_INPUT, sort_keys=True))
    store.add_evidence(CORRECTNESS_PROBE, "metrics", json.dumps(correctness["paths"][0], indent=2, sort_keys=True))
    store.add_evidence("script-gs1_reference.py", "script", (REPO_ROOT / REFERENCE_FILE).read_bytes())
    store.update_result(correctness_preflight=correctness)
    record_gate(store, "correctness_preflight", "passed")
    store.add_evidence(FIXED_BATCH_EVIDENCE, "metrics", json.dumps(FIXED_BATCH, sort_keys=True))
    for arm in (BASELINE, TREATMENT):
        store.add_evidence(restoration_evidence(arm), "metrics", json.dumps(restoration_response(arm), sort_keys=True))
    store.add_evidence(restoration_rules.REST10_EVIDENCE, "metrics", json.dumps(update_check(), sort_keys=True))
    store.update_result(
        initialization_provenance={"version": 1, "arms": {BASELINE: provenance_entry(BASELINE),
                                                           TREATMENT: provenance_entry(TREATMENT)}}
    )
    record_gate(store, "restoration_preflight", "passed")
    store.add_evidence("feasibility-pilot.json", "metrics", json.dumps({"pilot": "2 steps per arm"}))
    store.update_result(feasibility=feasibility())
    record_gate(store, "feasibility_pilot", "passed")
    store.update_result(activation_calibration={"values": activation_values(plan), "note": "2-step pilot"})
    record_gate(store, "activation_gate", "passed")
    store.add_evidence("rl-loop.py", "script", "def train(): ...\n")
    store.add_evidence("code-revision.txt", "code_revision", "working tree sha256 " + sha256_text("tree") + "\n")
    record_gate(store, "arm_training", "passed")

    eval_id, provenance = evaluator()
    rows_by_arm, scores = {}, []
    for arm in (BASELINE, TREATMENT):
        rows = [
            prediction_row(
                item,
                arm,
                "7" if arm_is_correct(arm, index) else "8",
                "7",
                arm_is_correct(arm, index),
                eval_id,
                0,
                f"tinker://run/{arm}/final",
            )
            for index, item in enumerate(ITEM_IDS)
        ]
        rows_by_arm[arm] = rows
        # the checkpoint the rows were scored on, at the arm's planned step (EVID-6)
        store.add_checkpoint(arm, next(a.steps for a in plan.trained_arms if a.name == arm), f"tinker://run/{arm}/final")
        name = f"predictions-{arm}.jsonl"
        store.add_evidence(name, "predictions", "".join(json.dumps(row) + "\n" for row in rows))
        scores.append(score_entry(arm, sum(row["value"] for row in rows) / len(rows), eval_id, 0, name))
    evaluation = {
        "version": 1,
        "evaluators": {eval_id: provenance},
        "scores": scores,
        "comparisons": [{"metric": "accuracy", "arms": [BASELINE, TREATMENT]}],
    }
    store.update_result(
        evaluation=evaluation,
        completed_arms=[BASELINE, TREATMENT],
        metrics={"arms": {score["arm"]: {"accuracy": score["value"]} for score in scores}},
    )
    record_gate(store, "evaluation", "passed")

    observations = observations_from_predictions(rows_by_arm[BASELINE] + rows_by_arm[TREATMENT])
    data = observations_jsonl_bytes(observations)
    entry = store.add_evidence(OBSERVATIONS_FILE_NAME, "metrics", data)
    role_to_arm = {role: mapped["arm"] for role, mapped in plan.role_to_arm.items()}
    summary = decision_summary(
        spec.to_dict()["decision_rule"], observations, plan.vocabulary, role_to_arm=role_to_arm, limits=["one seed"]
    )
    primary = summary["criteria"][0]
    store.update_result(
        status="succeeded",
        summary="Both arms trained and were scored on the same items.",
        decision=decision_record(summary, OBSERVATIONS_FILE_NAME, entry["sha256"]),
        verdict=summary["verdict"],
        confidence=summary.get("confidence"),  # None (dropped) in the three-way vocabulary
        effect=primary["effect"],
        margin=primary["margin"],
        ci=[primary["lower"], primary["upper"]],
        seeds=1,
        grid_edge=False,
        reasoning="The paired effect was measured on fixed items. One seed limits confidence. "
        "The spec's correctness revisions are unresolved, so the exchange may grade that check unverified.",
    )
    record_gate(store, "decision", "passed")
    return store


def rewrite_result(store: RunStore, **fields: Any) -> dict[str, Any]:
    """Replace RESULT fields verbatim (bypassing update_result's merge), as a broken pipeline might."""
    result = store.read_result()
    result.update(fields)
    (store.run_dir / "result.json").write_text(json.dumps(result, indent=2))
    return result

# ---------------------------------------------------------------- editing a built run

EVAL_ID, PROVENANCE = evaluator()
PLAN, SPEC, OBSERVATIONS = "execution-plan.json", "spec.json", "scored-observations.jsonl"
# the builder's pattern (arm_is_correct, above): the baseline solves items whose index % 3 != 0
# (16 of 24), the treatment those whose index % 4 != 0 (18 of 24)
BASELINE_MEAN, TREATMENT_MEAN = 16 / 24, 18 / 24


def copy_run(template: RunStore, tmp_path: Path, name: str = "runs") -> Path:
    runs = shutil.copytree(template.run_dir.parent, tmp_path / name)
    return runs / template.run_dir.name


def found(run_dir: Path, *prefixes: str) -> list[tuple[str, str]]:
    """The (check, message) pairs validate_run reports whose check starts with one of `prefixes`."""
    return [(p.check, p.message) for p in validate_run(run_dir) if p.check.startswith(prefixes)]


def read_result(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "result.json").read_text())


def edit_result(run_dir: Path, edit: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    result = read_result(run_dir)
    edit(result)
    (run_dir / "result.json").write_text(json.dumps(result, indent=2))
    return result


def read_manifest(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "evidence" / "manifest.json").read_text())


def edit_manifest_entry(run_dir: Path, name: str, **fields: Any) -> None:
    manifest = read_manifest(run_dir)
    for entry in manifest["files"]:
        if entry["name"] == name:
            entry.update(fields)
    (run_dir / "evidence" / "manifest.json").write_text(json.dumps(manifest, indent=2))


def put_evidence(run_dir: Path, name: str, data: bytes | str, kind: str = "metrics") -> str:
    """Write evidence/`name` and list it with its sha256 in the manifest and RESULT.evidence (a new file is
    added with `kind`); returns the sha256."""
    payload = data.encode() if isinstance(data, str) else data
    digest = hashlib.sha256(payload).hexdigest()
    (run_dir / "evidence" / name).write_bytes(payload)
    manifest = read_manifest(run_dir)
    entries = [entry for entry in manifest["files"] if entry["name"] == name]
    if entries:
        entries[0].update(sha256=digest, bytes=len(payload))
    else:
        manifest["files"].append({"name": name, "kind": kind, "sha256": digest, "bytes": len(payload),
                                  "inline": True})
    (run_dir / "evidence" / "manifest.json").write_text(json.dumps(manifest, indent=2))

    def relist(result: dict[str, Any]) -> None:
        files = [item for item in result["evidence"]["files"] if item["name"] != name]
        files.append({"name": name, "kind": kind, "content": payload.decode(), "sha256": digest})
        result["evidence"]["files"] = files

    edit_result(run_dir, relist)
    return digest


def edit_json_evidence(run_dir: Path, name: str, edit: Callable[[dict[str, Any]], Any]) -> None:
    data = json.loads((run_dir / "evidence" / name).read_text())
    edit(data)
    put_evidence(run_dir, name, json.dumps(data, indent=2, sort_keys=True))


def jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def read_jsonl(run_dir: Path, name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "evidence" / name).read_text().splitlines() if line.strip()]


def append_gate_event(run_dir: Path, gate: str, status: str) -> None:
    """A later gate event: the gate's last recorded status becomes `status`."""
    event = {"ts": "2026-12-04T00:00:00+00:00", "event": "gate", "gate": gate, "status": status,
             "reasons": [f"{gate} {status}"], "measured": {}, "duration_s": 1.0}
    with (run_dir / "events.jsonl").open("a") as handle:
        handle.write(json.dumps(event) + "\n")


# ---------------------------------------------------------------- an adaptive-selection record (DEC-13)
# made with the run's own code (experiment.stats.selection and decision, as experiment/rl/steps/decision.py
# calls them) for the corpus variant `adaptive-two-treatments` (test_adaptive_selection.py says how)

ADAPTIVE_ITEMS = [f"item-{i}" for i in range(12)]
ADAPTIVE_BASELINE = "grpo_gs8"


def adaptive_values(split: sel.ItemSplit) -> dict[str, dict[str, float]]:
    """gs1_kernel wins on the selection items, grpo_gs4 on the confirmation items; the baseline scores 0.5."""
    values: dict[str, dict[str, float]] = {}
    for item in ADAPTIVE_ITEMS:
        on_selection = item in split.selection_ids
        values.setdefault("gs1_kernel", {})[item] = 1.0 if on_selection else 0.0
        values.setdefault("grpo_gs4", {})[item] = 0.0 if on_selection else 1.0
        values.setdefault(ADAPTIVE_BASELINE, {})[item] = float(ADAPTIVE_ITEMS.index(item) % 2)
    return values


def adaptive_observations(values, evaluator="e" * 64, seeds=(0,)) -> list[d.Observation]:
    return [d.Observation(item, arm, seed, "accuracy", value, evaluator)
            for arm, by_item in values.items() for item, value in by_item.items() for seed in seeds]


def adaptive_record(plan, rule: dict) -> dict:
    """The decision, evaluation and evidence parts of a finished adaptive run, made as the decision step makes them."""
    provenance = {"code_sha256": "a" * 64, "prompt_template": "{question}",
                  "decoding": {"temperature": 0.0, "max_tokens": 16, "stop": ["<|im_end|>"]},
                  "parser": "boxed integer", "items": {"ids": ADAPTIVE_ITEMS}}
    eid = evaluator_id(provenance)
    split = sel.split_items(ADAPTIVE_ITEMS)
    values = adaptive_values(split)
    files, scores = [], []
    for arm, by_item in values.items():
        rows = [{"item_id": item, "arm": arm, "seed": 0, "metric": "accuracy", "value": value, "prediction": "1",
                 "reference": "1", "correct": bool(value), "evaluator_id": eid} for item, value in by_item.items()]
        name = f"predictions-{arm}.jsonl"
        files.append(evidence_file(name, "predictions", "".join(json.dumps(r) + "\n" for r in rows).encode()))
        scores.append({"arm": arm, "metric": "accuracy", "value": sum(by_item.values()) / len(by_item),
                       "evaluator_id": eid, "seed": 0, "predictions_ref": name})
    every = adaptive_observations(values, eid)
    selected, effects = sel.choose(every, rule["criteria"][0], "treatment", plan.selection["candidates"],
                                   {"baseline": ADAPTIVE_BASELINE}, [0], split.selection_ids)
    record = sel.selection_record(split, eid, "treatment", plan.selection["candidates"], "primary", selected, effects)
    files.append(evidence_file(sel.SELECTION_FILE_NAME, "metrics", sel.selection_file_bytes(record)))
    selection = {**record, "file": {"name": sel.SELECTION_FILE_NAME, "sha256": files[-1]["sha256"]}}
    compared = {selected, ADAPTIVE_BASELINE}
    observations = [o for o in every if o.arm in compared and o.item_id in split.confirmation_ids]
    result = {"status": "succeeded", "evaluation": {"version": 1, "evaluators": {eid: provenance}, "scores": scores,
                                                    "comparisons": [{"metric": "accuracy", "arms": list(values)}]},
              "evidence": {"version": 1, "files": files}}
    adaptive_decide(result, rule, observations, selection)
    return result


def adaptive_variant_record(directory: Path) -> tuple[Path, dict, dict]:
    """(the adaptive-two-treatments variant written in `directory`, its decision_rule, a finished adaptive record
    graded against it): what the adaptive-selection tests of the run code and of the grader start from."""
    path = write_variant(variant("adaptive-two-treatments"), directory)
    spec = load_spec(path)
    rule = spec.section("decision_rule")
    return path, rule, adaptive_record(build_plan(spec), rule)


def adaptive_decide(result: dict, rule: dict, observations: list[d.Observation], selection: dict) -> None:
    """(Re)write the observations file, the decision and the verdict fields from these observations."""
    files = [f for f in result["evidence"]["files"] if f["name"] != d.OBSERVATIONS_FILE_NAME]
    files.append(evidence_file(d.OBSERVATIONS_FILE_NAME, "metrics", d.observations_jsonl_bytes(observations)))
    result["evidence"]["files"] = files
    summary = d.decision_summary(rule, observations, "direction_confidence",
                                 role_to_arm={"treatment": selection["selected"], "baseline": ADAPTIVE_BASELINE})
    result["decision"] = d.decision_record(summary, d.OBSERVATIONS_FILE_NAME, files[-1]["sha256"], selection=selection)
    primary = summary["criteria"][0]
    result.update(verdict=summary["verdict"], confidence=summary["confidence"], effect=primary["effect"],
                  margin=primary["margin"], ci=[primary["lower"], primary["upper"]], seeds=1, grid_edge=False)


def refreeze_adaptive_selection(result: dict, edit) -> None:
    """Edit decision.selection as a cheater would: digest, retained file and its sha256 made to match."""
    selection = result["decision"]["selection"]
    edit(selection)
    body = {k: v for k, v in selection.items() if k not in ("file", "record_sha256")}
    selection["record_sha256"] = sel.record_sha256(body)
    frozen = {k: v for k, v in selection.items() if k != "file"}
    entry = evidence_file(sel.SELECTION_FILE_NAME, "metrics", sel.selection_file_bytes(frozen))
    result["evidence"]["files"] = [entry if f["name"] == sel.SELECTION_FILE_NAME else f
                                   for f in result["evidence"]["files"]]
    selection["file"]["sha256"] = entry["sha256"]


def graded_decision(result, spec_path):
    graded = grade_record(copy.deepcopy(result), spec=spec_path, self_consistency=False).categories["decision"]
    return graded.status, [issue.sentence() for issue in graded.issues]


# ---------------------------------------------------------------- a self-generation record's files and leaves


def files_by_name(record) -> dict[str, dict]:
    return {f["name"]: f for f in record["evidence"]["files"]}


def put_record_file(record, name: str, kind: str, text: str) -> None:
    record["evidence"]["files"] = [f for f in record["evidence"]["files"] if f["name"] != name] + [
        evidence_file(name, kind, text.encode())]


def retained_spec_of(record) -> dict:
    return json.loads(files_by_name(record)["spec.json"]["content"])


def with_two_audit_rounds(record) -> dict:
    """The paired record's audit as its second round, after a first round (seed one less) on a copy of the
    candidates with one sampled label wrong, which failed; both audit files whole records, as the run writes them."""
    record = copy.deepcopy(record)
    audit, files = record["generation_audit"], files_by_name(record)
    spec_audit = retained_spec_of(record)["generation_audit"]
    tasks = [json.loads(line) for line in files[audit["dataset_file"]]["content"].splitlines()]
    evaluation = [json.loads(line) for line in files[audit["evaluation_file"]]["content"].splitlines()]
    independence = {k: audit[k] for k in ("resolver", "compared_identities", "resolver_independent",
                                          "resolver_independence_problems")}
    resolver_id = audit["samples"][0]["resolver_id"]
    first = ga.select_sample(tasks, ga.sample_size(counts_of(tasks)["accepted"], spec_audit), audit["sample_seed"] - 1)
    wrong = first[0]["item_id"]
    earlier = [{**t, "answer": "999"} if t["item_id"] == wrong else t for t in tasks]
    history, reports = [], []
    for number, (candidates, seed, name) in enumerate(
            [(earlier, audit["sample_seed"] - 1, "r1"), (tasks, audit["sample_seed"], "r2")], 1):
        resolved = {t["item_id"]: {"independent_answer": str(2 * int(t["item_id"].split("-")[1])),
                                   "reasoning": "added the numbers"} for t in candidates}
        report = ga.build_report(tasks=candidates, evaluation=evaluation, resolved=resolved, resolver_id=resolver_id,
                                 spec_audit=spec_audit, seed=seed, dataset_file=f"generated-tasks-{name}.jsonl",
                                 evaluation_file=audit["evaluation_file"], audit_file=f"generation-audit-{name}.json")
        validation = ga.validate(report, spec_audit, candidates, evaluation)
        history.append({"round": number, "dataset_file": report["dataset_file"], "audit_file": report["audit_file"],
                        "counts": report["counts"], "sample_size": report["sample_size"],
                        "label_error_count": report["label_error_count"], "overlap_count": report["overlap_count"],
                        "status": validation.status})
        report.update(independence, round=number, status=validation.status, validation_reasons=validation.reasons,
                      rounds=list(history))
        put_record_file(record, report["dataset_file"], "generated_tasks",
             "".join(json.dumps(t, sort_keys=True) + "\n" for t in candidates))
        put_record_file(record, report["audit_file"], "generated_tasks", json.dumps(report, indent=2) + "\n")
        reports.append(report)
    assert [r["status"] for r in reports] == ["failed", "passed"]
    record["generation_audit"] = reports[-1]
    for old in (audit["dataset_file"], audit["audit_file"]):
        record["evidence"]["files"] = [f for f in record["evidence"]["files"] if f["name"] != old]
    return record


def record_leaf(record, file: str | None, path: tuple) -> L.Leaf:
    return next(leaf for leaf in L.leaves(record) if leaf.file == file and leaf.path == path)
