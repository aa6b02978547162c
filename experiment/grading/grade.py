"""Grade a RESULT as the exchange does: one status per category, plus record-level problems.

`grade_record(result, run_dir=None, spec=None)` is the entry point (the flow's decision gate and
`python -m flows.validate` call it). `load_input(path)` reads a run directory or a bare result.json.

Spec: by default the spec recorded in the run's evidence (`spec.json`, kind `spec`, plus its
recorded revision `spec-revision.plan.json`, kind `spec_revision`) read from the record's inline
content; in a run directory, from `evidence/` when the record does not carry it inline. Or a spec
path (`specs/x.json`, with `specs/x.plan.json` beside it; for a rehearsal record, rehearsed by the rules at
the record's scale, with the SPEC-2 checks), a loaded `Spec` or a spec dict.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from experiment.grading import correctness, decision, evaluator, feasibility, generation_audit, restoration
from experiment.grading.common import (CATEGORIES, INVALID, NOT_APPLICABLE, PASS, UNVERIFIED, CategoryGrade, Grade, GradeContext,
                                      Issue)
from experiment.grading.evidence import EvidenceAccess, each_key_once
from experiment.grading.general import general_issues
from experiment.grading.input_limits import oversized_input
from experiment.grading.precedence import with_precedence
from experiment.grading.registry import SHAPE_RULES, implements, rule
from experiment.grading.run_dir import RunDirError, read_event_lines, run_validation
from experiment.grading.traces import self_grade_problems
from experiment.contract.plan import draft_plan
from experiment.contract.rehearsal import rules_sha256
from experiment.contract.run_layout import evidence_path, result_path
from experiment.contract.spec import (Spec, SpecError, SpecRevision, SpecSource, apply_revision, canonical_sha256, load_spec,
                             parse_spec, plan_file_path)

REHEARSAL_SPEC_NAME = "rehearsal-spec.json"

CATEGORY_MODULES = {"evaluator": evaluator, "decision": decision, "restoration": restoration,
                    "correctness": correctness, "feasibility": feasibility, "generation_audit": generation_audit}
assert tuple(CATEGORY_MODULES) == CATEGORIES


class GradeInputError(ValueError):
    """Unreadable input: one line, no traceback (exit status 2)."""


def load_input(path: str | Path) -> tuple[dict[str, Any], Path | None]:
    """(RESULT, run directory or None) from a run directory or a bare result.json."""
    path = Path(path)
    run_dir = None
    if path.is_dir():
        run_dir, path = path, result_path(path)
        if not path.is_file():
            raise GradeInputError(f"{run_dir} is not a run directory (no result.json)")
    elif not path.is_file():
        raise GradeInputError(f"{path}: no such file or directory")
    too_large = oversized_input(path, run_dir)  # before any byte is read
    if too_large:
        raise GradeInputError(too_large)
    try:
        result = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=each_key_once)
    except (OSError, UnicodeDecodeError, ValueError) as err:  # json.JSONDecodeError is a ValueError
        raise GradeInputError(f"{path}: cannot read RESULT ({type(err).__name__}: {err})") from None
    if not isinstance(result, dict):
        raise GradeInputError(f"{path}: RESULT must be a JSON object")
    return result, run_dir


@implements("EVID-8")
def read_events(run_dir: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The run's events and an EVID-8 problem per line that is not JSON (a JSON line that is no object is skipped
    here; the run-dir layer reports it, events.format)."""
    events, not_json, _ = read_event_lines(run_dir)
    return events, [f"EVID-8: events.jsonl line {number} is not JSON." for number in not_json]


