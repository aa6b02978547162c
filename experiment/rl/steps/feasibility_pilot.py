"""RL step of gate `feasibility_pilot` (FEAS-1..FEAS-10).

A representative timing pilot in the full run's regime, measured, never scaled: client setup
from the initialization checkpoint, real training steps per arm (on throwaway clients in a setup
session) and greedy evaluation of a slice of the held-out items, sized as the spec states (spec
001: "2 steps per arm plus 100 eval items"), else one step per arm and 32 items. `config` and
`effective_config` are both the full run's configuration; the pilot's size is in `measurements`
(units vs planned_units) and `pilot`. Pilot scores precede the frozen evaluator: pilot measurements
only. GPU-hours are projected only from allocation evidence, else said to be unknown. The record projects
the full run (arms sequentially: concurrency is never assumed free) plus a recovery reserve
against the spec's budget, is published before continuing, and stops the run when the
primary comparison cannot fit.
"""

from __future__ import annotations

import time

from experiment.run.clients import open_session
from experiment.stats.feasibility import PhaseTiming, feasibility_record, pilot_size, projection_config, service_allocation
from experiment.contract.verdict import GateVerdict
from experiment.run.context import RunContext
from experiment.rl.math_eval import greedy_predictions
from experiment.rl.restoration import requested_optimizer
from experiment.rl.loop import train_one_step
from experiment.rl.recipe import (
    arm_training_order, eval_items, renderer_for, requested_optimizers, rl_arm_settings, rollout_settings, run_async,
)
from experiment.rl.advantages import KernelBaselineState

GATE = "feasibility_pilot"



