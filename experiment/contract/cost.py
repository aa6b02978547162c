"""The static cost estimate of a spec on the production service, before anything runs (`--plan`).

The feasibility pilot measures what a run costs; this module says, from the spec alone and the production
service's measured phases (docs/service-profile.md, "Derivation of spindle-qwen3.5-2b"), whether a budget
can hold the run at all:

- `floor_seconds`: a lower bound on the wall time of one training run (the runs of a spec go side by side at
  best, so the run as a whole takes at least as long): half of the per-call fixed time the service spends on
  calls every step makes whatever its size (creating the model, the weights handed to the sampler and the
  optimizer step), with no rollout, no sequence and no evaluation counted. A budget below it cannot fit: the
  spec is refused at intake, before any service contact (experiment.contract.before_spending).
- `estimate_seconds`: the measured phases at the spec's size (setup, every step's per-sequence and per-call
  time, the greedy evaluation), one training run's critical path, plus the feasibility projection's recovery
  reserve. A budget between the floor and this may stop the run at the feasibility pilot: `--plan` predicts
  so (experiment.grading.predict).

The rates are those of the production service (Qwen3.5-2B on the shared Spindle, issue 31); a larger model is
slower, so they stay a lower bound for it. The embedded backend's pace depends on the machine it runs on, so a
spec on an embedded model (a rehearsal) has no static estimate: its feasibility pilot measures it.
GPU-hours are not estimated: the service does not say how many GPUs serve it (FEAS-5).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from experiment.contract.errors import SpecError
from experiment.stats.feasibility import RECOVERY_FRACTION

if TYPE_CHECKING:
    from experiment.contract.spec import Spec

# The production service's phases as measured (docs/service-profile.md), seconds at time factor 1.
CREATE_MODEL_S = 20.0  # create_model
LOAD_WEIGHTS_S = 10.0  # the initialization checkpoint loaded into it (setup: 20 + 10 = about 30 s)
SAMPLER_WEIGHTS_S = 5.0  # save_weights_for_sampler, every RL step
OPTIM_STEP_S = 3.2  # optim_step, every step
ROLLOUT_S = 0.25  # one sampled sequence (temperature > 0)
FORWARD_BACKWARD_S = 0.2  # one sequence through forward_backward
FORWARD_S = 0.1  # one sequence through forward (a held-out loss)
GREEDY_ITEM_S = 26.0 / 1319  # one greedy evaluation item (1,319 GSM8K test items in about 26 s)
FLOOR_FRACTION = 0.5  # the floor counts half the fixed per-call time: the service could be twice as fast

PRODUCTION_RATES = "the production service's measured phases (docs/service-profile.md, Qwen3.5-2B on Spindle)"


@dataclass(frozen=True)
class StaticCost:
    floor_seconds: float
    estimate_seconds: float
    budget_seconds: float
    basis: str

    @property
    def cannot_fit(self) -> bool:
        return self.floor_seconds > self.budget_seconds

    @property
    def may_not_fit(self) -> bool:
        return self.estimate_seconds > self.budget_seconds

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "cannot_fit": self.cannot_fit, "may_not_fit": self.may_not_fit}


def on_embedded_model(spec: Spec) -> bool:
    return str(spec.base_model).startswith("embedded/")


def static_cost(spec: Spec) -> StaticCost | None:
    """The static estimate against the spec's wall budget; None on an embedded model (a rehearsal) or when the
    spec states no steps."""
    steps = spec.steps if isinstance(spec.steps, int) and not isinstance(spec.steps, bool) else None
    if on_embedded_model(spec) or not steps:
        return None
    trained = [arm for arm in spec.arms or [] if arm.trained]
    if not trained:
        return None
    budget = float(spec.budget.max_wall_minutes) * 60
    if spec.training_type == "rl":
        rollouts = max(_rollouts(spec, arm.name) for arm in trained)
        fixed_step = SAMPLER_WEIGHTS_S + OPTIM_STEP_S
        step = fixed_step + rollouts * (ROLLOUT_S + FORWARD_BACKWARD_S)
        evaluation = spec.eval.n_examples * GREEDY_ITEM_S
        what = f"{steps} RL steps of {rollouts} rollouts"
    else:
        batch = int(spec.batch_size or 1)
        fixed_step = OPTIM_STEP_S
        step = fixed_step + batch * FORWARD_BACKWARD_S
        evaluation = spec.eval.n_examples * FORWARD_S
        what = f"{steps} SFT steps of {batch} sequences"
    floor = FLOOR_FRACTION * (CREATE_MODEL_S + steps * fixed_step)
    estimate = (CREATE_MODEL_S + LOAD_WEIGHTS_S + steps * step + evaluation) * (1 + RECOVERY_FRACTION)
    basis = (f"{PRODUCTION_RATES}; one training run's critical path ({what}, {spec.eval.n_examples} eval items); "
             f"floor: {FLOOR_FRACTION:g} x the fixed per-call time (create_model {CREATE_MODEL_S:g} s, "
             f"{fixed_step:g} s a step); estimate: every measured phase plus the {RECOVERY_FRACTION:.0%} recovery "
             "reserve")
    return StaticCost(round(floor, 1), round(estimate, 1), budget, basis)


def _rollouts(spec: Spec, arm: str) -> int:
    try:
        group_size, groups = spec.rollout_shape(arm)
    except (SpecError, KeyError):  # an arm without a batch shape is the support check's to refuse
        return 1
    return int(group_size) * int(groups)
