"""Gate `arm_training` (contract section 1 step 9).

Both arms train concurrently on the clients the restoration preflight proved, each from the
shared seed-0 prompt order (GRPO: 8 prompts x 8 samples per step, GS1: 64 prompts x 1), with
the spec's AdamW settings. Every step is recorded as it happens (table `training_steps`,
a progress event); each arm's metrics and final sampler checkpoint are posted as soon as that
arm finishes. Any failed step fails the gate; finished arms stay in the store.
"""

from __future__ import annotations

import asyncio
import statistics

from experiment.advantages import KernelBaselineState
from experiment import sft_gates
from experiment.gates import GateVerdict, RunContext, not_implemented
from experiment.rl_loop import KERNEL_BASELINE, RLArmSettings, train_one_step
from experiment.rl_recipe import renderer_for, rl_arm_settings, run_async, training_items

GATE = "arm_training"


def run(ctx: RunContext) -> GateVerdict:
    if ctx.plan.training_type == "sft":
        return sft_gates.arm_training(ctx)
    if ctx.plan.training_type != "rl":
        return not_implemented(GATE, f"arm training for training_type {ctx.plan.training_type!r}")
    clients = ctx.state.get("arm_clients")
    if not clients:
        return GateVerdict(gate=GATE, status="failed", reasons=["no restored arm clients: restoration did not pass"])
    bandwidth = ctx.state.get("kernel_bandwidth")
    arms = rl_arm_settings(ctx.spec, ctx.plan, kernel_bandwidth=bandwidth)
    steps = int(ctx.spec.to_dict()["steps"])
    ctx.state.setdefault("comparison_steps_completed", 0)
    results = run_async(_train_all(ctx, arms, clients, steps))
    failed = {name: err for name, err in results.items() if isinstance(err, BaseException)}
    reasons = [f"{name}: {type(err).__name__}: {err}" for name, err in failed.items()]
    done = [name for name in results if name not in failed]
    reasons += [f"{name}: {steps} steps, final checkpoint {results[name]}" for name in done]
    return GateVerdict(
        gate=GATE, status="failed" if failed else "passed", reasons=reasons,
        measured={"steps_per_arm": steps, "completed_arms": done,
                  "comparison_steps_completed": ctx.state["comparison_steps_completed"]},
        next_diagnostic="read the failing arm's last rows in tables/training_steps.parquet and events.jsonl" if failed else None,
    )


async def _train_all(ctx, arms: dict[str, RLArmSettings], clients, steps: int):
    names = list(arms)
    outcomes = await asyncio.gather(*[_train_arm(ctx, arms[n], clients[n], steps) for n in names],
                                    return_exceptions=True)
    return dict(zip(names, outcomes))


async def _train_arm(ctx, arm: RLArmSettings, client, steps: int) -> str:
    renderer = renderer_for(client, arm.renderer_name)
    order = training_items(ctx.spec)
    window = KernelBaselineState(capacity=arm.kernel_window) if arm.advantage == KERNEL_BASELINE else None
    records = []
    for step in range(steps):
        record, window = await train_one_step(client, renderer, arm, order, step, kernel_state=window)
        records.append(record)
        ctx.state["comparison_steps_completed"] += 1
        ctx.store.append_rows("training_steps", [record.summary()])
        ctx.store.append_event("training_step", **record.summary())
        ctx.on_progress(f"training-{arm.name.replace('_', '-')}", step + 1, steps)
    checkpoint = (await client.save_weights_for_sampler(name=f"{arm.name}-final")).path
    ctx.store.add_checkpoint(arm.name, steps, checkpoint)
    ctx.state.setdefault("final_checkpoints", {})[arm.name] = checkpoint
    optim = [r.optim_seconds for r in records]
    ctx.store.update_result(
        metrics={"arms": {arm.name: {
            "steps_completed": steps,
            "final_step_mean_reward": records[-1].mean_reward,
            "first_step_mean_reward": records[0].mean_reward,
            "mean_train_reward": statistics.fmean(r.mean_reward for r in records),
            "median_optimizer_step_seconds": statistics.median(optim),
            "learning_rate": arm.learning_rate,
            **({"kernel_bandwidth": arm.kernel_bandwidth} if arm.advantage == KERNEL_BASELINE else {}),
        }}},
        completed_arms=[arm.name],
    )
    return checkpoint
