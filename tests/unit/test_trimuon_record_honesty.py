"""What a TriMuon record says about what ran: the undeployed fork is a deviation (posted at spec
intake), and the verdict's selection names the steps the runs completed, not the spec's."""

from __future__ import annotations

from pathlib import Path

from experiment.contract.plan import build_plan
from experiment.contract.result import fork_deviation, intake_update
from experiment.contract.spec import load_spec
from experiment.sft.steps.decision import selection_ran

TRIMUON = Path(__file__).resolve().parents[2] / "specs" / "trimuon_vs_dimuon_no_robots.json"
GS1 = TRIMUON.with_name("gs1_kernel_vs_grpo_gsm8k.json")


def test_a_fork_that_is_not_deployed_is_a_model_deviation():
    as_written, rehearsal = build_plan(load_spec(TRIMUON)), build_plan(load_spec(TRIMUON, rehearse=True))
    deviation = fork_deviation(as_written, "embedded")
    assert deviation["field"] == "model" and "trimuon" in deviation["original"]
    assert "not deployed" in deviation["reason"]
    # a rehearsal runs the embedded backend's implementation even where it is served on its own URL
    assert fork_deviation(rehearsal, "remote") == fork_deviation(rehearsal, "embedded") is not None
    assert fork_deviation(as_written, "remote") is None  # a service URL given for a forked spec is the fork
    assert fork_deviation(build_plan(load_spec(GS1)), "embedded") is None  # nothing forked


def test_the_fork_deviation_does_not_read_as_a_model_substitution_in_the_summary():
    plan = build_plan(load_spec(TRIMUON))
    served = plan.base_model  # served as named: only the fork deviation
    summary = intake_update(plan, served, [fork_deviation(plan, "embedded")])["summary"]
    assert "does not serve" not in summary


def test_the_selection_names_the_steps_that_ran():
    per_arm = {"trimuon": {"runs": {"0.02": {"steps_completed": 20}, "0.04": {"steps_completed": 20}}},
               "dimuon_lite": {"runs": {"0.02": {"steps_completed": 20}}}}
    text = selection_ran(per_arm, "token_mean")
    assert "after the 20 steps each run completed" in text and "80" not in text
    per_arm["dimuon_lite"]["runs"]["0.02"]["steps_completed"] = 12  # a stopped run is named too
    assert "12 or 20 steps" in selection_ran(per_arm, "token_mean")
