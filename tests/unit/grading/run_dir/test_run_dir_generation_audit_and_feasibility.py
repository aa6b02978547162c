"""The run-dir layer's generation-audit ids (experiment/grading/run_dir/training_data.py,
`Validator.check_generation_audit`), which run GA-2..6, 8 and 9's one implementation (experiment.grading.generation_audit),
each condition tried with inputs on each side (issue 28 item 7: the complete mutation run of experiment/grading/), and
its feasibility ids, which run FEAS-1..5, 7, 8's one implementation.

The audit's run directory is the one an honest self-generated run leaves: the graded self-generated record
(tests/conftest.py `graded_record("paired")`: its candidates, the spec's held-out evaluation set, the audit's samples
re-solved by the spec's solver, its retained spec and plan) with its evidence/ written to disk and listed in the
manifest; each test changes RESULT, the spec or adds a candidates file in memory. GA-5's sample is computed here from
its text: the accepted ids sorted by sha256(json.dumps([seed, item_id])), the first min(accepted, min_sample_size or
100)."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import pytest
from records import build_gs1_run, copy_run, edit_result, found
from grading_contexts.run_dir import checks as _checks, found as _found

from experiment.grading.run_dir import RunFiles, Validator

SEED = 7  # the graded record's sample_seed


def _ga5_sample(ids, seed, size):
    return sorted(ids, key=lambda item: hashlib.sha256(json.dumps([seed, item]).encode()).hexdigest())[:size]


def _jsonl(rows) -> bytes:
    return "".join(json.dumps(row, sort_keys=True) + "\n" for row in rows).encode()


class Audit:
    """The honest self-generated run directory (its evidence/ on disk) and, per test, the validator over a copy of its
    RESULT, events and retained spec with the edits the test makes."""

    def __init__(self, run_dir: Path, result: dict, events: list[dict]):
        self.run_dir, self.result, self.events = run_dir, result, events
        self.entries = [{key: entry[key] for key in ("name", "kind", "sha256")} for entry in result["evidence"]["files"]]
        self.record = result["generation_audit"]
        self.tasks = [json.loads(line) for line in self.text(self.record["dataset_file"]).splitlines()]
        self.accepted = [t["item_id"] for t in self.tasks if t["disposition"] == "accepted"]
        self.labels = {t["item_id"]: t["answer"] for t in self.tasks}

    def text(self, name: str) -> str:
        return (self.run_dir / "evidence" / name).read_text()

    def add(self, name: str, data: bytes) -> str:
        """A further candidates file, retained (in evidence/ and, for the runs that name it, the manifest)."""
        (self.run_dir / "evidence" / name).write_bytes(data)
        return name

    def run(self, record=None, spec_edit=None, passed=True, extra=()) -> Validator:
        result = copy.deepcopy(self.result)
        if record is None:
            result.pop("generation_audit")
        else:
            result["generation_audit"] = record
        spec = json.loads(self.text("spec.json"))
        if spec_edit:
            spec_edit(spec)
        events = [e for e in self.events if passed or e.get("gate") != "generation_audit"]
        manifest = {"files": self.entries + [{"name": name, "kind": "generated_tasks", "sha256": hashlib.sha256(
            (self.run_dir / "evidence" / name).read_bytes()).hexdigest()} for name in extra]}
        files = RunFiles(run_dir=self.run_dir, result=result, events=events, bad_event_lines=[], manifest=manifest,
                         plan=json.loads(self.text("execution-plan.json")), spec=spec, setup_problems=[])
        validator = Validator(files)
        validator.check_generation_audit()
        return validator

    def honest(self, **changes) -> dict:
        record = copy.deepcopy(self.record)
        record.update(changes)
        return record

    def resolved(self, item_id: str, wrong: bool = False) -> dict:
        """The honest record's sample of `item_id`, its re-solve agreeing with the label or (`wrong`) not."""
        sample = dict(next(s for s in self.record["samples"] if s["item_id"] == item_id))
        if wrong:
            sample["independent_answer"] = str(int(self.labels[item_id]) + 1)
        return sample


@pytest.fixture(scope="module")
def audit(graded_record, tmp_path_factory) -> Audit:
    result, events = graded_record("paired")
    run_dir = tmp_path_factory.mktemp("selfgen-audit")
    (run_dir / "evidence").mkdir()
    for entry in result["evidence"]["files"]:
        assert entry["encoding"] == "utf-8"
        (run_dir / "evidence" / entry["name"]).write_text(entry["content"])
    return Audit(run_dir, result, events)


