"""Grade a RESULT as the exchange does: one status per category, plus record-level problems.

`grade_record(result, run_dir=None, spec=None)` is the entry point (the flow's decision gate and
`python -m flows.validate` call it). `load_input(path)` reads a run directory or a bare result.json.

Spec: by default the spec recorded in the run's evidence (`spec.json`, kind `spec`, plus its
recorded revision `spec-revision.plan.json`, kind `spec_revision`) read from the record's inline
content; in a run directory, from `evidence/` when the record does not carry it inline. Or a spec
path (`specs/x.json`, with `specs/x.plan.json` beside it), a loaded `Spec` or a spec dict.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from experiment.grading import correctness, decision, evaluator, feasibility, generation_audit, restoration
from experiment.grading.common import CATEGORIES, Grade, GradeContext
from experiment.grading.evidence import EvidenceAccess
from experiment.grading.general import general_issues
from experiment.contract.plan import draft_plan
from experiment.contract.spec import (Spec, SpecError, SpecRevision, SpecSource, apply_revision, canonical_sha256, load_spec,
                             parse_spec)

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
        run_dir, path = path, path / "result.json"
        if not path.is_file():
            raise GradeInputError(f"{run_dir} is not a run directory (no result.json)")
    elif not path.is_file():
        raise GradeInputError(f"{path}: no such file or directory")
    try:
        result = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise GradeInputError(f"{path}: cannot read RESULT ({type(err).__name__}: {err})") from None
    if not isinstance(result, dict):
        raise GradeInputError(f"{path}: RESULT must be a JSON object")
    return result, run_dir


def read_events(run_dir: Path) -> tuple[list[dict[str, Any]], list[str]]:
    events, problems = [], []
    path = run_dir / "events.jsonl"
    if not path.is_file():
        return [], []
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            problems.append(f"EVID-8: events.jsonl line {number} is not JSON.")
            continue
        if isinstance(event, dict):
            events.append(event)
    return events, problems


def _recorded_spec(result: dict[str, Any], evidence: EvidenceAccess,
                   run_dir: Path | None) -> tuple[Spec | None, str | None, tuple[str, ...], str | None]:
    """(spec, source text, fields the revision supplied, problem) from the run's own records."""
    def named(kind: str, default: str) -> str:
        entry = next((e for e in evidence.entries if e.get("kind") == kind), None)
        return str(entry.get("name")) if entry else default

    def read(name: str) -> tuple[Any, str]:
        if evidence.usable(name):
            return evidence.json(name), "inline"
        if run_dir is not None and name in evidence.by_name and (run_dir / "evidence" / name).is_file():
            try:
                return json.loads((run_dir / "evidence" / name).read_text(encoding="utf-8")), "evidence/"
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
    except SpecError as err:
        return None, None, (), f"the recorded spec does not parse ({err})"
    rev = SpecRevision(path=revision_name, sha256=canonical_sha256(revision), supplied=list(supplied)) \
        if isinstance(revision, dict) else None
    spec._source = SpecSource(path=f"recorded:{spec_name}", file_sha256=canonical_sha256(raw),
                              sha256=canonical_sha256(merged) if rev else canonical_sha256(raw), revision=rev)
    text = f"the run's recorded {spec_name} ({where})" + (f" + revision {revision_name}" if rev else "")
    return spec, text, supplied, None


def _given_spec(spec: Any) -> tuple[Spec, str, tuple[str, ...]]:
    if isinstance(spec, (str, Path)):
        loaded = load_spec(spec)
        revision = loaded.source.revision
        text = f"{spec}" + (f" + revision {revision.path}" if revision else "")
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


def grade_record(result: dict[str, Any], run_dir: str | Path | None = None, spec: Any = None,
                 self_consistency: bool = True) -> Grade:
    """Grade one RESULT. `run_dir` adds the run directory's events/tables/evidence checks and the
    self-consistency checks of experiment.report.validation (their findings go to `problems`)."""
    run_dir = Path(run_dir) if run_dir is not None else None
    evidence = EvidenceAccess(result)
    problems: list[str] = []
    if spec is None:
        spec_obj, source, supplied, problem = _recorded_spec(result, evidence, run_dir)
        if problem:
            problems.append(f"SPEC: {problem}.")
    else:
        try:
            spec_obj, source, supplied = _given_spec(spec)
        except SpecError as err:
            raise GradeInputError(f"spec: {err}") from None
    events, event_problems = read_events(run_dir) if run_dir is not None else (None, [])
    problems += event_problems
    ctx = GradeContext(result=result, evidence=evidence, spec=spec_obj.to_dict() if spec_obj else None,
                       plan=draft_plan(spec_obj) if spec_obj else None, spec_source=source,
                       revision_fields=supplied, run_dir=run_dir, events=events)
    categories = {name: module.grade(ctx) for name, module in CATEGORY_MODULES.items()}
    problems += [issue.sentence() for issue in general_issues(ctx)]
    if run_dir is not None and self_consistency:
        from experiment.report.validation import RunDirError, run_validation

        try:
            problems += [f"{p.check}: {p.message}" for p in run_validation(run_dir).problems]
        except RunDirError as err:
            problems.append(f"run: {err}")
    return Grade(categories=categories, problems=problems, spec_source=source)


def grade_path(path: str | Path, spec: Any = None) -> Grade:
    result, run_dir = load_input(path)
    return grade_record(result, run_dir=run_dir, spec=spec)
