"""The restoration rules (experiment/grading/restoration.py; docs/contract-rules.md REST-1..REST-10) on the cases
the complete mutation run of experiment/grading/ found untested (issue 28 item 7): comparisons tested from one
side only, a loop that stops after the first arm, check or restore it skips, and LR-grid runs. Each expected
finding is worked out here from the rule's text."""

from __future__ import annotations

import hashlib
import json
from types import SimpleNamespace

import pytest

from experiment.grading import restoration as rules
from grading_contexts.restoration import (  # the run's evidence files and records, as the rules read them
    ADAPTER,
    CHECKPOINT_INITIALIZATION as CHECKPOINT,
    CREATION_INFO as RESPONSE,
    LOAD,
    NEITHER_PROVEN as NEITHER,
    WHERE10,
    EvidenceFiles as _Files,
    initial_output as _output,
    initialization as _init,
    optimizer_check as _check,
    restoration_plan as _plan,
    restore as _restore,
    update_check as _update,
)

def _ctx(arms, plan=None, spec=None, files=None):
    ctx = SimpleNamespace(result={"initialization_provenance": {"version": 1, "arms": arms}}, plan=plan, spec=spec)
    ctx.evidence = _Files(files or {})
    return ctx


def _found(issues):
    return [(issue.status, issue.message) for issue in issues]


def _group(*arms, **extra):
    return {"restoration_preflight": {"groups": [{"arms": [{"name": a, **extra} for a in arms]}]}}


# ---------------------------------------------------------------- an LR grid's runs are arms (provenance_arms), REST-1


def test_each_run_of_an_lr_grid_is_checked_like_an_arm():
    arms = {"T": {"initialization": _init(), "runs": {"0.01": {"initialization": _init(base_checkpoint=None)},
                                                      "0.02": "not an entry"}}}
    assert _found(rules.REST_2(_ctx(arms))) == [
        ("unverified", "arm T run 0.01: initialization has no base_checkpoint")]


def test_an_arm_entry_that_is_not_arm_provenance_is_reported_for_that_arm():
    issues = rules.REST_1(_ctx({"T": {"initialization": "adapter"}}))
    assert issues and all(i.rule == "REST-1" and i.message.startswith("arm T") for i in issues)


def test_an_arm_trained_at_three_rates_has_provenance_for_each():
    runs = [SimpleNamespace(arm="T", lr=lr) for lr in (0.01, 0.02, 0.04)]
    arms = {"T": {"runs": {"0.01": {}, "0.02": {}}}}
    assert _found(rules.REST_1_runs(_ctx(arms, plan=_plan(runs=runs)))) == [
        ("unverified", "arm T: provenance for runs 0.01, 0.02, the plan trains 0.01, 0.02, 0.04")]


def test_an_arm_of_one_rate_does_not_stop_the_check_of_the_next():
    runs = [SimpleNamespace(arm="B", lr=0.01), SimpleNamespace(arm="T", lr=0.01), SimpleNamespace(arm="T", lr=0.02)]
    arms = {"B": {"runs": {}}, "T": {"runs": {"0.01": {}}}}
    assert _found(rules.REST_1_runs(_ctx(arms, plan=_plan(runs=runs)))) == [
        ("unverified", "arm T: provenance for runs 0.01, the plan trains 0.01, 0.02")]


# ---------------------------------------------------------------- REST-2: each exact comparison from both sides


@pytest.mark.parametrize("changes", [
    {"source": "user_declared"}, {"checkpoint_scope": "partial"}, {"loaded_checkpoint_uri": "tinker://a-other"},
], ids=["source sorts after server_response", "scope sorts after full", "load sorts before the checkpoint"])
def test_a_checkpoint_proves_the_initialization_only_with_exactly_the_named_values(changes):
    assert _found(rules.REST_2(_ctx({"T": {"initialization": _init(**{**CHECKPOINT, **changes})}}))) == [NEITHER]


def test_a_base_checkpoint_sorting_before_the_specs_model_is_not_it():
    ctx = _ctx({"T": {"initialization": _init(base_checkpoint="org/aaa")}}, plan=_plan())
    assert _found(rules.REST_2(ctx)) == [("invalid", "arm T: base_checkpoint 'org/aaa' is not the spec's model 'org/base'")]


# ---------------------------------------------------------------- REST-3


def _rest3(inits):
    return _found(rules.REST_3(_ctx({arm: {"initialization": init} for arm, init in inits.items()}, spec=_group("T", "B"))))


def test_two_arms_whose_adapter_hashes_differ_either_way_share_no_initialization():
    # the pair is taken in name order (B, T): B's hash sorts before T's here, after it in the restoration tests
    assert _rest3({"T": _init(adapter_sha256="c" * 64), "B": _init(adapter_sha256="b" * 64)}) == [
        ("invalid", "group T/B: arms load different initial adapter_sha256s"),
        ("invalid", "arms B and T share no initialization identity")]
    uri = {"adapter_sha256": None}
    assert _rest3({"T": _init(**uri, checkpoint_uri="tinker://c"), "B": _init(**uri, checkpoint_uri="tinker://b")}) == [
        ("invalid", "group T/B: arms load different initial checkpoints"),
        ("invalid", "arms B and T share no initialization identity")]


# ---------------------------------------------------------------- REST-5 and REST-6: check entries

SPEC = {"restoration_preflight": {"groups": [{"arms": [
    {"name": "T", "optimizer": "adam", "optimizer_config": {"learning_rate": 0.01, "beta1": 0.9, "beta2": 0.95}},
    {"name": "B", "optimizer": "adam", "optimizer_config": {"learning_rate": 0.01, "beta1": 0.9, "beta2": 0.95}}]}]}}
