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


def test_evid1_partial_entries_are_named_and_more_than_six_end_with_an_ellipsis():
    seven = [{"name": f"f{i}", "sha256": "0" * 64} for i in range(7)]
    (issue,) = _evid1({"version": 1, "files": seven})
    assert (issue.rule, issue.status) == ("EVID-1", "unverified")
    assert issue.message == "7 of 7 evidence files carry no inline content (partial): f0, f1, f2, f3, f4, f5 ..."
    (issue,) = _evid1({"version": 1, "files": seven[:2]})
    assert issue.message == "2 of 2 evidence files carry no inline content (partial): f0, f1"


def test_sec1_scans_small_files_of_the_run_directory(tmp_path, monkeypatch):
    from experiment.grading import secrets as secret_scan

    for name in secret_scan.CREDENTIAL_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "train.log").write_text("client = ServiceClient(api_key='tml-" + "Ab3dEf6hIj9kLm2nOp5q')\n")
    (tmp_path / "notes.txt").write_text("nothing to see\n")
    result = {"evidence": {"version": 1, "files": []}}
    ctx = SimpleNamespace(result=result, evidence=EvidenceAccess(result), run_dir=tmp_path)
    issues = rules.SEC_1(ctx)
    assert [(issue.rule, issue.status) for issue in issues] == [("SEC-1", "invalid")]
    assert issues[0].message.startswith("logs/train.log contains ")
