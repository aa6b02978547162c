"""Feasibility category (FEAS-*): the measured feasibility record.

The exchange grades a record it cannot re-project `unknown`; the ten projection keys of FEAS-2
must be recorded identically in `config` and `effective_config` (the pilot's own size lives in
`measurements`).
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta, timezone

from experiment.contract.result_models import Feasibility
from experiment.contract.run_layout import run_meta_path
from experiment.stats.feasibility import (
    FEASIBILITY_PHASE_KEYS, GENERATION_KEYS, PROJECTION_KEYS, PhaseTiming, budget_use, feasibility_record, pilot_size,
)
from experiment.grading.common import (
    FLOAT_TOL, INVALID, MISSING_EVIDENCE, MISSING_SUMMARY, UNKNOWN, CategoryGrade, GradeContext, Issue, as_dict, as_list, equal_json, is_integer,
    is_number, model_issues, run_checks, short,
)
from experiment.grading.registry import rule

NAME = "feasibility"
PHASES = ("setup", "training", "evaluation")
PHASE_KEYS = FEASIBILITY_PHASE_KEYS


def _record(ctx: GradeContext) -> dict:
    return as_dict(ctx.result.get("feasibility"))


@rule("FEAS-1", "feasibility", "unknown", "a measured feasibility record before the full comparison")
def FEAS_1(ctx: GradeContext) -> list[Issue]:
    if not _record(ctx):
        return [Issue("FEAS-1", UNKNOWN, "RESULT has no measured feasibility record")]
    return model_issues(Feasibility, _record(ctx), "FEAS-1", UNKNOWN, "feasibility")


@rule("FEAS-2", "feasibility", "unknown", "config and effective_config record the ten projection keys identically")
def FEAS_2(ctx: GradeContext) -> list[Issue]:
    config, effective = as_dict(_record(ctx).get("config")), as_dict(_record(ctx).get("effective_config"))
    keys = [k for k in PROJECTION_KEYS if k not in config or k not in effective or not equal_json(config[k], effective[k])]
    # one problem per key, in the exchange's words for the earlier run (FEAS-2)
    return [Issue("FEAS-2", UNKNOWN, f"Re-projection required: {key} changed or was not recorded",
                  MISSING_EVIDENCE if key not in config or key not in effective else "") for key in keys]


@rule("FEAS-3", "feasibility", "unknown", "source names the pilot evidence")
def FEAS_3(ctx: GradeContext) -> list[Issue]:
    return [] if _record(ctx).get("source") else [Issue("FEAS-3", UNKNOWN, "the pilot evidence source is not recorded")]


@rule("FEAS-4", "feasibility", "unknown", "each measured phase gives seconds, units, planned_units, samples, gpu_count, allocation_source")
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


@rule("FEAS-5", "feasibility", "unknown", "recovery.seconds is a positive reserve")
def FEAS_5(ctx: GradeContext) -> list[Issue]:
    recovery = as_dict(_record(ctx).get("recovery"))
    if not (is_number(recovery.get("seconds")) and recovery["seconds"] > 0):
        return [Issue("FEAS-5", UNKNOWN, "recovery.seconds is not a positive reserve")]
    return []


@rule("FEAS-6", "feasibility", "unknown", "GPU counts only from allocation evidence, one count for the service")
def FEAS_6(ctx: GradeContext) -> list[Issue]:
    issues = []
    record = _record(ctx)
    entries = {f"measurements.{k}": v for k, v in as_dict(record.get("measurements")).items()}
    entries["recovery"] = record.get("recovery")
    for where, entry in entries.items():
        entry = as_dict(entry)
        count = entry.get("gpu_count")
        if count is not None and (not is_integer(count) or count < 0
                                  or not entry.get("allocation_source")):
            issues.append(Issue("FEAS-6", UNKNOWN, f"{where}.gpu_count {short(count)} has no allocation evidence"))
    counts = {where: as_dict(entry).get("gpu_count") for where, entry in entries.items() if isinstance(entry, dict)}
    if len({short(count) for count in counts.values()}) > 1:  # one service: one allocation for every phase (the run's)
        issues.append(Issue("FEAS-6", UNKNOWN, f"the phases name different GPU counts ({short(counts)}) from one "
                                               "service's allocation evidence"))
    return issues


@rule("FEAS-7", "feasibility", "invalid|unknown", "generated tasks: a generation record whose yield and settings are the audit's and the spec's")
def FEAS_7(ctx: GradeContext) -> list[Issue]:
    generated = ctx.gate_applicable("generation_audit") is True
    generation = _record(ctx).get("generation")
    if "generation" not in _record(ctx):
        return [Issue("FEAS-7", UNKNOWN, "the record has no generation entry (null when no tasks are generated)")]
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
        counts = as_dict(as_dict(ctx.result.get("generation_audit")).get("counts"))
        if counts and not equal_json((generation.get("attempted"), generation.get("accepted")),
                                     (counts.get("generated"), counts.get("accepted"))):
            return [Issue("FEAS-7", INVALID, "the measured yield (attempted, accepted) is not the generation audit's "
                                             "counts (generated, accepted)")]
        return _generation_settings_issues(ctx, generation, measurements)
    return []


def _generation_settings_issues(ctx: GradeContext, generation: dict, measurements: dict) -> list[Issue]:
    """FEAS-7 *(project reading)*: the generation target and the filter's samples per candidate are the spec's
    (experiment.contract.generation.generation_settings), the generation phase's units are the candidates
    attempted, and the audit phase's units the distinct candidates re-solved over the audit rounds."""
    issues = []
    settings = ctx.generation_settings
    recorded = (generation.get("target_accepted"), generation.get("filter_samples_per_candidate"))
    # counts compare exactly, and a JSON boolean is no count (Python's True == 1 would take it for the spec's 1)
    if settings is not None and not equal_json(recorded, (settings.n_accept, settings.filter_samples)):
        issues.append(Issue("FEAS-7", INVALID, f"target_accepted and filter_samples_per_candidate are not the spec's "
                                               f"({settings.n_accept}, {settings.filter_samples})"))
    if not equal_json(as_dict(measurements.get("generation")).get("units"), generation.get("attempted")):
        issues.append(Issue("FEAS-7", INVALID, "the generation phase's units are not the candidates attempted"))
    tasks = ctx.evidence.jsonl(as_dict(ctx.result.get("generation_audit")).get("dataset_file"))
    if settings is not None and tasks is not None and any("base_solved" in t for t in tasks) and "filter" in measurements and not equal_json(as_dict(
            measurements["filter"]).get("units"), settings.filter_samples * sum(t.get("base_solved") is not None for t in tasks)):
        issues.append(Issue("FEAS-7", INVALID, "the filter phase's units are not the filter's samples of every candidate "
                                               "it counted"))
    done = [name for name in ("generation", "filter", "audit") if isinstance(measurements.get(name), dict) and not (
        equal_json(measurements[name].get("units"), measurements[name].get("planned_units"))
        and equal_json(measurements[name].get("planned_units"), measurements[name].get("samples")))]
    if done:  # measured before the pilot: what was done is what the full run needs
        issues.append(Issue("FEAS-7", INVALID, f"{', '.join(done)}: units, planned_units and samples differ (work done "
                                               "before the pilot is the planned work)"))
    audit = as_dict(ctx.result.get("generation_audit"))
    files = [ctx.evidence.json(as_dict(r).get("audit_file")) for r in as_list(audit.get("rounds"))] or [audit]
    sampled = {str(as_dict(s).get("item_id")) for f in files for s in as_list(as_dict(f).get("samples"))}
    if "audit" in measurements and not equal_json(as_dict(measurements["audit"]).get("units"), len(sampled)):
        issues.append(Issue("FEAS-7", INVALID, f"the audit phase's units are not the {len(sampled)} distinct candidates "
                                               "the audit rounds re-solved"))
    return issues


