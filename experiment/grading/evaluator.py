"""Evaluator category: the frozen evaluator and its records (EVAL-*, LOSS-*).

Graded from `RESULT.evaluation`, the prediction files it references (inline evidence) and, for
loss endpoints, `RESULT.loss_eval`.
"""

from __future__ import annotations

import json
import math
from typing import Any

from experiment.grading.loss import held_out_loss, record_problems
from experiment.contract.result_models import Evaluation, PredictionRow
from experiment.stats.evaluation import FORBIDDEN_PROVENANCE_KEYS, evaluator_id
from experiment.grading import spec_anchor
from experiment.grading.common import (
    ABS_TOL, FLOAT_TOL, HEX64, INVALID, UNKNOWN, UNVERIFIED, CategoryGrade, GradeContext, Issue, as_dict, as_list, close,
    equal_json, float_of, is_integer, is_number, model_issues, run_checks, short, run_label,
)
from experiment.grading.registry import implements, rule

NAME = "evaluator"


def _evaluators(ctx: GradeContext) -> dict[str, dict[str, Any]]:
    return {key: value for key, value in as_dict(as_dict(ctx.result.get("evaluation")).get("evaluators")).items()
            if isinstance(value, dict)}


def _scores(ctx: GradeContext) -> list[dict[str, Any]]:
    return [s for s in as_list(as_dict(ctx.result.get("evaluation")).get("scores")) if isinstance(s, dict)]


@rule("EVAL-1", "evaluator", "invalid|unknown", "evaluation = {version: 1, evaluators, scores, comparisons} with the contract's shape")
def EVAL_1(ctx: GradeContext) -> list[Issue]:
    record = ctx.result.get("evaluation")
    if record is None or record == {}:
        return [Issue("EVAL-1", UNKNOWN, "RESULT has no evaluation record")]
    issues = model_issues(Evaluation, record, "EVAL-1", INVALID, "evaluation")
    if isinstance(record, dict) and record.get("version") is True:  # JSON true is no number (Python's True == 1)
        issues.append(Issue("EVAL-1", INVALID, "evaluation.version: true is not the number 1"))
    if not _evaluators(ctx):
        issues.append(Issue("EVAL-1", INVALID, "evaluation defines no evaluator"))
    return issues


@rule("EVAL-2", "evaluator", "invalid", "evaluator_id is the sha256 of the canonical provenance stored under it")
def EVAL_2(ctx: GradeContext) -> list[Issue]:
    issues = []
    for key, provenance in _evaluators(ctx).items():
        try:
            expected = evaluator_id(provenance)
        except (TypeError, ValueError):
            issues.append(Issue("EVAL-2", INVALID, f"evaluator {key[:12]}: provenance is not canonical JSON"))
            continue
        if expected != key:
            issues.append(Issue("EVAL-2", INVALID, f"evaluator id {key[:12]}... is not the sha256 of its provenance "
                                                   f"({expected[:12]}...)"))
    return issues


@rule("EVAL-3", "evaluator", "invalid", "code_sha256 is a 64-hex hash, never prose")
def EVAL_3(ctx: GradeContext) -> list[Issue]:
    return [Issue("EVAL-3", INVALID, f"evaluator {key[:12]}: code_sha256 {short(p.get('code_sha256'))} is not a 64-hex hash")
            for key, p in _evaluators(ctx).items()
            if not (isinstance(p.get("code_sha256"), str) and HEX64.match(p["code_sha256"]))]


