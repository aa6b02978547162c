"""The grader's generation-audit rules (experiment/grading/generation_audit.py; docs/contract-rules.md GA-1..GA-11),
each on a minimal grading context whose expected finding is worked out in the test from the contract's text
(issue 28 item 7: the complete mutation run of experiment/grading/). Each comparison is tried with a wrong value
on each side of the right one."""

from __future__ import annotations

import hashlib
import json
from types import SimpleNamespace

import pytest
from grading_contexts.generation_audit import context as _ctx, audit_file as _file, found as _found

from experiment.grading import generation_audit as rules


# ---------------------------------------------------------------- GA-1

def test_ga1_applies_when_generated_training_data_or_required_is_true():
    def applies(features, section):
        spec = {"experiment_features": features, "generation_audit": section}
        return rules.applicability(spec)

    assert applies({"generated_training_data": True}, {"required": False}) == (
        True, "experiment_features.generated_training_data is true")
    assert applies({"generated_training_data": False}, {"required": True}) == (True, "generation_audit.required is true")
    assert applies({}, {"required": True}) == (True, "generation_audit.required is true")
    assert applies({"generated_training_data": False}, {"required": False}) == (
        False, "generation_audit opts out and no feature it covers is true")
    assert applies({"generated_training_data": False}, {"required": "yes"})[0] is False  # only true is true
    assert applies({"generated_training_data": 1}, {})[0] is False
    assert applies({}, {}) == (None, "experiment_features.generated_training_data is missing: applicability unknown")
    assert applies(None, None)[0] is None
    assert rules.applicability(None) == (None, "no spec")


def test_the_category_is_not_applicable_unknown_or_graded():
    opted_out = {"experiment_features": {"generated_training_data": False}, "generation_audit": {}}
    grade = rules.grade(_ctx({}, spec=opted_out))
    assert (grade.status, grade.issues, grade.notes) == (
        "not_applicable", [], ["generation_audit opts out and no feature it covers is true"])
    run_anyway = rules.grade(_ctx({"version": 1}, spec=opted_out))  # an audit that was run is graded
    assert run_anyway.status != "not_applicable" and run_anyway.issues
    unknown = rules.grade(_ctx({}, spec={}))
    assert (unknown.status, _found(unknown.issues)) == ("unknown", [
        ("GA-1", "unknown", "experiment_features.generated_training_data is missing: applicability unknown")])
    missing = rules.grade(_ctx({}, spec={"experiment_features": {"generated_training_data": True}}))
    assert (missing.status, _found(missing.issues)) == ("unknown", [
        ("GA-2", "unknown", "RESULT has no generation_audit record")])


# ---------------------------------------------------------------- GA-2

GA2_RECORD = {"version": 1, "stage": "before_training", **{key: "f" for key in ("dataset_file", "evaluation_file",
              "audit_file")}, "sample_seed": 7, "counts": {"generated": 1, "accepted": 1, "rejected": 0,
              "execution_errors": 0}, "samples": [], "label_error_count": 0, "overlap_count": 0}


@pytest.mark.parametrize("key, value, problem", [
    ("version", True, "version: true is not the number 1"),
    ("sample_seed", "7", "sample_seed must be an integer"), ("sample_seed", 7.0, "sample_seed must be an integer"),
    ("sample_seed", True, "sample_seed must be an integer"),
    ("counts", {"generated": True, "accepted": True, "rejected": False, "execution_errors": False},
     "counts must give integer generated, accepted, rejected, execution_errors"),
    ("label_error_count", -1, "label_error_count must be a non-negative integer"),
    ("label_error_count", True, "label_error_count must be a non-negative integer"),
    ("overlap_count", 1.0, "overlap_count must be a non-negative integer"),
])
def test_ga2_takes_the_records_numbers_as_json_numbers_only(key, value, problem):
    # the typed model takes each of these loosely (true as 1, "7" as 7, -1 as a count)
    assert rules.GA_2(_ctx(GA2_RECORD)) == []
    assert _found(rules.GA_2(_ctx({**GA2_RECORD, key: value}))) == [("GA-2", "invalid", f"generation_audit.{problem}")]


