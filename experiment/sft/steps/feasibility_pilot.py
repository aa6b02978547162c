"""SFT step of gate `feasibility_pilot`: one measured step per arm and a held-out slice, projected.

Per arm, a throwaway client from the initialization state, one real training step, and the two
saves arm training makes at the end of each run (final state and sampler weights); then the
held-out NLL of a FEASIBILITY_EVAL_EXAMPLES slice (and, projected from the setups, the client the
evaluation gate makes for the initialization state). The held-out scoring's service seconds are the service's own
time for the pilot's session where it reports one, else corrected for the client's CPU contention (the record's
`evaluation_timing` names the source: experiment.stats.feasibility.TimeScale); its wall time is the client's. The full sweep (every run of every grid, one
after another, as arm training and evaluation run them, plus every held-out scoring) is projected
from those measurements against the spec's budget; the record is posted before anything else runs.
"""

from __future__ import annotations

import time

from experiment.contract.verdict import GateVerdict
from experiment.rl.recipe import renderer_for
from experiment.run.context import RunContext
from experiment.sft.loop import batch_id, heldout_examples, score_heldout, sft_settings, step_batches, train_step, training_examples
from experiment.sft.runs import to_datums, open_sft_session, sft_runs
from experiment.service.service_time import SessionServiceTime, measured_run, session_id_of
from experiment.stats.feasibility import PhaseTiming, TimeScale, feasibility_record, projection_config, service_allocation

FEASIBILITY_EVAL_EXAMPLES = 16


def run(ctx: RunContext) -> GateVerdict:
    runs = sft_runs(ctx)
    settings = sft_settings(ctx.spec)
    examples, heldout = training_examples(ctx.spec), heldout_examples(ctx.spec)
    gpu_count, allocation = service_allocation(ctx.service.kind)
    first_run_per_arm = {run.arm: run for run in reversed(runs)}
    setup_seconds = step_seconds = eval_seconds = save_seconds = 0.0
    with open_sft_session(ctx, "feasibility") as session:
        for run in first_run_per_arm.values():
            started = time.perf_counter()
            client = session.client_from_state(ctx.state.init_checkpoint, run.requested)
            setup_seconds += time.perf_counter() - started
            renderer = renderer_for(client, settings.renderer_name)
            batch = step_batches(examples, settings.batch_size, 1)[0]
            started = time.perf_counter()
            train_step(client, to_datums(batch, renderer, settings), run.params(), run.name, 0, batch_id(0, batch),
                       call=ctx.call_service)
            step_seconds += time.perf_counter() - started
            started = time.perf_counter()  # each run of arm training ends with these two saves
            ctx.call_service(lambda: client.save_state(f"pilot-{run.slug}-final-state").result())
            ctx.call_service(lambda: client.save_weights_for_sampler(name=f"pilot-{run.slug}-final").result())
            save_seconds += time.perf_counter() - started
        pilot = heldout[:FEASIBILITY_EVAL_EXAMPLES]
        started = time.perf_counter()
        # the service's own time for this session where it reports one, else the client's contention (TimeScale)
        _, service_seconds, runqueue_wait = measured_run(
            lambda: score_heldout(client, to_datums(pilot, renderer, settings), [e.id for e in pilot],
                                  call=ctx.call_service),
            SessionServiceTime(ctx.service, session_id_of(session.service_client), fork=session.fork))
        eval_seconds = time.perf_counter() - started
        eval_scale = TimeScale.of(eval_seconds, service_seconds, runqueue_wait)
    n_arms, n_runs = len(first_run_per_arm), len(runs)
    dataset = ctx.spec.section("dataset")
    full_run = projection_config(  # config == effective_config: the full run (the pilot's size is in measurements)
        base_model=ctx.state.served_model, lora_rank=ctx.spec.lora_rank, dataset=dataset, steps=settings.steps,
        batch_size=settings.batch_size, max_seq_len=settings.max_seq_len, max_tokens=0,
        arms=[run.name for run in runs], n_examples=dataset.get("n_examples"), n_eval=settings.n_eval,
    )
    record = feasibility_record(
        config=full_run, effective_config=dict(full_run),
        primary_endpoint=ctx.plan.primary_endpoint,
        source=f"timing pilot of this run (events.jsonl, gate feasibility_pilot) on {ctx.service.describe()['base_url']}",
        setup=PhaseTiming(setup_seconds, n_arms, n_runs, 0, gpu_count, allocation),
        training=PhaseTiming(step_seconds, n_arms, n_runs * settings.steps, n_arms * settings.batch_size,
                             gpu_count, allocation),
        # service seconds in the service's share of the client-side time; the wall as the client measured it
        evaluation=PhaseTiming(eval_scale.factor * eval_seconds, len(pilot), settings.n_eval * (n_runs + 1), len(pilot),
                               gpu_count, allocation, wall_seconds=eval_seconds),
        budget=ctx.plan.budget,
        extra_phases={"final_checkpoints": PhaseTiming(save_seconds, n_arms, n_runs, 0, gpu_count, allocation),
                      # the evaluation gate scores the initialization state on a client of its own
                      "evaluation_setup": PhaseTiming(setup_seconds, n_arms, 1, 0, gpu_count, allocation)},
        evaluation_timing={"heldout": eval_scale},
    )
    ctx.store.update_result(feasibility=record)
    projection = record["projection"]
    fits = projection["fits"] or not ctx.plan.gate("feasibility_pilot").enforced
    return GateVerdict(
        gate="feasibility_pilot", status="passed" if fits else "failed",
        reasons=[f"projected {projection['wall_seconds']:.0f}s for {n_runs} runs of {settings.steps} steps and "
                 f"{n_runs + 1} held-out scorings, of a {projection['budget_wall_seconds']:.0f}s budget"]
        + projection["problems"],
        measured={"setup_seconds": setup_seconds, "step_seconds_per_arm": step_seconds / n_arms,
                  "eval_seconds_per_example": eval_seconds / len(pilot),
                  "projected_wall_seconds": projection["wall_seconds"]},
        next_diagnostic=None if fits else "downsize per FEAS-11: drop LR points or the optional seed first",
    )
