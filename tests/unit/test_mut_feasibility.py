"""experiment.stats.feasibility's pilot size (issue 28 item 7, the complete mutation run's survivors):
the size a spec states in its command or method prose, else the project's default (one step per
arm, 32 eval items), with where it came from."""

from __future__ import annotations

from experiment.stats.feasibility import PilotSize, pilot_size


def test_without_a_stated_size_the_pilot_is_one_step_per_arm_and_32_items():
    assert pilot_size({}) == PilotSize(1, 32, "project default (the spec states no pilot size)")
    assert pilot_size({"command": "train both arms", "method": None}) == pilot_size({})


def test_the_commands_stated_size_wins_and_items_default_to_32():
    stated = pilot_size({"command": "step 2: timing pilot: 2 steps per arm plus 100 eval items"})
    assert (stated.steps_per_arm, stated.eval_items) == (2, 100)
    assert stated.source == "spec command: 'timing pilot: 2 steps per arm plus 100 eval items'"
    steps_only = pilot_size({"method": "a timing pilot - 3 steps per arm"})
    assert (steps_only.steps_per_arm, steps_only.eval_items) == (3, 32)
    assert steps_only.source.startswith("spec method: ")
    both = pilot_size({"command": "timing pilot: 4 steps per arm", "method": "timing pilot: 5 steps per arm"})
    assert both.steps_per_arm == 4
