"""Correctness category (CORR-*): the correctness preflight record against the spec's plan.

Tolerances are the spec's (`correctness_preflight.paths[].tolerances`), applied with
`experiment.stats.correctness.accepts`. Revisions must match pins in the spec or in its recorded
revision: a spec revision (plan file) may add `correctness_pins = {"<path id>":
{"baseline_revision": "...", "reference_revision": "..."}}` for a spec whose own revisions are
UNRESOLVED (a plan file may only add fields). Pins that come from a revision grade `unverified`
(CORR-6): the exchange grades against its own spec and says unverified until that spec carries them.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import io
import json
import math
import re
from typing import Any

import numpy as np

from experiment.contract.result_models import CorrectnessPath
from experiment.contract.spec import canonical_sha256
from experiment.stats.correctness import accepts, lr_scaling_errors, revision_status
from experiment.stats.update_tolerance import input_tolerances
from experiment.grading.common import (
    HEX64, INVALID, NOT_APPLICABLE, UNKNOWN, UNVERIFIED, CategoryGrade, GradeContext, Issue, as_dict, as_list,
    is_number, model_issues, run_checks, short,
)
from experiment.grading.registry import implements, rule
from experiment.grading.spec_anchor import PIPELINE_CODE

NAME = "correctness"
PIN_FIELDS = ("correctness_pins", "correctness_revisions")
ERROR_KEYS = ("max_abs_error", "reference_max_abs", "relative_l2_error", "cosine_similarity")
SERVICE_ROUTING = "service-routing.json"  # where every arm ran (the SFT preflight probe retains it)
EXCHANGE_NOTE = ("its pins come from the recorded spec revision, not the exchange's spec: the exchange grades "
                 "correctness unverified until its own spec carries them, and so does this grader")


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


@rule("CORR-1", "correctness", "invalid|unverified|unknown", "a correctness preflight when a custom or forked path runs; stock-only: required false")
@rule("CORR-7", "correctness", "unverified", "a custom path with no accepted plan in the spec is required and unverified")
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


@rule("CORR-2", "correctness", "invalid|unverified", "one path record per spec path, with fixed input, revisions, precision, normalization, errors")
def CORR_2(ctx: GradeContext) -> list[Issue]:
    issues, recorded = [], _record_paths(ctx)
    for path_id in _spec_paths(ctx):
        if path_id not in recorded:
            issues.append(Issue("CORR-2", UNVERIFIED, f"path {path_id}: no record (a missing check blocks)"))
            continue
        issues += model_issues(CorrectnessPath, recorded[path_id], "CORR-2", UNVERIFIED, f"path {path_id}")
    ids = [str(as_dict(p).get("id")) for p in as_list(as_dict(ctx.result.get("correctness_preflight")).get("paths"))]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        issues.append(Issue("CORR-2", INVALID, f"path {', '.join(twice)} is recorded twice"))
    return issues


@rule("CORR-3", "correctness", "unverified", "measured errors for every tolerance key; a same-code parity check measures nothing")
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


def _on_embedded(ctx: GradeContext, record: dict[str, Any]) -> bool:
    """The path was measured on the embedded backend: its probe's service, the run's routing target, or a
    rehearsal (whose backend is the embedded one) says so."""
    service = as_dict(as_dict(record.get("measured_through")).get("service"))
    routing = ctx.evidence.json(SERVICE_ROUTING) if ctx.evidence.usable(SERVICE_ROUTING) else None
    rehearsal = as_dict(ctx.result.get("rehearsal"))
    return service.get("kind") == "embedded" or as_dict(as_dict(routing).get("target")).get("kind") == "embedded" \
        or rehearsal.get("backend") == "embedded"


@implements("CORR-3")
def CORR_3_same_code(ctx: GradeContext) -> list[Issue]:
    """A parity check whose two sides are the same code measures nothing: reported so, recognised from
    bitwise-identical optimizer updates (a baseline_update check with errors exactly 0), or known from
    where it ran (the embedded backend serves the treatment-disabled side and the baseline from one file,
    embedded_tinker/muon.py, whatever the record says of its sides), it stays unverified. A loss or gradient
    check may match exactly: two independent estimators of simple arithmetic (GS1's advantages) give the
    same inputs to the same service computation."""
    issues = []
    for path_id, record in _record_paths(ctx).items():
        sides = as_dict(record.get("parity_sides"))
        embedded = _on_embedded(ctx, record)
        for key, entry in as_dict(record.get("errors")).items():
            entry = as_dict(entry)
            reported = as_dict(sides.get(key)).get("same_code") is True
            baseline = str(key).startswith("baseline_update")
            identical = entry.get("max_abs_error") == 0.0 and entry.get("relative_l2_error") == 0.0 and baseline
            if reported or identical or (embedded and baseline):
                why = as_dict(sides.get(key)).get("reason") or ("bitwise-identical updates" if identical else
                                                                "the embedded backend serves both sides from one file")
                issues.append(Issue("CORR-3", UNVERIFIED, f"path {path_id}, check {key}: both sides are the same code "
                                                          f"({why}): no parity was measured"))
    return issues


@rule("CORR-4", "correctness", "invalid|unverified", "every check within the spec's tolerances (also on the read-back input)")
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


@functools.lru_cache(maxsize=8)
def _input_tolerances_of(raw: bytes, learning_rates: tuple[float, ...], beta1: float,
                         analysis=input_tolerances) -> dict[str, dict[str, float]]:
    """The a-priori tolerances `analysis` gives on a retained read-back input (its evidence bytes), computed once
    per process for the same bytes, rates, beta1 and analysis: a pure function of them, which CORR-4 and CORR-8
    each ask for in every grade (on a TriMuon wiring record about 0.8 CPU-s a time, most of grading it)."""
    pairs, bounds = _input_pairs(raw)
    return analysis(pairs, list(learning_rates), beta1, bounds)


def _treatment_beta1(ctx: GradeContext) -> float:
    for arm in as_list((ctx.spec or {}).get("arms")):
        if isinstance(arm, dict) and arm.get("role") == "treatment":
            return float(as_dict(as_dict(arm.get("optimizer")).get("config")).get("beta1", 0.9))
    return 0.9


@implements("CORR-4")
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
            learning_rates = sorted({float(str(key).rsplit("@lr=", 1)[1]) for key in errors if "@lr=" in str(key)})
            recomputed = copy.deepcopy(_input_tolerances_of(raw, tuple(learning_rates), _treatment_beta1(ctx),
                                                            input_tolerances))
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


@rule("CORR-5", "correctness", "invalid|unverified", "LR scaling probes within the spec's tolerance, covering the planned rates")
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


@rule("CORR-6", "correctness", "invalid|unverified", "reported revisions are the pins, compared exactly; unresolved or revision-file pins: unverified")
def CORR_6(ctx: GradeContext) -> list[Issue]:
    """Reported revisions equal the pinned ones exactly (`CORR_6_reported`), and what is not pinned, or pinned only
    by the recorded revision, stays unverified (`CORR_6_pins`)."""
    return CORR_6_reported(ctx) + CORR_6_pins(ctx)


@implements("CORR-6")
def CORR_6_reported(ctx: GradeContext) -> list[Issue]:
    """Reported revisions equal the pinned ones exactly (a pin inside other text is not the pin)."""
    issues, recorded = [], _record_paths(ctx)
    for path_id in _spec_paths(ctx):
        pins, _ = _pins(ctx, path_id)
        record = as_dict(recorded.get(path_id))
        for key, pinned in pins.items():
            if _unresolved(pinned) or (key == "baseline_revision" and _same_code(record)):
                continue  # unresolved: CORR_6_pins; the same code on both sides names what ran: CORR-3 unverified
            if record and record.get(key) != pinned:
                issues.append(Issue("CORR-6", UNVERIFIED, f"path {path_id}: reported {key} {short(record.get(key))} is "
                                                          f"not the pinned {short(pinned)}"))
    return issues


@implements("CORR-6")
def CORR_6_pins(ctx: GradeContext) -> list[Issue]:
    """Pins the spec leaves UNRESOLVED, and pins the exchange's own spec does not carry (they come from the recorded
    revision), stay unverified: the exchange grades against its own spec."""
    issues = []
    for path_id in _spec_paths(ctx):
        pins, from_revision = _pins(ctx, path_id)
        issues += [Issue("CORR-6", UNVERIFIED, f"path {path_id}: the spec's {key} is UNRESOLVED, so the check stays "
                                               "unverified until a spec revision pins it")
                   for key, pinned in pins.items() if _unresolved(pinned)]
        if from_revision:
            issues.append(Issue("CORR-6", UNVERIFIED, f"path {path_id}: {EXCHANGE_NOTE}"))
    return issues


@implements("CORR-6")
def CORR_6_revision_check(ctx: GradeContext) -> list[Issue]:
    """CORR-6, the run's own comparison *(project reading)*: a path's `revision_check`, where it has one, is what
    the plan's pins and the reported revisions give (experiment.stats.correctness.revision_status)."""
    try:
        pins = as_dict(as_dict(ctx.plan.gate("correctness_preflight").details).get("revision_pins"))
    except (AttributeError, KeyError):
        return []
    issues = []
    for path_id, record in _record_paths(ctx).items():
        if "revision_check" in record and record["revision_check"] != revision_status(as_dict(pins.get(path_id)), record):
            issues.append(Issue("CORR-6", INVALID, f"path {path_id}: revision_check is not what the pins and the "
                                                   "reported revisions give"))
    return issues


