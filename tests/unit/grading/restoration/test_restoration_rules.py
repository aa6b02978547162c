"""The grader's restoration rules (experiment/grading/restoration.py; docs/contract-rules.md REST-1..REST-5),
each on a minimal grading context whose expected finding is worked out in the test from the contract's text
(issue 28 item 7: the complete mutation run of experiment/grading/)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from grading_contexts.restoration import (
    ADAPTER,
    CHECKPOINT_INITIALIZATION as CHECKPOINT,
    CREATION_INFO as RESPONSE,
    LOAD,
    NEEDS,
    NEITHER_PROVEN as NEITHER,
    WHERE10,
    EvidenceFiles as _Files,
    context as _ctx,
    initial_output as _output,
    initialization as _init,
    messages as _messages,
    optimizer_check as _check,
    restoration_plan as _plan,
    rest10_findings as _rest10,
    restore as _restore,
    restores as _restores,
    update_check as _update,
)

from experiment.grading import restoration as rules
from experiment.grading.common import equal_json

# ---------------------------------------------------------------- REST-1


def test_provenance_of_version_1_is_required():
    for record in (None, {"version": 2, "arms": {}}, {"arms": {}}):
        ctx = SimpleNamespace(result={"initialization_provenance": record}, plan=None, spec=None)
        assert _messages(rules.REST_1(ctx)) == [
            ("REST-1", "unverified", "initialization_provenance is missing or not version 1")]


def test_every_arm_of_a_group_has_evidence_and_no_frozen_arm_is_in_a_group():
    ctx = _ctx({"T": {}, "Z": {}}, plan=_plan(arms=("T", "B"), untrained=("Z",)))
    issues = [(r, s, m) for r, s, m in _messages(rules.REST_1(ctx)) if not m.startswith("arm ")]
    assert issues == [("REST-1", "unverified", "missing arm evidence for B"),
                      ("REST-1", "invalid", "frozen untrained arm(s) Z are in a restoration group")]


def test_an_lr_grids_runs_each_have_provenance_labelled_by_their_learning_rate():
    runs = [SimpleNamespace(arm="T", lr=0.01), SimpleNamespace(arm="T", lr=0.02), SimpleNamespace(arm="B", lr=0.01)]
    plan = _plan(runs=runs)
    assert rules.REST_1_runs(_ctx({"T": {"runs": {"0.02": {}, "0.01": {}}}, "B": {}}, plan=plan)) == []
    assert _messages(rules.REST_1_runs(_ctx({"T": {"runs": {"0.01": {}}}}, plan=plan))) == [
        ("REST-1", "unverified", "arm T: provenance for runs 0.01, the plan trains 0.01, 0.02")]
    assert _messages(rules.REST_1_runs(_ctx({"T": {"runs": {"0.01": {}, "0.02": {}, "0.04": {}}}}, plan=plan))) == [
        ("REST-1", "unverified", "arm T: provenance for runs 0.01, 0.02, 0.04, the plan trains 0.01, 0.02")]
    assert _messages(rules.REST_1_runs(_ctx({"T": {"runs": {"fast": {}, "slow": {}}}}, plan=plan))) == [
        ("REST-1", "unverified", "arm T: provenance for runs fast, slow, the plan trains 0.01, 0.02")]
    assert rules.REST_1_runs(_ctx({"T": {}}, plan=plan)) == []  # no per-run entries at all: REST-5 grades them


# ---------------------------------------------------------------- REST-2


def _rest2(init, plan=None):
    return [(s, m) for _, s, m in _messages(rules.REST_2(_ctx({"T": {"initialization": init}}, plan=plan)))]


@pytest.mark.parametrize("changes", [{}, {"source": "local_hash"}, CHECKPOINT], ids=["adapter", "local hash", "checkpoint"])
def test_an_initialization_proven_by_an_adapter_hash_or_a_loaded_checkpoint_passes(changes):
    assert _rest2(_init(**changes), plan=_plan()) == []


@pytest.mark.parametrize("changes", [
    {"source": "declared"}, {"adapter_sha256": "A" * 64}, {"adapter_sha256": 5},
    {**CHECKPOINT, "checkpoint_immutable": "true"}, {**CHECKPOINT, "checkpoint_scope": "adapter_only"},
    {**CHECKPOINT, "loaded_checkpoint_uri": "tinker://other"}, {**CHECKPOINT, "load_succeeded": None},
    {**CHECKPOINT, "source": "local_hash"}, {**CHECKPOINT, "checkpoint_uri": "", "loaded_checkpoint_uri": ""},
], ids=["declared", "upper-case hash", "hash not text", "not immutable", "scope", "other load", "load not true",
        "checkpoint not from the server", "no checkpoint"])
def test_an_initialization_proven_by_neither_is_unverified(changes):
    assert _rest2(_init(**changes)) == [NEITHER]


def test_the_base_checkpoint_is_named_and_is_the_specs_model():
    assert _rest2(_init(base_checkpoint=None)) == [("unverified", "arm T: initialization has no base_checkpoint")]
    assert _rest2(_init(base_checkpoint="org/other"), plan=_plan()) == [
        ("invalid", "arm T: base_checkpoint 'org/other' is not the spec's model 'org/base'")]
    assert _rest2(_init(base_checkpoint="org/other")) == []  # no plan: nothing to compare with


@pytest.mark.parametrize("changes", [{"evidence_ref": ""}, {"before_first_update": "true"}, {"before_first_update": False}])
def test_an_initialization_needs_its_evidence_and_to_be_taken_before_the_first_update(changes):
    assert _rest2(_init(**changes)) == [
        ("unverified", "arm T: initialization needs evidence_ref and before_first_update true")]


# ---------------------------------------------------------------- REST-3


def _rest3(inits, groups=(("T", "B"),)):
    spec = {"restoration_preflight": {"groups": [{"arms": [{"name": a} for a in group]} for group in groups]}}
    ctx = _ctx({arm: {"initialization": init} for arm, init in inits.items()}, spec=spec)
    return [(s, m) for _, s, m in _messages(rules.REST_3(ctx))]


def test_a_groups_arms_share_one_initialization():
    assert _rest3({"T": _init(), "B": _init()}) == []
    assert _rest3({"T": _init(), "B": _init(adapter_sha256="b" * 64)}) == [
        ("invalid", "group T/B: arms load different initial adapter_sha256s"),
        ("invalid", "arms B and T share no initialization identity")]
    uri = {"adapter_sha256": None, "checkpoint_uri": "tinker://init"}
    assert _rest3({"T": _init(**uri), "B": _init(**uri)}) == []
    assert _rest3({"T": _init(**uri), "B": _init(adapter_sha256=None, checkpoint_uri="tinker://other")}) == [
        ("invalid", "group T/B: arms load different initial checkpoints"),
        ("invalid", "arms B and T share no initialization identity")]


def test_an_arm_naming_no_initialization_where_the_others_name_one_is_unverified():
    assert _rest3({"T": _init(), "B": _init(adapter_sha256=None)}) == [
        ("unverified", "group T/B: arm(s) B name no initial adapter_sha256 where the others name one")]


def test_the_loaded_checkpoint_is_the_arms_initialization_before_the_one_it_names():
    loaded = {"adapter_sha256": None, "checkpoint_uri": "tinker://named", "loaded_checkpoint_uri": "tinker://init"}
    assert _rest3({"T": _init(**loaded), "B": _init(adapter_sha256=None, checkpoint_uri="tinker://init")}) == []


def test_arms_outside_the_group_or_without_evidence_are_not_compared():
    assert _rest3({"T": _init(), "X": _init(adapter_sha256="b" * 64)}) == []


# ---------------------------------------------------------------- REST-4


def _rest4(after_restores, restore_count, before=True):
    checks = [{"after_restore": n, "before_next_update": before} for n in after_restores]
    return [(s, m) for _, s, m in _messages(rules.REST_4(_ctx({"T": {"restore_count": restore_count,
                                                                      "optimizer_checks": checks}})))]


def test_optimizer_checks_cover_creation_and_each_restore_exactly():
    assert _rest4([0], 0) == []
    assert _rest4([1, 0], 1) == []
    assert _rest4([0, 1, 2], 1) == [
        ("unverified", "arm T: optimizer_checks cover after_restore [0, 1, 2], not creation and each of 1 restores")]
    assert _rest4([0], 1) == [
        ("unverified", "arm T: optimizer_checks cover after_restore [0], not creation and each of 1 restores")]
    assert _rest4([0], "0") == [
        ("unverified", "arm T: optimizer_checks cover after_restore [0], not creation and each of '0' restores")]
    assert _rest4(["0"], 0) == [
        ("unverified", "arm T: optimizer_checks cover after_restore [], not creation and each of 0 restores")]


def test_a_restore_count_too_large_to_count_is_a_finding_not_a_crash():
    """A restore_count of 2**64 + 1 (a tamperer's JSON integer) once raised OverflowError from range(count + 1): the
    grade ended in a traceback instead of a finding."""
    huge = 2 ** 64 + 1
    assert _rest4([0], huge) == [
        ("unverified", f"arm T: optimizer_checks cover after_restore [0], not creation and each of {huge} restores")]
    assert _rest4([0], -1) == [
        ("unverified", "arm T: optimizer_checks cover after_restore [0], not creation and each of -1 restores")]


def test_every_optimizer_check_is_taken_before_the_next_update():
    assert _rest4([0], 0, before="yes") == [("unverified", "arm T: an optimizer check is not before_next_update")]


# ---------------------------------------------------------------- REST-5


def _rest5(requested, runs=(), entry=None):
    spec = {"restoration_preflight": {"groups": [{"arms": [
        {"name": "T", "optimizer": "adam", "optimizer_config": {"learning_rate": 0.01, "beta1": 0.9}}]}]}}
    arm = entry if entry is not None else {"optimizer_checks": [{"requested": requested}]}
    ctx = _ctx({"T": arm}, plan=_plan(runs=runs), spec=spec)
    return [(s, m) for _, s, m in _messages(rules.REST_5(ctx))]


ADAMW = {"family": "adamw", "learning_rate": 0.01, "beta1": 0.9}


def test_the_requested_optimizer_is_the_specs_family_config_and_learning_rate():
    assert _rest5(ADAMW) == []
    assert _rest5({**ADAMW, "family": "adam"}) == [
        ("invalid", "arm T: requested family differ from the spec's")]  # the record names the canonical family
    assert _rest5({**ADAMW, "beta1": 0.95}) == [("invalid", "arm T: requested beta1 differ from the spec's")]
    assert _rest5({k: v for k, v in ADAMW.items() if k != "beta1"}) == [
        ("invalid", "arm T: requested beta1 differ from the spec's")]
    assert _rest5({**ADAMW, "learning_rate": 0.02}) == [
        ("invalid", "arm T: requested learning_rate 0.02 (planned 0.01) differ from the spec's")]
    assert _rest5({k: v for k, v in ADAMW.items() if k != "learning_rate"}) == [
        ("unverified", "arm T: the requested optimizer names no learning rate")]


def test_an_lr_grids_checks_request_a_planned_rate_each_run_its_own():
    runs = [SimpleNamespace(arm="T", lr=0.01), SimpleNamespace(arm="T", lr=0.02)]
    assert _rest5({**ADAMW, "learning_rate": 0.02}, runs=runs) == []
    assert _rest5({**ADAMW, "learning_rate": 0.04}, runs=runs) == [
        ("invalid", "arm T: requested learning_rate 0.04 (planned 0.01, 0.02) differ from the spec's")]
    per_run = {"runs": {"0.02": {"optimizer_checks": [{"requested": {**ADAMW, "learning_rate": 0.01}}]}}}
    assert _rest5(None, runs=runs, entry=per_run) == [
        ("invalid", "arm T run 0.02: requested learning_rate 0.01 (planned 0.02) differ from the spec's")]


def test_a_check_place_is_reported_once():
    entry = {"optimizer_checks": [{"requested": {**ADAMW, "beta1": 0.5}}, {"requested": {**ADAMW, "beta1": 0.6}}]}
    assert _rest5(None, entry=entry) == [("invalid", "arm T: requested beta1 differ from the spec's")]


# ---------------------------------------------------------------- REST-6


def _rest6(check, response=RESPONSE):
    ctx = _ctx({"T": {"optimizer_checks": [check]}})
    ctx.evidence = _Files({"info.json": response} if response is not None else {})
    return [(s, m) for _, s, m in _messages(rules.REST_6(ctx))]


WHERE = "arm T, after_restore 0"


def test_an_optimizer_read_from_the_retained_server_response_as_requested_passes():
    assert _rest6(_check()) == []


def test_an_optimizer_declared_rather_than_read_is_unverified():
    for changes in ({"source": "declared"}, {"actual_family": None}):
        assert _rest6(_check(**changes)) == [
            ("unverified", f"{WHERE}: the optimizer is declared, not read from a server response")]


def test_the_reported_family_is_the_requested_one():
    assert _rest6(_check(actual_family="sgd")) == [
        ("invalid", f"{WHERE}: the server reports family 'sgd', requested 'adamw'")]


def test_actual_settings_are_what_the_retained_response_says_and_what_was_requested():
    assert ("invalid", f"{WHERE}: actual beta1 are not what the retained server response says") in _rest6(
        _check(actual_config={"learning_rate": 0.01, "beta1": 0.95, "lora_rank": 8}))
    moved = {"get_info_after_creation": {"optimizer_config": {"type": "adamw", "learning_rate": 0.02, "beta1": 0.9},
                                         "lora_rank": 8}}
    assert ("invalid", f"{WHERE}: the server reports other learning_rate than requested") in _rest6(
        _check(actual_config={"learning_rate": 0.02, "beta1": 0.9, "lora_rank": 8}), moved)
    assert _rest6(_check(actual_config={"learning_rate": 0.01, "lora_rank": 8}),
                  {"optimizer": {"learning_rate": 0.01}}) == [
        ("unverified", f"{WHERE}: the server response does not expose beta1, so the optimizer config stays unverified")]


def test_an_evidence_ref_without_a_server_response_is_unverified():
    assert _rest6(_check(), response={"notes": "none"}) == [
        ("unverified", f"{WHERE}: info.json holds no server response with the optimizer")]
    assert ("unverified", f"{WHERE}: no evidence_ref for the server response") in _rest6(_check(evidence_ref=""))


@pytest.mark.parametrize("value, found", [
    ({"get_info": {"optimizer_config": {"lr": 1}}, "optimizer": {"lr": 2}}, {"lr": 1}),
    ({"get_info_after_creation": {"optimizer": {"lr": 3}}, "get_info": {"optimizer_config": {"lr": 1}}}, {"lr": 3}),
    ({"optimizer_config": {"lr": 4}, "optimizer": {"lr": 5}}, {"lr": 4}),
    ({"a": [{"b": {"optimizer": {"lr": 6}}}]}, {"lr": 6}),
    ([{"x": 1}, {"optimizer_config": {"lr": 7}}], {"lr": 7}),
    ({"get_info": "text", "a": 1}, None),
])
def test_the_server_optimizer_is_the_response_after_creation_else_the_first_config_the_file_holds(value, found):
    assert rules.server_optimizer(value) == found


def test_the_retained_response_reports_the_family_and_every_actual_setting_as_the_check_says():
    assert ("invalid", f"{WHERE}: the retained response reports family 'sgd', the check says 'adamw'") in _rest6(
        _check(), {"get_info_after_creation": {"optimizer_config": {"type": "sgd", "learning_rate": 0.01, "beta1": 0.9},
                                               "lora_rank": 8}})
    assert ("unverified", f"{WHERE}: actual eps are not in the retained response") in _rest6(
        _check(actual_config={"learning_rate": 0.01, "beta1": 0.9, "lora_rank": 8, "eps": 1e-8}))
    assert ("unverified", f"{WHERE}: actual_config leaves out lora_rank, which the retained response reports") in _rest6(
        _check(actual_config={"learning_rate": 0.01, "beta1": 0.9}))
    seeded = {"get_info": {"optimizer_config": {"type": "adamw", "learning_rate": 0.01, "beta1": 0.9, "seed": 2},
                           "lora_rank": 8}}
    check = _check(requested={"family": "adamw", "learning_rate": 0.01, "beta1": 0.9, "seed": 1})
    assert ("invalid", f"{WHERE}: the retained response reports another seed") in _rest6(check, seeded)


def test_numbers_are_the_same_setting_whatever_their_json_type():
    assert equal_json(1, 1.0) and equal_json("a", "a")  # the settings compare (REST-5, REST-6) uses it
    assert not equal_json(1, 1.5) and not equal_json("1", 1) and not equal_json(False, 0)


# ---------------------------------------------------------------- REST-7, REST-3 checkpoint, REST-8, REST-9


def _rest7(outputs, spec=None, files=None):
    ctx = _ctx({arm: {"initial_output": out} for arm, out in outputs.items()}, spec=spec)
    ctx.evidence = _Files(files or {})
    return [(s, m) for _, s, m in _messages(rules.REST_7(ctx))]


def test_an_available_initial_output_names_its_batch_output_evidence_and_precedes_the_first_update():
    assert _rest7({"T": _output()}) == []
    for changes in ({"batch_sha256": "B" * 64}, {"output_sha256": None}, {"evidence_ref": ""},
                    {"before_first_update": "true"}):
        assert _rest7({"T": _output(**changes)}) == [
            ("unverified", "arm T: initial_output needs batch_sha256, output_sha256, evidence_ref and before_first_update "
                           "true")]


def test_an_output_not_captured_needs_a_reason_unless_the_spec_requires_a_fixed_batch():
    assert _rest7({"T": {"available": False, "reason": "sampling not supported"}}) == []
    assert _rest7({"T": {"available": False}}) == [("unverified", "arm T: initial output not captured")]
    spec = {"restoration_preflight": {"fixed_batch_required": True}}
    assert _rest7({"T": {"available": False, "reason": "skipped"}}, spec=spec) == [
        ("unverified", "arm T: initial output not captured although the spec requires a fixed batch")]


def test_a_groups_initial_outputs_agree():
    spec = {"restoration_preflight": {"groups": [{"arms": [{"name": "T"}, {"name": "B"}]}]}}
    assert _rest7({"T": _output(), "B": _output()}, spec=spec) == []
    assert _rest7({"T": _output(), "B": _output(output_sha256="d" * 64)}, spec=spec) == [
        ("invalid", "group T/B: initial outputs differ (output_sha256)")]


def test_the_output_hash_is_the_hash_of_the_retained_logprobs():
    import hashlib

    import numpy as np

    logprobs = [[-0.5, -1.25], [-2.0]]
    digest = hashlib.sha256()  # per datum: its length as int64 LE, then its values as float32 LE
    for values in logprobs:
        digest.update(np.int64(len(values)).astype("<i8").tobytes())
        digest.update(np.asarray(values, dtype="<f4").tobytes())
    files = {"out.json": {"initial_output_logprobs": logprobs}}
    assert _rest7({"T": _output(output_sha256=digest.hexdigest())}, files=files) == []
    assert _rest7({"T": _output()}, files=files) == [
        ("invalid", "arm T: output_sha256 is not the hash of the logprobs retained in out.json")]
    assert _rest7({"T": _output()}, files={"out.json": {"initial_output_logprobs": [["x"]]}}) == [
        ("invalid", "arm T: output_sha256 is not the hash of the logprobs retained in out.json")]


def test_a_retained_fixed_batch_is_the_batch_every_available_output_names():
    import hashlib
    import json

    batch = {"tokens": [1, 2]}
    digest = hashlib.sha256(json.dumps(batch, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                                       allow_nan=False).encode()).hexdigest()
    ctx = _ctx({"T": {"initial_output": _output(batch_sha256=digest)}, "B": {"initial_output": _output()},
                "Z": {"initial_output": {"available": False}}})
    ctx.evidence = _Files({"restoration-fixed-batch.json": batch})
    assert _messages(rules.REST_7_fixed_batch(ctx)) == [
        ("REST-7", "invalid", "arm B: batch_sha256 is not the hash of the retained restoration-fixed-batch.json")]
    ctx.evidence = _Files({})
    assert rules.REST_7_fixed_batch(ctx) == []


def test_a_checkpoint_adapter_hash_is_the_arms_and_the_retained_responses():
    def rest3(init, response):
        ctx = _ctx({"T": {"initialization": init}})
        ctx.evidence = _Files({"info.json": response})
        return _messages(rules.REST_3_checkpoint(ctx))

    init = {"adapter_sha256": ADAPTER, "checkpoint_adapter_sha256": ADAPTER, "evidence_ref": "info.json"}
    said = {"checkpoint_weights_info": {"optimizer_config": {"adapter_sha256": ADAPTER}}}
    assert rest3(init, said) == [] and rest3(init, {}) == []
    wrong = [("REST-3", "invalid", "arm T: checkpoint_adapter_sha256 is not the arm's adapter hash and the one the "
                                   "retained checkpoint response reports")]
    assert rest3({**init, "adapter_sha256": "b" * 64}, said) == wrong
    assert rest3(init, {"checkpoint_weights_info": {"optimizer_config": {"adapter_sha256": "b" * 64}}}) == wrong
    assert rest3({"adapter_sha256": ADAPTER}, said) == []  # names no checkpoint hash


def test_every_evidence_ref_of_the_provenance_is_retained():
    ctx = _ctx({"T": {"initialization": {"evidence_ref": "a.json"}, "optimizer_checks": [{"evidence_ref": "c.json"}],
                      "label": {"evidence_ref": 5}}})
    ctx.evidence = _Files({"a.json": {}})
    assert _messages(rules.REST_8(ctx)) == [("REST-8", "unverified", "evidence_ref 'c.json': c.json is not retained")]


@pytest.mark.parametrize("features, restored, flagged", [
    ({"checkpoint_restore": True, "paired_training_arms": False}, 1, False),
    ({"checkpoint_restore": True, "paired_training_arms": False}, 0, True),
    ({"checkpoint_restore": True, "paired_training_arms": False}, "1", True),
    ({"checkpoint_restore": True, "paired_training_arms": True}, 1, True),
    ({"checkpoint_restore": "true", "paired_training_arms": False}, 1, True),
    ({"checkpoint_restore": True}, 1, True),
])
def test_an_arm_alone_in_its_group_needs_checkpoint_restore_unpaired_arms_and_a_restore(features, restored, flagged):
    spec = {"experiment_features": features, "restoration_preflight": {"groups": [{"arms": [{"name": "T"}]}]}}
    ctx = _ctx({"T": {"restore_count": restored}}, spec=spec)
    expected = [("REST-9", "unverified", "arm T forms a group alone without checkpoint_restore, unpaired arms and an "
                                         "actual restore")]
    assert _messages(rules.REST_9(ctx)) == (expected if flagged else [])
    spec["restoration_preflight"]["groups"] = [{"arms": [{"name": "T"}, {"name": "B"}]}]
    assert rules.REST_9(_ctx({"T": {"restore_count": restored}}, spec=spec)) == []


# ---------------------------------------------------------------- REST-4: restores from the load evidence


def test_restore_count_is_the_number_of_recorded_loads_each_proven_by_its_evidence():
    assert _restores({"restore_count": 1, "restores": [_restore()]}) == []
    assert _restores({"restore_count": 0, "restores": []}) == []
    assert _restores({"restore_count": 2, "restores": [_restore()]}) == [
        ("invalid", "arm T: restore_count 2 but 1 restores are recorded")]
    assert _restores({"restore_count": 0, "restores": [_restore()]}) == [
        ("invalid", "arm T: restore_count 0 but 1 restores are recorded")]


def test_a_count_without_restores_or_a_saved_initialization_without_a_restore():
    assert _restores({"restore_count": 1}) == [("unverified", "arm T: restore_count 1 without load evidence (no restores)")]
    assert _restores({"restore_count": 0}) == []
    created = {"restore_count": 0, "initialization": {"checkpoint_uri": "tinker://init"}}
    assert _restores(created) == [("invalid", "arm T: created from saved state 'tinker://init' but records no restore "
                                              "(restore_count 0, no restores)")]
    assert _restores({**created, "restore_count": 1, "restores": [_restore()]}) == [
        ("invalid", "arm T: created from saved state 'tinker://init' but no restore loads it")]
    loaded = {**created, "restore_count": 1, "restores": [_restore(loaded_from="tinker://init")]}
    files = {"load1.json": {**LOAD, "load_response": {"path": "tinker://init"}}}
    assert _restores(loaded, files) == []


@pytest.mark.parametrize("changes", [{"restore": 2}, {"method": "reload"}, {"client": ""}, {"loaded_from": None},
                                     {"at": "yesterday"}, {"at": "2026-12-03"}, {"evidence_ref": ""}])
def test_each_restore_names_its_number_client_checkpoint_method_time_and_evidence(changes):
    assert _restores({"restore_count": 1, "restores": [_restore(**changes)]}) == [("unverified", NEEDS)]


def test_a_restores_evidence_is_retained_its_own_and_agrees_with_it():
    entry = {"restore_count": 1, "restores": [_restore()]}
    assert _restores(entry, files={}) == [("unverified", "arm T, restore 1: evidence_ref 'load1.json': load1.json is not "
                                                         "retained")]
    assert _restores(entry, files={"load1.json": {**LOAD, "load_method": "create_training_client_from_state"}}) == [
        ("invalid", "arm T, restore 1: the evidence loaded by 'create_training_client_from_state', the restore says "
                    "load_state")]
    assert _restores(entry, files={"load1.json": {**LOAD, "get_info_after_restore": {"model_id": "client-B"}}}) == [
        ("invalid", "arm T, restore 1: the evidence's get_info names client 'client-B', the restore says 'client-T'")]
    assert _restores(entry, files={"load1.json": {**LOAD, "get_info_after_restore": {"lora_rank": 8}}}) == [
        ("unverified", "arm T, restore 1: the evidence's get_info names no client")]
    assert _restores(entry, files={"load1.json": {**LOAD, "load_response": {"path": "tinker://other"}}}) == [
        ("invalid", "arm T, restore 1: the evidence loaded 'tinker://other', the restore says 'tinker://ckpt'")]
    other_arm = {"B": {"initialization": {"evidence_ref": "load1.json"}}}
    assert ("invalid", "arm T, restore 1: evidence_ref 'load1.json' is another arm's evidence") in _restores(
        entry, arms=other_arm)


@pytest.mark.parametrize("method, with_state, flagged", [
    ("create_training_client_from_state_with_optimizer", True, False), ("load_state", False, False),
    ("create_training_client_from_state", True, True), ("load_state", None, True)])
def test_with_optimizer_state_is_true_exactly_for_the_load_with_optimizer(method, with_state, flagged):
    files = {"load1.json": {**LOAD, "load_method": method}}
    issues = _restores({"restore_count": 1, "restores": [_restore(method=method, with_optimizer_state=with_state)]}, files)
    expected = [("invalid", f"arm T, restore 1: with_optimizer_state {with_state!r} but loaded by {method}")]
    assert issues == (expected if flagged else [])


@pytest.mark.parametrize("value, is_time", [("2026-12-03T10:00:00Z", True), ("2026-12-03T10:00:00+01:00", True),
                                            ("2026-12-03", False), ("10:00", False), (None, False), ("soon", False)])
def test_a_restore_time_is_an_iso_date_and_time(value, is_time):
    assert rules.is_time(value) is is_time


# ---------------------------------------------------------------- REST-10: the create-save-restore update


@pytest.mark.parametrize("a, b, worst", [
    ([[0.5, -1.0], [2.0]], [[0.25, -1.0], [2.5]], 0.5), ([[1.0]], [[1.0]], 0.0), ([[1.0]], [[1.0], [2.0]], None),
    ([], [], None), ([[1.0, 2.0]], [[1.0]], None), ([[1.0]], [["1.0"]], None), ([[3.0]], [[1.0]], 2.0)])
def test_the_largest_difference_between_two_clients_logprobs(a, b, worst):
    assert rules.max_difference(a, b) == worst


def test_update_checks_are_one_check_or_one_per_label():
    one = {"label": "adamw", "max_abs_difference": 0.0}
    assert rules.update_checks(one) == {"adamw": one}
    assert rules.update_checks({"T": one, "B": {"x": 1}}) == {"T": one, "B": {"x": 1}}


def test_a_restored_client_reproduces_the_uninterrupted_update_within_the_fixed_tolerance():
    assert _rest10(_update()) == []
    far = _update(logprobs_after_second_step={"uninterrupted": [[-0.5]], "restored": [[-0.5 + 2e-6]]},
                  max_abs_difference=2e-6)
    assert [m for _, m in _rest10(far)] == [f"{WHERE10}: the restored client's update differs from the uninterrupted one "
                                            f"by {abs((-0.5 + 2e-6) - (-0.5)):.3g} > 1e-06"]
    assert _rest10(_update(max_abs_difference=0.0)) == [
        ("invalid", f"{WHERE10}: recorded max_abs_difference 0.0 is not the recomputed {abs((-1.0 + 4e-7) - (-1.0))!r}")]
    assert _rest10(_update(logprobs_after_second_step={})) == [
        ("unverified", f"{WHERE10}: the two clients' outputs are not retained, so the difference cannot be recomputed")]


@pytest.mark.parametrize("changes", [{"steps_before_save": 0}, {"steps_before_save": "1"},
                                     {"optimizer_state_restored": "yes"}, {"restored_from": ""},
                                     {"restored_from": "tinker://saved"}])
def test_the_restore_is_of_state_saved_after_an_optimizer_step_with_its_optimizer_state(changes):
    assert _rest10(_update(**changes)) == [
        ("invalid", f"{WHERE10}: not a restore of state saved after an optimizer step with its optimizer state")]


def test_two_named_clients_and_a_verified_restored_optimizer():
    for clients in ({"restored": "client-U", "uninterrupted": "client-U"}, {"uninterrupted": "client-U"}):
        assert _rest10(_update(clients=clients)) == [
            ("unverified", f"{WHERE10}: the restored and the uninterrupted client are not two named clients")]
    declared = {"source": "declared", "requested": {"family": "adamw"}}
    assert _rest10(_update(optimizer_check_after_restore=declared)) == [
        ("unverified", f"{WHERE10}: the restored optimizer is not verified from a server response")]
    mismatched = {"source": "server_response", "requested": {"family": "adamw"}, "mismatches": ["beta1"]}
    assert _rest10(_update(optimizer_check_after_restore=mismatched)) == [
        ("invalid", f"{WHERE10}: the restored optimizer is not verified from a server response")]


def test_one_check_per_optimizer_family_of_the_groups_and_a_retained_check_at_all():
    assert _rest10(_update(), spec_family="sgd") == [
        ("unverified", "no create-save-restore check for optimizer family sgd")]
    assert _rest10(None) == [("unverified", "no create-save-restore check retained (restoration-update-check.json: "
                                            "restoration-update-check.json is not retained)")]


# ---------------------------------------------------------------- REST-2 seed, a fresh optimizer, the grade


def _seed_ctx(init, files=None):
    plan = _plan()
    plan.replicas = [SimpleNamespace(label="T", arm="T", seed=0, trained=True),
                     SimpleNamespace(label="T-seed1", arm="T", seed=1, trained=True)]
    ctx = _ctx({"T-seed1": {"initialization": init}}, plan=plan)
    ctx.evidence = _Files(files or {})
    return [(s, m) for _, s, m in _messages(rules.REST_2_seed(ctx))]


def test_a_replicas_init_seed_is_the_seed_it_is_scheduled_at():
    assert _seed_ctx({"init_seed": 1}) == []
    assert _seed_ctx({"init_seed": None}) == []  # the service took no seed
    for seed in (0, 2):
        assert _seed_ctx({"init_seed": seed}) == [
            ("invalid", f"arm T-seed1: init_seed {seed} is not the seed it is scheduled at (1)")]


def test_a_run_file_of_an_initialization_that_does_not_say_its_seed_is_unverified():
    files = {"load.json": {"loaded_from": "tinker://init"}}
    assert _seed_ctx({"evidence_ref": "load.json"}, files) == [
        ("unverified", "arm T-seed1: the initialization does not say which seed the service took (init_seed, null where "
                       "it took none)")]
    assert _seed_ctx({"evidence_ref": "load.json", "init_seed": None}, files) == []
    assert _seed_ctx({"evidence_ref": "other.json"}, {"other.json": {"notes": 1}}) == []  # not the run's file


@pytest.mark.parametrize("optimizer, wrong", [
    ({"optimizer_step": 0, "last_optim_params": None}, []), ({}, []),
    ({"optimizer_step": 1}, ["optimizer_step 1"]), ({"optimizer_step": -1}, ["optimizer_step -1"]),
    ({"last_optim_params": {"lr": 0.1}}, ["last_optim_params"]),
])
def test_an_optimizer_before_any_update_is_at_step_0_with_no_last_params(optimizer, wrong):
    assert rules.fresh_optimizer_problems(optimizer) == wrong


def test_the_restoration_grade_without_a_spec_a_gate_or_provenance():
    def graded(spec, applicable, result):
        ctx = SimpleNamespace(spec=spec, result=result, trained=bool(result.get("completed_arms")),
                              gate_applicable=lambda name: applicable, gate_reason=lambda name: "stock arms only")
        grade = rules.grade(ctx)
        return grade.status, [(i.rule, i.status, i.message) for i in grade.issues], grade.notes

    assert graded(None, True, {})[:2] == ("unknown", [("REST-1", "unknown", "no spec to grade restoration against")])
    assert graded({}, False, {}) == ("not_applicable", [], ["stock arms only"])
    assert graded({}, True, {})[:2] == ("unknown", [("REST-1", "unknown", "no initialization provenance (the run "
                                                                          "stopped before the restoration preflight)")])


# ---------------------------------------------------------------- REST-10: the retained check itself


def _full_check(**changes):
    import hashlib
    import json

    outputs = {"uninterrupted": [[-0.5, -1.0]], "restored": [[-0.5, -1.0]]}

    def canonical(value):
        return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                                         allow_nan=False).encode()).hexdigest()

    check = {"label": "T", "checkpoint_uri": "tinker://init", "restored_from": "tinker://state", "steps_before_save": 1,
             "optimizer_state_restored": True,
             "clients": {"uninterrupted": "client-U", "interrupted": "client-I", "restored": "client-R"},
             "restore": {"restore": 1, "client": "client-R", "loaded_from": "tinker://state",
                         "method": "create_training_client_from_state_with_optimizer", "with_optimizer_state": True,
                         "evidence_ref": "restoration-update-check.json"},
             "batch_sha256": "b" * 64,
             "update": {"learning_rate": 0.01, "beta1": 0.9, "weight_decay": 0.0},
             "optimizer_check_after_restore": {
                 "after_restore": 1, "before_next_update": True, "mismatches": [],
                 "evidence_ref": "restoration-update-check.json", "source": "server_response", "actual_family": "adamw",
                 "requested": {"family": "adamw", "learning_rate": 0.01, "beta1": 0.9},
                 "actual_config": {"learning_rate": 0.01, "beta1": 0.9}},
             "max_abs_difference": 0.0, "atol": 1e-6, "problems": [],
             "output_sha256": {name: canonical(values) for name, values in outputs.items()},
             "logprobs_after_second_step": outputs, "passed": True}
    return {**check, **changes}


def _check_problems(check, keyed=False, key="T"):
    spec = {"restoration_preflight": {"groups": [{"arms": [
        {"name": "T", "optimizer": "adamw", "optimizer_config": {"learning_rate": 0.01, "beta1": 0.9}}]}]}}
    ctx = _ctx({"T": {"initialization": {"checkpoint_uri": "tinker://init"},
                      "initial_output": {"batch_sha256": "b" * 64}}}, plan=_plan(arms=("T",)), spec=spec)
    return rules._check_problems(ctx, key, check, keyed)


def test_a_retained_check_whose_every_field_is_the_arms_the_specs_or_recomputes_has_no_problem():
    assert _check_problems(_full_check()) == []


@pytest.mark.parametrize("changes, problem", [
    ({"clients": {"uninterrupted": "c", "interrupted": "c", "restored": "client-R"}},
     ("unverified", "the uninterrupted, interrupted and restored clients are not three named clients")),
    ({"checkpoint_uri": "tinker://other"},
     ("invalid", "checkpoint_uri 'tinker://other' is not the arm's initialization checkpoint ('tinker://init')")),
    ({"restore": None}, ("unverified", "it records no restore (which client loaded which saved state, how and when)")),
    ({"atol": 1e-5}, ("invalid", "atol 1e-05 is not the tolerance fixed before measuring (1e-06)")),
    ({"batch_sha256": "c" * 64}, ("invalid", "batch_sha256 is not the fixed batch the arms' initial outputs were taken on")),
    ({"passed": False}, ("invalid", "passed False is not what its outputs and optimizer check give")),
    ({"problems": ["beta1"]}, ("invalid", "problems are not its optimizer check's mismatches")),
    ({"output_sha256": {"uninterrupted": "0" * 64, "restored": "0" * 64}},
     ("invalid", "output_sha256 is not the hash of the retained outputs")),
    ({"update": {"beta1": 0.9}}, ("invalid", "the update it took names no learning rate")),
    ({"update": {"learning_rate": 0.02, "beta1": 0.9}},
     ("invalid", "the update it took (learning_rate) is not the requested optimizer's")),
    ({"update": {"learning_rate": 0.01}}, ("invalid", "the update it took (beta1) is not the requested optimizer's")),
    ({"update": {"learning_rate": 0.01, "beta1": 0.9, "weight_decay": 0.1}},
     ("invalid", "the update it took (weight_decay) is not the requested optimizer's")),
], ids=["clients", "checkpoint", "no restore", "atol", "batch", "passed", "problems", "output hashes",
        "no update rate", "update rate", "update leaves out", "update default"])
def test_each_field_of_a_retained_check_that_is_not_the_arms_or_the_specs_is_a_problem(changes, problem):
    assert _check_problems(_full_check(**changes)) == [problem]


def test_a_check_of_another_arm_is_not_this_restoration_arms():
    assert _check_problems(_full_check(label="B")) == [
        ("invalid", "label 'B' is not a restoration arm"),
        ("unverified", "checkpoint_uri 'tinker://init' cannot be compared: the arm's initialization names no checkpoint")]


def test_a_keyed_check_is_labelled_by_its_key_and_its_restore_is_the_restored_clients_load():
    assert _check_problems(_full_check(), keyed=True, key="B") == [
        ("invalid", "label 'T' is not a restoration arm (nor its key)")]
    moved = _full_check()
    moved["restore"] = {**moved["restore"], "with_optimizer_state": False}
    assert _check_problems(moved) == [("invalid", "its restore record is not the restored client loading restored_from "
                                                  "with its optimizer state")]
    missing = {k: v for k, v in _full_check().items() if k != "problems"}
    assert _check_problems(missing) == [("unverified", "it holds no problems")]


def test_the_optimizer_after_the_restore_is_requested_as_the_spec_says_and_reported_as_requested():
    def with_optimizer(**changes):
        check = _full_check()
        check["optimizer_check_after_restore"] = {**check["optimizer_check_after_restore"], **changes}
        return _check_problems(check)

    assert with_optimizer(requested={"family": "adamw", "learning_rate": 0.02, "beta1": 0.9},
                          actual_config={"learning_rate": 0.02, "beta1": 0.9}) == [
        ("invalid", "requested learning_rate differ from the spec's"),
        ("invalid", "the update it took (learning_rate) is not the requested optimizer's")]
    assert with_optimizer(actual_family="sgd") == [("invalid", "the service reports family 'sgd', requested 'adamw'")]
    assert with_optimizer(actual_config={"learning_rate": 0.01, "beta1": 0.95}) == [
        ("invalid", "the service reports another optimizer config than requested")]
    assert with_optimizer(actual_config={"learning_rate": 0.01}) == [
        ("unverified", "the service does not expose the whole requested optimizer config")]
    assert with_optimizer(after_restore=0) == [
        ("unverified", "the optimizer check is not the one after the restore, before the next update, with its "
                       "mismatches listed and restoration-update-check.json as its evidence")]


def test_each_further_scheduled_seed_forms_the_groups_again_from_its_trained_replicas():
    """Seeds 0 and 1 of arms T and B: seed 0's replicas are the arms themselves (label == arm), seed 1's are
    T-seed1 and B-seed1 and form the group again; an untrained replica (the base scored at seed 1) joins none."""
    plan = _plan()
    plan.replicas = [SimpleNamespace(arm=arm, label=label, seed=seed, trained=trained) for arm, label, seed, trained in (
        ("T", "T", 0, True), ("B", "B", 0, True), ("T", "T-seed1", 1, True), ("B", "B-seed1", 1, True),
        ("base", "base-seed1", 1, False))]
    ctx = _ctx({}, plan=plan)
    assert [r.label for r in rules._seed_replicas(ctx)] == ["T-seed1", "B-seed1"]
    assert rules._groups(ctx) == [["T", "B"], ["T-seed1", "B-seed1"]]
    assert rules._seed_replicas(_ctx({}, plan=None)) == []


def test_each_group_is_formed_again_per_seed_from_its_own_arms_only():
    """Two spec groups (T with B, and C) at seeds 0, 1 and 2: each further seed forms each group again from that
    seed's replicas of that group's arms, never another seed's or another group's."""
    plan = _plan(arms=("T", "B", "C"))
    plan.replicas = [SimpleNamespace(arm=arm, label=arm if seed == 0 else f"{arm}-seed{seed}", seed=seed, trained=True)
                     for seed in (0, 1, 2) for arm in ("T", "B", "C")]
    spec = {"restoration_preflight": {"groups": [{"arms": [{"name": "T"}, {"name": "B"}]}, {"arms": [{"name": "C"}]}]}}
    assert rules._groups(_ctx({}, plan=plan, spec=spec)) == [
        ["T", "B"], ["C"], ["T-seed1", "B-seed1"], ["C-seed1"], ["T-seed2", "B-seed2"], ["C-seed2"]]
