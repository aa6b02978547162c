"""SFT step of gate `arm_training`: every run of every arm's LR grid at every scheduled seed; the runs of one seed
on the same batches in the same order (that seed's shuffle of the training rows; one adaptation pair per seed).

The runs train one after another (so optimizer step times are not shared CPU time), each its own
task run (`ctx.run_each("train", ...)`), with per-step optimizer wall time and adaptation manifests.
A resumed sweep keeps its finished runs (table sft_finished_runs) and restarts an unfinished one
from the initialization state, its optimizer re-verified; a retried run does the same. The restarted attempt's
restores replace the superseded attempt's in the run's record (experiment.sft.provenance: kept, not counted), and
every step row (sft-steps.jsonl) and training_step event carries its `attempt`: the superseded attempt's rows are
kept, marked, and the run's last attempt logs every step once (EVID-11).

With `experiment_features.checkpoint_restore` true, every run saves its state (weights and optimizer) at its
midpoint step and continues on a client restored from that state, its optimizer verified from the server's
response and the restore recorded in the run's initialization_provenance (the rule RL's arms follow:
experiment.contract.support.designed_restore_due).
"""

from __future__ import annotations

import json
import statistics
from typing import Any

from experiment.contract.support import designed_restore_due
from experiment.contract.verdict import GateVerdict
from experiment.rl.recipe import renderer_for
from experiment.run.clients import ClientSession
from experiment.run.context import RunContext
from experiment.sft.adaptation import adaptation_manifest, pair_mismatches
from experiment.sft.loop import ChatExample, batch_id, sft_settings, step_batches, train_step, training_examples
from experiment.sft.provenance import record_run_restore, run_attempt, run_names
from experiment.sft.runs import SFTRun, to_datums, open_sft_session, sft_runs

PAIR = "lr_grid_comparison"  # every run of the comparison at the first scheduled seed consumes the same batches
STEPS_TABLE = "sft_steps"
RUNS_TABLE = "sft_finished_runs"  # one row per finished training run: what a resumed sweep reuses


def run(ctx: RunContext) -> GateVerdict:
    runs = sft_runs(ctx)
    settings = sft_settings(ctx.spec)
    seeds = list(dict.fromkeys(run.seed for run in runs))
    batches = {seed: step_batches(training_examples(ctx.spec, seed), settings.batch_size, settings.steps)
               for seed in seeds}
    ids = {seed: [batch_id(step, batch) for step, batch in enumerate(batches[seed])] for seed in seeds}
    session = ctx.state.arms_session or open_sft_session(ctx, "arms")
    finished = {row["run"]: row for row in ctx.store.read_table(RUNS_TABLE)}  # a resumed run keeps these
    manifests, final_states, sampler_paths = [], {}, {}
    # every step's datums, tokenized once per seed: identical for every run at that seed
    tokenized: dict[int, list[list[Any]]] = {seed: [] for seed in seeds}
    ctx.state.comparison_steps_completed = settings.steps * len(finished)
    for run in runs:
        pair = seed_pair(run.seed, seeds)
        if run.name in finished:
            row = finished[run.name]
            final_states[run.name], sampler_paths[run.name] = row["final_state"], row["sampler_path"]
            manifests.append(adaptation_manifest(run.name, pair, json.loads(row["batch_ids"])))
            continue
        # one run after another (each run's optimizer time is measured on an otherwise idle server), each
        # its own task run under the flow (ctx.run_each: own progress, own retry)
        trainer = _run_trainer(ctx, session, run, batches[run.seed], ids[run.seed], tokenized[run.seed])
        outcome = ctx.run_each("train", {run.slug: trainer})[run.slug]
        if isinstance(outcome, BaseException):
            raise outcome
        records, final_states[run.name], sampler_paths[run.name] = outcome
        manifests.append(adaptation_manifest(run.name, pair, [rec.batch_id for rec in records]))
        optim = [rec.optim_seconds for rec in records]
        arm_runs = [other for other in runs if other.arm == run.arm]
        done = run is arm_runs[-1]  # the arm finished: its whole LR grid trained
        ctx.store.update_result(
            adaptation_manifests=arm_manifests(runs, manifests),
            metrics={"arms": {run.arm: {
                **({"runs_completed": len(arm_runs),
                    "lr_grid": list(dict.fromkeys(other.learning_rate for other in arm_runs))} if done else {}),
                "runs": {run.label: {
                    "optimizer_family": run.family, "learning_rate": run.learning_rate, "seed": run.seed,
                    "steps_completed": len(records),
                    "median_optim_step_seconds": statistics.median(optim),
                    "mean_optim_step_seconds": statistics.fmean(optim),
                    "first_step_train_nll_token_mean": records[0].train_nll_token_mean,
                    "last_step_train_nll_token_mean": records[-1].train_nll_token_mean,
                }}}}},
            completed_arms=[run.arm] if done else [],
        )
    ctx.store.add_evidence("sft-steps.jsonl", "metrics",
                           "".join(json.dumps(row, sort_keys=True) + "\n" for row in ctx.store.read_table(STEPS_TABLE)))
    mismatches = pair_mismatches(manifests)
    return GateVerdict(
        gate="arm_training", status="failed" if mismatches else "passed",
        reasons=[f"{len(runs)} runs x {settings.steps} steps, the runs of each seed on the same {settings.steps} batches "
                 f"(adaptation hashes {', '.join(m['adaptation_batch_hash'][:12] for m in arm_manifests(runs, manifests))})"]
        + mismatches,
        measured={"runs": len(runs), "steps_per_run": settings.steps,
                  "comparison_steps_completed": ctx.state.comparison_steps_completed},
        state={"final_checkpoints": sampler_paths, "final_states": final_states},
    )


