"""The grader's correctness rules (experiment/grading/correctness.py; docs/contract-rules.md CORR-1..CORR-11),
each on a minimal grading context whose expected finding is worked out in the test from the contract's text
(issue 28 item 7: the complete mutation run of experiment/grading/)."""

from __future__ import annotations

import hashlib
import json
from types import SimpleNamespace

import pytest
from grading_contexts.correctness import (
    ERRORS,
    PATH,
    SPEC_PATH,
    TOLERANCE,
    context as _ctx,
    messages as _messages,
)

from experiment.grading import correctness as rules


# ---------------------------------------------------------------- CORR-1, CORR-2


def test_a_missing_record_is_unverified_and_a_record_not_required_invalid():
    assert _messages(rules.CORR_1(SimpleNamespace(result={}))) == [
        ("CORR-1", "unverified", "the path needs a correctness preflight but RESULT has no record (a missing check "
                                 "blocks like a failed one)")]
    ctx = _ctx()
    assert rules.CORR_1(ctx) == []
    for required in (False, "true", None):
        ctx.result["correctness_preflight"]["required"] = required
        assert _messages(rules.CORR_1(ctx)) == [
            ("CORR-1", "invalid", "the record says required is not true for a custom or forked path")]


def test_a_custom_path_without_a_spec_plan_is_unverified_under_corr7():
    assert _messages(rules.CORR_1(_ctx(spec_paths=()))) == [
        ("CORR-7", "unverified", "the spec has no accepted correctness plan for its custom or forked path; reported "
                                 "required/unverified with a spec revision requested")]


def test_every_planned_path_has_one_record():
    assert _messages(rules.CORR_2(_ctx(paths=()))) == [("CORR-2", "unverified", "path p1: no record (a missing check blocks)")]
    twice = rules.CORR_2(_ctx(paths=(PATH, PATH, {**PATH, "id": "p2"}, {**PATH, "id": "p2"}, {**PATH, "id": "p3"})))
    assert ("CORR-2", "invalid", "path p1, p2 is recorded twice") in _messages(twice)


# ---------------------------------------------------------------- CORR-3


@pytest.mark.parametrize("errors, flagged", [
    (ERRORS, False),
    ({k: v for k, v in ERRORS.items() if k != "cosine_similarity"}, False),  # no min_cosine: no cosine needed
    ({k: v for k, v in ERRORS.items() if k != "relative_l2_error"}, True),
    ({**ERRORS, "max_abs_error": "1e-7"}, True),
    ({}, True),
])
def test_each_planned_check_has_its_measured_errors(errors, flagged):
    ctx = _ctx(paths=({**PATH, "errors": {"baseline_update": errors}},))
    expected = [("CORR-3", "unverified", "path p1: no measured errors for check baseline_update")]
    assert _messages(rules.CORR_3(ctx)) == (expected if flagged else [])


def test_a_check_with_a_cosine_tolerance_needs_the_cosine_and_an_unrecorded_path_is_left_to_corr2():
    spec_path = {**SPEC_PATH, "tolerances": {"baseline_update": {**TOLERANCE, "min_cosine": 0.99}}}
    no_cosine = {k: v for k, v in ERRORS.items() if k != "cosine_similarity"}
    ctx = _ctx(paths=({**PATH, "errors": {"baseline_update": no_cosine}},), spec_paths=(spec_path,))
    assert _messages(rules.CORR_3(ctx)) == [("CORR-3", "unverified", "path p1: no measured errors for check baseline_update")]
    assert rules.CORR_3(_ctx(paths=(), spec_paths=(spec_path,))) == []


@pytest.mark.parametrize("key, errors, sides, why", [
    ("baseline_update", {**ERRORS, "max_abs_error": 0.0, "relative_l2_error": 0.0}, {}, "bitwise-identical updates"),
    ("loss", ERRORS, {"loss": {"same_code": True, "reason": "one optimizer file on both sides"}},
     "one optimizer file on both sides"),
    ("baseline_update@lr=0.01", {**ERRORS, "max_abs_error": 0.0, "relative_l2_error": 0.0}, {},
     "bitwise-identical updates"),
])
def test_a_parity_check_of_one_code_against_itself_measured_nothing(key, errors, sides, why):
    ctx = _ctx(paths=({**PATH, "errors": {key: errors}, "parity_sides": sides},))
    assert _messages(rules.CORR_3_same_code(ctx)) == [
        ("CORR-3", "unverified", f"path p1, check {key}: both sides are the same code ({why}): no parity was measured")]


