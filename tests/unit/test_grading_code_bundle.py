"""EVID-10: the retained pipeline code is the code the code revision names. A run against a remote service
(TINKER_BASE_URL, --backend: Spindle in production) retains the pipeline's own directories only, since the
embedded backend's sources did not serve it; the code revision lists every code directory of the checkout.
Found on a TriMuon rehearsal against `python -m embedded_tinker serve` on its own URL: EVID-10 listed the
embedded backend's files as missing, a problem on every record of a run against a service URL."""

from __future__ import annotations

import json
from types import SimpleNamespace

from experiment.contract.result_models import evidence_file
from experiment.grading import general
from experiment.grading.evidence import EvidenceAccess
from experiment.report.code_revision import code_revision, pipeline_code_bundle


def _ctx(bundle: dict, revision: dict) -> SimpleNamespace:
    files = [evidence_file(general.PIPELINE_CODE, "script", json.dumps(bundle).encode()),
             evidence_file(general.CODE_REVISION, "code_revision", json.dumps(revision).encode())]
    return SimpleNamespace(evidence=EvidenceAccess({"evidence": {"version": 1, "files": files}}))


def _issues(bundle: dict, revision: dict) -> list[str]:
    return [issue.message for issue in general.EVID_10(_ctx(bundle, revision))]


def test_a_run_against_a_service_url_retains_the_pipeline_alone_and_passes():
    revision = code_revision()
    assert _issues(json.loads(pipeline_code_bundle(include_backend=False)), revision) == []
    assert _issues(json.loads(pipeline_code_bundle(include_backend=True)), revision) == []


def test_a_pipeline_file_left_out_is_found_even_with_its_directory_unlisted():
    revision = code_revision()
    bundle = json.loads(pipeline_code_bundle(include_backend=False))
    dropped = "experiment/grading/general.py"
    del bundle["files"][dropped]
    assert any(dropped in message for message in _issues(bundle, revision))
    bundle["directories"] = [d for d in bundle["directories"] if d != "experiment"]  # a tamperer hides the gap
    assert any(dropped in message for message in _issues(bundle, revision))


def test_a_backend_file_left_out_of_a_bundle_that_says_it_holds_the_backend_is_found():
    revision = code_revision()
    bundle = json.loads(pipeline_code_bundle(include_backend=True))
    dropped = next(path for path in bundle["files"] if path.startswith("embedded_tinker/"))
    del bundle["files"][dropped]
    assert any(dropped in message for message in _issues(bundle, revision))
