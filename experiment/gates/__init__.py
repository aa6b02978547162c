"""The gates: one table, in contract order, of what each gate decides and the step of each family that does it.

`GATES[name]` says what the gate decides, the rules it carries (docs/contract-rules.md) and its STEPS: the
function of each family that does the work, `experiment.rl.steps.<gate>` (RL: GS1 and stock GRPO),
`experiment.sft.steps.<gate>` (SFT: TriMuon) and, where the self-generated-tasks spec differs from plain RL,
`experiment.selfgen.steps.<gate>`. `run_gate(name, ctx)` honours the plan (a gate it marks not applicable is
never run), picks the step of the run's family (`step_family`) and times it; no gate branches on the training
type. Two gates hold logic of their own beside the table: `spec_intake` (the same for every family) and
`decision` (`decision.decided`: the grader's checks handed to the family's step, and the verdict it returns graded
and posted). Read a run from here into its family folder.

A gate whose family has no step returns `failed` ("not implemented: ..."). The gate order and verdict type live
in experiment.contract.verdict, the context in experiment.run.context; they are re-exported here for the flow.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial
from typing import Callable, Mapping

from experiment.contract.verdict import GATE_ORDER, GateStatus, GateVerdict, not_implemented
from experiment.gates import decision, spec_intake
from experiment.rl.steps import activation_gate as rl_activation_gate
from experiment.rl.steps import arm_training as rl_arm_training
from experiment.rl.steps import correctness_preflight as rl_correctness_preflight
from experiment.rl.steps import decision as rl_decision
from experiment.rl.steps import evaluation as rl_evaluation
from experiment.rl.steps import feasibility_pilot as rl_feasibility_pilot
from experiment.rl.steps import preflight_probe as rl_preflight_probe
from experiment.rl.steps import restoration_preflight as rl_restoration_preflight
from experiment.run.context import RunContext, run_side_by_side
from experiment.selfgen.steps import activation_gate as selfgen_activation_gate
from experiment.selfgen.steps import generation_audit as selfgen_generation_audit
from experiment.sft.steps import arm_training as sft_arm_training
from experiment.sft.steps import correctness_preflight as sft_correctness_preflight
from experiment.sft.steps import decision as sft_decision
from experiment.sft.steps import evaluation as sft_evaluation
from experiment.sft.steps import feasibility_pilot as sft_feasibility_pilot
from experiment.sft.steps import preflight_probe as sft_preflight_probe
from experiment.sft.steps import restoration_preflight as sft_restoration_preflight

__all__ = ["GATES", "GATE_ORDER", "Gate", "GateStatus", "GateVerdict", "RunContext", "not_implemented", "run_gate",
           "run_side_by_side", "step_family"]

Step = Callable[[RunContext], GateVerdict]
EVERY_FAMILY = ("rl", "sft", "selfgen")


@dataclass(frozen=True)
class Gate:
    name: str
    decides: str  # the question the gate answers, in one sentence
    does: str  # how, in a few lines
    rules: str  # the contract rules it carries (docs/contract-rules.md)
    steps: Mapping[str, Step]  # family -> step; a self-generated-tasks run takes "rl" where no "selfgen" is given


GATES: dict[str, Gate] = {gate.name: gate for gate in (
    Gate("spec_intake", "What will this run execute, on which model?",
         "Records the spec, its revision file and the execution plan as evidence, resolves the served model (a "
         "substitute is a deviation, said in the summary) and posts RESULT status running with every deviation.",
         "RUN-1, GEN-6", {family: spec_intake.run for family in EVERY_FAMILY}),
    Gate("preflight_probe", "Does the service accept every arm exactly as the spec states it?",
         "Per arm, a training client with the arm's optimizer, rank and seed, one forward_backward with the arm's "
         "loss and one optim_step: a finite loss and the requested optimizer family as the server reports it. A "
         "rejected optimizer needs a fork; it is never swapped silently.",
         "RUN-2", {"rl": rl_preflight_probe.run, "sft": sft_preflight_probe.run}),
    Gate("generation_audit", "Are the self-generated training tasks sound, before any update on them?",
         "Generates, sandboxes and filters tasks, freezes them with the full evaluation set, and re-solves a "
         "deterministic sample blind with an independent solver; label errors and evaluation overlaps must stay "
         "within the spec's limits (repaired, re-frozen and re-audited otherwise). One step, the self-generated "
         "family's, for any spec the plan applies it to.",
         "GA-1..GA-11", {family: selfgen_generation_audit.run for family in EVERY_FAMILY}),
    Gate("correctness_preflight", "Is the run's new loss or optimizer path correct, before any full sweep?",
         "Measures the path on one fixed input against an independent reference under the spec's tolerances, "
         "with the probe scripts and input kept; a missing or failed check, or an unpinned revision, stops the run. "
         "RL (GS1): the loss path against the stock GRPO path and a float64 reference. SFT (TriMuon): the forked "
         "optimizer's update against the independent float64 reference.",
         "CORR-1..CORR-11", {"rl": rl_correctness_preflight.run, "sft": sft_correctness_preflight.run}),
    Gate("restoration_preflight", "Does every arm start from one proven initial state?",
         "Saves one immutable initialization checkpoint and creates every arm's client (SFT: every training run's) "
         "from it; adapter hashes or load responses, optimizer checks from server responses and initial outputs "
         "must agree, and a create-save-restore update must reproduce the uninterrupted client's.",
         "REST-1..REST-10", {"rl": rl_restoration_preflight.run, "sft": sft_restoration_preflight.run}),
    Gate("feasibility_pilot", "Does the full run fit the spec's budget, by a measured pilot?",
         "A timing pilot in the full run's regime (clients from the initialization checkpoint, real steps per arm "
         "on throwaway clients, evaluation of a held-out slice) projects the full run plus a recovery reserve "
         "against the budget; the record is published first and the run stops when the comparison cannot fit.",
         "FEAS-1..FEAS-12", {"rl": rl_feasibility_pilot.run, "sft": sft_feasibility_pilot.run}),
    Gate("activation_gate", "Is the treatment really active in the full-run regime, before full training?",
         "Measures every check of the spec's activation_gate on a short pilot in the full-run regime on throwaway "
         "clients; ranges come from the spec and never change, and only a pre-registered calibration may be "
         "tried. RL (GS1): kernel-baseline activity and the bandwidth calibration. Self-generated tasks: each arm "
         "on its intended data, live reward groups, no evaluation overlap. Not applicable to SFT specs.",
         "ACT-1, ACT-2", {"rl": rl_activation_gate.run, "selfgen": selfgen_activation_gate.run}),
    Gate("arm_training", "Train every arm of the comparison, resumable step by step.",
         "Every arm (SFT: every run of every arm's LR grid) trains from the proven initial state on the same "
         "prompts or batches in the same order, each as its own task run (ctx.run_each); progress is saved so a "
         "capacity stop, a crash or a re-run continues, every restore verified like a creation.",
         "RUN-1, ADAPT-1, CAP-1, REST-4", {"rl": rl_arm_training.run, "sft": sft_arm_training.run}),
    Gate("evaluation", "Score the base model and every trained arm with one frozen evaluator.",
         "The evaluator (code hash, prompt template, decoding, parser, explicit item ids) is frozen and posted "
         "before any score; the untrained base and every trained arm are scored, each as its own task run, with "
         "one retained prediction row per item. RL: greedy accuracy. SFT: held-out token-mean NLL.",
         "EVAL-1..EVAL-11, LOSS-1, LOSS-2", {"rl": rl_evaluation.run, "sft": sft_evaluation.run}),
    Gate("decision", "The verdict, from the retained evidence, in the spec's vocabulary, graded before it is posted.",
         "RL: the decision_rule applied to item-level observations recomputed from the retained predictions. SFT "
         "(no decision_rule): the best-LR comparison against the revision file's verdict_rule, no decision object. "
         "Either way the grader's run-dir checks run before the verdict and RESULT.grade carries the categories.",
         "DEC-1..DEC-14, GEN-3, GEN-4, GEN-9",
         {"rl": partial(decision.decided, rl_decision.run), "sft": partial(decision.decided, sft_decision.run)}),
)}
assert tuple(GATES) == GATE_ORDER


def step_family(ctx: RunContext) -> str:
    """The family whose gate steps a run takes: its training type ("rl", "sft"), or "selfgen" for an RL
    spec whose treatment arm trains on the audited self-generated tasks (Spec.data_source)."""
    if ctx.plan.training_type == "rl":
        treatment = ctx.plan.role_to_arm.get("treatment", {}).get("arm", "")
        if any(arm.name == treatment for arm in ctx.spec.arms or []) and \
                ctx.spec.data_source(treatment) == "generated_tasks":
            return "selfgen"
    return ctx.plan.training_type


def run_gate(name: str, ctx: RunContext) -> GateVerdict:
    """Run one gate: the plan's not_applicable honoured, the step of the run's family, its duration measured."""
    planned = ctx.plan.gate(name)
    if not planned.blocks:
        return GateVerdict(gate=name, status="not_applicable", reasons=[planned.reason])
    steps = GATES[name].steps
    family = step_family(ctx)
    step = steps.get(family) or (steps.get("rl") if family == "selfgen" else None)
    if step is None:
        return not_implemented(name, f"{name} for training_type {ctx.plan.training_type!r}")
    started = time.monotonic()
    verdict = step(ctx)
    verdict.duration_s = round(time.monotonic() - started, 3)
    return verdict
