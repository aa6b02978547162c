"""RL step of gate `evaluation` (EVAL-1..EVAL-11).

The evaluator is frozen first (provenance: real code hash, prompt template, decoding with its
stop strings, parser, explicit item ids; evaluator id = sha256 of that provenance) and posted
before any score. Then the base model is scored and posted at once, then every trained arm's
final checkpoint at every scheduled seed (plan.replicas; rows and scores carry arm and seed), side by side
(`ctx.run_each`). Every item gives one prediction row (invalid outputs
stay rows, scored 0; a grading timeout or grader error is named in its row and in the score's
`grading_failures`), retained as evidence; scores go to RESULT as they are known. The code hash
covers the grader, the prompt construction and the renderer. Anything scored earlier (the
feasibility pilot) is a pilot measurement only.
"""

from __future__ import annotations

import json
import statistics
from typing import Any

from experiment.stats import evaluation as ev
from experiment.stats.evaluation import BASE_LABEL
from experiment.run.clients import open_session
from experiment.contract.verdict import GateVerdict
from experiment.run.context import RunContext
from experiment.rl.math_eval import PARSER_DESCRIPTION, evaluator_code_files, greedy_predictions, prompt_template
from experiment.rl.recipe import eval_items, renderer_named, rollout_settings, run_async
from experiment.contract.run_layout import evidence_path

GATE = "evaluation"
PROGRESS_EVERY = 100


def run(ctx: RunContext) -> GateVerdict:
    """Long because: a gate step reads top to bottom as the gate's protocol (freeze the evaluator, score base and arms,
    post); its parts share the run's clients and records.
    """
    checkpoints: dict[str, str] = ctx.state.final_checkpoints
    # every arm at every scheduled seed (plan.replicas); a replica's label names its checkpoint and files
    trained = [replica for replica in ctx.plan.replicas if replica.trained]
    missing = [replica.label for replica in trained if replica.label not in checkpoints]
    if missing:
        return GateVerdict(gate=GATE, status="failed", reasons=[f"no final checkpoint for {missing}"])
    base_arm = next((arm.name for arm in ctx.plan.arms if arm.role == "untrained_base"), None)
    items = eval_items(ctx.spec)
    rollout = rollout_settings(ctx.spec)

    with open_session(ctx, "evaluation") as session:
        base_sampler = session.base_sampler(ctx.state.served_model)
        renderer = renderer_named(ctx.state.tokenizer_id, rollout.renderer_name)
        stop_strings = _stop_strings(renderer)
        code_files = evaluator_code_files(renderer)
        provenance = ev.evaluator_provenance(
            code_files, prompt_template(rollout.few_shot),
            {"temperature": 0.0, "max_tokens": rollout.max_tokens, "stop": stop_strings},
            PARSER_DESCRIPTION, [item.id for item in items],
        )
        # the files the code hash covers, by name (the cookbook's and the tokenizer's are not retained): the grader
        # recomputes the hash from them and holds the project's to the retained pipeline code (EVAL-15)
        provenance["code_files"] = ev.code_files_manifest(code_files)
        evaluator_id = ev.evaluator_id(provenance)
        comparisons = _comparisons(ctx)
        evaluation = ev.evaluation_record({evaluator_id: provenance}, [], comparisons)
        ctx.store.update_result(evaluation=evaluation)  # frozen before the first score of anything
        ctx.store.append_event("evaluator_frozen", evaluator_id=evaluator_id, n_items=len(items))

        scored, files, failures = {}, {}, {}
        retained = {entry["name"] for entry in ctx.store.read_manifest()["files"]}

        def score(label: str, arm: str, seed: int, checkpoint: str | None):
            def rows_of_target() -> list[dict[str, Any]]:
                name = f"predictions-{label}.jsonl"
                if name in retained:  # a resumed run: this arm was scored by the same frozen evaluator
                    rows = read_prediction_rows(ctx, name)
                    if {row["evaluator_id"] for row in rows} != {evaluator_id}:
                        raise RuntimeError(f"{name} was scored by another evaluator; re-evaluate every arm")
                    return rows
                sampler = session.sampler_from_path(checkpoint) if checkpoint else base_sampler
                raw = ctx.wait_for_service(lambda: run_async(greedy_predictions(
                    sampler, renderer, items, rollout.max_tokens, rollout.few_shot, on_progress=_progress(ctx, label))))
                rows = [ev.prediction_row(r["item_id"], arm, r["prediction"], r["reference"], bool(r["correct"]),
                                          evaluator_id, seed, checkpoint or ctx.state.served_model,
                                          grading=r.get("grading"), grading_error=r.get("grading_error"))
                        for r in raw]
                ctx.store.add_evidence(name, "predictions", "".join(json.dumps(row) + "\n" for row in rows))
                return rows
            return rows_of_target

        # the base model first (posted at once; an untrained arm of the spec at every scheduled seed), then
        # every trained arm at every seed side by side (ctx.run_each: one Prefect task run each); scores are
        # posted in plan order as each batch finishes
        bases = ([(r.label, r.arm, r.seed, None) for r in ctx.plan.replicas_of(base_arm)] if base_arm
                 else [(BASE_LABEL, BASE_LABEL, ctx.plan.seeds[0], None)])
        batches = [bases, [(r.label, r.arm, r.seed, checkpoints[r.label]) for r in trained]]
        several_seeds = len(ctx.plan.seeds) > 1
        for batch in batches:
            outcomes = ctx.run_each("evaluate", {label: score(label, arm, seed, checkpoint)
                                                 for label, arm, seed, checkpoint in batch})
            for label, arm, seed, _ in batch:
                if isinstance(outcomes[label], BaseException):
                    raise outcomes[label]
                accuracy = ev.score_rows(outcomes[label])
                scored[label], files[label] = accuracy, f"predictions-{label}.jsonl"
                failures[label] = ev.grading_failures(outcomes[label])
                evaluation["scores"].append(ev.score_entry(arm, accuracy, evaluator_id, seed, files[label],
                                                           grading_failures=failures[label]))
                ctx.store.update_result(evaluation=evaluation,
                                        metrics=_metrics(arm, accuracy, base_arm, seed if several_seeds else None))
        if several_seeds:  # each arm's accuracy over its scheduled seeds (the decision's per-arm mean)
            means = {arm.name: statistics.fmean(scored[r.label] for r in ctx.plan.replicas_of(arm.name))
                     for arm in ctx.plan.arms}
            ctx.store.update_result(metrics={"arms": {arm: {"accuracy": mean} for arm, mean in means.items()}})
    return GateVerdict(
        gate=GATE, status="passed",
        reasons=[f"evaluator {evaluator_id[:12]} frozen on {len(items)} items; "
                 + ", ".join(f"{k} {v:.4f}" for k, v in scored.items())]
        + [f"{label}: grading {kind} on {len(ids)} item(s) ({', '.join(ids[:5])}{', ...' if len(ids) > 5 else ''}), "
           "recorded in their rows and scored 0" for label, found in failures.items() for kind, ids in found.items()],
        measured={"evaluator_id": evaluator_id, "n_items": len(items), "accuracy": scored,
                  "grading_failures": {label: found for label, found in failures.items() if found}},
        state={"evaluator_id": evaluator_id, "prediction_files": files},
    )