@pytest.mark.parametrize("record", ["the audit passed", [1]])
def test_ga2_a_record_that_is_no_object_is_invalid_applicable_or_not(record):
    opted_out = {"experiment_features": {"generated_training_data": False}, "generation_audit": {}}
    for spec in (opted_out, {"experiment_features": {"generated_training_data": True}}):
        grade = rules.grade(_ctx(record, spec=spec))
        assert (grade.status, _found(grade.issues)) == ("invalid", [
            ("GA-2", "invalid", f"generation_audit {record!r} is not an object")])


# ---------------------------------------------------------------- GA-3

TASKS = [{"item_id": "t1", "prompt": "What is 2 + 2?", "answer": "4", "disposition": "accepted"},
         {"item_id": "t2", "prompt": "What is 3 + 5?", "answer": "8", "disposition": "rejected"},
         {"item_id": "t3", "prompt": "What is 1 / 0?", "disposition": "execution_error"}]
FILES = [_file("tasks.jsonl", TASKS), _file("eval.jsonl", [{"item_id": "e1", "prompt": "Name a prime."}]),
         _file("audit.json", {"samples": []}, kind="generation_audit")]
REFS = {"dataset_file": "tasks.jsonl", "evaluation_file": "eval.jsonl", "audit_file": "audit.json"}


def test_ga3_the_three_files_are_retained_inline_the_candidates_and_evaluation_set_as_generated_tasks():
    assert rules.GA_3(_ctx(REFS, FILES)) == []
    assert _found(rules.GA_3(_ctx({**REFS, "audit_file": "other.json"}, FILES))) == [
        ("GA-3", "unverified", "audit_file: other.json is not a retained evidence file")]
    logged = [_file("tasks.jsonl", TASKS, kind="log"), *FILES[1:]]
    assert _found(rules.GA_3(_ctx(REFS, logged))) == [
        ("GA-3", "unverified", "dataset_file tasks.jsonl is not retained as kind generated_tasks")]
    assert _found(rules.GA_3(_ctx({**REFS, "dataset_file": "tasks.jsonl#rows"}, FILES))) == []  # a fragment: its file
    assert rules.GA_3(_ctx(REFS, [*FILES[:2], _file("audit.json", {}, kind="log")])) == []  # the audit file: any kind


def test_ga3_candidates_are_unique_and_complete_an_answer_unless_the_program_failed():
    assert rules._candidate_problems(TASKS) == []
    assert rules._candidate_problems([*TASKS, dict(TASKS[0])]) == ["candidate item_ids are not unique"]
    lacking = [{**TASKS[0], "answer": ""}, {**TASKS[1], "answer": None}, {**TASKS[0], "item_id": "t4", "prompt": 3},
               {"item_id": "t5", "prompt": "p", "disposition": "execution_error"}, {"prompt": "p"}]
    assert rules._candidate_problems(lacking) == ["4 candidate(s) lack an item_id, prompt or answer"]
    assert _found(rules.GA_3(_ctx(REFS, [_file("tasks.jsonl", [*TASKS, TASKS[0]]), *FILES[1:]]))) == [
        ("GA-3", "invalid", "candidate item_ids are not unique")]


# ---------------------------------------------------------------- GA-4

def test_ga4_counts_are_the_candidates_dispositions():
    counts = {"generated": 3, "accepted": 1, "rejected": 1, "execution_errors": 1}
    assert rules.GA_4(_ctx({**REFS, "counts": counts}, FILES)) == []
    wrong = {**counts, "accepted": 2, "rejected": 0}  # they still add up to 3
    assert _found(rules.GA_4(_ctx({**REFS, "counts": wrong}, FILES))) == [
        ("GA-4", "invalid", f"counts {repr(wrong)[:57]}... are not the candidates' {counts}")]  # cut to 60
    assert rules.GA_4(_ctx({**REFS, "counts": wrong}, FILES[1:])) == []  # no candidates to count: GA-3's finding


