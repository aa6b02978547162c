"""The training runs of a supervised fine-tuning spec (training_type "sft": the TriMuon spec) and where they run.

The comparison is a set of training runs (plan.training_runs: every arm x its LR grid, at every scheduled
seed), all from one proven initial state; the runs of one seed train on the same batches in the same order
(that seed's shuffle of the training rows). This module names them
(`SFTRun`, `sft_runs`), decides where every arm runs (`service_routing`) and holds the helpers the
SFT gate steps share; the steps themselves are `experiment/sft/steps/<gate>.py`, one per gate:

- preflight_probe        one client per arm with its exact optimizer and config, one optim_step on
                         one example (finite loss), the family verified from get_info; fork routing
- correctness_preflight  the optimizer path's update, measured through the service (weights read
                         back), against the independent float64 reference (experiment/stats/optim_reference.py)
                         under the plan's tolerances; the treatment-disabled path against the baseline
                         (same code: unverified); LR scaling from fresh state
- restoration_preflight  one saved initialization state; every run's client created from it,
                         adapter hash, optimizer check and initial output compared; a
                         create-save-restore update checked against the uninterrupted client
- feasibility_pilot      one measured step per arm and a held-out slice, projected sequentially
- arm_training           the runs one after another (so optimizer step times are not shared
                         CPU time), each its own task run (`ctx.run_each("train", ...)`), per-step
                         optimizer wall time, adaptation manifests; a resumed sweep keeps its
                         finished runs and restarts an unfinished one from the initialization
                         state (optimizer re-verified)
- evaluation             frozen evaluator, then the held-out token-mean NLL of the base state and
                         every run on exactly eval.n_examples conversations (loss_eval, LOSS-1),
                         one after another, each its own task run (`ctx.run_each("evaluate", ...)`)
- decision               best LR per arm, the plan's thresholds, grid edges, pair hashes checked
                         before the verdict

Fork routing (issue: a forked optimizer): the plan marks the arms whose optimizer needs a fork.
On the embedded backend both families are served by the one server, so no fork is needed and
every arm runs on it; on a remote service every arm of the comparison runs on the fork
(`ServiceTarget.service_client(fork=True)`: the RUNS_PROXY_TOKEN_* credentials) as soon as one
arm needs it. An optimizer is never swapped: a rejected arm stops the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from experiment.rl import restoration as r
from experiment.run.clients import ClientSession, open_session
from experiment.run.context import RunContext
from experiment.sft.loop import ChatExample, SFTSettings, optim_params, to_datum


@dataclass(frozen=True)
class SFTRun:
    """One training run of the comparison: an arm at one learning rate of its grid."""

    name: str  # "<arm>@lr=<lr>"
    arm: str
    family: str
    config: dict[str, Any]  # the arm's optimizer config from the plan (beta1, grad_clip_norm, ...)
    learning_rate: float
    seed: int
    label: str  # the run's key beneath its arm (metrics.arms.<arm>.runs, loss_eval.arms.<arm>.runs): its LR,
    # with `-seed<s>` at a further scheduled seed (plan.TrainingRun.label)

    @property
    def slug(self) -> str:
        """The name as checkpoint and file names allow it ("trimuon-lr0.04", "trimuon-lr0.04-seed1")."""
        return self.name.replace("@lr=", "-lr")

    @property
    def requested(self) -> dict[str, Any]:
        """Family plus every setting declared at creation (the LR included), for the server to echo."""
        return r.requested_optimizer(self.family, {**self.config, "learning_rate": self.learning_rate})

    def params(self) -> Any:
        return optim_params(self.family, self.learning_rate, self.config)


def sft_runs(ctx: RunContext) -> list[SFTRun]:
    """Every training run of the comparison in plan order (plan.training_runs: each arm x its LR grid, at every
    scheduled seed)."""
    runs = []
    for planned in ctx.plan.training_runs:
        arm = ctx.plan.arm(planned.arm)
        optimizer = arm.optimizer or {"family": "adamw", "config": {}}
        runs.append(SFTRun(planned.name, arm.name, r.optimizer_family(optimizer["family"]), dict(optimizer["config"]),
                           float(planned.lr), int(planned.seed or 0), planned.label))
    return runs


def service_routing(ctx: RunContext) -> dict[str, Any]:
    """Where every arm runs: all on one target, the fork as soon as one arm needs it."""
    planned = {arm.name: arm.service for arm in ctx.plan.trained_arms}
    needs_fork = sorted(name for name, service in planned.items() if service == "fork")
    if ctx.service.kind == "embedded" or ctx.plan.rehearsal:  # a rehearsal's backend is the embedded one, any URL
        return {"fork": False, "planned_services": planned, "target": ctx.service.describe(),
                "reason": "the embedded backend implements every arm's optimizer family (dimuon and trimuon) "
                          "in one server, so no fork is deployed (a deviation): every arm runs on that server"}
    if needs_fork:
        return {"fork": True, "planned_services": planned, "target": ctx.service.describe(),
                "reason": f"arms {needs_fork} need a forked optimizer, so every arm of the comparison runs on the "
                          "fork at this URL with the RUNS_PROXY_TOKEN_* credentials"}
    return {"fork": False, "planned_services": planned, "target": ctx.service.describe(),
            "reason": "every arm's optimizer is served by the shared service"}


def open_sft_session(ctx: RunContext, purpose: str) -> ClientSession:
    """A session for `purpose` on the target every arm runs on (the fork when `service_routing` says so)."""
    return open_session(ctx, purpose, fork=service_routing(ctx)["fork"])


def served_model_and_rank(ctx: RunContext) -> tuple[str, int]:
    """(the model spec intake resolved, the spec's LoRA rank)."""
    return ctx.state.served_model, int(ctx.spec.lora_rank)


def to_datums(examples: list[ChatExample], renderer: Any, settings: SFTSettings) -> list[Any]:
    """The examples as training datums under the run's renderer and max_seq_len."""
    return [to_datum(example, renderer, settings.max_seq_len) for example in examples]
