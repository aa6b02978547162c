"""The grader's activation rules (experiment/grading/activation.py: ACT-1, ACT-2 and ACT-3's pilot-step
arithmetic), each on a minimal context whose expected finding is worked out in the test from the module's
stated rules (issue 28 item 7: the complete mutation run of experiment/grading/)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from experiment.grading import activation as rules
from grading_contexts.activation import gs1_rows as _gs1_rows  # GS1 pilot rows whose values that file works out
from grading_contexts.activation import ORDER, SETTINGS, settings_row as _row
from experiment import data as data_module
from experiment.data import seeded_shuffle  # the order the run's recipe trains in

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
    ([1.0, 2.0], [1.0], False),  # a longer recompute is not the logged list's prefix
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
    # one advantage per reward, even where the fraction of the wrong number of advantages is the logged 0.5
    ({"advantages": [0.5, 0.0]}, "frac_nonzero_advantage is not what its advantages give"),
    ({"advantages": [0.5, -0.5, 0.0, 0.0, 0.5, 0.0]}, "frac_nonzero_advantage is not what its advantages give"),
], ids=["one prompt", "five rewards", "smaller group", "more rollouts", "more advantages", "higher mean",
        "higher fraction", "two advantages, same fraction", "six advantages, same fraction"])
def test_a_pilot_step_off_on_the_other_side_is_not_what_it_gives(changes, problem):
    assert rules._step_problems(_row(**changes), SETTINGS, ORDER) == [problem]


def test_the_treatment_is_the_logs_first_arm_whichever_way_the_arm_names_sort():
    """The same log with the treatment named A and the baseline Z (the reverse of _selfgen_rows' order)."""
    rows = [{**row, "arm": {"T": "A", "B": "Z"}[row["arm"]]} if "arm" in row else row for row in _selfgen_rows()]
    good = {"selfgen_frac_groups_nonzero_reward_variance_pilot": 0.25, "selfgen_mean_train_reward_pilot": 0.625}
    assert _act2(good, rows) == []


# ---------------------------------------------------------------- ACT-2: the self-generated spec's batch fractions

TREATMENT_FRACTION, BASELINE_FRACTION = rules.SELFGEN_FROM_LOG[2], rules.SELFGEN_FROM_LOG[3]


def _fraction_rows():
    """Treatment T trains on prompts a, b, c, d (two steps); baseline B on 1, 2, 3 (ids logged as numbers)."""
    return [{"arm": "T", "item_ids": ["a", "b"], "rewards": [1, 0, 1, 1]},
            {"arm": "T", "item_ids": ["c", "d"], "rewards": [0, 0, 1, 1]},
            {"arm": "B", "item_ids": [1, 2, 3], "rewards": [1, 1, 0, 0, 1, 0]}]


def test_the_batch_fractions_are_the_share_of_each_arms_prompts_in_its_known_training_set(monkeypatch):
    """The generated set holds a and c (2 of the treatment's 4 prompts); the dataset holds "2" (1 of the
    baseline's 3, compared as text since a log may write an id as a number); where neither set is known
    the fractions are not recomputed; an empty known set gives 0, not absence."""
    monkeypatch.setattr(rules, "_generated_order", lambda ctx: ["c", "z", "a"])
    monkeypatch.setattr(rules, "_dataset_order", lambda ctx: ["2", "9"])
    values = rules._recomputed(None, _fraction_rows(), set())
    assert values[TREATMENT_FRACTION] == 2 / 4
    assert values[BASELINE_FRACTION] == 1 / 3
    monkeypatch.setattr(rules, "_generated_order", lambda ctx: None)
    monkeypatch.setattr(rules, "_dataset_order", lambda ctx: [])
    values = rules._recomputed(None, _fraction_rows(), set())
    assert TREATMENT_FRACTION not in values
    assert values[BASELINE_FRACTION] == 0.0
    only_treatment = [row for row in _fraction_rows() if row["arm"] == "T"]
    assert BASELINE_FRACTION not in rules._recomputed(None, only_treatment, set())  # no baseline prompts: no share


def _generation_block(n_accept):
    return {"instruction": "write a task", "generator_model": "g", "solver_model": "s", "n_accept": n_accept,
            "filter_samples": 4, "keep_band": [1, 3], "words": [10, 100], "filter_max_tokens": 64,
            "sandbox_timeout_s": 5, "max_candidates": 50}


def _generated_ctx(rows, n_accept=2, spec_model=True):
    model = SimpleNamespace(to_dict=lambda: {"generation": _generation_block(n_accept)}) if spec_model else None
    return SimpleNamespace(result={"generation_audit": {"dataset_file": "tasks.jsonl"}}, spec_model=model,
                           evidence=_Logs({"tasks.jsonl": rows}) if rows is not None else _Logs({}))


def test_the_generated_order_is_the_seed_0_shuffle_of_the_first_n_accept_accepted_candidates():
    # a disposition outside the vocabulary (here empty, sorting before "accepted") is not an acceptance
    rows = [{"item_id": "r1", "disposition": "rejected"}, {"item_id": "e1", "disposition": ""},
            {"item_id": 7, "disposition": "accepted"},
            {"item_id": "a2", "disposition": "accepted"}, {"item_id": "a3", "disposition": "accepted"}]
    assert rules._generated_order(_generated_ctx(rows)) == seeded_shuffle(["7", "a2"], seed=0)
    assert sorted(rules._generated_order(_generated_ctx(rows, n_accept=5))) == ["7", "a2", "a3"]
    assert rules._generated_order(_generated_ctx(None)) is None  # dataset file not retained
    assert rules._generated_order(_generated_ctx(rows, spec_model=False)) is None
    broken = SimpleNamespace(to_dict=lambda: {"generation": {"n_accept": 2}})  # lacks the block's other keys
    assert rules._generated_order(SimpleNamespace(**{**vars(_generated_ctx(rows)), "spec_model": broken})) is None


def test_the_dataset_order_is_the_seed_0_shuffle_of_the_specs_data_file_cut_to_n_examples(tmp_path, monkeypatch):
    """A task file in an allowed data directory: its ids in a seed-0 shuffle, the first n_examples of it
    (all when n_examples is not an integer); a file that cannot be read gives no order (None)."""
    monkeypatch.setenv(data_module.DATA_DIRS_ENV, str(tmp_path))
    monkeypatch.setattr(rules, "_TRAINING_ORDERS", {})
    ids = [f"t{k}" for k in range(8)]
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(f'{{"id": "{i}", "question": "q", "answer": "1"}}\n' for i in ids))
    order = seeded_shuffle(ids, seed=0)
    assert order != ids  # the shuffle is seen
    spec = {"dataset": {"path": str(path), "n_examples": 3}}
    assert rules._dataset_order(SimpleNamespace(spec=spec)) == order[:3]
    assert rules._dataset_order(SimpleNamespace(spec={"dataset": {"path": str(path), "n_examples": "3"}})) == order
    assert rules._dataset_order(SimpleNamespace(spec={"dataset": {"path": str(tmp_path / "absent.jsonl")}})) is None