def _set_audit_spec(**values):
    return lambda spec: spec["generation_audit"].update(values)


# ------------------------------------------------------------------------------------------ GA

def test_an_honest_self_generated_audit_has_no_problem(audit):
    # the spec's min_sample_size 100 is more than the 32 accepted tasks: every accepted task is sampled
    assert sorted(s["item_id"] for s in audit.record["samples"]) == sorted(audit.accepted)
    assert _found(audit.run(audit.honest())) == []
    # a smaller min_sample_size: the first 10 in seed order
    samples = [audit.resolved(item) for item in _ga5_sample(audit.accepted, SEED, 10)]
    assert _found(audit.run(audit.honest(samples=samples), _set_audit_spec(min_sample_size=10))) == []


@pytest.mark.parametrize("record", [None, {}])
def test_a_passed_applicable_audit_gate_needs_its_record(audit, record):
    assert _found(audit.run(record)) == [("generation_audit.missing", "RESULT has no generation_audit record")]
    assert _checks(audit.run(record, passed=False)) == []  # the gate has not passed (yet)

    def opt_out(spec):  # the audit does not apply (GA-1): no record owed
        spec["experiment_features"]["generated_training_data"] = False
        spec["generation_audit"]["required"] = False
    assert _checks(audit.run(record, opt_out)) == []


@pytest.mark.parametrize("record", ["audit", [1]])
def test_a_record_that_is_no_object_is_one_shape_problem(audit, record):
    assert _found(audit.run(record)) == [("generation_audit.shape", f"generation_audit {record!r} is not an object")]


@pytest.mark.parametrize("version", [0, 2, "1", True])
def test_a_record_that_is_not_version_1_is_one_shape_problem(audit, version):
    found = _found(audit.run(audit.honest(version=version)))
    assert [check for check, _ in found] == ["generation_audit.shape"]
    assert found[0][1].startswith("generation_audit.version:")


@pytest.mark.parametrize("stage", ["after_training", "during_training", None])
def test_the_audit_ran_before_training(audit, stage):
    found = _found(audit.run(audit.honest(stage=stage)))
    assert [check for check, _ in found] == ["generation_audit.shape"] and "generation_audit.stage" in found[0][1]


def test_the_three_files_are_retained_evidence(audit):
    record = audit.honest(dataset_file="tasks.jsonl", evaluation_file="evaluation.jsonl", audit_file="audit-0002.json")
    found = _found(audit.run(record))
    assert [check for check, _ in found] == ["generation_audit.files"] * 3
    assert [message.split(":")[0] for _, message in found] == ["dataset_file", "evaluation_file", "audit_file"]


def test_the_evaluation_file_is_the_specs_held_out_set(audit):
    rows = [json.loads(line) for line in audit.text(audit.record["evaluation_file"]).splitlines()]
    name = audit.add("evaluation-set-short.jsonl", _jsonl(rows[:-1]))  # one held-out item left out
    found = _found(audit.run(audit.honest(evaluation_file=name), extra=[name]))
    assert [check for check, _ in found] == ["generation_audit.files"] and "held-out set" in found[0][1]


def _counts(audit, **changes):
    return dict(audit.record["counts"], **changes)


@pytest.mark.parametrize("change", [-1, 1])
def test_generated_is_accepted_plus_rejected_plus_execution_errors(audit, change):
    counts = _counts(audit, generated=audit.record["counts"]["generated"] + change)
    found = _found(audit.run(audit.honest(counts=counts)))
    assert found[0] == ("generation_audit.counts", "counts: generated is not accepted + rejected + execution_errors")
    assert [check for check, _ in found] == ["generation_audit.counts"] * 2 and "are not the candidates'" in found[1][1]


def test_counts_are_the_candidates_files_above_and_below(audit):
    # one accepted fewer than the file and one rejected more: they still add up
    honest = audit.record["counts"]
    counts = _counts(audit, accepted=honest["accepted"] - 1, rejected=honest["rejected"] + 1)
    found = _found(audit.run(audit.honest(counts=counts)))
    assert found == [("generation_audit.counts", f"counts {str(counts)[:57]}... are not the candidates' {honest}")]