ADAMW = {"family": "adamw", "learning_rate": 0.01, "beta1": 0.9, "beta2": 0.95}


def _rest5(arms, runs=()):
    return _found(rules.REST_5(_ctx(arms, plan=_plan(runs=runs), spec=SPEC)))


def test_a_run_labelled_by_no_learning_rate_requests_one_of_the_arms_planned_rates():
    runs = [SimpleNamespace(arm="T", lr=0.01), SimpleNamespace(arm="T", lr=0.02)]
    entry = {"runs": {"fast": {"optimizer_checks": [{"requested": {**ADAMW, "learning_rate": 0.02}}]},
                      "slow": {"optimizer_checks": [{"requested": {**ADAMW, "learning_rate": 0.04}}]}}}
    assert _rest5({"T": entry}, runs=runs) == [
        ("invalid", "arm T run slow: requested learning_rate 0.04 (planned 0.01, 0.02) differ from the spec's")]


def test_a_family_sorting_after_the_specs_is_not_it_and_leads_the_list_of_differences():
    assert _rest5({"T": {"optimizer_checks": [{"requested": {**ADAMW, "family": "sgd"}}]}}) == [
        ("invalid", "arm T: requested family differ from the spec's")]
    wrong = {**ADAMW, "family": "sgd", "beta1": 0.5, "beta2": 0.5}
    assert _rest5({"T": {"optimizer_checks": [{"requested": wrong}]}}) == [
        ("invalid", "arm T: requested family, beta1, beta2 differ from the spec's")]


def test_a_check_without_a_learning_rate_does_not_stop_the_next_arms_check():
    no_rate = {k: v for k, v in ADAMW.items() if k != "learning_rate"}
    arms = {"T": {"optimizer_checks": [{"requested": no_rate}]},
            "B": {"optimizer_checks": [{"requested": {**ADAMW, "beta1": 0.5}}]}}
    assert _rest5(arms) == [("unverified", "arm T: the requested optimizer names no learning rate"),
                            ("invalid", "arm B: requested beta1 differ from the spec's")]


def _rest6(checks, response=RESPONSE):
    return _found(rules.REST_6(_ctx({"T": {"optimizer_checks": checks}}, files={"info.json": response})))


def test_a_reported_family_sorting_before_the_requested_one_is_not_it():
    assert _rest6([_check(requested={"family": "sgd", "learning_rate": 0.01, "beta1": 0.9})]) == [
        ("invalid", "arm T, after_restore 0: the server reports family 'adamw', requested 'sgd'")]


def test_a_declared_or_wrong_family_check_does_not_stop_the_next_check():
    later = _check(after_restore=1, actual_family="sgd")
    expected = ("invalid", "arm T, after_restore 1: the server reports family 'sgd', requested 'adamw'")
    assert _rest6([_check(source="declared"), later]) == [
        ("unverified", "arm T, after_restore 0: the optimizer is declared, not read from a server response"), expected]
    assert _rest6([_check(actual_family="sgd"), later]) == [
        ("invalid", "arm T, after_restore 0: the server reports family 'sgd', requested 'adamw'"), expected]


def test_an_actual_setting_is_what_the_retained_get_info_reports():
    where = "arm T, after_restore 0"
    assert _rest6([_check(actual_config={"learning_rate": 0.01, "beta1": 0.95, "lora_rank": 8})]) == [
        ("invalid", f"{where}: actual beta1 are not what the retained server response says"),
        ("invalid", f"{where}: actual beta1 are not what the retained response reports"),
        ("invalid", f"{where}: the server reports other beta1 than requested")]


# ---------------------------------------------------------------- REST-7


def test_a_group_whose_arms_name_no_initial_outputs_has_no_differing_outputs():
    not_captured = {"available": False, "reason": "sampling not supported"}
    ctx = _ctx({"T": {"initial_output": not_captured}, "B": {"initial_output": not_captured}}, spec=_group("T", "B"))
    assert rules.REST_7(ctx) == []


def _canonical(value):
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                                     allow_nan=False).encode()).hexdigest()


def test_a_retained_batch_that_is_not_json_is_invalid():
    ctx = _ctx({"T": {"initial_output": _output()}}, files={"restoration-fixed-batch.json": {"loss": float("nan")}})
    assert _found(rules.REST_7_fixed_batch(ctx)) == [
        ("invalid", "restoration-fixed-batch.json is not a JSON batch")]


def test_a_batch_hash_on_either_side_of_the_retained_batchs_is_not_it():
    batch = {"tokens": [1, 2]}
    arms = {"A": {"initial_output": _output(batch_sha256="0" * 64)}, "B": {"initial_output": _output(batch_sha256="f" * 64)},
            "C": {"initial_output": _output(batch_sha256=_canonical(batch))}}
    ctx = _ctx(arms, files={"restoration-fixed-batch.json": batch})
    assert _found(rules.REST_7_fixed_batch(ctx)) == [
        ("invalid", "arm A, B: batch_sha256 is not the hash of the retained restoration-fixed-batch.json")]


# ---------------------------------------------------------------- REST-3 checkpoint, REST-9

WRONG3 = ("invalid", "arm {}: checkpoint_adapter_sha256 is not the arm's adapter hash and the one the retained "
                     "checkpoint response reports")


def _reported(digest):
    return {"checkpoint_weights_info": {"optimizer_config": {"adapter_sha256": digest}}}


@pytest.mark.parametrize("named, own, reported", [
    ("b" * 64, ADAPTER, ADAPTER), (ADAPTER, "b" * 64, "b" * 64), ("b" * 64, "b" * 64, ADAPTER),
    (ADAPTER, ADAPTER, "b" * 64), (ADAPTER, "b" * 64, ADAPTER)])
