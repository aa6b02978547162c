"""The grader's general and evidence rules (experiment/grading/general.py; docs/contract-rules.md GEN-2..GEN-8,
EVID-1..EVID-10), each on a minimal grading context whose expected finding is worked out in the test from the
contract's text (issue 28 item 7: the complete mutation run of experiment/grading/). Each comparison is tried
with a wrong value on each side of the right one."""

from __future__ import annotations

import base64
import hashlib
import json
from types import SimpleNamespace

import pandas as pd  # EVID-8 reads tables/gates.parquet with it
import pytest
from grading_contexts.general import context as _ctx

from experiment.grading import general as rules


def _plan(vocabulary="direction_confidence", arms=(), runs=(), base_model="org/base"):
    """The parts of an execution plan the general rules read: the vocabulary, the arms (trained or not) and
    an LR grid's training runs."""
    arm_objects = [SimpleNamespace(name=name, steps=steps, trained=trained) for name, steps, trained in arms]
    return SimpleNamespace(vocabulary=vocabulary, arms=arm_objects,
                           trained_arms=[arm for arm in arm_objects if arm.trained],
                           training_runs=[SimpleNamespace(name=name, arm=arm, steps=steps) for name, arm, steps in runs],
                           base_model=base_model)


def _found(issues):
    return [(issue.rule, issue.status, issue.message) for issue in issues]


# ---------------------------------------------------------------- GEN-2


@pytest.mark.parametrize("status", ["running", "succeeded", "failed"])
def test_the_three_statuses_pass(status):
    assert rules.GEN_2(_ctx({"status": status})) == []


@pytest.mark.parametrize("status", ["done", None, "Succeeded"])
def test_any_other_status_is_invalid(status):
    assert _found(rules.GEN_2(_ctx({"status": status}))) == [
        ("GEN-2", "invalid", f"status {status!r} is not running, succeeded or failed")]


# ---------------------------------------------------------------- GEN-3 (direction + confidence)

DIRECTION = _plan("direction_confidence")
FINAL = {"status": "succeeded", "verdict": "supported", "confidence": "strong"}


def _gen3(**result):
    return [message for _, _, message in _found(rules.GEN_3(_ctx(result, DIRECTION)))]


@pytest.mark.parametrize("verdict", ["supported", "refuted"])
@pytest.mark.parametrize("confidence", ["strong", "weak"])
def test_a_final_direction_verdict_with_confidence_passes(verdict, confidence):
    assert _gen3(**{**FINAL, "verdict": verdict, "confidence": confidence}) == []


def test_gen3_applies_only_to_the_direction_vocabulary():
    wrong = {"status": "running", "verdict": "inconclusive"}
    assert rules.GEN_3(_ctx(wrong, _plan("three_way"))) == []
    assert rules.GEN_3(_ctx(wrong, None)) == []
    assert _gen3(**wrong)  # the same record under the direction vocabulary is wrong


def test_no_verdict_until_the_final_update():
    assert _gen3(status="running") == []
    assert _gen3(status="running", verdict="supported", confidence="weak") == [
        "a running result carries a verdict (left out until the final update)"]


@pytest.mark.parametrize("verdict", ["inconclusive", "tie", "Supported"])
def test_a_verdict_outside_supported_or_refuted_is_invalid(verdict):
    assert _gen3(**{**FINAL, "verdict": verdict}) == [f"verdict {verdict!r} is not supported or refuted"]


def test_a_failed_run_has_no_verdict_and_outcome_reason_incomplete_execution():
    assert _gen3(status="failed", outcome_reason="incomplete_execution") == []
    message = "a failed run has no verdict and outcome_reason incomplete_execution"
    assert _gen3(status="failed", outcome_reason="tie") == [message]
    assert _gen3(status="failed") == [message]
    assert _gen3(status="failed", verdict="refuted", confidence="weak", outcome_reason="incomplete_execution") == [
        message]


def test_a_succeeded_run_has_a_verdict():
    assert _gen3(status="succeeded") == ["a succeeded run (effect measured) has no verdict"]
    assert _gen3(status="failed", outcome_reason="incomplete_execution") == []  # a failed one has none


@pytest.mark.parametrize("confidence", [None, "medium", "Strong"])
def test_a_verdict_needs_confidence_strong_or_weak(confidence):
    assert _gen3(**{**FINAL, "confidence": confidence}) == ["a verdict needs confidence strong or weak"]


# ---------------------------------------------------------------- GEN-4 (three-way)

THREE_WAY = _plan("three_way")


def _gen4(**result):
    return [message for _, _, message in _found(rules.GEN_4(_ctx(result, THREE_WAY)))]


@pytest.mark.parametrize("verdict, reason", [
    ("supported", "supported"), ("refuted", "refuted"), ("inconclusive", "tie"), ("inconclusive", "mixed_criteria"),
    ("inconclusive", "insufficient_evidence"), ("inconclusive", "incomplete_execution")])
def test_a_final_three_way_verdict_with_its_reason_passes(verdict, reason):
    assert _gen4(status="succeeded", verdict=verdict, outcome_reason=reason) == []


def test_gen4_applies_only_to_the_three_way_vocabulary():
    wrong = {"status": "succeeded", "verdict": "maybe", "confidence": "strong"}
    assert rules.GEN_4(_ctx(wrong, DIRECTION)) == []
    assert rules.GEN_4(_ctx(wrong, None)) == []


@pytest.mark.parametrize("status", ["succeeded", "failed"])
def test_a_finished_three_way_result_carries_a_verdict_and_an_outcome_reason(status):
    assert _gen4(status=status, outcome_reason="tie") == [
        "a finished three-way result needs a verdict, got None", "outcome_reason tie requires verdict inconclusive"]
    assert _gen4(status=status, verdict="maybe", outcome_reason="tie") == [
        "a finished three-way result needs a verdict, got 'maybe'", "outcome_reason tie requires verdict inconclusive"]
    assert _gen4(status=status, verdict="inconclusive") == ["a finished three-way result needs an outcome_reason"]


def test_a_running_three_way_result_has_neither_verdict_nor_reason_yet():
    assert _gen4(status="running") == []
    assert _gen4(status="running", verdict="inconclusive", outcome_reason="tie") == [
        "a running result carries a verdict (left out until the final update)",
        "outcome_reason is reported only with a final result"]


@pytest.mark.parametrize("reason", ["maybe", "Tie", "inconclusive"])
def test_an_outcome_reason_outside_the_six_is_invalid(reason):
    assert _gen4(status="succeeded", verdict="inconclusive", outcome_reason=reason) == [
        f"outcome_reason {reason!r} is not a three-way reason"]


@pytest.mark.parametrize("verdict, reason", [
    ("refuted", "supported"), ("inconclusive", "supported"), ("supported", "refuted"), ("inconclusive", "refuted")])
def test_outcome_reason_supported_or_refuted_equals_the_verdict(verdict, reason):
    assert _gen4(status="succeeded", verdict=verdict, outcome_reason=reason) == [
        f"outcome_reason {reason} differs from verdict {verdict!r}"]


@pytest.mark.parametrize("verdict", ["supported", "refuted"])
@pytest.mark.parametrize("reason", ["tie", "mixed_criteria", "insufficient_evidence", "incomplete_execution"])
def test_the_other_reasons_require_verdict_inconclusive(verdict, reason):
    assert _gen4(status="succeeded", verdict=verdict, outcome_reason=reason) == [
        f"outcome_reason {reason} requires verdict inconclusive"]


@pytest.mark.parametrize("field", ["confidence", "effect", "margin", "ci", "seeds", "grid_edge", "reasoning"])
def test_the_three_way_shape_has_none_of_the_direction_fields(field):
    assert _gen4(status="succeeded", verdict="inconclusive", outcome_reason="tie", **{field: None}) == [
        f"the three-way shape has no {field}"]
    assert _gen4(status="running", effect=0.1, seeds=[1]) == ["the three-way shape has no effect, seeds"]