@rule("EVAL-4", "evaluator", "invalid|unverified", "items are an explicit items.ids list (a manifest: unverified with a decision_rule)")
def EVAL_4(ctx: GradeContext) -> list[Issue]:
    issues = []
    has_rule = bool(ctx.spec and ctx.spec.get("decision_rule"))
    for key, provenance in _evaluators(ctx).items():
        items = as_dict(provenance.get("items"))
        ids = items.get("ids")
        if isinstance(ids, list) and ids and all(isinstance(i, str) and i for i in ids):
            if len(set(ids)) != len(ids):
                issues.append(Issue("EVAL-4", INVALID, f"evaluator {key[:12]}: items.ids has duplicates"))
        elif ids is None and items.get("manifest_ref"):
            state = ctx.evidence.state(items["manifest_ref"])
            if state[0] != "usable" or ctx.evidence.sha256(items["manifest_ref"]) != items.get("manifest_sha256"):
                issues.append(Issue("EVAL-4", UNVERIFIED, f"evaluator {key[:12]}: item manifest not retained inline with "
                                                          "its sha256"))
            if has_rule:
                issues.append(Issue("EVAL-4", UNVERIFIED, f"evaluator {key[:12]}: a manifest-only item list is not yet "
                                                          "resolved by the decision validator; list items.ids"))
        else:
            issues.append(Issue("EVAL-4", INVALID, f"evaluator {key[:12]}: items.ids {short(ids)} is not an explicit "
                                                   "list of item id strings"))
    return issues


@rule("EVAL-5", "evaluator", "invalid", "decoding gives temperature, max_tokens and stop as a list of strings")
def EVAL_5(ctx: GradeContext) -> list[Issue]:
    issues = []
    for key, provenance in _evaluators(ctx).items():
        decoding = as_dict(provenance.get("decoding"))
        stop = decoding.get("stop")
        if not (is_number(decoding.get("temperature")) and is_integer(decoding.get("max_tokens"))
                and isinstance(stop, list) and all(isinstance(s, str) for s in stop)):
            issues.append(Issue("EVAL-5", INVALID, f"evaluator {key[:12]}: decoding needs numeric temperature, integer "
                                                   "max_tokens and stop as a list of strings"))
    return issues


@rule("EVAL-6", "evaluator", "invalid", "the provenance never names the scored arm or checkpoint")
def EVAL_6(ctx: GradeContext) -> list[Issue]:
    issues = []
    for key, provenance in _evaluators(ctx).items():
        def walk(value: Any) -> bool:
            if isinstance(value, dict):
                return any(k in FORBIDDEN_PROVENANCE_KEYS or walk(v) for k, v in value.items())
            return isinstance(value, list) and any(walk(v) for v in value)
        if walk(provenance):
            issues.append(Issue("EVAL-6", INVALID, f"evaluator {key[:12]}: provenance names the scored arm or checkpoint"))
    return issues


@rule("EVAL-7", "evaluator", "invalid|unknown", "every score names a defined evaluator, arm, metric, finite value and seed, once")
def EVAL_7(ctx: GradeContext) -> list[Issue]:
    issues = []
    known = set(_evaluators(ctx))
    for score in _scores(ctx):
        where = f"score {score.get('arm')}/{score.get('metric')}"
        if score.get("evaluator_id") not in known:
            issues.append(Issue("EVAL-7", INVALID, f"{where} names evaluator {short(score.get('evaluator_id'))} that the "
                                                   "record does not define"))
        if not (isinstance(score.get("arm"), str) and isinstance(score.get("metric"), str) and is_number(score.get("value"))):
            issues.append(Issue("EVAL-7", INVALID, f"{where} needs arm, metric and a finite value"))
        if not is_integer(score.get("seed")):
            issues.append(Issue("EVAL-7", INVALID, f"{where} has no integer seed"))
    if ctx.plan is not None:
        names = {arm.name for arm in ctx.plan.arms} | {run.name for run in ctx.plan.training_runs} | {"base"}
        strangers = sorted({str(s.get("arm")) for s in _scores(ctx) if s.get("arm") not in names})
        if strangers:
            issues.append(Issue("EVAL-7", INVALID, f"scores name arms the plan does not have (nor the base model): "
                                                   f"{', '.join(strangers)}"))
    keys = [(s.get("arm"), s.get("run"), s.get("metric"), s.get("seed"), s.get("evaluator_id")) for s in _scores(ctx)]
    twice = sorted({str(key[1] or key[0]) for key in keys if keys.count(key) > 1})
    if twice:
        issues.append(Issue("EVAL-7", INVALID, f"scores listed twice: {', '.join(twice)}"))
    if ctx.result.get("evaluation") and not _scores(ctx) and ctx.trained:
        issues.append(Issue("EVAL-7", UNKNOWN, "arms were trained but the evaluation record has no scores"))
    return issues