@pytest.mark.parametrize("key, errors, sides", [
    ("loss", {**ERRORS, "max_abs_error": 0.0, "relative_l2_error": 0.0}, {}),  # a loss may match exactly
    ("baseline_update", {**ERRORS, "max_abs_error": 0.0}, {}),  # one error 0, not both
    ("baseline_update", {**ERRORS, "relative_l2_error": 0.0}, {}),
    ("baseline_update", ERRORS, {"baseline_update": {"same_code": "yes"}}),  # not the JSON true
])
def test_errors_that_only_look_alike_are_a_measured_parity(key, errors, sides):
    assert rules.CORR_3_same_code(_ctx(paths=({**PATH, "errors": {key: errors}, "parity_sides": sides},))) == []


# ---------------------------------------------------------------- CORR-4


@pytest.mark.parametrize("errors, tolerance, message", [
    (ERRORS, TOLERANCE, None),
    ({**ERRORS, "max_abs_error": 2e-6, "reference_max_abs": 1.0}, TOLERANCE, None),  # 2e-6 <= 1e-6 + 1e-4 * 1
    ({**ERRORS, "max_abs_error": 2e-6, "reference_max_abs": 0.0}, TOLERANCE,
     "max_abs_error 2.000e-06 exceeds atol + rtol * reference_max_abs = 1.000e-06"),
    ({**ERRORS, "cosine_similarity": 0.5}, {**TOLERANCE, "min_cosine": 0.99}, "cosine_similarity 0.500000000 is below "
                                                                               "min_cosine 0.99"),
    ({**ERRORS, "max_abs_error": "big"}, TOLERANCE, None),  # not measured: CORR-3 says so
    ({**ERRORS, "reference_max_abs": None}, TOLERANCE, None),
    ({**ERRORS, "cosine_similarity": None}, {**TOLERANCE, "min_cosine": 0.99}, None),
], ids=["within", "within by rtol", "over", "cosine below", "max_abs not a number", "reference not a number",
        "cosine not a number"])
def test_measured_errors_are_held_to_the_specs_tolerances(errors, tolerance, message):
    spec_path = {**SPEC_PATH, "tolerances": {"baseline_update": tolerance}}
    ctx = _ctx(paths=({**PATH, "errors": {"baseline_update": errors}},), spec_paths=(spec_path,))
    expected = [("CORR-4", "invalid", f"path p1, check baseline_update: {message}")] if message else []
    assert _messages(rules.CORR_4(ctx)) == expected


# ---------------------------------------------------------------- CORR-5


def _probe(lr, norm):
    return {"learning_rate": lr, "update_norm": norm}


def _corr5(probes, plan):
    ctx = _ctx(paths=({**PATH, "lr_scaling": probes},), spec_paths=({**SPEC_PATH, "lr_scaling": plan},))
    return _messages(rules.CORR_5(ctx))


def test_planned_lr_probes_are_reported_and_cover_the_planned_rates():
    plan = {"learning_rates": [0.01, 0.02], "max_relative_change": 0.1}
    assert _corr5([_probe(0.02, 2.0), _probe(0.01, 1.0)], plan) == []
    assert _corr5([], plan) == [("CORR-5", "unverified", "path p1: the spec plans LR scaling probes, none reported")]
    assert _corr5([_probe(0.01, 1.0), _probe(0.03, 3.0)], plan) == [
        ("CORR-5", "unverified", "path p1: LR probes do not cover the planned rates [0.01, 0.02]")]
    assert _corr5([], {}) == []  # nothing planned


def test_lr_probes_are_unusable_or_change_over_the_limit():
    from experiment.stats.correctness import lr_scaling_errors

    plan = {"learning_rates": [0.01, 0.02], "max_relative_change": 0.1}
    probes = [_probe(0.01, 1.0), _probe(0.02, 2.5)]
    worst = max(map(abs, lr_scaling_errors(probes)))
    assert worst > 0.1  # update_norm / LR: 100 and 125
    assert _corr5(probes, plan) == [
        ("CORR-5", "invalid", f"path p1: update_norm/LR changes by up to {worst:.3g}, over 0.1")]
    assert _corr5(probes, {**plan, "max_relative_change": worst}) == []  # at the limit: not over it
    assert _corr5([{"learning_rate": 0.01}], plan)[0][:2] == ("CORR-5", "invalid")