# ---------------------------------------------------------------- GEN-5

GRID = _plan(arms=(("base", 0, False), ("T", 10, True), ("B", 10, True)))


def _gen5(result, plan=GRID):
    return [message for _, _, message in _found(rules.GEN_5(_ctx(result, plan)))]


def test_per_arm_numbers_under_metrics_arms_pass_flat_arm_keys_do_not():
    ok = {"status": "succeeded", "completed_arms": ["T", "B"], "metrics": {"arms": {"T": {}, "B": {}}, "T": 1}}
    assert _gen5(ok) == []  # a key that is an arm's name without `_<metric>` is not a flat per-arm key
    flat = {**ok, "metrics": {"arms": {"T": {}}, "T_accuracy": 0.5, "base_accuracy": 0.4, "Tx": 1, "accuracy": 0.1}}
    assert _gen5(flat) == ["per-arm numbers as flat metrics keys: T_accuracy, base_accuracy"]


def test_flat_keys_are_found_from_the_metrics_arms_and_completed_arms_without_a_plan():
    result = {"metrics": {"arms": {"X": {}}, "X_loss": 1, "Y_loss": 2, "Z_loss": 3}, "completed_arms": ["Y"]}
    assert _gen5(result, None) == ["per-arm numbers as flat metrics keys: X_loss, Y_loss"]


def test_completed_arms_names_each_arm_once():
    assert _gen5({"status": "running", "completed_arms": ["T", "T"]}) == ["completed_arms names an arm twice"]
    assert _gen5({"status": "running", "completed_arms": ["T", "B"]}) == []


def test_a_succeeded_run_completed_every_trained_arm():
    assert _gen5({"status": "succeeded", "completed_arms": ["T"]}) == ["a succeeded run did not complete B"]
    assert _gen5({"status": "succeeded", "completed_arms": []}) == ["a succeeded run did not complete T, B"]
    assert _gen5({"status": "running", "completed_arms": ["T"]}) == []  # still running
    assert _gen5({"status": "failed", "completed_arms": []}) == []  # stopped early


def test_an_lr_grid_arm_is_complete_when_every_one_of_its_runs_is():
    plan = _plan(arms=(("T", 10, True),), runs=(("T-lr1", "T", 10), ("T-lr2", "T", 10)))
    assert _gen5({"status": "succeeded", "completed_arms": ["T-lr1", "T-lr2"]}, plan) == []
    assert _gen5({"status": "succeeded", "completed_arms": ["T-lr1"]}, plan) == ["a succeeded run did not complete T"]
    assert _gen5({"status": "succeeded", "completed_arms": ["T"]}, plan) == []


def test_completed_arms_names_only_what_the_plan_trains():
    assert _gen5({"status": "running", "completed_arms": ["base", "T", "X"]}) == [
        "completed_arms names what the plan does not train: base, X"]
    plan = _plan(arms=(("T", 10, True),), runs=(("T-lr1", "T", 10),))
    assert _gen5({"status": "running", "completed_arms": ["T-lr1", "T"]}, plan) == []
    assert _gen5({"status": "running", "completed_arms": ["base"]}, None) == []  # no plan: nothing to compare with


# ---------------------------------------------------------------- GEN-6

def _gen6(result, events=None):
    return [message for _, _, message in _found(rules.GEN_6(_ctx(result, events=events)))]


MODEL = {"field": "model", "original": "org/a", "effective": "org/b", "reason": "not served"}


def test_deviations_are_a_list_of_entries_with_a_known_field():
    assert _gen6({"deviations": []}) == []
    assert _gen6({}) == ["deviations must be a list ([] when the spec runs as written)"]
    assert _gen6({"deviations": {"field": "model"}}) == ["deviations must be a list ([] when the spec runs as written)"]
    for field in ("model", "effective_batch", "steps", "dataset", "evaluator"):
        assert _gen6({"deviations": [{**MODEL, "field": field}]}) == []
    assert _gen6({"deviations": [{"field": "lr"}, "model", {"field": None}]}) == [
        "deviation {'field': 'lr'} has no valid field", "deviation 'model' has no valid field",
        "deviation {'field': None} has no valid field"]


def test_a_deviation_listed_twice_is_invalid():
    assert _gen6({"deviations": [MODEL, dict(reversed(list(MODEL.items())))]}) == ["a deviation is listed twice"]
    assert _gen6({"deviations": [MODEL, {**MODEL, "reason": "other"}]}) == []


@pytest.mark.parametrize("field", ["objective", "endpoint"])
def test_an_objective_or_endpoint_change_sets_the_hypothesis_untested_and_says_what_was(field):
    change = {**MODEL, "field": field}
    message = f"a {field} change sets original_hypothesis_tested false and fills tested_instead"
    assert _gen6({"deviations": [change], "original_hypothesis_tested": False, "tested_instead": "x"}) == []
    assert _gen6({"deviations": [change], "original_hypothesis_tested": True, "tested_instead": "x"}) == [message]
    assert _gen6({"deviations": [change], "original_hypothesis_tested": None, "tested_instead": "x"}) == [message]
    assert _gen6({"deviations": [change], "original_hypothesis_tested": False, "tested_instead": ""}) == [message]
    assert _gen6({"deviations": [{**MODEL, "field": "model"}], "original_hypothesis_tested": True}) == []


def test_each_deviation_was_posted_in_a_running_update():
    posted = [{"status": "running", "deviations": [MODEL]}]
    assert _gen6({"deviations": [MODEL]}, events=posted) == []
    message = "1 deviation(s) were never posted in a running update before training (unrecorded)"
    assert _gen6({"deviations": [MODEL]}, events=[{"status": "succeeded", "deviations": [MODEL]}]) == [message]
    assert _gen6({"deviations": [MODEL]}, events=[{"status": "running", "deviations": "model"}]) == [message]
    assert _gen6({"deviations": [MODEL, {**MODEL, "field": "steps"}]}, events=posted) == [
        "1 deviation(s) were never posted in a running update before training (unrecorded)"]
    assert _gen6({"deviations": [MODEL]}, events=None) == []  # a bare record has no events to check


def _hypothesis(result, plan=DIRECTION):
    return [message for _, _, message in _found(rules.GEN_6_hypothesis(_ctx(result, plan)))]


def test_a_rehearsal_says_the_hypothesis_was_not_tested_and_names_the_model_that_ran():
    rehearsal = {"status": "succeeded", "rehearsal": {"model": "org/small"}, "original_hypothesis_tested": False,
                 "tested_instead": "the pipeline on org/small"}
    assert _hypothesis(rehearsal) == []
    assert _hypothesis({**rehearsal, "original_hypothesis_tested": True}) == [
        "a rehearsal replaces the spec's model, data and eval set but says original_hypothesis_tested true"]
    assert _hypothesis({**rehearsal, "tested_instead": "the pipeline on org/big"}) == [
        "a rehearsal's tested_instead does not name the model that ran ('org/small')"]
    assert _hypothesis({**rehearsal, "rehearsal": None, "tested_instead": "anything"}) == []


def test_a_finished_record_says_true_or_false():
    assert _hypothesis({"status": "succeeded", "original_hypothesis_tested": True}) == []
    assert _hypothesis({"status": "failed", "original_hypothesis_tested": "yes"}) == [
        'original_hypothesis_tested "yes" is not true or false']
    assert _hypothesis({"status": "succeeded"}) == ["original_hypothesis_tested null is not true or false"]
    assert _hypothesis({"status": "running"}) == []