class _LogsWithReasons(_Logs):
    """Evidence that says why each unreadable file is unreadable (the store's own words per file)."""

    def why(self, name):
        return f"{name} is over the size cap" if self.files.get(name) is None else None


def test_act2_gives_the_reason_of_the_last_log_and_names_the_last_log_that_does_not_recompute():
    """Two retained logs, the last one unreadable: the reason given is the last log's, not the first's.
    Then the last log's rewards are text (fsum refuses them): the log named is the last one."""
    files = {"activation-pilot-bw1.jsonl": None, "activation-pilot-bw2.jsonl": None}
    ctx = _ctx({"m1": 0.5}, files=files)
    ctx.evidence = _LogsWithReasons(files)
    assert _messages(rules.ACT_2(ctx)) == [
        ("ACT-2", "unverified", "activation-pilot-bw2.jsonl: activation-pilot-bw2.jsonl is over the size cap")]
    text_rewards = [{"arm": "T", "item_ids": ["a"], "rewards": ["1", "0"]}]
    files = {"activation-pilot-bw1.jsonl": _selfgen_rows(), "activation-pilot-bw2.jsonl": text_rewards}
    ctx = _ctx({"m1": 0.5}, plan=_plan(SELFGEN), files=files)
    ctx.result["generation_audit"] = {}
    [issue] = _messages(rules.ACT_2(ctx))
    assert issue[:2] == ("ACT-2", "invalid")
    assert issue[2].startswith("activation-pilot-bw2.jsonl cannot be recomputed (TypeError: ")


# ---------------------------------------------------------------- ACT-2: values the pilot cannot give

GS1_CHECKS = [{"metric": "pilot_mean_reward", "min": 0.0}, {"metric": "executed_group_size_treatment", "min": 0.0},
              {"metric": "kernel_effective_neighbors_p10", "min": 0.0}]