def _posted(ctx: GradeContext, owner: Any, metric: Any) -> Any:
    """Where the run posts a scored number: `metrics.arms[<arm>][<metric>]`, a run of an LR grid under its
    arm's `runs[<lr>]`, the base model's also as `base_model_<metric>` / `base_<metric>` (None when not posted)."""
    metrics = as_dict(ctx.result.get("metrics"))
    arms = as_dict(metrics.get("arms"))
    if isinstance(arms.get(owner), dict):
        return arms[owner].get(metric)
    run = next((r for r in (ctx.plan.training_runs if ctx.plan is not None else []) if r.name == owner), None)
    if run is not None and run.lr is not None:
        runs = as_dict(as_dict(arms.get(run.arm)).get("runs"))
        entry = runs[run_label(run)] if run_label(run) in runs else next(  # its label; else its learning rate
            (v for k, v in runs.items() if close(float_of(k), run.lr, abs_tol=ABS_TOL)), None)
        return as_dict(entry).get(metric)
    if owner == "base":
        return metrics.get(f"base_model_{metric}", metrics.get(f"base_{metric}"))
    return None


@implements("EVAL-7")
def EVAL_7_metrics(ctx: GradeContext) -> list[Issue]:
    """EVAL-7, the posted numbers *(project reading)*: where the run posts a scored arm's (or run's) metric
    (`_posted`), it is the score's value."""
    scores = [s for s in _scores(ctx) if is_number(s.get("value"))]
    issues = []
    for score in scores:
        owner, metric = score.get("run") or score.get("arm"), score.get("metric")
        if sum((s.get("run") or s.get("arm"), s.get("metric")) == (owner, metric) for s in scores) != 1:
            continue  # one value per seed: the posted number is their summary (DEC-* recompute it)
        posted = _posted(ctx, owner, metric)
        if posted is not None and not (is_number(posted) and close(posted, score["value"], abs_tol=ABS_TOL)):
            issues.append(Issue("EVAL-7", INVALID, f"metrics for {owner} post {metric} {short(posted)}, its score is "
                                                   f"{score['value']!r}"))
    return issues


@rule("EVAL-8", "evaluator", "unverified", "every score's predictions_ref is a retained evidence file with inline content")
def EVAL_8(ctx: GradeContext) -> list[Issue]:
    issues = []
    for ref in sorted({s.get("predictions_ref") for s in _scores(ctx)}, key=str):
        if not ctx.evidence.usable(ref):
            issues.append(Issue("EVAL-8", UNVERIFIED, f"predictions {short(ref)}: {ctx.evidence.why(ref)}"))
    return issues


@rule("EVAL-9", "evaluator", "invalid|unverified", "prediction rows: one per item with the required fields, one checkpoint, the score their mean (the base model's, unverified without a spec)")
def EVAL_9(ctx: GradeContext) -> list[Issue]:
    issues = []
    evaluators = _evaluators(ctx)
    for score in _scores(ctx):
        ref = score.get("predictions_ref")
        rows = ctx.evidence.jsonl(ref) if ctx.evidence.usable(ref) else None
        if rows is None:
            if ctx.evidence.usable(ref):
                issues.append(Issue("EVAL-9", INVALID, f"{ref} is not JSONL prediction rows"))
            continue
        rows = [row for row in rows if row.get("arm") in (score.get("arm"), score.get("run"))
                or row.get("run") == score.get("arm")] or rows
        bad = [row for row in rows if model_issues(PredictionRow, row, "EVAL-9", INVALID, "row")]
        if bad:
            issues.append(Issue("EVAL-9", INVALID, f"{ref}: {len(bad)} row(s) lack item_id, arm, prediction, reference, "
                                                   "metric or evaluator_id"))
        if any(row.get("evaluator_id") != score.get("evaluator_id") for row in rows):
            issues.append(Issue("EVAL-9", INVALID, f"{ref}: rows carry another evaluator id than the score"))
        if any("learning_rate" in row and not equal_json(row["learning_rate"], score.get("learning_rate")) for row in rows):
            issues.append(Issue("EVAL-9", INVALID, f"{ref}: rows name another learning rate than the score"))
        if any("run" in row and row["run"] != score.get("run") for row in rows):
            issues.append(Issue("EVAL-9", INVALID, f"{ref}: rows name another training run than the score"))
        if any("seed" in row and not equal_json(row["seed"], score.get("seed")) for row in rows):
            issues.append(Issue("EVAL-9", INVALID, f"{ref}: rows carry another seed than the score"))
        ids = as_dict(as_dict(evaluators.get(score.get("evaluator_id"))).get("items")).get("ids")
        if isinstance(ids, list):
            seen = sorted(str(row.get("item_id")) for row in rows if row.get("metric", score.get("metric")) == score.get("metric"))
            if seen != sorted(map(str, ids)):
                issues.append(Issue("EVAL-9", INVALID, f"{ref}: {len(seen)} rows for {score.get('arm')} but the evaluator "
                                                       f"lists {len(ids)} items (every item stays a row)"))
    return issues