@pytest.mark.parametrize("instead", [None, "", "   ", 3])
def test_an_untested_hypothesis_says_what_was_tested_instead(instead):
    assert _hypothesis({"status": "running", "original_hypothesis_tested": False, "tested_instead": instead}) == [
        "original_hypothesis_tested is false but tested_instead is empty"]


def test_a_changed_experiment_is_never_strong():
    changed = {"status": "succeeded", "original_hypothesis_tested": False, "tested_instead": "x", "confidence": "strong"}
    message = "confidence strong although the run tested a changed experiment (original_hypothesis_tested false)"
    assert _hypothesis(changed) == [message]
    assert _hypothesis({**changed, "confidence": "weak"}) == []
    assert _hypothesis({**changed, "original_hypothesis_tested": True}) == []
    assert _hypothesis(changed, _plan("three_way")) == []


# ---------------------------------------------------------------- GEN-10


def test_the_contracts_and_the_pipelines_documented_fields_pass():
    from experiment.contract.result_models import Result

    documented = ["rehearsal", "validation", "budget_use", "capacity_wait", "interruption", "spec_revision_request"]
    assert rules.GEN_10(_ctx({key: None for key in [*Result.model_fields, *documented]})) == []


def test_each_undefined_top_level_field_is_a_claim_no_rule_grades_five_named_at_most():
    """An added field (an `exchange_grade` saying verified) is invalid; the findings name the first five fields in
    sorted order, each quoted to 60 characters."""
    long_name = "f" * 70
    added = {"exchange_grade": "verified", "zz_note": 1, "aa_1": 1, "aa_2": 1, "aa_3": 1, long_name: 1}
    found = _found(rules.GEN_10(_ctx({"status": "succeeded", **added})))
    named = ["aa_1", "aa_2", "aa_3", "exchange_grade", repr(long_name)[:57] + "..."]
    assert found == [("GEN-10", "invalid", f"RESULT.{name if name.endswith('...') else repr(name)} is a field neither "
                      "the contract's RESULT nor this pipeline's record defines: a claim no rule grades")
                     for name in named]


# ---------------------------------------------------------------- GEN-7, GEN-8

def test_capacity_block_appears_only_when_capacity_stopped_an_unfinished_run():
    def gen7(**result):
        return [message for _, _, message in _found(rules.GEN_7(_ctx(result)))]

    assert gen7(status="failed", capacity_block={"reason": "no CAPACITY left"}) == []
    assert gen7(status="failed", capacity_block={"error": "quota"}) == []
    assert gen7(status="failed", capacity_block={"reason": "a crash"}) == [
        "capacity_block appears although capacity did not stop the run"]
    assert gen7(status="succeeded", capacity_block={"reason": "capacity"}) == [
        "capacity_block appears in a run that completed"]
    assert gen7(status="succeeded") == []


def test_a_capacity_block_counts_at_least_the_steps_the_record_posts():
    """A finished comparison reported as a capacity stop before any comparison step (comparison_steps_completed 0
    while both arms posted 2 steps; an SFT grid's runs alike) graded as a capacity stop before this check: the
    block's count is the real one (CAP-1), at least the steps the arms posted (steps still running may add)."""
    def gen7(steps, arms):
        block = {"error": "HTTP 429 trainer capacity exhausted", "comparison_steps_completed": steps,
                 "released_clients": True}
        return [m for _, _, m in _found(rules.GEN_7(_ctx({"status": "failed", "capacity_block": block,
                                                          "metrics": {"arms": arms}})))]

    rl = {"a": {"steps_completed": 2}, "b": {"steps_completed": 2}, "base": {"accuracy": 0.5}}
    assert gen7(0, rl) == ["capacity_block says 0 comparison steps completed, the arms posted 4"]
    assert gen7(4, rl) == [] and gen7(5, rl) == []
    sft = {"a": {"runs": {"0.1": {"steps_completed": 2}, "0.2": {"steps_completed": 1}}}}
    assert gen7(2, sft) == ["capacity_block says 2 comparison steps completed, the arms posted 3"]
    assert gen7(3, sft) == [] and gen7(0, {}) == []
    assert gen7(1, {"a": {"steps_completed": 2}, "b": {"steps_completed": -3}}) == [  # no step taken away
        "capacity_block says 1 comparison steps completed, the arms posted 2"]


def _gen8(result, plan=DIRECTION):
    return [message for _, _, message in _found(rules.GEN_8(_ctx(result, plan)))]


def test_a_summary_is_at_most_two_sentences_and_a_finished_run_has_one():
    base = {"status": "running"}
    assert _gen8({**base, "summary": "One. Two!"}) == []
    assert _gen8({**base, "summary": "One. Two? Three."}) == ["summary is longer than two sentences"]
    assert _gen8({**base, "summary": "Version 1.5 ran. Done."}) == []  # a point inside a number ends no sentence
    assert _gen8({"status": "succeeded", "summary": " ", "verdict": None}) == ["a finished run has no summary"]
    assert _gen8({"status": "failed"}) == ["a finished run has no summary"]
    assert _gen8({"status": "running"}) == []


def test_reasoning_is_two_to_four_sentences_and_a_direction_verdict_has_it():
    base = {"status": "succeeded", "summary": "Done.", "verdict": "supported"}
    assert _gen8({**base, "reasoning": "A. B."}) == []
    assert _gen8({**base, "reasoning": "A. B. C. D."}) == []
    for reasoning in ("A.", "A. B. C. D. E."):
        assert _gen8({**base, "reasoning": reasoning}) == ["reasoning is not two to four sentences"]
    assert _gen8(base) == ["a direction verdict has no reasoning"]
    assert _gen8({**base, "verdict": None}) == []
    assert _gen8(base, _plan("three_way")) == []
    assert _gen8({**base, "status": "running", "summary": None}) == []


# ---------------------------------------------------------------- EVID-1 .. EVID-7

def _entry(name, content, **extra):
    return {"name": name, "content": content, "sha256": hashlib.sha256(content.encode()).hexdigest(), **extra}


def _evidence(*files, **extra):
    return {"evidence": {"version": 1, "files": list(files), **extra}}


def _evid(rule, result, **ctx):
    return _found(getattr(rules, rule)(_ctx(result, **ctx)))


def test_evidence_status_is_what_its_files_are():
    inline = _entry("a.txt", "x")
    assert _evid("EVID_1", _evidence(inline, status="complete")) == []
    assert _evid("EVID_1", _evidence(inline, status="partial")) == [
        ("EVID-1", "invalid", "evidence.status 'partial' is not what its files are (complete)")]
    assert _evid("EVID_1", _evidence(inline, status="partial", partial=True)) == []
    url = {"name": "big.bin", "source_url": "https://x.org/attachments/big.bin", "sha256": "0" * 64}
    assert _evid("EVID_1", _evidence(inline, url, status="complete")) == []  # a source_url is not partial
    bare = {"name": "b.txt", "sha256": "0" * 64}
    assert _evid("EVID_1", _evidence(inline, bare, status="complete")) == [
        ("EVID-1", "invalid", "evidence.status 'complete' is not what its files are (partial)"),
        ("EVID-1", "unverified", "1 of 2 evidence files carry no inline content (partial): b.txt")]


@pytest.mark.parametrize("url", ["https://x.org/files/a", "http://x.org/attachments/a", "ftp://attachments/"])
def test_a_source_url_must_be_an_https_attachment(url):
    good = "https://x.org/attachments/a"
    assert _evid("EVID_1", _evidence({"name": "a", "source_url": good})) == []
    assert _evid("EVID_1", _evidence({"name": "a", "source_url": url})) == [
        ("EVID-1", "invalid", "a: source_url is not an HTTPS /attachments/ URL")]


