"""The grader's record-level evidence rules (experiment/grading/general.py; docs/contract-rules.md
EVID-1: `evidence` is an object with version 1, URLs are HTTPS /attachments/), on a minimal context."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from experiment.grading import general as rules
from experiment.grading.evidence import EvidenceAccess


def _evid1(evidence):
    result = {"evidence": evidence}
    return rules.EVID_1(SimpleNamespace(result=result, evidence=EvidenceAccess(result)))


def test_evidence_version_1_with_inline_content_passes():
    assert _evid1({"version": 1, "files": [{"name": "a.txt", "content": "x", "sha256": "0" * 64}]}) == []


@pytest.mark.parametrize("evidence", [{"version": 2, "files": []}, {"version": 0, "files": []},
                                      {"files": []}, ["version", 1]],
                         ids=["version 2", "version 0", "no version", "not an object"])
def test_evidence_that_is_not_an_object_with_version_1_is_unknown(evidence):
    assert [(issue.rule, issue.status) for issue in _evid1(evidence)] == [("EVID-1", "unknown")]


def test_a_source_url_that_is_not_an_https_attachment_is_invalid():
    issues = _evid1({"version": 1, "files": [{"name": "a.txt", "source_url": "http://example.org/attachments/a"}]})
    assert [(issue.rule, issue.status) for issue in issues] == [("EVID-1", "invalid")]