def _recorded_spec(result: dict[str, Any], evidence: EvidenceAccess,
                   run_dir: Path | None) -> tuple[Spec | None, str | None, tuple[str, ...], str | None]:
    """(spec, source text, fields the revision supplied, problem) from the run's own records."""
    def named(kind: str, default: str) -> str:
        entry = next((e for e in evidence.entries if e.get("kind") == kind), None)
        return str(entry.get("name")) if entry else default

    def read(name: str) -> tuple[Any, str]:
        if evidence.usable(name):
            return evidence.json(name), "inline"
        if run_dir is not None and name in evidence.by_name and evidence_path(run_dir, name).is_file():
            try:
                return json.loads(evidence_path(run_dir, name).read_text(encoding="utf-8")), "evidence/"
            except (OSError, UnicodeDecodeError, json.JSONDecodeError):
                return None, ""
        return None, ""

    spec_name, revision_name = named("spec", "spec.json"), named("spec_revision", "spec-revision.plan.json")
    raw, where = read(spec_name)
    if not isinstance(raw, dict):
        return None, None, (), ("the run's spec is not carried inline (evidence spec.json), so every spec-dependent "
                                "rule is unknown; pass --spec")
    revision, _ = read(revision_name) if revision_name in evidence.by_name else (None, "")
    merged, supplied = dict(raw), ()
    try:
        if isinstance(revision, dict):  # merged exactly as load_spec merges a revision file
            supplied = tuple(sorted(revision))
            if not isinstance(result.get("rehearsal"), dict):  # a rehearsal's recorded spec has it merged already
                merged, _ = apply_revision(raw, revision, revision_name)
        spec = parse_spec(merged)
    except (SpecError, TypeError, ValueError, KeyError) as err:
        return None, None, (), f"the recorded spec does not parse ({err})"
    rev = SpecRevision(path=revision_name, sha256=canonical_sha256(revision), supplied=list(supplied)) \
        if isinstance(revision, dict) else None
    spec._source = SpecSource(path=f"recorded:{spec_name}", file_sha256=canonical_sha256(raw),
                              sha256=canonical_sha256(merged) if rev else canonical_sha256(raw), revision=rev)
    text = f"the run's recorded {spec_name} ({where})" + (f" + revision {revision_name}" if rev else "")
    return spec, text, supplied, None


def _given_spec(spec: Any, rehearsal: dict[str, Any] | None) -> tuple[Spec, str, tuple[str, ...]]:
    """A spec path is read with its revision file; a rehearsal record's spec path is rehearsed by the
    rules at the record's scale, exactly as a spec of SPECS_DIR is (_attested): the record ran that."""
    if isinstance(spec, (str, Path)):
        if rehearsal is not None:
            loaded = load_spec(spec, rehearse=True, rehearsal_scale=str(rehearsal.get("scale")))
        else:
            loaded = load_spec(spec)
        revision = loaded.source.revision
        text = f"{spec}" + (f" + revision {revision.path}" if revision else "")
        text += f", rehearsed at the {rehearsal.get('scale')} scale by the rules" if rehearsal is not None else ""
        return loaded, text, tuple(revision.supplied) if revision else ()
    if isinstance(spec, Spec):
        try:
            revision = spec.source.revision
        except RuntimeError:
            revision = None
        return spec, "the given spec", tuple(revision.supplied) if revision else ()
    parsed = parse_spec(dict(spec))
    parsed._source = SpecSource(path="given", file_sha256=canonical_sha256(spec), sha256=canonical_sha256(spec),
                                revision=None)
    return parsed, "the given spec", ()


SPECS_DIR = Path(__file__).resolve().parents[2] / "specs"  # the exchange's specs as written (+ revision files)


@dataclass
class Attestation:
    """The spec a record is graded against when none is given, and whether it is attested: the
    record's spec.json and revision are a spec of SPECS_DIR as written with its revision file, and a
    rehearsal's spec is the one the rehearsal rules derive from it at the record's scale."""

    spec: Spec | None = None
    source: str | None = None
    supplied: tuple[str, ...] = ()
    problems: list[str] = field(default_factory=list)  # SPEC-1 (not attested), SPEC-2 (rehearsal differs)


def _spec_as_written(result: dict[str, Any], evidence: EvidenceAccess) -> tuple[Path | None, bool, str]:
    """(the path in SPECS_DIR whose file and revision file are the record's spec.json and revision,
    whether the record carries that revision, why not). A record that carries no revision is attested
    by its spec.json alone: it ran the exchange's spec as written (as a run of another pipeline does)."""
    def carried(kind: str, default: str) -> Any:
        entry = next((e for e in evidence.entries if e.get("kind") == kind and e.get("name") == default), None)
        return evidence.json(entry.get("name")) if entry else None

    raw, revision = carried("spec", "spec.json"), carried("spec_revision", "spec-revision.plan.json")
    if not isinstance(raw, dict):
        return None, False, "the record carries no readable spec.json"
    wanted = (canonical_sha256(raw), canonical_sha256(revision) if isinstance(revision, dict) else None)
    for path in sorted(SPECS_DIR.glob("*.json")):
        if path.name.endswith(".plan.json"):
            continue
        try:
            mine = json.loads(path.read_text(encoding="utf-8"))
            plan = plan_file_path(path)
            plan_sha = canonical_sha256(json.loads(plan.read_text(encoding="utf-8"))) if plan.is_file() else None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if (canonical_sha256(mine), plan_sha) == wanted:
            return path, plan_sha is not None, ""
        if canonical_sha256(mine) == wanted[0] and wanted[1] is None:
            return path, False, ""
    return None, False, (f"its spec.json (sha256 {wanted[0][:12]}...) with its revision is not a spec of {SPECS_DIR.name}/ as "
                  "written with its revision file")