def test_evidence_files_without_a_name_are_unverified():
    assert _evid("EVID_1", _evidence(_entry("", "x"), {"content": "y"}, _entry("a", "z"))) == [
        ("EVID-1", "unverified", "2 evidence file(s) without a name")]


def test_evid2_content_that_does_not_hash_or_has_no_hash_is_unverified():
    good = _entry("a.txt", "x")
    assert _evid("EVID_2", _evidence(good)) == []
    assert _evid("EVID_2", _evidence(good, {**_entry("b.txt", "y"), "content": "z"})) == [
        ("EVID-2", "unverified", "content does not match its sha256 or encoding: b.txt")]
    assert _evid("EVID_2", _evidence(good, {"name": "c.txt", "content": "y"})) == [
        ("EVID-2", "unverified", "no sha256 for c.txt: their bytes cannot be checked")]
    assert _evid("EVID_2", _evidence({"name": "d.bin", "sha256": "0" * 64})) == []  # partial: EVID-1's, not EVID-2's


def test_evid3_caps_at_and_one_past_each_bound(monkeypatch):
    monkeypatch.setattr(rules, "MAX_FILES", 2)
    monkeypatch.setattr(rules, "MAX_FILE_BYTES", 3)
    monkeypatch.setattr(rules, "MAX_TOTAL_BYTES", 5)
    assert _evid("EVID_3", _evidence(_entry("a", "abc"), _entry("b", "de"))) == []  # 2 files, 3 bytes, 5 in all
    assert _evid("EVID_3", _evidence(_entry("a", "abcd"))) == [
        ("EVID-3", "invalid", "a is 4 bytes, over the 10 MiB cap")]
    assert _evid("EVID_3", _evidence(_entry("a", "abc"), _entry("b", "def"))) == [
        ("EVID-3", "invalid", "evidence totals 6 bytes, over the 40 MiB cap")]
    assert _evid("EVID_3", _evidence(_entry("a", "a"), _entry("b", "b"), _entry("c", "c"))) == [
        ("EVID-3", "invalid", "3 evidence files exceed the cap of 2")]


def test_evid4_a_succeeded_run_retains_the_required_kinds():
    kinds = ("script", "effective_config", "code_revision", "predictions", "metrics")
    files = [{**_entry(f"{kind}.txt", kind), "kind": kind} for kind in kinds]
    assert _evid("EVID_4", {"status": "succeeded", **_evidence(*files)}) == []
    assert _evid("EVID_4", {"status": "succeeded", **_evidence(*files[1:4])}) == [
        ("EVID-4", "unverified", "a finished run retains no evidence of kind script, metrics")]
    assert _evid("EVID_4", {"status": "running", **_evidence()}) == []
    assert _evid("EVID_4", {"status": "succeeded", **_evidence(*files)}, gate=True) == [
        ("EVID-4", "unverified", "a finished run retains no evidence of kind generated_tasks")]
    assert _evid("EVID_4", {"status": "succeeded", **_evidence(*files)}, gate=False) == []


def test_evid5_per_arm_metrics_are_metrics_arms():
    metrics = {"arms": {"T": {"accuracy": 0.5}, "B": {"accuracy": 0.4}}}
    result = {"completed_arms": ["T", "B"], "metrics": metrics,
              "evidence": {"per_arm_metrics": {"T": {"accuracy": 0.5}, "B": {"accuracy": 0.4}}}}
    assert _evid("EVID_5", result) == []
    result["evidence"]["per_arm_metrics"] = {"T": {"accuracy": 0.6}, "Z": {}}
    assert _evid("EVID_5", result) == [
        ("EVID-5", "unverified", "evidence.per_arm_metrics lacks B"),
        ("EVID-5", "invalid", "evidence.per_arm_metrics is not metrics.arms for T, Z")]


CHECKPOINT = {"arm": "T", "step": 10, "uri": "tinker://run/T/10"}


def _evid6(checkpoints, rows=(), score=None, plan=None, status="running", **result):
    files = [_entry("t.jsonl", "\n".join(json.dumps(row) for row in rows))] if rows else []
    score = score or {"arm": "T", "seed": 0, "predictions_ref": "t.jsonl"}
    record = {"status": status, "evaluation": {"scores": [score]},
              "evidence": {"version": 1, "files": files, "checkpoints": checkpoints}, **result}
    return [message for _, _, message in _found(rules.EVID_6(_ctx(record, plan)))]


@pytest.mark.parametrize("uri", ["https://x/T/10", "tinker://run/T/10?sig=abc", None, "TINKER://run"])
def test_evid6_a_checkpoint_is_a_tinker_reference_without_a_query(uri):
    assert _evid6([CHECKPOINT]) == []
    assert _evid6([{**CHECKPOINT, "uri": uri}]) == [
        f"checkpoint {uri!r} is not a tinker:// reference without a query"]


def test_evid6_a_checkpoint_is_listed_once_and_every_scored_one_is_listed():
    assert _evid6([CHECKPOINT, dict(CHECKPOINT)]) == ["evidence.checkpoints lists a checkpoint twice"]
    row = {"arm": "T", "checkpoint": "tinker://run/T/10"}
    assert _evid6([CHECKPOINT], rows=[row]) == []
    assert _evid6([], rows=[row]) == ["scored checkpoint(s) not in evidence.checkpoints: 'tinker://run/T/10'"]
    assert _evid6([], rows=[{"arm": "T", "checkpoint": "org/base"}]) == []  # a model name, not a checkpoint
    init = {"arms": {"T": {"initialization": {"checkpoint_uri": "tinker://init", "loaded_checkpoint_uri": "tinker://l"}}}}
    for uri in ("tinker://init", "tinker://l"):  # the shared initial state is listed where the run records it
        assert _evid6([], rows=[{"arm": "base", "checkpoint": uri}], initialization_provenance=init) == []


def test_evid6_a_checkpoint_is_scored_for_its_own_arm_and_seed():
    seeded = {**CHECKPOINT, "seed": 1}
    row = {"arm": "T", "checkpoint": "tinker://run/T/10"}
    assert _evid6([seeded], rows=[row], score={"arm": "T", "seed": 1, "predictions_ref": "t.jsonl"}) == []
    assert _evid6([seeded], rows=[row], score={"arm": "T", "seed": 2, "predictions_ref": "t.jsonl"}) == [
        "checkpoint 'tinker://run/T/10' is listed for seed 1, but T was scored on it at seed 2"]
    assert _evid6([seeded], rows=[row], score={"arm": "T", "seed": 0, "predictions_ref": "t.jsonl"}) == [
        "checkpoint 'tinker://run/T/10' is listed for seed 1, but T was scored on it at seed 0"]
    assert _evid6([CHECKPOINT], rows=[row], score={"arm": "B", "seed": 0, "predictions_ref": "t.jsonl"}) == [
        "checkpoint 'tinker://run/T/10' is listed for 'T', but B was scored on it"]
    run = {"arm": "T", "run": "T-lr1", "seed": 0, "predictions_ref": "t.jsonl"}
    assert _evid6([{**CHECKPOINT, "arm": "T-lr1"}], rows=[row], score=run) == []  # a run's checkpoint: the run's name