def _gs1_undetermined_rows():
    """Two treatment steps of group sizes 2 and 4 (a mixed group size: the recompute gives nan), no
    effective neighbours logged (the 10th percentile has no value: None), rewards 1, 0 | 1, 1, 0, 0
    (mean 0.5)."""
    return [{"arm": "T", "item_ids": ["a"], "rewards": [1.0, 0.0], "advantages": [0.5, -0.5], "baseline_values": [],
             "effective_neighbors": [], "executed_group_size": 2},
            {"arm": "T", "item_ids": ["b"], "rewards": [1.0, 1.0, 0.0, 0.0], "advantages": [0.5, 0.5, -0.5, -0.5],
             "baseline_values": [], "effective_neighbors": [], "executed_group_size": 4},
            {"arm": "B", "item_ids": ["c"], "rewards": [0.0, 1.0], "advantages": [-0.5, 0.5], "executed_group_size": 2},
            {"heldout_mean_reward": {"a": 0.5}}]


def _act2_gs1(values, names=("activation-pilot-bw1.jsonl",)):
    ctx = _ctx(values, plan=_plan(GS1_CHECKS), files={name: _gs1_undetermined_rows() for name in names})
    return _messages(rules.ACT_2(ctx))


def test_a_value_the_pilot_cannot_give_is_recorded_as_none_and_a_number_is_never_recorded_as_none():
    """A recompute of None (nothing to take a percentile of) or nan (mixed group sizes) matches only a
    recorded null; a recomputed number does not match a recorded null, and a number does not match nan."""
    assert _act2_gs1({"pilot_mean_reward": 0.5, "executed_group_size_treatment": None,
                      "kernel_effective_neighbors_p10": None}) == []
    assert _act2_gs1({"pilot_mean_reward": None, "executed_group_size_treatment": None,
                      "kernel_effective_neighbors_p10": None}) == [
        ("ACT-2", "invalid", "activation values do not recompute from activation-pilot-bw1.jsonl: "
                             "pilot_mean_reward None (recomputed 0.5)")]
    [(rule, status, message)] = _act2_gs1({"pilot_mean_reward": 0.5, "executed_group_size_treatment": 2.0,
                                           "kernel_effective_neighbors_p10": None})
    assert (rule, status) == ("ACT-2", "invalid")
    assert message == ("activation values do not recompute from activation-pilot-bw1.jsonl: "
                       "executed_group_size_treatment 2.0 (recomputed nan)")


def test_act2_names_the_last_retained_log_in_its_finding():
    assert _act2_gs1({"pilot_mean_reward": 0.25, "executed_group_size_treatment": None,
                      "kernel_effective_neighbors_p10": None},
                     names=("activation-pilot-bw1.jsonl", "activation-pilot-bw2.jsonl")) == [
        ("ACT-2", "invalid", "activation values do not recompute from activation-pilot-bw2.jsonl: "
                             "pilot_mean_reward 0.25 (recomputed 0.5)")]


# ---------------------------------------------------------------- ACT-3: each trained arm's loop settings


def _settings_ctx(spec, arms):
    plan = SimpleNamespace(trained_arms=[SimpleNamespace(name=n, group_size=g, groups_per_batch=b) for n, g, b in arms])
    return SimpleNamespace(spec=spec, plan=plan)


def test_each_trained_arm_takes_its_specs_advantage_and_the_logs_bandwidth():
    """The spec names the kernel estimator for K and nothing for G (group mean, the default); a log named
    with bandwidth 2 sets it, a log without one leaves the estimator's default; an arm the plan gives no
    group size or no groups per batch is not a pilot arm."""
    spec = {"arms": [{"name": "K", "advantage": "kernel_cross_prompt_baseline"}, {"name": "G"}]}
    arms = [("K", 4, 2), ("G", 8, 1), ("untrained size", 0, 2), ("untrained groups", 4, 0)]
    settings = rules._arm_settings(_settings_ctx(spec, arms), 2.0)
    assert settings == {"K": rules._ArmLoop("K", "kernel_cross_prompt_baseline", 4, 2, 2.0),
                        "G": rules._ArmLoop("G", "group_mean", 8, 1, 2.0)}
    default = rules._arm_settings(_settings_ctx(spec, arms), None)
    assert {name: arm.kernel_bandwidth for name, arm in default.items()} == {"K": 0.5, "G": 0.5}  # advantages' default
    assert rules._arm_settings(_settings_ctx(None, arms[:1]), 1.0) == {"K": rules._ArmLoop("K", "group_mean", 4, 2, 1.0)}