def test_the_checkpoint_hash_the_arms_and_the_reported_are_one_hash_whichever_sorts_first(named, own, reported):
    init = {"adapter_sha256": own, "checkpoint_adapter_sha256": named, "evidence_ref": "info.json"}
    ctx = _ctx({"T": {"initialization": init}}, files={"info.json": _reported(reported)})
    assert _found(rules.REST_3_checkpoint(ctx)) == [tuple(s.format("T") for s in WRONG3)]


def test_an_arm_naming_no_checkpoint_hash_does_not_stop_the_check_of_the_next():
    arms = {"B": {"initialization": {"adapter_sha256": ADAPTER}},
            "T": {"initialization": {"adapter_sha256": ADAPTER, "checkpoint_adapter_sha256": "b" * 64}}}
    assert _found(rules.REST_3_checkpoint(_ctx(arms))) == [tuple(s.format("T") for s in WRONG3)]


def test_an_arm_alone_in_its_group_may_have_been_restored_more_than_once():
    spec = {"experiment_features": {"checkpoint_restore": True, "paired_training_arms": False}, **_group("T")}
    assert rules.REST_9(_ctx({"T": {"restore_count": 2}}, spec=spec)) == []


# ---------------------------------------------------------------- REST-4: restores from the load evidence


def _restores(arms, files=None):
    return _found(rules.REST_4_restores(_ctx(arms, files=files if files is not None else {"load1.json": LOAD,
                                                                                          "load2.json": LOAD})))


def test_the_client_and_checkpoint_come_from_get_info_after_creation_and_loaded_from_without_a_later_record():
    entry = {"restore_count": 1, "restores": [_restore()]}
    assert _restores({"T": entry}, {"load1.json": {"get_info_after_creation": {"model_id": "client-B"},
                                                   "load_response": {"path": "tinker://ckpt"}}}) == [
        ("invalid", "arm T, restore 1: the evidence's get_info names client 'client-B', the restore says 'client-T'")]
    assert _restores({"T": entry}, {"load1.json": {**LOAD, "load_response": {}, "loaded_from": "tinker://other"}}) == [
        ("invalid", "arm T, restore 1: the evidence loaded 'tinker://other', the restore says 'tinker://ckpt'")]


def test_a_negative_count_without_restores_claims_no_restore():
    assert _restores({"T": {"restore_count": -1}}) == []  # REST-4's coverage check grades the count itself


def test_an_arm_without_restores_does_not_stop_the_check_of_the_next():
    arms = {"B": {"restore_count": 0}, "T": {"restore_count": 2, "restores": [_restore()]}}
    assert _restores(arms) == [("invalid", "arm T: restore_count 2 but 1 restores are recorded")]


def test_another_arms_evidence_whichever_name_sorts_first_but_never_the_arms_own_runs():
    load = {"B": {"initialization": {"evidence_ref": "initB.json"}, "restore_count": 1,
                  "restores": [_restore(evidence_ref="initT.json")]},
            "T": {"initialization": {"evidence_ref": "initT.json"}, "restore_count": 1,
                  "restores": [_restore(evidence_ref="initB.json")]}}
    files = {"initB.json": LOAD, "initT.json": LOAD}
    assert _restores(load, files) == [
        ("invalid", "arm B, restore 1: evidence_ref 'initT.json' is another arm's evidence"),
        ("invalid", "arm T, restore 1: evidence_ref 'initB.json' is another arm's evidence")]
    own = {"T": {"initialization": {"evidence_ref": "initT.json"}, "restore_count": 1,
                 "restores": [_restore(evidence_ref="initR.json")],
                 "runs": {"0.01": {"initialization": {"evidence_ref": "initR.json"}, "restore_count": 1,
                                   "restores": [_restore(evidence_ref="initT.json")]}}}}
    assert _restores(own, {"initR.json": LOAD, "initT.json": LOAD}) == []


def test_a_malformed_or_unretained_restore_does_not_stop_the_check_of_the_next():
    malformed = {"T": {"restore_count": 2, "restores": [_restore(1, client=""), _restore(2, loaded_from="tinker://x")]}}
    assert _restores(malformed) == [
        ("unverified", "arm T, restore 1: needs its number, the client, the checkpoint loaded, the load method, when, "
                       "and an evidence_ref"),
        ("invalid", "arm T, restore 2: the evidence loaded 'tinker://ckpt', the restore says 'tinker://x'")]
    unretained = {"T": {"restore_count": 2, "restores": [_restore(1), _restore(2, loaded_from="tinker://x")]}}
    assert _restores(unretained, {"load2.json": LOAD}) == [
        ("unverified", "arm T, restore 1: evidence_ref 'load1.json': load1.json is not retained"),
        ("invalid", "arm T, restore 2: the evidence loaded 'tinker://ckpt', the restore says 'tinker://x'")]


def test_the_evidence_disagreeing_with_the_restore_on_either_side():
    entry = {"T": {"restore_count": 1, "restores": [_restore(method="create_training_client_from_state")]}}
    assert _restores(entry, {"load1.json": LOAD}) == [
        ("invalid", "arm T, restore 1: the evidence loaded by 'load_state', the restore says "
                    "create_training_client_from_state")]
    entry = {"T": {"restore_count": 1, "restores": [_restore()]}}
    assert _restores(entry, {"load1.json": {**LOAD, "get_info_after_restore": {"model_id": "client-Z"}}}) == [
        ("invalid", "arm T, restore 1: the evidence's get_info names client 'client-Z', the restore says 'client-T'")]
    assert _restores(entry, {"load1.json": {**LOAD, "load_response": {"path": "tinker://a"}}}) == [
        ("invalid", "arm T, restore 1: the evidence loaded 'tinker://a', the restore says 'tinker://ckpt'")]