def test_evid6_a_listed_checkpoint_names_a_trained_arm_and_the_scored_one_its_planned_step():
    plan = _plan(arms=(("base", 0, False), ("T", 10, True)), runs=(("T-lr1", "T", 12),))
    row = {"arm": "T", "checkpoint": "tinker://run/T/10"}
    assert _evid6([CHECKPOINT], rows=[row], plan=plan, status="succeeded") == []
    assert _evid6([{**CHECKPOINT, "arm": "base"}], plan=plan) == [
        "checkpoint 'tinker://run/T/10' names 'base', which the plan does not train"]
    for step in (None, -1, True, 10.0):
        assert _evid6([{**CHECKPOINT, "step": step}], plan=plan) == ["checkpoint of T has no step"]
    assert _evid6([{**CHECKPOINT, "step": 0}], plan=plan) == []
    for step in (9, 11):
        early = {**CHECKPOINT, "step": step}
        assert _evid6([early], rows=[row], plan=plan, status="succeeded") == [
            f"T was scored on its checkpoint at step {step}, not at its planned 10 steps"]
        assert _evid6([early], rows=[row], plan=plan, status="running") == []  # still training
        assert _evid6([early], plan=plan, status="succeeded") == []  # never scored: an intermediate checkpoint
    run = {"arm": "T-lr1", "step": 12, "uri": "tinker://run/T-lr1/12"}
    assert _evid6([run], plan=plan, status="succeeded") == []


def test_evid7_a_name_carries_one_file():
    assert _evid("EVID_7", _evidence(_entry("a", "x"), _entry("b", "x"))) == []
    assert _evid("EVID_7", _evidence(_entry("b", "x"), _entry("a", "x"), _entry("b", "x"), _entry("a", "y"),
                                     _entry("c", "z"))) == [
        ("EVID-7", "invalid", "evidence names listed more than once: a, b")]


# ---------------------------------------------------------------- EVID-9, EVID-10

def test_evid9_a_succeeded_run_with_a_plan_retains_its_execution_plan():
    plan = _plan()
    assert _evid("EVID_9", {"status": "succeeded", **_evidence()}, plan=plan) == [
        ("EVID-9", "unverified", "no execution-plan.json is retained")]
    assert _evid("EVID_9", {"status": "running", **_evidence()}, plan=plan) == []
    assert _evid("EVID_9", {"status": "succeeded", **_evidence()}) == []  # no plan to compare it with
    assert _evid("EVID_9", {"status": "succeeded", **_evidence(_entry("execution-plan.json", "not json"))},
                 plan=plan) == [("EVID-9", "unverified", "execution-plan.json: not JSON")]


def test_located_cuts_the_spec_and_revision_paths_to_their_file_names():
    plan = {"spec_path": "/a/b/spec.yaml", "spec_revision": {"path": "/c/rev.yaml", "sha256": "s"}, "x": 1}
    assert rules._located(plan) == {"spec_path": "spec.yaml", "spec_revision": {"path": "rev.yaml", "sha256": "s"},
                                    "x": 1}
    assert plan["spec_path"] == "/a/b/spec.yaml"  # the caller's plan is left as it is
    assert rules._located({"spec_path": 3, "spec_revision": {"path": None}}) == {"spec_path": 3,
                                                                                  "spec_revision": {"path": None}}
    assert rules._located(["spec_path"]) == ["spec_path"]


def _code(files, commit="c1", directories=None):
    return {"git_commit": commit, "files": files, **({"directories": directories} if directories else {})}


def _evid10(code, revision):
    result = _evidence(_entry("pipeline-code.json", json.dumps(code)), _entry("code-revision.json", json.dumps(revision)))
    return _evid("EVID_10", result)


def test_evid10_the_retained_code_is_the_code_revision_names():
    text = "print(1)\n"
    digest = hashlib.sha256(text.encode()).hexdigest()
    files = {"experiment/a.py": {"content": text, "sha256": digest}}
    revision = {"git_commit": "c1", "files_sha256": {"experiment/a.py": digest}}
    assert _evid10(_code(files), revision) == []
    message = "pipeline-code.json is not the code code-revision.json names ({})"
    assert _evid10(_code(files, "c2"), revision) == [("EVID-10", "invalid", message.format("git_commit"))]
    edited = {"experiment/a.py": {"content": "print(2)\n", "sha256": digest}}
    assert _evid10(_code(edited), revision) == [("EVID-10", "invalid", message.format("experiment/a.py"))]
    assert _evid10(_code({"experiment/a.py": {"sha256": digest}}), revision) == [
        ("EVID-10", "invalid", message.format("experiment/a.py"))]
    assert _evid10(_code(files), {**revision, "files_sha256": {"experiment/a.py": "0" * 64}}) == [
        ("EVID-10", "invalid", message.format("experiment/a.py"))]


def test_evid10_a_file_the_revision_lists_in_a_retained_directory_is_retained():
    revision = {"git_commit": "c1", "files_sha256": {"experiment/b.py": "0" * 64, "elsewhere/c.py": "1" * 64}}
    message = "pipeline-code.json is not the code code-revision.json names ({})"
    assert _evid10(_code({}), revision) == [("EVID-10", "invalid", message.format("experiment/b.py"))]
    assert _evid10(_code({}, directories=["elsewhere"]), revision) == [
        ("EVID-10", "invalid", message.format("elsewhere/c.py, experiment/b.py"))]  # sorted
    many = {f"experiment/{i}.py": "0" * 64 for i in range(5)}
    assert _evid10(_code({}), {"git_commit": "c1", "files_sha256": many}) == [
        ("EVID-10", "invalid", message.format("experiment/0.py, experiment/1.py, experiment/2.py, experiment/3.py ..."))]
    assert _evid10(_code({}), {"git_commit": "c1", "files_sha256": dict(list(many.items())[:4])}) == [
        ("EVID-10", "invalid", message.format("experiment/0.py, experiment/1.py, experiment/2.py, experiment/3.py"))]


def test_evid10_without_both_files_there_is_nothing_to_compare():
    assert _evid("EVID_10", _evidence(_entry("pipeline-code.json", "{}"))) == []
    assert _evid("EVID_10", _evidence(_entry("code-revision.json", "{}"))) == []


# ---------------------------------------------------------------- a record without a status (GEN-2 flags it)


def test_rules_on_status_read_a_record_without_one_as_neither_failed_nor_succeeded():
    """GEN-2 reports the missing status; GEN-3, GEN-5 and GEN-7 treat the record as neither failed nor
    succeeded (their failed-run and succeeded-run rules do not apply, and none of them fails on it)."""
    assert rules.GEN_2(_ctx({})) != []
    assert _gen3(outcome_reason="incomplete_execution") == []
    assert _gen5({"completed_arms": []}) == []
    assert _found(rules.GEN_7(_ctx({"capacity_block": {"reason": "capacity"}}))) == []


@pytest.mark.parametrize("status", ["aborted", "unknown"])  # sorting before "failed", after "succeeded"
def test_a_status_outside_the_three_is_neither_failed_nor_succeeded(status):
    assert _gen3(status=status) == []
    assert _gen5({"status": status, "completed_arms": []}) == []
    assert _found(rules.GEN_7(_ctx({"status": status, "capacity_block": {"reason": "capacity"}}))) == []


def test_an_lr_grid_arm_is_completed_by_its_own_runs_not_another_arms():
    """Arm M has no runs of its own; the runs of arms A and Z (names on each side of M) are complete."""
    plan = _plan(arms=(("M", 10, True),), runs=(("A-lr1", "A", 10), ("Z-lr1", "Z", 10)))
    assert _gen5({"status": "succeeded", "completed_arms": ["A-lr1", "Z-lr1"]}, plan) == [
        "a succeeded run did not complete M"]


def test_a_deviation_posted_only_in_a_failed_update_was_not_posted_before_training():
    assert _gen6({"deviations": [MODEL]}, events=[{"status": "failed", "deviations": [MODEL]}]) == [
        "1 deviation(s) were never posted in a running update before training (unrecorded)"]


def test_without_a_plan_the_vocabulary_rule_on_strong_confidence_does_not_apply():
    changed = {"status": "succeeded", "original_hypothesis_tested": False, "tested_instead": "x", "confidence": "strong"}
    assert _hypothesis(changed, None) == []