# ---------------------------------------------------------------- CORR-6


def test_reported_revisions_equal_the_pins_exactly():
    assert rules.CORR_6(_ctx()) == []
    buried = {**PATH, "baseline_revision": "checked stock@1 and more"}
    assert _messages(rules.CORR_6(_ctx(paths=(buried,)))) == [
        ("CORR-6", "unverified", "path p1: reported baseline_revision 'checked stock@1 and more' is not the pinned 'stock@1'")]


@pytest.mark.parametrize("pinned", ["UNRESOLVED", "unresolved: ask the owner", "", None])
def test_an_unresolved_pin_keeps_the_check_unverified(pinned):
    ctx = _ctx(spec_paths=({**SPEC_PATH, "reference_revision": pinned},))
    assert _messages(rules.CORR_6(ctx)) == [
        ("CORR-6", "unverified", "path p1: the spec's reference_revision is UNRESOLVED, so the check stays unverified "
                                 "until a spec revision pins it")]


@pytest.mark.parametrize("field", ["correctness_pins", "correctness_revisions"])
def test_pins_a_revision_adds_for_unresolved_revisions_are_used_and_stay_unverified(field):
    spec_path = {**SPEC_PATH, "baseline_revision": "UNRESOLVED"}
    ctx = _ctx(spec_paths=(spec_path,), spec={field: {"p1": {"baseline_revision": "stock@1"}}})
    assert _messages(rules.CORR_6(ctx)) == [("CORR-6", "unverified", f"path p1: {rules.EXCHANGE_NOTE}")]
    assert rules._pins(ctx, "p1") == ({"baseline_revision": "stock@1", "reference_revision": "ref@2"}, True)


def test_a_revision_pin_does_not_replace_a_resolved_one():
    ctx = _ctx(spec={"correctness_pins": {"p1": {"baseline_revision": "other@9"}}})
    assert rules._pins(ctx, "p1") == ({"baseline_revision": "stock@1", "reference_revision": "ref@2"}, False)
    assert rules._pins(_ctx(revision_fields=("correctness_preflight",)), "p1")[1] is True


def test_a_same_code_parity_leaves_its_baseline_revision_to_corr3():
    same = {**PATH, "baseline_revision": "treatment@3", "parity_sides": {"baseline_update": {"same_code": True}}}
    assert rules.CORR_6(_ctx(paths=(same,))) == []
    reference = {**same, "reference_revision": "other"}
    assert [m for _, _, m in _messages(rules.CORR_6(_ctx(paths=(reference,))))] == [
        "path p1: reported reference_revision 'other' is not the pinned 'ref@2'"]


# ---------------------------------------------------------------- CORR-8


@pytest.mark.parametrize("trained, status, paths, flagged", [
    (True, "succeeded", (), True),  # a planned path with no record: the run went ahead unresolved
    (True, "succeeded", (PATH,), False),
    (False, "succeeded", (), False),
    (True, "failed", (), False),
])
def test_a_full_run_that_went_ahead_of_an_unresolved_preflight_is_unverified(trained, status, paths, flagged):
    ctx = _ctx(paths=paths, status=status)
    ctx.trained = trained
    expected = [("CORR-8", "unverified", "the full run went ahead while the correctness preflight was unresolved or not "
                                         "passed")]
    assert _messages(rules.CORR_8(ctx)) == (expected if flagged else [])


def test_pins_from_a_revision_do_not_block_the_full_run():
    spec_path = {**SPEC_PATH, "baseline_revision": "UNRESOLVED"}
    ctx = _ctx(spec_paths=(spec_path,), spec={"correctness_pins": {"p1": {"baseline_revision": "stock@1"}}},
               status="succeeded")
    assert rules.CORR_8(ctx) == []


# ---------------------------------------------------------------- CORR-9


FIXED = json.dumps({"tokens": [1, 2, 3]}).encode()


def _canonical(value):
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                                     allow_nan=False).encode()).hexdigest()