@rule("CORR-8", "correctness", "unverified", "no full run while the correctness preflight is unresolved or failed")
def CORR_8(ctx: GradeContext) -> list[Issue]:
    if not (ctx.trained and ctx.result.get("status") == "succeeded"):
        return []
    blocking = [issue for check in (CORR_2, CORR_3, CORR_4, CORR_4_on_input, CORR_6) for issue in check(ctx)
                if not issue.message.endswith(EXCHANGE_NOTE)]  # revision pins are pinned: the run may go ahead
    if blocking:
        return [Issue("CORR-8", UNVERIFIED, "the full run went ahead while the correctness preflight was unresolved "
                                            "or not passed")]
    return []


@rule("CORR-9", "correctness", "unverified", "probe scripts and the fixed input are retained as their own evidence")
def CORR_9(ctx: GradeContext) -> list[Issue]:
    """The fixed input is retained as its own evidence file: one whose bytes hash to the digest, or
    whose JSON content's canonical hash is the digest (a digest merely mentioned in a file is not it)."""
    issues = []
    for path_id, record in _record_paths(ctx).items():
        digest = as_dict(record.get("fixed_input")).get("sha256")
        if not (isinstance(digest, str) and HEX64.match(digest)):
            issues.append(Issue("CORR-9", UNVERIFIED, f"path {path_id}: fixed_input.sha256 is not a 64-hex hash"))
        elif not any(_is_fixed_input(ctx, entry.get("name"), digest) for entry in ctx.evidence.entries):
            issues.append(Issue("CORR-9", UNVERIFIED, f"path {path_id}: the fixed input is not retained inline as evidence"))
        missing = sorted(_reference_hashes(record) - _retained_code_hashes(ctx))
        if missing:
            issues.append(Issue("CORR-9", UNVERIFIED, f"path {path_id}: the reference code it names (sha256 "
                                                      f"{', '.join(h[:12] for h in missing)}) is not retained: no probe "
                                                      "script or retained pipeline file hashes to it"))
    return issues