@pytest.mark.parametrize("generated", [2, 4])
def test_ga4_generated_is_accepted_plus_rejected_plus_execution_errors(generated):
    # a disposition none of the three is counted as generated only, so the counts do not add up (below and above)
    counts = {"generated": generated, "accepted": 1, "rejected": 1, "execution_errors": 1}
    assert _found(rules.GA_4(_ctx({**REFS, "counts": counts}, FILES[1:]))) == [
        ("GA-4", "invalid", "counts: generated is not accepted + rejected + execution_errors")]


@pytest.mark.parametrize("generated", [3.5, None, True])
def test_ga4_adds_up_only_whole_counts(generated):
    """A count that is no whole number is GA-2's type finding; the sum is not taken over it (3.5 is not 1 + 1 + 1, and
    None cannot be added)."""
    counts = {"generated": generated, "accepted": 1, "rejected": 1, "execution_errors": 1}
    assert rules.GA_4(_ctx({**REFS, "counts": counts}, FILES[1:])) == []


LOW, HIGH, SAMPLES = 1, 3, 4  # kept when the base solved it in 1 to 3 of 4 samples


def _rejected(solved):
    return {"item_id": f"r{solved}", "disposition": "rejected", "base_solved": solved,
            "error": f"filter 5: the base model solved it in {solved} of {SAMPLES} samples (kept: {LOW}-{HIGH})"}


def _filter(*tasks):
    return rules._filter_problems(list(tasks), LOW, HIGH, SAMPLES)


def test_ga4_an_accepted_candidate_was_solved_inside_the_keep_band():
    for solved in (1, 2, 3):
        assert _filter({"item_id": "a", "disposition": "accepted", "base_solved": solved}) == []
    for solved in (0, 4, None, 2.0, True, "2"):
        assert _filter({"item_id": "a", "disposition": "accepted", "base_solved": solved}) == ["a"]


def test_ga4_one_the_filter_rejected_was_solved_outside_the_band_in_its_words():
    assert _filter(_rejected(0), _rejected(4)) == []
    assert _filter(_rejected(1), _rejected(3)) == ["r1", "r3"]
    assert _filter({**_rejected(0), "error": "filter 5: the base model solved it in 0 of 5 samples (kept: 1-3)"}) == ["r0"]
    assert _filter({**_rejected(0), "error": "filter 4: too long"}) == []  # another filter's rejection: no count
    assert _filter({"item_id": "e", "disposition": "execution_error", "base_solved": None}) == []


@pytest.mark.parametrize("solved", [-1, 5])
def test_ga4_a_count_is_a_whole_number_of_the_filters_samples(solved):
    assert _filter({"item_id": "x", "disposition": "rejected", "base_solved": solved}) == ["x"]
    assert _filter({"item_id": "x", "disposition": "rejected", "base_solved": solved - (1 if solved > 0 else -1)}) == []


def test_ga4_every_candidates_file_with_filter_counts_is_checked_once():
    settings = SimpleNamespace(keep_band=(LOW, HIGH), filter_samples=SAMPLES)
    good, bad = [_rejected(0)], [_rejected(2), {"item_id": "a", "disposition": "accepted", "base_solved": 0}]
    files = [_file("r1.jsonl", bad), _file("tasks.jsonl", good), _file("plain.jsonl", TASKS)]
    audit = {"dataset_file": "tasks.jsonl", "rounds": [{"dataset_file": "r1.jsonl"}, {"dataset_file": "tasks.jsonl"},
                                                       {"dataset_file": "plain.jsonl"}]}
    assert _found(rules.GA_4_filter(_ctx(audit, files, settings=settings))) == [
        ("GA-4", "invalid", "'r1.jsonl': 2 candidate(s) ('r2, a') have a disposition their filter count and the spec's "
                            "keep band do not give")]
    assert rules.GA_4_filter(_ctx(audit, files, settings=None)) == []


# ---------------------------------------------------------------- GA-6, GA-7

SAMPLE = {"item_id": "t1", "method": "independent_resolve", "blind_to_label": True, "resolver_id": "solver:x",
          "reasoning": "2 + 2 = 4", "independent_answer": "4"}


@pytest.mark.parametrize("change", [{"method": "lookup"}, {"blind_to_label": 1}, {"blind_to_label": False},
                                    {"resolver_id": ""}, {"reasoning": None}])