def test_an_lr_grid_arm_needs_only_its_own_runs_complete():
    """Arm M's run is complete; the runs of arms A and Z (names on each side of M, not trained here) are not:
    M is complete all the same."""
    plan = _plan(arms=(("M", 10, True),), runs=(("A-lr1", "A", 10), ("M-lr1", "M", 10), ("Z-lr1", "Z", 10)))
    assert _gen5({"status": "succeeded", "completed_arms": ["M-lr1"]}, plan) == []


def test_without_a_plan_a_finished_verdict_needs_no_reasoning_rule():
    """GEN-8's reasoning rule is the direction vocabulary's: a record graded without a plan has none."""
    assert _gen8({"status": "succeeded", "summary": "Done.", "verdict": "supported"}, None) == []


def test_partial_files_are_named_up_to_six_then_elided():
    names = [f"f{k}.bin" for k in range(7)]
    six = [{"name": name, "sha256": "0" * 64} for name in names[:6]]
    assert _evid("EVID_1", _evidence(*six)) == [
        ("EVID-1", "unverified", f"6 of 6 evidence files carry no inline content (partial): {', '.join(names[:6])}")]
    seven = six + [{"name": names[6], "sha256": "0" * 64}]
    assert _evid("EVID_1", _evidence(*seven)) == [
        ("EVID-1", "unverified", f"7 of 7 evidence files carry no inline content (partial): {', '.join(names[:6])} ...")]


def test_unhashed_files_are_named_up_to_six():
    names = [f"u{k}.txt" for k in range(7)]
    assert _evid("EVID_2", _evidence(*[{"name": name, "content": "x"} for name in names])) == [
        ("EVID-2", "unverified", f"no sha256 for {', '.join(names[:6])}: their bytes cannot be checked")]


def test_evid3_a_file_without_inline_bytes_adds_nothing_to_the_total(monkeypatch):
    monkeypatch.setattr(rules, "MAX_FILE_BYTES", 3)
    monkeypatch.setattr(rules, "MAX_TOTAL_BYTES", 5)
    by_hash_only = {"name": "big.bin", "sha256": "0" * 64}
    assert _evid("EVID_3", _evidence(_entry("a", "abc"), _entry("b", "de"), by_hash_only)) == []  # 5 bytes in all
    assert _evid("EVID_3", _evidence(_entry("a", "abc"), _entry("b", "def"), by_hash_only)) == [
        ("EVID-3", "invalid", "evidence totals 6 bytes, over the 40 MiB cap")]


@pytest.mark.parametrize("status", [None, "unknown"])  # absent, and a word sorting after "succeeded"
def test_evid4_and_evid9_apply_to_a_succeeded_run_only(status):
    result = {"status": status, **_evidence()} if status else _evidence()
    assert _evid("EVID_4", result) == []
    assert _evid("EVID_9", result, plan=_plan()) == []


# ---------------------------------------------------------------- EVID-6, EVID-10: each comparison from both sides


def test_evid6_the_same_checkpoint_with_its_keys_in_another_order_is_listed_twice():
    assert _evid6([CHECKPOINT, dict(reversed(list(CHECKPOINT.items())))]) == [
        "evidence.checkpoints lists a checkpoint twice"]


def test_evid6_a_checkpoint_scored_by_an_arm_sorting_after_its_own_is_found():
    row = {"arm": "T", "checkpoint": "tinker://run/T/10"}
    assert _evid6([CHECKPOINT], rows=[row], score={"arm": "Z", "seed": 0, "predictions_ref": "t.jsonl"}) == [
        "checkpoint 'tinker://run/T/10' is listed for 'T', but Z was scored on it"]


def test_evid6_one_finding_per_score_and_the_first_missing_checkpoint_named():
    """Both rows of B's score are on T's checkpoint: one finding, not two; the same for a wrong seed; of two
    scored checkpoints not listed, the first in sorted order is named."""
    rows = [{"arm": "T", "checkpoint": "tinker://run/T/10"}, {"arm": "T", "checkpoint": "tinker://run/T/10"}]
    assert _evid6([CHECKPOINT], rows=rows, score={"arm": "B", "seed": 0, "predictions_ref": "t.jsonl"}) == [
        "checkpoint 'tinker://run/T/10' is listed for 'T', but B was scored on it"]
    assert _evid6([{**CHECKPOINT, "seed": 1}], rows=rows, score={"arm": "T", "seed": 2, "predictions_ref": "t.jsonl"}) == [
        "checkpoint 'tinker://run/T/10' is listed for seed 1, but T was scored on it at seed 2"]
    unlisted = [{"arm": "T", "checkpoint": "tinker://run/T/20"}, {"arm": "T", "checkpoint": "tinker://run/T/11"},
                {"arm": "T", "checkpoint": "tinker://run/T/30"}]
    assert _evid6([], rows=unlisted) == ["scored checkpoint(s) not in evidence.checkpoints: 'tinker://run/T/11'"]


@pytest.mark.parametrize("recorded", ["0" * 64, "f" * 64], ids=["sorts before", "sorts after"])
def test_evid10_a_hash_on_either_side_of_the_contents_is_wrong(recorded):
    text = "print(1)\n"
    digest = hashlib.sha256(text.encode()).hexdigest()
    message = "pipeline-code.json is not the code code-revision.json names ({})"
    revision = {"git_commit": "c1", "files_sha256": {"experiment/a.py": digest}}
    wrong_in_code = {"experiment/a.py": {"content": text, "sha256": recorded}}
    assert _evid10(_code(wrong_in_code), {**revision, "files_sha256": {"experiment/a.py": recorded}}) == [
        ("EVID-10", "invalid", message.format("experiment/a.py"))]
    good = {"experiment/a.py": {"content": text, "sha256": digest}}
    assert _evid10(_code(good), {**revision, "files_sha256": {"experiment/a.py": recorded}}) == [
        ("EVID-10", "invalid", message.format("experiment/a.py"))]


def test_evid10_a_commit_sorting_before_is_wrong_and_named_first():
    text = "print(1)\n"
    digest = hashlib.sha256(text.encode()).hexdigest()
    message = "pipeline-code.json is not the code code-revision.json names ({})"
    revision = {"git_commit": "c1", "files_sha256": {"experiment/a.py": digest, "experiment/b.py": digest,
                                                     "experiment/c.py": digest}}
    files = {"experiment/a.py": {"content": text, "sha256": digest}}
    assert _evid10(_code(files, "c0"), revision) == [
        ("EVID-10", "invalid", message.format("git_commit, experiment/b.py, experiment/c.py"))]


# ---------------------------------------------------------------- EVID-8 (a run directory)


def _run_dir_ctx(run_dir, result, events, gate=None):
    ctx = _ctx(result, events=events, gate=gate)
    ctx.run_dir = run_dir
    return ctx


def _evid8(run_dir, files, events, gate=None, **result):
    """A run directory whose evidence/ holds `files` (name -> bytes on disk) and whose events are `events`."""
    (run_dir / "evidence").mkdir(exist_ok=True)
    for name, data in files.items():
        (run_dir / "evidence" / name).write_bytes(data)
    return [message for _, _, message in _found(rules.EVID_8(_run_dir_ctx(run_dir, result, events, gate)))]


def _logged(entry, sha=None):
    return {"event": "evidence_added", "name": entry["name"], "sha256": sha or entry["sha256"]}


CREATED = {"event": "run_created"}


def test_evid8_applies_to_a_run_directory_with_events(tmp_path):
    assert rules.EVID_8(_ctx({})) == []  # a bare record
    assert _evid8(tmp_path, {}, []) == ["events.jsonl is missing or empty, so the record's history cannot be checked"]
    assert _evid8(tmp_path, {}, [CREATED]) == []


