"""Leaves the every-leaf scan found ungraded (issue 28 item 6), each shown first passing a grader without the
check that now grades it (the hole), then leaving green on the real grader:

- REST-6: the arm's retained restoration response, field by field (the load, the get_info after creation with
  the adapter hash, the initialization checkpoint's weights info);
- REST-10: the create-save-restore check's required fields and update settings, and its `checkpoint_uri`
  unverified where the initialization names no checkpoint;
- GA-11: an earlier audit round held to the record's audit checks (GA-3, GA-5, GA-8), its file field by field;
- FEAS-7 / FEAS-10: the generation settings and the pilot's size and source against the spec.

Records: `graded_record("paired")` (tests/conftest.py), made run-shaped where the rule reads the run's files
(the restoration files as experiment.rl.restoration.restore_member writes them; two audit rounds built with
experiment.selfgen.generation_audit as audit_with_repair builds them)."""

from __future__ import annotations

import copy
import json

import pytest

import leaves as L
from experiment.contract.spec import load_spec
from experiment.grading import feasibility, generation_audit, grade_record, restoration
from experiment.contract.generation import generation_settings
from experiment.stats.feasibility import pilot_size
from suite import SELFGEN_SPEC
from records import (
    files_by_name as _files,
    record_leaf as _leaf,
    put_record_file as _put,
    retained_spec_of as _spec,
    with_two_audit_rounds as _two_audit_rounds,
)

LOGPROBS = [[-1.5, -0.25, -3.0], [-0.5, -2.0]]


def _run_shaped_restoration(record) -> dict:
    """Each arm's restoration file as the run writes it (load, get_info after creation, the initialization
    checkpoint's weights info, the initial outputs), its initial output hashed from those outputs."""
    record = copy.deepcopy(record)
    arms = record["initialization_provenance"]["arms"]
    base = next(iter(arms.values()))["initialization"]["base_checkpoint"]
    first = next(iter(arms.values()))["optimizer_checks"][0]["requested"]

    def optimizer(requested: dict) -> dict:
        return {"type": requested["family"], **{k: v for k, v in requested.items()
                                                if k not in ("family", "seed", "lora_rank")}, "optimizer_step": 0}

    for entry in arms.values():
        init, restore, requested = entry["initialization"], entry["restores"][0], entry["optimizer_checks"][0]["requested"]
        init["init_seed"] = requested.get("seed")  # the run says which seed the service took (REST-2)
        _put(record, init["evidence_ref"], "metrics", json.dumps({
            "loaded_from": init["checkpoint_uri"], "load_method": restore["method"], "loaded_at": restore["at"],
            "load_response": None,
            "get_info_after_creation": {
                "type": "get_info", "model_id": restore["client"], "model_name": base,
                "model_data": {"arch": "qwen3", "model_name": base}, "is_lora": True,
                "lora_rank": requested.get("lora_rank"),
                "optimizer_config": {**optimizer(requested), "adapter_sha256": init["adapter_sha256"]}},
            "checkpoint_weights_info": {"base_model": base, "is_lora": True, "lora_rank": first.get("lora_rank"),
                                        "optimizer_config": optimizer(first)},
            "initial_output_logprobs": LOGPROBS}, sort_keys=True))
        entry["initial_output"]["output_sha256"] = restoration.output_sha256_of(LOGPROBS)
    return record


@pytest.fixture(scope="module")
def paired(graded_record):
    return graded_record("paired")[0]


def _hole_then_caught(monkeypatch, module, check, record, tampered) -> set:
    """The tampered record grades as the untouched one without `check`; with it, something new is found
    (returned)."""
    baseline = L.findings(record)
    assert not baseline, baseline  # the untouched record is green
    with monkeypatch.context() as weakened:
        weakened.setattr(module, "CHECKS", [c for c in module.CHECKS if c is not check])
        assert L.caught(tampered, L.findings(record)) == (False, None)
    new = L.findings(tampered) - baseline
    assert new
    return new


RESTORATION_LEAVES = [
    ("get_info_after_creation", "optimizer_config", "optimizer_step"),  # a client that had stepped already
    ("get_info_after_creation", "optimizer_config", "adapter_sha256"),  # another adapter than the arm's
    ("get_info_after_creation", "model_name"),
    ("get_info_after_creation", "model_data", "arch"),
    ("checkpoint_weights_info", "base_model"),
    ("checkpoint_weights_info", "optimizer_config", "beta1"),
    ("loaded_at",),
]


@pytest.mark.parametrize("path", RESTORATION_LEAVES, ids=[".".join(p) for p in RESTORATION_LEAVES])
@pytest.mark.parametrize("kind", ["change", "remove"])
def test_the_restoration_response_is_compared_field_by_field(paired, monkeypatch, path, kind):
    record = _run_shaped_restoration(paired)
    leaf = _leaf(record, "restoration-rl_gsm8k.json", path)
    new = _hole_then_caught(monkeypatch, restoration, restoration.REST_6_response, record, L.perturb(record, leaf, kind))
    assert any(rule == "REST-6" for _, rule, *_ in new), new


UPDATE_CHECK_TAMPERS = {
    "weight decay the spec does not ask for": lambda check: check["update"].update(weight_decay=0.1),
    "update without its learning rate": lambda check: check["update"].pop("learning_rate"),
    "update without a requested setting": lambda check: check["update"].pop("beta2"),
    "no batch_sha256": lambda check: check.pop("batch_sha256"),
    "no output_sha256": lambda check: check.pop("output_sha256"),
    "no passed": lambda check: check.pop("passed"),
}