def test_ga6_each_sample_is_a_blind_independent_re_solve(change):
    assert rules.GA_6(_ctx({"samples": [SAMPLE, SAMPLE]})) == []
    assert _found(rules.GA_6(_ctx({"samples": [SAMPLE, {**SAMPLE, **change}]}))) == [
        ("GA-6", "unverified", "sample 't1' is not a blind independent re-solve with resolver_id, reasoning and "
                               "independent_answer")]


def test_ga6_a_sample_without_an_independent_answer_is_unverified():
    sample = {k: v for k, v in SAMPLE.items() if k != "independent_answer"}
    assert [rule for rule, _, _ in _found(rules.GA_6(_ctx({"samples": [sample]})))] == ["GA-6"]
    assert rules.GA_6(_ctx({"samples": [{**SAMPLE, "independent_answer": None}]})) == []  # no answer is an answer


@pytest.mark.parametrize("strategy", ["numeric_exact", "categorical_exact"])
def test_ga7_the_comparison_strategy_is_a_supported_one(strategy):
    assert rules.GA_7(_ctx({}, spec={"generation_audit": {"answer_comparison": strategy}})) == []
    for other in ("fuzzy", None):
        assert _found(rules.GA_7(_ctx({}, spec={"generation_audit": {"answer_comparison": other}}))) == [
            ("GA-7", "unverified", f"answer_comparison {other!r} is missing or unsupported")]
    assert rules.GA_7(_ctx({}, spec=None))[0].status == "unverified"


# ---------------------------------------------------------------- GA-9

@pytest.mark.parametrize("key, limit_key", [("label_error_count", "max_label_errors"),
                                            ("overlap_count", "max_eval_overlaps")])
def test_ga9_the_audit_passes_within_the_specs_limits(key, limit_key):
    spec = {"generation_audit": {limit_key: 2}}
    for count in (1, 2):
        assert rules.GA_9(_ctx({key: count}, spec=spec)) == []
    assert _found(rules.GA_9(_ctx({key: 3}, spec=spec))) == [
        ("GA-9", "invalid", f"{key} 3 exceeds {limit_key} 2: the audit failed and blocks a definitive verdict")]
    assert _found(rules.GA_9(_ctx({key: 1}, spec={"generation_audit": {}}))) == [  # the limit defaults to 0
        ("GA-9", "invalid", f"{key} 1 exceeds {limit_key} 0: the audit failed and blocks a definitive verdict")]
    assert rules.GA_9(_ctx({key: 0}, spec={})) == []
    assert rules.GA_9(_ctx({key: "3"}, spec=spec)) == [] and rules.GA_9(_ctx({key: 3}, spec={
        "generation_audit": {limit_key: "2"}})) == []  # not integers: GA-2's finding


def test_ga9_no_optimizer_update_before_the_audit_passed():
    passed, step = {"event": "gate", "gate": "generation_audit", "status": "passed"}, {"event": "training_step"}
    message = [("GA-9", "invalid", "an optimizer update ran before the generation audit passed")]
    assert rules.GA_9_order(_ctx({}, events=[passed, step])) == []
    assert _found(rules.GA_9_order(_ctx({}, events=[step, passed]))) == message
    assert _found(rules.GA_9_order(_ctx({}, events=[{**passed, "status": "failed"}, step]))) == message
    assert _found(rules.GA_9_order(_ctx({}, events=[{**passed, "gate": "decision"}, step]))) == message
    assert rules.GA_9_order(_ctx({}, events=[{"event": "gate"}])) == []  # no update at all
    assert rules.GA_9_order(_ctx({}, events=None)) == []  # a bare record has no events


# ---------------------------------------------------------------- GA-10

def _ga10(samples, retained):
    files = [_file("audit.json", retained, kind="generation_audit", jsonl=False)] if retained is not None else []
    return _found(rules.GA_10(_ctx({"audit_file": "audit.json", "samples": samples, "seed": 1}, files)))


