"""The grading rule cases (one rule broken at a time on a good record) and their record edits, shared by
test_grading_rules.py (each case grades the contract's status) and test_grading_rule_table.py (every rule of the
table has a case)."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from pathlib import Path

from experiment.contract.spec import apply_revision
from experiment.stats.evaluation import evaluator_id


ROOT = Path(__file__).resolve().parents[1]  # the repository


def files(result):
    return {f["name"]: f for f in result["evidence"]["files"]}


def rows(result, name):
    return [json.loads(line) for line in files(result)[name]["content"].splitlines() if line.strip()]


def set_rows(result, name, new_rows, rehash=True):
    entry = files(result)[name]
    entry["content"] = "".join(json.dumps(r, sort_keys=True) + "\n" for r in new_rows)
    if rehash:
        rehash_evidence(result)


def rehash_evidence(result):
    """Make every sha256 (files, and the decision's observations file) match the edited content."""
    for entry in result["evidence"]["files"]:
        data = base64.b64decode(entry["content"]) if entry.get("encoding") == "base64" else entry["content"].encode()
        entry["sha256"] = hashlib.sha256(data).hexdigest()
    ref = result.get("decision", {}).get("observations_file")
    if ref:
        ref["sha256"] = files(result)[ref["name"]]["sha256"]


def rekey_evaluator(result, edit):
    """Edit the evaluator's provenance and re-key every reference to it (only the edited rule breaks)."""
    (old, provenance), = result["evaluation"]["evaluators"].items()
    edit(provenance)
    new = evaluator_id(provenance)
    text = json.dumps(result).replace(old, new)
    result.clear()
    result.update(json.loads(text))
    rehash_evidence(result)


def spec_dict(kind, edit=None):
    name = "selfgen_tasks_vs_gsm8k" if kind == "paired" else "trimuon_vs_dimuon_no_robots"
    spec = json.loads((ROOT / f"specs/{name}.json").read_text())
    plan = ROOT / f"specs/{name}.plan.json"
    if plan.exists():
        spec, _ = apply_revision(spec, json.loads(plan.read_text()), plan)
    if edit:
        edit(spec)
    return spec


def delete_at(path):
    def edit(result):
        *parents, last = path
        target = result
        for key in parents:
            target = target[key]
        del target[last]
    return edit


def set_at(path, value):
    def edit(result):
        *parents, last = path
        target = result
        for key in parents:
            target = target[key]
        target[last] = value
    return edit


def first_evaluator(result):
    return next(iter(result["evaluation"]["evaluators"].values()))


def arm_entry(result, name):
    return result["initialization_provenance"]["arms"][name]


def drop_content(name):
    def edit(result):
        entry = files(result)[name]
        entry.pop("content")
        entry.pop("encoding", None)
    return edit


def observation_edit(change):
    def edit(result):
        name = result["decision"]["observations_file"]["name"]
        observations = rows(result, name)
        change(observations)
        set_rows(result, name, observations)
    return edit


def edit_first_observation(observations):
    observations[0]["value"] = 1.0 - observations[0]["value"]


def break_lr_probe(result):
    result["correctness_preflight"]["paths"][0]["lr_scaling"][-1]["update_norm"] *= 1.5


def wrong_answer(result):
    result["generation_audit"]["samples"][0]["independent_answer"] = "-999"


def second_evaluator(result):
    provenance = copy.deepcopy(first_evaluator(result))
    provenance["parser"] = "another parser"
    new = evaluator_id(provenance)
    result["evaluation"]["evaluators"][new] = provenance
    result["evaluation"]["scores"][0]["evaluator_id"] = new


def reference_update_key(result):
    """The first reference-update check of the record (keyed per learning rate: 'reference_update@lr=<lr>')."""
    keys = [k for k in result["correctness_preflight"]["paths"][0]["errors"] if k.split("@")[0] == "reference_update"]
    assert keys, "the record has no reference_update check"
    return keys[0]


def reference_update_errors(result):
    return result["correctness_preflight"]["paths"][0]["errors"][reference_update_key(result)]


CASES = [
    # evaluator
    ("paired", delete_at(["evaluation"]), "evaluator", "unknown", "EVAL-1"),
    ("paired", set_at(["evaluation", "version"], 2), "evaluator", "invalid", "EVAL-1"),
    ("paired", lambda r: first_evaluator(r).update(parser="changed after scoring"), "evaluator", "invalid", "EVAL-2"),
    ("paired", lambda r: rekey_evaluator(r, lambda p: p.update(code_sha256="sha of math_eval.py")), "evaluator",
     "invalid", "EVAL-3"),
    ("paired", lambda r: rekey_evaluator(r, lambda p: p.update(items={"ids": "item-0 .. item-5"})), "evaluator",
     "invalid", "EVAL-4"),
    ("paired", lambda r: rekey_evaluator(r, lambda p: p["decoding"].update(stop="renderer stop sequences")),
     "evaluator", "invalid", "EVAL-5"),
    ("paired", lambda r: rekey_evaluator(r, lambda p: p.update(checkpoint="tinker://run/rl_gsm8k")), "evaluator",
     "invalid", "EVAL-6"),
    ("paired", lambda r: r["evaluation"]["scores"][0].update(evaluator_id="f" * 64), "evaluator", "invalid", "EVAL-7"),
    ("paired", drop_content("predictions-base.jsonl"), "evaluator", "unverified", "EVAL-8"),
    ("paired", lambda r: set_rows(r, "predictions-base.jsonl", rows(r, "predictions-base.jsonl")[1:]), "evaluator",
     "invalid", "EVAL-9"),
    ("best_lr", second_evaluator, "evaluator", "invalid", "EVAL-10"),
    ("best_lr", delete_at(["loss_eval"]), "evaluator", "unverified", "LOSS-1"),
    ("best_lr", lambda r: next(iter(r["loss_eval"]["arms"].values())).update(value=9.0), "evaluator", "invalid",
     "LOSS-2"),
    # decision
    ("paired", lambda r: (r.pop("decision")), "decision", "unverified", "DEC-1"),
    ("paired", lambda r: r["decision"].update(observations=[]), "decision", "invalid", "DEC-2"),
    ("paired", drop_content("scored-observations.jsonl"), "decision", "unverified", "DEC-3"),
    ("paired", observation_edit(lambda o: o[0].update(value="low")), "decision", "invalid", "DEC-5"),
    ("best_lr", lambda r: r.update(decision={"version": 1, "observations": []}), "decision", "invalid", "DEC-1"),
    ("paired", observation_edit(lambda o: o.pop()), "decision", "unverified", "DEC-6"),
    ("paired", observation_edit(lambda o: o.append({**o[0], "seed": 1})), "decision", "invalid", "DEC-6"),
    ("paired", observation_edit(edit_first_observation), "decision", "invalid", "DEC-7"),
    ("paired", lambda r: r["decision"]["criteria"][0].update(effect=0.5), "decision", "invalid", "DEC-8"),
    ("best_lr", lambda r: r.update(effect=0.5), "decision", "invalid", "DEC-8"),
    ("best_lr", lambda r: r.update(verdict="supported" if r["verdict"] == "refuted" else "refuted"), "decision",
     "invalid", "DEC-9"),
    ("paired", lambda r: r["evaluation"]["scores"][1].update(value=0.99), "decision", "invalid", "DEC-10"),
    ("paired", lambda r: r["decision"].update(adjustment="none"), "decision", "invalid", "DEC-11"),
    ("best_lr", lambda r: r.update(grid_edge=not r["grid_edge"]), "decision", "invalid", "DEC-12"),
    ("best_lr", lambda r: r.update(adaptation_manifests=[{"arm": "trimuon", "pair": "p", "warmup_batches": 0,
                                                          "adaptation_batch_ids": ["b0"], "adaptation_batch_hash": "x"}]),
     "decision", "invalid", "ADAPT-1"),
    # restoration
    ("paired", lambda r: r["initialization_provenance"]["arms"].pop("rl_gsm8k"), "restoration", "unverified", "REST-1"),
    ("paired", lambda r: arm_entry(r, "rl_gsm8k")["initialization"].pop("adapter_sha256"), "restoration", "unverified",
     "REST-2"),
    ("paired", lambda r: arm_entry(r, "rl_gsm8k")["initialization"].update(adapter_sha256="0" * 64), "restoration",
     "invalid", "REST-3"),
    ("paired", lambda r: arm_entry(r, "rl_gsm8k")["optimizer_checks"].pop(), "restoration", "unverified", "REST-4"),
    ("paired", lambda r: arm_entry(r, "rl_gsm8k")["optimizer_checks"][0]["requested"].update(beta2=0.999), "restoration",
     "invalid", "REST-5"),
    # the family as the pipeline requested it, compared exactly (an upper-cased one graded green before)
    ("paired", lambda r: arm_entry(r, "rl_gsm8k")["optimizer_checks"][0]["requested"].update(
        family=arm_entry(r, "rl_gsm8k")["optimizer_checks"][0]["requested"]["family"].upper()), "restoration", "invalid",
     "REST-5"),
    ("paired", lambda r: arm_entry(r, "rl_gsm8k")["optimizer_checks"][0].update(actual_config={"type": "adamw"}),
     "restoration", "unverified", "REST-6"),
    ("paired", lambda r: arm_entry(r, "rl_gsm8k")["optimizer_checks"][0].update(source="declared", actual_family=None,
                                                                            actual_config=None),
     "restoration", "unverified", "REST-6"),
    ("paired", lambda r: arm_entry(r, "rl_gsm8k")["optimizer_checks"][0]["actual_config"].update(beta1=0.5), "restoration",
     "invalid", "REST-6"),
    ("paired", lambda r: arm_entry(r, "rl_gsm8k")["initial_output"].update(output_sha256="1" * 64), "restoration",
     "invalid", "REST-7"),
    ("paired", lambda r: arm_entry(r, "rl_gsm8k").update(initial_output={"available": False, "reason": "not captured"}),
     "restoration", "unverified", "REST-7"),
    ("paired", drop_content("restoration-rl_gsm8k.json"), "restoration", "unverified", "REST-8"),
    # correctness
    ("best_lr", delete_at(["correctness_preflight"]), "correctness", "unverified", "CORR-1"),
    ("best_lr", lambda r: r["correctness_preflight"]["paths"][0].update(id="other_path"), "correctness", "unverified",
     "CORR-2"),
    ("best_lr", lambda r: r["correctness_preflight"]["paths"][0]["errors"].pop(reference_update_key(r)),
     "correctness", "unverified", "CORR-3"),
    ("best_lr", lambda r: reference_update_errors(r).update(max_abs_error=1.0), "correctness", "invalid", "CORR-4"),
    ("best_lr", break_lr_probe, "correctness", "invalid", "CORR-5"),
    ("best_lr", lambda r: r["correctness_preflight"]["paths"][0].update(baseline_revision="whatever was installed"),
     "correctness", "unverified", "CORR-6"),
    ("best_lr", lambda r: reference_update_errors(r).update(max_abs_error=1.0), "correctness", "invalid", "CORR-8"),
    ("best_lr", lambda r: r["correctness_preflight"]["paths"][0]["fixed_input"].update(sha256="9" * 64), "correctness",
     "unverified", "CORR-9"),
    ("paired", lambda r: r.update(correctness_preflight={"required": True, "paths": []}), "correctness", "invalid",
     "CORR-1"),
    # feasibility
    ("paired", delete_at(["feasibility"]), "feasibility", "unknown", "FEAS-1"),
    ("paired", lambda r: r["feasibility"]["config"].update(steps=41), "feasibility", "unknown", "FEAS-2"),
    ("paired", lambda r: r["feasibility"]["effective_config"].pop("n_eval"), "feasibility", "unknown", "FEAS-2"),
    ("paired", set_at(["feasibility", "source"], ""), "feasibility", "unknown", "FEAS-3"),
    ("paired", lambda r: r["feasibility"]["measurements"].update(training={"seconds": 1.0}), "feasibility", "unknown",
     "FEAS-4"),
    ("paired", lambda r: r["feasibility"]["recovery"].update(seconds=0), "feasibility", "unknown", "FEAS-5"),
    ("paired", lambda r: r["feasibility"]["recovery"].update(gpu_count=8, allocation_source=None), "feasibility",
     "unknown", "FEAS-6"),
    ("paired", set_at(["feasibility", "generation"], None), "feasibility", "unknown", "FEAS-7"),
    ("paired", set_at(["feasibility", "primary_endpoint"], "train loss"), "feasibility", "unknown", "FEAS-8"),
    ("best_lr", lambda r: r["feasibility"].update(projection={"fits": False}), "feasibility", "invalid", "FEAS-9"),
    # generation audit
    ("paired", delete_at(["generation_audit"]), "generation_audit", "unknown", "GA-2"),
    ("paired", set_at(["generation_audit", "stage"], "after_training"), "generation_audit", "invalid", "GA-2"),
    ("paired", drop_content("generated-tasks-v1.jsonl"), "generation_audit", "unverified", "GA-3"),
    ("paired", lambda r: r["generation_audit"]["counts"].update(accepted=3), "generation_audit", "invalid", "GA-4"),
    ("paired", lambda r: r["generation_audit"]["samples"].pop(), "generation_audit", "invalid", "GA-5"),
    ("paired", lambda r: r["generation_audit"]["samples"][0].update(blind_to_label=False), "generation_audit",
     "unverified", "GA-6"),
    ("paired", wrong_answer, "generation_audit", "invalid", "GA-8"),
    ("paired", lambda r: r["generation_audit"].update(overlap_count=1), "generation_audit", "invalid", "GA-8"),
]


SPEC_CASES = [
    # the record is good; the spec it is graded against names the rule
    ("paired", lambda s: (s.pop("decision_rule"), s["experiment_features"].update(paired_comparison=False)),
     "decision", "invalid", "DEC-1"),
    ("paired", lambda s: s["experiment_features"].update(adaptive_selection=True), "decision", "invalid", "DEC-13"),
    ("paired", lambda s: s["restoration_preflight"].update(groups=[{"arms": [g]} for g in s["restoration_preflight"]
                                                                    ["groups"][0]["arms"]]),
     "restoration", "unverified", "REST-9"),
    ("best_lr", lambda s: s.pop("correctness_preflight"), "correctness", "unverified", "CORR-7"),
    ("best_lr", lambda s: s["correctness_preflight"]["paths"][0].update(baseline_revision="UNRESOLVED: pin it"),
     "correctness", "unverified", "CORR-6"),
    ("paired", lambda s: (s["generation_audit"].update(required=False),
                          s["experiment_features"].pop("generated_training_data")),
     "generation_audit", "unknown", "GA-1"),
    ("paired", lambda s: s["generation_audit"].update(answer_comparison="fuzzy"), "generation_audit", "unverified",
     "GA-7"),
]
