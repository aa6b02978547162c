"""Grading a record with its run directory (experiment/grading/grade.py): a spec retained by name
and hash only is read from the run's evidence/ folder, and a folder that is not a run directory is
a problem in the grade, not an exception."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from experiment.contract.rehearsal import rules_sha256
from experiment.contract.spec import canonical_sha256
from experiment.grading import grade as grading
from experiment.grading import grade_record
from experiment.grading.common import CategoryGrade, Issue
from experiment.grading.evidence import EvidenceAccess

ROOT = Path(__file__).resolve().parents[4]
SPEC = ROOT / "specs" / "gs1_kernel_vs_grpo_gsm8k.json"


def _partial_spec_record():
    """RESULT whose only evidence is the spec, retained by name and sha256 (no inline content)."""
    digest = hashlib.sha256(SPEC.read_bytes()).hexdigest()
    return {"evidence": {"version": 1, "files": [{"name": "spec.json", "kind": "spec", "sha256": digest}]}}


def test_a_spec_retained_by_name_only_is_read_from_the_run_directorys_evidence(tmp_path):
    (tmp_path / "evidence").mkdir()
    shutil.copy(SPEC, tmp_path / "evidence" / "spec.json")
    graded = grade_record(_partial_spec_record(), run_dir=tmp_path)
    assert graded.spec_source == "the run's recorded spec.json (evidence/)"
    assert not any(problem.startswith("SPEC:") for problem in graded.problems)


def test_without_the_file_on_disk_the_spec_is_missing_and_said_so(tmp_path):
    graded = grade_record(_partial_spec_record(), run_dir=tmp_path)
    assert any(problem.startswith("SPEC: the run's spec is not carried inline") for problem in graded.problems)


def test_a_folder_without_result_json_is_a_run_problem_not_an_exception(tmp_path):
    graded = grade_record(_partial_spec_record(), run_dir=tmp_path)
    assert any(problem.startswith("run: ") and "no result.json" in problem for problem in graded.problems)


def test_events_after_a_line_that_is_not_json_are_still_read(tmp_path):
    from experiment.grading.grade import read_events

    (tmp_path / "events.jsonl").write_text('{"event": "a"}\nnot json\n\n{"event": "b"}\n')
    events, problems = read_events(tmp_path)
    assert events == [{"event": "a"}, {"event": "b"}]
    assert problems == ["EVID-8: events.jsonl line 2 is not JSON."]


def test_a_given_spec_path_is_named_with_its_revision_only_when_it_has_one(tmp_path):
    from experiment.contract.spec import load_spec

    alone = tmp_path / "spec.json"
    shutil.copy(SPEC, alone)
    assert load_spec(alone).source.revision is None
    assert grade_record(_partial_spec_record(), spec=alone).spec_source == str(alone)
    revision = load_spec(SPEC).source.revision  # the spec's .plan.json next to it
    assert revision is not None
    assert grade_record(_partial_spec_record(), spec=SPEC).spec_source == f"{SPEC} + revision {revision.path}"


# ---------------------------------------------------------------- the input, the attestation, the categories


def test_load_input_reads_a_bare_result_or_a_run_directory(tmp_path):
    (tmp_path / "result.json").write_text('{"status": "running"}')
    assert grading.load_input(tmp_path / "result.json") == ({"status": "running"}, None)
    assert grading.load_input(tmp_path) == ({"status": "running"}, tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(grading.GradeInputError, match=r"is not a run directory \(no result.json\)"):
        grading.load_input(empty)
    with pytest.raises(grading.GradeInputError, match="no such file or directory"):
        grading.load_input(tmp_path / "absent.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(grading.GradeInputError, match=r"cannot read RESULT \(JSONDecodeError: "):
        grading.load_input(tmp_path / "bad.json")
    (tmp_path / "list.json").write_text("[1]")
    with pytest.raises(grading.GradeInputError, match="RESULT must be a JSON object"):
        grading.load_input(tmp_path / "list.json")


def test_without_an_attested_spec_a_passing_or_opted_out_category_is_unverified_others_keep_their_status():
    categories = {name: CategoryGrade(name, status) for name, status in (
        ("a", "verified"), ("b", "not_applicable"), ("c", "invalid"), ("d", "unknown"))}
    grading._unattested(categories, "why")
    assert {name: grade.status for name, grade in categories.items()} == {
        "a": "unverified", "b": "unverified", "c": "invalid", "d": "unknown"}
    assert categories["a"].issues == [Issue("SPEC-1", "unverified", "why")] and categories["c"].issues == []


def test_a_category_too_malformed_for_its_guards_is_invalid_under_its_shape_rule():
    def broken(ctx):
        raise KeyError("x")

    for name, rule in (("evaluator", "EVAL-1"), ("decision", "DEC-2"), ("feasibility", "FEAS-1")):
        graded = grading._graded(name, SimpleNamespace(grade=broken), None)
        assert (graded.name, graded.status, graded.issues) == (
            name, "invalid", [Issue(rule, "invalid", "the record has an unexpected shape (KeyError: 'x')")])
    fine = CategoryGrade("evaluator", "verified")
    assert grading._graded("evaluator", SimpleNamespace(grade=lambda ctx: fine), None) is fine


def _carrying(**files):
    entries = []
    for name, (kind, value) in files.items():
        text = json.dumps(value)
        entries.append({"name": name, "kind": kind, "content": text})
    return EvidenceAccess({"evidence": {"version": 1, "files": entries}})


def test_a_spec_is_attested_as_written_with_its_revision_or_alone():
    spec = json.loads(SPEC.read_text())
    revision = json.loads(SPEC.with_name(SPEC.stem + ".plan.json").read_text())
    path, with_revision, why = grading._spec_as_written({}, _carrying(**{
        "spec.json": ("spec", spec), "spec-revision.plan.json": ("spec_revision", revision)}))
    assert (path, with_revision, why) == (SPEC, True, "")
    assert grading._spec_as_written({}, _carrying(**{"spec.json": ("spec", spec)})) == (SPEC, False, "")
    edited = {**spec, "steps": 1}
    path, with_revision, why = grading._spec_as_written({}, _carrying(**{"spec.json": ("spec", edited)}))
    assert (path, with_revision) == (None, False)
    assert why == (f"its spec.json (sha256 {canonical_sha256(edited)[:12]}...) with its revision is not a spec of specs/ "
                   "as written with its revision file")
    other_revision = {**revision, "note": "edited"}
    assert grading._spec_as_written({}, _carrying(**{
        "spec.json": ("spec", spec), "spec-revision.plan.json": ("spec_revision", other_revision)}))[0] is None
    assert grading._spec_as_written({}, _carrying(**{"spec.json": ("log", spec)})) == (
        None, False, "the record carries no readable spec.json")
    assert grading._spec_as_written({}, _carrying(**{"other.json": ("spec", spec)}))[2] == (
        "the record carries no readable spec.json")


def _rehearsal_spec(derived, as_dict=None):
    return SimpleNamespace(source=SimpleNamespace(rehearsal=derived), to_dict=lambda: as_dict or {"spec": 1})


def test_spec2_a_rehearsal_record_is_the_one_the_rules_derive():
    derived = {"scale": "small", "model": "org/small", "deviations": [{"field": "model", "reason": "smaller"}]}
    result = {"rehearsal": {"scale": "small", "model": "org/small", "rules_sha256": rules_sha256()},
              "deviations": [{"reason": "smaller", "field": "model"}]}
    spec = _rehearsal_spec(derived)
    assert grading._rehearsal_problems(result, _carrying(), spec) == []
    assert grading._rehearsal_problems(result, _carrying(**{"rehearsal-spec.json": ("spec", {"spec": 1})}), spec) == []
    assert grading._rehearsal_problems(result, _carrying(**{"rehearsal-spec.json": ("spec", {"spec": 2})}), spec) == [
        "SPEC-2: rehearsal-spec.json is not the rehearsal the rules derive from the spec as written; graded against the "
        "derived one."]
    stale = {**result, "rehearsal": {**result["rehearsal"], "rules_sha256": "0" * 64}}
    assert grading._rehearsal_problems(stale, _carrying(), spec) == [
        "SPEC-2: the rehearsal rules changed since this run (rules_sha256 differs), so its rehearsal cannot be "
        "re-derived; re-run it."]
    moved = {**result, "rehearsal": {**result["rehearsal"], "model": "org/big", "scale": "tiny"}}
    assert grading._rehearsal_problems(moved, _carrying(), spec) == [
        "SPEC-2: RESULT.rehearsal model, scale differ from the re-derived rehearsal record."]
    unposted = {**result, "deviations": [{"field": "model", "reason": "other"}, "model"]}
    assert grading._rehearsal_problems(unposted, _carrying(), spec) == [
        "SPEC-2: 1 substitution(s) of the rehearsal are not in RESULT.deviations (first: smaller)."]
    assert grading._rehearsal_problems({**result, "deviations": None}, _carrying(), spec)[0].startswith("SPEC-2: 1 sub")


@pytest.mark.parametrize("other_kind", ["log", "tokenizer"])
def test_the_recorded_spec_is_the_entry_of_kind_spec_whatever_kinds_come_before_it(other_kind):
    """An entry of another kind (sorting before or after "spec") listed first is not the spec."""
    text = SPEC.read_text()
    record = {"evidence": {"version": 1, "files": [
        {"name": "other.json", "kind": other_kind, "content": "{}", "sha256": hashlib.sha256(b"{}").hexdigest()},
        {"name": "the-spec.json", "kind": "spec", "content": text,
         "sha256": hashlib.sha256(text.encode()).hexdigest()}]}}
    spec, source, supplied, problem = grading._recorded_spec(record, EvidenceAccess(record), None)
    assert (source, supplied, problem) == ("the run's recorded the-spec.json (inline)", (), None)
    assert spec is not None


def _inline(name, kind, text):
    return {"name": name, "kind": kind, "content": text, "sha256": hashlib.sha256(text.encode()).hexdigest()}


def _with_revision(**extra):
    text, plan = SPEC.read_text(), SPEC.with_suffix(".plan.json").read_text()
    return {"evidence": {"version": 1, "files": [_inline("spec.json", "spec", text),
                                                 _inline("spec-revision.plan.json", "spec_revision", plan)]}, **extra}


def test_a_recorded_revision_is_merged_into_the_spec_it_revises_and_named():
    from experiment.contract.spec import apply_revision

    raw = json.loads(SPEC.read_text())
    revision = json.loads(SPEC.with_suffix(".plan.json").read_text())
    merged, _ = apply_revision(raw, revision, "spec-revision.plan.json")
    assert canonical_sha256(merged) != canonical_sha256(raw)  # the revision changes the spec
    record = _with_revision()
    spec, source, supplied, problem = grading._recorded_spec(record, EvidenceAccess(record), None)
    assert problem is None and supplied == tuple(sorted(revision))
    assert source == "the run's recorded spec.json (inline) + revision spec-revision.plan.json"
    assert (spec._source.file_sha256, spec._source.sha256) == (canonical_sha256(raw), canonical_sha256(merged))
    assert spec._source.revision.supplied == sorted(revision)


def test_a_rehearsals_recorded_spec_has_its_revision_merged_already():
    raw = json.loads(SPEC.read_text())
    revision = json.loads(SPEC.with_suffix(".plan.json").read_text())
    record = _with_revision(rehearsal={"scale": "small"})
    spec, _, supplied, problem = grading._recorded_spec(record, EvidenceAccess(record), None)
    assert problem is None and supplied == tuple(sorted(revision))
    assert spec._source.sha256 == canonical_sha256(raw)  # merged is the recorded spec as it is


def test_a_revision_not_in_the_evidence_is_not_read_from_the_run_directory(tmp_path):
    (tmp_path / "evidence").mkdir()
    shutil.copy(SPEC.with_suffix(".plan.json"), tmp_path / "evidence" / "spec-revision.plan.json")
    record = {"evidence": {"version": 1, "files": [_inline("spec.json", "spec", SPEC.read_text())]}}
    spec, source, supplied, problem = grading._recorded_spec(record, EvidenceAccess(record), tmp_path)
    assert (source, supplied, problem) == ("the run's recorded spec.json (inline)", (), None)
    assert spec._source.revision is None


def test_a_spec_file_in_the_run_directory_that_is_not_json_is_no_spec(tmp_path):
    (tmp_path / "evidence").mkdir()
    (tmp_path / "evidence" / "spec.json").write_text("{not json")
    record = _partial_spec_record()
    spec, source, supplied, problem = grading._recorded_spec(record, EvidenceAccess(record), tmp_path)
    assert (spec, source, supplied) == (None, None, ())
    assert problem.startswith("the run's spec is not carried inline")


def test_a_given_spec_object_says_what_its_revision_supplied_and_one_without_a_source_supplied_nothing():
    from experiment.contract.spec import load_spec, parse_spec

    loaded = load_spec(SPEC)  # read with its revision file
    revision = json.loads(SPEC.with_suffix(".plan.json").read_text())
    assert grading._given_spec(loaded, None)[1:] == ("the given spec", tuple(sorted(revision)))
    bare = parse_spec(json.loads(SPEC.read_text()))  # no source at all: .source raises RuntimeError
    with pytest.raises(RuntimeError):
        bare.source
    spec, text, supplied = grading._given_spec(bare, None)
    assert (spec, text, supplied) == (bare, "the given spec", ())


def test_a_spec_or_revision_carried_under_another_kind_sorting_after_its_own_is_not_carried():
    spec = json.loads(SPEC.read_text())
    revision = json.loads(SPEC.with_name(SPEC.stem + ".plan.json").read_text())
    assert grading._spec_as_written({}, _carrying(**{"spec.json": ("tokens", spec)})) == (
        None, False, "the record carries no readable spec.json")
    assert grading._spec_as_written({}, _carrying(**{
        "spec.json": ("spec", spec), "spec-revision.plan.json": ("tokens", revision)})) == (SPEC, False, "")


def test_a_file_of_the_specs_folder_that_does_not_read_is_skipped(tmp_path, monkeypatch):
    (tmp_path / "a_broken.json").write_text("{not json")
    shutil.copy(SPEC, tmp_path / SPEC.name)
    shutil.copy(SPEC.with_name(SPEC.stem + ".plan.json"), tmp_path / (SPEC.stem + ".plan.json"))
    monkeypatch.setattr(grading, "SPECS_DIR", tmp_path)
    spec = json.loads(SPEC.read_text())
    assert grading._spec_as_written({}, _carrying(**{"spec.json": ("spec", spec)})) == (tmp_path / SPEC.name, False, "")


def test_a_rehearsal_that_is_not_an_object_is_no_rehearsal():
    spec = json.loads(SPEC.read_text())
    revision = json.loads(SPEC.with_name(SPEC.stem + ".plan.json").read_text())
    evidence = _carrying(**{"spec.json": ("spec", spec), "spec-revision.plan.json": ("spec_revision", revision)})
    plain = grading._attested({}, evidence, None)
    odd = grading._attested({"rehearsal": "small"}, evidence, None)
    assert (odd.source, odd.supplied, odd.problems) == (plain.source, plain.supplied, plain.problems)
    assert odd.source == f"specs/{SPEC.name} + revision {SPEC.stem}.plan.json" and odd.problems == []


def _wiring_rehearsal():
    """RESULT.rehearsal and RESULT.deviations as a wiring-scale rehearsal of SPEC posts them (the rules' record)."""
    from experiment.contract.spec import load_spec

    derived = dict(load_spec(SPEC, rehearse=True, rehearsal_scale="wiring").source.rehearsal)
    return {"rehearsal": {k: v for k, v in derived.items() if k != "deviations"}, "deviations": derived["deviations"]}


def _spec_and_revision(**more):
    spec = json.loads(SPEC.read_text())
    revision = json.loads(SPEC.with_name(SPEC.stem + ".plan.json").read_text())
    return _carrying(**{"spec.json": ("spec", spec), "spec-revision.plan.json": ("spec_revision", revision), **more})


def test_a_rehearsal_record_with_its_revision_is_graded_against_the_rehearsal_the_rules_derive():
    result = _wiring_rehearsal()
    attested = grading._attested(result, _spec_and_revision(), None)
    assert attested.source == f"specs/{SPEC.name} + revision {SPEC.stem}.plan.json, rehearsed at the wiring scale by the rules"
    assert attested.problems == [] and attested.spec.source.rehearsal["scale"] == "wiring"
    moved = {**result, "rehearsal": {**result["rehearsal"], "model": "org/other"}}
    assert grading._attested(moved, _spec_and_revision(), None).problems == [
        "SPEC-2: RESULT.rehearsal model differ from the re-derived rehearsal record."]


def test_a_rehearsal_record_without_its_revision_cannot_be_re_derived_and_a_plain_one_needs_none():
    spec = json.loads(SPEC.read_text())
    alone = _carrying(**{"spec.json": ("spec", spec)})
    assert grading._attested(_wiring_rehearsal(), alone, None).problems == [
        "SPEC-2: a rehearsal record without its revision file cannot be re-derived."]
    plain = grading._attested({}, alone, None)
    assert (plain.source, plain.supplied, plain.problems) == (f"specs/{SPEC.name}", (), [])


@pytest.mark.parametrize("carried", [{"spec": n} for n in range(4)])
def test_a_carried_rehearsal_spec_other_than_the_derived_one_is_reported_whichever_hash_sorts_first(carried):
    problems = grading._attested(_wiring_rehearsal(), _spec_and_revision(**{"rehearsal-spec.json": ("spec", carried)}),
                                 None).problems
    assert problems == ["SPEC-2: rehearsal-spec.json is not the rehearsal the rules derive from the spec as written; "
                        "graded against the derived one."]


def test_a_rehearsal_field_sorting_before_deviations_and_the_first_missing_substitution_are_reported():
    result = _wiring_rehearsal()
    moved = {**result, "rehearsal": {**result["rehearsal"], "backend": "service", "model": "org/other"}}
    assert grading._attested(moved, _spec_and_revision(), None).problems == [
        "SPEC-2: RESULT.rehearsal backend, model differ from the re-derived rehearsal record."]
    first, second = result["deviations"][0], result["deviations"][-1]
    assert first["reason"] != second["reason"]
    unposted = {**result, "deviations": result["deviations"][1:-1]}
    assert grading._attested(unposted, _spec_and_revision(), None).problems == [
        f"SPEC-2: 2 substitution(s) of the rehearsal are not in RESULT.deviations (first: {first['reason']})."]


def test_a_given_spec_that_does_not_load_is_unreadable_input():
    with pytest.raises(grading.GradeInputError, match="^spec: .*unknown rehearsal scale 'huge'"):
        grade_record({"rehearsal": {"scale": "huge"}}, spec=SPEC)


def _edited_spec_record():
    spec = {**json.loads(SPEC.read_text()), "steps": 39}  # not a spec of specs/ as written
    return {"evidence": {"version": 1, "files": [_inline("spec.json", "spec", json.dumps(spec))]}}


def test_without_an_attested_spec_a_category_that_would_opt_out_is_unverified_with_spec1():
    graded = grade_record(_edited_spec_record())
    assert graded.problems[0].startswith("SPEC-1: the record's spec cannot be attested")
    audit = graded.categories["generation_audit"]  # GS1 has no generation audit: it would be not_applicable
    assert audit.status == "unverified"
    assert Issue("SPEC-1", "unverified", "the record's spec cannot be attested (SPEC-1), so the spec it is graded "
                                         "against may not be the one it ran") in audit.issues


def test_a_spec_no_plan_can_be_built_from_is_a_problem_and_grades_as_no_spec(monkeypatch):
    def no_plan(spec):
        raise ValueError("no plan here")

    monkeypatch.setattr(grading, "draft_plan", no_plan)
    graded = grade_record({}, spec=SPEC)
    assert "SPEC: no execution plan can be built from the spec graded against (no plan here)." in graded.problems
    assert graded.categories["restoration"].status == "unknown"  # graded without a spec