def test_ga10_the_records_samples_are_the_retained_files():
    mine = [{"item_id": "a", "agrees": True}, {"item_id": "b", "agrees": False}]
    assert _ga10(mine, {"samples": [{**mine[0], "extra": 1}, mine[1]], "seed": 1}) == []  # the file may add fields
    assert _ga10(mine, [mine[0], mine[1]]) == []  # a bare list of samples
    differ = [("GA-10", "unverified", "generation_audit.samples are not the retained audit file's samples, so which the "
                                      "audit found cannot be told")]
    assert _ga10(mine, {"samples": mine[:1]}) == differ
    assert _ga10(mine, {"samples": [*mine, mine[0]]}) == differ
    assert _ga10(mine, {"samples": [mine[1], mine[0]]}) == differ
    assert _ga10(mine, {"samples": [mine[0], "b"]}) == differ
    assert _ga10(mine, {"samples": [mine[0], {"item_id": "b"}]}) == differ


def test_ga10_a_whole_audit_file_says_what_the_record_says():
    mine = [{"item_id": "a"}]
    otherwise = [("GA-10", "unverified", "the audit file 'audit.json' says otherwise than the record's audit")]
    assert _ga10(mine, {"samples": mine, "seed": 2}) == otherwise
    assert _ga10(mine, {"samples": mine, "round": 1}) == otherwise  # a field the record does not hold
    not_inline = [("GA-10", "unverified", "the audit file 'audit.json' is not retained inline with its samples")]
    assert _ga10(mine, None) == not_inline
    assert _ga10(mine, {"samples": "a"}) == not_inline


def test_json_is_canonical_and_tells_true_from_one():
    assert rules._json({"b": 1, "a": [True]}) == rules._json({"a": [True], "b": 1}) == '{"a": [true], "b": 1}'
    assert rules._json(True) != rules._json(1) and rules._json(1) != rules._json(1.0)


def test_ga3_a_candidates_file_of_a_kind_sorting_before_generated_tasks_is_not_one():
    kept = [_file("tasks.jsonl", TASKS, kind="data"), *FILES[1:]]
    assert _found(rules.GA_3(_ctx(REFS, kept))) == [
        ("GA-3", "unverified", "dataset_file tasks.jsonl is not retained as kind generated_tasks")]


def _held_out_file(tmp_path, monkeypatch):
    monkeypatch.setenv("RX_DATA_DIRS", str(tmp_path))  # a data directory the spec may name files in
    rows = [{"id": "h-1", "question": "What is 2 + 3?", "answer": "5"},
            {"id": "h-2", "question": "What is 7 - 4?", "answer": "3"}]
    path = tmp_path / "held_out.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path, [(row["id"], row["question"]) for row in rows]


def test_ga3_the_held_out_set_is_every_item_of_the_specs_eval_file_read_once(tmp_path, monkeypatch):
    monkeypatch.setattr(rules, "_HELD_OUT", {})  # the set is read once per data file: start from none read
    path, expected = _held_out_file(tmp_path, monkeypatch)
    ctx = _ctx(REFS, FILES, spec={"eval": {"path": str(path)}})
    assert rules._held_out_set(ctx) == expected
    evaluation = [{"item_id": i, "prompt": q} for i, q in expected]
    record = {**REFS, "evaluation_file": "eval.jsonl"}
    same = _ctx(record, [_file("eval.jsonl", evaluation)], spec={"eval": {"path": str(path)}})
    assert rules.GA_3_evaluation_set(same) == []
    fewer = _ctx(record, [_file("eval.jsonl", evaluation[:1])], spec={"eval": {"path": str(path)}})
    assert _found(rules.GA_3_evaluation_set(fewer)) == [
        ("GA-3", "invalid", "the evaluation file 'eval.jsonl' is not the spec's held-out set (2 items, their ids and text)")]


def test_ga3_an_eval_file_that_cannot_be_read_here_leaves_the_set_unchecked(tmp_path, monkeypatch):
    monkeypatch.setattr(rules, "_HELD_OUT", {})
    monkeypatch.setenv("RX_DATA_DIRS", str(tmp_path))
    ctx = _ctx({**REFS, "evaluation_file": "eval.jsonl"}, [_file("eval.jsonl", [{"item_id": "x", "prompt": "y"}])],
               spec={"eval": {"path": str(tmp_path / "missing.jsonl")}})
    assert rules._held_out_set(ctx) is None
    assert rules.GA_3_evaluation_set(ctx) == []