def test_a_dataset_reference_with_a_fragment_reads_the_named_file(audit):
    honest = audit.record["counts"]
    counts = _counts(audit, accepted=honest["accepted"] - 1, rejected=honest["rejected"] + 1)
    found = _found(audit.run(audit.honest(dataset_file=f"{audit.record['dataset_file']}#candidates", counts=counts)))
    assert [check for check, _ in found] == ["generation_audit.counts"] and f"candidates' {honest}" in found[0][1]


def _first_in_seed_order(audit) -> str:
    """An id that sorts before every accepted one in the seed order: the odd candidate would be sampled first."""
    first = hashlib.sha256(json.dumps([SEED, audit.record["samples"][0]["item_id"]]).encode()).hexdigest()
    return next(item for item in (f"odd-{k}" for k in range(100000))
                if hashlib.sha256(json.dumps([SEED, item]).encode()).hexdigest() < first)


def test_a_disposition_sorting_before_accepted_is_not_accepted(audit):
    # the odd candidate (disposition "abandoned") counts as generated only: the counts do not add up, and the sample
    # is still the accepted tasks' (the odd id, first in seed order, is not sampled)
    odd = dict(audit.tasks[0], item_id=_first_in_seed_order(audit), disposition="abandoned")
    name = audit.add("generated-tasks-odd.jsonl", _jsonl(audit.tasks + [odd]))
    counts = _counts(audit, generated=audit.record["counts"]["generated"] + 1)
    found = _found(audit.run(audit.honest(dataset_file=name, counts=counts), extra=[name]))
    assert found == [("generation_audit.counts", "counts: generated is not accepted + rejected + execution_errors")]


@pytest.mark.parametrize("dropped", [0, -1])
def test_a_sample_that_is_not_the_seed_order_prefix(audit, dropped):
    # dropping the id sampled last (a prefix of the right sample) or first
    samples = list(audit.record["samples"])
    del samples[dropped]
    found = _found(audit.run(audit.honest(samples=samples)))
    assert [check for check, _ in found] == ["generation_audit.sample"] and "sha256(json.dumps([seed, item_id]))" in found[0][1]


@pytest.mark.parametrize("seed", ["7", 7.0, True])
def test_a_seed_that_is_no_integer_is_a_shape_problem(audit, seed):
    found = _found(audit.run(audit.honest(sample_seed=seed)))
    assert ("generation_audit.shape", "generation_audit.sample_seed must be an integer") in found


@pytest.mark.parametrize("changes", [
    {"method": "automatic_check"}, {"method": "self_consistency"}, {"blind_to_label": False},
    {"blind_to_label": "true"}, {"resolver_id": ""}, {"resolver_id": None},
])
def test_each_sample_is_a_blind_independent_resolve_with_a_resolver(audit, changes):
    samples = copy.deepcopy(audit.record["samples"])
    samples[3].update(changes)
    found = [f for f in _found(audit.run(audit.honest(samples=samples))) if f[0] == "generation_audit.resolver"]
    assert found and repr(samples[3]["item_id"]) in found[0][1]


def test_bad_samples_are_one_problem_naming_the_first(audit):
    samples = copy.deepcopy(audit.record["samples"])
    for index in (3, 5):
        samples[index]["method"] = "guess"
    found = _found(audit.run(audit.honest(samples=samples)))
    assert [check for check, _ in found] == ["generation_audit.resolver"] and repr(samples[3]["item_id"]) in found[0][1]


def test_the_resolver_is_independent_of_generator_filter_and_base(audit):
    base = audit.record["compared_identities"]["trained_base_model"]["name"]
    found = _found(audit.run(audit.honest(resolver={"name": base})))
    assert "generation_audit.resolver" in [check for check, _ in found]
    assert any(f"the re-solver {base} is the trained base model" in message for _, message in found)


@pytest.mark.parametrize("key", ["label_error_count", "overlap_count"])
@pytest.mark.parametrize("value", [-1, -2, True, 1.0, None])
def test_label_errors_and_overlaps_are_non_negative_integers(audit, key, value):
    found = _found(audit.run(audit.honest(**{key: value})))
    assert ("generation_audit.shape", f"generation_audit.{key} must be a non-negative integer") in found