@pytest.mark.parametrize("name", list(UPDATE_CHECK_TAMPERS))
def test_the_update_check_holds_its_fields_and_the_requested_update(paired, monkeypatch, name):
    record = copy.deepcopy(paired)
    checks = json.loads(_files(record)[restoration.REST10_EVIDENCE]["content"])
    UPDATE_CHECK_TAMPERS[name](next(iter(checks.values())))
    L.rewrite_evidence(record, restoration.REST10_EVIDENCE, json.dumps(checks))
    new = _hole_then_caught(monkeypatch, restoration, restoration.REST_10_check, paired, record)
    assert any(rule == "REST-10" for _, rule, *_ in new), new


def test_an_update_check_checkpoint_is_unverified_without_an_initialization_checkpoint(paired, monkeypatch):
    """An arm proven by its adapter hash alone (no checkpoint_uri, no restore): nothing to compare the check's
    checkpoint_uri with, so a changed one went unnoticed (the every-leaf xfail of the paired record)."""
    record = copy.deepcopy(paired)
    for entry in record["initialization_provenance"]["arms"].values():
        entry["initialization"].pop("checkpoint_uri")
        entry.pop("restores")
        entry.update(restore_count=0, optimizer_checks=entry["optimizer_checks"][:1])
    with monkeypatch.context() as weakened:
        weakened.setattr(restoration, "CHECKS", [c for c in restoration.CHECKS if c is not restoration.REST_10_check])
        assert not L.findings(record)  # the hole: graded green
    issues = [i for i in grade_record(record).categories["restoration"].issues if i.rule == "REST-10"]
    assert [i.status for i in issues] == ["unverified"] and "names no checkpoint" in issues[0].message


def test_an_earlier_audit_round_is_held_to_the_last_rounds_checks(paired, monkeypatch):
    record = _two_audit_rounds(paired)
    assert not L.findings(record)
    tampers = {  # round 1's files: a removed prompt (GA-3), not the round's seed (GA-5), a label error hidden (GA-8)
        "prompt removed": L.perturb(record, _leaf(record, "generated-tasks-r1.jsonl", (0, "prompt")), "remove"),
        "another seed": L.perturb(record, _leaf(record, "generation-audit-r1.json", ("sample_seed",)), "change"),
        "label error hidden": L.perturb(record, _leaf(record, "generation-audit-r1.json", ("label_error_count",)),
                                        "change", 0),
        "agreement flipped": L.perturb(record, _leaf(record, "generation-audit-r1.json", ("samples", 0, "agrees")),
                                       "change"),
    }
    for name, tampered in tampers.items():
        new = _hole_then_caught(monkeypatch, generation_audit, generation_audit.GA_11_files, record, tampered)
        assert any(rule == "GA-11" for _, rule, *_ in new), (name, new)


def test_the_generation_settings_are_the_specs(paired, monkeypatch):
    leaf = _leaf(paired, None, ("feasibility", "generation", "filter_samples_per_candidate"))
    new = _hole_then_caught(monkeypatch, feasibility, feasibility.FEAS_7, paired, L.perturb(paired, leaf, "change"))
    assert any(rule == "FEAS-7" for _, rule, *_ in new), new


@pytest.mark.parametrize("key", ["steps_per_arm", "eval_items", "size_source"])
def test_the_pilot_size_and_its_source_are_the_specs(paired, monkeypatch, key):
    record = copy.deepcopy(paired)
    size = pilot_size(_spec(record))
    record["feasibility"]["pilot"] = {"steps_per_arm": size.steps_per_arm, "eval_items": size.eval_items,
                                      "size_source": size.source}
    leaf = _leaf(record, None, ("feasibility", "pilot", key))
    new = _hole_then_caught(monkeypatch, feasibility, feasibility.FEAS_10, record, L.perturb(record, leaf, "change"))
    assert any(rule == "FEAS-10" for _, rule, *_ in new), new


def test_a_candidates_disposition_is_what_the_filter_count_gives(paired, monkeypatch):
    """GA-4: a candidate the filter kept (its count inside the spec's keep band) must not be recorded as rejected by
    the filter, nor an accepted one outside the band (the candidates file re-hashed with every mention)."""
    record = copy.deepcopy(paired)
    name = record["generation_audit"]["dataset_file"]
    settings = generation_settings(load_spec(SELFGEN_SPEC))
    (low, high), samples = settings.keep_band, settings.filter_samples
    tasks = [json.loads(line) for line in _files(record)[name]["content"].splitlines()]
    for task in tasks:  # the filter's counts, as the run keeps them: accepted inside the band, filtered out above it
        task["base_solved"] = low if task["disposition"] == "accepted" else high + 1
        if task["disposition"] == "rejected":
            task["error"] = f"filter 5: the base model solved it in {high + 1} of {samples} samples (kept: {low}-{high})"
    L.rewrite_evidence(record, name, "".join(json.dumps(t, sort_keys=True) + "\n" for t in tasks))
    filtered = samples * len(tasks)  # every candidate counted by the filter's samples (FEAS-7)
    record["feasibility"]["measurements"]["filter"].update(units=filtered, planned_units=filtered, samples=filtered)
    accepted = next(leaf for leaf in L.leaves(record) if leaf.file == name and leaf.path[1:] == ("base_solved",)
                    and leaf.value == low)
    new = _hole_then_caught(monkeypatch, generation_audit, generation_audit.GA_4_filter, record,
                            L.perturb(record, accepted, "change", high + 1))
    assert any(rule == "GA-4" for _, rule, *_ in new), new