# ---------------------------------------------------------------- ACT-3: a whole pilot log

GENERATED_ORDER, DATASET_ORDER = ["a", "b", "c", "d"], ["x", "y", "z", "w"]


def _pilot_step(arm, step, ids, rewards):
    """A group-mean step of groups of 2 as the loop logs it: advantages are each reward minus its group's mean."""
    groups = [rewards[k:k + 2] for k in range(0, len(rewards), 2)]
    advantages = [r - sum(g) / 2 for g in groups for r in g]
    return {"arm": arm, "step": step, "item_ids": ids, "rewards": rewards, "advantages": advantages,
            "executed_group_size": 2, "n_rollouts": len(rewards), "mean_reward": sum(rewards) / len(rewards),
            "frac_nonzero_advantage": sum(1 for a in advantages if a) / len(advantages),
            "baseline_values": [], "effective_neighbors": [], "prompt_features": [], "kernel_fallbacks": 0}


def _pilot_log():
    """The pilot as the gate runs it: treatment T's two steps on the generated order, baseline B's one
    step on the dataset's order, then the held-out means of T's first step's prompts."""
    return [_pilot_step("T", 0, ["a", "b"], [1.0, 0.0, 1.0, 1.0]), _pilot_step("T", 1, ["c", "d"], [0.0, 0.0, 1.0, 0.0]),
            _pilot_step("B", 0, ["x", "y"], [1.0, 1.0, 0.0, 1.0]), {"heldout_mean_reward": {"a": 0.5, "b": 0.25}}]


def _log_ctx(monkeypatch, roles=("T", "B")):
    monkeypatch.setattr(rules, "_generated_order", lambda ctx: list(GENERATED_ORDER))
    monkeypatch.setattr(rules, "_dataset_order", lambda ctx: list(DATASET_ORDER))
    plan = SimpleNamespace(role_to_arm={"treatment": {"arm": roles[0]}, "baseline": {"arm": roles[1]}},
                           trained_arms=[SimpleNamespace(name=n, group_size=2, groups_per_batch=2) for n in ("T", "B")])
    spec_model = SimpleNamespace(data_source=lambda arm: "generated_tasks" if arm == "T" else "dataset")
    return SimpleNamespace(plan=plan, spec={"arms": [{"name": "T"}, {"name": "B"}]}, spec_model=spec_model)


def _log_problems(monkeypatch, rows, roles=("T", "B")):
    return rules._log_problems(_log_ctx(monkeypatch, roles), "activation-pilot-bwselfgen.jsonl", rows)


def test_a_pilot_log_as_the_gate_runs_it_has_no_problem(monkeypatch):
    assert _log_problems(monkeypatch, _pilot_log()) == []


def test_each_arm_is_checked_against_its_own_training_order(monkeypatch):
    """T trains on the generated order, B on the dataset's: B's prompts in T's place (and T's in B's)
    are off both arms' orders."""
    rows = _pilot_log()
    rows[0]["item_ids"], rows[2]["item_ids"] = ["x", "y"], ["a", "b"]
    assert _log_problems(monkeypatch, rows) == [
        "T step 0: item_ids are not the arm's training order at this step",
        "B step 0: item_ids are not the arm's training order at this step",
        "the held-out means are not one number per prompt of the treatment's first step"]


def test_the_log_ends_with_the_held_out_means_of_the_first_steps_prompts(monkeypatch):
    rows = _pilot_log()[:-1]
    assert _log_problems(monkeypatch, rows) == [
        "its last row is not the held-out means ({\"heldout_mean_reward\": {...}})",
        "its steps are [('T', 0), ('T', 1)], the pilot runs [('T', 0), ('T', 1), ('B', 0)] (arm, step)"]
    extra_key = _pilot_log()
    extra_key[-1] = {"heldout_mean_reward": {"a": 0.5, "b": 0.25}, "note": "x"}
    not_a_dict = _pilot_log()
    not_a_dict[-1] = {"heldout_mean_reward": [0.5, 0.25]}
    empty = _pilot_log()
    empty[-1] = {}
    for rows in (extra_key, not_a_dict, empty):
        assert _log_problems(monkeypatch, rows)[:1] == [
            "its last row is not the held-out means ({\"heldout_mean_reward\": {...}})"]
    for heldout in ({"a": 0.5}, {"a": 0.5, "b": 0.25, "c": 1.0}, {"a": 0.5, "b": "0.25"}, {"a": 0.5, "x": 0.25}):
        rows = _pilot_log()
        rows[-1] = {"heldout_mean_reward": heldout}
        assert _log_problems(monkeypatch, rows) == [
            "the held-out means are not one number per prompt of the treatment's first step"], heldout
    rows = _pilot_log()
    rows[-1] = {"heldout_mean_reward": {"b": 0.25, "a": 0.5}}  # another key order: the same means
    assert _log_problems(monkeypatch, rows) == []