def test_a_restore_of_a_checkpoint_sorting_after_the_initialization_does_not_load_it():
    entry = {"initialization": {"checkpoint_uri": "tinker://init"}, "restore_count": 1,
             "restores": [_restore(loaded_from="tinker://zz")]}
    files = {"load1.json": {**LOAD, "load_response": {"path": "tinker://zz"}}}
    assert _restores({"T": entry}, files) == [
        ("invalid", "arm T: created from saved state 'tinker://init' but no restore loads it")]


# ---------------------------------------------------------------- REST-10


@pytest.mark.parametrize("a, b, worst", [([[1.0], [2.0]], [[1.0]], None), ([[1.0]], [[1.0, 2.0]], None),
                                         ([[]], [[]], 0.0)])
def test_the_largest_difference_needs_rows_of_equal_length_and_is_never_negative(a, b, worst):
    assert rules.max_difference(a, b) == worst


def _rest10(data):
    spec = {"restoration_preflight": {"groups": [{"arms": [{"name": "T", "optimizer": "adamw"}]}]}}
    return _found(rules.REST_10(_ctx({}, spec=spec, files={"restoration-update-check.json": data})))


def test_state_saved_after_several_steps_and_restored_from_a_checkpoint_sorting_first_is_a_restore():
    assert _rest10(_update(steps_before_save=2)) == []
    assert _rest10(_update(restored_from="tinker://a-state", checkpoint_uri="tinker://saved")) == []


def test_an_optimizer_source_sorting_after_server_response_is_not_verified():
    declared = {"source": "user_declared", "requested": {"family": "adamw"}}
    assert _rest10(_update(optimizer_check_after_restore=declared)) == [
        ("unverified", f"{WHERE10}: the restored optimizer is not verified from a server response")]


def test_a_check_without_outputs_does_not_stop_the_next_check():
    keyed = {"T": _update(label="T", logprobs_after_second_step={}),
             "B": _update(label="B", max_abs_difference=0.0)}
    assert _rest10(keyed) == [
        ("unverified", "create-save-restore check T: the two clients' outputs are not retained, so the difference "
                       "cannot be recomputed"),
        ("invalid", f"create-save-restore check B: recorded max_abs_difference 0.0 is not the recomputed "
                    f"{abs((-1.0 + 4e-7) - (-1.0))!r}")]


def test_a_difference_of_exactly_the_tolerance_passes():
    assert abs(1e-6 - 0.0) == rules.REST10_ATOL  # the difference below is the tolerance itself, exactly
    at = _update(logprobs_after_second_step={"uninterrupted": [[0.0]], "restored": [[1e-6]]}, max_abs_difference=1e-6)
    assert _rest10(at) == []


def test_a_keyed_check_labelled_by_an_arm_sorting_before_its_key_is_not_its_keys():
    spec = {"restoration_preflight": {"groups": [{"arms": [{"name": "T"}, {"name": "B"}]}]}}
    ctx = _ctx({}, spec=spec)
    problems = rules._check_problems(ctx, "T", {"label": "B"}, True)
    assert ("invalid", "label 'B' is not a restoration arm (nor its key)") in problems


THREE = ("unverified", "the uninterrupted, interrupted and restored clients are not three named clients")


def _problems_of(check, spec=None):
    spec = spec or {"restoration_preflight": {"groups": [{"arms": [{"name": "T"}]}]}}
    ctx = _ctx({"T": {"initialization": {"checkpoint_uri": "tinker://init"}}}, spec=spec)
    return rules._check_problems(ctx, "T", {"label": "T", **check}, False)


@pytest.mark.parametrize("clients, flagged", [
    ({"uninterrupted": "client-U", "interrupted": "client-I", "restored": "client-R"}, False),
    ({"uninterrupted": "client-U", "interrupted": "", "restored": "client-R"}, True),
    ({"uninterrupted": "client-U", "interrupted": 7, "restored": "client-R"}, True),
    ({"uninterrupted": "client-U", "interrupted": "client-U", "restored": "client-R"}, True),
], ids=["three named", "one empty", "one a number", "two the same"])
def test_a_check_names_three_different_clients_each_by_a_non_empty_name(clients, flagged):
    assert (THREE in _problems_of({"clients": clients})) is flagged


@pytest.mark.parametrize("uri", ["tinker://a-other", "tinker://zz"])
def test_a_checkpoint_uri_sorting_on_either_side_of_the_arms_is_not_it(uri):
    assert (("invalid", f"checkpoint_uri '{uri}' is not the arm's initialization checkpoint ('tinker://init')")
            in _problems_of({"checkpoint_uri": uri}))
    assert not any(p.startswith("checkpoint_uri") for _, p in _problems_of({"checkpoint_uri": "tinker://init"}))


RESTORE_RECORD = ("invalid", "its restore record is not the restored client loading restored_from with its optimizer state")


@pytest.mark.parametrize("changes, flagged", [
    ({}, False), ({"restore": 2}, True), ({"restore": 0}, True), ({"client": "client-Z"}, True),
    ({"client": "client-A"}, True), ({"evidence_ref": "z.json"}, True), ({"evidence_ref": "a.json"}, True)],
    ids=["its own", "number after", "number before", "client after", "client before", "evidence after", "evidence before"])