def run(ctx: RunContext) -> GateVerdict:
    arms = rl_arm_settings(ctx.spec, ctx.plan)
    optimizers = requested_optimizers(ctx.plan)
    items = eval_items(ctx.spec)
    rollout = rollout_settings(ctx.spec)
    init_uri = ctx.state.init_checkpoint
    steps = ctx.spec.steps
    size = pilot_size(ctx.spec.to_dict())  # the pilot size the spec states in its prose
    pilot_steps = min(size.steps_per_arm, steps)
    gpu_count, allocation = service_allocation(ctx.service.kind)

    setup_seconds, step_seconds = 0.0, 0.0
    with open_session(ctx, "feasibility") as session:
        for name, arm in arms.items():
            requested = requested_optimizer(*optimizers.get(name, ("adam", {"lr": arm.learning_rate})))
            started = time.perf_counter()
            client = session.client_from_state(init_uri, requested)
            setup_seconds += time.perf_counter() - started
            renderer = renderer_for(client, arm.renderer_name)
            window = KernelBaselineState(capacity=arm.kernel_window) if arm.advantage != "group_mean" else None
            order = arm_training_order(ctx.spec, ctx.state, name)
            started = time.perf_counter()
            for step in range(pilot_steps):  # throwaway clients: the pilot never leaks into training
                _, window = run_async(train_one_step(client, renderer, arm, order, step=step, kernel_state=window))
            step_seconds += time.perf_counter() - started
        sampler = session.base_sampler(ctx.state.served_model)
        pilot_items = items[:size.eval_items]
        started = time.perf_counter()
        pilot_rows = run_async(greedy_predictions(sampler, renderer, pilot_items, rollout.max_tokens, rollout.few_shot))
        eval_seconds = time.perf_counter() - started
    # Scored before the evaluator is frozen: a pilot measurement only, never a score or metric.
    pilot_accuracy = sum(row["correct"] for row in pilot_rows) / len(pilot_rows)

    n_arms, n_eval = len(arms), len(items)
    n_seeds = len(ctx.plan.seeds)  # every arm trains and is scored at every scheduled seed
    n_runs = n_arms * n_seeds
    dataset = ctx.spec.section("dataset")
    untrained = any(not arm.trained for arm in ctx.plan.arms)
    eval_arms = n_runs + (n_seeds if untrained else 1)  # every trained arm at every seed plus the base model
    full_run = projection_config(
        base_model=ctx.state.served_model, lora_rank=ctx.spec.lora_rank, dataset=dataset, steps=steps,
        batch_size=ctx.spec.batch_size, max_seq_len=ctx.spec.max_seq_len, max_tokens=rollout.max_tokens,
        arms=list(arms), n_examples=dataset.get("n_examples"), n_eval=n_eval,
    )
    record = feasibility_record(
        config=full_run, effective_config=dict(full_run), primary_endpoint=ctx.plan.primary_endpoint,
        source=f"timing pilot of this run (events.jsonl, gate {GATE}) on {ctx.service.describe()['base_url']}",
        setup=PhaseTiming(setup_seconds, n_arms, n_runs, 0, gpu_count, allocation),
        training=PhaseTiming(step_seconds, n_arms * pilot_steps, n_runs * steps,
                             n_arms * pilot_steps * next(iter(arms.values())).rollouts_per_step, gpu_count, allocation),
        evaluation=PhaseTiming(eval_seconds, len(pilot_items), n_eval * eval_arms, len(pilot_items), gpu_count, allocation),
        budget=ctx.plan.budget,
        generation=generation_block(ctx),
        extra_phases=generation_phases(ctx),
        pilot={"steps_per_arm": pilot_steps, "eval_items": len(pilot_items), "size_source": size.source,
               "pilot_measurements": {
                   "base_model_accuracy_on_pilot_items": pilot_accuracy,
                   "note": "scored before the evaluator was frozen: a pilot (timing) measurement only, never an "
                           "endpoint score; the pilot's trained clients were thrown away"}},
    )
    ctx.store.update_result(feasibility=record)
    projection = record["projection"]
    fits = projection["fits"] or not ctx.plan.gate(GATE).enforced
    return GateVerdict(
        gate=GATE, status="passed" if fits else "failed",
        reasons=[f"projected {projection['wall_seconds']:.0f}s of a {projection['budget_wall_seconds']:.0f}s budget",
                 f"GPU-hours {projection['gpu_hours_status']}: {projection['gpu_hours_note']}",
                 f"pilot size: {pilot_steps} step(s) per arm and {len(pilot_items)} eval items ({size.source})"]
        + projection["problems"]
        + [f"pilot measurement only: base model {ctx.state.served_model} scored {pilot_accuracy:.2f} on the first "
           f"{len(pilot_items)} held-out items before the evaluator was frozen (a timing measurement, not an endpoint)"],
        measured={"setup_seconds": setup_seconds, "step_seconds_per_arm_step": step_seconds / (n_arms * pilot_steps),
                  "eval_seconds_per_item": eval_seconds / len(pilot_items),
                  "projected_wall_seconds": projection["wall_seconds"],
                  "pilot_measurement_base_accuracy": pilot_accuracy},
        next_diagnostic=None if fits else "downsize per FEAS-11: drop optional evals/seeds first, then shorten training with a recorded deviation",
    )


def generation_block(ctx: RunContext) -> dict | None:
    """The record's `generation` block (FEAS-7) when training data is generated (measured by the audit gate), else null."""
    measured = ctx.state.generation_feasibility
    if not measured:
        return None
    return {key: measured[key] for key in ("attempted", "accepted", "target_accepted", "filter_samples_per_candidate")
            if key in measured}


def generation_phases(ctx: RunContext) -> dict[str, PhaseTiming]:
    """Generation, filter and audit work of this run (units: candidates, filter rollouts, re-solves).

    Already done before the pilot, so measured units are the planned units: the projection adds the
    time they actually took."""
    measured = (ctx.state.generation_feasibility or {}).get("measurements") or {}
    gpu_count, allocation = service_allocation(ctx.service.kind)
    return {
        name: PhaseTiming(phase["seconds"], phase["units"], phase["units"], phase["units"], gpu_count, allocation)
        for name, phase in measured.items()
        if isinstance(phase, dict) and phase.get("units")
    }

