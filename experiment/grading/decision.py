"""Decision category (DEC-*, ADAPT-1): every decision method recomputed from retained evidence.

The observations are read from the record (inline `observations`, or the inline content of the
retained `observations_file`); the spec's method is recomputed with `experiment.stats.decision`
(`paired_hoeffding`, with Bonferroni for simultaneous criteria, and `best_lr_threshold`), and the
recorded criteria, `effect`, `ci`, `grid_edge` and verdict must be what the recomputation gives.
"""

from __future__ import annotations

import json
from typing import Any

from experiment.stats import decision as d
from experiment.stats import selection as sel
from experiment.contract.result import adaptation_batch_hash
from experiment.contract.result_models import Decision
from experiment.contract.spec import ROLE_LABELS, SpecError, apply_revision
from experiment.grading.common import (
    FLOAT_TOL, INVALID, MISSING_EVIDENCE, MISSING_SUMMARY, NOT_APPLICABLE, UNKNOWN, UNVERIFIED, CategoryGrade, GradeContext, Issue, as_dict, as_list,
    close, equal_json, first_difference, float_of, is_integer, is_number, model_issues, run_checks, short, run_label, run_seed,
)
from experiment.grading.decision_rows import (
    FILE, RETAINED, SHA256, decision_object, derived_rows, evaluator_items, observation_rows, prediction_observations,
    read_observations, spec_rule, unread_part,
)
from experiment.grading.registry import implements, rule

NAME = "decision"
MAX_OBSERVATIONS, MAX_FILE_BYTES = 100_000, 10 * 1024 * 1024


def _role_to_arm(ctx: GradeContext) -> dict[str, str]:
    """The plan's roles; with adaptive selection, the candidates' role maps to the candidate the selection
    items choose (recomputed; the recorded choice only while it cannot be, and DEC-13 then says why)."""
    roles = {role: entry["arm"] for role, entry in (ctx.plan.role_to_arm if ctx.plan else {}).items()}
    planned = _planned_selection(ctx)
    if planned is not None:
        expected, _ = _recomputed_selection(ctx)
        recorded = as_dict(decision_object(ctx).get("selection")).get("selected")
        chosen = expected["selected"] if expected else recorded if recorded in planned["candidates"] else None
        if chosen is not None:
            roles[planned["role"]] = chosen
    return roles


def _planned_selection(ctx: GradeContext) -> dict[str, Any] | None:
    return getattr(ctx.plan, "selection", None) if ctx.plan is not None else None


def _recomputed_selection(ctx: GradeContext) -> tuple[dict[str, Any] | None, str]:
    """decision.selection as the grader recomputes it: the split from the evaluator's item ids, the choice from
    the retained predictions of the selection items alone (None, why when it cannot be recomputed); once per
    graded record."""
    cache = ctx.__dict__.setdefault("_decision_selection", {})
    if "value" not in cache:
        cache["value"] = _recompute_selection(ctx)
    return cache["value"]


def _recompute_selection(ctx: GradeContext) -> tuple[dict[str, Any] | None, str]:
    planned = _planned_selection(ctx)
    recorded = as_dict(decision_object(ctx).get("selection"))
    evaluators = as_dict(as_dict(ctx.result.get("evaluation")).get("evaluators"))
    evaluator = recorded.get("evaluator_id") if recorded.get("evaluator_id") in evaluators else \
        next(iter(evaluators), None) if len(evaluators) == 1 else None
    items = evaluator_items(ctx, evaluator)
    if planned is None or items is None:
        return None, "no evaluator with explicit item ids to split"
    rule = spec_rule(ctx)
    criterion = next((as_dict(c) for c in rule.get("criteria") or [] if as_dict(c).get("id") == planned["criterion"]), None)
    if criterion is None:
        return None, f"the decision_rule has no criterion {planned['criterion']}"
    plan_roles = {role: entry["arm"] for role, entry in ctx.plan.role_to_arm.items()}
    weighted = {arm for c in ctx.plan.criteria for arm in c.arm_weights}
    rows = prediction_observations(ctx, weighted)
    if rows is None:
        return None, "the candidates' predictions are not retained inline"
    try:
        split = sel.split_items(items)
        selected, effects = sel.choose(rows, criterion, planned["role"], planned["candidates"], plan_roles,
                                       [int(s) for s in rule.get("seeds") or ctx.plan.seeds], split.selection_ids)
    except (d.DecisionError, KeyError, TypeError, ValueError) as err:
        return None, f"the selection cannot be recomputed: {err}"
    return sel.selection_record(split, str(evaluator), planned["role"], planned["candidates"], planned["criterion"],
                                selected, effects), ""


def _from_revision(ctx: GradeContext) -> bool:
    """The rule comes only from the recorded spec revision (a decision_rule it adds, or its verdict_rule
    for a spec without one), not the exchange's spec. A revision that only pins values the spec's own
    decision_rule leaves UNRESOLVED adds no rule: the spec has one (DEC-1), and DEC-15 grades the pins."""
    spec = ctx.spec or {}
    return ("decision_rule" in ctx.revision_fields and not _revision_pins(ctx)) or \
        (not spec.get("decision_rule") and bool(spec.get("verdict_rule")))


def pinned_decision_values(resolved: Any) -> list[str]:
    """The decision_rule values (paths) a spec revision pins where the spec as written says UNRESOLVED
    (SpecRevision.resolved): the spec has its own decision_rule, whose open values come from the revision."""
    return [str(path) for path in as_list(resolved) if str(path).startswith("decision_rule.")]


