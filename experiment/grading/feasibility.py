"""Feasibility category (FEAS-*): the measured feasibility record.

The exchange grades a record it cannot re-project `unknown`; the ten projection keys of FEAS-2
must be recorded identically in `config` and `effective_config` (the pilot's own size lives in
`measurements`).
"""

from __future__ import annotations

from experiment.contract.result_models import Feasibility
from experiment.stats.feasibility import PROJECTION_KEYS
from experiment.report.validation import FEASIBILITY_PHASE_KEYS, GENERATION_KEYS
from experiment.grading.common import (
    INVALID, UNKNOWN, CategoryGrade, GradeContext, Issue, as_dict, is_number, model_issues, run_checks, short,
)

NAME = "feasibility"
PHASES = ("setup", "training", "evaluation")
PHASE_KEYS = FEASIBILITY_PHASE_KEYS


def _record(ctx: GradeContext) -> dict:
    return as_dict(ctx.result.get("feasibility"))


def FEAS_1(ctx: GradeContext) -> list[Issue]:
    if not _record(ctx):
        return [Issue("FEAS-1", UNKNOWN, "RESULT has no measured feasibility record")]
    return model_issues(Feasibility, _record(ctx), "FEAS-1", UNKNOWN, "feasibility")


def FEAS_2(ctx: GradeContext) -> list[Issue]:
    config, effective = as_dict(_record(ctx).get("config")), as_dict(_record(ctx).get("effective_config"))
    keys = [k for k in PROJECTION_KEYS if k not in config or k not in effective or config[k] != effective[k]]
    return [Issue("FEAS-2", UNKNOWN, f"re-projection required: {', '.join(keys)} changed or was not recorded "
                                     "(config and effective_config must agree)")] if keys else []


def FEAS_3(ctx: GradeContext) -> list[Issue]:
    return [] if _record(ctx).get("source") else [Issue("FEAS-3", UNKNOWN, "the pilot evidence source is not recorded")]


def FEAS_4(ctx: GradeContext) -> list[Issue]:
    issues = []
    measurements = as_dict(_record(ctx).get("measurements"))
    for phase in PHASES:
        entry = measurements.get(phase)
        missing = [k for k in PHASE_KEYS if not isinstance(entry, dict) or k not in entry]
        if missing:
            issues.append(Issue("FEAS-4", UNKNOWN, f"measurements.{phase} lacks {', '.join(missing)}"))
        elif not (is_number(entry["seconds"]) and entry["seconds"] >= 0 and is_number(entry["units"]) and entry["units"] > 0
                  and is_number(entry["planned_units"])):
            issues.append(Issue("FEAS-4", UNKNOWN, f"measurements.{phase} needs measured seconds and positive units"))
    return issues


def FEAS_5(ctx: GradeContext) -> list[Issue]:
    recovery = as_dict(_record(ctx).get("recovery"))
    if not (is_number(recovery.get("seconds")) and recovery["seconds"] > 0):
        return [Issue("FEAS-5", UNKNOWN, "recovery.seconds is not a positive reserve")]
    return []


def FEAS_6(ctx: GradeContext) -> list[Issue]:
    issues = []
    record = _record(ctx)
    entries = {f"measurements.{k}": v for k, v in as_dict(record.get("measurements")).items()}
    entries["recovery"] = record.get("recovery")
    for where, entry in entries.items():
        entry = as_dict(entry)
        count = entry.get("gpu_count")
        if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 0
                                  or not entry.get("allocation_source")):
            issues.append(Issue("FEAS-6", UNKNOWN, f"{where}.gpu_count {short(count)} has no allocation evidence"))
    return issues


def FEAS_7(ctx: GradeContext) -> list[Issue]:
    generated = ctx.gate_applicable("generation_audit") is True
    generation = _record(ctx).get("generation")
    if generated and not isinstance(generation, dict):
        return [Issue("FEAS-7", UNKNOWN, "training on generated tasks needs a generation record, not null")]
    if isinstance(generation, dict):
        missing = [k for k in GENERATION_KEYS if k not in generation]
        if missing:
            return [Issue("FEAS-7", UNKNOWN, f"generation lacks {', '.join(missing)}")]
        measurements = as_dict(_record(ctx).get("measurements"))
        absent = [k for k in ("generation", "filter") if not isinstance(measurements.get(k), dict)]
        if absent:
            return [Issue("FEAS-7", UNKNOWN, f"no {' and '.join(absent)} measurement for the generated tasks")]
    return []


def FEAS_8(ctx: GradeContext) -> list[Issue]:
    endpoint = ctx.plan.primary_endpoint if ctx.plan is not None else None
    recorded = _record(ctx).get("primary_endpoint")
    if endpoint and recorded != endpoint:
        return [Issue("FEAS-8", UNKNOWN, f"primary_endpoint {short(recorded)} is not the spec's {endpoint!r}")]
    return []


def FEAS_9(ctx: GradeContext) -> list[Issue]:
    projection = as_dict(_record(ctx).get("projection"))
    if projection.get("fits") is False and ctx.result.get("verdict") in ("supported", "refuted"):
        return [Issue("FEAS-9", INVALID, "the projection does not fit the budget but a definitive verdict was posted")]
    return []


def FEAS_10(ctx: GradeContext) -> list[Issue]:
    """The self-generated spec's stated pilot: 2 steps per arm plus 100 eval items (others: no stated size)."""
    command = str((ctx.spec or {}).get("command") or "")
    if "2 steps per arm plus 100 eval items" not in command:
        return []
    measurements = as_dict(_record(ctx).get("measurements"))
    arms = len(ctx.plan.trained_arms) if ctx.plan is not None else 0
    training, evaluation = as_dict(measurements.get("training")), as_dict(measurements.get("evaluation"))
    if training.get("units") != 2 * arms or evaluation.get("units") != 100:
        return [Issue("FEAS-10", UNKNOWN, f"the spec's pilot is 2 steps per arm plus 100 eval items; measured "
                                          f"{training.get('units')!r} steps and {evaluation.get('units')!r} items")]
    return []


CHECKS = [FEAS_1, FEAS_2, FEAS_3, FEAS_4, FEAS_5, FEAS_6, FEAS_7, FEAS_8, FEAS_9, FEAS_10]


def grade(ctx: GradeContext) -> CategoryGrade:
    if not _record(ctx):
        return CategoryGrade(NAME, UNKNOWN, FEAS_1(ctx))
    return run_checks(NAME, CHECKS, ctx)
