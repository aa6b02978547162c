"""Minimal contexts of the general and evidence rules (experiment/grading/general.py, GEN-*, EVID-*, SEC-1)."""

from __future__ import annotations

from types import SimpleNamespace

from experiment.contract.plan import draft_plan
from experiment.grading import grade
from experiment.grading.common import GradeContext
from experiment.grading.evidence import EvidenceAccess


def context(result, plan=None, events=None, gate=None):
    return SimpleNamespace(result=result, plan=plan, events=events, run_dir=None, spec_source=None, spec=None,
                           evidence=EvidenceAccess(result),
                           finished=result.get("status") in ("succeeded", "failed"),
                           gate_applicable=lambda name: gate)


def attested_context(result, events=None, run_dir=None):
    """A whole record's grading context, its spec attested from the record as the grader attests it (the traces and
    run-file rules read the spec, the plan, the events and the run directory)."""
    evidence = EvidenceAccess(result)
    spec = grade._attested(result, evidence, None).spec
    return GradeContext(result=result, evidence=evidence, spec=spec.to_dict(), spec_model=spec, plan=draft_plan(spec),
                        run_dir=run_dir, events=events)


def attested_messages(check, result, **kwargs):
    """The messages `check` finds in a whole record (attested_context's keywords)."""
    return [issue.message for issue in check(attested_context(result, **kwargs))]