def _revision_pins(ctx: GradeContext) -> list[str]:
    """pinned_decision_values of the revision the record is graded with: the loaded spec's own (load_spec records
    what it resolved), else merged again from the run's retained spec.json and revision file, as load_spec merges."""
    if "decision_rule" not in ctx.revision_fields:
        return []
    try:
        revision = ctx.spec_model.source.revision
    except (AttributeError, RuntimeError):
        revision = None
    if revision is not None and revision.resolved:
        return pinned_decision_values(revision.resolved)
    raw = ctx.evidence.json("spec.json") if ctx.evidence.usable("spec.json") else None
    recorded = next((ctx.evidence.json(e.get("name")) for e in ctx.evidence.entries
                     if e.get("kind") == "spec_revision" and ctx.evidence.usable(e.get("name"))), None)
    if not isinstance(raw, dict) or not isinstance(recorded, dict):
        return []
    try:
        _, resolved = apply_revision(raw, recorded)
    except (SpecError, TypeError, ValueError, KeyError, AttributeError):
        return []
    return pinned_decision_values(resolved)


@rule("DEC-15", "decision", "unverified", "a decision_rule value the spec leaves UNRESOLVED, pinned by the recorded revision only")
def DEC_15(ctx: GradeContext) -> list[Issue]:
    """A decision_rule value the spec leaves UNRESOLVED and only its recorded revision pins: the exchange grades
    the decision against its own copy of the spec, which still says UNRESOLVED (as CORR-6 for correctness pins)."""
    pins = _revision_pins(ctx)
    return [Issue("DEC-15", UNVERIFIED, f"{', '.join(pins)}: UNRESOLVED in the spec, pinned by the recorded revision "
                                        "only; the exchange grades the decision against its own spec, which does not "
                                        "carry the pin")] if pins else []


def _recompute(ctx: GradeContext) -> tuple[dict[str, Any] | None, str]:
    """The spec's method applied to the record's observations (None when they are unreadable or
    incomplete: DEC-3/DEC-6 then say why, and nothing is recomputed from a partial set)."""
    observations = read_observations(ctx)
    if observations is None:
        return None, "observations unreadable"
    if DEC_6(ctx):
        return None, "observations incomplete"
    rule = spec_rule(ctx)
    try:
        if rule.get("method", "paired_hoeffding") == "paired_hoeffding":
            simultaneous = (ctx.plan.decision or {}).get("adjustment") == "bonferroni" if ctx.plan else False
            return d.decision_summary(rule, observations, ctx.plan.vocabulary, role_to_arm=_role_to_arm(ctx),
                                      simultaneous=simultaneous), ""
        if rule.get("method") == "best_lr_threshold":
            runs = {run.name: run for run in ctx.plan.training_runs}
            values: dict[str, dict[str, float]] = {}
            for o in observations:
                values.setdefault(o.arm, {})[o.metric] = o.value
            criteria = rule.get("criteria") or []
            result = d.best_lr_threshold(
                {name: v for name, v in values.items() if name in runs},
                {name: runs[name].arm for name in values if name in runs},
                {name: runs[name].lr for name in values if name in runs},
                criteria, criteria[0]["metric"], {name: run_seed(runs[name]) for name in values if name in runs})
            return result, ""
    except (d.DecisionError, KeyError, TypeError, IndexError) as err:
        return None, str(err)
    return None, f"unknown decision method {rule.get('method')!r}"


# ---------------------------------------------------------------------------- rules


@rule("DEC-1", "decision", "invalid|unverified|unknown", "a decision object exactly when the spec has a decision_rule")
def DEC_1(ctx: GradeContext) -> list[Issue]:
    if ctx.result.get("decision") is None:
        if ctx.result.get("verdict") is not None and ctx.measured:
            return [Issue("DEC-1", UNVERIFIED, "a verdict was posted but RESULT has no decision object")]
        return [Issue("DEC-1", UNKNOWN, "no decision object (the comparison was not decided)")]
    return []


@rule("DEC-2", "decision", "invalid", "decision = {version: 1} with exactly one of observations and observations_file")
def DEC_2(ctx: GradeContext) -> list[Issue]:
    record = decision_object(ctx)
    issues = model_issues(Decision, record, "DEC-2", INVALID, "decision")
    if record.get("version") is True:  # JSON true is no number (Python's True == 1)
        issues.append(Issue("DEC-2", INVALID, "decision.version: true is not the number 1"))
    if ("observations" in record) == ("observations_file" in record):
        issues.append(Issue("DEC-2", INVALID, "decision carries both or neither of observations and observations_file"))
    ref = as_dict(record.get("observations_file")).get("name")
    if isinstance(ref, str) and ("/" in ref or "\\" in ref or "://" in ref):
        issues.append(Issue("DEC-2", INVALID, f"observations_file {short(ref)} is a path or URL, not a retained name"))
    return issues


@rule("DEC-3", "decision", "unverified", "the observations file is a retained, inline evidence file with its sha256")
def DEC_3(ctx: GradeContext) -> list[Issue]:
    return DEC_3_file(ctx) + DEC_3_retained(ctx) + DEC_3_sha256(ctx)


def _unread(ctx: GradeContext, part: str) -> list[Issue]:
    rows, why = observation_rows(ctx)
    return [Issue("DEC-3", UNVERIFIED, f"observations cannot be read from the record: {why}", MISSING_EVIDENCE)] \
        if rows is None and unread_part(ctx) == part else []


@implements("DEC-3")
def DEC_3_file(ctx: GradeContext) -> list[Issue]:
    """The decision names observations that read as rows, from a file retained as metrics."""
    name = as_dict(decision_object(ctx).get("observations_file")).get("name")
    kind = as_dict(ctx.evidence.by_name.get(name) if isinstance(name, str) else None).get("kind", "metrics")
    return _unread(ctx, FILE) + ([Issue("DEC-3", UNVERIFIED, f"observations file {name} is retained as kind "
                                                              f"{short(kind)}, not metrics")] if kind != "metrics" else [])