def test_the_restore_record_is_exactly_the_restored_clients_load_of_restored_from(changes, flagged):
    restore = {"restore": 1, "client": "client-R", "loaded_from": "tinker://state",
               "method": "create_training_client_from_state_with_optimizer", "with_optimizer_state": True,
               "evidence_ref": "restoration-update-check.json", **changes}
    check = {"clients": {"restored": "client-R"}, "restored_from": "tinker://state", "restore": restore}
    assert (RESTORE_RECORD in _problems_of(check)) is flagged


def test_the_optimizer_after_the_restore_requests_every_spec_setting_family_first():
    spec = {"restoration_preflight": {"groups": [{"arms": [
        {"name": "T", "optimizer": "adam", "optimizer_config": {"learning_rate": 0.01, "beta1": 0.9, "beta2": 0.95}}]}]}}

    def requested(**asked):
        return [p for s, p in _problems_of({"optimizer_check_after_restore": {"requested": asked}}, spec)
                if p.startswith("requested")]

    assert requested(family="adamw", learning_rate=0.01, beta1=0.9, beta2=0.95) == []
    assert requested(family="adamw", learning_rate=0.01, beta2=0.95) == ["requested beta1 differ from the spec's"]
    assert requested(family="sgd", learning_rate=0.01, beta1=0.5, beta2=0.5) == [
        "requested family, beta1, beta2 differ from the spec's"]


OPT_CHECK = ("unverified", "the optimizer check is not the one after the restore, before the next update, with its "
                           "mismatches listed and restoration-update-check.json as its evidence")
AFTER = {"after_restore": 1, "before_next_update": True, "mismatches": [], "evidence_ref": "restoration-update-check.json",
         "source": "server_response", "actual_family": "adamw", "requested": {"family": "adamw", "learning_rate": 0.01},
         "actual_config": {"learning_rate": 0.01}}


def _after(**changes):
    return _problems_of({"optimizer_check_after_restore": {**AFTER, **changes}})


def test_an_extra_requested_setting_differs_from_the_spec():
    spec = {"restoration_preflight": {"groups": [{"arms": [
        {"name": "T", "optimizer": "adam", "optimizer_config": {"learning_rate": 0.01}}]}]}}
    asked = {"family": "adamw", "learning_rate": 0.01, "eps": 1e-8}
    assert [p for _, p in _problems_of({"optimizer_check_after_restore": {"requested": asked}}, spec)
            if p.startswith("requested")] == ["requested eps differ from the spec's"]


@pytest.mark.parametrize("changes, flagged", [
    ({}, False), ({"after_restore": 0}, True), ({"before_next_update": False}, True), ({"mismatches": None}, True),
    ({"evidence_ref": "a.json"}, True), ({"evidence_ref": "z.json"}, True)],
    ids=["the one", "after creation", "after the update", "mismatches not listed", "evidence before", "evidence after"])
def test_each_condition_of_the_optimizer_check_after_the_restore_alone(changes, flagged):
    assert (OPT_CHECK in _after(**changes)) is flagged


@pytest.mark.parametrize("actual, requested", [("adamw", "sgd"), ("sgd", "adamw")])
def test_a_reported_family_on_either_side_of_the_requested_one_is_not_it(actual, requested):
    problems = _after(actual_family=actual, requested={"family": requested, "learning_rate": 0.01})
    assert ("invalid", f"the service reports family '{actual}', requested '{requested}'") in problems


@pytest.mark.parametrize("family, wrong", [("adamw", False), ("adam", False), ("sgd", True), ("adagrad", True)])
def test_the_update_names_the_requested_family_in_any_spelling_and_no_other(family, wrong):
    for key in ("type", "family"):
        problems = _problems_of({"optimizer_check_after_restore": AFTER,
                                 "update": {"learning_rate": 0.01, key: family}})
        expected = ("invalid", f"the update it took ({key}) is not the requested optimizer's")
        assert (expected in problems) is wrong


BATCH = ("invalid", "batch_sha256 is not the fixed batch the arms' initial outputs were taken on")


@pytest.mark.parametrize("named, flagged", [([], False), (["b" * 64], True), (["b" * 64, "d" * 64], False),
                                            (["c" * 64], False)],
                         ids=["no arm names a batch", "one other batch", "two batches", "the same batch"])
def test_the_checks_batch_is_compared_only_with_the_one_fixed_batch_the_arms_name(named, flagged):
    arms = {f"A{i}": {"initial_output": {"batch_sha256": digest}} for i, digest in enumerate(named)}
    ctx = _ctx({"T": {"initialization": {"checkpoint_uri": "tinker://init"}}, **arms}, spec=_group("T"))
    assert (BATCH in rules._check_problems(ctx, "T", {"label": "T", "batch_sha256": "c" * 64}, False)) is flagged


# ---------------------------------------------------------------- REST-10 check: passed, problems, keyed


@pytest.mark.parametrize("worst, mismatches, passed", [
    (0.0, [], True), (1e-6, [], True), (2e-6, [], False), (0.0, ["beta1"], False), (2e-6, ["beta1"], False)],
    ids=["equal", "at the tolerance", "past it", "a mismatch", "both"])
def test_passed_is_within_the_tolerance_and_without_mismatches(worst, mismatches, passed):
    outputs = {"uninterrupted": [[0.0]], "restored": [[worst]]}
    base = {"logprobs_after_second_step": outputs, "optimizer_check_after_restore": {**AFTER, "mismatches": mismatches}}
    wrong = ("invalid", f"passed {not passed!r} is not what its outputs and optimizer check give")
    assert not any(p.startswith("passed") for _, p in _problems_of({**base, "passed": passed}))
    assert wrong in _problems_of({**base, "passed": not passed})