@pytest.mark.parametrize("digest, files, message", [
    (hashlib.sha256(FIXED).hexdigest(), {"fixed.json": FIXED}, None),  # the file's bytes
    (_canonical({"tokens": [1, 2, 3]}), {"fixed.json": FIXED}, None),  # its JSON content's canonical hash
    (hashlib.sha256(FIXED).hexdigest(), {"notes.txt": b"fixed input sha256 " + hashlib.sha256(FIXED).hexdigest().encode()},
     "path p1: the fixed input is not retained inline as evidence"),  # only mentioned
    ("ABC", {"fixed.json": FIXED}, "path p1: fixed_input.sha256 is not a 64-hex hash"),
    (None, {}, "path p1: fixed_input.sha256 is not a 64-hex hash"),
], ids=["bytes", "canonical json", "mentioned only", "not hex", "none"])
def test_the_fixed_input_is_retained_as_its_own_evidence(digest, files, message):
    ctx = _ctx(paths=({**PATH, "fixed_input": {"sha256": digest}},), files=files)
    assert _messages(rules.CORR_9(ctx)) == ([("CORR-9", "unverified", message)] if message else [])


# ---------------------------------------------------------------- CORR-10


def _corr10(path, listed=None):
    files = {"code-revision.json": json.dumps({"files_sha256": listed or {}}).encode()}
    full = {"implementation_revision": "impl@1", "precision": "fp32", "normalization": "none", **path}
    return [(s, m) for _, s, m in _messages(rules.CORR_10(_ctx(paths=(full,), files=files)))]


@pytest.mark.parametrize("key", ["implementation_revision", "precision", "normalization"])
def test_every_path_names_its_implementation_precision_and_normalization(key):
    assert _corr10({**PATH}) == []
    assert _corr10({**PATH, key: "  "}) == [("unverified", f"path p1: no {key} says what was compared")]


@pytest.mark.parametrize("text", ["experiment/rl/muon.py sha256:{h}", "fork sha256:{h} (experiment/rl/muon.py)"])
def test_a_revision_naming_a_pipeline_file_hash_is_that_file_of_the_code_revision(text):
    good, bad = "a" * 64, "b" * 64
    listed = {"experiment/rl/muon.py": good}
    for key in ("implementation_revision", "baseline_revision", "reference_revision"):
        assert _corr10({**PATH, key: text.format(h=good)}, listed) == []
        assert _corr10({**PATH, key: text.format(h=bad)}, listed) == [
            ("invalid", f"path p1: {key} names experiment/rl/muon.py with another sha256 than the code revision")]
    assert _corr10({**PATH, "baseline_revision": text.format(h=bad)}, {}) == []  # a file the revision does not list


# ---------------------------------------------------------------- CORR-11


@pytest.mark.parametrize("a, b, same", [
    ({"x": 1.0, "y": [1, 2]}, {"x": 1.0, "y": [1, 2]}, True),
    ({"x": 1.0}, {"x": 1.0, "y": 2}, False),
    ({"x": 1.0, "y": 2}, {"x": 1.0}, False),
    ([{"lr": 2}, {"lr": 1}], [{"lr": 1}, {"lr": 2}], True),  # probes are a set
    ([1, 2], [2, 1], False),  # a list of numbers keeps its order
    ([1], [1, 2], False),
    ((1, 2), [1, 2], False),
    (1.0, 1.0 + 1e-13, True),
    (1.0, 1.0 + 1e-9, False),
    (True, 1, False),
    (1, True, False),
    ("1", 1, False),
    ("a", "a", True),
    (1, 1.0, True),
    ({"x": 1}, [1], False),
])
def test_probe_records_are_the_same_json_up_to_float_noise_and_probe_order(a, b, same):
    assert rules._same_json(a, b) is same


def test_the_path_record_is_the_probes_retained_record():
    probe = {**PATH, "lr_scaling": [_probe(0.01, 1.0)]}
    files = {"probe-p1.json": json.dumps(probe).encode(), "other.json": b'{"id": "p9"}'}
    assert rules.CORR_11(_ctx(paths=({**probe, "revision_check": "pinned"},), files=files)) == []
    changed = {**probe, "errors": {"baseline_update": {**ERRORS, "max_abs_error": 2e-7}}, "extra": 1}
    assert _messages(rules.CORR_11(_ctx(paths=(changed,), files=files))) == [
        ("CORR-11", "unverified", "path p1: errors, extra differ from the retained probe-p1.json, so which the probe "
                                  "measured cannot be told")]
    assert _messages(rules.CORR_11(_ctx(paths=(probe,), files={"notes.txt": json.dumps(probe).encode()}))) == [
        ("CORR-11", "unverified", "path p1: the probe's own record is not retained, so its measured errors cannot be "
                                  "checked")]


# ---------------------------------------------------------------- both sides of each comparison