@implements("DEC-3")
def DEC_3_retained(ctx: GradeContext) -> list[Issue]:
    return _unread(ctx, RETAINED)


@implements("DEC-3")
def DEC_3_sha256(ctx: GradeContext) -> list[Issue]:
    return _unread(ctx, SHA256)


@rule("DEC-4", "decision", "unverified", "at most 10 MiB and 100 000 observations")
def DEC_4(ctx: GradeContext) -> list[Issue]:
    rows, _ = observation_rows(ctx)
    name = as_dict(decision_object(ctx).get("observations_file")).get("name")
    data = ctx.evidence.bytes(name) if name else None
    if (rows is not None and len(rows) > MAX_OBSERVATIONS) or (data is not None and len(data) > MAX_FILE_BYTES):
        return [Issue("DEC-4", UNVERIFIED, "observations exceed 10 MiB or 100 000 rows")]
    return []


@rule("DEC-5", "decision", "invalid", "each observation has item_id, arm, seed, metric, finite value, evaluator_id")
def DEC_5(ctx: GradeContext) -> list[Issue]:
    rows, _ = observation_rows(ctx)
    for index, row in enumerate(rows or []):
        try:
            observation = d.observation_from_row(row, f"observation {index}")
        except d.DecisionError as err:
            return [Issue("DEC-5", INVALID, str(err))]
        if observation.evaluator_id is None:
            return [Issue("DEC-5", INVALID, f"observation {index} has no evaluator_id")]
    return []


def _compared_arms(ctx: GradeContext) -> list[str]:
    roles = _role_to_arm(ctx)
    arms = sorted({roles.get(k, k) for c in spec_rule(ctx).get("criteria") or [] for k in as_dict(c.get("weights"))})
    if spec_rule(ctx).get("method") == "best_lr_threshold" and ctx.plan is not None:
        return sorted(run.name for run in ctx.plan.training_runs if run.arm in arms)
    return arms


@rule("DEC-6", "decision", "invalid|unverified", "observations cover every compared arm, item and scheduled seed, and no other seed")
def DEC_6(ctx: GradeContext) -> list[Issue]:
    observations = read_observations(ctx)
    if observations is None:
        return []
    issues = []
    scheduled = [int(s) for s in spec_rule(ctx).get("seeds") or [0]]
    added = sorted({o.seed for o in observations} - set(scheduled))
    if added:
        issues.append(Issue("DEC-6", INVALID, f"observations use unscheduled seed(s) {added} (scheduled {scheduled})"))
    best_lr = spec_rule(ctx).get("method") == "best_lr_threshold"
    for criterion in spec_rule(ctx).get("criteria") or []:
        metric = criterion.get("metric")
        rows = [o for o in observations if o.metric == metric]
        listed = None if best_lr else evaluator_items(ctx, rows[0].evaluator_id if rows else None)
        items = listed if listed is not None else sorted({o.item_id for o in rows})
        if _planned_selection(ctx) is not None and not best_lr:  # adaptive selection: confirmation items only
            try:
                items = sel.split_items(items).confirmation_ids
            except d.DecisionError:
                continue  # DEC-13 says why: no cover to hold the observations to
        unlisted = sorted({o.item_id for o in rows} - set(listed)) if listed is not None else []  # selection items: DEC-13
        if unlisted:
            issues.append(Issue("DEC-6", INVALID, f"criterion {criterion.get('id')}: observations of {len(unlisted)} "
                                                  f"item(s) the evaluator does not list (first: {short(unlisted[0])})"))
        have = {(o.arm, o.item_id, o.seed) for o in rows}
        expected = ([(run.name, item, run_seed(run)) for run in ctx.plan.training_runs
                     if run.name in _compared_arms(ctx) for item in items] if best_lr and ctx.plan is not None else
                    [(arm, item, seed) for arm in _compared_arms(ctx) for item in items for seed in scheduled])
        missing = [key for key in expected if key not in have]
        if missing or not rows:
            first = missing[0] if missing else ("any arm", "any item", "any seed")
            issues.append(Issue("DEC-6", UNVERIFIED, f"criterion {criterion.get('id')}: {len(missing) or 'all'} "
                                                     f"observations missing (first: {first[0]}, {first[1]}, seed {first[2]})"))
    return issues


@rule("DEC-7", "decision", "invalid|unverified", "observations agree with the evaluation record and the retained predictions")
def DEC_7(ctx: GradeContext) -> list[Issue]:
    observations = read_observations(ctx)
    if observations is None:
        return []
    issues = []
    evaluators = as_dict(as_dict(ctx.result.get("evaluation")).get("evaluators"))
    unknown = sorted({str(o.evaluator_id) for o in observations if o.evaluator_id not in evaluators})
    if unknown:
        issues.append(Issue("DEC-7", INVALID, f"observations name evaluator(s) the evaluation record lacks: "
                                              f"{', '.join(i[:12] for i in unknown)}"))
    if spec_rule(ctx).get("method") == "best_lr_threshold":
        return issues  # its values are recomputed from the predictions themselves (_derived_rows; LOSS-3)
    # each observation equals the retained prediction row's value (failures scored 0)
    predicted: dict[tuple[str, str, int, str], float] = {}
    readable = True
    for score in as_list(as_dict(ctx.result.get("evaluation")).get("scores")):
        rows = ctx.evidence.jsonl(as_dict(score).get("predictions_ref"))
        if rows is None:
            readable = False
            continue
        for row in rows:
            value = row.get("value", 1.0 if row.get("correct") else 0.0 if "correct" in row else None)
            totals = as_dict(row.get("prediction"))  # a held-out NLL row: its own totals, never the value it states
            if is_number(totals.get("nll_sum")) and is_number(totals.get("n_tokens")) and totals["n_tokens"] > 0:
                value = totals["nll_sum"] / totals["n_tokens"]
            if value is not None:
                predicted[(str(row.get("arm")), str(row.get("item_id")), int(row.get("seed") or 0),
                           str(row.get("metric", score.get("metric"))))] = value
    if not predicted:
        if not readable:
            issues.append(Issue("DEC-7", UNVERIFIED, "the predictions behind the observations are not inline, so the "
                                                     "observations cannot be checked against them"))
        return issues
    differing = [o for o in observations if (o.arm, o.item_id, o.seed, o.metric) in predicted
                 and not close(predicted[(o.arm, o.item_id, o.seed, o.metric)], o.value)]
    absent = [o for o in observations if (o.arm, o.item_id, o.seed, o.metric) not in predicted]
    if differing:
        o = differing[0]
        issues.append(Issue("DEC-7", INVALID, f"{len(differing)} observation(s) differ from the retained predictions "
                                              f"(first: {o.arm}/{o.item_id} {o.value!r})"))
    if absent and readable:
        issues.append(Issue("DEC-7", INVALID, f"{len(absent)} observation(s) have no retained prediction row"))
    return issues