def read_prediction_rows(ctx: RunContext, name: str) -> list[dict[str, Any]]:
    """A retained predictions file (evidence), one row per item."""
    text = evidence_path(ctx.store.run_dir, name).read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _metrics(arm: str, accuracy: float, base_arm: str | None, seed: int | None) -> dict[str, Any]:
    """`seed` is None for a one-seed run (the arm's accuracy), else the seed whose score this is."""
    if arm == BASE_LABEL and base_arm is None:  # the base model is a reference, not an arm of this spec
        return {"base_model_accuracy": accuracy}
    if seed is not None:
        return {"arms": {arm: {"seeds": {str(seed): {"accuracy": accuracy}}}}}
    return {"arms": {arm: {"accuracy": accuracy}}}


def _comparisons(ctx: RunContext) -> list[dict[str, Any]]:
    """The treatment and the baseline, then every other arm a criterion weights (the base model included: EVAL-12)."""
    roles = ctx.plan.role_to_arm
    arms = [roles[role]["arm"] for role in ("treatment", "baseline") if role in roles]
    for criterion in ctx.plan.criteria:
        arms += [arm for arm in criterion.arm_weights if arm not in arms]
    return [{"metric": "accuracy", "arms": arms}]


def _stop_strings(renderer) -> list[str]:
    stops = renderer.get_stop_sequences()
    tokenizer = renderer.tokenizer
    return [s if isinstance(s, str) else tokenizer.decode([s]) for s in stops]


def _progress(ctx: RunContext, label: str):
    def report(done: int, total: int) -> None:
        ctx.on_progress(f"evaluation-{label.replace('_', '-')}", done, total)
        if done % PROGRESS_EVERY == 0 or done == total:
            ctx.store.append_event("evaluation_progress", arm=label, done=done, total=total)
    return report

