"""REST-6 in the run-directory layer: an optimizer check's actual family and config count only from a server
response (docs/contract-rules.md `provenance.optimizer_mismatch`, which runs REST-6's one implementation,
experiment/grading/restoration.py: any other source grades unverified). Found by
helper rd2: the validator refused only `source: "declared"`, so a check from another source, or none, passed; this
test ran as a strict xfail on that code (3 of 3 cases accepted) and holds the fix. The stock server_response
record (build_gs1_run) is the other side: no such problem."""

from __future__ import annotations

import shutil

import pytest
from records import BASELINE, build_gs1_run, rewrite_result

from experiment.grading.run_dir import validate_run
from experiment.run.store import RunStore


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> RunStore:
    return build_gs1_run(tmp_path_factory.mktemp("run-dir-bug-rd2") / "runs")


@pytest.mark.parametrize("source", ["client_echo", "local_hash", "declared", None],
                         ids=["client_echo", "local_hash", "declared", "no source"])
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
    assert "provenance.optimizer_mismatch" in {problem.check for problem in validate_run(store.run_dir)}


def test_a_check_from_a_server_response_is_not_unverified(built, tmp_path):
    runs = shutil.copytree(built.run_dir.parent, tmp_path / "runs")
    record = RunStore.open(runs / built.run_dir.name).read_result()["initialization_provenance"]
    assert {check["source"] for check in record["arms"][BASELINE]["optimizer_checks"]} == {"server_response"}
    assert "provenance.optimizer_mismatch" not in {problem.check for problem in validate_run(runs / built.run_dir.name)}