@rule("DEC-8", "decision", "invalid", "the decision recomputed from the observations reproduces criteria, effect and ci")
def DEC_8(ctx: GradeContext) -> list[Issue]:
    decided = _decided(ctx)
    return _criteria(ctx, decided) + _result_fields(ctx, decided, ("effect", "margin", "ci"))


def _decided(ctx: GradeContext) -> tuple[dict[str, Any] | None, str] | None:
    """The recomputation DEC-8 compares the record with; None where the observations are unreadable or incomplete
    (DEC-3, DEC-6 say why)."""
    return None if read_observations(ctx) is None or DEC_6(ctx) else _recompute(ctx)


@implements("DEC-8")
def DEC_8_criteria(ctx: GradeContext) -> list[Issue]:
    """The decision object's criteria (and every other field) and the direction fields a verdict carries."""
    return _criteria(ctx, _decided(ctx))


@implements("DEC-8")
def DEC_8_effect(ctx: GradeContext) -> list[Issue]:
    return _result_fields(ctx, _decided(ctx), ("effect",))


@implements("DEC-8")
def DEC_8_margin(ctx: GradeContext) -> list[Issue]:
    return _result_fields(ctx, _decided(ctx), ("margin",))


@implements("DEC-8")
def DEC_8_ci(ctx: GradeContext) -> list[Issue]:
    return _result_fields(ctx, _decided(ctx), ("ci",))


def _criteria(ctx: GradeContext, decided: tuple[dict[str, Any] | None, str] | None) -> list[Issue]:
    if decided is None:
        return []
    recomputed, why = decided
    if recomputed is None:
        return [Issue("DEC-8", INVALID, f"the decision cannot be recomputed from the observations: {why}")]
    issues = []
    recorded = {c.get("id"): c for c in as_list(decision_object(ctx).get("criteria")) if isinstance(c, dict)}
    keys = ("effect", "lower", "upper") if "method" not in recomputed or recomputed.get("method") != "best_lr_threshold" \
        else ("effect",)
    for criterion in recomputed["criteria"]:
        criterion = criterion if isinstance(criterion, dict) else vars(criterion)
        mine = recorded.get(criterion["id"])
        if mine is None and not decision_object(ctx):
            continue  # no decision object (rule from the recorded revision): RESULT's fields are checked below
        if mine is None:
            issues.append(Issue("DEC-8", INVALID, f"criterion {criterion['id']} is not in the decision object"))
            continue
        for key in keys:
            if key in mine and not close(mine[key], criterion[key]):
                issues.append(Issue("DEC-8", INVALID, f"criterion {criterion['id']}: recorded {key} {mine[key]!r} is not "
                                                      f"the recomputed {criterion[key]!r}"))
        for flag in ("status", "met"):
            if flag in mine and flag in criterion and not equal_json(mine[flag], criterion[flag]):
                issues.append(Issue("DEC-8", INVALID, f"criterion {criterion['id']}: recorded {flag} {mine[flag]!r} is "
                                                      f"not the recomputed {criterion[flag]!r}"))
    if decision_object(ctx) and recomputed.get("method") != "best_lr_threshold" and not issues:
        issues += _whole_record(ctx, recomputed)
    if _direction(ctx, recomputed):
        issues += _direction_fields(ctx, recomputed)
    return issues


def _direction(ctx: GradeContext, recomputed: dict[str, Any] | None) -> bool:
    return recomputed is not None and ctx.plan is not None and ctx.plan.vocabulary == "direction_confidence" \
        and bool(recomputed["criteria"])


def _result_fields(ctx: GradeContext, decided: tuple[dict[str, Any] | None, str] | None,
                   keys: tuple[str, ...]) -> list[Issue]:
    """RESULT's effect, margin and ci (the keys asked for) are the primary criterion's, recomputed."""
    recomputed = decided[0] if decided is not None else None
    if not _direction(ctx, recomputed):
        return []
    issues, primary = [], recomputed["criteria"][0]
    if "effect" in keys and "effect" in ctx.result and not close(ctx.result.get("effect"), primary["effect"]):
        issues.append(Issue("DEC-8", INVALID, f"RESULT.effect {ctx.result.get('effect')!r} is not the recomputed "
                                              f"{primary['effect']!r}"))
    if "margin" in keys and "margin" in ctx.result and not close(ctx.result.get("margin"), primary["margin"]):
        issues.append(Issue("DEC-8", INVALID, f"RESULT.margin {ctx.result.get('margin')!r} is not the spec's "
                                              f"{primary['margin']!r}"))
    ci = ctx.result.get("ci")
    if "ci" in keys and "lower" in primary and ci is not None and not (
            isinstance(ci, list) and len(ci) == 2 and close(ci[0], primary["lower"]) and close(ci[1], primary["upper"])):
        issues.append(Issue("DEC-8", INVALID, f"RESULT.ci {short(ci)} is not the recomputed interval"))
    return issues