def test_the_steps_are_the_treatments_pilot_steps_then_one_baseline_step(monkeypatch):
    rows = _pilot_log()
    rows[1], rows[2] = rows[2], rows[1]
    assert _log_problems(monkeypatch, rows) == [
        "its steps are [('T', 0), ('B', 0), ('T', 1)], the pilot runs [('T', 0), ('T', 1), ('B', 0)] (arm, step)"]
    assert _log_problems(monkeypatch, _pilot_log(), roles=("B", "T")) == [
        "its steps are [('T', 0), ('T', 1), ('B', 0)], the pilot runs [('B', 0), ('B', 1), ('T', 0)] (arm, step)"]


def test_a_log_of_arms_the_plan_does_not_train_is_not_checked(monkeypatch):
    assert _log_problems(monkeypatch, [], roles=("T", "other")) == []
    assert _log_problems(monkeypatch, [], roles=("other", "B")) == []


def test_advantages_are_recomputed_only_for_steps_whose_counts_hold(monkeypatch):
    """A moved advantage (with its fraction kept consistent) is found by the recompute; a step whose
    counts are already wrong is reported for those, and its advantages are not recomputed."""
    rows = _pilot_log()
    rows[1]["advantages"] = [0.5, -0.5, 0.5, -0.5]
    rows[1]["frac_nonzero_advantage"] = 1.0
    assert _log_problems(monkeypatch, rows) == ["T step 1: advantages do not recompute from its rewards"]
    rows[1]["mean_reward"] = 0.5
    assert _log_problems(monkeypatch, rows) == ["T step 1: mean_reward is not the mean of its rewards"]
    rows = _pilot_log()
    rows[2]["advantages"] = [0.5, -0.5, 0.5, -0.5]
    rows[2]["frac_nonzero_advantage"] = 1.0
    assert _log_problems(monkeypatch, rows) == ["B step 0: advantages do not recompute from its rewards"]


# ---------------------------------------------------------------- ACT-3: a kernel arm's recompute

# GS1's kernel arm: one rollout per prompt (the loop adds a step's rollouts, each with its prompt's features, to
# the window)
KERNEL = rules._ArmLoop("K", "kernel_cross_prompt_baseline", group_size=1, groups_per_batch=4, kernel_bandwidth=0.5)
SAME_PROMPTS = [[10, -0.5]] * 4  # equal features: every kernel weight is exp(0) = 1


def _kernel_rows():
    return [{"step": 0, "item_ids": ["a", "b", "c", "d"], "rewards": [1.0, 0.0, 1.0, 1.0], "prompt_features": SAME_PROMPTS},
            {"step": 1, "item_ids": ["e", "f", "g", "h"], "rewards": [0.0, 0.0, 0.0, 1.0], "prompt_features": SAME_PROMPTS}]


def test_a_kernel_arms_baselines_are_the_weighted_means_of_the_others_and_the_window_carries_over():
    """With equal prompt features every other rollout weighs 1, so a rollout's baseline is the mean reward of
    the others: step 0, the batch's other three (sum 3 - r); step 1, its other three plus step 0's four in
    the window (1 - r + 3 over 7). Neighbours: 3, then 7; no fallback (mass >= 1)."""
    expected = rules._expected_advantages(KERNEL, _kernel_rows())
    step0, step1 = expected
    assert step0["baseline_values"] == pytest.approx([2 / 3, 1.0, 2 / 3, 2 / 3])
    assert step0["advantages"] == pytest.approx([1 / 3, -1.0, 1 / 3, 1 / 3])
    assert step0["effective_neighbors"] == pytest.approx([3.0] * 4)
    assert step1["baseline_values"] == pytest.approx([4 / 7, 4 / 7, 4 / 7, 3 / 7])
    assert step1["advantages"] == pytest.approx([-4 / 7, -4 / 7, -4 / 7, 4 / 7])
    assert step1["effective_neighbors"] == pytest.approx([7.0] * 4)
    assert step0["kernel_fallbacks"] == step1["kernel_fallbacks"] == 0
    assert set(step0) == {"advantages", "baseline_values", "effective_neighbors", "kernel_fallbacks"}