@rule("FEAS-8", "feasibility", "unknown", "primary_endpoint is the spec's")
def FEAS_8(ctx: GradeContext) -> list[Issue]:
    endpoint = ctx.plan.primary_endpoint if ctx.plan is not None else None
    recorded = _record(ctx).get("primary_endpoint")
    if endpoint and recorded != endpoint:
        return [Issue("FEAS-8", UNKNOWN, f"primary_endpoint {short(recorded)} is not the spec's {endpoint!r}")]
    return []


@rule("FEAS-9", "feasibility", "invalid", "a projection that does not fit the budget gives no definitive verdict")
def FEAS_9(ctx: GradeContext) -> list[Issue]:
    projection = as_dict(_record(ctx).get("projection"))
    if projection.get("fits") is False and ctx.result.get("verdict") in ("supported", "refuted"):
        return [Issue("FEAS-9", INVALID, "the projection does not fit the budget but a definitive verdict was posted")]
    return []


@rule("FEAS-10", "feasibility", "unknown", "the spec's stated pilot size is honoured and recorded")
def FEAS_10(ctx: GradeContext) -> list[Issue]:
    """The pilot size the spec states (its command: "timing pilot: N steps per arm plus M eval items")
    was measured; a spec whose eval set is smaller than M (a rehearsal's) pilots all of it."""
    if ctx.spec is None or ctx.plan is None:
        return []
    size = pilot_size(ctx.spec)
    pilot = _record(ctx).get("pilot")
    if not size.source.startswith("spec") and pilot is None:
        return []  # a pilot of the project's default size that does not record its size (SFT): FEAS-4 grades it
    measurements = as_dict(_record(ctx).get("measurements"))
    arms = len(ctx.plan.trained_arms)
    n_eval, steps = ctx.plan.eval.get("n_examples"), ctx.spec.get("steps")
    items = min(size.eval_items, int(n_eval)) if is_number(n_eval) else size.eval_items
    per_arm = min(size.steps_per_arm, int(steps)) if is_number(steps) else size.steps_per_arm  # the run's pilot steps
    issues = []
    # *(project reading)* the record states the pilot's size and where it comes from, as the spec gives them
    if pilot is not None and not equal_json((as_dict(pilot).get("steps_per_arm"), as_dict(pilot).get("eval_items"),
                                             as_dict(pilot).get("size_source")), (per_arm, items, size.source)):
        issues.append(Issue("FEAS-10", UNKNOWN, f"the pilot's recorded size is not the spec's ({per_arm} steps per arm, "
                                                f"{items} eval items, from {size.source})"))
    training, evaluation = as_dict(measurements.get("training")), as_dict(measurements.get("evaluation"))
    # the pilot scores its items once, or once for the base model and once for each trained arm (the run's schedule)
    if training.get("units") != per_arm * arms or evaluation.get("units") not in (items, items * (arms + 1)):
        issues.append(Issue("FEAS-10", UNKNOWN, f"the spec's pilot is {per_arm} steps per arm plus {items} eval "
                                                f"items; measured {training.get('units')!r} steps and "
                                                f"{evaluation.get('units')!r} items"))
    return issues