GRADINGS = ("graded", "no_boxed", "timeout", "grader_error")  # experiment.rl.math_eval.grade_answer's outcomes


@implements("EVAL-9")
def EVAL_9_values(ctx: GradeContext) -> list[Issue]:
    """EVAL-9, the score *(project reading)*: a score of per-item values (accuracy) is the mean of its rows'
    values (of its metric and seed), and a row not graded (`grading` other than `graded`) scores 0."""
    issues = []
    for score in _scores(ctx):
        rows = ctx.evidence.jsonl(score.get("predictions_ref")) if ctx.evidence.usable(score.get("predictions_ref")) else None
        if not rows or "nll" in str(score.get("metric")) or not is_number(score.get("value")):
            continue
        mine = [r for r in rows if r.get("metric", score.get("metric")) == score.get("metric")
                and equal_json(r.get("seed", score.get("seed")), score.get("seed"))
                and (r.get("arm") in (score.get("arm"), score.get("run")) or r.get("run") == score.get("arm"))]
        values = [r.get("value") for r in mine]
        if not mine or not all(is_number(v) for v in values):
            issues.append(Issue("EVAL-9", INVALID, f"{score.get('predictions_ref')}: rows without a numeric value"))
            continue
        if not close(math.fsum(values) / len(values), score["value"], abs_tol=ABS_TOL):
            issues.append(Issue("EVAL-9", INVALID, f"score {score.get('run') or score.get('arm')}: {score['value']!r} is "
                                                   f"not the mean of its {len(values)} rows' values"))
        ungraded = [r for r in mine if "grading" in r and (r["grading"] not in GRADINGS
                                                           or (r["grading"] != "graded" and r.get("value") != 0))]
        if ungraded:
            issues.append(Issue("EVAL-9", INVALID, f"{score.get('predictions_ref')}: {len(ungraded)} row(s) with an "
                                                   "unknown grading outcome or a score although not graded"))
    return issues


@implements("EVAL-9")
def EVAL_9_cover(ctx: GradeContext) -> list[Issue]:
    """EVAL-9, every planned arm *(project reading)*: a succeeded run has a prediction row for every item of each
    evaluator listing its ids, for every arm of the plan at every scheduled seed (EVAL_9 holds each score's rows to
    the items; this, that no planned arm or seed went unscored). Only readable predictions count: EVAL-8 reports the
    others, and nothing is held against rows it cannot read."""
    refs = sorted({str(s["predictions_ref"]) for s in _scores(ctx) if s.get("predictions_ref")})
    if ctx.plan is None or ctx.result.get("status") != "succeeded" or not refs or \
            not all(ctx.evidence.usable(ref) for ref in refs):
        return []
    rows = [r for ref in refs for r in ctx.evidence.jsonl(ref) or []]
    present = {(r.get("arm"), r.get("seed"), r.get("item_id")) for r in rows}
    by_run = {(r.get(key), r.get("item_id")) for r in rows for key in ("arm", "run")}  # an LR grid's run, at its seed
    seeds = (ctx.plan.decision or {}).get("seeds") or sorted({s["seed"] for s in _scores(ctx) if is_integer(s.get("seed"))})
    grid = {run.arm: [] for run in ctx.plan.training_runs if run.name != run.arm}
    for run in ctx.plan.training_runs:
        grid.get(run.arm, []).append(run.name)
    issues = []
    for provenance in _evaluators(ctx).values():
        ids = as_dict(provenance.get("items")).get("ids")
        for arm, seed in [(arm.name, seed) for arm in ctx.plan.arms for seed in seeds] if isinstance(ids, list) else []:
            missing = [item for item in ids if (arm, seed, item) not in present and not (
                arm in grid and all((run, item) in by_run for run in grid[arm]))]
            if missing:
                issues.append(Issue("EVAL-9", INVALID, f"arm {arm} seed {seed}: {len(missing)} of {len(ids)} items have "
                                                       f"no prediction row (first: {short(missing[0], 30)})"))
    return issues


