"""Evaluator category: the frozen evaluator and its records (EVAL-*, LOSS-*).

Graded from `RESULT.evaluation`, the prediction files it references (inline evidence) and, for
loss endpoints, `RESULT.loss_eval`.
"""

from __future__ import annotations

from typing import Any

from experiment.sft import loss_eval as loss_rules
from experiment.contract.result_models import Evaluation, PredictionRow
from experiment.stats.evaluation import FORBIDDEN_PROVENANCE_KEYS, evaluator_id
from experiment.grading.common import (
    HEX64, INVALID, UNKNOWN, UNVERIFIED, CategoryGrade, GradeContext, Issue, as_dict, as_list, is_number,
    model_issues, run_checks, short,
)

NAME = "evaluator"


def _evaluators(ctx: GradeContext) -> dict[str, dict[str, Any]]:
    return {key: value for key, value in as_dict(as_dict(ctx.result.get("evaluation")).get("evaluators")).items()
            if isinstance(value, dict)}


def _scores(ctx: GradeContext) -> list[dict[str, Any]]:
    return [s for s in as_list(as_dict(ctx.result.get("evaluation")).get("scores")) if isinstance(s, dict)]


def EVAL_1(ctx: GradeContext) -> list[Issue]:
    record = ctx.result.get("evaluation")
    if record is None or record == {}:
        return [Issue("EVAL-1", UNKNOWN, "RESULT has no evaluation record")]
    issues = model_issues(Evaluation, record, "EVAL-1", INVALID, "evaluation")
    if not _evaluators(ctx):
        issues.append(Issue("EVAL-1", INVALID, "evaluation defines no evaluator"))
    return issues


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


def EVAL_3(ctx: GradeContext) -> list[Issue]:
    return [Issue("EVAL-3", INVALID, f"evaluator {key[:12]}: code_sha256 {short(p.get('code_sha256'))} is not a 64-hex hash")
            for key, p in _evaluators(ctx).items()
            if not (isinstance(p.get("code_sha256"), str) and HEX64.match(p["code_sha256"]))]


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


def EVAL_5(ctx: GradeContext) -> list[Issue]:
    issues = []
    for key, provenance in _evaluators(ctx).items():
        decoding = as_dict(provenance.get("decoding"))
        stop = decoding.get("stop")
        if not (is_number(decoding.get("temperature")) and isinstance(decoding.get("max_tokens"), int)
                and isinstance(stop, list) and all(isinstance(s, str) for s in stop)):
            issues.append(Issue("EVAL-5", INVALID, f"evaluator {key[:12]}: decoding needs numeric temperature, integer "
                                                   "max_tokens and stop as a list of strings"))
    return issues


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
        if isinstance(score.get("seed"), bool) or not isinstance(score.get("seed"), int):
            issues.append(Issue("EVAL-7", INVALID, f"{where} has no integer seed"))
    if ctx.result.get("evaluation") and not _scores(ctx) and ctx.trained:
        issues.append(Issue("EVAL-7", UNKNOWN, "arms were trained but the evaluation record has no scores"))
    return issues


def EVAL_8(ctx: GradeContext) -> list[Issue]:
    issues = []
    for ref in sorted({s.get("predictions_ref") for s in _scores(ctx)}, key=str):
        if not ctx.evidence.usable(ref):
            issues.append(Issue("EVAL-8", UNVERIFIED, f"predictions {short(ref)}: {ctx.evidence.why(ref)}"))
    return issues


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
        ids = as_dict(as_dict(evaluators.get(score.get("evaluator_id"))).get("items")).get("ids")
        if isinstance(ids, list):
            seen = sorted(str(row.get("item_id")) for row in rows if row.get("metric", score.get("metric")) == score.get("metric"))
            if seen != sorted(map(str, ids)):
                issues.append(Issue("EVAL-9", INVALID, f"{ref}: {len(seen)} rows for {score.get('arm')} but the evaluator "
                                                       f"lists {len(ids)} items (every item stays a row)"))
    return issues


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


def _loss_applies(ctx: GradeContext) -> bool:
    if ctx.plan is None:
        return ctx.result.get("loss_eval") is not None
    return bool(ctx.plan.eval.get("loss_eval"))


def LOSS_1(ctx: GradeContext) -> list[Issue]:
    if not _loss_applies(ctx) or not ctx.trained:
        return []
    if not ctx.result.get("loss_eval"):
        return [Issue("LOSS-1", UNVERIFIED, "the endpoint is a loss but RESULT has no loss_eval record")]
    return []


def LOSS_2(ctx: GradeContext) -> list[Issue]:
    record = ctx.result.get("loss_eval")
    if not isinstance(record, dict) or not record:
        return []
    return [Issue("LOSS-2", INVALID, problem) for problem in loss_rules.check(record)]


CHECKS = [EVAL_1, EVAL_2, EVAL_3, EVAL_4, EVAL_5, EVAL_6, EVAL_7, EVAL_8, EVAL_9, EVAL_10, LOSS_1, LOSS_2]


def grade(ctx: GradeContext) -> CategoryGrade:
    if not ctx.result.get("evaluation") and not ctx.trained and ctx.result.get("status") == "running":
        return CategoryGrade(NAME, UNKNOWN, [Issue("EVAL-1", UNKNOWN, "no evaluation yet (the run is still running)")])
    return run_checks(NAME, CHECKS, ctx)
