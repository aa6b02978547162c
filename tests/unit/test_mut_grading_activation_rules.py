"""The grader's activation rules (experiment/grading/activation.py: ACT-1, ACT-2 and ACT-3's pilot-step
arithmetic), each on a minimal context whose expected finding is worked out in the test from the module's
stated rules (issue 28 item 7: the complete mutation run of experiment/grading/)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from experiment.grading import activation as rules

CHECKS = [{"metric": "m1", "min": 0.1, "max": 0.9}, {"metric": "m2", "one_of": ["1"]}]


def _plan(checks=CHECKS, applicable=True):
    return SimpleNamespace(gate=lambda name: SimpleNamespace(applicable=applicable, details={"checks": checks}))


class _Logs:
    def __init__(self, files):
        self.files = files  # name -> rows (None: not JSONL)
        self.entries = [{"name": name} for name in files]

    def jsonl(self, name):
        return self.files.get(name)

    def why(self, name):
        return None


def _ctx(values=None, plan=None, trained=True, files=None):
    result = {"activation_calibration": {"values": values}} if values is not None else {}
    return SimpleNamespace(result=result, plan=_plan() if plan is None else plan, trained=trained,
                           evidence=_Logs(files or {}), spec=None, spec_model=None)


def _messages(issues):
    return [(issue.rule, issue.status, issue.message) for issue in issues]


# ---------------------------------------------------------------- which checks apply


def test_the_checks_are_the_applicable_gates_checks_that_name_a_metric():
    assert rules._checks(_ctx(plan=_plan(CHECKS + [{"min": 0}, "not a check"]))) == CHECKS
    assert rules._checks(_ctx(plan=_plan(applicable=False))) == []
    assert rules._checks(_ctx(plan=_plan(applicable="yes"))) == []

    def no_gate(name):
        raise KeyError(name)

    assert rules._checks(_ctx(plan=SimpleNamespace(gate=no_gate))) == []
    ctx = _ctx()
    ctx.plan = None
    assert rules._checks(ctx) == []


# ---------------------------------------------------------------- ACT-1


def test_trained_arms_need_every_checks_value_inside_its_range():
    assert rules.ACT_1(_ctx({"m1": 0.5, "m2": 1})) == []
    assert _messages(rules.ACT_1(_ctx({"m1": 0.95, "m2": 2}))) == [
        ("ACT-1", "invalid", "m1: 0.95 > max 0.9, yet arms were trained"),
        ("ACT-1", "invalid", "m2: 2 not in one_of ['1'], yet arms were trained")]
    assert _messages(rules.ACT_1(_ctx({"m1": "0.5", "m2": 1}))) == [
        ("ACT-1", "invalid", "m1: no measured value, yet arms were trained")]
    assert _messages(rules.ACT_1(_ctx())) == [
        ("ACT-1", "invalid", "arms were trained but activation_calibration.values is missing")]


def test_act1_applies_only_once_arms_were_trained_under_an_applicable_gate():
    assert rules.ACT_1(_ctx(trained=False)) == []
    assert rules.ACT_1(_ctx(plan=_plan(applicable=False))) == []


# ---------------------------------------------------------------- ACT-2 (which log, and what it says)


def test_act2_needs_a_retained_pilot_log_and_reads_the_last():
    assert _messages(rules.ACT_2(_ctx({"m1": 0.5}, files={"notes.jsonl": []}))) == [
        ("ACT-2", "unverified", "no pilot log (activation-pilot-*.jsonl) is retained, so the activation values cannot "
                                "be recomputed")]
    files = {"activation-pilot-bw1.jsonl": [], "activation-pilot-bw2.jsonl": None}
    assert _messages(rules.ACT_2(_ctx({"m1": 0.5}, files=files))) == [
        ("ACT-2", "unverified", "activation-pilot-bw2.jsonl: not JSONL")]
    files = {"activation-pilot-bw2.jsonl": None, "activation-pilot-bw1.jsonl": [{"heldout_mean_reward": {}}]}
    assert _messages(rules.ACT_2(_ctx({"m1": 0.5}, files=files))) == [
        ("ACT-2", "unverified", "activation-pilot-bw1.jsonl holds no pilot steps to recompute the values from")]


def test_act2_applies_to_recorded_values_under_an_applicable_gate():
    assert rules.ACT_2(_ctx()) == []
    assert rules.ACT_2(_ctx({"m1": 0.5}, plan=_plan(applicable=False))) == []


def _selfgen_rows():
    """Two treatment steps of two prompts, two rollouts each, and one baseline step (the self-generated
    pilot's shape). Treatment rewards [1, 0 | 1, 1] and [0, 0 | 1, 1]: groups with reward variance 1 of 4;
    mean reward 5 / 8 (the baseline's rewards count in neither)."""
    return [{"arm": "T", "step": 0, "item_ids": ["a", "b"], "rewards": [1, 0, 1, 1]},
            {"arm": "T", "step": 1, "item_ids": ["c", "d"], "rewards": [0, 0, 1, 1]},
            {"arm": "B", "step": 0, "item_ids": ["x", "y"], "rewards": [1, 1, 0, 0]},
            {"heldout_mean_reward": {"a": 0.5, "b": 0.5}}]


SELFGEN = [{"metric": "selfgen_frac_groups_nonzero_reward_variance_pilot", "min": 0.0},
           {"metric": "selfgen_mean_train_reward_pilot", "min": 0.0}]


def _act2(values, rows=None):
    ctx = _ctx(values, plan=_plan(SELFGEN), files={"activation-pilot-bwselfgen.jsonl": rows or _selfgen_rows()})
    ctx.result["generation_audit"] = {}
    return _messages(rules.ACT_2(ctx))


def test_the_self_generated_values_recompute_from_the_treatments_pilot_steps():
    good = {"selfgen_frac_groups_nonzero_reward_variance_pilot": 0.25, "selfgen_mean_train_reward_pilot": 0.625}
    assert _act2(good) == []
    bad = {**good, "selfgen_mean_train_reward_pilot": 0.5}
    assert _act2(bad) == [("ACT-2", "invalid", "activation values do not recompute from activation-pilot-bwselfgen.jsonl: "
                                               "selfgen_mean_train_reward_pilot 0.5 (recomputed 0.625)")]
    close = {**good, "selfgen_mean_train_reward_pilot": 0.625 + 1e-13}
    assert _act2(close) == []


# ---------------------------------------------------------------- ACT-3 (one pilot step)

SETTINGS = rules._ArmLoop("T", "group_mean", group_size=2, groups_per_batch=2, kernel_bandwidth=1.0)
ORDER = ["a", "b", "c", "d"]


def _row(**changes):
    return {"step": 0, "item_ids": ["a", "b"], "rewards": [1, 0, 1, 1], "advantages": [0.5, -0.5, 0.0, 0.0],
            "executed_group_size": 2, "n_rollouts": 4, "mean_reward": 0.75, "frac_nonzero_advantage": 0.5, **changes}


@pytest.mark.parametrize("changes, problem", [
    ({}, None),
    ({"step": 1, "item_ids": ["c", "d"]}, None),
    ({"item_ids": ["a", "a"]}, "item_ids are not 2 distinct prompts"),
    ({"item_ids": ["a", "b", "c"], "rewards": [1, 0, 1, 1, 0, 0]}, "item_ids are not 2 distinct prompts"),
    ({"item_ids": []}, "item_ids are not 2 distinct prompts"),
    ({"rewards": [1, 0, 1]}, "rewards are not 2 numbers per prompt"),
    ({"rewards": [1, 0, 1, "1"]}, "rewards are not 2 numbers per prompt"),
    ({"rewards": []}, "rewards are not 2 numbers per prompt"),
    ({"executed_group_size": 4}, "executed_group_size or n_rollouts is not what its rewards give"),
    ({"n_rollouts": 2}, "executed_group_size or n_rollouts is not what its rewards give"),
    ({"mean_reward": 0.5}, "mean_reward is not the mean of its rewards"),
    ({"frac_nonzero_advantage": 0.25}, "frac_nonzero_advantage is not what its advantages give"),
    ({"advantages": [0.5, -0.5, 0.0]}, "frac_nonzero_advantage is not what its advantages give"),
    ({"item_ids": ["b", "a"]}, "item_ids are not the arm's training order at this step"),
    ({"step": 1}, "item_ids are not the arm's training order at this step"),
], ids=["step 0", "step 1", "repeated prompt", "three prompts", "no prompts", "three rewards", "text reward",
        "no rewards", "group size", "rollouts", "mean", "fraction", "advantages short", "order", "order at step 1"])
def test_a_pilot_step_is_what_its_prompts_and_rewards_give(changes, problem):
    assert rules._step_problems(_row(**changes), SETTINGS, ORDER) == ([problem] if problem else [])


def test_without_a_known_training_order_the_order_is_not_checked():
    assert rules._step_problems(_row(item_ids=["b", "a"]), SETTINGS, None) == []


@pytest.mark.parametrize("mine, theirs, same", [
    ([1.0, [2.0, 3.0]], [1.0, [2.0, 3.0 + 1e-13]], True), ([1.0], [1.0, 2.0], False), ([1.0], (1.0,), False),
    (1.0, 1.0 + 1e-8, False), (1.0, "1.0", False), (None, None, False), ([], [], True), (1, True, False),
])
def test_logged_numbers_recompute_within_float_noise(mine, theirs, same):
    assert rules._same_numbers(mine, theirs) is same


@pytest.mark.parametrize("name, bandwidth", [("activation-pilot-bw0.5.jsonl", 0.5), ("activation-pilot-bw2.jsonl", 2.0),
                                             ("activation-pilot-bwselfgen.jsonl", None)])
def test_a_pilot_logs_name_carries_its_kernel_bandwidth(name, bandwidth):
    assert rules._bandwidth(name) == bandwidth


def test_a_group_mean_arms_advantages_are_each_groups_reward_minus_its_mean():
    """Groups [1, 0] and [1, 1]: means 0.5 and 1, so advantages 0.5, -0.5, 0, 0 (GRPO's group mean); a
    group-mean arm logs no kernel diagnostics."""
    row = {**_row(), "baseline_values": [], "effective_neighbors": [], "prompt_features": [], "kernel_fallbacks": 0}
    assert rules._advantage_problems("T", SETTINGS, [row]) == []
    moved = {**row, "advantages": [0.25, -0.5, 0.0, 0.0]}
    assert rules._advantage_problems("T", SETTINGS, [moved]) == ["T step 0: advantages do not recompute from its rewards"]
    diagnosed = {**row, "kernel_fallbacks": 1}
    assert rules._advantage_problems("T", SETTINGS, [diagnosed]) == [
        "T step 0: kernel diagnostics of a group-mean arm (none: empty lists and no fallbacks) do not recompute from "
        "its rewards"]


# ---------------------------------------------------------------- both sides of each comparison


@pytest.mark.parametrize("changes, problem", [
    ({"item_ids": ["a"], "rewards": [1, 0]}, "item_ids are not 2 distinct prompts"),
    ({"rewards": [1, 0, 1, 1, 0]}, "rewards are not 2 numbers per prompt"),
    ({"executed_group_size": 1}, "executed_group_size or n_rollouts is not what its rewards give"),
    ({"n_rollouts": 5}, "executed_group_size or n_rollouts is not what its rewards give"),
    ({"advantages": [0.5, -0.5, 0.0, 0.0, 0.0]}, "frac_nonzero_advantage is not what its advantages give"),
    ({"mean_reward": 1.0}, "mean_reward is not the mean of its rewards"),
    ({"frac_nonzero_advantage": 0.75}, "frac_nonzero_advantage is not what its advantages give"),
], ids=["one prompt", "five rewards", "smaller group", "more rollouts", "more advantages", "higher mean",
        "higher fraction"])
def test_a_pilot_step_off_on_the_other_side_is_not_what_it_gives(changes, problem):
    assert rules._step_problems(_row(**changes), SETTINGS, ORDER) == [problem]


def test_the_treatment_is_the_logs_first_arm_whichever_way_the_arm_names_sort():
    """The same log with the treatment named A and the baseline Z (the reverse of _selfgen_rows' order)."""
    rows = [{**row, "arm": {"T": "A", "B": "Z"}[row["arm"]]} if "arm" in row else row for row in _selfgen_rows()]
    good = {"selfgen_frac_groups_nonzero_reward_variance_pilot": 0.25, "selfgen_mean_train_reward_pilot": 0.625}
    assert _act2(good, rows) == []
