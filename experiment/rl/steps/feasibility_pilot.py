"""RL step of gate `feasibility_pilot` (FEAS-1..FEAS-10).

A representative timing pilot in the full run's regime and schedule, measured, never scaled, on
throwaway clients in a setup session, sized as the spec states (spec 001: "2 steps per arm plus 100
eval items"), else one step per arm and 32 items. Each part runs as the full run runs it:

- setup: every arm's client from the initialization checkpoint, arms side by side;
- training: the pilot steps of every arm side by side, each step a full RL step plus the
  `save_state` arm training makes after it; then each arm's final sampler checkpoint, side by side;
- evaluation: greedy answers to the pilot items from the base model first, then from each arm's
  checkpoint (a sampler loaded from its path), arms side by side, as the evaluation gate does; each
  model's items in three calls (one item, an eighth of the rest, the remainder), so that the time an
  evaluation takes whatever its size (`evaluation_latency`, once per scored model) is apart from the
  items' pace (`evaluation`, per item): experiment.stats.feasibility.EvaluationPace;
- the activation gate that follows (experiment.stats.feasibility.ActivationWork): its clients and steps from
  the setup's and the steps' own times (the steps without their saves), and, for the GS1 kernel pilot, a
  held-out sampling of HELDOUT_PILOT_PROMPTS prompts timed on the treatment's pilot client as the activation
  pilot samples its held-out means.

Each phase records the units' own times summed (service time) and the wall time of the schedule;
the projection takes wall time from the measured schedule (concurrency measured, never assumed).
`config` and `effective_config` are both the full run's configuration; the pilot's size is in
`measurements` (units vs planned_units) and `pilot`. Pilot scores precede the frozen evaluator:
pilot measurements only. GPU-hours are projected only from allocation evidence, else said to be
unknown. The record projects the full run plus a recovery reserve (at least the capacity waits met
so far) against the spec's budget, is published before continuing, and stops the run when the
primary comparison cannot fit.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from experiment.run.clients import open_session
from experiment.run.context import run_side_by_side
from experiment.service.capacity import answered
from experiment.service.service_time import SessionServiceTime, measured_run, session_id_of
from experiment.stats.activation import HELDOUT_SAMPLES
from experiment.stats.feasibility import (GENERATION_KEYS, ActivationWork, EvaluationPace, PhaseTiming, TimeScale,
                                          activation_phases, feasibility_record, pilot_size, projection_config,
                                          rl_pilot_units, service_allocation)
from experiment.contract.verdict import GateVerdict
from experiment.run.context import RunContext
from experiment.rl.math_eval import greedy_predictions
from experiment.rl.restoration import requested_optimizer
from experiment.rl.loop import KERNEL_BASELINE, collect_rollouts, step_problems, train_one_step
from experiment.rl.steps.activation_gate import CALIBRATION_BANDWIDTHS, CALIBRATION_SENTENCE
from experiment.rl.recipe import (
    arm_training_order, eval_items, renderer_for, requested_optimizers, rl_arm_settings, rollout_settings, run_async,
)
from experiment.rl.advantages import KernelBaselineState

GATE = "feasibility_pilot"
# prompts of the held-out sampling the pilot times for the GS1 activation gate (HELDOUT_SAMPLES each)
HELDOUT_PILOT_PROMPTS = 4
TIMING_SOURCE = ("client-side: each unit timed from the client, except the evaluation's service seconds "
                 "(evaluation, evaluation_latency), taken from the service's own time for the pilot's session where it "
                 "reports one, else corrected for the client's CPU contention (the record's evaluation_timing says which, "
                 "per run); the Tinker API's answers carry no server-side duration per call")
ACTIVATION_NOTE = ("the activation gate after the pilot, projected from this pilot's clients (activation_setup), its "
                   "steps without their saves (activation_steps: every step in service, the longest lane's in wall), "
                   "a held-out sampling of heldout_pilot_prompts prompts (activation_heldout, and its sampler) and, "
                   "where the spec pre-registers a calibration, one client and the pilot steps per further candidate "
                   "(activation_calibration, counted in the plan though it runs only when the first candidate fails)")


@dataclass(frozen=True)
class Timed:
    """Work run side by side: each name's result, each one's own seconds, and the wall time of all."""

    results: dict[str, Any]
    seconds: dict[str, float]
    wall_seconds: float

    @property
    def total_seconds(self) -> float:
        return sum(self.seconds.values())


def timed_side_by_side(kind: str, work: dict[str, Callable[[], Any]]) -> Timed:
    """Run `work` side by side (as the full run runs its arms), timing each part and the whole; the
    first failure is raised."""
    seconds: dict[str, float] = {}

    def timing(name: str, fn: Callable[[], Any]) -> Callable[[], Any]:
        def run_timed() -> Any:
            started = time.perf_counter()
            try:
                return fn()
            finally:
                seconds[name] = time.perf_counter() - started
        return run_timed

    started = time.perf_counter()
    outcomes = run_side_by_side(kind, {name: timing(name, fn) for name, fn in work.items()})
    wall = time.perf_counter() - started
    for outcome in outcomes.values():
        if isinstance(outcome, BaseException):
            raise outcome
    return Timed(outcomes, seconds, wall)


def evaluation_part(part: Callable[[EvaluationPace], float], *evaluations: tuple[Timed, TimeScale]) -> tuple[float, float]:
    """(service seconds, wall seconds) of one part of the pilot's evaluations (the items at their pace, or
    the fixed time of one call): the part summed over the models, in the service's share of each run's client-side
    time (its TimeScale), and each run's wall time (models side by side) in the share of its models' time that
    part takes, as the client measured it."""
    seconds = wall = 0.0
    for timed, scale in evaluations:
        paces = [pace for _, pace in timed.results.values()]
        seconds += scale.factor * sum(part(pace) for pace in paces)
        wall += timed.wall_seconds * sum(part(pace) / pace.seconds for pace in paces) / len(paces)
    return seconds, wall


def scaled(run: Callable[[], Timed], service_time: SessionServiceTime) -> tuple[Timed, TimeScale]:
    """An evaluation run and the service's share of its client-side time: from the service's own busy seconds for
    the pilot's session where it reports them, else from the client's run-queue wait (TimeScale.of)."""
    timed, service_seconds, runqueue_wait = measured_run(run, service_time)
    return timed, TimeScale.of(timed.wall_seconds, service_seconds, runqueue_wait)


def capacity_waits_so_far(ctx: RunContext) -> float:
    """Seconds this run has waited for capacity so far (its capacity_wait events)."""
    return sum(float(event.get("delay_seconds") or 0.0) for event in ctx.store.read_events()
               if event.get("event") == "capacity_wait")


def run(ctx: RunContext) -> GateVerdict:
    """Long because: a gate step reads top to bottom as the pilot's protocol (clients, training steps per arm, evaluation
    calls, projection, publish); its parts share the measured clients.
    """
    arms = rl_arm_settings(ctx.spec, ctx.plan)
    optimizers = requested_optimizers(ctx.plan)
    items = eval_items(ctx.spec)
    rollout = rollout_settings(ctx.spec)
    init_uri = ctx.state.init_checkpoint
    steps = ctx.spec.steps
    size = pilot_size(ctx.spec.to_dict())  # the pilot size the spec states in its prose
    pilot_steps = min(size.steps_per_arm, steps)
    gpu_count, allocation = service_allocation(ctx.service.kind)
    pilot_items = items[:size.eval_items]

    with open_session(ctx, "feasibility") as session:
        requested = {name: requested_optimizer(*optimizers.get(name, ("adam", {"lr": arm.learning_rate})))
                     for name, arm in arms.items()}
        setup = timed_side_by_side("pilot-setup", {
            name: (lambda name=name: session.client_from_state(init_uri, requested[name])) for name in arms})
        clients = setup.results
        renderer = renderer_for(next(iter(clients.values())), next(iter(arms.values())).renderer_name)

        step_seconds: dict[str, float] = {}  # each arm's steps without the saves (the activation pilots make none)

        def pilot_steps_of(name: str) -> Callable[[], None]:
            arm, client = arms[name], clients[name]
            arm_renderer = renderer_for(client, arm.renderer_name)
            order = arm_training_order(ctx.spec, ctx.state, name)

            def train() -> None:  # throwaway clients: the pilot never leaks into training
                window = KernelBaselineState(capacity=arm.kernel_window) if arm.advantage != "group_mean" else None
                for step in range(pilot_steps):
                    started = time.perf_counter()
                    _, window = ctx.wait_for_service(lambda: run_async(train_one_step(
                        client, arm_renderer, arm, order, step=step, kernel_state=window)))
                    step_seconds[name] = step_seconds.get(name, 0.0) + time.perf_counter() - started
                    checkpoint = f"pilot-{name}-step-{step + 1:04d}"  # saved as arm training saves
                    ctx.call_service(lambda: client.save_state(checkpoint).result())
            return train

        training = timed_side_by_side("pilot-train", {name: pilot_steps_of(name) for name in arms})
        final = timed_side_by_side("pilot-final", {
            name: (lambda name=name: ctx.call_service(
                lambda: clients[name].save_weights_for_sampler(name=f"pilot-{name}-final").result().path))
            for name in arms})

        def answers(sampler) -> Callable[[], tuple[list[dict], EvaluationPace]]:
            def timed_calls() -> tuple[list[dict], EvaluationPace]:  # the fixed time apart from the pace
                rows, timed, start = [], [], 0
                for size in EvaluationPace.calls(len(pilot_items)):
                    part, start = pilot_items[start:start + size], start + size
                    started = time.perf_counter()
                    rows += ctx.wait_for_service(lambda: run_async(greedy_predictions(
                        sampler, renderer, part, rollout.max_tokens, rollout.few_shot)))
                    timed.append((size, time.perf_counter() - started))
                return rows, EvaluationPace.of_calls(timed)
            return timed_calls

        activation = activation_work(ctx, arms)
        heldout = (0.0, 0.0, 0)
        if activation is not None and activation.heldout_samples:  # timed as the GS1 activation pilot samples it
            treatment = ctx.plan.role_to_arm["treatment"]["arm"]
            heldout = ctx.wait_for_service(lambda: run_async(heldout_sampling(
                clients[treatment], renderer_for(clients[treatment], arms[treatment].renderer_name), arms[treatment],
                arm_training_order(ctx.spec, ctx.state, treatment))))
        base_sampler = session.base_sampler(ctx.state.served_model)
        # the service's own time for this session, where it reports one (the embedded backend; Spindle does not)
        service_time = SessionServiceTime(ctx.service, session_id_of(session.service_client))
        base_eval = scaled(lambda: timed_side_by_side("pilot-evaluate-base", {"base": answers(base_sampler)}),
                           service_time)
        loads = timed_side_by_side("pilot-sampler-load", {
            name: (lambda name=name: session.sampler_from_path(final.results[name])) for name in arms})
        arms_eval = scaled(lambda: timed_side_by_side("pilot-evaluate", {name: answers(loads.results[name])
                                                                         for name in arms}), service_time)
    pilot_rows = base_eval[0].results["base"][0]
    # Scored before the evaluator is frozen: a pilot measurement only, never a score or metric.
    pilot_accuracy = sum(row["correct"] for row in pilot_rows) / len(pilot_rows)

    n_arms, n_eval = len(arms), len(items)
    dataset = ctx.spec.section("dataset")
    # every arm trains and is scored at every scheduled seed; the pilot runs and scores each arm once
    units = rl_pilot_units(trained_arms=n_arms, seeds=len(ctx.plan.seeds),
                           base_per_seed=any(not arm.trained for arm in ctx.plan.arms), pilot_steps=pilot_steps,
                           steps=steps, pilot_items=len(pilot_items), eval_items=n_eval,
                           rollouts_per_step=next(iter(arms.values())).rollouts_per_step)

    def timing(phase: str, seconds: float, wall_seconds: float) -> PhaseTiming:
        size = units[phase]
        return PhaseTiming(seconds, size.units, size.planned_units, size.samples, gpu_count, allocation, wall_seconds)
    full_run = projection_config(
        base_model=ctx.state.served_model, lora_rank=ctx.spec.lora_rank, dataset=dataset, steps=steps,
        batch_size=ctx.spec.batch_size, max_seq_len=ctx.spec.max_seq_len, max_tokens=rollout.max_tokens,
        arms=list(arms), n_examples=dataset.get("n_examples"), n_eval=n_eval,
    )
    record = feasibility_record(
        config=full_run, effective_config=dict(full_run), primary_endpoint=ctx.plan.primary_endpoint,
        source=f"timing pilot of this run (events.jsonl, gate {GATE}) on {ctx.service.describe()['base_url']}",
        setup=timing("setup", setup.total_seconds, setup.wall_seconds),
        training=timing("training", training.total_seconds, training.wall_seconds),
        evaluation=timing("evaluation", *evaluation_part(lambda pace: pace.item_seconds, base_eval, arms_eval)),
        budget=ctx.plan.budget,
        generation=generation_block(ctx),
        extra_phases={
            # fixed per arm, whatever the steps and items: each arm's final checkpoint and its sampler
            "evaluation_latency": timing("evaluation_latency",
                                         *evaluation_part(lambda pace: pace.fixed_seconds, base_eval, arms_eval)),
            "final_checkpoints": timing("final_checkpoints", final.total_seconds, final.wall_seconds),
            "sampler_loads": timing("sampler_loads", loads.total_seconds, loads.wall_seconds),
            **generation_phases(ctx),
            **(activation_phases(activation, setup=(setup.total_seconds, n_arms),
                                 steps=(sum(step_seconds.values()), n_arms * pilot_steps),
                                 heldout=(heldout[1], heldout[2]), heldout_sampler_seconds=heldout[0],
                                 gpu_count=gpu_count, allocation_source=allocation) if activation else {}),
        },
        capacity_waits_seconds=capacity_waits_so_far(ctx),
        evaluation_timing={"base": base_eval[1], "arms": arms_eval[1]},
        pilot={"steps_per_arm": pilot_steps, "eval_items": len(pilot_items), "size_source": size.source,
               "timing_source": TIMING_SOURCE,
               **({"activation_gate": {**asdict(activation), "heldout_pilot_prompts": HELDOUT_PILOT_PROMPTS,
                                       "note": ACTIVATION_NOTE}} if activation else {}),
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
        measured={"setup_seconds": setup.wall_seconds,
                  "step_seconds_per_arm_step": training.total_seconds / (n_arms * pilot_steps),
                  "step_wall_seconds_arms_side_by_side": training.wall_seconds / pilot_steps,
                  "eval_seconds_per_item": evaluation_part(lambda pace: pace.item_seconds, base_eval, arms_eval)[0]
                  / units["evaluation"].units,
                  "projected_wall_seconds": projection["wall_seconds"],
                  "pilot_measurement_base_accuracy": pilot_accuracy},
        next_diagnostic=None if fits else "downsize per FEAS-11: drop optional evals/seeds first, then shorten training with a recorded deviation",
    )


def activation_work(ctx: RunContext, arms: dict) -> ActivationWork | None:
    """What the activation gate will run after the pilot (None when it does not run, or has no pilot for these
    arms): the GS1 kernel pilot (its calibration candidates when the spec pre-registers them) or the
    self-generated tasks' pilot."""
    gate = ctx.plan.gate("activation_gate")
    treatment = arms.get(ctx.plan.role_to_arm.get("treatment", {}).get("arm", ""))
    baseline = arms.get(ctx.plan.role_to_arm.get("baseline", {}).get("arm", ""))
    if not gate.blocks or treatment is None or baseline is None:
        return None
    if treatment.advantage == KERNEL_BASELINE:
        calibrated = CALIBRATION_SENTENCE in ctx.spec.to_dict().get("command", "")
        order = arm_training_order(ctx.spec, ctx.state, treatment.name)
        return ActivationWork.kernel_pilot(len({p.id for p in step_problems(order, treatment, 0)}),
                                           len(CALIBRATION_BANDWIDTHS) if calibrated else 1)
    if ctx.plan.gate("generation_audit").blocks:
        return ActivationWork.generated_tasks_pilot()
    return None


async def heldout_sampling(client, renderer, arm, order) -> tuple[float, float, int]:
    """The GS1 activation pilot's held-out sampling on HELDOUT_PILOT_PROMPTS of its prompts: (seconds of the
    sampler, seconds of the samples, samples)."""
    started = time.perf_counter()
    sampler = await answered(client.save_weights_and_get_sampling_client())
    saved = time.perf_counter()
    problems = step_problems(order, arm, 0)[:HELDOUT_PILOT_PROMPTS]
    await collect_rollouts(sampler, renderer, problems, replace(arm, group_size=HELDOUT_SAMPLES), base_seed=7_000_000)
    return saved - started, time.perf_counter() - saved, len(problems) * HELDOUT_SAMPLES


def generation_block(ctx: RunContext) -> dict | None:
    """The record's `generation` block (FEAS-7) when training data is generated (measured by the audit gate), else null."""
    measured = ctx.state.generation_feasibility
    if not measured:
        return None
    return {key: measured[key] for key in GENERATION_KEYS if key in measured}


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