def test_label_errors_recompute_and_are_within_the_specs_limit_once_the_gate_passed(audit):
    limit = 2
    spec = _set_audit_spec(max_label_errors=limit)
    for errors in range(limit + 1):  # at and below the limit
        samples = [audit.resolved(s["item_id"], wrong=i < errors) for i, s in enumerate(audit.record["samples"])]
        assert _found(audit.run(audit.honest(samples=samples, label_error_count=errors), spec)) == [], errors
    samples = [audit.resolved(s["item_id"], wrong=i <= limit) for i, s in enumerate(audit.record["samples"])]
    over = audit.honest(samples=samples, label_error_count=limit + 1)
    found = _found(audit.run(over, spec))
    assert [check for check, _ in found] == ["generation_audit.limits"]
    assert f"label_error_count {limit + 1} exceeds max_label_errors {limit}" in found[0][1]
    # over the limit while the audit gate has not passed: nothing claims it was within
    assert _found(audit.run(over, spec, passed=False)) == []
    # a count the samples do not give
    found = _found(audit.run(audit.honest(samples=samples, label_error_count=0), spec))
    assert found == [("generation_audit.labels", f"label_error_count 0 but the samples give {limit + 1}")]


def test_overlaps_recompute_and_are_within_the_specs_limit_once_the_gate_passed(audit):
    # an accepted candidate that asks a held-out question: one overlap, over the spec's max_eval_overlaps 0
    question = json.loads(audit.text(audit.record["evaluation_file"]).splitlines()[0])["prompt"]
    accepted = next(i for i, t in enumerate(audit.tasks) if t["disposition"] == "accepted")
    tasks = copy.deepcopy(audit.tasks)
    tasks[accepted]["prompt"] = question
    name = audit.add("generated-tasks-overlap.jsonl", _jsonl(tasks))
    found = _found(audit.run(audit.honest(dataset_file=name, overlap_count=1), extra=[name]))
    assert [check for check, _ in found] == ["generation_audit.limits"]
    assert "overlap_count 1 exceeds max_eval_overlaps 0" in found[0][1]
    assert _found(audit.run(audit.honest(dataset_file=name, overlap_count=1), passed=False, extra=[name])) == []
    found = _found(audit.run(audit.honest(dataset_file=name), extra=[name]))
    assert found == [("generation_audit.labels", "overlap_count 0 but the evaluation set gives 1")]


# ------------------------------------------------------------------------------------------ FEAS
# feasibility.* run FEAS-1..5, 7, 8's one implementation (experiment.grading.feasibility; its cases are
# tests/unit/grading/feasibility/'s): on a consistent GS1 run directory, each id reports that rule's finding.

ENDPOINT = "gsm8k_test_exact_match_accuracy_final_checkpoint"


@pytest.fixture(scope="module")
def gs1_template(tmp_path_factory):
    return build_gs1_run(tmp_path_factory.mktemp("feasibility-run-dir") / "runs")


def _set(path: str, value):
    def edit(result):
        *parents, leaf = path.split(".")
        target = result["feasibility"]
        for key in parents:
            target = target[key]
        if value is None:
            target.pop(leaf)
        else:
            target[leaf] = value
    return edit


@pytest.mark.parametrize("path, value, check, message", [
    ("primary_endpoint", "accuracy", "feasibility.primary_endpoint",
     f"primary_endpoint 'accuracy' is not the spec's {ENDPOINT!r}"),
    ("measurements.training.seconds", -0.5, "feasibility.phases",
     "measurements.training needs measured seconds and positive units"),
    ("recovery.seconds", 0, "feasibility.recovery", "recovery.seconds is not a positive reserve"),
    ("config.steps", None, "feasibility.config", "Re-projection required: steps changed or was not recorded"),
    ("source", "", "feasibility.source", "the pilot evidence source is not recorded"),
    ("generation", {"attempted": 200}, "feasibility.generation",
     "generation lacks accepted, target_accepted, filter_samples_per_candidate"),
], ids=["endpoint", "seconds", "recovery", "config", "source", "generation"])
def test_each_feasibility_id_reports_its_contract_rules_finding(gs1_template, tmp_path, path, value, check, message):
    run = copy_run(gs1_template, tmp_path)
    assert found(run, "feasibility.") == []
    edit_result(run, _set(path, value))
    assert (check, message) in found(run, "feasibility.")


def test_a_passed_pilot_without_its_record_is_feasibility_missing(gs1_template, tmp_path):
    run = copy_run(gs1_template, tmp_path)
    edit_result(run, lambda result: result.pop("feasibility"))
    assert found(run, "feasibility.") == [("feasibility.missing", "RESULT has no measured feasibility record")]