def test_a_kernel_arm_with_two_rollouts_per_prompt_carries_every_rollout_into_the_window():
    """The same rewards as above from two prompts x two rollouts: each rollout takes its prompt's features, in
    the batch and in the window, so step 1 draws on step 0's four rollouts (not two prompts): 4/7 and 3/7 again.
    Before, the window was given four rewards and two feature pairs, and the recompute stopped (ValueError)."""
    paired = rules._ArmLoop("K", "kernel_cross_prompt_baseline", group_size=2, groups_per_batch=2, kernel_bandwidth=0.5)
    rows = [{**row, "item_ids": row["item_ids"][:2], "prompt_features": SAME_PROMPTS[:2]} for row in _kernel_rows()]
    step0, step1 = rules._expected_advantages(paired, rows)
    assert step0["baseline_values"] == pytest.approx([2 / 3, 1.0, 2 / 3, 2 / 3])
    assert step1["baseline_values"] == pytest.approx([4 / 7, 4 / 7, 4 / 7, 3 / 7])
    assert step1["effective_neighbors"] == pytest.approx([7.0] * 4)


def test_a_kernel_rollout_without_kernel_mass_falls_back_to_the_window_mean_and_is_counted():
    """One rollout per prompt, two prompts far apart under bandwidth 0.1 (standardized features 2 apart in each
    column: weight exp(-400)): both fall back to the other rollout's reward."""
    narrow = rules._ArmLoop("K", "kernel_cross_prompt_baseline", group_size=1, groups_per_batch=2, kernel_bandwidth=0.1)
    [step] = rules._expected_advantages(narrow, [{"step": 0, "item_ids": ["a", "b"], "rewards": [1.0, 0.0],
                                                 "prompt_features": [[10, -0.5], [40, -1.5]]}])
    assert step["kernel_fallbacks"] == 2
    assert step["baseline_values"] == pytest.approx([0.0, 1.0])
    assert step["advantages"] == pytest.approx([1.0, -1.0])


@pytest.mark.parametrize("features", [[[10, -0.5]] * 3, [[10, -0.5]] * 5, [[10, -0.5]] * 3 + [[10]],
                                      [[10, -0.5]] * 3 + [[10, -0.5, 1.0]]],
                         ids=["three pairs for four prompts", "five pairs for four prompts", "a pair short", "a triple"])
def test_kernel_features_are_one_length_and_logprob_pair_per_prompt(features):
    rows = [{"step": 0, "item_ids": ["a", "b", "c", "d"], "rewards": [1.0, 0.0, 1.0, 1.0], "prompt_features": features}]
    with pytest.raises(ValueError, match="prompt_features are not one"):
        rules._expected_advantages(KERNEL, rows)


def test_a_kernel_step_that_does_not_recompute_is_named_with_its_prompt_features():
    rows = [{**row, **wants} for row, wants in zip(_kernel_rows(), rules._expected_advantages(KERNEL, _kernel_rows()))]
    assert rules._advantage_problems("K", KERNEL, rows) == []
    noisy = [{**row, "advantages": [a + 1e-13 for a in row["advantages"]]} for row in rows]
    assert rules._advantage_problems("K", KERNEL, noisy) == []  # logged floats recompute within float noise
    fractional = [dict(rows[0]), {**rows[1], "kernel_fallbacks": 1e-13}]
    assert rules._advantage_problems("K", KERNEL, fractional) == [  # a count compares exactly, without that noise
        "K step 1: kernel_fallbacks do not recompute from its rewards and prompt features"]
    rows[1] = {**rows[1], "kernel_fallbacks": 1}
    rows[0] = {**rows[0], "effective_neighbors": [3.0, 3.0, 3.0, 2.0]}
    assert rules._advantage_problems("K", KERNEL, rows) == [
        "K step 0: effective_neighbors do not recompute from its rewards and prompt features",
        "K step 1: kernel_fallbacks do not recompute from its rewards and prompt features"]
    rows[1] = {**rows[1], "prompt_features": [[10, -0.5]] * 3}
    assert rules._advantage_problems("K", KERNEL, rows) == [
        "K: the advantages cannot be recomputed (ValueError: 'prompt_features are not one (length, mean logprob) pair "
        "per prompt')"]  # the error's text as `short` quotes it