def _whole_record(ctx: GradeContext, recomputed: dict[str, Any]) -> list[Issue]:
    """Every field of the decision object is the recomputed one (experiment.stats.decision.decision_record
    of the recomputed summary): method, alpha, adjustment, role mapping, seeds, and per criterion its
    weights, bounds, n, range, half-width, interval, means and status."""
    ref = as_dict(decision_object(ctx).get("observations_file"))
    selection = decision_object(ctx).get("selection") if _planned_selection(ctx) is not None else None
    try:
        expected = d.decision_record(recomputed, str(ref.get("name")), str(ref.get("sha256")), selection=selection)
    except d.DecisionError:
        return []  # DEC-2 says what is wrong with the reference
    expected = json.loads(json.dumps(expected))
    where = first_difference(decision_object(ctx), expected, "decision")
    return [Issue("DEC-8", INVALID, f"{where} is not what the recomputation gives")] if where else []


def _direction_fields(ctx: GradeContext, recomputed: dict[str, Any]) -> list[Issue]:
    """A direction verdict carries effect, margin and seeds, each what the recomputation and the
    spec give; the best-LR rule has no interval, so it reports none."""
    if ctx.result.get("verdict") is None:
        return []
    issues = [Issue("DEC-8", INVALID, f"a {ctx.result.get('verdict')} verdict without RESULT.{key}")
              for key in ("effect", "margin", "seeds") if ctx.result.get(key) is None]
    seeds = ctx.result.get("seeds")
    scheduled = len(spec_rule(ctx).get("seeds") or [0])
    if seeds is not None and not equal_json(seeds, scheduled):
        issues.append(Issue("DEC-8", INVALID, f"RESULT.seeds {short(seeds)} is not the {scheduled} seed(s) the rule "
                                              "schedules and the observations hold"))
    best_lr = recomputed.get("method") == "best_lr_threshold"
    if best_lr and ctx.result.get("ci") is not None:
        issues.append(Issue("DEC-8", INVALID, "RESULT.ci is reported although the best-LR rule computes no interval"))
    if not best_lr and "lower" in recomputed["criteria"][0] and ctx.result.get("ci") is None:
        issues.append(Issue("DEC-8", INVALID, "RESULT.ci is missing although the recomputed decision has an interval"))
    return issues


@rule("DEC-9", "decision", "invalid", "the verdict follows the recomputed decision in the spec's vocabulary")
def DEC_9(ctx: GradeContext) -> list[Issue]:
    return DEC_9_confidence(ctx) + DEC_9_verdict(ctx)


def _verdict_recomputed(ctx: GradeContext) -> dict[str, Any] | None:
    if ctx.result.get("verdict") is None or read_observations(ctx) is None:
        return None
    return _recompute(ctx)[0]


@implements("DEC-9")
def DEC_9_confidence(ctx: GradeContext) -> list[Issue]:
    """No strong confidence where the recomputation does not settle every margin."""
    recomputed = _verdict_recomputed(ctx)
    if recomputed is None:
        return []
    if recomputed.get("method") == "best_lr_threshold":
        if ctx.result.get("confidence") == "strong" and not recomputed.get("settled_by_seeds"):
            return [Issue("DEC-9", INVALID, "confidence strong without an interval, and no two seeds settle every "
                                            "margin (point estimates)")]
    elif ctx.plan.vocabulary == "direction_confidence" and recomputed.get("confidence") == "weak" \
            and ctx.result.get("confidence") == "strong":
        return [Issue("DEC-9", INVALID, "confidence strong although a criterion's interval does not settle its margin")]
    return []


@implements("DEC-9")
def DEC_9_verdict(ctx: GradeContext) -> list[Issue]:
    """The verdict is the recomputed one (three_way: inconclusive may stand for any decided comparison: a blocking
    limit makes it so)."""
    recomputed, verdict = _verdict_recomputed(ctx), ctx.result.get("verdict")
    if recomputed is None or (recomputed.get("method") != "best_lr_threshold" and ctx.plan.vocabulary == "three_way"
                              and verdict == "inconclusive"):
        return []
    return [Issue("DEC-9", INVALID, f"verdict {verdict} is not the recomputed {recomputed['verdict']}")] \
        if verdict != recomputed["verdict"] else []


@rule("DEC-10", "decision", "invalid", "unrounded per-arm and per-seed means reproduce and match the scores")
def DEC_10(ctx: GradeContext) -> list[Issue]:
    recomputed, _ = _recompute(ctx) if read_observations(ctx) is not None else (None, "")
    if recomputed is None or recomputed.get("method") == "best_lr_threshold":
        return []
    if _planned_selection(ctx) is not None:
        return []  # the scores cover every evaluated item, the decision's means the confirmation items (DEC-7, DEC-8)
    issues, reported = [], set()
    scores = [as_dict(s) for s in as_list(as_dict(ctx.result.get("evaluation")).get("scores"))]
    for criterion in recomputed["criteria"]:
        for arm, mean in criterion["per_arm_means"].items():
            seed_means = as_dict(as_dict(criterion.get("per_arm_seed_means")).get(arm))
            by_seed: dict[str, list[Any]] = {}  # each seed's scores reproduce that seed's mean (per-arm and per-seed)
            for s in scores:
                if s.get("arm") == arm and s.get("metric") == criterion["metric"]:
                    by_seed.setdefault(str(s.get("seed")), []).append(s.get("value"))
            for seed, values in by_seed.items():
                expected = seed_means.get(seed, mean)
                if not any(close(value, expected) for value in values) and (arm, seed) not in reported:
                    reported.add((arm, seed))  # once per score, however many criteria share its metric
                    issues.append(Issue("DEC-10", INVALID, f"arm {arm}: score {values[0]!r} does not reproduce from "
                                                           f"the observations (mean {expected!r})"))
    return issues


