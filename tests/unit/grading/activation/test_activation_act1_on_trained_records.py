"""ACT-1 (activation values against the spec's ranges on a trained record), sentence by sentence, on
the self-generated record the grading tests build (issue 28 item 7, the complete mutation run's
survivors: ACT-2's recompute also flags these records, so no test held ACT-1 itself)."""

from __future__ import annotations

import copy
import statistics
from types import SimpleNamespace

import pytest

from experiment.grading import grade_record
from experiment.grading.activation import _recomputed
from tampering import _edit_jsonl_file
from grading_contexts.activation import gs1_rows as _gs1_rows


def _act_1(record) -> list[str]:
    grade = grade_record(record)  # ACT rules are general: their findings are the grade's problems
    found = grade.problems + [issue for category in grade.categories.values() for issue in category.to_dict()["issues"]]
    return [issue for issue in found if issue.startswith("ACT-1:")]


@pytest.fixture(scope="module")
def paired(graded_record):
    return graded_record("paired")[0]


def _with(record, **values):
    edited = copy.deepcopy(record)
    for metric, value in values.items():
        if value is None:
            del edited["activation_calibration"]["values"][metric]
        else:
            edited["activation_calibration"]["values"][metric] = value
    return edited


def test_the_green_record_has_no_act_1_issue(paired):
    assert _act_1(paired) == []


@pytest.mark.parametrize("value, sentence", [
    (0.0, "ACT-1: selfgen_mean_train_reward_pilot: 0 < min 0.15, yet arms were trained."),
    (0.99, "ACT-1: selfgen_mean_train_reward_pilot: 0.99 > max 0.85, yet arms were trained."),
])
def test_a_value_outside_its_range_on_a_trained_record(paired, value, sentence):
    assert _act_1(_with(paired, selfgen_mean_train_reward_pilot=value)) == [sentence]


def test_every_check_is_reported_after_a_missing_value(paired):
    edited = _with(paired, treatment_fraction_batches_from_generated_set=None, selfgen_mean_train_reward_pilot=0.99)
    assert _act_1(edited) == [
        "ACT-1: treatment_fraction_batches_from_generated_set: no measured value, yet arms were trained.",
        "ACT-1: selfgen_mean_train_reward_pilot: 0.99 > max 0.85, yet arms were trained."]


def test_no_values_at_all_on_a_trained_record(paired):
    edited = copy.deepcopy(paired)
    del edited["activation_calibration"]["values"]
    assert _act_1(edited) == ["ACT-1: arms were trained but activation_calibration.values is missing."]


def test_a_step_row_without_its_arm_is_left_out_of_the_recompute_and_named_in_the_shape(paired):
    """The pilot log's first step loses its arm (file re-hashed): the recompute reads only rows with
    both an arm and rewards (the rest would have no arm to group by), so ACT-2 finds a changed mean and
    ACT-3 names the step without an arm."""
    def drop_arm(rows):
        del next(row for row in rows if "rewards" in row)["arm"]

    edited = copy.deepcopy(paired)
    _edit_jsonl_file(edited, "activation-pilot-bwselfgen.jsonl", drop_arm)
    grade = grade_record(edited)
    found = grade.problems + [issue for category in grade.categories.values() for issue in category.to_dict()["issues"]]
    assert len(found) == 2
    assert found[0].startswith("ACT-2: activation values do not recompute from activation-pilot-bwselfgen.jsonl: "
                               "selfgen_mean_train_reward_pilot ")
    assert found[1] == ("ACT-3: activation-pilot-bwselfgen.jsonl: its steps are [(None, 0), ('rl_selfgen', 1), "
                        "('rl_gsm8k', 0)], the pilot runs [('rl_selfgen', 0), ('rl_selfgen', 1), ('rl_gsm8k', 0)] "
                        "(arm, step).")


# ---- ACT-2's GS1 recompute from the pilot log's rows: which rows are the treatment (the first arm logged),
# which the baseline (every other arm), and the held-out rewards the first treatment step is correlated with


@pytest.mark.parametrize("treatment_arm,baseline_arm", [("kernel", "vanilla"), ("kernel", "grpo")])
def test_the_gs1_recompute_splits_the_log_by_the_first_arm_and_correlates_the_first_step(treatment_arm, baseline_arm):
    values = _recomputed(None, _gs1_rows(treatment_arm, baseline_arm), {"pilot_mean_reward"})
    assert values["executed_group_size_treatment"] == 2.0  # both treatment steps, none of the baseline's
    assert values["executed_group_size_baseline"] == 4.0
    assert values["pilot_mean_reward"] == pytest.approx(7 / 12)
    assert values["frac_nonzero_advantage_treatment"] == 5 / 12
    assert values["kernel_effective_neighbors_p10"] == pytest.approx(1.5)  # 10th percentile of 1..6
    assert values["baseline_reward_corr"] == pytest.approx(statistics.correlation([0.2, 0.6, 0.9], [0.25, 0.5, 1.0]))


def test_the_selfgen_recompute_cuts_each_treatment_step_into_one_group_per_item():
    # no generated-set file and no dataset in this context: only the log's own values are recomputed
    ctx = SimpleNamespace(evidence=SimpleNamespace(jsonl=lambda name: None), result={}, spec_model=None, spec={})
    rows = [
        # groups of 3: [1, 1, 1] constant, [0, 1, 0] varies
        {"arm": "generated", "item_ids": ["a", "b"], "rewards": [1.0, 1.0, 1.0, 0.0, 1.0, 0.0]},
        {"arm": "gsm8k", "item_ids": ["c"], "rewards": [0.0, 1.0]},
        # groups of 2: [0, 0], [1, 0] varies, [0.5, 0.5], [1, 1]
        {"arm": "generated", "item_ids": ["d", "e", "f", "g"], "rewards": [0.0, 0.0, 1.0, 0.0, 0.5, 0.5, 1.0, 1.0]},
    ]
    values = _recomputed(ctx, rows, {"selfgen_mean_train_reward_pilot"})
    assert values["selfgen_frac_groups_nonzero_reward_variance_pilot"] == 2 / 6
    assert values["selfgen_mean_train_reward_pilot"] == pytest.approx(statistics.fmean(rows[0]["rewards"] + rows[2]["rewards"]))
    assert _recomputed(ctx, [{"arm": "generated", "item_ids": [], "rewards": []}], set()) == {}
    assert _recomputed(ctx, [{"heldout_mean_reward": {}}], set()) == {}
