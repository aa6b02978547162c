"""Activation pilots: short runs in the exact full-run regime on throwaway clients (gate activation_gate).

Both activation steps use them (the GS1 kernel-baseline step in experiment/rl/steps/ and the
self-generated-tasks step in experiment/selfgen/steps/): a client restored from the
initialization checkpoint, a few training steps on the arm's own prompt order, optionally
HELDOUT_SAMPLES extra samples per step-0 prompt from the same weights (never trained on), and the
pilot's log kept as evidence.
"""

from __future__ import annotations

import json
from dataclasses import replace
from types import SimpleNamespace

from experiment.contract.run_layout import evidence_path
from experiment.rl.advantages import KernelBaselineState
from experiment.rl.loop import KERNEL_BASELINE, collect_rollouts, step_problems, train_one_step
from experiment.rl.recipe import arm_training_order, renderer_for, requested_optimizers
from experiment.rl.restoration import requested_optimizer
from experiment.service.capacity import answered
from experiment.stats.activation import HELDOUT_SAMPLES


def pilot_client(ctx, session, arm):
    """A throwaway client restored from the initialization checkpoint (the full run's start)."""
    requested = requested_optimizer(*requested_optimizers(ctx.plan).get(arm.name, ("adam", {"lr": arm.learning_rate})))
    return session.client_from_state(ctx.state.init_checkpoint, requested)


async def pilot(ctx, client, arm, steps: int, heldout: bool = False):
    """`steps` training steps of `arm` on its own prompt order; with `heldout`, the mean reward of
    HELDOUT_SAMPLES extra samples per step-0 prompt first. {"steps": records, "heldout": means}."""
    renderer = renderer_for(client, arm.renderer_name)
    order = arm_training_order(ctx.spec, ctx.state, arm.name)
    heldout_means = {}
    if heldout:  # extra samples of step 0's prompts from the same weights, never trained on
        sampler = await answered(client.save_weights_and_get_sampling_client())
        problems = step_problems(order, arm, 0)
        groups = await collect_rollouts(sampler, renderer, problems, replace(arm, group_size=HELDOUT_SAMPLES),
                                        base_seed=7_000_000)
        heldout_means = {p.id: sum(g.get_total_rewards()) / HELDOUT_SAMPLES for p, g in zip(problems, groups)}
    window = KernelBaselineState(capacity=arm.kernel_window) if arm.advantage == KERNEL_BASELINE else None
    records = []
    for step in range(steps):
        record, window = await train_one_step(client, renderer, arm, order, step, kernel_state=window)
        records.append(record)
    return {"steps": records, "heldout": heldout_means}


def pilot_log_name(bandwidth) -> str:
    return f"activation-pilot-bw{bandwidth}.jsonl"


def _log_row(rec) -> dict:
    """A step's line of the pilot log: the step as it was measured, or as its kept log holds it (kept_pilot)."""
    kept = getattr(rec, "log_row", None)
    if kept is not None:
        return kept
    return {**rec.summary(), "item_ids": rec.item_ids, "rewards": rec.rewards, "advantages": rec.advantages,
            "baseline_values": rec.baseline_values, "effective_neighbors": rec.effective_neighbors,
            "prompt_features": rec.prompt_features}


def keep_pilot_log(ctx, bandwidth, records, heldout) -> None:
    """The pilot's steps (rewards, advantages, baselines per item) and held-out means as evidence."""
    lines = [json.dumps(_log_row(rec)) for rec in records]
    lines.append(json.dumps({"heldout_mean_reward": heldout}))
    ctx.store.add_evidence(pilot_log_name(bandwidth), "metrics", "\n".join(lines) + "\n")


def kept_pilot(ctx, bandwidth, arms: tuple[str, ...]) -> dict | None:
    """The pilot an earlier attempt of this gate ran and kept (its log, read back from the run's evidence), or
    None. A run stopped inside activation_gate after a pilot's log was kept resumes with that pilot instead of
    running it again: evidence names are immutable, and a pilot run again keeps other bytes (its step timings
    at least, and on a sampling service its rewards), which the store refuses. The activation values follow
    from the log (ACT-2 recomputes them from it), so the reused pilot gives the values the stopped attempt
    measured. {"steps": {arm: [step, ...]} for each of `arms`, "heldout": means}; each step carries the fields
    the activation values read and its log line (`log_row`), which keep_pilot_log writes back unchanged."""
    name = pilot_log_name(bandwidth)
    if not any(entry.get("name") == name for entry in ctx.store.read_manifest()["files"]):
        return None
    rows = [json.loads(line) for line in evidence_path(ctx.store.run_dir, name).read_text().splitlines() if line]
    steps = {arm: [SimpleNamespace(**row, log_row=row) for row in rows if row.get("arm") == arm] for arm in arms}
    heldout = next((row["heldout_mean_reward"] for row in rows if "heldout_mean_reward" in row), {})
    ctx.store.append_event("activation_pilot_reused", evidence=name,
                           reason="the run resumed inside activation_gate after this pilot's log was kept")
    return {"steps": steps, "heldout": heldout}