@rule("DEC-11", "decision", "invalid", "role-keyed weights mapped to arms from the spec, the mapping and adjustment recorded")
def DEC_11(ctx: GradeContext) -> list[Issue]:
    issues, record = [], decision_object(ctx)
    arm_names = {arm.name for arm in ctx.plan.arms} if ctx.plan is not None else set()
    roles = {k for c in spec_rule(ctx).get("criteria") or [] for k in as_dict(c.get("weights"))} & set(ROLE_LABELS) \
        - arm_names  # every role label a weight is keyed by (untrained_base too), not an arm's own name
    if roles and spec_rule(ctx).get("method", "paired_hoeffding") == "paired_hoeffding":
        mapping = as_dict(record.get("role_to_arm"))
        expected = {role: arm for role, arm in _role_to_arm(ctx).items() if role in roles}
        if mapping != expected:
            issues.append(Issue("DEC-11", INVALID, f"role_to_arm {short(mapping)} is not the spec's mapping {expected}",
                                "" if "role_to_arm" in record else MISSING_SUMMARY))
    if ctx.plan is not None and (ctx.plan.decision or {}).get("adjustment") == "bonferroni" \
            and record.get("adjustment") != "bonferroni":
        issues.append(Issue("DEC-11", INVALID, "simultaneous criteria: the decision object does not record the "
                                               "Bonferroni adjustment", "" if "adjustment" in record else MISSING_SUMMARY))
    return issues


@rule("DEC-12", "decision", "invalid", "a grid-edge LR sets grid_edge true with confidence weak")
def DEC_12(ctx: GradeContext) -> list[Issue]:
    recomputed, _ = _recompute(ctx) if read_observations(ctx) is not None else (None, "")
    if recomputed is None or recomputed.get("method") != "best_lr_threshold":
        return []
    issues = []
    grid_edge = ctx.result.get("grid_edge")
    if not equal_json(False if grid_edge is None else grid_edge, recomputed["grid_edge"]):  # not said: no edge
        issues.append(Issue("DEC-12", INVALID, f"grid_edge {ctx.result.get('grid_edge')!r} is not the recomputed "
                                               f"{recomputed['grid_edge']!r}"))
    issues += _selection_summaries(ctx, recomputed)
    recorded = as_dict(as_dict(decision_object(ctx).get("selection")).get("per_arm"))
    for arm, entry in recomputed["per_arm"].items():
        if arm in recorded and not close(as_dict(recorded[arm]).get("selected_lr"), entry["selected_lr"]):
            issues.append(Issue("DEC-12", INVALID, f"arm {arm}: recorded selected LR {recorded[arm].get('selected_lr')!r} "
                                                   f"is not the recomputed {entry['selected_lr']!r}"))
    if recomputed["grid_edge"] and ctx.result.get("confidence") == "strong":
        issues.append(Issue("DEC-12", INVALID, "a grid-edge LR was selected but confidence is strong"))
    return issues


def _run_metrics(ctx: GradeContext) -> list[Issue]:
    """Each training run's recomputed value of each criterion metric is what RESULT.metrics.arms reports
    for it (`arms[<run>]`, or `arms[<arm>].runs[<lr>]` for an arm of an LR grid)."""
    rows, _ = derived_rows(ctx)
    arms = as_dict(as_dict(ctx.result.get("metrics")).get("arms"))
    runs = {run.name: run for run in (ctx.plan.training_runs if ctx.plan is not None else [])}
    wrong = []
    for row in rows or []:
        run = runs[row["arm"]]
        reported = as_dict(arms.get(run.name))
        if not reported:
            by_label = as_dict(as_dict(arms.get(run.arm)).get("runs"))
            reported = as_dict(by_label.get(run_label(run)) if run_label(run) in by_label else
                               next((v for k, v in by_label.items() if close(float_of(k), run.lr)), None))
        if not close(reported.get(row["metric"]), row["value"]):
            wrong.append(f"{run.name} {row['metric']}")
    return [Issue("DEC-12", INVALID, f"metrics.arms does not report the recomputed {', '.join(wrong[:4])}")] if wrong else []


def _selection_summaries(ctx: GradeContext, recomputed: dict[str, Any]) -> list[Issue]:
    """What RESULT.metrics.arms and a retained verdict record (an evidence file with `criteria` and
    `per_arm`) say about each arm's selected run, and the criteria's effects, are the recomputed ones."""
    issues = _run_metrics(ctx)
    sources = {"metrics.arms": as_dict(as_dict(ctx.result.get("metrics")).get("arms"))}
    criteria_sources = {}
    for entry in ctx.evidence.entries:
        value = ctx.evidence.json(entry.get("name")) if str(entry.get("name", "")).endswith(".json") else None
        if isinstance(value, dict) and isinstance(value.get("per_arm"), dict) and isinstance(value.get("criteria"), list):
            sources[str(entry["name"])] = value["per_arm"]
            criteria_sources[str(entry["name"])] = value["criteria"]
    for where, per_arm in sources.items():
        for arm, mine in recomputed["per_arm"].items():
            recorded = as_dict(per_arm.get(arm))
            expected = {"selected_run": mine["selected_run"], "selected_lr": mine["selected_lr"],
                        "grid_edge": mine["grid_edge"], **mine["values"]}
            wrong = [key for key, value in expected.items() if key in recorded and not equal_json(recorded[key], value,
                                                                                                   FLOAT_TOL)]
            if where != "metrics.arms" and not recorded:
                wrong = ["the arm"]
            if wrong:
                issues.append(Issue("DEC-12", INVALID, f"{where} {arm}: {', '.join(wrong)} not the recomputed selection"))
    for where, criteria in criteria_sources.items():
        recorded = {as_dict(c).get("id"): as_dict(c) for c in criteria}
        for criterion in recomputed["criteria"]:
            mine = recorded.get(criterion["id"], {})
            if not (close(mine.get("effect"), criterion["effect"]) and close(mine.get("margin"), criterion["margin"])
                    and equal_json(mine.get("met"), criterion["met"]) and mine.get("metric") == criterion["metric"]):
                issues.append(Issue("DEC-12", INVALID, f"{where}: criterion {criterion['id']} is not the recomputed one"))
    return issues


