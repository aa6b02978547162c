"""RL step of gate `arm_training` (RUN-1; capacity CAP-1; paired order ADAPT-1; resume).

Every arm trains at every scheduled seed (`decision_rule.seeds`; plan.replicas), all side by side
(`ctx.run_each`: one Prefect task run each under the flow), from the shared seed-0 prompt order with the
spec's AdamW settings. After every optimizer step the arm's full training state is saved
(`save_state`, weights + optimizer) and recorded in the store with the client-side state the
next step needs (the GS1 kernel window), so that:

- a capacity refusal in the middle of a step is waited out under the run's policy and the step
  is redone on a client restored from the last saved state (never on top of half-accumulated
  gradients, so no optimizer step is ever applied twice);
- a re-run of the same spec (a killed process, a re-queued run) continues each arm from its last
  saved step instead of starting over;
- with `experiment_features.checkpoint_restore` true, every arm continues at its midpoint step on a
  client restored from the state saved after the step before (a designed save and restore,
  experiment.contract.support.designed_restore_due).

Every restore is verified like a creation: optimizer family/config from the server's response,
appended to `initialization_provenance` (`restore_count`, `optimizer_checks`). Each arm's metrics
and final sampler checkpoint are posted as soon as that arm finishes.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from typing import Any

from experiment.contract.plan import at_replica_seed
from experiment.contract.support import designed_restore_due
from experiment.contract.verdict import GateVerdict
from experiment.rl import restoration as r
from experiment.rl.advantages import KernelBaselineState
from experiment.rl.loop import KERNEL_BASELINE, RLArmSettings, train_one_step
from experiment.rl.recipe import arm_training_order, renderer_for, requested_optimizers, rl_replica_settings, run_async
from experiment.run.clients import ClientSession, open_session
from experiment.run.context import RunContext
from experiment.service.capacity import CapacityBlocked

GATE = "arm_training"
CHECKPOINTS_TABLE = "arm_checkpoints"
STEPS_TABLE = "training_steps"



def run(ctx: RunContext) -> GateVerdict:
    # every trained arm at every scheduled seed (plan.replicas), keyed by replica label
    arms = rl_replica_settings(ctx.spec, ctx.plan, kernel_bandwidth=ctx.state.kernel_bandwidth)
    steps = ctx.spec.steps
    optimizers = requested_optimizers(ctx.plan)
    session = ctx.state.arms_session or open_session(ctx, "arms")
    saved = _saved_progress(ctx)
    ctx.state.comparison_steps_completed = sum(entry["step"] for entry in saved.values())

    def trainer(name: str, arm: RLArmSettings):
        attempts = []

        def train() -> str:  # a retry continues from the arm's last saved step, on a restored client
            if attempts:
                ctx.state.arm_clients.pop(name, None)
            attempts.append(1)
            latest = saved.get(name) if len(attempts) == 1 else _saved_progress(ctx).get(name)
            requested = at_replica_seed(r.requested_optimizer(*optimizers[arm.spec_arm]), arm.seed)
            return ArmTrainer(ctx, arm, session, requested, steps, latest).train()

        return train

    outcomes = ctx.run_each("train", {name: trainer(name, arm) for name, arm in arms.items()})

    failed = {name: err for name, err in outcomes.items() if isinstance(err, BaseException)}
    for err in failed.values():
        if isinstance(err, CapacityBlocked):
            raise err  # the flow turns it into a capacity block (CAP-1), arms' progress kept
    if len(ctx.plan.seeds) > 1:  # an arm is complete when it finished at every scheduled seed
        done = [arm.name for arm in ctx.plan.trained_arms
                if all(rep.label in outcomes and rep.label not in failed for rep in ctx.plan.replicas_of(arm.name))]
        ctx.store.update_result(completed_arms=done)
    reasons = [f"{name}: {type(err).__name__}: {err}" for name, err in failed.items()]
    reasons += [f"{name}: {steps} steps, final checkpoint {uri}" for name, uri in outcomes.items() if name not in failed]
    return GateVerdict(
        gate=GATE, status="failed" if failed else "passed", reasons=reasons,
        measured={"steps_per_arm": steps, "comparison_steps_completed": ctx.state.comparison_steps_completed,
                  "resumed_from": {name: entry["step"] for name, entry in saved.items()}},
        next_diagnostic="read the failing arm's last rows in tables/training_steps.parquet and events.jsonl"
        if failed else None,
        state={"final_checkpoints": {name: uri for name, uri in outcomes.items() if name not in failed}},
    )


def _saved_progress(ctx: RunContext) -> dict[str, dict[str, Any]]:
    """The last saved training state of each arm, from the store (empty on a fresh run)."""
    latest: dict[str, dict[str, Any]] = {}
    for row in ctx.store.read_table(CHECKPOINTS_TABLE):
        if row["arm"] not in latest or row["step"] > latest[row["arm"]]["step"]:
            latest[row["arm"]] = row
    return latest


@dataclass
class ArmTrainer:
    ctx: RunContext
    arm: RLArmSettings
    session: ClientSession
    requested: dict[str, Any]
    steps: int
    saved: dict[str, Any] | None

    def train(self) -> str:
        ctx, arm = self.ctx, self.arm
        start = self.saved["step"] if self.saved else 0
        window = self._window(self.saved)
        client = ctx.state.arm_clients.get(arm.name) if not self.saved else None
        if client is None:  # a resumed run: continue from the last saved state (or the initialization)
            client = self._restore(self.saved["uri"] if self.saved else self._init_checkpoint)
        renderer = renderer_for(client, arm.renderer_name)
        order = arm_training_order(ctx.spec, ctx.state, arm.spec_arm)
        for step in range(start, self.steps):
            if designed_restore_due(ctx.spec, step, start):  # checkpoint_restore: continue from the state saved after the last step
                client = self._restore(self._last_uri(step))
            client, window = self._step_with_capacity(client, renderer, order, step, window)
        uri = ctx.call_service(lambda: client.save_weights_for_sampler(name=f"{arm.name}-final").result().path)
        ctx.store.add_checkpoint(arm.spec_arm, self.steps, uri, seed=arm.seed)  # the arm's name, not its replica label
        self._post_metrics()
        return uri

    def _step_with_capacity(self, client, renderer, order, step, window):
        """One step; a capacity refusal restores the last saved state before the step is redone."""
        current = {"client": client, "dirty": False}  # this step's client, and whether an attempt touched it

        def attempt():
            if current["dirty"]:
                current["client"] = self._restore(self._last_uri(step))
            current["dirty"] = True  # any failure below leaves the server-side model unusable for a redo
            record, new_window = run_async(train_one_step(current["client"], renderer, self.arm, order, step,
                                                          kernel_state=window))
            path = current["client"].save_state(f"{self.arm.name}-step-{step + 1:04d}").result().path
            return record, new_window, path

        record, window, path = self.ctx.call_service(attempt)
        ctx = self.ctx
        ctx.store.append_rows(CHECKPOINTS_TABLE, [{"arm": self.arm.name, "step": step + 1, "uri": path,
                                                   "kernel_window": _window_json(window)}])
        ctx.store.append_rows(STEPS_TABLE, [record.summary()])
        ctx.store.append_event("training_step", **record.summary(), checkpoint=path)
        ctx.state.comparison_steps_completed = ctx.state.comparison_steps_completed + 1
        ctx.on_progress(f"training-{self.arm.name.replace('_', '-')}", step + 1, self.steps)
        return current["client"], window

    @property
    def _init_checkpoint(self) -> str:
        """The initialization checkpoint of this arm's seed (restoration_preflight makes one per scheduled seed)."""
        return (self.ctx.state.seed_init_checkpoints or {}).get(str(self.arm.seed)) or self.ctx.state.init_checkpoint

    def _last_uri(self, step: int) -> str:
        if step == 0:
            return self._init_checkpoint
        rows = [row for row in self.ctx.store.read_table(CHECKPOINTS_TABLE)
                if row["arm"] == self.arm.name and row["step"] == step]
        return rows[-1]["uri"]

    def _restore(self, uri: str):
        """A client from a saved state, its optimizer verified from the server's response and the
        restore appended to initialization_provenance under the store's lock (both arm threads
        restore at once on a resume; neither record may be lost)."""
        with_optimizer = uri != self._init_checkpoint
        client = self.session.client_from_state(uri, self.requested, with_optimizer=with_optimizer)
        check = r.record_restore(self.ctx.store, self.arm.name, client.get_info(), self.requested, uri, with_optimizer)
        if check["mismatches"]:
            raise RuntimeError(f"{self.arm.name}: optimizer after restore {check['after_restore']} differs: "
                               f"{check['mismatches']}")
        return client

    def _window(self, saved: dict[str, Any] | None) -> KernelBaselineState | None:
        if self.arm.advantage != KERNEL_BASELINE:
            return None
        if saved and saved.get("kernel_window"):
            data = json.loads(saved["kernel_window"])
            return KernelBaselineState(tuple(data["rewards"]), tuple(data["prompt_token_lengths"]),
                                       tuple(data["prompt_mean_logprobs"]), data["capacity"])
        return KernelBaselineState(capacity=self.arm.kernel_window)

    def _post_metrics(self) -> None:
        """Every step of this arm from the store, resumed runs included (not only this process's steps)."""
        rows = [row for row in self.ctx.store.read_table(STEPS_TABLE) if row["arm"] == self.arm.name]
        optim = [row["optim_seconds"] for row in rows]
        rewards = [row["mean_reward"] for row in sorted(rows, key=lambda row: row["step"])]
        metrics = {
            "steps_completed": self.steps,
            "final_step_mean_reward": rewards[-1],
            "first_step_mean_reward": rewards[0],
            "mean_train_reward": statistics.fmean(rewards),
            "median_optimizer_step_seconds": statistics.median(optim),
            "learning_rate": self.arm.learning_rate,
            **({"kernel_bandwidth": self.arm.kernel_bandwidth} if self.arm.advantage == KERNEL_BASELINE else {}),
        }
        if len(self.ctx.plan.seeds) == 1:
            self.ctx.store.update_result(metrics={"arms": {self.arm.name: metrics}}, completed_arms=[self.arm.name])
        else:  # several seeds: each seed's numbers under the arm; the arm completes when every seed has
            self.ctx.store.update_result(metrics={"arms": {self.arm.spec_arm: {"seeds": {str(self.arm.seed): metrics}}}})


def _window_json(window: KernelBaselineState | None) -> str | None:
    if window is None:
        return None
    return json.dumps({"rewards": list(window.rewards), "prompt_token_lengths": list(window.prompt_token_lengths),
                       "prompt_mean_logprobs": list(window.prompt_mean_logprobs), "capacity": window.capacity})

