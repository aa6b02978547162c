"""A JSON boolean is not a number, nor a number a boolean (issue 28: a grader no tampering fools). Python's
True == 1 (and bool being an int) let grader comparisons take one for the other. Each section below first shows
the lenient case (run on the code before its fix, the test failed there) and holds the fix: FEAS-12's projection
compare, FEAS-7's settings, yield and phase units, FEAS-10's pilot size, FEAS-2's config, EVAL-5's max_tokens,
LOSS-3's token counts and loss_eval fields, EVAL-9's row seed, REST-4's restore counts, REST-5's settings, REST-9,
REST-10, GA-4/8/10/11's counts, DEC-8's and DEC-12's flags, ACT-3's step counts, EVID-6's seed, and the run-dir
layer's counts. Comparisons go through experiment.grading.common (is_integer, equal_json, close). The whole-record
tamperings (tests/tampering.py: projection_flags_as_numbers, boolean_max_tokens, restore_counts_as_booleans,
grid_edge_as_number, loss_eval_zero_counts_as_false, zero_optimizer_settings_as_false, audit_zero_counts_as_false)
run in tests/unit/test_grading_every_leaf.py and tests/e2e/test_grader_trust.py."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from experiment.grading import (
    activation, decision, decision_rows, evaluator, feasibility, general, generation_audit, restoration, run_dir,
)
from experiment.grading.common import FLOAT_TOL, equal_json, is_integer
from grading_contexts.generation_audit import GA8_TASKS as AUDIT_TASKS, ga8_context as _audit_ctx
from grading_contexts.activation import ORDER, SETTINGS as ACT_SETTINGS, settings_row as _act_row
from grading_contexts.decision import (
    CRITERION_C1,
    SELECTED,
    summaries as _summaries,
    three_lr_context as _three_lr_ctx,
)
from grading_contexts.evaluator import (
    KEY,
    LOSS_SCORE,
    PROVENANCE,
    context as _evaluator_ctx,
    loss_entry as _loss_entry,
    eval9_messages as _eval9,
    loss3_findings as _loss3,
    prediction_row as _eval_row,
)
from grading_contexts.feasibility import context as _feasibility_ctx, messages as _messages
from grading_contexts.restoration import (
    NEEDS,
    WHERE10,
    context as _restoration_ctx,
    restoration_plan as _rest_plan,
    rest10_findings as _rest10,
    restore as _restore,
    restores as _restores,
    update_check as _update,
)


@pytest.mark.parametrize("value, integer", [(0, True), (1, True), (-3, True), (True, False), (False, False),
                                            (1.0, False), ("1", False), (None, False)])
def test_an_integer_is_an_int_and_no_boolean(value, integer):
    assert is_integer(value) is integer


@pytest.mark.parametrize("a, b", [(1, 1), (1, 1.0), (0, 0.0), (True, True), (False, False), ("a", "a"), (None, None),
                                  ({"n": 1, "m": [0, 2]}, {"m": [0, 2], "n": 1}), ((1, "s"), (1, "s"))])
def test_equal_json_values(a, b):
    assert equal_json(a, b) is True
    assert equal_json(b, a) is True


@pytest.mark.parametrize("a, b", [(True, 1), (False, 0), (False, 0.0), (None, False), (True, False),
                                  ({"n": True}, {"n": 1}), ([0, True], [0, 1]), ((True, 2), (1, 2)),
                                  ({"n": 1}, {"n": 1, "m": 0}), ({"n": 1}, {"m": 1}), ([1], [1, 1]), ([1], [2]),
                                  ([1], (1,)), ("1", 1)])
def test_equal_json_takes_no_boolean_for_a_number(a, b):
    assert equal_json(a, b) is False
    assert equal_json(b, a) is False


# ---------------------------------------------------------------- FEAS-12: the projection compare


@pytest.mark.parametrize("recorded, recomputed", [(1, True), (0, False), (1.0, True), (True, 1), (False, 0),
                                                  (False, 0.0), (True, 1.0)])
def test_a_boolean_and_a_number_are_never_the_same_projection_value(recorded, recomputed):
    assert equal_json(recorded, recomputed, FLOAT_TOL) is False


@pytest.mark.parametrize("recorded, recomputed", [(True, True), (False, False), (0.0, 0), (1, 1.0)])
def test_booleans_match_booleans_and_numbers_numbers(recorded, recomputed):
    assert equal_json(recorded, recomputed, FLOAT_TOL) is True


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


# ---------------------------------------------------------------- LOSS-3 and the best-LR recompute: token counts


@pytest.mark.parametrize("n_tokens", [True, False])
def test_a_boolean_token_count_is_no_count(n_tokens):
    # true read as one token would make this row's NLL 3.0 and the run's token mean (4 + 3) / 3
    rows = [{"prediction": {"nll_sum": 4.0, "n_tokens": 2}}, {"prediction": {"nll_sum": 3.0, "n_tokens": n_tokens}}]
    assert evaluator.loss_from_predictions(rows, "token_mean") is None
    assert decision_rows.nll_from_predictions(rows, "token_mean") is None


# ---------------------------------------------------------------- FEAS-7: the yield and the generation phases' units

YIELD = ("FEAS-7", "invalid", "the measured yield (attempted, accepted) is not the generation audit's counts "
                              "(generated, accepted)")


@pytest.mark.parametrize("counts", [{"generated": 10, "accepted": True}, {"generated": 10.0, "accepted": 1.0}])
def test_the_yield_is_the_audits_counts_and_true_is_no_count(counts):
    generation = {"attempted": 10, "accepted": 1, "target_accepted": 1, "filter_samples_per_candidate": 1}
    phases = {name: {"units": 10, "planned_units": 10, "samples": 10} for name in ("generation", "filter")}
    flagged = any(isinstance(v, bool) for v in counts.values())
    assert (YIELD in _feas7_messages(generation, phases, counts)) is flagged


def _feas7_messages(generation, phases, counts=None):
    ctx = _feasibility_ctx({"generation": generation, "measurements": phases},
                           generation_audit={"counts": counts} if counts else {})
    ctx.gate_applicable = lambda name: True if name == "generation_audit" else None
    return _messages(feasibility.FEAS_7(ctx))


def test_a_generation_phase_of_true_units_did_not_attempt_one_candidate():
    generation = {"attempted": 1, "accepted": 1, "target_accepted": 1, "filter_samples_per_candidate": 1}
    phases = {"generation": {"units": 1, "planned_units": 1, "samples": 1}, "filter": {"units": 1, "planned_units": 1,
                                                                                       "samples": 1}}
    assert _feas7_messages(generation, phases) == []
    phases["generation"] = {"units": True, "planned_units": True, "samples": True}
    assert ("FEAS-7", "invalid", "the generation phase's units are not the candidates attempted") in \
        _feas7_messages(generation, phases)
    phases["generation"] = {"units": 1, "planned_units": 1, "samples": 1}
    phases["filter"]["samples"] = True
    assert ("FEAS-7", "invalid", "filter: units, planned_units and samples differ (work done before the pilot is the "
                                 "planned work)") in _feas7_messages(generation, phases)


# ---------------------------------------------------------------- FEAS-10: the pilot's recorded size


def test_a_pilot_of_true_steps_per_arm_is_not_the_specs_one_step():
    def feas10(pilot):
        record = {"measurements": {"training": {"units": 1}, "evaluation": {"units": 60}}, "pilot": pilot}
        ctx = _feasibility_ctx(record)
        ctx.spec = {"command": "timing pilot: 2 steps per arm plus 100 eval items", "steps": 1}
        ctx.plan = SimpleNamespace(trained_arms=[SimpleNamespace(name="T")], eval={"n_examples": 60})
        return _messages(feasibility.FEAS_10(ctx))

    source = "spec command: 'timing pilot: 2 steps per arm plus 100 eval items'"
    assert feas10({"steps_per_arm": 1, "eval_items": 60, "size_source": source}) == [], "the helper's spec source"
    assert [m[:2] for m in feas10({"steps_per_arm": True, "eval_items": 60, "size_source": source})] == [
        ("FEAS-10", "unknown")]


# ---------------------------------------------------------------- REST-4: the restore count against the restores


def test_a_restore_count_of_true_is_not_the_one_recorded_restore():
    assert _restores({"restore_count": True, "restores": [_restore()]}) == [
        ("invalid", "arm T: restore_count True but 1 restores are recorded")]
    assert _restores({"restore_count": False, "restores": []}) == [
        ("invalid", "arm T: restore_count False but 0 restores are recorded")]


# ---------------------------------------------------------------- GA-4, GA-8, GA-11: the audit's counts


def test_an_overlap_count_of_false_is_not_zero_overlaps():
    rows = [{"item_id": "e1", "prompt": "Name a prime."}]
    assert generation_audit.GA_8(_audit_ctx(rows, overlap_count=0)) == []
    assert _messages(generation_audit.GA_8(_audit_ctx(rows, overlap_count=False))) == [
        ("GA-8", "invalid", "overlap_count False but the evaluation set gives 0")]


def test_counts_with_false_for_zero_are_not_the_candidates_counts():
    ctx = _audit_ctx([], overlap_count=0)
    counts = generation_audit.records.counts_of(AUDIT_TASKS)
    ctx.result["generation_audit"]["counts"] = counts
    assert generation_audit.GA_4(ctx) == []
    ctx.result["generation_audit"]["counts"] = {k: (False if v == 0 else v) for k, v in counts.items()}
    assert False in ctx.result["generation_audit"]["counts"].values(), "a count of 0 to write as false"
    assert [m[:2] for m in _messages(generation_audit.GA_4(ctx))] == [("GA-4", "invalid")]


def test_disagreements_are_not_counted_by_a_boolean():
    ctx = _audit_ctx([], overlap_count=0)
    ctx.result["generation_audit"].update(disagreements=[{"item_id": "t1"}], label_error_count=1)
    ctx.spec = {}
    assert generation_audit.GA_11(ctx) == []
    ctx.result["generation_audit"]["label_error_count"] = True
    assert _messages(generation_audit.GA_11(ctx)) == [("GA-11", "invalid", "disagreements do not list the label errors")]


# ---------------------------------------------------------------- the run-dir layer


def _problems(validator):
    return [(p.check, p.message) for p in validator.report.problems]


def test_run_dir_audit_counts_are_integers_and_no_booleans(tmp_path):
    """The run-dir layer's generation_audit.shape runs GA-2, which takes the counts as JSON integers only."""
    def problems(counts):
        record = {"version": 1, "stage": "before_training", "dataset_file": "d", "evaluation_file": "e",
                  "audit_file": "a", "sample_seed": 0, "counts": counts}
        files = run_dir.RunFiles(run_dir=tmp_path, result={"generation_audit": record}, events=[], bad_event_lines=[],
                                 manifest={"files": []}, plan={}, spec={}, setup_problems=[])
        validator = run_dir.Validator(files)
        validator.check_generation_audit()
        return [p for p in _problems(validator) if "counts must" in p[1]]

    assert problems({"generated": 1, "accepted": 1, "rejected": 0, "execution_errors": 0}) == []
    assert problems({"generated": True, "accepted": True, "rejected": False, "execution_errors": False}) == [
        ("generation_audit.shape", "generation_audit.counts must give integer generated, accepted, rejected, "
                                   "execution_errors")]