def test_ga4_a_disposition_sorting_before_accepted_is_not_accepted():
    assert _filter({"item_id": "x", "disposition": "abandoned", "base_solved": 0}) == []


def test_ga4_a_filter_rejection_in_other_words_sorting_before_the_filters_is_not_its_words():
    assert _filter({**_rejected(0), "error": "filter 5: a count of 0"}) == ["r0"]


ACCEPTED = [{"item_id": f"a{n}", "prompt": f"What is {n} + 1?", "answer": str(n + 1), "disposition": "accepted"}
            for n in range(5)]


def _selected(seed, size):
    """The first `size` accepted ids by sha256(json.dumps([seed, item_id])) (docs/contract-rules.md GA-5)."""
    return sorted((t["item_id"] for t in ACCEPTED),
                  key=lambda i: hashlib.sha256(json.dumps([seed, i]).encode()).hexdigest())[:size]


def test_ga5_the_sample_is_the_specs_minimum_size_of_accepted_candidates_in_seed_order():
    spec = {"generation_audit": {"min_sample_size": 2}}

    def ga5(ids):
        audit = {**REFS, "sample_seed": 7, "samples": [{"item_id": i} for i in ids]}
        return _found(rules.GA_5(_ctx(audit, [_file("tasks.jsonl", ACCEPTED)], spec=spec)))

    chosen = _selected(7, 2)
    assert ga5(chosen) == []
    assert ga5(_selected(7, 5)) == [("GA-5", "invalid", "the 5 sampled ids are not the 2 selected by "
                                                        "sha256(json.dumps([seed, item_id]))")]
    assert ga5([*chosen, "a9"]) == [("GA-5", "invalid", "the 3 sampled ids are not the 2 selected by "
                                                        "sha256(json.dumps([seed, item_id]))")]


def test_ga6_a_method_sorting_before_independent_resolve_is_not_one():
    assert _found(rules.GA_6(_ctx({"samples": [{**SAMPLE, "method": "guess"}]}))) == [
        ("GA-6", "unverified", "sample 't1' is not a blind independent re-solve with resolver_id, reasoning and "
                               "independent_answer")]


def test_ga6_the_spec_identities_take_the_base_models_served_name_from_its_model_deviation():
    spec = {"base_model": "org/base", "generation": {"generator_model": "org/base", "solver_model": "org/solver"}}
    deviations = [{"field": "model", "original": "org/base", "effective": "embedded/tiny"},
                  {"field": "steps", "original": "org/base", "effective": "ignored/steps"},
                  {"field": "dataset", "original": "org/base", "effective": "ignored/dataset"},
                  {"field": "model", "original": "org/other", "effective": "ignored/other"},
                  {"field": "model", "original": "org/a", "effective": "ignored/a"}]  # fields, originals on each side
    ctx = SimpleNamespace(spec=spec, result={"deviations": deviations})
    base = {"org/base", "embedded/tiny"}
    assert rules._spec_identities(ctx) == {"generator": base, "filter_base_model": base, "trained_base_model": base,
                                           "solver": {"org/solver"}}
    other = {**spec, "generation": {"generator_path": "gen/code.py", "solver_path": "solve/code.py"}}
    assert rules._spec_identities(SimpleNamespace(spec=other, result={"deviations": deviations})) == {
        "generator": {"gen/code.py"}, "filter_base_model": base, "trained_base_model": base, "solver": {"solve/code.py"}}


def test_ga6_a_generator_sorting_after_the_base_model_is_not_the_base():
    spec = {"base_model": "org/base", "generation": {"generator_model": "zz/generator", "solver_model": "org/solver"}}
    assert rules._spec_identities(SimpleNamespace(spec=spec, result={}))["generator"] == {"zz/generator"}


@pytest.mark.parametrize("resolver, compared", [({"name": "solver"}, None), (None, {"generator": {"name": "g"}})])
def test_ga6_the_resolver_and_the_identities_compared_are_both_recorded(resolver, compared):
    ctx = _ctx({"resolver": resolver, "compared_identities": compared})
    assert _found(rules.GA_6_independent_resolver(ctx)) == [
        ("GA-6", "unverified", "the audit does not record the re-solver's identity and the generator, filter and trained "
                               "base model it must be independent of")]