@rule("SPEC", "record", "problem", "the spec graded against cannot be read, parsed or planned: spec-dependent rules are unknown")
@rule("SPEC-1", "record", "unverified|problem", "a record whose spec cannot be attested grades every category unverified")
@rule("SPEC-2", "record", "problem", "a rehearsal record is the rehearsal the rules derive from the attested spec")
def _attested(result: dict[str, Any], evidence: EvidenceAccess, run_dir: Path | None) -> Attestation:
    path, with_revision, why = _spec_as_written(result, evidence)
    rehearsal = result.get("rehearsal") if isinstance(result.get("rehearsal"), dict) else None
    if path is None:
        spec, source, supplied, problem = _recorded_spec(result, evidence, run_dir)
        problems = [f"SPEC-1: the record's spec cannot be attested: {why}; every category is graded unverified."]
        return Attestation(spec, source, supplied, problems + ([f"SPEC: {problem}."] if problem else []))
    try:
        if with_revision:
            spec = load_spec(path, rehearse=rehearsal is not None, rehearsal_scale=str((rehearsal or {}).get("scale")))
        else:
            raw = json.loads(path.read_text(encoding="utf-8"))
            spec = parse_spec(raw)
            spec._source = SpecSource(path=str(path), file_sha256=canonical_sha256(raw), sha256=canonical_sha256(raw),
                                      revision=None)
    except SpecError as err:
        return Attestation(None, None, (), [f"SPEC-1: {path.name} does not load ({err}); every category is graded "
                                            "unverified."])
    revision = spec.source.revision
    supplied = tuple(revision.supplied) if revision else ()
    text = f"{SPECS_DIR.name}/{path.name}" + (f" + revision {Path(revision.path).name}" if revision else "")
    problems = []
    if rehearsal is not None and not with_revision:
        problems.append("SPEC-2: a rehearsal record without its revision file cannot be re-derived.")
    elif rehearsal is not None:
        text += f", rehearsed at the {rehearsal.get('scale')} scale by the rules"
        problems += _rehearsal_problems(result, evidence, spec)
    return Attestation(spec, text, supplied, problems)


@implements("SPEC-2")
def _rehearsal_problems(result: dict[str, Any], evidence: EvidenceAccess, spec: Spec) -> list[str]:
    """SPEC-2: the record's rehearsal spec and rehearsal record are the ones the rules derive."""
    derived = dict(spec.source.rehearsal or {})
    recorded = result["rehearsal"]
    problems = []
    if recorded.get("rules_sha256") != rules_sha256():
        problems.append("SPEC-2: the rehearsal rules changed since this run (rules_sha256 differs), so its rehearsal "
                        "cannot be re-derived; re-run it.")
    carried = evidence.json(REHEARSAL_SPEC_NAME) if REHEARSAL_SPEC_NAME in evidence.by_name else None
    if carried is not None and canonical_sha256(carried) != canonical_sha256(spec.to_dict()):
        problems.append(f"SPEC-2: {REHEARSAL_SPEC_NAME} is not the rehearsal the rules derive from the spec as written; "
                        "graded against the derived one.")
    differ = sorted(k for k, v in derived.items() if k != "deviations" and recorded.get(k) != v)
    if differ:
        problems.append(f"SPEC-2: RESULT.rehearsal {', '.join(differ)} differ from the re-derived rehearsal record.")
    posted = {json.dumps(d, sort_keys=True) for d in result.get("deviations") or [] if isinstance(d, dict)}
    missing = [d for d in derived.get("deviations") or [] if json.dumps(d, sort_keys=True) not in posted]
    if missing:
        problems.append(f"SPEC-2: {len(missing)} substitution(s) of the rehearsal are not in RESULT.deviations "
                        f"(first: {missing[0].get('reason')}).")
    return problems


