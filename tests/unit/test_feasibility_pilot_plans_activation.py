"""What the RL feasibility pilot plans for the activation gate after it (experiment/rl/steps/feasibility_pilot.py:
activation_work), on the seed specs' own plans: GS1's kernel pilot with its held-out samples and pre-registered
calibration, the self-generated spec's pilots one after another, nothing where the gate does not run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from experiment.contract.plan import build_plan
from experiment.contract.spec import load_spec
from experiment.gates import RunContext
from experiment.rl.recipe import rl_arm_settings
from experiment.rl.steps.feasibility_pilot import activation_work
from experiment.run.store import RunStore
from experiment.service.target import ServiceTarget
from experiment.stats.activation import HELDOUT_SAMPLES, PILOT_STEPS
from experiment.stats.feasibility import ActivationWork

SPECS = Path(__file__).resolve().parents[2] / "specs"


def _context(tmp_path: Path, name: str, change=None) -> RunContext:
    raw = json.loads((SPECS / name).read_text())
    if change:
        change(raw)
    path = tmp_path / name
    path.write_text(json.dumps(raw))
    revision = name.removesuffix(".json") + ".plan.json"  # the revision file that pins the spec's revisions
    shutil.copy(SPECS / revision, tmp_path / revision)
    spec = load_spec(path, rehearse=True)
    plan = build_plan(spec)
    return RunContext(spec=spec, plan=plan, store=RunStore.create(tmp_path / "runs", spec, plan),
                      service=ServiceTarget("embedded", None))


def _work(ctx: RunContext) -> ActivationWork | None:
    return activation_work(ctx, rl_arm_settings(ctx.spec, ctx.plan))


def test_gs1_plans_its_kernel_pilot_with_held_out_samples_of_every_treatment_prompt_and_one_calibration(tmp_path):
    work = _work(_context(tmp_path, "gs1_kernel_vs_grpo_gsm8k.json"))
    # 64 distinct prompts x 1 rollout per treatment step (the spec's method), HELDOUT_SAMPLES each
    assert work == ActivationWork(clients=2, steps=PILOT_STEPS + 1, lane_steps=PILOT_STEPS,
                                  heldout_samples=HELDOUT_SAMPLES * 64, heldout_samplers=1, calibration_candidates=1)


def test_gs1_without_the_calibration_sentence_plans_no_further_candidate(tmp_path):
    def no_calibration(raw):
        raw["command"] = raw["command"].replace("the single pre-registered calibration is", "no calibration:")
    work = _work(_context(tmp_path, "gs1_kernel_vs_grpo_gsm8k.json", no_calibration))
    assert work is not None and work.calibration_candidates == 0


def test_the_self_generated_spec_plans_its_two_pilots_one_after_another(tmp_path):
    assert _work(_context(tmp_path, "selfgen_tasks_vs_gsm8k.json")) == ActivationWork.generated_tasks_pilot()


def test_no_activation_gate_plans_nothing(tmp_path):
    def not_applicable(raw):
        raw["activation_gate"] = {"applicable": False, "reason": "no activation regime to check"}
    assert _work(_context(tmp_path, "gs1_kernel_vs_grpo_gsm8k.json", not_applicable)) is None
