"""The run directory as the contract rules read a record: its RESULT, the spec it ran (typed, with the execution plan
the contract derives from it) and its evidence/ files through the contract rules' own evidence reader
(experiment.grading.evidence.EvidenceAccess), so that a run-dir check that restates a contract rule runs that rule's
one implementation on the run directory's files."""

from __future__ import annotations

import hashlib
from typing import Any

from experiment.contract.plan import ExecutionPlan, draft_plan
from experiment.contract.spec import Spec, SpecError, SpecRevision, SpecSource, canonical_sha256, parse_spec
from experiment.grading.common import GradeContext, as_dict
from experiment.grading.evidence import CORRUPT, MISSING, USABLE, EvidenceAccess
from experiment.grading.run_dir.files import RunFiles


class RunDirEvidence(EvidenceAccess):
    """The files evidence/manifest.json lists, read from evidence/ on disk (not RESULT's inline copies) and checked
    against the manifest's sha256: what the run retained, as the contract rules read a record's evidence."""

    def __init__(self, files: RunFiles):
        super().__init__({"evidence": {"files": files.evidence_entries}})
        self._files = files

    def _load(self, name: str) -> tuple[str, bytes | None, str]:
        if name not in self.by_name:
            return MISSING, None, f"{name} is not a retained evidence file"
        data = self._files.evidence_bytes(name)
        if data is None:
            return MISSING, None, f"{name} is listed in evidence/manifest.json but is not in evidence/"
        digest = self.by_name[name].get("sha256")
        if digest is not None and hashlib.sha256(data).hexdigest() != digest:
            return CORRUPT, None, f"{name}: its bytes do not hash to the manifest's sha256"
        return USABLE, data, ""


def typed_spec(files: RunFiles) -> tuple[Spec | None, ExecutionPlan | None, str]:
    """(the spec the run ran, typed; the execution plan the contract derives from it (experiment.contract.plan);
    why not, when it cannot be built). Built from the run directory's retained spec (spec.json with its revision, or
    rehearsal-spec.json for a rehearsal), never from the retained plan's word: the retained plan supplies only where
    the spec came from (its path, whose name fixes the vocabulary, hash, revision and rehearsal record)."""
    if not isinstance(files.spec, dict):
        return None, None, "no retained spec"
    recorded = as_dict(files.plan)
    created = next((event for event in files.events if event.get("event") == "run_created"), {})
    path = recorded.get("spec_path") or created.get("spec_path") or "spec.json"
    revision = as_dict(recorded.get("spec_revision"))
    try:
        spec = parse_spec(dict(files.spec))
        digest = canonical_sha256(files.spec)
        spec._source = SpecSource(
            path=str(path), file_sha256=digest, sha256=str(recorded.get("spec_sha256") or digest),
            revision=SpecRevision(str(revision.get("path")), str(revision.get("sha256")),
                                  list(revision.get("supplied") or []), list(revision.get("resolved") or []))
            if revision else None,
            rehearsal=recorded.get("rehearsal") if isinstance(recorded.get("rehearsal"), dict) else None)
        return spec, draft_plan(spec), ""
    except (SpecError, KeyError, TypeError, ValueError) as err:
        return None, None, f"the retained spec does not parse or plan ({err})"


def contract_context(files: RunFiles, spec: Spec | None = None, plan: Any = None) -> GradeContext:
    """The context a contract rule's check takes, for this run directory: RESULT, events, evidence/ and the typed spec
    and plan (`typed_spec`)."""
    return GradeContext(result=files.result, evidence=RunDirEvidence(files), spec=files.spec, spec_model=spec,
                        plan=plan, run_dir=files.run_dir, events=files.events)