# ---------------------------------------------------------------- LOSS-3: the loss_eval fields against the predictions


@pytest.mark.parametrize("key, value", [("n_empty", True), ("n_examples", "2")])
def test_a_loss_eval_count_written_as_a_boolean_or_a_number_as_text_does_not_recompute(key, value):
    assert _loss3(_loss_entry()) == []
    assert _loss3(_loss_entry(**{key: value})) == [
        ("invalid", f"T: loss_eval {key} do not recompute from the retained predictions")]


def test_an_arm_entry_is_its_selected_runs_entry_and_true_is_not_its_one_empty_example():
    score = {**LOSS_SCORE, "run": "T@lr=0.001"}
    runs = {"0.001": _loss_entry()}
    assert _loss3({**_loss_entry(), "runs": runs, "selected_run": "0.001"}, score) == []
    assert _loss3({**_loss_entry(n_empty=True), "runs": runs, "selected_run": "0.001"}, score) == [
        ("invalid", "loss_eval T is not its selected run's entry")]


# ---------------------------------------------------------------- REST-5: the requested optimizer against the spec


def test_a_requested_setting_of_false_is_not_the_specs_zero():
    def rest5(weight_decay):
        spec = {"restoration_preflight": {"groups": [{"arms": [
            {"name": "T", "optimizer": "adam", "optimizer_config": {"learning_rate": 0.01, "weight_decay": 0.0}}]}]}}
        requested = {"family": "adamw", "learning_rate": 0.01, "weight_decay": weight_decay}
        ctx = _restoration_ctx({"T": {"optimizer_checks": [{"requested": requested}]}}, plan=_rest_plan(), spec=spec)
        return [(s, m) for _, s, m in _messages(restoration.REST_5(ctx))]

    assert rest5(0.0) == [] and rest5(0) == []
    assert rest5(False) == [("invalid", "arm T: requested weight_decay differ from the spec's")]