def _reference_hashes(record: dict[str, Any]) -> set[str]:
    """*(issue 45)* The hashes by which a path names its independent reference's code: `reference_file_sha256`, and
    every `<file>.py sha256:<hex>` of `reference_revision` (a package pin names no retained file)."""
    named = {record.get("reference_file_sha256")} if isinstance(record.get("reference_file_sha256"), str) else set()
    for match in _FILE_HASH.finditer(str(record.get("reference_revision") or "")):
        named.add(match.group(2) or match.group(3))
    return {digest for digest in named if HEX64.match(digest)}


def _retained_code_hashes(ctx: GradeContext) -> set[str]:
    """The sha256 of every usable evidence file and of every file of the retained pipeline code."""
    found = {ctx.evidence.sha256(entry.get("name")) for entry in ctx.evidence.entries if ctx.evidence.usable(entry.get("name"))}
    bundle = ctx.evidence.json(PIPELINE_CODE) if ctx.evidence.usable(PIPELINE_CODE) else None
    for entry in as_dict(as_dict(bundle).get("files")).values():
        content = as_dict(entry).get("content")
        if isinstance(content, str):
            found.add(hashlib.sha256(content.encode("utf-8")).hexdigest())
    return found


def _is_fixed_input(ctx: GradeContext, name: Any, digest: str) -> bool:
    if not ctx.evidence.usable(name):
        return False
    if ctx.evidence.sha256(name) == digest:
        return True
    value = ctx.evidence.json(name)
    try:
        return value is not None and canonical_sha256(value) == digest
    except (TypeError, ValueError):
        return False


_FILE_HASH = re.compile(r"([\w./-]+\.py)\s+sha256:([0-9a-f]{64})|sha256:([0-9a-f]{64})\s+\(([\w./-]+\.py)\)")


@rule("CORR-10", "correctness", "invalid|unverified", "every path names its implementation, precision and normalization")
def CORR_10(ctx: GradeContext) -> list[Issue]:
    """Every path names the implementation it tested, its precision and normalization, and a revision that names a pipeline file with
    its sha256 (`path sha256:<hex>` or `sha256:<hex> (path)`) is that file of the code revision."""
    issues = []
    listed = as_dict(as_dict(ctx.evidence.json("code-revision.json")).get("files_sha256"))
    for path_id, record in _record_paths(ctx).items():
        for key in ("implementation_revision", "precision", "normalization"):  # the contract's record names all three
            if not str(record.get(key) or "").strip():
                issues.append(Issue("CORR-10", UNVERIFIED, f"path {path_id}: no {key} says what was compared"))
        for key in ("implementation_revision", "baseline_revision", "reference_revision"):
            for match in _FILE_HASH.finditer(str(record.get(key) or "")):
                file, digest = (match.group(1), match.group(2)) if match.group(1) else (match.group(4), match.group(3))
                if file in listed and listed[file] != digest:
                    issues.append(Issue("CORR-10", INVALID, f"path {path_id}: {key} names {file} with another sha256 "
                                                            "than the code revision"))
    return issues


