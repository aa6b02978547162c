"""SFT step of gate `evaluation`: frozen evaluator, then the held-out token-mean NLL of every target.

The evaluator (code hash, template, teacher-forced decoding, parser, explicit item ids) is frozen and
posted before any score. Then the untrained initial state and every training run are scored on
exactly eval.n_examples held-out conversations, one after another, each its own task run
(`ctx.run_each("evaluate", ...)`), each posted as soon as it is known with its per-example
prediction rows as evidence; the loss_eval record follows the plan's selection rule.
"""

from __future__ import annotations

import json

from experiment import PROJECT_ROOT
from experiment.contract.evaluators import SFT_EVALUATOR_CODE, TEACHER_FORCED, sft_parser, sft_prompt_template
from experiment.contract.verdict import GateVerdict
from experiment.rl.recipe import renderer_for
from experiment.run.context import RunContext
from experiment.sft import loss_eval
from experiment.sft.loop import heldout_examples, score_heldout, sft_settings
from experiment.sft.runs import SFTRun, to_datums, open_sft_session, sft_runs
from experiment.stats.evaluation import BASE_LABEL, evaluation_record, evaluator_id, evaluator_provenance, score_entry


EVALUATOR_CODE = SFT_EVALUATOR_CODE  # the evaluator the spec fixes: experiment/contract/evaluators.py


def run(ctx: RunContext) -> GateVerdict:
    runs = sft_runs(ctx)
    final_states = ctx.state.final_states
    missing = [run.name for run in runs if run.name not in final_states]
    if missing:
        return GateVerdict(gate="evaluation", status="failed", reasons=[f"no trained final state for {missing}"])
    settings = sft_settings(ctx.spec)
    aggregation = ctx.plan.eval.get("aggregation") or "token_mean"
    items = heldout_examples(ctx.spec)  # exactly eval.n_examples, never floor-divided by a batch size
    eval_session = open_sft_session(ctx, "evaluation")
    base_client = eval_session.client_from_state(ctx.state.init_checkpoint, runs[0].requested)
    renderer = renderer_for(base_client, settings.renderer_name)
    datums, ids = to_datums(items, renderer, settings), [item.id for item in items]
    template = sft_prompt_template(settings.renderer_name, settings.max_seq_len)
    provenance = evaluator_provenance([PROJECT_ROOT / f for f in EVALUATOR_CODE], template, dict(TEACHER_FORCED),
                                      sft_parser(aggregation), ids)
    evaluator = evaluator_id(provenance)
    arms = list(dict.fromkeys(run.arm for run in runs))
    comparisons = [{"metric": f"heldout_nll_{aggregation}", "arms": arms}]
    record = evaluation_record({evaluator: provenance}, [], comparisons)
    ctx.store.update_result(evaluation=record)  # frozen before the first score of anything
    ctx.store.append_event("evaluator_frozen", evaluator_id=evaluator, n_items=len(items))

    # the untrained initial state first, then every run, one after another: each scoring is its own task
    # run under the flow (ctx.run_each: own progress, own retry), posted as soon as it is known
    clients = ctx.state.arm_clients or {}  # the trained clients, unless this process resumed
    scored_runs: dict[str, dict[str, loss_eval.LossEval]] = {}
    values: dict[str, float] = {}
    for run in [None, *runs]:
        label = run.slug if run else BASE_LABEL

        def score(run: SFTRun | None = run, key: str = f"evaluation-{label}") -> loss_eval.LossEval:
            client = base_client if run is None else (
                clients.get(run.name) or eval_session.client_from_state(final_states[run.name], run.requested))
            return score_heldout(client, datums, ids, aggregation,
                                 on_progress=lambda done, total: ctx.on_progress(key, done, total), call=ctx.call_service)

        scored = ctx.run_each("evaluate", {label: score})[label]
        if isinstance(scored, BaseException):
            raise scored
        if run is None:
            values[BASE_LABEL] = scored.summary()["value"]
            _post_score(ctx, record, None, scored, evaluator, ctx.state.init_checkpoint, aggregation)
            continue
        scored_runs.setdefault(run.arm, {})[run.label] = scored
        values[run.name] = scored.summary()["value"]
        checkpoint = ctx.state.final_checkpoints.get(run.name)
        _post_score(ctx, record, run, scored, evaluator, checkpoint, aggregation)
        ctx.store.update_result(loss_eval=loss_eval.report_by_arm(aggregation, scored_runs,
                                                                  selected_runs(runs, scored_runs)))
    eval_session.close()
    record_eval = loss_eval.report_by_arm(aggregation, scored_runs, selected_runs(runs, scored_runs))
    problems = loss_eval.check(record_eval)
    first_arm = record_eval["arms"][arms[0]]
    return GateVerdict(
        gate="evaluation", status="failed" if problems else "passed",
        reasons=[f"evaluator {evaluator[:12]} frozen on {len(items)} held-out conversations "
                 f"({first_arm.get('n_tokens')} counted tokens); {aggregation}: "
                 + ", ".join(f"{k} {v:.4f}" for k, v in values.items())] + problems,
        measured={"evaluator_id": evaluator, "n_items": len(items), aggregation: values},
        state={"evaluator_id": evaluator, "heldout_nll": values},
    )