@rule("EVAL-10", "evaluator", "invalid", "the evaluator is frozen before the first score; compared arms share it")
def EVAL_10(ctx: GradeContext) -> list[Issue]:
    """Compared arms (and the base) scored under one evaluator before a definitive verdict."""
    issues = []
    scores = _scores(ctx)
    for comparison in as_list(as_dict(ctx.result.get("evaluation")).get("comparisons")):
        comparison = as_dict(comparison)
        by_arm = {}
        for score in scores:
            if score.get("metric") == comparison.get("metric") and score.get("arm") in as_list(comparison.get("arms")):
                by_arm.setdefault(score["arm"], set()).add(score.get("evaluator_id"))
        definitive = ctx.result.get("verdict") in ("supported", "refuted")
        shared = set.intersection(*by_arm.values()) if by_arm else set()
        if by_arm and not shared and definitive:
            issues.append(Issue("EVAL-10", INVALID, f"compared arms of {comparison.get('metric')} share no evaluator "
                                                    "(re-evaluation pending) but a definitive verdict was posted"))
        missing = [arm for arm in as_list(comparison.get("arms")) if arm not in by_arm]
        if missing and definitive:
            issues.append(Issue("EVAL-10", INVALID, f"comparison {comparison.get('metric')}: no score for "
                                                    f"{', '.join(map(str, missing))}"))
    return issues


def _weighted_arms(ctx: GradeContext) -> dict[str, list[str]]:
    """metric -> every arm some criterion of the spec's rule weights (roles mapped to arms; the base too)."""
    spec = ctx.spec or {}
    rule = as_dict(spec.get("decision_rule") or spec.get("verdict_rule"))
    roles = {role: entry["arm"] for role, entry in (ctx.plan.role_to_arm if ctx.plan is not None else {}).items()}
    arms: dict[str, list[str]] = {}
    for criterion in as_list(rule.get("criteria")):
        criterion = as_dict(criterion)
        selection = getattr(ctx.plan, "selection", None) or {}  # adaptive selection: every candidate is compared
        for key in as_dict(criterion.get("weights")):
            arms.setdefault(str(criterion.get("metric")), [])
            for arm in selection["candidates"] if key == selection.get("role") else [roles.get(key, key)]:
                if arm not in arms[str(criterion.get("metric"))]:
                    arms[str(criterion.get("metric"))].append(arm)
    return arms


@rule("EVAL-12", "evaluator", "invalid", "comparisons name every arm each criterion weights, the base too")
def EVAL_12(ctx: GradeContext) -> list[Issue]:
    """Each criterion's metric has a comparison naming every arm the criterion weights (the base
    model too), and each of them is scored under the comparison's evaluator."""
    if not (ctx.finished and ctx.result.get("verdict") is not None and _scores(ctx)):
        return []
    comparisons = [as_dict(c) for c in as_list(as_dict(ctx.result.get("evaluation")).get("comparisons"))]
    issues = [Issue("EVAL-12", INVALID, f"the comparison of {c.get('metric')} names an arm twice") for c in comparisons
              if len(as_list(c.get("arms"))) != len({json.dumps(a) for a in as_list(c.get("arms"))})]
    metrics = [json.dumps(c.get("metric")) for c in comparisons]
    if len(set(metrics)) != len(metrics):
        issues.append(Issue("EVAL-12", INVALID, "a metric is compared twice"))
    for metric, arms in _weighted_arms(ctx).items():
        if metric not in {c.get("metric") for c in comparisons} and metric not in {s.get("metric") for s in _scores(ctx)}:
            continue  # a metric the evaluator does not score (an optimizer timing): DEC-* recompute it
        compared = {arm for c in comparisons if c.get("metric") == metric for arm in as_list(c.get("arms"))}
        # the runs of the arms not named whole (an arm named by its own name is compared with every run it has)
        runs = [run for run in (ctx.plan.training_runs if ctx.plan is not None else []) if run.arm not in compared]
        whole = {run.arm for run in runs if run.name in compared} - {run.arm for run in runs if run.name not in compared}
        if {run.arm for run in runs if run.name in compared} - whole:
            issues.append(Issue("EVAL-12", INVALID, f"the comparison of {metric} names some runs of an arm's LR grid, "
                                                    "not all of them"))
        compared |= whole
        left_out = [arm for arm in arms if arm not in compared]
        if left_out:
            issues.append(Issue("EVAL-12", INVALID, f"the comparison of {metric} leaves out {', '.join(left_out)}, which "
                                                    "a criterion weights"))
    return issues


