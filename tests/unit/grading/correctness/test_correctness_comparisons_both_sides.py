"""The correctness category's comparisons and loops tested from each side (experiment/grading/correctness.py;
docs/contract-rules.md CORR-1, CORR-4, CORR-9, CORR-11): a later check after one that is skipped, a value that
sorts before and one that sorts after the right one, evidence that is there but not usable inline. Expected
findings are worked out from the rules' text (issue 28 item 7: the survivors of the complete mutation run)."""

from __future__ import annotations

import hashlib
import json
from types import SimpleNamespace

import pytest

from experiment.contract.result_models import evidence_file
from experiment.grading import correctness as rules
from experiment.grading.common import GradeContext
from experiment.grading.evidence import EvidenceAccess
from grading_contexts.correctness import ERRORS, PATH, SPEC_PATH, TOLERANCE, context as _ctx, messages as _messages


def _real_ctx(paths, files=(), spec_paths=(SPEC_PATH,)):
    """A context whose evidence is read as the grader reads it (inline content, hashes checked)."""
    result = {"correctness_preflight": {"required": True, "paths": list(paths)}, "evidence": {"files": list(files)}}
    return SimpleNamespace(result=result, spec={"correctness_preflight": {"paths": list(spec_paths)}},
                           evidence=EvidenceAccess(result))


# ---------------------------------------------------------------- CORR-4: a skipped check does not end the path's


OVER = {**ERRORS, "max_abs_error": 2e-6, "reference_max_abs": 0.0}  # over atol 1e-6 + rtol * 0
OVER_WHY = "max_abs_error 2.000e-06 exceeds atol + rtol * reference_max_abs = 1.000e-06"


@pytest.mark.parametrize("unmeasured, first_tolerance", [
    ({**ERRORS, "max_abs_error": None}, TOLERANCE),  # no max_abs_error: CORR-3's
    ({**ERRORS, "cosine_similarity": None}, {**TOLERANCE, "min_cosine": 0.99}),  # a cosine tolerance, no cosine
], ids=["no max_abs_error", "no cosine"])
def test_a_check_left_to_corr3_does_not_stop_the_next_check_of_the_path(unmeasured, first_tolerance):
    spec_path = {**SPEC_PATH, "tolerances": {"baseline_loss": first_tolerance, "baseline_update": TOLERANCE}}
    path = {**PATH, "errors": {"baseline_loss": unmeasured, "baseline_update": OVER}}
    assert _messages(rules.CORR_4(_ctx(paths=(path,), spec_paths=(spec_path,)))) == [
        ("CORR-4", "invalid", f"path p1, check baseline_update: {OVER_WHY}")]


# ---------------------------------------------------------------- CORR-9: retained inline, its JSON hashable


FIXED = json.dumps({"tokens": [1, 2, 3]}).encode()
NOT_RETAINED = ("CORR-9", "unverified", "path p1: the fixed input is not retained inline as evidence")


def _fixed(digest):
    return {**PATH, "fixed_input": {"sha256": digest}}


def test_a_fixed_input_retained_by_name_and_hash_only_is_not_retained_inline():
    entry = evidence_file("fixed.json", "metrics", FIXED)
    hash_only = {k: v for k, v in entry.items() if k not in ("content", "encoding")}
    digest = hashlib.sha256(FIXED).hexdigest()
    assert rules.CORR_9(_real_ctx([_fixed(digest)], [entry])) == []
    assert _messages(rules.CORR_9(_real_ctx([_fixed(digest)], [hash_only]))) == [NOT_RETAINED]


def test_a_json_file_with_no_canonical_hash_is_not_the_fixed_input_and_does_not_hide_it():
    """Canonical JSON has no NaN, so a JSON file holding one has no canonical hash: it is not the fixed input
    (and grading goes on to the files after it)."""
    nan = evidence_file("notes.json", "log", b'{"loss": NaN}')
    digest = hashlib.sha256(FIXED).hexdigest()
    assert _messages(rules.CORR_9(_real_ctx([_fixed(digest)], [nan]))) == [NOT_RETAINED]
    assert rules.CORR_9(_real_ctx([_fixed(digest)], [nan, evidence_file("fixed.json", "metrics", FIXED)])) == []


