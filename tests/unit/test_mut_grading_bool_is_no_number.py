"""A JSON boolean is not a number, nor a number a boolean (issue 28: a grader no tampering fools). Python's
True == 1 (and bool being an int) let four grader comparisons take one for the other: FEAS-12's projection
compare (`fits: 1` for true, `gpu_hours: false` for 0.0), FEAS-7's generation settings (`true` where the spec
says 1), EVAL-5's integer max_tokens (`true`), REST-4's restore count, after_restore and restore number, REST-9's
actual restore and REST-10's steps before the save (`true` for 1, `false` for 0). The
whole-record tamperings (tests/tampering.py: projection_flags_as_numbers, boolean_max_tokens,
restore_counts_as_booleans) run in tests/unit/test_grading_every_leaf.py."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from experiment.grading import evaluator, feasibility, restoration
from experiment.grading.common import is_integer
from test_mut_grading_evaluator_rules import KEY, PROVENANCE, _ctx as _evaluator_ctx
from test_mut_grading_feasibility_rules import _ctx as _feasibility_ctx, _messages
from test_mut_grading_restoration_rules import (
    NEEDS, WHERE10, _ctx as _restoration_ctx, _rest10, _restore, _restores, _update,
)


@pytest.mark.parametrize("value, integer", [(0, True), (1, True), (-3, True), (True, False), (False, False),
                                            (1.0, False), ("1", False), (None, False)])
def test_an_integer_is_an_int_and_no_boolean(value, integer):
    assert is_integer(value) is integer


# ---------------------------------------------------------------- FEAS-12: the projection compare


@pytest.mark.parametrize("recorded, recomputed", [(1, True), (0, False), (1.0, True), (True, 1), (False, 0),
                                                  (False, 0.0), (True, 1.0)])
def test_a_boolean_and_a_number_are_never_the_same_projection_value(recorded, recomputed):
    assert feasibility._same(recorded, recomputed) is False


@pytest.mark.parametrize("recorded, recomputed", [(True, True), (False, False), (0.0, 0), (1, 1.0)])
def test_booleans_match_booleans_and_numbers_numbers(recorded, recomputed):
    assert feasibility._same(recorded, recomputed) is True


# ---------------------------------------------------------------- FEAS-7: the spec's generation settings


def _settings_issues(target_accepted, filter_samples, n_accept=1, spec_filter_samples=1):
    generation = {"attempted": 4, "accepted": 2, "target_accepted": target_accepted,
                  "filter_samples_per_candidate": filter_samples}
    phases = {name: {"units": 4, "planned_units": 4, "samples": 4} for name in ("generation", "filter")}
    ctx = _feasibility_ctx({"generation": generation, "measurements": phases})
    ctx.generation_settings = SimpleNamespace(n_accept=n_accept, filter_samples=spec_filter_samples)
    return _messages(feasibility._generation_settings_issues(ctx, generation, phases))


NOT_THE_SPECS = ("FEAS-7", "invalid", "target_accepted and filter_samples_per_candidate are not the spec's (1, 1)")


@pytest.mark.parametrize("target_accepted, filter_samples, flagged", [
    (1, 1, False), (1, 1.0, False),  # the spec's counts
    (True, 1, True), (1, True, True), (True, True, True),  # true where the spec says 1
    (2, 1, True), (1, 0, True),  # another count, above or below
])
def test_the_generation_settings_are_the_specs_counts_and_true_is_no_count(target_accepted, filter_samples, flagged):
    assert (NOT_THE_SPECS in _settings_issues(target_accepted, filter_samples)) is flagged


def test_false_is_not_a_spec_count_of_zero():
    assert ("FEAS-7", "invalid", "target_accepted and filter_samples_per_candidate are not the spec's (0, 1)") in \
        _settings_issues(False, 1, n_accept=0)


# ---------------------------------------------------------------- EVAL-5: an integer max_tokens


@pytest.mark.parametrize("max_tokens", [True, False])
def test_a_boolean_max_tokens_is_no_integer(max_tokens):
    decoding = {**PROVENANCE["decoding"], "max_tokens": max_tokens}
    assert _messages(evaluator.EVAL_5(_evaluator_ctx({KEY: {**PROVENANCE, "decoding": decoding}}))) == [
        ("EVAL-5", "invalid", f"evaluator {KEY[:12]}: decoding needs numeric temperature, integer max_tokens and stop "
                              "as a list of strings")]


@pytest.mark.parametrize("max_tokens", [1, 0, 16])
def test_an_integer_max_tokens_passes(max_tokens):
    decoding = {**PROVENANCE["decoding"], "max_tokens": max_tokens}
    assert evaluator.EVAL_5(_evaluator_ctx({KEY: {**PROVENANCE, "decoding": decoding}})) == []


# ---------------------------------------------------------------- REST-4: the restore count


def _rest4(after_restores, restore_count):
    checks = [{"after_restore": n, "before_next_update": True} for n in after_restores]
    ctx = _restoration_ctx({"T": {"restore_count": restore_count, "optimizer_checks": checks}})
    return [(s, m) for _, s, m in _messages(restoration.REST_4(ctx))]


@pytest.mark.parametrize("after_restores, restore_count, covered", [
    ([0], False, [0]),  # no restore, counted as false
    ([0, 1], True, [0, 1]),  # one restore, counted as true
    ([False], 0, []),  # the creation check's after_restore false
    ([0, True], 1, [0]),
], ids=["count false", "count true", "after_restore false", "after_restore true"])
def test_a_boolean_restore_count_or_after_restore_counts_nothing(after_restores, restore_count, covered):
    assert _rest4(after_restores, restore_count) == [
        ("unverified", f"arm T: optimizer_checks cover after_restore {covered}, not creation and each of "
                       f"{restore_count!r} restores")]


def test_integer_restore_counts_and_after_restores_pass():
    assert _rest4([0], 0) == []
    assert _rest4([0, 1], 1) == []


def test_a_restore_numbered_true_is_not_restore_1():
    assert _restores({"restore_count": 1, "restores": [_restore()]}) == []
    assert _restores({"restore_count": 1, "restores": [_restore(number=True)]}) == [("unverified", NEEDS)]


def test_a_lone_arm_whose_restore_count_is_true_records_no_actual_restore():
    spec = {"experiment_features": {"checkpoint_restore": True, "paired_training_arms": False},
            "restoration_preflight": {"groups": [{"arms": [{"name": "T"}]}]}}
    assert restoration.REST_9(_restoration_ctx({"T": {"restore_count": 1}}, spec=spec)) == []
    assert _messages(restoration.REST_9(_restoration_ctx({"T": {"restore_count": True}}, spec=spec))) == [
        ("REST-9", "unverified", "arm T forms a group alone without checkpoint_restore, unpaired arms and an actual "
                                 "restore")]


def test_a_create_save_restore_check_saved_after_true_steps_took_no_step():
    assert _rest10(_update(steps_before_save=1)) == []
    assert _rest10(_update(steps_before_save=True)) == [
        ("invalid", f"{WHERE10}: not a restore of state saved after an optimizer step with its optimizer state")]