def _loss_applies(ctx: GradeContext) -> bool:
    if ctx.plan is None:
        return ctx.result.get("loss_eval") is not None
    return bool(ctx.plan.eval.get("loss_eval"))


@rule("LOSS-1", "evaluator", "unverified", "a loss endpoint reports loss_eval")
def LOSS_1(ctx: GradeContext) -> list[Issue]:
    if not _loss_applies(ctx) or not ctx.trained:
        return []
    if not ctx.result.get("loss_eval"):
        return [Issue("LOSS-1", UNVERIFIED, "the endpoint is a loss but RESULT has no loss_eval record")]
    return []


@rule("LOSS-2", "evaluator", "invalid", "loss_eval's values are consistent (aggregation, nll_sum / n_tokens, same token counts)")
def LOSS_2(ctx: GradeContext) -> list[Issue]:
    record = ctx.result.get("loss_eval")
    if not isinstance(record, dict) or not record:
        return []
    return [Issue("LOSS-2", INVALID, problem) for problem in record_problems(record)]


@rule("LOSS-3", "evaluator", "invalid|unverified", "loss_eval recomputes from the retained per-example prediction rows")
def LOSS_3(ctx: GradeContext) -> list[Issue]:
    """loss_eval is what the retained per-example prediction rows give: every run's entry (an arm
    of an LR grid keeps its runs under `runs`, its own entry is its selected run's) recomputed."""
    record = ctx.result.get("loss_eval")
    if not isinstance(record, dict) or not record:
        return []
    arms = as_dict(record.get("arms"))
    issues = []
    for score in _scores(ctx):
        arm, run = score.get("arm"), score.get("run")
        entry = as_dict(arms.get(arm))
        if run is not None and entry:
            by_label = as_dict(entry.get("runs"))  # the run's own label (`<lr>`, `<lr>-seed<s>`), else its learning rate
            planned = next((r for r in (ctx.plan.training_runs if ctx.plan is not None else []) if r.name == run), None)
            label = (run_label(planned) if planned is not None and run_label(planned) in by_label else None) or next(
                (key for key in by_label if f"{arm}@lr={key}" == run), None) or next(
                (key for key in by_label if is_number(score.get("learning_rate"))
                 and close(float_of(key), score["learning_rate"], abs_tol=ABS_TOL)), None)
            if label is None:
                issues.append(Issue("LOSS-3", INVALID, f"loss_eval has no entry for run {run}"))
                continue
            entry = as_dict(as_dict(entry.get("runs")).get(label))
        if not entry:
            trained = ({a.name for a in ctx.plan.trained_arms} | {r.name for r in ctx.plan.training_runs}
                       if ctx.plan is not None else set())
            if arm in trained or run in trained:  # an untrained base may be scored without a loss_eval entry
                issues.append(Issue("LOSS-3", INVALID, f"loss_eval has no entry for {run or arm}"))
            continue
        rows = ctx.evidence.jsonl(score.get("predictions_ref"))
        if rows is None:
            issues.append(Issue("LOSS-3", UNVERIFIED, f"{run or arm}: the predictions behind its held-out NLL cannot be "
                                                      f"read ({ctx.evidence.why(score.get('predictions_ref')) or 'not JSONL'})"))
            continue
        expected = loss_from_predictions(rows, str(entry.get("aggregation")))
        if expected is None:
            issues.append(Issue("LOSS-3", INVALID, f"{run or arm}: prediction rows carry no per-example nll_sum and n_tokens"))
            continue
        wrong = [key for key, value in expected.items() if not close(entry.get(key), value, abs_tol=ABS_TOL)]
        if wrong:
            issues.append(Issue("LOSS-3", INVALID, f"{run or arm}: loss_eval {', '.join(wrong)} do not recompute from "
                                                   "the retained predictions"))
    aggregation = (ctx.plan.eval.get("aggregation") if ctx.plan is not None else None) or record.get("aggregation")
    for score in _scores(ctx):  # a held-out NLL score (the base's too) is what its prediction rows give
        rows = ctx.evidence.jsonl(score.get("predictions_ref"))
        expected = loss_from_predictions(rows, str(aggregation)) if rows and "nll" in str(score.get("metric")) else None
        if expected is not None and not close(score.get("value"), expected["value"], abs_tol=ABS_TOL):
            issues.append(Issue("LOSS-3", INVALID, f"score {score.get('run') or score.get('arm')}: {score.get('value')!r} is "
                                                   f"not the {aggregation} of its predictions ({expected['value']!r})"))
    for arm, entry in arms.items():
        entry = as_dict(entry)
        selected = as_dict(as_dict(entry.get("runs")).get(entry.get("selected_run")))
        if entry.get("runs") is not None and not (selected and all(
                equal_json(entry.get(k), v, FLOAT_TOL, ABS_TOL) for k, v in selected.items())):
            issues.append(Issue("LOSS-3", INVALID, f"loss_eval {arm} is not its selected run's entry"))
    return issues


