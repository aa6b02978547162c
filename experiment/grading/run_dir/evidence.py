"""The run directory as the contract rules read a record: its RESULT, the spec it ran, and its evidence/ files
through the contract rules' own evidence reader (experiment.grading.evidence.EvidenceAccess), so that a run-dir
check that restates a contract rule runs that rule's one implementation on the run directory's files."""

from __future__ import annotations

import hashlib

from experiment.grading.common import GradeContext
from experiment.grading.evidence import CORRUPT, MISSING, USABLE, EvidenceAccess
from experiment.grading.run_dir.files import _RunFiles


class RunDirEvidence(EvidenceAccess):
    """The files evidence/manifest.json lists, read from evidence/ on disk (not RESULT's inline copies) and checked
    against the manifest's sha256: what the run retained, as the contract rules read a record's evidence."""

    def __init__(self, files: _RunFiles):
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


def contract_context(files: _RunFiles) -> GradeContext:
    """The context a contract rule's check takes, for this run directory (no plan object: a rule that needs one
    is not restated here)."""
    return GradeContext(result=files.result, evidence=RunDirEvidence(files), spec=files.spec, run_dir=files.run_dir,
                        events=files.events)