@pytest.mark.parametrize("problems", [["a"], ["z"], []])
def test_the_checks_problems_are_exactly_its_optimizer_checks_mismatches(problems):
    found = _problems_of({"problems": problems, "optimizer_check_after_restore": {**AFTER, "mismatches": ["m"]}})
    assert ("invalid", "problems are not its optimizer check's mismatches") in found
    same = _problems_of({"problems": ["m"], "optimizer_check_after_restore": {**AFTER, "mismatches": ["m"]}})
    assert ("invalid", "problems are not its optimizer check's mismatches") not in same


def test_a_check_filed_under_a_key_is_labelled_by_that_key_even_when_its_label_is_another_arm():
    ctx = _ctx({}, spec=_group("T", "B"), files={"restoration-update-check.json": {"T": {"label": "B"}}})
    messages = [i.message for i in rules.REST_10_check(ctx)]
    assert "create-save-restore check T: label 'B' is not a restoration arm (nor its key)" in messages


# ---------------------------------------------------------------- REST-6: the run's restoration response file

A, C = "8" * 64, "c" * 64
RUN_SPEC = {"lora_rank": 8, "restoration_preflight": {"groups": [{"arms": [
    {"name": "T", "optimizer": "adamw", "optimizer_config": {"learning_rate": 0.01}}]}]}}
OWN_RESTORE = {"evidence_ref": "run-T.json", "loaded_from": "tinker://init", "method": "load_state",
               "at": "2026-12-03T10:00:00Z", "client": "client-T", "loaded_path": "tinker://init"}


def _entry(init=None, restores=None):
    return {"initialization": {"checkpoint_uri": "tinker://init", "evidence_ref": "run-T.json", "adapter_sha256": A,
                               "checkpoint_adapter_sha256": C, "base_checkpoint": "org/base",
                               "load_response": {"path": "tinker://init"}, **(init or {})},
            "restores": [OWN_RESTORE] if restores is None else restores}


def _data(info=None, weights=None, **changes):
    get_info = {"type": "get_info", "model_id": "client-T", "model_name": "org/base",
                "model_data": {"model_name": "org/base"}, "is_lora": True, "lora_rank": 8,
                "optimizer_config": {"adapter_sha256": A, "optimizer_step": 0}, **(info or {})}
    checkpoint = {"base_model": "org/base", "is_lora": True, "lora_rank": 8,
                  "optimizer_config": {"type": "adamw", "learning_rate": 0.01, "adapter_sha256": C}, **(weights or {})}
    data = {"loaded_from": "tinker://init", "load_method": "load_state", "loaded_at": "2026-12-03T10:00:00Z",
            "get_info_after_creation": get_info, "load_response": {"path": "tinker://init"},
            "checkpoint_weights_info": checkpoint, "initial_output_logprobs": [[-0.5]], **changes}
    return {k: v for k, v in data.items() if v is not None}


def _response(data, entry=None, spec=RUN_SPEC, plan="default", infos=None):
    plan = _plan(arms=("T",)) if plan == "default" else plan
    ctx = _ctx({"T": entry or _entry()}, plan=plan, spec=spec)
    return rules._response_problems(ctx, "T", entry or _entry(), data, infos or {})


INFO = "its get_info after creation reports another {} than the arm's client, the spec's model and its initialization"
WEIGHTS = ("its initialization checkpoint's weights info reports another {} than the spec's model, the requested rank "
           "and optimizer, and the checkpoint's adapter hash before any update")


def test_a_response_file_that_is_the_arms_its_restores_and_the_specs_has_no_problem():
    assert _response(_data()) == []
    assert _response(_data(), plan=None) == []  # the model is the initialization's base checkpoint


def test_a_response_file_holds_every_field_of_the_runs_file():
    assert _response(_data(initial_output_logprobs=None)) == [("unverified", "it holds no initial_output_logprobs")]
    assert _response(_data(get_info_after_creation=None)) == [("unverified", "it holds no get_info_after_creation")]


@pytest.mark.parametrize("loaded", ["tinker://a", "tinker://z"])
def test_the_load_is_of_the_initialization_checkpoint_and_its_restores(loaded):
    assert _response(_data(loaded_from=loaded)) == [
        ("invalid", f"loaded_from '{loaded}' is not the initialization checkpoint"),
        ("invalid", f"loaded_from '{loaded}' is not its restore's loaded_from ('tinker://init')")]


@pytest.mark.parametrize("key, field, value", [("load_method", "method", "a_method"), ("load_method", "method", "z_method"),
                                               ("loaded_at", "at", "2026-12-03T09:00:00Z"),
                                               ("loaded_at", "at", "2026-12-03T11:00:00Z")])
def test_the_load_method_and_time_are_the_restores(key, field, value):
    assert _response(_data(**{key: value})) == [
        ("invalid", f"{key} {value!r} is not its restore's {field} ({OWN_RESTORE[field]!r})")]


def test_the_restore_compared_is_the_one_whose_evidence_is_the_file():
    others = [{**OWN_RESTORE, "evidence_ref": ref, "method": "create_training_client_from_state", "client": "client-X",
               "loaded_from": "tinker://x", "at": "2026-12-01T00:00:00Z", "loaded_path": "tinker://x"}
              for ref in ("a.json", "z.json")]
    assert _response(_data(), entry=_entry(restores=[*others, OWN_RESTORE])) == []
    assert _response(_data(model_id=None), entry=_entry(restores=others)) == []  # no restore of it: nothing to compare
    assert _response(_data(info={"model_id": "client-Q"}), entry=_entry(restores=others)) == []