def loss_from_predictions(rows: list[dict[str, Any]], aggregation: str) -> dict[str, Any] | None:
    """The held-out NLL summary of one scored run recomputed from its retained per-example prediction rows
    (each `prediction` a {nll_sum, n_tokens}), by the contract's definitions (experiment.grading.loss, not the
    run's code); None where there are no rows or a row is not such a pair."""
    totals = [as_dict(row.get("prediction")) for row in rows]
    if not all(is_number(t.get("nll_sum")) and is_integer(t.get("n_tokens")) for t in totals) or not totals:
        return None
    return held_out_loss([(t["nll_sum"], t["n_tokens"]) for t in totals], aggregation)


@rule("LOSS-4", "evaluator", "invalid", "loss_eval's aggregation is the spec's")
def LOSS_4(ctx: GradeContext) -> list[Issue]:
    """loss_eval's aggregation (top level and every arm and run) is the one the spec's eval states."""
    record = ctx.result.get("loss_eval")
    wanted = ctx.plan.eval.get("aggregation") if ctx.plan is not None else None
    if not isinstance(record, dict) or not record or not wanted:
        return []
    found = {record.get("aggregation")}
    for entry in as_dict(record.get("arms")).values():
        found.add(as_dict(entry).get("aggregation"))
        found |= {as_dict(run).get("aggregation") for run in as_dict(as_dict(entry).get("runs")).values()}
    other = sorted(str(f) for f in found - {wanted})
    return [Issue("LOSS-4", INVALID, f"loss_eval aggregation {', '.join(other)} is not the spec's {wanted}")] if other else []


def _base_names(ctx: GradeContext) -> set[str]:
    """What the base model's rows may name as their checkpoint: the spec's base model, the model it was
    served as (a `model` deviation), or the run's shared initialization checkpoint."""
    base = ctx.plan.base_model if ctx.plan is not None else None
    names = {base} | {as_dict(d).get("effective") for d in as_list(ctx.result.get("deviations"))
                      if as_dict(d).get("field") == "model" and as_dict(d).get("original") == base}
    for arm in as_dict(as_dict(ctx.result.get("initialization_provenance")).get("arms")).values():
        names.add(as_dict(as_dict(arm).get("initialization")).get("checkpoint_uri"))
    return {name for name in names if isinstance(name, str) and name}