@rule("DEC-13", "decision", "invalid|unverified", "seeds scheduled in advance; adaptive selection frozen before confirmation, recomputed")
def DEC_13(ctx: GradeContext) -> list[Issue]:
    """Adaptive selection: the choice recomputed from the selection items, the split from the evaluator's items,
    observations from confirmation items only, the frozen flag, and the freeze in the evidence (the selection
    file retained, with the recorded sha256, before the observations file)."""
    features = as_dict((ctx.spec or {}).get("experiment_features"))
    recorded = decision_object(ctx).get("selection")
    if features.get("adaptive_selection") is not True:
        return [Issue("DEC-13", INVALID, "decision.selection is recorded but the spec asks for no adaptive selection")] \
            if recorded is not None else []
    if not isinstance(recorded, dict) or recorded.get("frozen_before_confirmation") is not True:
        return [Issue("DEC-13", INVALID, "adaptive selection needs decision.selection.frozen_before_confirmation true")]
    if _planned_selection(ctx) is None:
        return [Issue("DEC-13", INVALID, "the spec's arms give adaptive selection no candidates to choose between")]
    expected, why = _recomputed_selection(ctx)
    evaluator = recorded.get("evaluator_id")
    items = evaluator_items(ctx, evaluator)
    issues = [Issue("DEC-13", INVALID, problem) for problem in sel.selection_problems(recorded, items, expected)]
    if items is None:
        issues.append(Issue("DEC-13", INVALID, f"decision.selection names evaluator {short(evaluator)}, which lists no "
                                               "explicit items"))
    observations = read_observations(ctx)
    if observations is not None:
        issues += [Issue("DEC-13", INVALID, p) for p in sel.confirmation_only_problems(observations, recorded)]
    issues += _frozen_in_evidence(ctx, recorded)
    if expected is None and not issues:
        issues.append(Issue("DEC-13", UNVERIFIED, f"the selection cannot be recomputed: {why}"))
    return issues


def _frozen_in_evidence(ctx: GradeContext, recorded: dict[str, Any]) -> list[Issue]:
    """The frozen selection is retained (its bytes are the record), and retained before the observations file:
    in RESULT.evidence.files (added in order) and, in a run directory, in events.jsonl."""
    ref = as_dict(recorded.get("file"))
    name = ref.get("name")
    if not name or ctx.evidence.sha256(str(name)) != ref.get("sha256"):
        return [Issue("DEC-13", UNVERIFIED, f"the frozen selection file {short(name)} is not retained under the "
                                            "sha256 decision.selection names")]
    frozen = ctx.evidence.json(name)
    if not isinstance(frozen, dict) or sel.record_sha256(frozen) != recorded.get("record_sha256") or \
            {k: v for k, v in recorded.items() if k != "file"} != frozen:
        return [Issue("DEC-13", INVALID, f"the retained {name} is not the selection decision.selection records")]
    observations = as_dict(decision_object(ctx).get("observations_file")).get("name")
    order = [entry.get("name") for entry in ctx.evidence.entries]
    if observations in order and order.index(name) > order.index(observations):
        return [Issue("DEC-13", INVALID, f"{name} was retained after {observations}: the selection was not frozen "
                                         "before the confirmation observations")]
    if ctx.run_dir is not None:
        added = [e.get("name") for e in ctx.events or [] if e.get("event") == "evidence_added"]
        if name not in added or (observations in added and added.index(name) > added.index(observations)):
            return [Issue("DEC-13", INVALID, f"events.jsonl does not log {name} before {observations}")]
    return []


@rule("DEC-14", "decision", "unverified", "in a run directory, the events log the decision gate and the observations file")
def DEC_14(ctx: GradeContext) -> list[Issue]:
    if ctx.run_dir is None or (not ctx.result.get("decision") and ctx.result.get("verdict") is None):
        return []
    events = ctx.events or []
    passed = any(e.get("event") == "gate" and e.get("gate") == "decision" and e.get("status") == "passed" for e in events)
    issues = []
    if not passed:
        issues.append(Issue("DEC-14", UNVERIFIED, "events.jsonl does not record the decision gate passing"))
    ref = as_dict(decision_object(ctx).get("observations_file"))
    if ref and not any(e.get("event") == "evidence_added" and e.get("name") == ref.get("name")
                       and e.get("sha256") == ref.get("sha256") for e in events):
        issues.append(Issue("DEC-14", UNVERIFIED, f"events.jsonl does not log {ref.get('name')} with the decision's sha256"))
    return issues


@rule("ADAPT-1", "decision", "invalid", "paired arms run their shared steps on identical batches (adaptation_batch_hash)")
def ADAPT_1(ctx: GradeContext) -> list[Issue]:
    return ADAPT_1_missing(ctx) + ADAPT_1_shape(ctx) + ADAPT_1_hash(ctx) + ADAPT_1_pairs(ctx)


def _manifests(ctx: GradeContext) -> list[dict[str, Any]]:
    return [e for e in as_list(ctx.result.get("adaptation_manifests")) if isinstance(e, dict)]