@rule("FEAS-14", "feasibility", "unknown", "the config projected is the plan's full run: its steps, sizes and eval count")
def FEAS_14(ctx: GradeContext) -> list[Issue]:
    """*(issue 45)* `config` (the full run the projection is made for) is the plan's: the spec's (or its rehearsal's)
    steps, LoRA rank, batch size, sequence length and training pool (its name and path), its base model, every
    training run the plan has, and the plan's eval count. A smaller run projected fits where the planned one may not."""
    config = as_dict(_record(ctx).get("config"))
    if ctx.spec is None or ctx.plan is None or not config:
        return []
    planned = {"steps": ctx.spec.get("steps"), "lora_rank": ctx.spec.get("lora_rank"),
               "batch_size": ctx.spec.get("batch_size"), "max_seq_len": ctx.spec.get("max_seq_len"),
               "n_examples": as_dict(ctx.spec.get("dataset")).get("n_examples"),
               "n_eval": ctx.plan.eval.get("n_examples")}
    wrong = [f"{key} {config.get(key)!r} (the plan: {value!r})" for key, value in planned.items()
             if is_number(value) and key in config and not equal_json(config.get(key), value)]
    named = {"base_model": ctx.spec.get("base_model"), **{f"dataset.{key}": as_dict(ctx.spec.get("dataset")).get(key)
                                                         for key in ("name", "path")}}
    stated = {"base_model": config.get("base_model"), **{f"dataset.{key}": as_dict(config.get("dataset")).get(key)
                                                         for key in ("name", "path")}}
    wrong += [f"{key} {stated[key]!r} (the spec: {value!r})" for key, value in named.items()
              if isinstance(value, str) and stated[key] is not None and stated[key] != value]
    listed, runs = set(map(str, as_list(config.get("arms")))), getattr(ctx.plan, "training_runs", None) or []
    left_out = [arm.name for arm in getattr(ctx.plan, "trained_arms", None) or [] if arm.name not in listed
                and not {run.name for run in runs if run.arm == arm.name} <= listed]  # an arm, or each of its runs
    if isinstance(config.get("arms"), list) and left_out:
        wrong.append(f"arms {config['arms']!r} (the plan also trains {left_out!r})")
    return [Issue("FEAS-14", UNKNOWN, f"Re-projection required: the config projected is not the plan's run: "
                                      f"{', '.join(wrong)}")] if wrong else []