@implements("EVAL-9")
def EVAL_9_checkpoints(ctx: GradeContext) -> list[Issue]:
    """EVAL-9, the scored model *(project reading)*: every row of a score names one checkpoint: the base
    model (as served, or the shared initialization) for the base, else the checkpoint evidence.checkpoints
    lists for that arm or run (at the score's seed, where the checkpoint names one: seed replicas), its last."""
    listed: dict[Any, tuple[int, Any]] = {}
    for checkpoint in map(as_dict, as_list(as_dict(ctx.result.get("evidence")).get("checkpoints"))):
        step = checkpoint.get("step") if isinstance(checkpoint.get("step"), int) else -1
        key = (checkpoint.get("arm"), checkpoint.get("seed"))
        if key not in listed or step >= listed[key][0]:
            listed[key] = (step, checkpoint.get("uri"))
    issues = []
    for score in _scores(ctx):
        rows = ctx.evidence.jsonl(score.get("predictions_ref")) if ctx.evidence.usable(score.get("predictions_ref")) else None
        owner = score.get("run") or score.get("arm")
        if not rows:
            continue
        names = {json.dumps(row.get("checkpoint")) for row in rows}
        final = listed.get((owner, score.get("seed"))) or listed.get((owner, None), (0, None))
        wanted = _base_names(ctx) if score.get("arm") == "base" else {final[1]} - {None}
        if len(names) == 1 and score.get("arm") == "base" and ctx.plan is None \
                and json.loads(next(iter(names))) not in wanted:  # the spec names the base model: none, unknown
            issues.append(Issue("EVAL-9", UNVERIFIED, f"{score.get('predictions_ref')}: without the spec, the base "
                                                      "model its rows must be scored on is not known"))
        elif len(names) != 1 or json.loads(names.pop()) not in wanted:
            issues.append(Issue("EVAL-9", INVALID, f"{score.get('predictions_ref')}: its rows are not all scored on "
                                                   f"{owner}'s {'base model' if score.get('arm') == 'base' else 'final checkpoint'}"))
    return issues


@rule("EVAL-13", "evaluator", "invalid", "the evaluator's items are the spec's eval set: n_examples items, the first rows of its eval data")
def EVAL_13(ctx: GradeContext) -> list[Issue]:
    """The evaluator's items are the spec's eval set (experiment.grading.spec_anchor)."""
    return spec_anchor.eval_set_issues(ctx)


@rule("EVAL-14", "evaluator", "invalid", "the evaluator's prompt template, decoding and parser are the ones the spec fixes")
def EVAL_14(ctx: GradeContext) -> list[Issue]:
    """The evaluator's prompt template, decoding and parser are the ones the spec fixes."""
    return spec_anchor.provenance_issues(ctx)


@rule("EVAL-15", "evaluator", "invalid|unverified", "code_sha256 is the hash of the evaluator code retained in the pipeline-code evidence")
def EVAL_15(ctx: GradeContext) -> list[Issue]:
    """code_sha256 is the hash of the evaluator code retained in the pipeline-code evidence."""
    return spec_anchor.code_hash_issues(ctx)


@rule("EVAL-16", "evaluator", "invalid|unverified", "in a run directory, the evaluator_frozen event comes before the evaluation began")
def EVAL_16(ctx: GradeContext) -> list[Issue]:
    """(run directory) The evaluator_frozen event comes before the evaluation began."""
    return spec_anchor.frozen_order_issues(ctx)


CHECKS = [EVAL_1, EVAL_2, EVAL_3, EVAL_4, EVAL_5, EVAL_6, EVAL_7, EVAL_7_metrics, EVAL_8, EVAL_9, EVAL_9_checkpoints, EVAL_9_values, EVAL_9_cover, EVAL_10, EVAL_12,
          EVAL_13, EVAL_14, EVAL_15, EVAL_16, LOSS_1, LOSS_2, LOSS_3, LOSS_4]


def grade(ctx: GradeContext) -> CategoryGrade:
    if not ctx.result.get("evaluation") and not ctx.trained and ctx.result.get("status") == "running":
        return CategoryGrade(NAME, UNKNOWN, [Issue("EVAL-1", UNKNOWN, "no evaluation yet (the run is still running)")])
    return run_checks(NAME, CHECKS, ctx)
