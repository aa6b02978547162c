"""The record against the traces that produced it (issue 45 items 6 and 7), on real records: the wiring
rehearsal of each family (tests/e2e/conftest.py: wiring_rehearsal, built once per session).

- every tampering of tests/tampering_traces.py (each graded as the untouched record on the grader before the
  TRACE rules) is caught by the TRACE rule it aims at, in a bare record;
- every run-directory tampering is caught by `grade_path` on a copy of the run directory;
- the disguised same-code parity check of item 7 keeps its CORR-3 finding.

`RX_WIRING_RECORDS=<dir>` with `<family>.json` records reuses records (as tests/e2e/test_grader_trust.py does);
`RX_WIRING_RUNS=<dir>` with `<family>/` run directories reuses run directories.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import leaves as L
import tampering_traces as T
from tampering import tampered

AIMED_AT = {  # tampering -> the rule that must catch it (TRACE-8 follows any of them: the stored grade differs)
    "training steps 40 and rewards raised": "TRACE-1", "kernel bandwidth changed": "TRACE-1",
    "SFT run numbers rewritten": "TRACE-1", "LR grid rewritten": "TRACE-1",
    "final checkpoint from another client": "TRACE-2", "final checkpoint renamed": "TRACE-2",
    "restore times reversed": "TRACE-3", "LR-grid restores reordered": "TRACE-3",
    "arm-level restore_count lowered": "TRACE-3", "adaptation batches replaced": "TRACE-4",
    "service routing says fork": "TRACE-5", "re-solver code hash replaced": "TRACE-6",
    "unread contradicting file added": "TRACE-7", "self-grade upgraded": "TRACE-8",
    "validation passed over a problem": "TRACE-8",
}
CASES = [(family, name) for family, tampers in T.CORPUS.items() for name in tampers]
RUN_CASES = [(family, name) for family, tampers in T.RUN_DIR_CORPUS.items() for name in tampers]


@pytest.mark.parametrize("family,name", CASES, ids=[f"{f}: {n}" for f, n in CASES])
def test_a_restated_leaf_edited_against_its_trace_is_caught(wiring_records, wiring_findings, family, name):
    record = wiring_records[family]
    new = L.findings(tampered(record, T.CORPUS[family][name])) - wiring_findings[family]
    assert AIMED_AT[name] in {finding[1] for finding in new}, (name, sorted(new))


def test_the_disguised_same_code_parity_check_keeps_its_finding(wiring_records):
    """Item 7: without parity_sides, with 3e-9 for the exact zeros and the pinned baseline_revision, every
    baseline_update check of the embedded rehearsal is still the same code (CORR-3, unverified)."""
    from experiment.grading import grade_record

    record = tampered(wiring_records["trimuon"], T.disguised_same_code_parity)
    correctness = grade_record(record).categories["correctness"]
    checks = [key for path in record["correctness_preflight"]["paths"] for key in path["errors"]
              if key.startswith("baseline_update")]
    same_code = [i for i in correctness.issues if i.rule == "CORR-3" and "same code" in i.message]
    assert checks and len(same_code) == len(checks) and correctness.status == "unverified"


@pytest.fixture(scope="session")
def wiring_runs(request) -> dict[str, Path]:
    cached = os.environ.get("RX_WIRING_RUNS")
    runs = {}
    for family in T.RUN_DIR_CORPUS:
        found = sorted((Path(cached) / family).glob("runs/*/result.json")) if cached else []
        runs[family] = found[0].parent if found else request.getfixturevalue("wiring_rehearsal")(family)["run_dir"]
    return runs


@pytest.fixture(scope="module")
def honest_run_grade(wiring_runs, tmp_path_factory):
    """family -> grade_path of an untouched copy of its run directory, graded once per module (lazily)."""
    from experiment.grading import grade_path

    graded = {}

    def of(family: str):
        if family not in graded:
            honest = tmp_path_factory.mktemp(f"honest-{family}") / "honest"
            shutil.copytree(wiring_runs[family], honest)
            graded[family] = grade_path(honest)
        return graded[family]

    return of


@pytest.mark.parametrize("family,name", RUN_CASES, ids=[f"{f}: {n}" for f, n in RUN_CASES])
def test_a_run_directory_whose_record_disagrees_with_its_events_is_caught(wiring_runs, honest_run_grade, tmp_path,
                                                                          family, name):
    from experiment.grading import grade_path

    run = tmp_path / "tampered"
    shutil.copytree(wiring_runs[family], run)
    T.RUN_DIR_CORPUS[family][name](run)
    before, after = honest_run_grade(family), grade_path(run)
    assert not before.problems
    assert any(problem.startswith("TRACE-") for problem in set(after.problems) - set(before.problems)), after.problems