# ---------------------------------------------------------------- DEC-12: the LR grid's edge and the selection posted


def test_a_grid_edge_of_zero_is_not_the_recomputed_false():
    assert decision.DEC_12(_three_lr_ctx(grid_edge=False)) == []
    assert decision.DEC_12(_three_lr_ctx()) == []  # not said: no edge
    assert [(i.status, i.message) for i in decision.DEC_12(_three_lr_ctx(grid_edge=0))] == [
        ("invalid", "grid_edge 0 is not the recomputed False")]


def test_a_posted_selection_or_criterion_with_a_number_for_a_boolean_is_not_the_recomputed_one():
    assert _summaries({**SELECTED, "A": {**SELECTED["A"], "grid_edge": 0}}) == [
        "metrics.arms A: grid_edge not the recomputed selection"]
    verdict = {"per_arm": SELECTED, "criteria": [{**CRITERION_C1, "met": 0}]}
    assert _summaries({}, {"verdict.json": verdict}) == ["verdict.json: criterion c1 is not the recomputed one"]


# ---------------------------------------------------------------- ACT-3: a pilot step's counts


def test_a_group_mean_step_with_false_for_no_kernel_fallbacks_is_not_what_it_gives():
    row = {**_act_row(), "baseline_values": [], "effective_neighbors": [], "prompt_features": [], "kernel_fallbacks": 0}
    assert activation._advantage_problems("T", ACT_SETTINGS, [row]) == []
    assert activation._advantage_problems("T", ACT_SETTINGS, [{**row, "kernel_fallbacks": False}]) == [
        "T step 0: kernel diagnostics of a group-mean arm (none: empty lists and no fallbacks) do not recompute from "
        "its rewards"]