@implements("ADAPT-1")
def ADAPT_1_missing(ctx: GradeContext) -> list[Issue]:
    """Warmup adaptation (the spec's experiment_features) owes manifests once the arms trained: the run succeeded
    or, in a run directory, its arm_training gate passed."""
    if ctx.result.get("adaptation_manifests") is not None or \
            as_dict(as_dict(ctx.spec).get("experiment_features")).get("warmup_adaptation") is not True:
        return []
    trained = ctx.result.get("status") == "succeeded" or any(
        e.get("event") == "gate" and e.get("gate") == "arm_training" and e.get("status") == "passed" for e in ctx.events or [])
    return [Issue("ADAPT-1", INVALID, "warmup_adaptation is true and the arms trained, but RESULT has no "
                                      "adaptation_manifests")] if trained else []


@implements("ADAPT-1")
def ADAPT_1_shape(ctx: GradeContext) -> list[Issue]:
    """adaptation_manifests is a list of objects, each with a warmup_batches count and its batch ids as a list."""
    manifests = ctx.result.get("adaptation_manifests")
    if manifests is None:
        return []
    if not isinstance(manifests, list):
        return [Issue("ADAPT-1", INVALID, "adaptation_manifests must be a list")]
    issues = [Issue("ADAPT-1", INVALID, f"adaptation_manifests[{i}] is not an object")
              for i, entry in enumerate(manifests) if not isinstance(entry, dict)]
    for entry in _manifests(ctx):
        if not is_integer(entry.get("warmup_batches")):
            issues.append(Issue("ADAPT-1", INVALID, f"arm {entry.get('arm')}: warmup_batches must be a count"))
        if not isinstance(entry.get("adaptation_batch_ids"), list):
            issues.append(Issue("ADAPT-1", INVALID, f"arm {entry.get('arm')}: adaptation_batch_ids is not a list"))
    return issues


@implements("ADAPT-1")
def ADAPT_1_hash(ctx: GradeContext) -> list[Issue]:
    return [Issue("ADAPT-1", INVALID, f"arm {entry.get('arm')}: adaptation_batch_hash is not "
                                      "sha256(json.dumps(adaptation_batch_ids))")
            for entry in _manifests(ctx) if isinstance(entry.get("adaptation_batch_ids"), list)
            and entry.get("adaptation_batch_hash") != adaptation_batch_hash(entry["adaptation_batch_ids"])]


@implements("ADAPT-1")
def ADAPT_1_pairs(ctx: GradeContext) -> list[Issue]:
    """Arms of one pair on different batches: confidence weak (never strong, and a definitive verdict says weak)."""
    by_pair: dict[Any, dict[str, str]] = {}
    for entry in _manifests(ctx):
        if isinstance(entry.get("adaptation_batch_ids"), list):
            by_pair.setdefault(entry.get("pair"), {})[str(entry.get("arm"))] = \
                adaptation_batch_hash(entry["adaptation_batch_ids"])
    confidence = ctx.result.get("confidence")
    limited = confidence != "strong" and (confidence == "weak" or ctx.result.get("verdict") in (None, "inconclusive"))
    return [Issue("ADAPT-1", INVALID, f"pair {pair}: arms {', '.join(sorted(hashes))} consumed different batches but "
                                      f"confidence is {short(confidence)}, not weak")
            for pair, hashes in by_pair.items() if len(set(hashes.values())) > 1 and not limited]


CHECKS = [DEC_1, DEC_2, DEC_3, DEC_4, DEC_5, DEC_6, DEC_7, DEC_8, DEC_9, DEC_10, DEC_11, DEC_12, DEC_13, DEC_14, DEC_15,
          ADAPT_1]


REVISION_NOTE = ("the decision_rule comes from the recorded spec revision: the exchange's own spec has none, so the "
                 "exchange grades decision not applicable; the revision's method is recomputed here from the retained "
                 "predictions and per-step log, and any disagreement with RESULT grades invalid")


@implements("DEC-1")
def grade(ctx: GradeContext) -> CategoryGrade:
    if ctx.spec is None:
        return CategoryGrade(NAME, UNKNOWN, [Issue("DEC-1", UNKNOWN, "no spec to grade the decision against")])
    if not spec_rule(ctx):
        if ctx.result.get("decision") is not None:
            return CategoryGrade(NAME, INVALID, [Issue("DEC-1", INVALID, "the spec has no decision_rule but RESULT "
                                                                         "carries a decision object")])
        grade_ = run_checks(NAME, [ADAPT_1], ctx)
        if not grade_.issues:
            grade_.status = NOT_APPLICABLE
            grade_.notes.append("the spec has no decision_rule")
        return grade_
    if _from_revision(ctx):
        if ctx.result.get("decision") is not None:
            return CategoryGrade(NAME, INVALID, [Issue(
                "DEC-1", INVALID, "the exchange's spec has no decision_rule (it comes from the recorded revision), so "
                                  "RESULT carries no decision object; its verdict follows the contract's rule")])
        if ctx.result.get("verdict") is None:
            return CategoryGrade(NAME, UNKNOWN, [Issue("DEC-1", UNKNOWN, "no verdict (the comparison was not decided)")])
        grade_ = run_checks(NAME, [DEC_3, DEC_6, DEC_7, DEC_8, DEC_9, DEC_12, DEC_14, ADAPT_1], ctx)
        if not grade_.issues:  # what the exchange grades (and --plan predicts): no decision_rule of its own
            grade_.status = NOT_APPLICABLE
        grade_.notes.append(REVISION_NOTE)
        return grade_
    missing = DEC_1(ctx)
    if missing:
        return CategoryGrade(NAME, missing[0].status, missing)
    return run_checks(NAME, CHECKS[1:], ctx)