def test_the_executed_group_size_is_the_rewards_per_prompt():
    """Three rollouts for each of two prompts: 6 / 2 = 3 (not 6 - 2 = 4)."""
    settings = rules._ArmLoop("T", "group_mean", group_size=3, groups_per_batch=2, kernel_bandwidth=1.0)
    row = {"step": 0, "item_ids": ["a", "b"], "rewards": [1, 0, 0, 1, 1, 1], "advantages": [2 / 3, -1 / 3, -1 / 3, 0, 0, 0],
           "executed_group_size": 3, "n_rollouts": 6, "mean_reward": 4 / 6, "frac_nonzero_advantage": 0.5}
    assert rules._step_problems(row, settings, None) == []
    assert rules._step_problems({**row, "executed_group_size": 4}, settings, None) == [
        "executed_group_size or n_rollouts is not what its rewards give"]


@pytest.mark.parametrize("error", [KeyError, TypeError, ValueError])
def test_an_arm_the_spec_cannot_place_trains_on_the_dataset_order(error):
    """The spec cannot say where an arm's data comes from (its data_source raises): the arm is taken to train
    on the spec's dataset, whose order is then checked (not the generated tasks')."""
    def data_source(arm):
        raise error(arm)

    assert rules._trains_on_generated(SimpleNamespace(spec_model=SimpleNamespace(data_source=data_source)), "T") is False
    on_generated = SimpleNamespace(data_source=lambda arm: "generated_tasks")
    assert rules._trains_on_generated(SimpleNamespace(spec_model=on_generated), "T") is True


# ---------------------------------------------------------------- ACT-2's calibration and ACT-3 over every log


def _calibration_ctx(checks, files):
    ctx = _ctx({"selfgen_mean_train_reward_pilot": 0.625}, plan=_plan(checks), files=files)
    ctx.result["generation_audit"] = {}
    return ctx


def test_a_rejected_candidate_log_must_fail_some_check():
    """Every log before the last is a rejected candidate: one whose recomputed values (mean reward 5/8,
    variance fraction 1/4) pass every check should have run, so it is reported; the last log is the
    calibration's choice and is not a candidate; a log that cannot be read or recomputed is left to ACT-3."""
    passing = [{"metric": "selfgen_mean_train_reward_pilot", "min": 0.5},
               {"metric": "selfgen_frac_groups_nonzero_reward_variance_pilot", "min": 0.2}]
    files = {"activation-pilot-bw3.jsonl": [{"arm": "T", "item_ids": ["a"], "rewards": ["1", "0"]}],
             "activation-pilot-bw2.jsonl": None, "activation-pilot-bw1.jsonl": _selfgen_rows(),
             "activation-pilot-bw4.jsonl": _selfgen_rows()}
    assert _messages(rules.ACT_2_calibration(_calibration_ctx(passing, files))) == [
        ("ACT-2", "invalid", "activation-pilot-bw1.jsonl: a rejected calibration candidate whose recomputed values "
                             "pass every check")]
    two = {"activation-pilot-bw1.jsonl": _selfgen_rows(), "activation-pilot-bw2.jsonl": _selfgen_rows()}
    assert [issue.message.split(":")[0] for issue in rules.ACT_2_calibration(_calibration_ctx(passing, two))] == [
        "activation-pilot-bw1.jsonl"]
    one_fails = [passing[0], {**passing[1], "min": 0.3}]
    assert rules.ACT_2_calibration(_calibration_ctx(one_fails, files)) == []
    assert rules.ACT_2_calibration(_calibration_ctx(passing, {"activation-pilot-bw1.jsonl": _selfgen_rows()})) == []
    no_steps = {"activation-pilot-bw1.jsonl": [{"heldout_mean_reward": {}}], "activation-pilot-bw4.jsonl": []}
    assert rules.ACT_2_calibration(_calibration_ctx(passing, no_steps)) == []  # nothing recomputed: no verdict
    unrecorded = _calibration_ctx(passing, files)
    unrecorded.result.pop("activation_calibration")
    assert rules.ACT_2_calibration(unrecorded) == []
    assert rules.ACT_2_calibration(_calibration_ctx([], files)) == []


