"""Nothing unlisted (issue 45 deliverable 3): every leaf of the grading tests' in-process records is graded
(an edit of it changes the grade) or listed in docs/ungraded-fields.md with a reason.

Unlike the hypothesis property of tests/unit/test_grading_every_leaf.py, which draws 120 perturbations per
record, this enumerates: every leaf pattern of RESULT and of its inline evidence files (one leaf per pattern,
`leaves.representatives`: a predictions file's rows are one pattern) gets one edit, a changed value (an object
is removed instead), and is graded against the untouched record. The patterns are split into shards so that
the parallel suite spreads them; the edits are deterministic (`leaves.changed`).
"""

from __future__ import annotations

import pytest

import leaves as L

FAMILIES = ("paired", "best_lr")
SHARDS = 4


def _kind(leaf: L.Leaf) -> str:
    return "remove" if isinstance(leaf.value, dict) else "change"


@pytest.fixture(scope="module")
def records(graded_record):
    built = {kind: graded_record(kind)[0] for kind in FAMILIES}
    return {kind: (record, L.findings(record), L.representatives(record)) for kind, record in built.items()}


def inventory(record, baseline, patterns, entries):
    """(graded, listed, neither) leaves, each "<kind> <leaf>"; a crash of the grader is neither."""
    graded, listed, neither = [], [], []
    for leaf in patterns:
        kind = _kind(leaf)
        if L.is_ungraded(leaf.pattern, kind, entries):
            listed.append(f"{kind} {leaf}")
            continue
        tampered = L.perturb(record, leaf, kind)
        if tampered is None:  # no different value of this leaf exists to write (none seen in these records)
            neither.append(f"{kind} {leaf} (no edit)")
            continue
        found, crash = L.caught(tampered, baseline)
        (graded if found else neither).append(f"{kind} {leaf}" + (f" (crash: {crash})" if crash else ""))
    return graded, listed, neither


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("shard", range(SHARDS))
def test_every_leaf_is_graded_or_listed(records, family, shard):
    record, baseline, patterns = records[family]
    mine = patterns[shard::SHARDS]
    graded, listed, neither = inventory(record, baseline, mine, L.ungraded_fields())
    assert len(graded) + len(listed) + len(neither) == len(mine)
    assert not neither, neither


def test_the_inventory_finds_an_unlisted_leaf_the_grader_ignores(records, monkeypatch):
    """The enumeration is not vacuous: a grader without TRACE-6 leaves the re-solver's code hash unseen, and the
    leaf, listed nowhere, is reported as neither graded nor listed."""
    import copy
    import hashlib
    import json

    from experiment.grading import general, traces

    record = copy.deepcopy(records["paired"][0])
    code = "def solve(text):\n    return 0\n"
    record["generation_audit"]["resolver"] = {"code": "solver.py", "code_sha256": hashlib.sha256(code.encode()).hexdigest()}
    text = json.dumps({"files": {"solver.py": {"content": code}}})
    record["evidence"]["files"].append({"name": "pipeline-code.json", "kind": "pipeline_code", "encoding": "utf-8",
                                        "content": text, "sha256": hashlib.sha256(text.encode()).hexdigest()})
    leaf = next(leaf for leaf in L.representatives(record) if leaf.pattern == "generation_audit.resolver.code_sha256")
    assert inventory(record, L.findings(record), [leaf], L.ungraded_fields())[0] == [f"change {leaf}"]
    monkeypatch.setattr(general, "CHECKS", [c for c in general.CHECKS if c is not traces.TRACE_6])
    assert inventory(record, L.findings(record), [leaf], L.ungraded_fields())[2] == [f"change {leaf}"]
