"""The grader's restoration rules (experiment/grading/restoration.py; docs/contract-rules.md REST-1..REST-5),
each on a minimal grading context whose expected finding is worked out in the test from the contract's text
(issue 28 item 7: the complete mutation run of experiment/grading/)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from experiment.grading import restoration as rules

ADAPTER = "a" * 64


def _init(**changes):
    return {"base_checkpoint": "org/base", "source": "server_response", "adapter_sha256": ADAPTER,
            "evidence_ref": "info.json", "before_first_update": True, **changes}


def _ctx(arms, plan=None, spec=None):
    return SimpleNamespace(result={"initialization_provenance": {"version": 1, "arms": arms}}, plan=plan, spec=spec)


def _plan(arms=("T", "B"), base_model="org/base", runs=(), untrained=()):
    return SimpleNamespace(base_model=base_model, replicas=[],
                           trained_arms=[SimpleNamespace(name=a, optimizer={}) for a in arms],
                           arms=[SimpleNamespace(name=a, trained=True) for a in arms]
                           + [SimpleNamespace(name=a, trained=False) for a in untrained],
                           training_runs=list(runs))


def _messages(issues):
    return [(issue.rule, issue.status, issue.message) for issue in issues]


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


NEITHER = ("unverified", "arm T: initialization is proven neither by a measured adapter_sha256 nor by a loaded immutable "
                         "full-initialization checkpoint")
CHECKPOINT = {"adapter_sha256": None, "checkpoint_uri": "tinker://init", "checkpoint_immutable": True,
              "checkpoint_scope": "full_initialization", "loaded_checkpoint_uri": "tinker://init", "load_succeeded": True}


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