def test_the_load_response_is_the_initializations_and_names_the_restores_path():
    assert _response(_data(load_response={"path": "tinker://other"})) == [
        ("invalid", "load_response is not the initialization's load response"),
        ("invalid", "its restore's loaded_path is not the path the load response names")]
    for path in ("tinker://a", "tinker://z"):
        assert _response(_data(), entry=_entry(restores=[{**OWN_RESTORE, "loaded_path": path}])) == [
            ("invalid", "its restore's loaded_path is not the path the load response names")]


@pytest.mark.parametrize("changes, wrong", [
    ({"type": "a_info"}, "type"), ({"type": "z_info"}, "type"),
    ({"model_id": "client-A"}, "model_id"), ({"model_id": "client-Z"}, "model_id"),
    ({"model_name": "org/a"}, "model_name"), ({"model_name": "org/z"}, "model_name"),
    ({"model_data": {"model_name": "org/a"}}, "model_data.model_name"),
    ({"model_data": {"model_name": "org/z"}}, "model_data.model_name"),
    ({"is_lora": "true"}, "is_lora"), ({"lora_rank": 16}, "lora_rank"),
    ({"optimizer_config": {"adapter_sha256": "0" * 64}}, "adapter_sha256"),
    ({"optimizer_config": {"adapter_sha256": "f" * 64}}, "adapter_sha256"),
    ({"optimizer_config": {"adapter_sha256": None}}, "adapter_sha256"),
    ({"optimizer_config": {"adapter_sha256": A, "optimizer_step": 1}}, "optimizer_step 1"),
])
def test_each_field_of_the_get_info_after_creation(changes, wrong):
    assert _response(_data(info=changes)) == [("invalid", INFO.format(wrong))]


def test_the_adapter_hash_of_an_initialization_that_names_none():
    entry = _entry(init={"adapter_sha256": None})
    assert _response(_data(info={"optimizer_config": {"adapter_sha256": None}}), entry=entry) == []
    assert _response(_data(info={"optimizer_config": {"adapter_sha256": A}}), entry=entry) == [
        ("invalid", INFO.format("adapter_sha256"))]


def test_the_rank_is_the_arms_else_the_specs_and_any_without_one():
    no_rank = {k: v for k, v in RUN_SPEC.items() if k != "lora_rank"}
    assert _response(_data(info={"lora_rank": 16}, weights={"lora_rank": 16}), spec=no_rank) == []
    assert _response(_data(info={"lora_rank": 16}, weights={"lora_rank": 16})) == [
        ("invalid", INFO.format("lora_rank")), ("invalid", WEIGHTS.format("lora_rank"))]


def test_the_model_is_the_plans_base_model_before_the_initializations():
    entry = _entry(init={"base_checkpoint": "org/other"})
    assert _response(_data(), entry=entry) == []
    assert _response(_data(), entry=entry, plan=None) == [
        ("invalid", INFO.format("model_name, model_data.model_name")), ("invalid", WEIGHTS.format("base_model"))]


def test_the_server_state_the_checkpoint_reports_is_reported_after_creation_too():
    weights = {"optimizer_config": {"type": "adamw", "learning_rate": 0.01, "adapter_sha256": C, "optimizer_step": 0}}
    assert _response(_data(info={"optimizer_config": {"adapter_sha256": A}}, weights=weights)) == [
        ("invalid", INFO.format("optimizer_step"))]


def test_a_file_without_the_checkpoints_weights_info_is_missing_only_that():
    assert _response(_data(checkpoint_weights_info=None)) == [("unverified", "it holds no checkpoint_weights_info")]


@pytest.mark.parametrize("changes, wrong", [
    ({"base_model": "org/a"}, "base_model"), ({"base_model": "org/z"}, "base_model"), ({"is_lora": 1}, "is_lora"),
    ({"lora_rank": 4}, "lora_rank"),
    ({"optimizer_config": {"type": "adamw", "learning_rate": 0.01, "adapter_sha256": A}}, "adapter_sha256"),
    ({"optimizer_config": {"type": "adamw", "learning_rate": 0.02, "adapter_sha256": C}}, "optimizer"),
    ({"optimizer_config": {"type": "sgd", "learning_rate": 0.01, "adapter_sha256": C}}, "optimizer"),
    ({"optimizer_config": {"type": "adagrad", "learning_rate": 0.01, "adapter_sha256": C}}, "optimizer"),
    ({"optimizer_config": {"family": "sgd", "learning_rate": 0.01, "adapter_sha256": C}}, "optimizer"),
    ({"optimizer_config": {"type": "adamw", "learning_rate": 0.01, "adapter_sha256": C, "last_optim_params": {}}},
     "last_optim_params"),
])
def test_each_field_of_the_initialization_checkpoints_weights_info(changes, wrong):
    info = {"optimizer_config": {"adapter_sha256": A, "optimizer_step": 0, "last_optim_params": None}}
    assert _response(_data(info=info, weights=changes)) == [("invalid", WEIGHTS.format(wrong))]


def test_the_checkpoint_optimizer_may_state_settings_no_request_names_and_any_without_a_request():
    weights = {"optimizer_config": {"type": "adamw", "learning_rate": 0.01, "beta1": 0.9, "adapter_sha256": C}}
    assert _response(_data(weights=weights)) == []
    other = {"optimizer_config": {"type": "sgd", "learning_rate": 0.5, "adapter_sha256": C}}
    assert _response(_data(weights=other), spec={"lora_rank": 8}, plan=None) == []  # no restoration arm requests one


def test_the_checkpoint_weights_info_is_what_every_arm_loading_the_checkpoint_retained():
    same = _data()["checkpoint_weights_info"]
    assert _response(_data(), infos={"tinker://init": [same, same]}) == []
    assert _response(_data(), infos={"tinker://init": [same, {**same, "lora_rank": 4}]}) == [
        ("invalid", "its initialization checkpoint's weights info is not what the other arms loading that checkpoint "
                    "retained")]