@pytest.mark.parametrize("first", ["evidence_added", "status"])  # sorting before and after "run_created"
def test_evid8_events_start_with_run_created(tmp_path, first):
    assert _evid8(tmp_path, {}, [{"event": first}, CREATED]) == ["events.jsonl does not start with run_created"]


def test_evid8_every_evidence_file_is_logged_with_its_hash(tmp_path):
    a, b = _entry("a.txt", "alpha"), _entry("b.txt", "beta")
    result = _evidence(a, b)
    files = {"a.txt": b"alpha", "b.txt": b"beta"}
    assert _evid8(tmp_path, files, [CREATED, _logged(a), _logged(b)], **result) == []
    for other in ("checkpoint", "gate"):  # another event naming the file (sorting before and after) does not log it
        assert _evid8(tmp_path, files, [CREATED, _logged(a), {"event": other, "name": "b.txt", "sha256": b["sha256"]}],
                      **result) == ["b.txt is in RESULT.evidence but no evidence_added event logs it"]
    for wrong in ("0" * 64, "f" * 64):  # a logged hash on either side of RESULT's
        assert _evid8(tmp_path, files, [CREATED, _logged(a), _logged(b, wrong)], **result) == [
            "b.txt: RESULT's sha256 differs from the one events.jsonl logged"]


def test_evid8_the_files_on_disk_are_the_records(tmp_path):
    a = _entry("a.txt", "alpha")
    events = [CREATED, _logged(a)]
    assert _evid8(tmp_path, {"a.txt": b"alpha"}, events, **_evidence(a)) == []
    assert _evid8(tmp_path, {"a.txt": b"alphb"}, events, **_evidence(a)) == [
        "evidence/a.txt on disk does not hash to RESULT's sha256",
        "evidence/a.txt on disk differs from its inline content"]
    # RESULT's content and hash edited alike: the disk file (the run's own) is not what RESULT now says
    edited = _entry("a.txt", "omega")
    assert _evid8(tmp_path, {"a.txt": b"alpha"}, [CREATED, _logged(edited)], **_evidence(edited)) == [
        "evidence/a.txt on disk does not hash to RESULT's sha256",
        "evidence/a.txt on disk differs from its inline content"]
    by_hash = {"name": "a.txt", "sha256": a["sha256"]}  # no inline content: only the hash is compared
    assert _evid8(tmp_path, {"a.txt": b"alpha"}, [CREATED, _logged(a)], **_evidence(by_hash)) == []
    for wrong in ("0" * 64, "f" * 64):  # a recorded hash on either side of the disk file's
        other = {"name": "a.txt", "sha256": wrong}
        assert _evid8(tmp_path, {"a.txt": b"alpha"}, [CREATED, _logged(other)], **_evidence(other)) == [
            "evidence/a.txt on disk does not hash to RESULT's sha256"]
    assert _evid8(tmp_path / "evidence", {}, [CREATED, _logged(a)], **_evidence(a)) == []  # not on disk: nothing to compare


def test_evid8_every_file_the_run_kept_is_in_result(tmp_path):
    """A file the run kept (listed in evidence/manifest.json, or logged by an evidence_added event) but left out of
    RESULT.evidence is one no rule reads: it may say anything (an added 'final-scores.jsonl' saying every arm scored
    1.0 graded as the honest run directory before this check)."""
    a, extra = _entry("a.txt", "alpha"), _entry("final-scores.jsonl", '{"value": 1.0}\n')
    files = {"a.txt": b"alpha", "final-scores.jsonl": extra["content"].encode()}
    (tmp_path / "evidence").mkdir()
    (tmp_path / "evidence" / "manifest.json").write_text(json.dumps({"version": 1, "files": [
        {"name": "a.txt", "sha256": a["sha256"]}, {"name": "final-scores.jsonl", "sha256": extra["sha256"]}]}))
    assert _evid8(tmp_path, files, [CREATED, _logged(a)], **_evidence(a)) == [
        "final-scores.jsonl is kept in the run directory (manifest) but not in RESULT.evidence"]
    assert _evid8(tmp_path, files, [CREATED, _logged(a), _logged(extra)], **_evidence(a, extra)) == []
    (tmp_path / "evidence" / "manifest.json").write_text(json.dumps({"version": 1, "files": [
        {"name": "a.txt", "sha256": a["sha256"]}]}))
    assert _evid8(tmp_path, files, [CREATED, _logged(a), _logged(extra)], **_evidence(a)) == [
        "final-scores.jsonl is kept in the run directory (events.jsonl) but not in RESULT.evidence"]


def test_evid8_event_times_never_go_back(tmp_path):
    """The store appends each event with the time of its append, one at a time: a gate or evaluator_frozen event
    kept in its place but re-timed weeks later (graded as the honest run before this check) is a log that was
    edited. A step back within the clock's resolution (two seconds) is not."""
    def at(ts, event="gate"):
        return {"ts": ts, "event": event}
    honest = [{**CREATED, "ts": "2026-12-07T21:14:13+00:00"}, at("2026-12-07T21:14:14+00:00"),
              at("2026-12-07T21:14:13+00:00"), at("2026-12-07T22:14:14+01:00")]  # the same instant, another offset
    assert _evid8(tmp_path, {}, honest) == []
    moved = honest[:1] + [at("2026-12-31T23:59:59+00:00", "evaluator_frozen")] + honest[1:]
    assert _evid8(tmp_path, {}, moved) == [
        "events.jsonl goes back in time: event 3 (gate) at 2026-12-07T21:14:14+00:00 follows 2026-12-31T23:59:59+00:00"]
    assert _evid8(tmp_path, {}, honest + [at("not a time")]) == [
        "events.jsonl event 5 (gate) has no ISO time: 'not a time'"]


def _going_back(*stamps):
    return [issue.message for issue in rules._times_going_back(
        [{**CREATED, "ts": stamps[0]}] + [{"event": "gate", "ts": ts} if ts is not None else {"event": "gate"}
                                          for ts in stamps[1:]])]


def test_evid8_a_step_back_of_up_to_two_seconds_is_the_clocks_resolution():
    assert _going_back("2026-12-07T21:14:14+00:00", "2026-12-07T21:14:12+00:00") == []  # exactly two seconds
    assert _going_back("2026-12-07T21:14:14+00:00", "2026-12-07T21:14:12.500+00:00") == []
    assert len(_going_back("2026-12-07T21:14:14+00:00", "2026-12-07T21:14:11.500+00:00")) == 1


def test_evid8_each_time_is_held_to_the_latest_before_it_not_to_its_neighbour():
    """A step back within the resolution does not lower the mark: a second step back is measured from the latest."""
    assert _going_back("2026-12-07T21:14:14+00:00", "2026-12-07T21:14:13+00:00", "2026-12-07T21:14:11.500+00:00") == [
        "events.jsonl goes back in time: event 3 (gate) at 2026-12-07T21:14:11.500+00:00 follows 2026-12-07T21:14:14+00:00"]
    # the same instant in another offset keeps the first wording of the latest time
    assert _going_back("2026-12-07T21:14:14+00:00", "2026-12-07T22:14:14+01:00", "2026-12-07T21:14:10+00:00") == [
        "events.jsonl goes back in time: event 3 (gate) at 2026-12-07T21:14:10+00:00 follows 2026-12-07T21:14:14+00:00"]


def test_evid8_times_are_instants_whatever_their_offset_and_an_event_without_one_is_passed_over():
    assert _going_back("2026-12-07T21:14:14+00:00", "2026-12-07T20:14:15-01:00", "2026-12-07T21:14:16") == []
    assert _going_back("2026-12-07T21:14:14+00:00", None, "2026-12-07T21:00:00+00:00") == [
        "events.jsonl goes back in time: event 3 (gate) at 2026-12-07T21:00:00+00:00 follows 2026-12-07T21:14:14+00:00"]