@rule("FEAS-12", "feasibility", "unknown", "the projection and recovery recompute from the measurements and the budget")
def FEAS_12(ctx: GradeContext) -> list[Issue]:
    """The projection is recomputed from the measurements and the spec's budget
    (experiment.stats.feasibility.feasibility_record, the function the pilot used): every field of it
    (wall seconds, GPU-hours and their status, the budget, whether it fits, its problems) and the
    recovery reserve."""
    record, budget = _record(ctx), (ctx.plan.budget if ctx.plan is not None else None)
    projection = record.get("projection")
    if not isinstance(projection, dict):
        return [Issue("FEAS-12", UNKNOWN, "no projection against the budget is recorded", MISSING_SUMMARY)]
    if budget is None:
        return []
    measurements = as_dict(record.get("measurements"))
    try:
        phases = {name: PhaseTiming(**{k: as_dict(entry)[k] for k in PHASE_KEYS},
                                    wall_seconds=as_dict(entry).get("wall_seconds"))
                  for name, entry in measurements.items()}
        waits = projection.get("capacity_waits_seconds", 0.0)  # a floor of the recovery reserve, recomputed below
        expected = feasibility_record(
            config={}, effective_config={}, primary_endpoint="", source="", budget=budget,
            setup=phases.pop("setup"), training=phases.pop("training"), evaluation=phases.pop("evaluation"),
            extra_phases=phases, capacity_waits_seconds=float(waits) if is_number(waits) else 0.0)
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as err:
        return [Issue("FEAS-12", UNKNOWN, f"the projection cannot be recomputed from the measurements ({err})")]
    mine = expected["projection"]
    wrong = [key for key in sorted(set(mine) | set(projection)) if not equal_json(projection.get(key), mine.get(key), FLOAT_TOL)]
    recovery = as_dict(record.get("recovery"))
    wrong += [f"recovery.{key}" for key in ("seconds", "gpu_count", "allocation_source")
              if not (key == "seconds" and FEAS_5(ctx)) and not equal_json(recovery.get(key), expected["recovery"][key],
                                                                                FLOAT_TOL)]
    if wrong:  # the exchange's word for a projection it cannot trust: re-projection required (unknown)
        return [Issue("FEAS-12", UNKNOWN, f"projection {', '.join(wrong)} do not recompute from the measurements and "
                                          f"the budget (recomputed: {mine['wall_seconds']!r} s, fits {mine['fits']})")]
    return []