def test_an_lr_probe_set_missing_a_rate_on_either_side_does_not_cover_the_plan():
    plan = {"learning_rates": [0.01, 0.02]}
    for probes in ([_probe(0.005, 0.5), _probe(0.02, 2.0)], [_probe(0.01, 1.0), _probe(0.03, 3.0)]):
        assert _corr5(probes, plan) == [
            ("CORR-5", "unverified", "path p1: LR probes do not cover the planned rates [0.01, 0.02]")]


@pytest.mark.parametrize("reported", ["stock@0", "stock@2"])
def test_a_reported_revision_sorting_before_or_after_the_pin_is_not_the_pin(reported):
    assert _messages(rules.CORR_6(_ctx(paths=({**PATH, "baseline_revision": reported},)))) == [
        ("CORR-6", "unverified", f"path p1: reported baseline_revision {reported!r} is not the pinned 'stock@1'")]


def test_a_full_run_is_held_to_the_preflight_only_when_it_succeeded():
    for status in ("failed", "running", "timed_out"):
        ctx = _ctx(paths=(), status=status)
        assert rules.CORR_8(ctx) == []


@pytest.mark.parametrize("digest", ["0" * 64, "b" * 64])
def test_a_revisions_file_hash_sorting_before_or_after_the_code_revisions_is_another(digest):
    listed = {"experiment/rl/muon.py": "a" * 64}
    assert _corr10({**PATH, "baseline_revision": f"experiment/rl/muon.py sha256:{digest}"}, listed) == [
        ("invalid", "path p1: baseline_revision names experiment/rl/muon.py with another sha256 than the code revision")]


def test_negative_errors_are_no_exact_match():
    errors = {**ERRORS, "max_abs_error": -1e-7, "relative_l2_error": 0.0}
    assert rules.CORR_3_same_code(_ctx(paths=({**PATH, "errors": {"baseline_update": errors}},))) == []
    errors = {**ERRORS, "max_abs_error": 0.0, "relative_l2_error": -1e-7}
    assert rules.CORR_3_same_code(_ctx(paths=({**PATH, "errors": {"baseline_update": errors}},))) == []


@pytest.mark.parametrize("a, b", [([1, 2, 3], [1, 2]), ([{"lr": 1}, {"lr": 2}, {"lr": 3}], [{"lr": 1}, {"lr": 2}])])
def test_a_longer_list_is_not_the_same_json(a, b):
    assert rules._same_json(a, b) is False


# ---------------------------------------------------------------- CORR-6: the run's own revision check


def _revision_ctx(revision_check):
    pins = {"p1": {"baseline_revision": {"pinned": "stock@1", "source": "spec"},
                   "reference_revision": {"pinned": None, "source": None}}}
    gate = SimpleNamespace(details={"revision_pins": pins})
    ctx = _ctx(paths=({**PATH, "revision_check": revision_check},))
    ctx.plan = SimpleNamespace(gate=lambda name: gate)
    return _messages(rules.CORR_6_revision_check(ctx))


# the path reports baseline stock@1 (pinned: matches) and reference ref@2 (nothing pinned: unresolved)
GIVEN = {"baseline_revision": {"pinned": "stock@1", "source": "spec", "reported": "stock@1", "status": "matches"},
         "reference_revision": {"pinned": None, "source": None, "reported": "ref@2", "status": "unresolved"}}


def test_a_paths_revision_check_is_what_its_pins_and_reported_revisions_give():
    assert _revision_ctx(GIVEN) == []
    claimed = {**GIVEN, "reference_revision": {**GIVEN["reference_revision"], "status": "matches"}}
    assert _revision_ctx(claimed) == [
        ("CORR-6", "invalid", "path p1: revision_check is not what the pins and the reported revisions give")]


def test_without_a_plan_or_its_gate_there_is_no_revision_check_to_compare():
    ctx = _ctx(paths=({**PATH, "revision_check": {}},))
    ctx.plan = None
    assert rules.CORR_6_revision_check(ctx) == []

    def no_gate(name):
        raise KeyError(name)

    ctx.plan = SimpleNamespace(gate=no_gate)
    assert rules.CORR_6_revision_check(ctx) == []


def test_a_planned_path_without_a_record_does_not_stop_the_next_paths_check():
    broken = {k: v for k, v in PATH.items() if k != "fixed_input"}
    ctx = _ctx(paths=(broken,), spec_paths=({**SPEC_PATH, "id": "p0"}, SPEC_PATH))
    assert [m for _, _, m in _messages(rules.CORR_2(ctx))] == ["path p0: no record (a missing check blocks)",
                                                                 "path p1.fixed_input: Field required"]