@implements("SPEC-1")
def _unattested(categories: dict[str, CategoryGrade], why: str) -> None:
    """Without an attested spec nothing spec-dependent is verified: a category that would pass (or
    opt out, which the spec decides too) is unverified, with the reason."""
    for grade_ in categories.values():
        if grade_.status in (PASS, NOT_APPLICABLE):
            grade_.status = UNVERIFIED
            grade_.issues.append(Issue("SPEC-1", UNVERIFIED, why))


def _graded(name: str, module: Any, ctx: GradeContext) -> CategoryGrade:
    """One category's grade; a record too malformed for the category's own guards is invalid there, under the
    category's shape rule (rules.SHAPE_RULES). Missing evidence takes precedence (experiment.grading.precedence)."""
    try:
        return with_precedence(module.grade(ctx))
    except (AttributeError, KeyError, TypeError, ValueError, IndexError, ZeroDivisionError, OverflowError) as err:
        return CategoryGrade(name, INVALID, [Issue(SHAPE_RULES[name], INVALID, f"the record has an unexpected shape "
                                                                               f"({type(err).__name__}: {err})")])


@implements("SPEC")
def grade_record(result: dict[str, Any], run_dir: str | Path | None = None, spec: Any = None,
                 self_consistency: bool = True) -> Grade:
    """Grade one RESULT. `run_dir` grades it by the same rules as a bare result.json and adds the run
    directory's checks: EVID-8 (events/tables/evidence agree with the record) and, with `self_consistency`,
    the run-dir layer (experiment.grading.run_dir; its findings go to `problems` as "<check>: <message>")."""
    run_dir = Path(run_dir) if run_dir is not None else None
    evidence = EvidenceAccess(result)
    problems: list[str] = []
    attestation = None
    if spec is None:
        attestation = _attested(result, evidence, run_dir)
        spec_obj, source, supplied = attestation.spec, attestation.source, attestation.supplied
        problems += attestation.problems
    else:
        rehearsal = result.get("rehearsal") if isinstance(result.get("rehearsal"), dict) else None
        try:
            spec_obj, source, supplied = _given_spec(spec, rehearsal)
        except SpecError as err:
            raise GradeInputError(f"spec: {err}") from None
        if rehearsal is not None and isinstance(spec, (str, Path)):
            problems += _rehearsal_problems(result, evidence, spec_obj)
    events, event_problems = read_events(run_dir) if run_dir is not None else (None, [])
    problems += event_problems
    plan = None
    if spec_obj is not None:
        try:
            plan = draft_plan(spec_obj)
        except (SpecError, KeyError, TypeError, ValueError) as err:
            problems.append(f"SPEC: no execution plan can be built from the spec graded against ({err}).")
            spec_obj = None
    ctx = GradeContext(result=result, evidence=evidence, spec=spec_obj.to_dict() if spec_obj else None, spec_model=spec_obj,
                       plan=plan, spec_source=source, revision_fields=supplied, run_dir=run_dir, events=events)
    categories = {name: _graded(name, module, ctx) for name, module in CATEGORY_MODULES.items()}
    if attestation is not None and any(p.startswith("SPEC-1") for p in attestation.problems):
        _unattested(categories, "the record's spec cannot be attested (SPEC-1), so the spec it is graded against may "
                                "not be the one it ran")
    problems += [issue.sentence() for issue in general_issues(ctx)]
    if run_dir is not None and self_consistency:
        try:
            problems += [f"{p.check}: {p.message}" for p in run_validation(run_dir).problems]
        except RunDirError as err:
            problems.append(f"run: {err}")
    if spec is None and "grade" in result:  # TRACE-8: the run's grade of itself, as it posted it (bare, unsaid spec)
        fresh = Grade(categories=categories, problems=list(problems), spec_source=source) if run_dir is None else \
            grade_record({k: v for k, v in result.items() if k != "grade"}, self_consistency=False)
        problems += self_grade_problems(result["grade"], fresh.record())
    return Grade(categories=categories, problems=problems, spec_source=source, spec=spec_obj)


def grade_path(path: str | Path, spec: Any = None) -> Grade:
    result, run_dir = load_input(path)
    return grade_record(result, run_dir=run_dir, spec=spec)