REFERENCE = b"def reference(x):\n    return x\n"


@pytest.mark.parametrize("named_by", ["reference_revision", "reference_file_sha256"])
def test_the_reference_code_a_path_names_is_retained(named_by):
    """The independent reference a path names by hash is kept (a probe script, or a file of the retained pipeline
    code): GS1's reference dropped from the evidence, the pipeline code and the code revision alike graded as the
    honest record before this check (issue 45, tests/tampering_classes.py probe_script_dropped)."""
    digest = hashlib.sha256(REFERENCE).hexdigest()
    fixed = evidence_file("fixed.json", "metrics", FIXED)
    path = {**_fixed(hashlib.sha256(FIXED).hexdigest()),
            **({"reference_revision": f"experiment/rl/ref.py sha256:{digest}"} if named_by == "reference_revision"
               else {"reference_revision": "sha256 of experiment/stats/ref.py", "reference_file_sha256": digest})}
    script = evidence_file("script-ref.py", "script", REFERENCE)
    bundle = evidence_file("pipeline-code.json", "script", json.dumps(
        {"files": {"experiment/rl/ref.py": {"content": REFERENCE.decode()}}}).encode())
    assert rules.CORR_9(_real_ctx([path], [fixed, script])) == []
    assert rules.CORR_9(_real_ctx([path], [fixed, bundle])) == []
    assert _messages(rules.CORR_9(_real_ctx([path], [fixed]))) == [
        ("CORR-9", "unverified", f"path p1: the reference code it names (sha256 {digest[:12]}) is not retained: no "
                                 "probe script or retained pipeline file hashes to it")]
    pinned = {**path, "reference_revision": "torch==2.13.0", "reference_file_sha256": None}  # a package: no file
    assert rules.CORR_9(_real_ctx([pinned], [fixed])) == []


# ---------------------------------------------------------------- CORR-11: the probe's own record


def test_probe_lists_are_the_same_whatever_the_key_order_of_each_probe():
    """JSON objects have no key order: a probe written {learning_rate, update_norm} and read back
    {update_norm, learning_rate} is the same probe (the list's own order does not count either)."""
    written = [{"learning_rate": 0.01, "update_norm": 2.0}, {"learning_rate": 0.02, "update_norm": 1.0}]
    reread = [{"update_norm": 1.0, "learning_rate": 0.02}, {"update_norm": 2.0, "learning_rate": 0.01}]
    assert rules._same_json(written, reread) is True
    assert rules._same_json(reread, written) is True


@pytest.mark.parametrize("a, b", [("stock@1", "stock@2"), ("stock@2", "stock@1"), (False, True), (True, False)])
def test_two_different_strings_or_flags_are_not_the_same_json_whichever_sorts_first(a, b):
    assert rules._same_json(a, b) is False


def _probe_file(record, name="probe-p1.json"):
    return evidence_file(name, "log", json.dumps(record).encode())


@pytest.mark.parametrize("key, value", [("baseline_revision", "stock@0"), ("reference_revision", "ref@9"),
                                        ("lr_scaling", [{"learning_rate": 0.01, "update_norm": 9.0}])],
                         ids=["sorts before id", "sorts after id", "probes (after id)"])
def test_every_field_the_probe_wrote_is_compared_whether_it_sorts_before_or_after_id(key, value):
    probe = {**PATH, "lr_scaling": [{"learning_rate": 0.01, "update_norm": 1.0}]}
    assert rules.CORR_11(_real_ctx([probe], [_probe_file(probe)])) == []
    changed = {**probe, key: value}
    assert _messages(rules.CORR_11(_real_ctx([changed], [_probe_file(probe)]))) == [
        ("CORR-11", "unverified", f"path p1: {key} differ from the retained probe-p1.json, so which the probe "
                                  "measured cannot be told")]


