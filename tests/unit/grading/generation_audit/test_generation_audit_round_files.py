"""generation_audit.py's check of every audit round's file (GA_11_files, _rebuilt_round) and the held-out set's
default (_held_out_set), on audit rounds written here as the run writes them, with the run's own functions
(experiment.selfgen.generation_audit build_report and validate, require_comparison=True): each test holds one
finding, or none, to its exact words. The survivors and the timeout of the grader's mutation run (issue 28
item 7)."""

from __future__ import annotations

import copy

from grading_contexts.generation_audit import context as _ctx, audit_file as _file, found as _found

from experiment.grading import generation_audit as rules
from experiment.selfgen import generation_audit as ga

SPEC_AUDIT = {"answer_comparison": "numeric_exact", "min_sample_size": 2}
# four accepted candidates (two sampled a round) and one the filter rejected, whose prompt is empty
CANDIDATES = [{"item_id": f"c{i}", "prompt": f"What is {i} + {i}?", "answer": str(2 * i), "disposition": "accepted"}
              for i in range(1, 5)] + [{"item_id": "c9", "prompt": "What is 9 + 8?", "answer": "17",
                                        "disposition": "rejected"}]
EVALUATION = [{"item_id": "e1", "prompt": "Name a prime."}]
SEED = 11
SUMMARY_KEYS = ("round", "dataset_file", "audit_file", "counts", "sample_size", "label_error_count", "overlap_count",
                "status")


def _rounds(count, candidates=CANDIDATES, spec_audit=SPEC_AUDIT):
    """`count` audit rounds as the run writes them (experiment.selfgen.generation_audit.audit_with_repairs):
    round n's candidates, its audit file (the seed one less per later round; the re-solver right on every
    sample) and its entry in `rounds`; the record is the last round's audit. (record, {file name: value})."""
    history, files, report = [], {"eval.jsonl": EVALUATION}, None
    for number in range(1, count + 1):
        seed = SEED - (count - number)
        resolved = {t["item_id"]: {"independent_answer": t["answer"], "reasoning": "added the numbers"}
                    for t in candidates}
        report = ga.build_report(tasks=candidates, evaluation=EVALUATION, resolved=resolved, resolver_id="resolver-a",
                                 spec_audit=spec_audit, seed=seed, dataset_file=f"tasks-r{number}.jsonl",
                                 evaluation_file="eval.jsonl", audit_file=f"audit-r{number}.json")
        validation = ga.validate(report, spec_audit, candidates, EVALUATION, require_comparison=True)
        report.update(round=number, status=validation.status, validation_reasons=validation.reasons)
        history.append({key: report[key] for key in SUMMARY_KEYS})
        report["rounds"] = copy.deepcopy(history)
        files[report["dataset_file"]] = candidates
        files[report["audit_file"]] = report
    return copy.deepcopy(report), copy.deepcopy(files)


def _ga11_files(record, files, spec_audit=SPEC_AUDIT):
    retained = [_file(name, value, jsonl=name.endswith(".jsonl"),
                      kind="generated_tasks" if name.endswith(".jsonl") else "generation_audit")
                for name, value in files.items() if value is not None]
    return _found(rules.GA_11_files(_ctx(record, retained, spec={"generation_audit": spec_audit})))


def _rebuilt_wrong(number, keys):
    return ("GA-11", "invalid", f"round {number} ('audit-r{number}.json'): {', '.join(keys)} are not what its "
                                "candidates, the evaluation set and its re-solves give")


def test_rounds_written_as_the_run_writes_them_are_their_files():
    for count in (1, 3):
        record, files = _rounds(count)
        assert _ga11_files(record, files) == []


def test_a_rounds_candidate_without_a_prompt_is_a_finding_of_its_round():
    """GA-3 on every round's candidates: the rejected candidate's empty prompt, in a file otherwise the run's."""
    candidates = [*CANDIDATES[:4], {**CANDIDATES[4], "prompt": ""}]
    record, files = _rounds(2, candidates=candidates)
    assert _ga11_files(record, files) == [
        ("GA-11", "invalid", "round 1 ('audit-r1.json'): 1 candidate(s) lack an item_id, prompt or answer"),
        ("GA-11", "invalid", "round 2 ('audit-r2.json'): 1 candidate(s) lack an item_id, prompt or answer")]


def test_a_round_whose_candidates_or_audit_file_is_missing_is_left_to_ga11_and_the_next_rounds_are_checked():
    """Round 1 without its candidates file, round 2 without its audit file: both skipped (GA-11 names them);
    round 3, whose audit file holds a field the run does not write, is still checked."""
    record, files = _rounds(3)
    files["tasks-r1.jsonl"] = None
    files["audit-r2.json"] = None
    files["audit-r3.json"]["reviewer"] = "someone"
    assert _ga11_files(record, files) == [_rebuilt_wrong(3, ["reviewer"])]


