"""Minimal contexts of the general and evidence rules (experiment/grading/general.py, GEN-*, EVID-*, SEC-1)."""

from __future__ import annotations

from types import SimpleNamespace

from experiment.grading.evidence import EvidenceAccess


def context(result, plan=None, events=None, gate=None):
    return SimpleNamespace(result=result, plan=plan, events=events, run_dir=None, spec_source=None, spec=None,
                           evidence=EvidenceAccess(result),
                           finished=result.get("status") in ("succeeded", "failed"),
                           gate_applicable=lambda name: gate)