def test_ga9_an_event_sorting_after_training_step_is_no_update():
    passed, step = {"event": "gate", "gate": "generation_audit", "status": "passed"}, {"event": "training_step"}
    assert rules.GA_9_order(_ctx({}, events=[{"event": "wrote_table"}, passed, step])) == []


IDENTITY_SPEC = {"base_model": "org/base", "generation": {"generator_model": "org/gen", "solver_model": "org/solver"}}
COMPARED = {"generator": {"name": "org/gen"}, "filter_base_model": {"name": "org/base"},
            "trained_base_model": {"name": "org/base"}}


def _resolver_audit(resolver=None, compared=None, independent=True, problems=(), samples=None):
    return {"resolver": resolver or {"name": "org/solver"}, "compared_identities": compared or COMPARED,
            "resolver_independent": independent, "resolver_independence_problems": list(problems),
            "samples": samples if samples is not None else [{"item_id": "t1", "resolver_id": "org/solver:t1"}]}


def _ga6(audit, spec=IDENTITY_SPEC):
    return _found(rules.GA_6_independent_resolver(_ctx(audit, spec=spec)))


def test_ga6_an_independent_resolver_named_as_the_spec_says_passes():
    assert _ga6(_resolver_audit()) == []


def test_ga6_each_compared_identity_is_the_spec_s_where_the_spec_names_them():
    compared = {**COMPARED, "generator": {"name": "org/other"}}
    assert _ga6(_resolver_audit(compared=compared)) == [
        ("GA-6", "invalid", "the audit's generator 'org/other' is not the spec's org/gen")]
    assert _ga6(_resolver_audit(compared=compared), spec={"base_model": "org/base"}) == []  # no generation block


def test_ga6_a_resolver_sharing_weights_with_a_compared_model_is_no_independent_check():
    shared = {**COMPARED, "generator": {"name": "org/gen", "weights_sha256": "w1"}}
    resolver = {"name": "org/solver", "weights_sha256": "w1"}
    problem = "the re-solver org/solver is the generator (org/gen)"
    assert _ga6(_resolver_audit(resolver, shared, independent=False, problems=[problem])) == [
        ("GA-6", "invalid", f"{problem}: the re-solve is no independent check")]
    assert _ga6(_resolver_audit(resolver, shared)) == [
        ("GA-6", "invalid", f"{problem}: the re-solve is no independent check"),
        ("GA-6", "invalid", "resolver_independent and resolver_independence_problems are not what the recorded "
                            "identities give")]
    assert _ga6(_resolver_audit(independent=False, problems=[problem])) == [  # says dependent where it is not
        ("GA-6", "invalid", "resolver_independent and resolver_independence_problems are not what the recorded "
                            "identities give")]


def test_ga6_every_sample_names_the_recorded_resolver():
    samples = [{"item_id": "t1", "resolver_id": "org/solver:t1"}, {"item_id": "t2", "resolver_id": "org/other:t2"}]
    assert _ga6(_resolver_audit(samples=samples)) == [
        ("GA-6", "invalid", "1 sample(s) name another resolver than 'org/solver'")]


# ---------------------------------------------------------------- GA-11: every round from its own files

ROUND_COUNTS = {"generated": 3, "accepted": 1, "rejected": 1, "execution_errors": 1}  # TASKS' dispositions


def _ga11(answer="4", audit_value=None, spec="default", **entry_changes):
    entry = {"round": 1, "counts": ROUND_COUNTS, "sample_size": 1, "label_error_count": 0,
             "dataset_file": "r1.jsonl", "audit_file": "a1.json", **entry_changes}
    record = {"rounds": [entry], **{k: entry[k] for k in ("dataset_file", "audit_file", "counts", "label_error_count")}}
    samples = [{"item_id": "t1", "independent_answer": answer}]
    files = [_file("r1.jsonl", TASKS)]
    if audit_value != "absent":
        files.append(_file("a1.json", audit_value if audit_value is not None else {"samples": samples},
                           kind="generation_audit", jsonl=False))
    spec = {"generation_audit": {"answer_comparison": "numeric_exact"}} if spec == "default" else spec
    return _found(rules.GA_11(_ctx(record, files, spec=spec)))