def test_evid8_a_time_that_is_no_iso_time_is_quoted_to_forty_characters():
    text = "0123456789" * 5
    assert _going_back("2026-12-07T21:14:14+00:00", text) == [f"events.jsonl event 2 (gate) has no ISO time: {text[:40]!r}"]


def test_evid8_only_evidence_added_events_log_a_kept_file(tmp_path):
    """Other events that carry a name (a checkpoint sorts before evidence_added, a training step after) keep no file."""
    a = _entry("a.txt", "alpha")
    events = [CREATED, _logged(a), {"event": "checkpoint", "name": "ckpt-final"}, {"event": "training_step", "name": "x"}]
    assert _evid8(tmp_path, {"a.txt": b"alpha"}, events, **_evidence(a)) == []


def _gates_table(run_dir, rows):
    (run_dir / "tables").mkdir(exist_ok=True)
    pd.DataFrame(rows).to_parquet(run_dir / "tables" / "gates.parquet")


def test_evid8_the_gates_table_says_what_the_gate_events_say(tmp_path):
    events = [CREATED, {"event": "gate", "gate": "decision", "status": "passed"},
              {"event": "gate", "gate": "activation_gate", "status": "passed"},
              # later events that are not gate events (sorting before and after "gate") change no gate
              {"event": "evidence_added", "gate": "activation_gate", "status": "failed"},
              {"event": "status", "gate": "decision", "status": "failed"}]
    _gates_table(tmp_path, [{"gate": "decision", "status": "passed"}, {"gate": "activation_gate", "status": "passed"}])
    assert _evid8(tmp_path, {}, events) == []
    _gates_table(tmp_path, [{"gate": "decision", "status": "failed"}])
    assert _evid8(tmp_path, {}, events) == ["tables/gates.parquet says gate decision failed, events.jsonl says passed"]
    _gates_table(tmp_path, [{"gate": "decision", "status": "passed"}])
    failed = [CREATED, {"event": "gate", "gate": "decision", "status": "failed"}]
    assert _evid8(tmp_path, {}, failed) == ["tables/gates.parquet says gate decision passed, events.jsonl says failed"]
    (tmp_path / "tables" / "gates.parquet").write_bytes(b"not parquet")
    assert _evid8(tmp_path, {}, events) == ["tables/gates.parquet cannot be read"]


def test_evid8_a_verdict_needs_the_decision_gate_passed(tmp_path):
    verdict = {"status": "succeeded", "verdict": "supported"}
    failed = [CREATED, {"event": "gate", "gate": "decision", "status": "failed"}]
    message = "RESULT has a verdict but the decision gate did not pass in events.jsonl"
    assert _evid8(tmp_path, {}, failed, gate=True, **verdict) == [message]
    assert _evid8(tmp_path, {}, failed, gate=None, **verdict) == []  # the gate does not apply
    assert _evid8(tmp_path, {}, failed, gate=True, status="succeeded") == []  # no verdict
    assert _evid8(tmp_path, {}, failed, gate=True, status="running", verdict="supported") == []  # not finished
    passed = [CREATED, {"event": "gate", "gate": "decision", "status": "passed"}]
    assert _evid8(tmp_path, {}, passed, gate=True, **verdict) == []
    assert _evid8(tmp_path, {}, [CREATED], gate=True, **verdict) == []  # no gate event: nothing says it failed


# ---------------------------------------------------------------- SEC-1 (a run directory's files)

KEY = "tml-" + "a1b2c3d4" * 3  # the shape of a Tinker API key
SIXTY_FOUR_MIB = 64 * 1024 * 1024  # SEC-1 reads run-directory files up to this size


def _sec1(run_dir, result=None):
    return [message for _, _, message in _found(rules.SEC_1(_run_dir_ctx(run_dir, result or {}, [])))]


def test_sec1_reads_every_file_of_a_run_directory_but_result_json(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "train.log").write_text(f"step 1 key={KEY}\n")
    (tmp_path / "result.json").write_text(json.dumps({"note": KEY}))  # graded as the record itself, not as a file
    (tmp_path / "clean.txt").write_text("nothing here\n")
    assert _sec1(tmp_path) == ["logs/train.log contains a Tinker API key (tml-...)"]
    assert rules.SEC_1(_ctx({})) == []  # a bare record without secrets


def test_sec1_reads_a_parquet_tables_values(tmp_path):
    (tmp_path / "tables").mkdir()
    # compressed and without column statistics: the key is not in the file's bytes, only in its decoded values
    pd.DataFrame([{"note": KEY}]).to_parquet(tmp_path / "tables" / "t.parquet", compression="gzip",
                                             write_statistics=False)
    assert KEY.encode() not in (tmp_path / "tables" / "t.parquet").read_bytes()
    assert _sec1(tmp_path) == ["tables/t.parquet contains a Tinker API key (tml-...)"]
    (tmp_path / "tables" / "t.parquet").write_bytes(b"PAR1 not a table")  # unreadable: its bytes are still scanned
    assert _sec1(tmp_path) == []


def _sparse_file(path, size, tail):
    """A file of `size` bytes ending in `tail` (zeros before it, not written to disk)."""
    with path.open("wb") as handle:
        handle.truncate(size - len(tail))
        handle.seek(size - len(tail))
        handle.write(tail)


@pytest.mark.parametrize("size, found", [(2 * 1024 * 1024, True), (SIXTY_FOUR_MIB, True), (SIXTY_FOUR_MIB + 1, False)],
                         ids=["2 MiB", "64 MiB", "one byte past 64 MiB"])
def test_sec1_reads_run_directory_files_up_to_64_mib(tmp_path, size, found):
    _sparse_file(tmp_path / "big.log", size, f" {KEY}".encode())
    assert _sec1(tmp_path) == (["big.log contains a Tinker API key (tml-...)"] if found else [])


def test_sec1_reads_each_inline_evidence_file():
    data = f"key {KEY}".encode()  # inline as base64: the key is in the decoded file, not in result.json's text
    encoded = {"name": "notes.txt", "content": base64.b64encode(data).decode(), "encoding": "base64",
               "sha256": hashlib.sha256(data).hexdigest()}
    result = _evidence(_entry("clean.txt", "nothing"), {"name": "remote.bin", "sha256": "0" * 64}, encoded)
    assert _found(rules.SEC_1(_ctx(result))) == [
        ("SEC-1", "invalid", "evidence notes.txt contains a Tinker API key (tml-...)")]


@pytest.mark.parametrize("source", ["the run's recorded spec.json (evidence)", "spec file specs/x.yaml"],
                         ids=["sorting after 'the given spec'", "sorting before"])
def test_evid9_the_retained_plan_is_compared_unless_the_spec_was_given_as_an_object(source):
    plan = SimpleNamespace(to_dict=lambda: {"spec_path": "/checkout/specs/x.yaml", "arms": ["T", "B"]})
    result = {"status": "succeeded", **_evidence(_entry("execution-plan.json", json.dumps(
        {"spec_path": "/elsewhere/x.yaml", "arms": ["T"]})))}
    message = [("EVID-9", "invalid", "execution-plan.json is not the plan of the spec graded against")]
    ctx = _ctx(result, plan)
    ctx.spec_source = source
    assert _found(rules.EVID_9(ctx)) == message
    ctx.spec_source = "the given spec"
    assert _found(rules.EVID_9(ctx)) == []
    same = {"status": "succeeded", **_evidence(_entry("execution-plan.json", json.dumps(
        {"spec_path": "/elsewhere/x.yaml", "arms": ["T", "B"]})))}  # another checkout, the same plan
    ctx = _ctx(same, plan)
    ctx.spec_source = source
    assert _found(rules.EVID_9(ctx)) == []
