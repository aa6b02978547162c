"""A gap the mutation run of experiment/grading/run_dir.py showed (issue 28 item 7, helper rd2): the run-directory
validator's `provenance.unverified` (REST-6: "Actual optimizer family and config come from a server response")
only refuses an optimizer check whose `source` is exactly "declared". REST-6 asks `source: server_response`
(the exchange grader, experiment/grading/restoration.py, grades any other source unverified), so a check whose
actual family and config come from another source passes validate_run. Kept as a strict xfail until the
validator is mended (then the mutant `source <= "declared"` of run_dir.py's check is no longer a survivor)."""

from __future__ import annotations

import shutil

import pytest
from test_validation import BASELINE, build_gs1_run, rewrite_result

from experiment.grading.run_dir import validate_run
from experiment.run.store import RunStore


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> RunStore:
    return build_gs1_run(tmp_path_factory.mktemp("run-dir-bug-rd2") / "runs")


@pytest.mark.xfail(strict=True, reason="run_dir.py refuses only source 'declared'; REST-6 asks server_response")
@pytest.mark.parametrize("source", ["client_echo", "local_hash", None], ids=["client_echo", "local_hash", "no source"])
def test_an_optimizer_check_from_another_source_than_a_server_response_is_unverified(built, tmp_path, source):
    runs = shutil.copytree(built.run_dir.parent, tmp_path / "runs")
    store = RunStore.open(runs / built.run_dir.name)
    record = store.read_result()["initialization_provenance"]
    check = record["arms"][BASELINE]["optimizer_checks"][0]
    if source is None:
        del check["source"]
    else:
        check["source"] = source
    rewrite_result(store, initialization_provenance=record)
    assert "provenance.unverified" in {problem.check for problem in validate_run(store.run_dir)}