def test_a_pilot_step_of_one_rollout_per_prompt_is_not_true():
    settings = activation._ArmLoop("T", "group_mean", group_size=1, groups_per_batch=2, kernel_bandwidth=1.0)
    row = _act_row(rewards=[1, 0], advantages=[0.0, 0.0], executed_group_size=1, n_rollouts=2, mean_reward=0.5,
                   frac_nonzero_advantage=0.0)
    assert activation._step_problems(row, settings, ORDER) == []
    assert activation._step_problems({**row, "executed_group_size": True}, settings, ORDER) == [
        "executed_group_size or n_rollouts is not what its rewards give"]


# ---------------------------------------------------------------- EVAL-9: a prediction row's seed


def test_prediction_rows_of_seed_false_are_not_the_seed_0_scores():
    assert _eval9([_eval_row("i1"), _eval_row("i2")]) == []
    assert _eval9([_eval_row("i1"), _eval_row("i2", seed=False)]) == [
        ("EVAL-9", "invalid", "t.jsonl: rows carry another seed than the score")]


# ---------------------------------------------------------------- DEC-8: a criterion's flags


def test_a_best_lr_decision_criterion_met_1_is_not_the_recomputed_true(monkeypatch):
    """A best-LR decision object is compared criterion by criterion only (no whole-record compare)."""
    recomputed = {"method": "best_lr_threshold", "criteria": [{"id": "c1", "effect": 1.0, "met": True}]}
    monkeypatch.setattr(decision, "read_observations", lambda ctx: [])
    monkeypatch.setattr(decision, "DEC_6", lambda ctx: [])
    monkeypatch.setattr(decision, "_recompute", lambda ctx: (recomputed, ""))

    def dec8(met):
        ctx = SimpleNamespace(result={"decision": {"criteria": [{"id": "c1", "effect": 1.0, "met": met}]}}, plan=None)
        return _messages(decision.DEC_8(ctx))

    assert dec8(True) == []
    assert dec8(1) == [("DEC-8", "invalid", "criterion c1: recorded met 1 is not the recomputed True")]


# ---------------------------------------------------------------- FEAS-2: config against effective_config


def test_a_config_value_true_and_an_effective_1_changed():
    config = {key: 1 for key in feasibility.PROJECTION_KEYS}
    assert feasibility.FEAS_2(_feasibility_ctx({"config": config, "effective_config": dict(config)})) == []
    effective = {**config, "lora_rank": True}
    assert _messages(feasibility.FEAS_2(_feasibility_ctx({"config": config, "effective_config": effective}))) == [
        ("FEAS-2", "unknown", "Re-projection required: lora_rank changed or was not recorded")]