def _same_json(a: Any, b: Any) -> bool:
    if isinstance(b, dict):
        return isinstance(a, dict) and set(a) == set(b) and all(_same_json(a[k], b[k]) for k in b)
    if isinstance(b, list):  # probes are a set: their order is not measured
        if not isinstance(a, list) or len(a) != len(b):
            return False
        a, b = (sorted(v, key=lambda x: json.dumps(x, sort_keys=True)) if all(isinstance(x, dict) for x in v) else v
                for v in (a, b))
        return all(_same_json(x, y) for x, y in zip(a, b))
    if is_number(b):
        return is_number(a) and math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=0.0)
    return a == b and type(a) is type(b)


RECORD_ONLY_KEYS = ("revision_check",)  # added to the path record after the probe ran (CORR-6 checks it)


@rule("CORR-11", "correctness", "unverified", "the path record is the probe's own retained record")
def CORR_11(ctx: GradeContext) -> list[Issue]:
    """The path record is the probe's retained record (a JSON evidence file with the path's `id` and
    `errors`): the grader cannot re-run the probe, so RESULT's measured errors, revisions and probes
    must be the ones the probe wrote when it ran."""
    retained = {}
    for entry in ctx.evidence.entries:
        value = ctx.evidence.json(entry.get("name")) if str(entry.get("name", "")).endswith(".json") else None
        if isinstance(value, dict) and isinstance(value.get("errors"), dict) and value.get("id") is not None:
            retained[str(value["id"])] = (str(entry["name"]), value)
    issues = []
    for path_id, record in _record_paths(ctx).items():
        if path_id not in retained:
            issues.append(Issue("CORR-11", UNVERIFIED, f"path {path_id}: the probe's own record is not retained, so its "
                                                       "measured errors cannot be checked"))
            continue
        name, value = retained[path_id]
        differ = sorted(key for key in value if key != "id" and not _same_json(record.get(key), value[key]))
        differ += sorted(key for key in record if key not in value and key not in RECORD_ONLY_KEYS)
        if differ:
            issues.append(Issue("CORR-11", UNVERIFIED, f"path {path_id}: {', '.join(differ)} differ from the retained "
                                                       f"{name}, so which the probe measured cannot be told"))
    return issues


CHECKS = [CORR_1, CORR_2, CORR_3, CORR_3_same_code, CORR_4, CORR_4_on_input, CORR_5, CORR_6, CORR_6_revision_check, CORR_8, CORR_9, CORR_10,
          CORR_11]


@implements("CORR-1")
def CORR_1_stock_only(ctx: GradeContext) -> list[Issue]:
    """CORR-1 where no custom or forked path runs (the plan's gate not applicable): the record is {"required": false,
    "paths": []}, and a finished trained run has it."""
    if ctx.gate_applicable("correctness_preflight") is not False:
        return []
    record = as_dict(ctx.result.get("correctness_preflight"))
    if ctx.finished and ctx.trained and "correctness_preflight" not in ctx.result:
        return [Issue("CORR-1", UNVERIFIED, 'a stock-only run reports {"required": false, "paths": []}, and this '
                                            'record has none')]
    if record and (record.get("required") is not False or record.get("paths") != []):
        return [Issue("CORR-1", INVALID, 'a stock-only run reports {"required": false, "paths": []}')]
    return []


@implements("CORR-1")
def grade(ctx: GradeContext) -> CategoryGrade:
    if ctx.spec is None:
        return CategoryGrade(NAME, UNKNOWN, [Issue("CORR-1", UNKNOWN, "no spec to grade correctness against")])
    applicable = ctx.gate_applicable("correctness_preflight")
    record = as_dict(ctx.result.get("correctness_preflight"))
    if applicable is False:
        stock_only = CORR_1_stock_only(ctx)
        if stock_only:
            return CategoryGrade(NAME, stock_only[0].status, stock_only)
        return CategoryGrade(NAME, NOT_APPLICABLE, notes=[ctx.gate_reason("correctness_preflight")])
    if applicable is not True:
        return CategoryGrade(NAME, UNKNOWN, [Issue("CORR-1", UNKNOWN, ctx.gate_reason("correctness_preflight"))])
    if not record and not ctx.trained and ctx.result.get("status") == "running":
        return CategoryGrade(NAME, UNKNOWN, [Issue("CORR-1", UNKNOWN, "no correctness record yet")])
    return run_checks(NAME, CHECKS, ctx)