# ---------------------------------------------------------------- CORR-4 on the read-back input (its inputs)


def _npz(bounds, shapes):
    import io

    import numpy as np

    arrays = {"gradient_error_bounds": np.asarray(bounds, dtype=np.float64)}
    for k, shape in enumerate(shapes):
        arrays[f"start_{k}"] = np.full(shape, k + 1.0, dtype=np.float32)
        arrays[f"gradient_{k}"] = np.full(shape, -(k + 1.0), dtype=np.float64)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def test_the_read_back_start_state_pairs_up_factors_and_their_gradient_bounds():
    """Four factors (start_k filled with k + 1, gradient_k with -(k + 1)) make two (A, B) pairs, A the even
    factor; the bounds pair up the same way; momenta start at zero."""
    import numpy as np

    pairs, bounds = rules._input_pairs(_npz([0.1, 0.2, 0.3, 0.4], [(2, 3), (3, 2), (1, 2), (2, 1)]))
    assert bounds == [(0.1, 0.2), (0.3, 0.4)]
    assert len(pairs) == 2
    for pair, (a, b) in zip(pairs, ((0, 1), (2, 3))):
        assert pair["A"].dtype == np.float32 and pair["grad_A"].dtype == np.float64
        assert (pair["A"] == a + 1.0).all() and (pair["B"] == b + 1.0).all()
        assert (pair["grad_A"] == -(a + 1.0)).all() and (pair["grad_B"] == -(b + 1.0)).all()
        assert pair["momentum_A"].shape == pair["A"].shape and not pair["momentum_A"].any()
        assert pair["momentum_B"].shape == pair["B"].shape and not pair["momentum_B"].any()


@pytest.mark.parametrize("bounds, shapes", [([0.1, 0.2, 0.3], [(1,), (1,), (1,)]), ([], [])])
def test_a_start_state_whose_factors_do_not_pair_up_is_unusable(bounds, shapes):
    with pytest.raises(ValueError):
        rules._input_pairs(_npz(bounds, shapes))


def test_the_analysis_takes_the_treatments_beta1_or_the_default_0_9():
    def beta1(arms):
        return rules._treatment_beta1(SimpleNamespace(spec={"arms": arms}))

    treatment = {"role": "treatment", "optimizer": {"config": {"beta1": 0.95}}}
    assert beta1(["not an arm", {"role": "baseline", "optimizer": {"config": {"beta1": 0.5}}}, treatment]) == 0.95
    assert beta1([{"role": "treatment", "optimizer": {"config": {}}}]) == 0.9
    assert beta1([{"role": "baseline", "optimizer": {"config": {"beta1": 0.5}}}]) == 0.9
    assert rules._treatment_beta1(SimpleNamespace(spec=None)) == 0.9


def test_an_arm_whose_role_sorts_after_treatment_is_not_the_treatment():
    arms = [{"role": "untrained_base", "optimizer": {"config": {"beta1": 0.5}}},
            {"role": "treatment", "optimizer": {"config": {"beta1": 0.95}}}]
    assert rules._treatment_beta1(SimpleNamespace(spec={"arms": arms})) == 0.95


def test_each_planned_paths_lr_probes_are_checked_past_a_path_with_none_or_unusable_ones():
    plan = {"learning_rates": [0.01, 0.02], "max_relative_change": 0.1}
    short = [_probe(0.01, 1.0)]
    spec_paths = ({**SPEC_PATH, "id": "px"},  # plans no probes: nothing to check
                  {**SPEC_PATH, "id": "p0", "lr_scaling": plan}, {**SPEC_PATH, "id": "pu", "lr_scaling": plan},
                  {**SPEC_PATH, "lr_scaling": plan})
    paths = ({**PATH, "id": "p0", "lr_scaling": []}, {**PATH, "id": "pu", "lr_scaling": [{"learning_rate": 0.01}]},
             {**PATH, "lr_scaling": short})
    messages = [(s, m) for _, s, m in _messages(rules.CORR_5(_ctx(paths=paths, spec_paths=spec_paths)))]
    assert messages[0] == ("unverified", "path p0: the spec plans LR scaling probes, none reported")
    assert messages[1][0] == "invalid" and messages[1][1].startswith("path pu: LR probes unusable")
    assert messages[2:] == [("unverified", "path p1: LR probes do not cover the planned rates [0.01, 0.02]")]
