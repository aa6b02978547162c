"""Activation gate (ACT-1, ACT-2), graded from the bare record: findings go to `problems`.

The exchange has no activation category, but a record whose full run went ahead on an activation
gate it did not pass (or whose posted values the pilot does not give) cannot be trusted. ACT-1:
when the plan applies the gate and arms were trained, `activation_calibration.values` holds every
check of the spec with a value inside its range (`experiment.stats.activation.check_range`, the
gate's own comparison). ACT-2: those values are what the last retained pilot log
(`activation-pilot-*.jsonl`, its step rows and held-out means) gives when recomputed with the
gate's own functions (`gs1_activation_values`; for the self-generated spec the checks the log
alone determines).
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

from experiment.grading.common import INVALID, UNVERIFIED, GradeContext, Issue, as_dict, as_list, is_number, short
from experiment.stats.activation import check_range, gs1_activation_values

PILOT_LOG_PREFIX = "activation-pilot-"
# the self-generated spec's checks that the pilot log alone determines
SELFGEN_FROM_LOG = ("selfgen_frac_groups_nonzero_reward_variance_pilot", "selfgen_mean_train_reward_pilot")


def _checks(ctx: GradeContext) -> list[dict[str, Any]]:
    if ctx.plan is None:
        return []
    try:
        gate = ctx.plan.gate("activation_gate")
    except KeyError:
        return []
    if gate.applicable is not True:
        return []
    return [as_dict(c) for c in as_list(as_dict(gate.details).get("checks")) if as_dict(c).get("metric")]


def _values(ctx: GradeContext) -> dict[str, Any] | None:
    values = as_dict(ctx.result.get("activation_calibration")).get("values")
    return values if isinstance(values, dict) else None


def ACT_1(ctx: GradeContext) -> list[Issue]:
    checks = _checks(ctx)
    if not checks or not ctx.trained:
        return []
    values = _values(ctx)
    if values is None:
        return [Issue("ACT-1", INVALID, "arms were trained but activation_calibration.values is missing")]
    issues = []
    for check in checks:
        value = values.get(check["metric"])
        if not is_number(value):
            issues.append(Issue("ACT-1", INVALID, f"{check['metric']}: no measured value, yet arms were trained"))
            continue
        outcome = check_range(check, float(value))
        if not outcome.passed:
            issues.append(Issue("ACT-1", INVALID, f"{outcome.reason}, yet arms were trained"))
    return issues


def _step(row: dict[str, Any]) -> SimpleNamespace:
    return SimpleNamespace(item_ids=as_list(row.get("item_ids")), rewards=as_list(row.get("rewards")),
                           advantages=as_list(row.get("advantages")), baseline_values=as_list(row.get("baseline_values")),
                           effective_neighbors=as_list(row.get("effective_neighbors")),
                           executed_group_size=row.get("executed_group_size"))


def _recomputed(ctx: GradeContext, rows: list[dict[str, Any]], metrics: set[str]) -> dict[str, float | None]:
    steps = [row for row in rows if "arm" in row and "rewards" in row]
    heldout = next((as_dict(row["heldout_mean_reward"]) for row in rows if "heldout_mean_reward" in row), {})
    if not steps:
        return {}
    treatment_arm = steps[0]["arm"]
    treatment = [_step(row) for row in steps if row["arm"] == treatment_arm]
    baseline = [_step(row) for row in steps if row["arm"] != treatment_arm]
    if "pilot_mean_reward" in metrics:
        return gs1_activation_values(treatment, baseline, heldout, treatment[0])
    values: dict[str, float | None] = {}
    groups, rewards = [], []
    for step in treatment:
        size = len(step.rewards) // len(step.item_ids) if step.item_ids else 0
        groups += [step.rewards[k * size:(k + 1) * size] for k in range(len(step.item_ids))] if size else []
        rewards += list(step.rewards)
    if groups:
        values[SELFGEN_FROM_LOG[0]] = sum(1 for g in groups if max(g) != min(g)) / len(groups)
    if rewards:
        values[SELFGEN_FROM_LOG[1]] = math.fsum(rewards) / len(rewards)
    return values


def ACT_2(ctx: GradeContext) -> list[Issue]:
    checks = _checks(ctx)
    values = _values(ctx)
    if not checks or values is None:
        return []
    logs = [e.get("name") for e in ctx.evidence.entries if str(e.get("name", "")).startswith(PILOT_LOG_PREFIX)]
    if not logs:
        return [Issue("ACT-2", UNVERIFIED, "no pilot log (activation-pilot-*.jsonl) is retained, so the activation "
                                           "values cannot be recomputed")]
    rows = ctx.evidence.jsonl(logs[-1])
    if rows is None:
        return [Issue("ACT-2", UNVERIFIED, f"{logs[-1]}: {ctx.evidence.why(logs[-1]) or 'not JSONL'}")]
    metrics = {check["metric"] for check in checks}
    try:
        expected = _recomputed(ctx, rows, metrics)
    except (TypeError, ValueError, KeyError, IndexError, ZeroDivisionError) as err:
        return [Issue("ACT-2", INVALID, f"{logs[-1]} cannot be recomputed ({type(err).__name__}: {err})")]
    wrong = []
    for metric in sorted(metrics & set(expected)):
        mine, theirs = expected[metric], values.get(metric)
        same = (mine is None or (isinstance(mine, float) and not math.isfinite(mine))) and theirs is None
        if not same and not (is_number(mine) and is_number(theirs)
                             and math.isclose(float(mine), float(theirs), rel_tol=1e-9, abs_tol=1e-12)):
            wrong.append(f"{metric} {short(theirs)} (recomputed {short(mine)})")
    if not expected:
        return [Issue("ACT-2", UNVERIFIED, f"{logs[-1]} holds no pilot steps to recompute the values from")]
    return [Issue("ACT-2", INVALID, f"activation values do not recompute from {logs[-1]}: {'; '.join(wrong)}")] if wrong else []


CHECKS = [ACT_1, ACT_2]
