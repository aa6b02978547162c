"""ACT-1..ACT-3 test contexts (experiment/grading/activation.py): the GS1 pilot rows whose values the
ACT-1 tests work out, and the settings rows of the generation phase."""

from __future__ import annotations

from experiment.grading import activation as rules


def gs1_rows(treatment_arm, baseline_arm):
    return [
        {"heldout_mean_reward": {"p": 0.25, "q": 0.5, "r": 1.0}},
        {"arm": treatment_arm, "item_ids": ["p", "q", "r"], "rewards": [1.0, 0.0, 1.0, 1.0, 0.0, 1.0],
         "advantages": [0.5, 0.0, -0.5, 0.0, 0.0, 0.25], "baseline_values": [0.2, 0.6, 0.9],
         "effective_neighbors": [1.0, 2.0, 3.0], "executed_group_size": 2},
        {"arm": baseline_arm, "item_ids": ["s"], "rewards": [0.0, 0.0, 0.0, 1.0], "advantages": [0.0] * 4,
         "baseline_values": [0.5], "effective_neighbors": [], "executed_group_size": 4},
        {"arm": treatment_arm, "item_ids": ["q", "r", "p"], "rewards": [0.0, 0.0, 1.0, 1.0, 1.0, 0.0],
         "advantages": [0.0, 0.0, 0.5, 0.5, 0.0, 0.0], "baseline_values": [0.9, 0.1, 0.4],
         "effective_neighbors": [4.0, 5.0, 6.0], "executed_group_size": 2},
    ]


SETTINGS = rules._ArmLoop("T", "group_mean", group_size=2, groups_per_batch=2, kernel_bandwidth=1.0)


ORDER = ["a", "b", "c", "d"]


def settings_row(**changes):
    return {"step": 0, "item_ids": ["a", "b"], "rewards": [1, 0, 1, 1], "advantages": [0.5, -0.5, 0.0, 0.0],
            "executed_group_size": 2, "n_rollouts": 4, "mean_reward": 0.75, "frac_nonzero_advantage": 0.5, **changes}