ROUND_WRONG = ("GA-11", "invalid", "round 1: its counts, sample size, label errors or sampled labels are not what its "
                                   "files give")


def test_ga11_a_round_that_recomputes_from_its_files_passes_its_audit_file_an_object_or_a_list():
    assert _ga11() == []
    assert _ga11(audit_value=[{"item_id": "t1", "independent_answer": "4"}]) == []


def test_ga11_a_round_whose_label_errors_or_number_are_not_its_files_is_invalid():
    assert _ga11(answer="5") == [ROUND_WRONG]  # t1's label is 4: one label error, the round says 0
    assert _ga11(answer="5", spec=None) == []  # no supported comparison stated: label errors are not recomputed
    assert _ga11(round=2) == [ROUND_WRONG]
    assert _ga11(audit_value="absent") == [("GA-11", "invalid", "round 1: its candidates or audit file is not retained")]


@pytest.mark.parametrize("label, wrong", [("4", False), ("3", True), ("5", True)])
def test_ga11_a_sampled_label_is_the_candidates_label(label, wrong):
    value = {"samples": [{"item_id": "t1", "independent_answer": "4", "label": label}]}
    assert _ga11(audit_value=value) == ([ROUND_WRONG] if wrong else [])


def test_ga11_each_round_is_checked_after_a_missing_one_and_the_last_round_is_the_records():
    r1 = {"round": 1, "counts": ROUND_COUNTS, "sample_size": 1, "label_error_count": 0, "dataset_file": "gone.jsonl",
          "audit_file": "gone.json"}
    r2 = {**r1, "round": 2, "dataset_file": "r1.jsonl", "audit_file": "a1.json", "sample_size": 2}
    samples = {"samples": [{"item_id": "t1", "independent_answer": "4"}]}
    files = [_file("r1.jsonl", TASKS), _file("a1.json", samples, kind="generation_audit", jsonl=False)]
    spec = {"generation_audit": {"answer_comparison": "numeric_exact"}}
    record = {"rounds": [r1, r2], **{k: r2[k] for k in ("dataset_file", "audit_file", "counts", "label_error_count")}}
    assert _found(rules.GA_11(_ctx(record, files, spec=spec))) == [
        ("GA-11", "invalid", "round 1: its candidates or audit file is not retained"),
        ("GA-11", "invalid", "round 2: its counts, sample size, label errors or sampled labels are not what its files "
                             "give")]
    first_as_last = {**record, "dataset_file": "gone.jsonl", "audit_file": "gone.json"}
    assert ("GA-11", "invalid", "the last round is not the record's audit") in _found(
        rules.GA_11(_ctx(first_as_last, files, spec=spec)))
    assert ("GA-11", "invalid", "the last round is not the record's audit") not in _found(
        rules.GA_11(_ctx(record, files, spec=spec)))


def test_ga11_the_records_disagreements_and_sample_size_are_its_own():
    record = {"label_error_count": 1, "disagreements": [], "sample_size": 2, "samples": [{}]}
    assert _found(rules.GA_11(_ctx(record))) == [
        ("GA-11", "invalid", "disagreements do not list the label errors"),
        ("GA-11", "invalid", "sample_size is not the number of samples")]
    assert rules.GA_11(_ctx({"label_error_count": 1, "disagreements": ["t1"], "sample_size": 1, "samples": [{}]})) == []


def test_ga11_the_records_duplicate_count_is_the_candidates():
    # TASKS' three candidates have three different prompts: no duplicate
    assert rules.GA_11(_ctx({**REFS, "duplicate_count": 0}, FILES)) == []
    assert _found(rules.GA_11(_ctx({**REFS, "duplicate_count": 2}, FILES))) == [
        ("GA-11", "invalid", "duplicate_count 2 is not what the candidates give")]
    assert rules.GA_11(_ctx({**REFS, "duplicate_count": 2}, FILES[1:])) == []  # no candidates retained: GA-3's finding
