"""The observations the decision rules (experiment.grading.decision) recompute a decision from, read from the record:
inline, from the retained observations file, or (best_lr_threshold without a decision object) derived from the
retained predictions and per-step log; and the other evidence those rules read (the spec's rule, the decision
object, an evaluator's items, prediction rows as observations)."""

from __future__ import annotations

import statistics
from typing import Any

from experiment.stats import decision as d
from experiment.grading.attempts import last_attempts
from experiment.grading.common import GradeContext, as_dict, as_list, is_number, run_seed
from experiment.grading.evaluator import loss_from_predictions
from experiment.grading.evidence import CORRUPT


def spec_rule(ctx: GradeContext) -> dict[str, Any]:
    """The spec's decision_rule, else the recorded revision's verdict_rule (a spec without a decision_rule)."""
    spec = ctx.spec or {}
    return as_dict(spec.get("decision_rule") or spec.get("verdict_rule"))


def decision_object(ctx: GradeContext) -> dict[str, Any]:
    return as_dict(ctx.result.get("decision"))


def evaluator_items(ctx: GradeContext, evaluator: Any) -> list[str] | None:
    evaluators = as_dict(as_dict(ctx.result.get("evaluation")).get("evaluators"))
    ids = as_dict(as_dict(evaluators.get(evaluator)).get("items")).get("ids")
    return [str(i) for i in ids] if isinstance(ids, list) else None


def prediction_observations(ctx: GradeContext, arms: set[str]) -> list[d.Observation] | None:
    """Every retained prediction row of these arms, as observations (failures scored 0); None when unreadable."""
    rows: list[d.Observation] = []
    for score in as_list(as_dict(ctx.result.get("evaluation")).get("scores")):
        score = as_dict(score)
        if score.get("arm") not in arms:
            continue
        found = ctx.evidence.jsonl(score.get("predictions_ref"))
        if found is None:
            return None
        for row in found:
            value = row.get("value", 1.0 if row.get("correct") else 0.0 if "correct" in row else None)
            try:
                rows.append(d.observation_from_row({**row, "value": value, "metric": row.get("metric", score.get("metric"))}))
            except d.DecisionError:
                return None
    return rows


def nll_from_predictions(rows: list[dict[str, Any]], aggregation: str) -> float | None:
    """Held-out NLL of one run from its per-example prediction rows (the evaluator's recomputation,
    LOSS-3's); None where it cannot be recomputed or no example has a counted token."""
    summary = loss_from_predictions(rows, aggregation)
    return summary["value"] if summary is not None and summary["n_examples"] else None


def step_rows(ctx: GradeContext) -> list[dict[str, Any]]:
    """Per-step training log rows retained inline (rows naming a `run` and its `optim_seconds`)."""
    rows: list[dict[str, Any]] = []
    for entry in ctx.evidence.by_kind("metrics"):
        name = entry.get("name")
        if isinstance(name, str) and name.endswith(".jsonl"):
            rows += [row for row in ctx.evidence.jsonl(name) or [] if "optim_seconds" in row and "run" in row]
    return rows


def derived_rows(ctx: GradeContext) -> tuple[list[dict[str, Any]] | None, str]:
    """best_lr_threshold without a decision object: one value per training run and criterion metric,
    recomputed from the retained evidence, never read from RESULT's summaries: held-out NLL from the
    run's per-example prediction rows (in the spec's aggregation), the median optimizer step from
    the retained per-step log. (None, why) when a value cannot be recomputed."""
    if ctx.plan is None:
        return None, "no plan"
    aggregation = ctx.plan.eval.get("aggregation") or "token_mean"
    scores = [as_dict(s) for s in as_list(as_dict(ctx.result.get("evaluation")).get("scores"))]
    evaluators = list(as_dict(as_dict(ctx.result.get("evaluation")).get("evaluators")))
    steps = None
    rows = []
    for run in ctx.plan.training_runs:
        for metric in sorted({str(c.get("metric")) for c in spec_rule(ctx).get("criteria") or []}):
            if "nll" in metric:
                score = next((s for s in scores if s.get("run") == run.name or s.get("arm") == run.name), None)
                if score is None:
                    return None, f"no score of run {run.name}"
                predictions = ctx.evidence.jsonl(score.get("predictions_ref"))
                if predictions is None:
                    return None, f"run {run.name}: {ctx.evidence.why(score.get('predictions_ref')) or 'no JSONL predictions'}"
                value = nll_from_predictions(predictions, aggregation)
                evaluator = score.get("evaluator_id")
            elif metric == "median_optim_step_seconds":
                steps = last_attempts(ctx, step_rows(ctx))[0] if steps is None else steps  # a resumed run's own
                optim = [row["optim_seconds"] for row in steps if row.get("run") == run.name and is_number(row.get("optim_seconds"))]
                complete = run.steps is None or len(optim) == int(run.steps)  # every planned step logged, once
                value = statistics.median(optim) if optim and complete else None
                evaluator = evaluators[0] if evaluators else None
            else:
                return None, f"metric {metric} is not recomputable from the retained evidence"
            if value is None:
                return None, f"run {run.name}: {metric} does not recompute from the retained evidence"
            rows.append({"item_id": "best_lr_threshold", "arm": run.name, "seed": run_seed(run), "metric": metric,
                         "value": value, "evaluator_id": evaluator})
    return rows, ""


# why the observations cannot be read (observation_rows), one DEC-3 function each: the reference (no file named, not JSONL
# observations), the file not retained (by name, or by name and hash only), its bytes not under the sha256 named
FILE, RETAINED, SHA256 = "file", "retained", "sha256"


def observation_rows(ctx: GradeContext) -> tuple[list[dict[str, Any]] | None, str]:
    """The observation rows the record carries, or None with the reason they cannot be read."""
    rows, why, _ = _read(ctx)
    return rows, why


def unread_part(ctx: GradeContext) -> str:
    """Which DEC-3 part says why the observations cannot be read (FILE, RETAINED, SHA256; "" when they can)."""
    return _read(ctx)[2]


def _read(ctx: GradeContext) -> tuple[list[dict[str, Any]] | None, str, str]:
    record = decision_object(ctx)
    if not record and spec_rule(ctx).get("method") == "best_lr_threshold":
        derived, why = derived_rows(ctx)
        return (derived, "", "") if derived else (None, why or "no training runs to recompute", FILE)
    if isinstance(record.get("observations"), list):
        return record["observations"], "", ""
    ref = as_dict(record.get("observations_file"))
    name = ref.get("name")
    if not name:
        return None, "no observations", FILE
    retained = ctx.evidence.sha256(name)
    if retained != ref.get("sha256"):
        return None, f"observations_file {name} is not retained under the sha256 the decision names", \
            RETAINED if retained is None else SHA256
    if not ctx.evidence.usable(name):
        return None, ctx.evidence.why(name), SHA256 if ctx.evidence.state(name)[0] == CORRUPT else RETAINED
    rows = ctx.evidence.jsonl(name)
    return (rows, "", "") if rows is not None else (None, f"{name} is not JSONL observations", FILE)


def read_observations(ctx: GradeContext) -> list[d.Observation] | None:
    rows, _ = observation_rows(ctx)
    if rows is None:
        return None
    try:
        return [d.observation_from_row(row, f"observation {i}") for i, row in enumerate(rows)]
    except d.DecisionError:
        return None