@rule("FEAS-13", "feasibility", "invalid", "budget_use is the spec's wall budget against the run's own elapsed time")
def FEAS_13(ctx: GradeContext) -> list[Issue]:
    """RESULT.budget_use, where recorded, is what the run's own function (experiment.stats.feasibility.budget_use)
    gives for the spec's wall budget and the recorded elapsed time: the budget, within_budget, the overrun note and
    the sentence saying what was measured. The elapsed time is at least the wall time the feasibility pilot
    measured inside the run (the record's own timings; timestamps have whole seconds, hence one second's slack),
    and in a run directory it is the time from run.json's start to the event that posted it (at most
    BUDGET_USE_POST_SECONDS later)."""
    use = ctx.result.get("budget_use")
    if use is None or ctx.plan is None:
        return []
    elapsed = as_dict(use).get("elapsed_wall_seconds")
    if not is_number(elapsed) or not math.isfinite(float(elapsed)) or float(elapsed) < 0:
        return [Issue("FEAS-13", INVALID,
                      f"budget_use.elapsed_wall_seconds {short(elapsed)} is not a number of seconds")]
    start = datetime(1970, 1, 1, tzinfo=timezone.utc)
    try:
        end = start + timedelta(seconds=float(elapsed))
    except OverflowError:
        return [Issue("FEAS-13", INVALID, f"budget_use.elapsed_wall_seconds {short(elapsed)} is no run's wall time")]
    expected = budget_use(ctx.plan.budget, start.isoformat(), end.isoformat())
    if expected is None:
        return [Issue("FEAS-13", INVALID, "budget_use is recorded, but the spec states no wall budget")]
    expected["elapsed_wall_seconds"] = elapsed  # the one measured input: the rest follows from it and the budget
    recorded = as_dict(use)
    wrong = [key for key in sorted(set(expected) | set(recorded))
             if not equal_json(recorded.get(key), expected.get(key))]
    issues = [Issue("FEAS-13", INVALID, f"budget_use {', '.join(wrong)} is not what the spec's wall budget and the "
                                        "recorded elapsed time give")] if wrong else []
    pilot = [as_dict(phase).get("wall_seconds") for phase in as_dict(_record(ctx).get("measurements")).values()]
    pilot_wall = math.fsum(float(s) for s in pilot if is_number(s))
    if float(elapsed) + 1 < pilot_wall:
        issues.append(Issue("FEAS-13", INVALID, f"budget_use.elapsed_wall_seconds {short(elapsed)} is less than the "
                                                "wall time the feasibility pilot measured inside the run "
                                                f"({pilot_wall:.3g} s)"))
    return issues + _budget_use_posted(ctx, float(elapsed))


BUDGET_USE_POST_SECONDS = 5  # from computing budget_use to the event that posts it (whole-second timestamps)


def _budget_use_posted(ctx: GradeContext, elapsed: float) -> list[Issue]:
    """In a run directory: elapsed_wall_seconds is the time from run.json's `started` to the last event that
    posted budget_use (the run computes it just before posting it)."""
    if ctx.run_dir is None or not ctx.events:
        return []
    posted = [e.get("ts") for e in ctx.events
              if e.get("event") == "result_updated" and "budget_use" in as_list(e.get("fields"))]
    try:
        started = datetime.fromisoformat(json.loads(run_meta_path(ctx.run_dir).read_text(encoding="utf-8"))["started"])
        span = (datetime.fromisoformat(str(posted[-1])) - started).total_seconds()
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return []  # run.json and the events are the run-dir layer's to grade
    if not 0 <= span - elapsed <= BUDGET_USE_POST_SECONDS:
        return [Issue("FEAS-13", INVALID, f"budget_use.elapsed_wall_seconds {short(elapsed)} is not the time from "
                                          f"run.json's start to the event that posted it ({span:g} s)")]
    return []


CHECKS = [FEAS_1, FEAS_2, FEAS_3, FEAS_4, FEAS_5, FEAS_6, FEAS_7, FEAS_8, FEAS_9, FEAS_10, FEAS_12, FEAS_13,
          FEAS_14]


def grade(ctx: GradeContext) -> CategoryGrade:
    if not _record(ctx):
        return CategoryGrade(NAME, UNKNOWN, FEAS_1(ctx))
    return run_checks(NAME, CHECKS, ctx)