def test_a_field_the_retained_file_lacks_or_adds_is_named():
    record, files = _rounds(1)
    del files["audit-r1.json"]["note"]
    assert _ga11_files(record, files) == [_rebuilt_wrong(1, ["note"])]
    files["audit-r1.json"]["note"], files["audit-r1.json"]["extra"] = record["note"], 1
    assert _ga11_files(record, files) == [_rebuilt_wrong(1, ["extra"])]


def test_a_round_whose_samples_are_not_the_ones_its_seed_selects_is_a_finding_and_the_next_round_is_checked():
    """Round 1's file keeps one of its two samples: the re-solve of the other is missing, so the round cannot be
    rebuilt (the audit's build_report raises KeyError); round 2, one count off, is checked after it."""
    record, files = _rounds(2)
    files["audit-r1.json"]["samples"] = files["audit-r1.json"]["samples"][:1]
    files["audit-r2.json"]["overlap_count"] = 1
    assert _ga11_files(record, files) == [
        ("GA-11", "invalid", "round 1 ('audit-r1.json'): its samples are not the candidates its seed selects"),
        _rebuilt_wrong(2, ["overlap_count"])]


def test_a_round_entry_that_is_not_its_files_summary_names_the_keys_that_differ():
    record, files = _rounds(1)
    record["rounds"][0].update(overlap_count=1, status="failed")
    files["audit-r1.json"]["rounds"] = record["rounds"]  # the rebuilt file's rounds are the record's: only the entry
    assert _ga11_files(record, files) == [
        ("GA-11", "invalid", "round 1: the record's round entry is not its audit file's summary (overlap_count, "
                             "status)")]
    record, files = _rounds(1)
    record["rounds"][0]["extra"] = 1  # every summary key as the file's: the entry has another key
    files["audit-r1.json"]["rounds"] = record["rounds"]
    assert _ga11_files(record, files) == [
        ("GA-11", "invalid", "round 1: the record's round entry is not its audit file's summary (keys)")]


def test_the_rebuilt_round_is_re_solved_by_the_first_samples_resolver():
    """One re-solver per round (the run records one): the rebuilt file names the first sample's. A round of one
    sample is its file; where the first sample names no resolver, the rebuilt round fails validation (every
    sample then lacks a resolver_id), so a file that says passed is wrong in status and reasons too."""
    record, files = _rounds(1, spec_audit={**SPEC_AUDIT, "min_sample_size": 1})
    assert len(record["samples"]) == 1
    assert _ga11_files(record, files, spec_audit={**SPEC_AUDIT, "min_sample_size": 1}) == []
    record, files = _rounds(1)
    files["audit-r1.json"]["samples"][0]["resolver_id"] = ""
    first = files["audit-r1.json"]["samples"][0]["item_id"]
    rebuilt = rules._rebuilt_round(_ctx(record, [], spec={"generation_audit": SPEC_AUDIT}), 1, record["rounds"][0],
                                   files["audit-r1.json"], CANDIDATES, EVALUATION)
    assert [s["resolver_id"] for s in rebuilt["samples"]] == ["", ""]
    assert (rebuilt["status"], rebuilt["validation_reasons"][0]) == (
        "failed", f"sample {first}: needs method independent_resolve, blind_to_label true, a resolver_id and the "
                  "worked solution")
    assert _ga11_files(record, files) == [
        _rebuilt_wrong(1, ["samples", "status", "validation_reasons"]),
        ("GA-11", "invalid", "round 1: the record's round entry is not its audit file's summary (status)")]


def test_a_round_is_validated_as_the_run_validates_it_the_comparison_required():
    """The run validates each round with require_comparison=True: a spec without a supported answer_comparison
    fails the round for that (a round with no accepted candidate, so that the report can be built at all), and
    the file that says so is the rebuilt one; validated without the requirement it would fail for another reason."""
    rejected = [{**t, "disposition": "rejected"} for t in CANDIDATES]
    record, files = _rounds(1, candidates=rejected, spec_audit={})
    assert files["audit-r1.json"]["validation_reasons"] == ["answer_comparison None is missing or unsupported: unverified"]
    assert ga.validate(record, {}, rejected, EVALUATION, require_comparison=False).reasons == [
        "no accepted task to audit"]
    assert _ga11_files(record, files, spec_audit={}) == []


def test_a_spec_without_an_eval_path_is_checked_against_the_gsm8k_test_split(monkeypatch):
    """GA-3's held-out set: the spec's eval file where it names one, else GSM8K's test split (read here through
    gsm8k_questions, stood in for: the real split is a dataset download)."""
    monkeypatch.setattr(rules, "_HELD_OUT", {})
    asked = []
    monkeypatch.setattr(rules, "gsm8k_questions", lambda split: asked.append(split) or [("g-1", "What is 1 + 1?")])
    ctx = _ctx({}, [], spec={"eval": {}})
    assert rules._held_out_set(ctx) == [("g-1", "What is 1 + 1?")]
    assert asked == ["test"]
    assert rules._held_out_set(_ctx({}, [], spec=None)) == [("g-1", "What is 1 + 1?")]
    assert asked == ["test"]  # read once: the key is the path's text ('None')
