"""Each rule of docs/contract-rules.md that the grader implements: a good record graded green,
then the same record with exactly that rule broken gets the contract's status and the rule id."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from pathlib import Path

import pytest

from experiment.stats.evaluation import evaluator_id
from experiment.contract.spec import apply_revision
from experiment.grading import decision as decision_module
from experiment.grading import grade_record

ROOT = Path(__file__).resolve().parents[2]


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


def grade(result, spec=None):
    return grade_record(result, spec=spec)


def assert_rule(graded, category, status, rule):
    got = graded.categories[category]
    assert got.status == status, (got.status, [i.sentence() for i in got.issues])
    assert rule in {issue.rule for issue in got.issues}, [i.sentence() for i in got.issues]


@pytest.mark.parametrize("kind", ["paired", "best_lr"])
def test_good_records_grade_green(graded_record, kind):
    """Green against the spec with every pin in the spec itself; the TriMuon record's correctness pins
    come from its recorded revision, so against its recorded spec correctness is unverified (CORR-6),
    as the exchange grades it, and nothing else fails."""
    result, _ = graded_record(kind)
    graded = grade(result, spec=spec_dict(kind))
    assert graded.ok, graded.to_dict()
    assert {c.status for c in graded.categories.values()} <= {"verified", "not_applicable"}
    recorded = grade(result)
    failing = {name: c for name, c in recorded.categories.items() if c.failing}
    if kind == "paired":
        assert recorded.ok, recorded.to_dict()
    else:
        assert list(failing) == ["correctness"] and not recorded.problems, recorded.to_dict()
        assert {(i.rule, i.status) for i in failing["correctness"].issues} == {("CORR-6", "unverified")}
        assert all("recorded spec revision" in i.message for i in failing["correctness"].issues)


def _del(path):
    def edit(result):
        *parents, last = path
        target = result
        for key in parents:
            target = target[key]
        del target[last]
    return edit


def _set(path, value):
    def edit(result):
        *parents, last = path
        target = result
        for key in parents:
            target = target[key]
        target[last] = value
    return edit


def _first_evaluator(result):
    return next(iter(result["evaluation"]["evaluators"].values()))


def _arm(result, name):
    return result["initialization_provenance"]["arms"][name]


def _drop_content(name):
    def edit(result):
        entry = files(result)[name]
        entry.pop("content")
        entry.pop("encoding", None)
    return edit


def _obs_edit(change):
    def edit(result):
        name = result["decision"]["observations_file"]["name"]
        observations = rows(result, name)
        change(observations)
        set_rows(result, name, observations)
    return edit


def _edit_first_obs(observations):
    observations[0]["value"] = 1.0 - observations[0]["value"]


def _lr_probe_break(result):
    result["correctness_preflight"]["paths"][0]["lr_scaling"][-1]["update_norm"] *= 1.5


def _wrong_answer(result):
    result["generation_audit"]["samples"][0]["independent_answer"] = "-999"


def _second_evaluator(result):
    provenance = copy.deepcopy(_first_evaluator(result))
    provenance["parser"] = "another parser"
    new = evaluator_id(provenance)
    result["evaluation"]["evaluators"][new] = provenance
    result["evaluation"]["scores"][0]["evaluator_id"] = new


def _reference_update_key(result):
    """The first reference-update check of the record (keyed per learning rate: 'reference_update@lr=<lr>')."""
    keys = [k for k in result["correctness_preflight"]["paths"][0]["errors"] if k.split("@")[0] == "reference_update"]
    assert keys, "the record has no reference_update check"
    return keys[0]


def _reference_update_errors(result):
    return result["correctness_preflight"]["paths"][0]["errors"][_reference_update_key(result)]


CASES = [
    # evaluator
    ("paired", _del(["evaluation"]), "evaluator", "unknown", "EVAL-1"),
    ("paired", _set(["evaluation", "version"], 2), "evaluator", "invalid", "EVAL-1"),
    ("paired", lambda r: _first_evaluator(r).update(parser="changed after scoring"), "evaluator", "invalid", "EVAL-2"),
    ("paired", lambda r: rekey_evaluator(r, lambda p: p.update(code_sha256="sha of math_eval.py")), "evaluator",
     "invalid", "EVAL-3"),
    ("paired", lambda r: rekey_evaluator(r, lambda p: p.update(items={"ids": "item-0 .. item-5"})), "evaluator",
     "invalid", "EVAL-4"),
    ("paired", lambda r: rekey_evaluator(r, lambda p: p["decoding"].update(stop="renderer stop sequences")),
     "evaluator", "invalid", "EVAL-5"),
    ("paired", lambda r: rekey_evaluator(r, lambda p: p.update(checkpoint="tinker://run/rl_gsm8k")), "evaluator",
     "invalid", "EVAL-6"),
    ("paired", lambda r: r["evaluation"]["scores"][0].update(evaluator_id="f" * 64), "evaluator", "invalid", "EVAL-7"),
    ("paired", _drop_content("predictions-base.jsonl"), "evaluator", "unverified", "EVAL-8"),
    ("paired", lambda r: set_rows(r, "predictions-base.jsonl", rows(r, "predictions-base.jsonl")[1:]), "evaluator",
     "invalid", "EVAL-9"),
    ("best_lr", _second_evaluator, "evaluator", "invalid", "EVAL-10"),
    ("best_lr", _del(["loss_eval"]), "evaluator", "unverified", "LOSS-1"),
    ("best_lr", lambda r: next(iter(r["loss_eval"]["arms"].values())).update(value=9.0), "evaluator", "invalid",
     "LOSS-2"),
    # decision
    ("paired", lambda r: (r.pop("decision")), "decision", "unverified", "DEC-1"),
    ("paired", lambda r: r["decision"].update(observations=[]), "decision", "invalid", "DEC-2"),
    ("paired", _drop_content("scored-observations.jsonl"), "decision", "unverified", "DEC-3"),
    ("paired", _obs_edit(lambda o: o[0].update(value="low")), "decision", "invalid", "DEC-5"),
    ("best_lr", lambda r: r.update(decision={"version": 1, "observations": []}), "decision", "invalid", "DEC-1"),
    ("paired", _obs_edit(lambda o: o.pop()), "decision", "unverified", "DEC-6"),
    ("paired", _obs_edit(lambda o: o.append({**o[0], "seed": 1})), "decision", "invalid", "DEC-6"),
    ("paired", _obs_edit(_edit_first_obs), "decision", "invalid", "DEC-7"),
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
    ("paired", lambda r: _arm(r, "rl_gsm8k")["initialization"].pop("adapter_sha256"), "restoration", "unverified",
     "REST-2"),
    ("paired", lambda r: _arm(r, "rl_gsm8k")["initialization"].update(adapter_sha256="0" * 64), "restoration",
     "invalid", "REST-3"),
    ("paired", lambda r: _arm(r, "rl_gsm8k")["optimizer_checks"].pop(), "restoration", "unverified", "REST-4"),
    ("paired", lambda r: _arm(r, "rl_gsm8k")["optimizer_checks"][0]["requested"].update(beta2=0.999), "restoration",
     "invalid", "REST-5"),
    # the family as the pipeline requested it, compared exactly (an upper-cased one graded green before)
    ("paired", lambda r: _arm(r, "rl_gsm8k")["optimizer_checks"][0]["requested"].update(
        family=_arm(r, "rl_gsm8k")["optimizer_checks"][0]["requested"]["family"].upper()), "restoration", "invalid",
     "REST-5"),
    ("paired", lambda r: _arm(r, "rl_gsm8k")["optimizer_checks"][0].update(actual_config={"type": "adamw"}),
     "restoration", "unverified", "REST-6"),
    ("paired", lambda r: _arm(r, "rl_gsm8k")["optimizer_checks"][0].update(source="declared", actual_family=None,
                                                                            actual_config=None),
     "restoration", "unverified", "REST-6"),
    ("paired", lambda r: _arm(r, "rl_gsm8k")["optimizer_checks"][0]["actual_config"].update(beta1=0.5), "restoration",
     "invalid", "REST-6"),
    ("paired", lambda r: _arm(r, "rl_gsm8k")["initial_output"].update(output_sha256="1" * 64), "restoration",
     "invalid", "REST-7"),
    ("paired", lambda r: _arm(r, "rl_gsm8k").update(initial_output={"available": False, "reason": "not captured"}),
     "restoration", "unverified", "REST-7"),
    ("paired", _drop_content("restoration-rl_gsm8k.json"), "restoration", "unverified", "REST-8"),
    # correctness
    ("best_lr", _del(["correctness_preflight"]), "correctness", "unverified", "CORR-1"),
    ("best_lr", lambda r: r["correctness_preflight"]["paths"][0].update(id="other_path"), "correctness", "unverified",
     "CORR-2"),
    ("best_lr", lambda r: r["correctness_preflight"]["paths"][0]["errors"].pop(_reference_update_key(r)),
     "correctness", "unverified", "CORR-3"),
    ("best_lr", lambda r: _reference_update_errors(r).update(max_abs_error=1.0), "correctness", "invalid", "CORR-4"),
    ("best_lr", _lr_probe_break, "correctness", "invalid", "CORR-5"),
    ("best_lr", lambda r: r["correctness_preflight"]["paths"][0].update(baseline_revision="whatever was installed"),
     "correctness", "unverified", "CORR-6"),
    ("best_lr", lambda r: _reference_update_errors(r).update(max_abs_error=1.0), "correctness", "invalid", "CORR-8"),
    ("best_lr", lambda r: r["correctness_preflight"]["paths"][0]["fixed_input"].update(sha256="9" * 64), "correctness",
     "unverified", "CORR-9"),
    ("paired", lambda r: r.update(correctness_preflight={"required": True, "paths": []}), "correctness", "invalid",
     "CORR-1"),
    # feasibility
    ("paired", _del(["feasibility"]), "feasibility", "unknown", "FEAS-1"),
    ("paired", lambda r: r["feasibility"]["config"].update(steps=40), "feasibility", "unknown", "FEAS-2"),
    ("paired", lambda r: r["feasibility"]["effective_config"].pop("n_eval"), "feasibility", "unknown", "FEAS-2"),
    ("paired", _set(["feasibility", "source"], ""), "feasibility", "unknown", "FEAS-3"),
    ("paired", lambda r: r["feasibility"]["measurements"].update(training={"seconds": 1.0}), "feasibility", "unknown",
     "FEAS-4"),
    ("paired", lambda r: r["feasibility"]["recovery"].update(seconds=0), "feasibility", "unknown", "FEAS-5"),
    ("paired", lambda r: r["feasibility"]["recovery"].update(gpu_count=8, allocation_source=None), "feasibility",
     "unknown", "FEAS-6"),
    ("paired", _set(["feasibility", "generation"], None), "feasibility", "unknown", "FEAS-7"),
    ("paired", _set(["feasibility", "primary_endpoint"], "train loss"), "feasibility", "unknown", "FEAS-8"),
    ("best_lr", lambda r: r["feasibility"].update(projection={"fits": False}), "feasibility", "invalid", "FEAS-9"),
    # generation audit
    ("paired", _del(["generation_audit"]), "generation_audit", "unknown", "GA-2"),
    ("paired", _set(["generation_audit", "stage"], "after_training"), "generation_audit", "invalid", "GA-2"),
    ("paired", _drop_content("generated-tasks-v1.jsonl"), "generation_audit", "unverified", "GA-3"),
    ("paired", lambda r: r["generation_audit"]["counts"].update(accepted=3), "generation_audit", "invalid", "GA-4"),
    ("paired", lambda r: r["generation_audit"]["samples"].pop(), "generation_audit", "invalid", "GA-5"),
    ("paired", lambda r: r["generation_audit"]["samples"][0].update(blind_to_label=False), "generation_audit",
     "unverified", "GA-6"),
    ("paired", _wrong_answer, "generation_audit", "invalid", "GA-8"),
    ("paired", lambda r: r["generation_audit"].update(overlap_count=1), "generation_audit", "invalid", "GA-8"),
]


@pytest.mark.parametrize("kind,edit,category,status,rule", CASES,
                         ids=[f"{c[4]}-{c[3]}-{i}" for i, c in enumerate(CASES)])
def test_breaking_one_rule_gets_the_contracts_status(graded_record, kind, edit, category, status, rule):
    result, _ = graded_record(kind)
    spec = spec_dict(kind) if category == "correctness" else None  # pins in the spec itself, not a revision (CORR-6)
    assert grade(result, spec).categories[category].status in ("verified", "not_applicable")
    edit(result)
    assert_rule(grade(result, spec), category, status, rule)


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


@pytest.mark.parametrize("kind,edit,category,status,rule", SPEC_CASES,
                         ids=[f"{c[4]}-{c[3]}-{i}" for i, c in enumerate(SPEC_CASES)])
def test_rules_that_the_spec_sets(graded_record, kind, edit, category, status, rule):
    result, _ = graded_record(kind)
    assert grade(result, spec=spec_dict(kind)).categories[category].status in ("verified", "not_applicable")
    assert_rule(grade(result, spec=spec_dict(kind, edit)), category, status, rule)


def test_the_pilot_size_the_spec_states_is_held_to_and_only_when_stated(graded_record):
    """FEAS-10: the self-generated seed spec states its pilot (2 steps per arm plus 100 eval items); a
    record whose pilot measured another size is unknown under it, and the same record graded against
    the spec with that sentence taken out of its command has no FEAS-10 issue."""
    result, _ = graded_record("paired")
    stated = spec_dict("paired")
    assert "2 steps per arm plus 100 eval items" in stated["command"]
    assert grade(result, spec=stated).categories["feasibility"].status == "verified"
    measured = result["feasibility"]["measurements"]["training"]["units"]
    result["feasibility"]["measurements"]["training"]["units"] = measured + 1
    assert_rule(grade(result, spec=stated), "feasibility", "unknown", "FEAS-10")
    unstated = spec_dict("paired", lambda s: s.update(
        command=s["command"].replace("2 steps per arm plus 100 eval items", "a short pilot")))
    assert "FEAS-10" not in {issue.rule for issue in grade(result, spec=unstated).categories["feasibility"].issues}


def test_unresolved_revisions_pinned_by_a_revision_are_unverified_as_the_exchange_grades_them(graded_record):
    """Item 4 of issue 28: pins that only a recorded revision supplies grade correctness unverified (the
    exchange grades against its own spec), however well the checks come out; --plan predicts the same."""
    result, _ = graded_record("best_lr")
    path = result["correctness_preflight"]["paths"][0]

    def unresolved_with_pins(spec):
        spec_path = spec["correctness_preflight"]["paths"][0]
        spec_path.update(baseline_revision="UNRESOLVED: pin", reference_revision="UNRESOLVED: pin")
        spec["correctness_pins"] = {path["id"]: {"baseline_revision": path["baseline_revision"],
                                                 "reference_revision": path["reference_revision"]}}
        spec["correctness_preflight"]["status"] = "unresolved"

    graded = grade(result, spec=spec_dict("best_lr", unresolved_with_pins))
    assert_rule(graded, "correctness", "unverified", "CORR-6")
    assert all("recorded spec revision" in issue.message for issue in graded.categories["correctness"].issues)
    # without the pins the same record is unverified too, for the UNRESOLVED revisions themselves
    graded = grade(result, spec=spec_dict("best_lr", lambda s: (unresolved_with_pins(s), s.pop("correctness_pins"))))
    assert_rule(graded, "correctness", "unverified", "CORR-6")
    assert any("UNRESOLVED" in issue.message for issue in graded.categories["correctness"].issues)


def test_generation_audit_not_applicable_when_the_spec_opts_out(graded_record):
    result, _ = graded_record("best_lr")
    graded = grade(result)
    assert graded.categories["generation_audit"].status == "not_applicable"
    assert_rule(graded, "correctness", "unverified", "CORR-6")  # its pins come from the recorded revision


def test_observation_cap(graded_record, monkeypatch):
    result, _ = graded_record("paired")
    monkeypatch.setattr(decision_module, "MAX_OBSERVATIONS", 5)
    assert_rule(grade(result), "decision", "unverified", "DEC-4")


def test_base64_evidence_is_decoded_and_checked(graded_record):
    result, _ = graded_record("paired")
    entry = files(result)["restoration-rl_gsm8k.json"]
    entry["content"] = base64.b64encode(entry["content"].encode()).decode()
    entry["encoding"] = "base64"
    assert grade(result).categories["restoration"].status == "verified"
    entry["content"] = base64.b64encode(b"{}").decode()
    graded = grade(result)
    assert_rule(graded, "restoration", "unverified", "REST-8")
    assert any(p.startswith("EVID-2") for p in graded.problems)


@pytest.mark.parametrize("edit,rule", [
    (lambda r: r.update(status="running"), "GEN-3"),
    (lambda r: r["metrics"].update(rl_gsm8k_accuracy=0.5), "GEN-5"),
    (lambda r: r.update(confidence="weak"), "GEN-4"),
    (lambda r: r.update(outcome_reason="tie", verdict="supported"), "GEN-4"),
    (lambda r: r["deviations"].append({"field": "loss", "original": "a", "effective": "b"}), "GEN-6"),
    (lambda r: r.update(summary="One. Two. Three."), "GEN-8"),
    (lambda r: r["evidence"].update(per_arm_metrics={}), "EVID-5"),
    (lambda r: r.update(status="finished"), "GEN-2"),
    (lambda r: r.update(capacity_block={"error": "trainer capacity exhausted", "comparison_steps_completed": 0,
                                        "released_clients": True}), "GEN-7"),
    (lambda r: r["evidence"]["files"][0].pop("content"), "EVID-1"),
    (lambda r: r["evidence"]["files"].__setitem__(slice(None), [f for f in r["evidence"]["files"]
                                                                  if f["kind"] != "script"]), "EVID-4"),
    (lambda r: r["evidence"]["checkpoints"].append({"arm": "a", "step": 1, "uri": "https://x/w?sig=abcdef"}), "EVID-6"),
    (lambda r: r["evidence"]["files"].append({**r["evidence"]["files"][0], "content": "{}"}), "EVID-7"),
])
def test_record_level_rules_are_problems(graded_record, edit, rule):
    kind = "best_lr" if rule == "GEN-3" else "paired"
    result, _ = graded_record(kind)
    edit(result)
    graded = grade(result)
    assert any(p.startswith(rule) for p in graded.problems), graded.problems
    assert not graded.ok


def test_evidence_caps(graded_record, monkeypatch):
    from experiment.grading import general

    result, _ = graded_record("paired")
    monkeypatch.setattr(general, "MAX_FILE_BYTES", 100)
    assert any(p.startswith("EVID-3") for p in grade(result).problems)
    monkeypatch.setattr(general, "MAX_FILE_BYTES", 10 * 1024 * 1024)
    monkeypatch.setattr(general, "MAX_FILES", 3)
    assert any(p.startswith("EVID-3") for p in grade(result).problems)


def test_production_exposure_grades_restoration_unverified_and_nothing_else(graded_record):
    """Production: no adapter hash, get_info reports only {"type": family}; initialization proven
    by the immutable full-initialization checkpoint (REST-2 passes), the optimizer config stays
    unverified (REST-6) and every other category is green."""
    result, _ = graded_record("paired")
    for name, arm in result["initialization_provenance"]["arms"].items():
        init = arm["initialization"]
        init.pop("adapter_sha256")
        init.update(checkpoint_uri="tinker://run/weights/init-full", checkpoint_immutable=True,  # where REST-10 started
                    checkpoint_scope="full_initialization", loaded_checkpoint_uri="tinker://run/weights/init-full",
                    load_succeeded=True)
        arm["optimizer_checks"][0]["actual_config"] = {"type": "adamw"}
        # the load of the initialization checkpoint is restore 1; no response after load_state exposes the optimizer
        from experiment.rl import restoration as r

        ref = arm["optimizer_checks"][0]["evidence_ref"]
        arm.update(restore_count=1, restores=[r.restore_record(1, f"s:train:{name}", r.LOAD_STATE, init["checkpoint_uri"],
                                                               False, ref, "2026-12-02T12:00:00Z")])
        arm["optimizer_checks"][1:] = [r.declared_check(arm["optimizer_checks"][0]["requested"], 1, ref, "not exposed")]
    graded = grade(result)
    restoration = graded.categories["restoration"]
    assert restoration.status == "unverified"
    assert {issue.rule for issue in restoration.issues} == {"REST-6"}
    assert all("does not expose" in issue.message or "declared" in issue.message for issue in restoration.issues)
    others = {name: c.status for name, c in graded.categories.items() if name != "restoration"}
    assert set(others.values()) <= {"verified", "not_applicable"}, others
    assert graded.problems == []