def _act3_ctx(monkeypatch, files, spec_model=True, checks=CHECKS):
    ctx = _log_ctx(monkeypatch)
    plan = SimpleNamespace(**vars(ctx.plan), gate=_plan(checks).gate)
    return SimpleNamespace(plan=plan, spec=ctx.spec, spec_model=ctx.spec_model if spec_model else None,
                           evidence=_Logs(files), result={})


def test_act3_checks_every_retained_pilot_log(monkeypatch):
    bad_first_step = _pilot_log()
    bad_first_step[0]["mean_reward"] = 0.0
    files = {"activation-pilot-bw1.jsonl": bad_first_step, "notes.jsonl": [], "activation-pilot-bw2.jsonl": None,
             "activation-pilot-bw3.jsonl": _pilot_log()[:-1]}
    assert _messages(rules.ACT_3(_act3_ctx(monkeypatch, files))) == [
        ("ACT-3", "invalid", "activation-pilot-bw1.jsonl: T step 0: mean_reward is not the mean of its rewards"),
        ("ACT-3", "invalid", "activation-pilot-bw3.jsonl: its last row is not the held-out means "
                             "({\"heldout_mean_reward\": {...}})"),
        ("ACT-3", "invalid", "activation-pilot-bw3.jsonl: its steps are [('T', 0), ('T', 1)], the pilot runs "
                             "[('T', 0), ('T', 1), ('B', 0)] (arm, step)")]
    assert rules.ACT_3(_act3_ctx(monkeypatch, files, spec_model=False)) == []
    assert rules.ACT_3(_act3_ctx(monkeypatch, files, checks=[])) == []


def test_a_rejected_gs1_candidate_is_recomputed_with_the_gs1_values():
    """GS1's checks name pilot_mean_reward: its candidates are recomputed with the GS1 values (mean reward
    7/12 of _gs1_rows' treatment steps), so a candidate that passes is found."""
    checks = [{"metric": "pilot_mean_reward", "min": 0.5, "max": 0.6}]
    files = {"activation-pilot-bw0.5.jsonl": _gs1_rows("kernel", "grpo"), "activation-pilot-bw1.jsonl": _gs1_rows("kernel", "grpo")}
    ctx = _ctx({"pilot_mean_reward": 0.55}, plan=_plan(checks), files=files)
    assert _messages(rules.ACT_2_calibration(ctx)) == [
        ("ACT-2", "invalid", "activation-pilot-bw0.5.jsonl: a rejected calibration candidate whose recomputed values "
                             "pass every check")]


def test_a_long_recompute_error_is_cut_to_80_characters():
    """A reward that is no number: float() quotes the whole text in its error, which the finding cuts to 80
    characters (77 and an ellipsis, inside the quotes `short` adds)."""
    rows = [{"step": 0, "item_ids": ["a", "b", "c", "d"], "rewards": ["x" * 200, 0.0, 1.0, 1.0],
             "prompt_features": SAME_PROMPTS}]
    [problem] = rules._advantage_problems("K", KERNEL, rows)
    prefix = "K: the advantages cannot be recomputed (ValueError: "
    assert problem.startswith(prefix) and problem.endswith(")")
    quoted = problem[len(prefix):-1]
    assert len(quoted) == 80 and quoted.endswith("...")


def test_a_kernel_recompute_reads_each_prompts_mean_logprob_as_its_second_feature():
    """Equal prompt lengths, different mean logprobs: only the second feature separates the prompts, so the
    baselines are the estimator's on (length, logprob) pairs, and reading the length twice (a constant column)
    would give every rollout the plain leave-one-out mean instead."""
    from experiment.rl.advantages import KernelBaselineState, gs1_kernel_advantages

    features = [[10, -0.2], [10, -0.3], [10, -2.5], [10, -2.6]]
    rewards = [1.0, 1.0, 0.0, 0.0]
    rows = [{"step": 0, "item_ids": ["a", "b", "c", "d"], "rewards": rewards, "prompt_features": features}]
    [step] = rules._expected_advantages(KERNEL, rows)
    _, wanted = gs1_kernel_advantages(rewards, [10.0] * 4, [f[1] for f in features], KernelBaselineState(),
                                      bandwidth=KERNEL.kernel_bandwidth)
    assert step["baseline_values"] == pytest.approx(wanted.baseline.tolist())
    assert step["baseline_values"] != pytest.approx([2 / 3, 2 / 3, 1 / 3, 1 / 3])  # the leave-one-out means