def _run_trainer(ctx: RunContext, session: ClientSession, run: SFTRun, batches: list[list[ChatExample]],
                 ids: list[str], tokenized: list[list[Any]]):
    """One training run's work for `ctx.run_each`: every step, then its final state and sampler weights
    saved and the run recorded as finished. Returns (step records, final state, sampler path). A retry
    (a crash of this run) starts the run over from the initialization state, never from a half-trained
    client, like a resumed sweep."""
    settings = sft_settings(ctx.spec)
    names = run_names(sft_runs(ctx), run.arm)
    attempts: list[int] = []  # steps counted by each attempt

    def train() -> tuple[list[Any], str, str]:
        if attempts:  # evaluation must not score the crashed attempt's client: it loads the final state
            ctx.state.comparison_steps_completed -= attempts[-1]
            ctx.state.arm_clients.pop(run.name, None)
        attempts.append(0)
        client = (ctx.state.arm_clients or {}).get(run.name) or _client_from_initial_state(ctx, session, run, names)
        attempt = run_attempt(ctx.store, run)  # each step's row and event say which attempt logged it
        if not tokenized:
            renderer = renderer_for(client, settings.renderer_name)
            tokenized[:] = [to_datums(batch, renderer, settings) for batch in batches]  # whole, or not at all
        records = []
        for step in range(settings.steps):
            if designed_restore_due(ctx.spec, step):  # checkpoint_restore: continue on a client restored mid-run
                client = _designed_restore(ctx, session, run, names, client, step)
            record = train_step(client, tokenized[step], run.params(), run.name, step, ids[step], call=ctx.call_service)
            records.append(record)
            logged = {**record.summary(), "attempt": attempt}
            ctx.store.append_rows(STEPS_TABLE, [{**logged, "model_id": client.model_id}])
            ctx.store.append_event("training_step", **logged)
            ctx.state.comparison_steps_completed += 1
            attempts[-1] += 1
            ctx.on_progress(f"training-{run.slug}", step + 1, settings.steps)
        final_state = ctx.call_service(lambda: client.save_state(f"{run.slug}-final-state").result().path)
        sampler_path = ctx.call_service(lambda: client.save_weights_for_sampler(name=f"{run.slug}-final").result().path)
        ctx.store.append_rows(RUNS_TABLE, [{"run": run.name, "final_state": final_state, "sampler_path": sampler_path,
                                            "batch_ids": json.dumps([rec.batch_id for rec in records])}])
        ctx.store.add_checkpoint(run.name, settings.steps, sampler_path)
        return records, final_state, sampler_path

    return train


def seed_pair(seed: int, seeds: list[int]) -> str:
    """The adaptation pair of the runs at one scheduled seed: PAIR at the first, `PAIR-seed<s>` at each further
    seed (each seed's runs share that seed's batches; two seeds' runs never do)."""
    return PAIR if seed == seeds[0] else f"{PAIR}-seed{seed}"


def arm_manifests(runs: list[SFTRun], run_manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The adaptation manifests (ADAPT-1), one entry per arm and scheduled seed: the batches its runs at that seed
    actually consumed (every run of the arm's grid at one seed consumes the same ones; a run that did not is a
    pair mismatch, reported from the per-run manifests), with the runs it covers."""
    by_run = {manifest["arm"]: manifest for manifest in run_manifests}
    out = []
    for seed in dict.fromkeys(run.seed for run in runs):
        for arm in dict.fromkeys(run.arm for run in runs):
            done = [run for run in runs if run.arm == arm and run.seed == seed and run.name in by_run]
            if not done:
                continue
            first = by_run[done[0].name]
            out.append({**first, "arm": arm, "runs": [run.name for run in done]})
    return out


def _client_from_initial_state(ctx: RunContext, session: ClientSession, run: SFTRun, names: dict[str, str]) -> Any:
    """A resumed sweep: the run starts over from the proven initialization state (never from a
    half-trained one), recorded as the restore of its new client, replacing the superseded attempt's
    (experiment.sft.provenance), with the optimizer verified from the server's response before the first update."""
    client = session.client_from_state(ctx.state.init_checkpoint, run.requested)
    check = record_run_restore(ctx.store, run, names, client.get_info(), ctx.state.init_checkpoint,
                               with_optimizer=False, restart=True)
    if check["mismatches"]:
        raise RuntimeError(f"{run.name}: the recreated client's optimizer does not match: {check['mismatches']}")
    return client


def _designed_restore(ctx: RunContext, session: ClientSession, run: SFTRun, names: dict[str, str], client: Any,
                      step: int) -> Any:
    """checkpoint_restore: the run's state (weights and optimizer) saved after `step` steps, and a client restored
    from it with its optimizer state, verified from the server's response and recorded before the next update."""
    saved = ctx.call_service(lambda: client.save_state(f"{run.slug}-step-{step:04d}").result().path)
    restored = session.client_from_state(saved, run.requested, with_optimizer=True)
    check = record_run_restore(ctx.store, run, names, restored.get_info(), saved, with_optimizer=True)
    if check["mismatches"]:
        raise RuntimeError(f"{run.name}: the optimizer after the mid-run restore differs: {check['mismatches']}")
    ctx.store.append_event("designed_restore", run=run.name, step=step, restored_from=saved, client=restored.model_id)
    return restored
