"""The run-dir layer's generation-audit (GA-2..GA-5, GA-9) checks (experiment/grading/run_dir/training_data.py,
`Validator.check_generation_audit`), each condition tried with inputs on each side (issue 28 item 7: the complete
mutation run of experiment/grading/), and its feasibility ids, which run FEAS-1..5, 7, 8's one implementation.

The validator runs over a run directory whose evidence/ holds a candidates file of 130 generated tasks (104
accepted, 13 rejected, 13 execution errors), built once for the module; RESULT, plan, spec and gate events are
given in memory. The expected problems are worked out from docs/contract-rules.md (`generation_audit.*`,
`feasibility.*`); GA-5's sample is computed here from its text: the accepted ids sorted by
sha256(json.dumps([seed, item_id])), the first min(accepted, min_sample_size or 100)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from records import build_gs1_run, copy_run, edit_result, found
from grading_contexts.run_dir import checks as _checks, found as _found

from experiment.grading.run_dir import RunFiles, Validator

DATASET, EVALUATION, AUDIT = "generated-tasks.jsonl", "evaluation-set.jsonl", "audit-0001.json"
ODD_DATASET = "generated-tasks-odd.jsonl"  # the same tasks and one of a disposition sorting before "accepted"
SEED = 7


def _disposition(index: int) -> str:
    return {0: "rejected", 1: "execution_error"}.get(index % 10, "accepted")


CANDIDATES = [{"item_id": f"gen-{i:03d}", "prompt": f"What is {i} + 1?", "answer": str(i + 1),
               "disposition": _disposition(i)} for i in range(130)]
ACCEPTED = [c["item_id"] for c in CANDIDATES if c["disposition"] == "accepted"]
COUNTS = {"generated": 130, "accepted": 104, "rejected": 13, "execution_errors": 13}


def _ga5_sample(ids, seed, size):
    return sorted(ids, key=lambda item: hashlib.sha256(json.dumps([seed, item]).encode()).hexdigest())[:size]


SAMPLE = _ga5_sample(ACCEPTED, SEED, 100)


def _first_in_seed_order() -> str:
    """An id that sorts before every accepted one in the seed order: the odd candidate would be sampled first."""
    first = hashlib.sha256(json.dumps([SEED, SAMPLE[0]]).encode()).hexdigest()
    return next(item for item in (f"odd-{k}" for k in range(100000))
                if hashlib.sha256(json.dumps([SEED, item]).encode()).hexdigest() < first)


ODD_ID = _first_in_seed_order()


def _jsonl(rows) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("rd4-audit")
    evidence = run_dir / "evidence"
    evidence.mkdir()
    odd = dict(CANDIDATES[0], item_id=ODD_ID, disposition="abandoned")
    for name, data in ((DATASET, _jsonl(CANDIDATES)), (ODD_DATASET, _jsonl(CANDIDATES + [odd])),
                       (EVALUATION, _jsonl([{"item_id": "t0", "prompt": "What is 1 + 1?"}])),
                       (AUDIT, b"{}")):
        (evidence / name).write_bytes(data)
    return run_dir


def _validator(run_dir: Path, result: dict, plan: dict, spec: dict, passed=()) -> Validator:
    events = [{"event": "gate", "gate": gate, "status": "passed"} for gate in passed]
    manifest = {"files": [{"name": name, "kind": "generated_tasks", "sha256": hashlib.sha256(
        (run_dir / "evidence" / name).read_bytes()).hexdigest()} for name in (DATASET, ODD_DATASET, EVALUATION, AUDIT)]}
    files = RunFiles(run_dir=run_dir, result=result, events=events, bad_event_lines=[], manifest=manifest,
                      plan=plan, spec=spec, setup_problems=[])
    return Validator(files)


# ------------------------------------------------------------------------------------------ GA

def _sample(item_id, **changes) -> dict:
    sample = {"item_id": item_id, "independent_answer": "1", "resolver_id": "solver-a",
              "method": "independent_resolve", "reasoning": "re-solved", "blind_to_label": True}
    sample.update(changes)
    return sample


def _record(**changes) -> dict:
    record = {"version": 1, "stage": "before_training", "dataset_file": DATASET, "evaluation_file": EVALUATION,
              "audit_file": AUDIT, "sample_seed": SEED, "counts": dict(COUNTS),
              "samples": [_sample(item) for item in SAMPLE], "label_error_count": 0, "overlap_count": 0}
    record.update(changes)
    return record


LIMITS = {"max_label_errors": 2, "max_eval_overlaps": 0}


def _audit(run_dir, record, applicable=True, passed=True, audit_spec=None) -> Validator:
    gate = {"name": "generation_audit", "applicable": applicable} if applicable is not None else None
    plan = {"gates": [gate] if gate else []}
    spec = {"generation_audit": dict(LIMITS) if audit_spec is None else audit_spec}
    result = {} if record is None else {"generation_audit": record}
    validator = _validator(run_dir, result, plan, spec, ("generation_audit",) if passed else ())
    validator.check_generation_audit()
    return validator


def test_a_consistent_audit_of_the_default_sample_size_has_no_problem(run_dir):
    # no min_sample_size: the sample is min(104 accepted, 100) = 100 ids
    assert _found(_audit(run_dir, _record())) == []
    # a stated min_sample_size is used instead: 50 of the 104
    record = _record(samples=[_sample(item) for item in _ga5_sample(ACCEPTED, SEED, 50)])
    assert _found(_audit(run_dir, record, audit_spec={**LIMITS, "min_sample_size": 50})) == []
    # fewer accepted tasks than the size: all 104 of them
    record = _record(samples=[_sample(item) for item in ACCEPTED])
    assert _found(_audit(run_dir, record, audit_spec={**LIMITS, "min_sample_size": 200})) == []


@pytest.mark.parametrize("record", [None, {}])
def test_a_passed_applicable_audit_gate_needs_its_record(run_dir, record):
    assert _checks(_audit(run_dir, record)) == ["generation_audit.missing"]
    assert _checks(_audit(run_dir, record, passed=False)) == []  # the gate has not passed (yet)
    assert _checks(_audit(run_dir, record, applicable=False)) == []  # not applicable: no record owed
    assert _checks(_audit(run_dir, record, applicable=None)) == []  # the plan has no such gate


@pytest.mark.parametrize("record", ["audit", [1], {"version": 0}, {"version": 2}, {"version": "1"}])
def test_a_record_that_is_not_version_1_is_one_shape_problem(run_dir, record):
    if isinstance(record, dict):
        record = _record(**record)
    found = _found(_audit(run_dir, record))
    assert found == [("generation_audit.shape", "generation_audit must be an object with version 1")]


@pytest.mark.parametrize("stage", ["after_training", "during_training", None])
def test_the_audit_ran_before_training(run_dir, stage):
    found = _found(_audit(run_dir, _record(stage=stage)))
    assert [check for check, _ in found] == ["generation_audit.shape"] and repr(stage) in found[0][1]


def test_the_three_files_are_retained_evidence(run_dir):
    record = _record(dataset_file="tasks.jsonl", evaluation_file=None, audit_file="audit-0002.json")
    found = _found(_audit(run_dir, record))
    assert [check for check, _ in found] == ["generation_audit.files"] * 3
    assert [message.split()[0] for _, message in found] == ["dataset_file", "evaluation_file", "audit_file"]


@pytest.mark.parametrize("generated", [129, 131])
def test_generated_is_accepted_plus_rejected_plus_execution_errors(run_dir, generated):
    found = _found(_audit(run_dir, _record(counts=dict(COUNTS, generated=generated))))
    assert found == [
        ("generation_audit.counts", "generated is not accepted + rejected + execution_errors"),
        ("generation_audit.counts", f"counts.generated is {generated} but {DATASET} has 130"),
    ]


def test_counts_are_the_candidates_files_above_and_below(run_dir):
    # 103 accepted (one fewer than the file) and 14 rejected (one more): they still add up to 130
    counts = dict(COUNTS, accepted=103, rejected=14)
    found = _found(_audit(run_dir, _record(counts=counts)))
    assert found == [
        ("generation_audit.counts", f"counts.accepted is 103 but {DATASET} has 104"),
        ("generation_audit.counts", f"counts.rejected is 14 but {DATASET} has 13"),
    ]


def test_a_dataset_reference_with_a_fragment_reads_the_named_file(run_dir):
    counts = dict(COUNTS, accepted=103, rejected=14)
    found = _found(_audit(run_dir, _record(dataset_file=f"{DATASET}#candidates", counts=counts)))
    assert [check for check, _ in found] == ["generation_audit.counts"] * 2
    assert all(f"{DATASET}#candidates has" in message for _, message in found)


def test_a_disposition_sorting_before_accepted_is_not_accepted(run_dir):
    # the odd candidate (disposition "abandoned") counts as generated only: 131 rows, 104 + 13 + 13 do not add
    # up, and the sample is still the accepted tasks' (the odd id, first in seed order, is not sampled)
    counts = dict(COUNTS, generated=131)
    found = _found(_audit(run_dir, _record(dataset_file=ODD_DATASET, counts=counts)))
    assert found == [("generation_audit.counts", "generated is not accepted + rejected + execution_errors")]


@pytest.mark.parametrize("dropped", [0, -1])
def test_a_sample_that_is_not_the_seed_order_prefix(run_dir, dropped):
    # dropping the id that sorts last (a prefix: sorts before the right sample) or first (sorts after it)
    ids = sorted(SAMPLE)
    del ids[dropped]
    found = _found(_audit(run_dir, _record(samples=[_sample(item) for item in ids])))
    assert [check for check, _ in found] == ["generation_audit.sample"] and "first 100 accepted" in found[0][1]


@pytest.mark.parametrize("size, flagged", [(100, False), (99, True), (101, True)])
def test_without_a_seed_the_sample_size_is_still_checked(run_dir, size, flagged):
    ids = (ACCEPTED + ["extra"])[:size]
    found = _found(_audit(run_dir, _record(sample_seed="7", samples=[_sample(item) for item in ids])))
    assert found[0] == ("generation_audit.shape", "sample_seed must be an integer")
    assert [check for check, _ in found[1:]] == (["generation_audit.sample"] if flagged else [])
    if flagged:
        assert found[1][1].startswith(f"{size} samples") and found[1][1].endswith("= 100")


@pytest.mark.parametrize("changes", [
    {"method": "automatic_check"}, {"method": "self_consistency"}, {"blind_to_label": False},
    {"blind_to_label": "true"}, {"resolver_id": ""}, {"resolver_id": None},
])
def test_each_sample_is_a_blind_independent_resolve_with_a_resolver(run_dir, changes):
    samples = [_sample(item) for item in SAMPLE]
    samples[3] = _sample(SAMPLE[3], **changes)
    found = _found(_audit(run_dir, _record(samples=samples)))
    assert [check for check, _ in found] == ["generation_audit.sample"] and repr(SAMPLE[3]) in found[0][1]


def test_bad_samples_are_one_problem_naming_the_first(run_dir):
    samples = [_sample(item, method="guess") if index in (3, 5) else _sample(item) for index, item in enumerate(SAMPLE)]
    found = _found(_audit(run_dir, _record(samples=samples)))
    assert [check for check, _ in found] == ["generation_audit.sample"] and repr(SAMPLE[3]) in found[0][1]


@pytest.mark.parametrize("key, limit_key", [("label_error_count", "max_label_errors"),
                                            ("overlap_count", "max_eval_overlaps")])
def test_counts_are_non_negative_integers_within_the_specs_limits(run_dir, key, limit_key):
    limit = LIMITS[limit_key]
    for value in (-1, -2, True, 1.0, None):
        found = _found(_audit(run_dir, _record(**{key: value})))
        assert found == [("generation_audit.counts", f"{key} must be a non-negative integer")], value
    for value in range(limit + 1):  # at and below the limit
        assert _found(_audit(run_dir, _record(**{key: value}))) == [], value
    found = _found(_audit(run_dir, _record(**{key: limit + 1})))
    assert [check for check, _ in found] == ["generation_audit.limits"] and f"{key} {limit + 1}" in found[0][1]
    # over the limit while the audit gate has not passed: nothing claims it was within
    assert _found(_audit(run_dir, _record(**{key: limit + 1}), passed=False)) == []


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