def selected_runs(runs: list[SFTRun], scored: dict[str, dict[str, loss_eval.LossEval]]) -> dict[str, str]:
    """The plan's selection rule, fixed before training: per arm, the LR with the lowest held-out NLL (its mean
    over the scheduled seeds), once every run of the arm's grid is scored at every seed; the label of that LR's
    run at the first seed."""
    selected = {}
    for arm, by_label in scored.items():
        arm_runs = [run for run in runs if run.arm == arm]
        if len(by_label) != len(arm_runs):
            continue
        by_lr: dict[float, list[SFTRun]] = {}
        for run in arm_runs:
            by_lr.setdefault(run.learning_rate, []).append(run)
        best = min(by_lr, key=lambda lr: sum(by_label[run.label].summary()["value"] for run in by_lr[lr]) / len(by_lr[lr]))
        selected[arm] = by_lr[best][0].label
    return selected


def runs_seed(ctx: RunContext) -> int:
    """The seed the untrained initialization state is scored at: the first scheduled seed (one state for all)."""
    return int(ctx.plan.seeds[0])


def _post_score(ctx, record, run: SFTRun | None, scored, evaluator, checkpoint, aggregation) -> None:
    """One scored target (a training run, or the untrained base when `run` is None): its per-example
    prediction rows as evidence, its score, its metrics under its arm."""
    summary = scored.summary()
    paired = ctx.spec.decision_rule is not None
    arm = run.arm if run else BASE_LABEL
    extra = {"run": run.name, "learning_rate": run.learning_rate} if run else {}
    rows = [{"item_id": item_id, "arm": arm, **extra,
             "prediction": {"nll_sum": total.nll_sum, "n_tokens": total.n_tokens},
             # with a decision_rule, the item's own held-out NLL (nats per counted token): its per-item observation
             # (the aggregation is then example_mean, so the score is the mean of these values)
             **({"value": total.nll_sum / total.n_tokens} if total.n_tokens and paired else {}),
             "reference": "the held-out row's assistant messages (teacher-forced)", "metric": f"heldout_nll_{aggregation}",
             "evaluator_id": evaluator, "seed": run.seed if run else runs_seed(ctx), "checkpoint": checkpoint}
            for item_id, total in zip(scored.example_ids, scored.examples)]
    name = f"predictions-{run.slug if run else BASE_LABEL}.jsonl"
    ctx.store.add_evidence(name, "predictions", "".join(json.dumps(row) + "\n" for row in rows))
    record["scores"].append({**score_entry(arm, summary["value"], evaluator, run.seed if run else runs_seed(ctx), name,
                                           metric=f"heldout_nll_{aggregation}"), **extra})
    if run is None:
        metrics = {f"base_heldout_nll_{aggregation}": summary["value"]}
    else:
        metrics = {"arms": {run.arm: {"runs": {run.label: {"seed": run.seed,
            f"heldout_nll_{aggregation}": summary["value"], "heldout_nll_example_mean": summary["example_mean"],
            "heldout_n_tokens": summary["n_tokens"]}}}}}
    ctx.store.update_result(evaluation=record, metrics=metrics)