# ---------------------------------------------------------------- GA-10, GA-11: the record's audit against its files


class _JsonFiles:
    def __init__(self, files):
        self.files = files

    def json(self, name):
        return self.files.get(name)

    def jsonl(self, name):
        return self.files.get(name)


def test_a_record_audit_is_not_its_file_when_a_count_or_a_flag_changed_type():
    def ga10(record_changes=None, sample_changes=None):
        sample = {"item_id": "t1", "agrees": True}
        retained = {"samples": [sample], "label_error_count": 0}
        record = {"audit_file": "a.json", "samples": [{**sample, **(sample_changes or {})}], "label_error_count": 0,
                  **(record_changes or {})}
        ctx = SimpleNamespace(result={"generation_audit": record}, evidence=_JsonFiles({"a.json": retained}))
        return [m[:2] for m in _messages(generation_audit.GA_10(ctx))]

    assert ga10() == []
    assert ga10({"label_error_count": False}) == [("GA-10", "unverified")]
    assert ga10(sample_changes={"agrees": 1}) == [("GA-10", "unverified")]


def test_a_round_entry_with_false_for_no_overlaps_is_not_its_files_summary(monkeypatch):
    summary = {"round": 1, "dataset_file": "d.jsonl", "audit_file": "a.json", "counts": {"generated": 2},
               "sample_size": 1, "label_error_count": 0, "overlap_count": 0, "status": "passed"}
    monkeypatch.setattr(generation_audit, "_rebuilt_round", lambda *args: dict(summary))
    monkeypatch.setattr(generation_audit, "_evaluation", lambda ctx: [])

    def ga11(entry):
        files = _JsonFiles({"d.jsonl": [], "a.json": dict(summary)})
        ctx = SimpleNamespace(result={"generation_audit": {"rounds": [entry]}}, evidence=files)
        return [m[:2] for m in _messages(generation_audit.GA_11_files(ctx))]

    assert ga11(dict(summary)) == []
    assert ga11({**summary, "overlap_count": False}) == [("GA-11", "invalid")]


# ---------------------------------------------------------------- EVID-6: a listed checkpoint's seed


def test_a_checkpoint_listed_for_seed_false_is_not_the_seed_0_scores():
    def evid6(seed):
        checkpoint = {"uri": "tinker://t/final", "arm": "T", "seed": seed, "step": 2}
        result = {"evidence": {"checkpoints": [checkpoint]},
                  "evaluation": {"scores": [{"arm": "T", "seed": 0, "predictions_ref": "t.jsonl"}]}}
        ctx = SimpleNamespace(result=result, plan=None, evidence=_JsonFiles({"t.jsonl": [
            {"checkpoint": "tinker://t/final"}]}))
        return [m for m in _messages(general.EVID_6(ctx)) if "seed" in m[2]]

    assert evid6(0) == []
    assert evid6(False) == [("EVID-6", "invalid", "checkpoint 'tinker://t/final' is listed for seed False, but T was "
                                                  "scored on it at seed 0")]


# ---------------------------------------------------------------- left alone: refused before they reach the check


def test_a_checkpoint_step_true_is_refused_by_evid_6_before_eval_9_orders_checkpoints_by_step():
    """EVAL-9 ranks a listed checkpoint's step with isinstance(step, int) (true would rank as step 1): EVID-6
    already refuses any checkpoint whose step is not an integer, so the category cannot pass with one."""
    plan = SimpleNamespace(training_runs=[], trained_arms=[SimpleNamespace(name="T", steps=2)])
    ctx = SimpleNamespace(result={"evaluation": {"scores": []}}, plan=plan, evidence=_JsonFiles({}))
    for step, flagged in ((2, False), (True, True), (False, True)):
        found = general._final_checkpoint_steps(ctx, [{"uri": "tinker://t/final", "arm": "T", "step": step}])
        assert (_messages(found) == [("EVID-6", "invalid", "checkpoint of T has no step")]) is flagged


def test_an_integer_too_large_for_a_float_is_no_number_and_no_traceback(tmp_path):
    """A loss_eval n_tokens of 10**400 (a JSON integer) raised OverflowError from math.isfinite in the run-dir
    layer's loss_eval check: `flows.validate RUN_DIR` ended in a traceback (issue 45 audit, n_tokens 10**400)."""
    from experiment.grading.common import is_number

    assert not is_number(10 ** 400) and not is_number(-(10 ** 400)) and is_number(10 ** 300) and is_number(2 ** 64)