def test_a_path_without_its_probe_record_does_not_stop_the_next_paths_check():
    p0, p1 = {**PATH, "id": "p0"}, PATH
    files = [_probe_file({**p1, "reference_revision": "ref@2 as written"})]
    assert _messages(rules.CORR_11(_real_ctx([p0, p1], files))) == [
        ("CORR-11", "unverified", "path p0: the probe's own record is not retained, so its measured errors cannot be "
                                  "checked"),
        ("CORR-11", "unverified", "path p1: reference_revision differ from the retained probe-p1.json, so which the "
                                  "probe measured cannot be told")]


# ---------------------------------------------------------------- the category: stock-only, not yet recorded


def _graded(record=None, applicable=True, status="running", trained=False):
    gate = SimpleNamespace(applicable=applicable, reason="the plan's reason", details={})
    result = {"status": status, "evidence": {"files": []}}
    if record is not None:
        result["correctness_preflight"] = record
    if trained:
        result["completed_arms"] = ["baseline", "treatment"]
    ctx = GradeContext(result=result, evidence=EvidenceAccess(result),
                       spec={"correctness_preflight": {"paths": [SPEC_PATH]}},
                       plan=SimpleNamespace(gate=lambda name: gate))
    return ctx, rules.grade(ctx)


STOCK_ONLY = ("CORR-1", "invalid", 'a stock-only run reports {"required": false, "paths": []}')


@pytest.mark.parametrize("record, status", [
    ({"required": False, "paths": []}, "not_applicable"),
    ({"required": False}, "invalid"),  # no paths at all is not the empty list
    ({"required": False, "paths": None}, "invalid"),
    ({"required": False, "paths": [PATH]}, "invalid"),  # a stock-only record with a path
])
def test_a_stock_only_run_reports_required_false_and_no_paths(record, status):
    _, graded = _graded(record, applicable=False)
    assert graded.status == status
    assert _messages(graded.issues) == ([STOCK_ONLY] if status == "invalid" else [])
    assert graded.notes == (["the plan's reason"] if status == "not_applicable" else [])


def test_no_record_yet_while_running_and_before_training_is_unknown():
    _, graded = _graded()
    assert (graded.status, _messages(graded.issues)) == ("unknown", [("CORR-1", "unknown", "no correctness record yet")])


@pytest.mark.parametrize("record, status, trained", [
    ({"required": True, "paths": [PATH]}, "running", False),  # a record: graded by its rules
    (None, "running", True),  # arms trained before any record: not "not yet"
    (None, "failed", False),  # finished, sorting before "running"
    (None, "succeeded", False),  # finished, sorting after "running"
    (None, "timed_out", False),
], ids=["a record", "trained", "failed", "succeeded", "timed_out"])
def test_otherwise_the_record_is_graded_by_its_rules(record, status, trained):
    ctx, graded = _graded(record, status=status, trained=trained)
    assert graded.status != "unknown"
    assert graded == rules.run_checks(rules.NAME, rules.CHECKS, ctx)
    if record is None:
        assert ("CORR-1", "unverified", "the path needs a correctness preflight but RESULT has no record (a missing "
                                        "check blocks like a failed one)") in _messages(graded.issues)


def test_a_reference_named_hash_first_in_its_revision_is_looked_up_too():
    """reference_revision names a file as `<file>.py sha256:<hex>` or as `sha256:<hex> (<file>.py)`; both forms name
    the hash that must be retained."""
    digest = hashlib.sha256(REFERENCE).hexdigest()
    fixed = evidence_file("fixed.json", "metrics", FIXED)
    path = {**_fixed(hashlib.sha256(FIXED).hexdigest()), "reference_revision": f"sha256:{digest} (experiment/rl/ref.py)"}
    assert _messages(rules.CORR_9(_real_ctx([path], [fixed]))) == [
        ("CORR-9", "unverified", f"path p1: the reference code it names (sha256 {digest[:12]}) is not retained: no "
                                 "probe script or retained pipeline file hashes to it")]
    assert rules.CORR_9(_real_ctx([path], [fixed, evidence_file("script-ref.py", "script", REFERENCE)])) == []
