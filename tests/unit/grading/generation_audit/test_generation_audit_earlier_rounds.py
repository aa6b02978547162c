"""GA-11's earlier audit rounds, each held to the last round's checks by rebuilding its audit file with the run's
own functions (experiment/grading/generation_audit.py GA_11_files, _rebuilt_round), on the suite's paired self-
generation record given a failed first round (tests/records.py, with_two_audit_rounds, builds it). In the mutation
run's test list (issue 28 item 7), which does not run test_grading_leaf_holes.py."""

from __future__ import annotations

import leaves as L
import pytest
from records import record_leaf as _leaf, with_two_audit_rounds as _two_audit_rounds



@pytest.fixture(scope="module")
def two_rounds(graded_record):
    return _two_audit_rounds(graded_record("paired")[0])


def _ga11(record):
    return sorted(f for f in L.findings(record) if f[1] == "GA-11")


def test_two_rounds_rebuilt_from_their_files_are_green(two_rounds):
    assert not L.findings(two_rounds)
    assert [r["round"] for r in two_rounds["generation_audit"]["rounds"]] == [1, 2]


@pytest.mark.parametrize("file, path, kind, new", [
    ("generated-tasks-r1.jsonl", (0, "prompt"), "remove", None),
    ("generation-audit-r1.json", ("sample_seed",), "change", None),
    ("generation-audit-r1.json", ("label_error_count",), "change", 0),
    ("generation-audit-r1.json", ("samples", 0, "agrees"), "change", None),
    ("generation-audit-r2.json", ("sample_size",), "change", None),
], ids=["a removed prompt", "another seed", "a hidden label error", "an agreement flipped", "the last round's size"])
def test_a_tampered_round_file_is_a_ga11_finding(two_rounds, file, path, kind, new):
    leaf = _leaf(two_rounds, file, path)
    tampered = L.perturb(two_rounds, leaf, kind) if new is None else L.perturb(two_rounds, leaf, kind, new)
    assert _ga11(tampered), (file, path)


def test_a_round_entry_that_is_not_its_files_summary_is_a_ga11_finding(two_rounds):
    leaf = _leaf(two_rounds, None, ("generation_audit", "rounds", 0, "overlap_count"))
    assert _ga11(L.perturb(two_rounds, leaf, "change"))
