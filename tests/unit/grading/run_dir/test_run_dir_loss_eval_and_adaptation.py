"""The run-dir layer's loss_eval (LOSS-1..4, the contract's one implementation) and adaptation (ADAPT-1) checks
(experiment/grading/run_dir/evaluation.py and training_data.py, `Validator.check_loss_eval` and `check_adaptation`),
each condition tried with inputs on each side (issue 28 item 7: the complete mutation run of experiment/grading/).

Each test builds the validator over an in-memory run (RESULT, plan, spec, events) and runs the one check: the
expected problems are worked out from docs/contract-rules.md (`loss_eval.*`, `adaptation.*`): loss_eval.values
reports LOSS-2's findings as its one implementation gives them. ADAPT-1: adaptation_batch_hash = sha256(json.dumps(ids)); a pair whose arms
consumed different batches limits the result (confidence weak, or no definitive verdict and no strong confidence): the
contract's ADAPT-1, its one implementation (experiment.grading.decision)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from grading_contexts.run_dir import checks as _checks, found as _found  # the problem lists, one home

from experiment.grading.common import GradeContext, applied
from experiment.grading.evaluator import LOSS_2
from experiment.grading.evidence import EvidenceAccess
from experiment.grading.run_dir import RunFiles, Validator

A, B = "baseline", "treatment"


def _validator(run_dir: Path, result: dict, plan: dict | None = None, spec: dict | None = None,
               passed: tuple[str, ...] = ()) -> Validator:
    events = [{"event": "gate", "gate": gate, "status": "passed"} for gate in passed]
    files = RunFiles(run_dir=run_dir, result=result, events=events, bad_event_lines=[], manifest={"files": []},
                      plan=plan, spec=spec, setup_problems=[])
    return Validator(files)



# ------------------------------------------------------------------------------------------ LOSS-2

NLL_SUM, N_TOKENS, N_EXAMPLES = 250.0, 100, 10
TOKEN_MEAN = NLL_SUM / N_TOKENS  # 2.5: not a whole number, so nll_sum // n_tokens (2) is not it
EXAMPLE_MEAN = 2.7  # a per-example mean differs from the per-token one


def _entry(aggregation: str = "token_mean", **changes) -> dict:
    """One arm's loss_eval entry, consistent: value is the aggregation's mean."""
    entry = {
        "aggregation": aggregation,
        "value": TOKEN_MEAN if aggregation == "token_mean" else EXAMPLE_MEAN,
        "token_mean": TOKEN_MEAN,
        "example_mean": EXAMPLE_MEAN,
        "nll_sum": NLL_SUM,
        "n_tokens": N_TOKENS,
        "n_examples": N_EXAMPLES,
        "n_empty": 0,
    }
    entry.update(changes)
    return entry


def _loss(tmp_path, record, plan_aggregation: str | None = None) -> Validator:
    plan_eval = {"loss_eval": True}
    if plan_aggregation is not None:
        plan_eval["aggregation"] = plan_aggregation
    validator = _validator(tmp_path, {"loss_eval": record}, plan={"eval": plan_eval}, passed=("evaluation",))
    validator.check_loss_eval()
    return validator


def _record(aggregation: str = "token_mean", **arms) -> dict:
    return {"aggregation": aggregation, "arms": arms or {A: _entry(aggregation), B: _entry(aggregation)}}


@pytest.mark.parametrize("aggregation", ["token_mean", "example_mean"])
@pytest.mark.parametrize("spec_states_it", [True, False])
def test_a_consistent_loss_eval_of_either_aggregation_has_no_problem(tmp_path, aggregation, spec_states_it):
    # token_mean: value = token_mean = nll_sum / n_tokens = 2.5; example_mean: value = example_mean = 2.7,
    # while its token_mean field is still 2.5 (the two means of the same examples differ)
    validator = _loss(tmp_path, _record(aggregation), aggregation if spec_states_it else None)
    assert _found(validator) == []


def test_one_consistent_arm_has_no_problem(tmp_path):
    assert _found(_loss(tmp_path, _record(**{A: _entry()}))) == []


BROKEN = {
    "an aggregation neither token_mean nor example_mean": _record("sum"),
    "an arm of another aggregation": _record(**{A: _entry(), B: _entry("example_mean")}),
    "an arm without a value": _record(**{A: _entry(), B: {k: v for k, v in _entry().items() if k != "value"}}),
    "no counted token": _record(**{A: _entry(), B: _entry(n_tokens=0)}),
    "a token_mean value that is not nll_sum / n_tokens": _record(**{A: _entry(), B: _entry(value=2.0)}),
    "an example_mean value that is not its example_mean": _record(
        "example_mean", **{A: _entry("example_mean"), B: _entry("example_mean", value=2.5)}),
    "arms on different tokens": _record(**{A: _entry(), B: _entry(n_tokens=80, nll_sum=200.0, value=2.5)}),
    "an arm that is no object": _record(**{A: "lost", B: _entry()}),
}


@pytest.mark.parametrize("name", BROKEN)
def test_loss_eval_values_reports_the_contract_rules_findings(tmp_path, name):
    """LOSS-2 has one implementation (experiment.grading.evaluator.LOSS_2, experiment.grading.loss.record_problems;
    its cases are tests/unit/grading/evaluator/test_held_out_loss_rederived.py's): the run-dir layer reports each of
    its findings, on the run directory's RESULT, as loss_eval.values."""
    record = BROKEN[name]
    expected = [issue.message for issue in applied(LOSS_2, GradeContext(result={"loss_eval": record},
                                                                         evidence=EvidenceAccess({})))]
    assert expected  # every case breaks LOSS-2
    assert _found(_loss(tmp_path, record)) == [("loss_eval.values", message) for message in expected]


# ------------------------------------------------------------------------------------------ ADAPT-1

IDS = [["b0", "b1"], ["b2", "b3"]]


def _hash(ids) -> str:
    return hashlib.sha256(json.dumps(ids).encode()).hexdigest()


def _manifest(arm, ids=IDS, pair="p", **changes) -> dict:
    manifest = {"arm": arm, "pair": pair, "warmup_batches": 2, "adaptation_batch_ids": ids,
                "adaptation_batch_hash": _hash(ids)}
    manifest.update(changes)
    return manifest


def _adapt(tmp_path, manifests=None, features=None, passed=("arm_training",), **result) -> Validator:
    spec = {} if features is None else {"experiment_features": features}
    record = {"verdict": "supported", "confidence": "strong", **result}
    if manifests is not None:
        record["adaptation_manifests"] = manifests
    validator = _validator(tmp_path, record, plan={}, spec=spec, passed=passed)
    validator.check_adaptation()
    return validator


def test_warmup_adaptation_without_manifests_after_arm_training_passed(tmp_path):
    assert _checks(_adapt(tmp_path, features={"warmup_adaptation": True})) == ["adaptation.missing"]
    assert _checks(_adapt(tmp_path, features={"warmup_adaptation": True}, passed=())) == []  # not trained yet


@pytest.mark.parametrize("features", [None, {}, {"warmup_adaptation": False}, {"warmup_adaptation": "true"},
                                      ["warmup_adaptation"]])
def test_no_manifests_are_owed_unless_warmup_adaptation_is_true(tmp_path, features):
    assert _checks(_adapt(tmp_path, features=features)) == []


def test_consistent_manifests_of_a_pair_on_the_same_batches(tmp_path):
    assert _checks(_adapt(tmp_path, [_manifest(A), _manifest(B)], {"warmup_adaptation": True})) == []
    assert _checks(_adapt(tmp_path, [_manifest(A)])) == []


def test_a_manifest_that_is_not_an_object_does_not_stop_the_next_being_checked(tmp_path):
    found = _found(_adapt(tmp_path, ["manifest", _manifest(B, adaptation_batch_hash="0" * 64)]))
    assert [check for check, _ in found] == ["adaptation.shape", "adaptation.hash"]
    assert found[0][1] == "adaptation_manifests[0] is not an object" and found[1][1].startswith(f"arm {B}:")


def test_ids_that_are_not_a_list_do_not_stop_the_next_manifest_being_checked(tmp_path):
    found = _found(_adapt(tmp_path, [_manifest(A, ids="b0,b1"), _manifest(B, adaptation_batch_hash="0" * 64)]))
    assert [check for check, _ in found] == ["adaptation.shape", "adaptation.hash"]
    assert found[0][1].startswith(f"arm {A}:") and found[1][1].startswith(f"arm {B}:")


@pytest.mark.parametrize("digest", ["0" * 64, "f" * 64, _hash(IDS).upper(), _hash(list(reversed(IDS)))])
def test_a_hash_that_is_not_sha256_of_json_dumps_of_the_ids(tmp_path, digest):
    found = _found(_adapt(tmp_path, [_manifest(A), _manifest(B, adaptation_batch_hash=digest)]))
    assert [check for check, _ in found] == ["adaptation.hash"] and found[0][1].startswith(f"arm {B}:")


def _mismatched(tmp_path, **result) -> list[str]:
    return _checks(_adapt(tmp_path, [_manifest(A), _manifest(B, ids=list(reversed(IDS)))], **result))


def test_a_pair_on_different_batches_must_limit_the_result(tmp_path):
    assert _mismatched(tmp_path, verdict="supported", confidence="strong") == ["adaptation.pair_mismatch"]
    assert _mismatched(tmp_path, verdict="refuted", confidence="strong") == ["adaptation.pair_mismatch"]
    # a confidence that is not "weak" (here one sorting after it) does not limit the result either
    assert _mismatched(tmp_path, verdict="supported", confidence="weaker") == ["adaptation.pair_mismatch"]
    # limited: weak confidence, or no definitive verdict
    assert _mismatched(tmp_path, verdict="supported", confidence="weak") == []
    assert _mismatched(tmp_path, verdict="inconclusive", confidence=None) == []
    assert _mismatched(tmp_path, verdict=None, confidence=None) == []
    # strong confidence is never limited, whatever the verdict (the contract's ADAPT-1: say so, confidence weak)
    assert _mismatched(tmp_path, verdict="inconclusive", confidence="strong") == ["adaptation.pair_mismatch"]
    assert _mismatched(tmp_path, verdict=None, confidence="strong") == ["adaptation.pair_mismatch"]


def test_the_pair_mismatch_names_the_pair_and_its_arms(tmp_path):
    found = _found(_adapt(tmp_path, [_manifest(A), _manifest(B, ids=list(reversed(IDS)))]))
    assert len(found) == 1 and found[0][1].startswith(f"pair p: arms {A}, {B} ")


def test_arms_of_different_pairs_may_consume_different_batches(tmp_path):
    manifests = [_manifest(A, pair="p1"), _manifest(B, pair="p2", ids=list(reversed(IDS)))]
    assert _checks(_adapt(tmp_path, manifests)) == []