def test_the_response_rule_reads_each_arms_run_file_and_compares_their_models():
    spec = {"lora_rank": 8, "restoration_preflight": {"groups": [{"arms": [
        {"name": arm, "optimizer": "adamw", "optimizer_config": {"learning_rate": 0.01}} for arm in ("T", "B")]}]}}
    entry_b = _entry(init={"evidence_ref": "run-B.json"}, restores=[{**OWN_RESTORE, "evidence_ref": "run-B.json"}])
    files = {"run-T.json": _data(), "run-B.json": _data(), "notes.json": {"text": 1}}
    ctx = _ctx({"T": _entry(), "B": entry_b, "X": _entry(init={"evidence_ref": "notes.json"}),
                "Y": _entry(init={"evidence_ref": "gone.json"})}, plan=_plan(arms=("T", "B")), spec=spec, files=files)
    assert rules.REST_6_response(ctx) == []
    files["run-B.json"] = _data(info={"model_data": {"model_name": "org/base", "revision": 2}})
    assert _found(rules.REST_6_response(ctx)) == [
        ("invalid", "the arms' get_info responses describe different models (model_data of B, T)")]
    files["run-B.json"] = _data(load_method="a_method")
    assert _found(rules.REST_6_response(ctx)) == [
        ("invalid", "arm B: run-B.json: load_method 'a_method' is not its restore's method ('load_state')")]
    files["run-B.json"] = _data(weights={"lora_rank": 4})
    other = "its initialization checkpoint's weights info is not what the other arms loading that checkpoint retained"
    assert _found(rules.REST_6_response(ctx)) == [
        ("invalid", f"arm T: run-T.json: {other}"), ("invalid", f"arm B: run-B.json: {WEIGHTS.format('lora_rank')}"),
        ("invalid", f"arm B: run-B.json: {other}")]


def test_an_arm_file_without_weights_info_or_an_arm_without_a_checkpoint_joins_no_comparison():
    spec = {"lora_rank": 8, "restoration_preflight": {"groups": [{"arms": [
        {"name": arm, "optimizer": "adamw", "optimizer_config": {"learning_rate": 0.01}} for arm in ("T", "B")]}]}}
    entry_b = _entry(init={"evidence_ref": "run-B.json"}, restores=[{**OWN_RESTORE, "evidence_ref": "run-B.json"}])
    files = {"run-T.json": _data(checkpoint_weights_info=None), "run-B.json": _data()}
    ctx = _ctx({"T": _entry(), "B": entry_b}, plan=_plan(arms=("T", "B")), spec=spec, files=files)
    assert _found(rules.REST_6_response(ctx)) == [("unverified", "arm T: run-T.json: it holds no checkpoint_weights_info")]
    # two arms naming no checkpoint: their weights infos are not one checkpoint's, whatever they say
    unnamed = {"checkpoint_uri": None, "load_response": None}
    entry_t = _entry(init=unnamed, restores=[])
    entry_b = _entry(init={**unnamed, "evidence_ref": "run-B.json"}, restores=[])
    files = {"run-T.json": _data(loaded_from=None, load_response=None),
             "run-B.json": _data(loaded_from=None, load_response=None, weights={"lora_rank": 4})}
    ctx = _ctx({"T": entry_t, "B": entry_b}, plan=_plan(arms=("T", "B")), spec=spec, files=files)
    assert not any("other arms" in i.message for i in rules.REST_6_response(ctx))


@pytest.mark.parametrize("setting", ["weight_decay", "grad_clip_norm"])
def test_an_update_stating_an_unrequested_setting_at_the_sdks_default_of_zero_is_the_requested_optimizers(setting):
    # the spec's optimizer states no weight decay or clipping: the run's params leave both at the SDK's 0.0
    check = {"optimizer_check_after_restore": AFTER, "update": {"learning_rate": 0.01, setting: 0.0}}
    assert not any(p.startswith("the update it took") for _, p in _problems_of(check))
    check = {"optimizer_check_after_restore": AFTER, "update": {"learning_rate": 0.01, setting: 1.0}}
    assert ("invalid", f"the update it took ({setting}) is not the requested optimizer's") in _problems_of(check)


@pytest.mark.parametrize("setting, default", [("beta2", 0.95), ("eps", 1e-12)])
def test_an_adamw_update_at_the_sdks_own_beta2_and_eps_is_the_requested_optimizers(setting, default):
    # an AdamW arm that states no beta2 or eps (the three-optimizer SFT spec's AdamW) steps with tinker AdamParams'
    # defaults; any other value it did not ask for is still not the requested optimizer's
    check = {"optimizer_check_after_restore": AFTER, "update": {"learning_rate": 0.01, setting: default}}
    assert not any(p.startswith("the update it took") for _, p in _problems_of(check))
    check = {"optimizer_check_after_restore": AFTER, "update": {"learning_rate": 0.01, setting: 0.5}}
    assert ("invalid", f"the update it took ({setting}) is not the requested optimizer's") in _problems_of(check)


def test_a_muon_update_carrying_adams_defaults_it_never_asked_for_is_not_the_requested_optimizers():
    dimuon = {**AFTER, "actual_family": "dimuon", "requested": {"family": "dimuon", "learning_rate": 0.01}}
    check = {"optimizer_check_after_restore": dimuon, "update": {"learning_rate": 0.01, "beta2": 0.95}}
    assert ("invalid", "the update it took (beta2) is not the requested optimizer's") in _problems_of(check)
