"""Correctness category (CORR-*): the correctness preflight record against the spec's plan.

Tolerances are the spec's (`correctness_preflight.paths[].tolerances`), applied with
`experiment.stats.correctness.accepts`. Revisions must match pins in the spec or in its recorded
revision: a spec revision (plan file) may add `correctness_pins = {"<path id>":
{"baseline_revision": "...", "reference_revision": "..."}}` for a spec whose own revisions are
UNRESOLVED (a plan file may only add fields). Pins that come from a revision are noted: the
exchange grades against its own spec and will say unverified until that spec carries them.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from experiment.contract.result_models import CorrectnessPath
from experiment.stats.correctness import accepts, lr_scaling_errors
from experiment.stats.update_tolerance import input_tolerances
from experiment.grading.common import (
    HEX64, INVALID, NOT_APPLICABLE, UNKNOWN, UNVERIFIED, CategoryGrade, GradeContext, Issue, as_dict, as_list,
    is_number, model_issues, run_checks,
)

NAME = "correctness"
PIN_FIELDS = ("correctness_pins", "correctness_revisions")
ERROR_KEYS = ("max_abs_error", "reference_max_abs", "relative_l2_error", "cosine_similarity")
EXCHANGE_NOTE = ("graded against the recorded spec revision's pins: the exchange grades against its own spec and will "
                 "grade correctness unverified until that spec carries the pins")


def _section(ctx: GradeContext) -> dict[str, Any]:
    return as_dict((ctx.spec or {}).get("correctness_preflight"))


def _spec_paths(ctx: GradeContext) -> dict[str, dict[str, Any]]:
    return {str(p.get("id")): p for p in as_list(_section(ctx).get("paths")) if isinstance(p, dict)}


def _record_paths(ctx: GradeContext) -> dict[str, dict[str, Any]]:
    record = as_dict(ctx.result.get("correctness_preflight"))
    return {str(p.get("id")): p for p in as_list(record.get("paths")) if isinstance(p, dict)}


def _pins(ctx: GradeContext, path_id: str) -> tuple[dict[str, Any], bool]:
    """The pinned revisions of a path and whether they come from the recorded revision."""
    spec_path = _spec_paths(ctx).get(path_id, {})
    pins = {k: spec_path.get(k) for k in ("baseline_revision", "reference_revision")}
    from_revision = "correctness_preflight" in ctx.revision_fields
    for field in PIN_FIELDS:
        extra = as_dict(as_dict((ctx.spec or {}).get(field)).get(path_id))
        for key in pins:
            if _unresolved(pins[key]) and extra.get(key):
                pins[key] = extra[key]
                from_revision = True
    return pins, from_revision


def _unresolved(value: Any) -> bool:
    return not value or "UNRESOLVED" in str(value).upper()


def CORR_1(ctx: GradeContext) -> list[Issue]:
    record = ctx.result.get("correctness_preflight")
    if not isinstance(record, dict):
        return [Issue("CORR-1", UNVERIFIED, "the path needs a correctness preflight but RESULT has no record "
                                            "(a missing check blocks like a failed one)")]
    if record.get("required") is not True:
        return [Issue("CORR-1", INVALID, "the record says required is not true for a custom or forked path")]
    if not _spec_paths(ctx):
        return [Issue("CORR-7", UNVERIFIED, "the spec has no accepted correctness plan for its custom or forked path; "
                                            "reported required/unverified with a spec revision requested")]
    return []


def CORR_2(ctx: GradeContext) -> list[Issue]:
    issues, recorded = [], _record_paths(ctx)
    for path_id in _spec_paths(ctx):
        if path_id not in recorded:
            issues.append(Issue("CORR-2", UNVERIFIED, f"path {path_id}: no record (a missing check blocks)"))
            continue
        issues += model_issues(CorrectnessPath, recorded[path_id], "CORR-2", UNVERIFIED, f"path {path_id}")
    return issues


def CORR_3(ctx: GradeContext) -> list[Issue]:
    issues, recorded = [], _record_paths(ctx)
    for path_id, spec_path in _spec_paths(ctx).items():
        errors = as_dict(as_dict(recorded.get(path_id)).get("errors"))
        for key, tolerance in as_dict(spec_path.get("tolerances")).items():
            entry = as_dict(errors.get(key))
            needed = [k for k in ERROR_KEYS if not (k == "cosine_similarity" and "min_cosine" not in tolerance)]
            if not entry or not all(is_number(entry.get(k)) for k in needed):
                if path_id in recorded:
                    issues.append(Issue("CORR-3", UNVERIFIED, f"path {path_id}: no measured errors for check {key}"))
    return issues


def _same_code(record: dict[str, Any]) -> bool:
    return any(as_dict(entry).get("same_code") is True for entry in as_dict(record.get("parity_sides")).values())


def CORR_3_same_code(ctx: GradeContext) -> list[Issue]:
    """A parity check whose two sides are the same code measures nothing: reported so, or recognised
    from bitwise-identical optimizer updates (a baseline_update check with errors exactly 0), it stays
    unverified. A loss or gradient check may match exactly: two independent estimators of simple
    arithmetic (GS1's advantages) give the same inputs to the same service computation."""
    issues = []
    for path_id, record in _record_paths(ctx).items():
        sides = as_dict(record.get("parity_sides"))
        for key, entry in as_dict(record.get("errors")).items():
            entry = as_dict(entry)
            reported = as_dict(sides.get(key)).get("same_code") is True
            identical = entry.get("max_abs_error") == 0.0 and entry.get("relative_l2_error") == 0.0 \
                and str(key).startswith("baseline_update")
            if reported or identical:
                why = as_dict(sides.get(key)).get("reason") or "bitwise-identical updates"
                issues.append(Issue("CORR-3", UNVERIFIED, f"path {path_id}, check {key}: both sides are the same code "
                                                          f"({why}): no parity was measured"))
    return issues


def CORR_4(ctx: GradeContext) -> list[Issue]:
    issues, recorded = [], _record_paths(ctx)
    for path_id, spec_path in _spec_paths(ctx).items():
        errors = as_dict(as_dict(recorded.get(path_id)).get("errors"))
        for key, tolerance in as_dict(spec_path.get("tolerances")).items():
            entry = as_dict(errors.get(key))
            if not all(is_number(entry.get(k)) for k in ("max_abs_error", "reference_max_abs")):
                continue
            if "min_cosine" in tolerance and not is_number(entry.get("cosine_similarity")):
                continue
            ok, why = accepts(entry, tolerance)
            if not ok:
                issues.append(Issue("CORR-4", INVALID, f"path {path_id}, check {key}: {why}"))
    return issues


START_STATE_EVIDENCE = "correctness-start-state.npz"


def _input_pairs(raw: bytes) -> tuple[list[dict[str, Any]], list[tuple[float, float]]]:
    """The read-back start state and recovered gradient (evidence npz, no pickles) as the tolerance
    analysis takes them."""
    with np.load(io.BytesIO(raw), allow_pickle=False) as data:
        bounds = [float(x) for x in data["gradient_error_bounds"]]
        start = [np.asarray(data[f"start_{k}"], dtype=np.float32) for k in range(len(bounds))]
        grads = [np.asarray(data[f"gradient_{k}"], dtype=np.float64) for k in range(len(bounds))]
    if not bounds or len(bounds) % 2:
        raise ValueError("the start factors do not pair up")
    pairs = [{"A": start[i], "B": start[i + 1], "momentum_A": np.zeros(start[i].shape),
              "momentum_B": np.zeros(start[i + 1].shape), "grad_A": grads[i], "grad_B": grads[i + 1]}
             for i in range(0, len(start), 2)]
    return pairs, list(zip(bounds[0::2], bounds[1::2]))


def _treatment_beta1(ctx: GradeContext) -> float:
    for arm in as_list((ctx.spec or {}).get("arms")):
        if isinstance(arm, dict) and arm.get("role") == "treatment":
            return float(as_dict(as_dict(arm.get("optimizer")).get("config")).get("beta1", 0.9))
    return 0.9


def CORR_4_on_input(ctx: GradeContext) -> list[Issue]:
    """A path measured through the service is also held to the a-priori bound on its read-back input,
    recomputed here from the retained input (never the record's own numbers)."""
    issues = []
    for path_id, record in _record_paths(ctx).items():
        if not (record.get("measured_through") or record.get("input_tolerances")):
            continue
        raw = ctx.evidence.bytes(START_STATE_EVIDENCE) if ctx.evidence.usable(START_STATE_EVIDENCE) else None
        if raw is None:
            issues.append(Issue("CORR-4", UNVERIFIED, f"path {path_id}: the read-back input ({START_STATE_EVIDENCE}) "
                                                      "is not retained inline: its tolerances cannot be recomputed"))
            continue
        errors = as_dict(record.get("errors"))
        try:
            pairs, bounds = _input_pairs(raw)
            learning_rates = sorted({float(str(key).rsplit("@lr=", 1)[1]) for key in errors if "@lr=" in str(key)})
            recomputed = input_tolerances(pairs, learning_rates, _treatment_beta1(ctx), bounds)
        except (ValueError, KeyError, TypeError, IndexError, OSError, EOFError) as err:
            issues.append(Issue("CORR-4", UNVERIFIED, f"path {path_id}: the read-back input is unusable ({err})"))
            continue
        for key, entry in errors.items():
            entry = as_dict(entry)
            if key not in recomputed or not all(is_number(entry.get(k)) for k in ERROR_KEYS):
                continue
            ok, why = accepts(entry, recomputed[key])
            if not ok:
                issues.append(Issue("CORR-4", INVALID, f"path {path_id}, check {key}, on the read-back input: {why}"))
    return issues


def CORR_5(ctx: GradeContext) -> list[Issue]:
    issues, recorded = [], _record_paths(ctx)
    for path_id, spec_path in _spec_paths(ctx).items():
        plan = as_dict(spec_path.get("lr_scaling"))
        probes = as_list(as_dict(recorded.get(path_id)).get("lr_scaling"))
        if not plan:
            continue
        if not probes:
            issues.append(Issue("CORR-5", UNVERIFIED, f"path {path_id}: the spec plans LR scaling probes, none reported"))
            continue
        try:
            changes = lr_scaling_errors(probes)
        except (ValueError, KeyError, TypeError) as err:
            issues.append(Issue("CORR-5", INVALID, f"path {path_id}: LR probes unusable ({err})"))
            continue
        limit = plan.get("max_relative_change")
        if is_number(limit) and any(abs(change) > limit for change in changes):
            issues.append(Issue("CORR-5", INVALID, f"path {path_id}: update_norm/LR changes by up to "
                                                   f"{max(map(abs, changes)):.3g}, over {limit}"))
        wanted = as_list(plan.get("learning_rates"))
        if wanted and sorted(float(p.get("learning_rate", 0)) for p in probes) != sorted(map(float, wanted)):
            issues.append(Issue("CORR-5", UNVERIFIED, f"path {path_id}: LR probes do not cover the planned rates {wanted}"))
    return issues


def CORR_6(ctx: GradeContext) -> list[Issue]:
    issues, recorded = [], _record_paths(ctx)
    for path_id in _spec_paths(ctx):
        pins, _ = _pins(ctx, path_id)
        record = as_dict(recorded.get(path_id))
        for key, pinned in pins.items():
            if _unresolved(pinned):
                issues.append(Issue("CORR-6", UNVERIFIED, f"path {path_id}: the spec's {key} is UNRESOLVED, so the check "
                                                          "stays unverified until a spec revision pins it"))
            elif key == "baseline_revision" and _same_code(record):
                continue  # the record names what ran, the same code on both sides: CORR-3 keeps it unverified
            elif record and record.get(key) != pinned and str(pinned) not in str(record.get(key)):
                issues.append(Issue("CORR-6", UNVERIFIED, f"path {path_id}: reported {key} does not match the pinned one"))
    return issues


def CORR_8(ctx: GradeContext) -> list[Issue]:
    if not (ctx.trained and ctx.result.get("status") == "succeeded"):
        return []
    if any(check(ctx) for check in (CORR_2, CORR_3, CORR_4, CORR_4_on_input, CORR_6)):
        return [Issue("CORR-8", UNVERIFIED, "the full run went ahead while the correctness preflight was unresolved "
                                            "or not passed")]
    return []


def CORR_9(ctx: GradeContext) -> list[Issue]:
    issues = []
    for path_id, record in _record_paths(ctx).items():
        digest = as_dict(record.get("fixed_input")).get("sha256")
        if not (isinstance(digest, str) and HEX64.match(digest)):
            issues.append(Issue("CORR-9", UNVERIFIED, f"path {path_id}: fixed_input.sha256 is not a 64-hex hash"))
        elif not any(ctx.evidence.usable(entry.get("name")) and (
                entry.get("sha256") == digest or digest.encode() in (ctx.evidence.bytes(entry.get("name")) or b""))
                for entry in ctx.evidence.entries):
            issues.append(Issue("CORR-9", UNVERIFIED, f"path {path_id}: the fixed input is not retained inline as evidence"))
    return issues


CHECKS = [CORR_1, CORR_2, CORR_3, CORR_3_same_code, CORR_4, CORR_4_on_input, CORR_5, CORR_6, CORR_8, CORR_9]


def grade(ctx: GradeContext) -> CategoryGrade:
    if ctx.spec is None:
        return CategoryGrade(NAME, UNKNOWN, [Issue("CORR-1", UNKNOWN, "no spec to grade correctness against")])
    applicable = ctx.gate_applicable("correctness_preflight")
    record = as_dict(ctx.result.get("correctness_preflight"))
    if applicable is False:
        if record and (record.get("required") is not False or record.get("paths")):
            return CategoryGrade(NAME, INVALID, [Issue("CORR-1", INVALID, 'a stock-only run reports {"required": false, '
                                                                          '"paths": []}')])
        return CategoryGrade(NAME, NOT_APPLICABLE, notes=[ctx.gate_reason("correctness_preflight")])
    if applicable is not True:
        return CategoryGrade(NAME, UNKNOWN, [Issue("CORR-1", UNKNOWN, ctx.gate_reason("correctness_preflight"))])
    if not record and not ctx.trained and ctx.result.get("status") == "running":
        return CategoryGrade(NAME, UNKNOWN, [Issue("CORR-1", UNKNOWN, "no correctness record yet")])
    grade_ = run_checks(NAME, CHECKS, ctx)
    if any(_pins(ctx, path_id)[1] for path_id in _spec_paths(ctx)):
        grade_.notes.append(EXCHANGE_NOTE)
    return grade_
