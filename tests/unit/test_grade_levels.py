"""Grade levels a person can read (experiment.report.levels): green, amber (honest unverified), red, and the
exit status flows.validate gives each."""

from __future__ import annotations

from experiment.report.levels import AMBER, GREEN, RED, level

CATEGORY_NAMES = ("evaluator", "decision", "restoration", "correctness", "feasibility", "generation_audit")


def grade(problems=(), **statuses):
    categories = {name: {"status": "verified", "issues": []} for name in CATEGORY_NAMES}
    for name, (status, issues) in statuses.items():
        categories[name] = {"status": status, "issues": list(issues)}
    return {"categories": categories, "problems": list(problems)}


def test_every_category_settled_and_no_problem_is_green_and_exits_0():
    verdict = level(grade(generation_audit=("not_applicable", [])))
    assert (verdict.word, verdict.exit_status, verdict.open_categories) == (GREEN, 0, {})
    assert verdict.headline().startswith("GREEN: ")


def test_an_unverified_category_with_nothing_wrong_is_amber_named_with_what_would_settle_it():
    verdict = level(grade(correctness=("unverified", ["CORR-6: path gs1: pins come from the revision file."])))
    assert (verdict.word, verdict.exit_status) == (AMBER, 3)
    assert list(verdict.open_categories) == ["correctness"]
    assert "revision file" in verdict.open_categories["correctness"]  # the CORR-6 hint, not the generic one
    assert verdict.lines()[1].startswith("  correctness would be settled by: ")


def test_an_unknown_category_without_a_rule_hint_gets_its_category_hint():
    verdict = level(grade(feasibility=("unknown", ["FEAS-2: Re-projection required: steps changed."])))
    assert verdict.word == AMBER and "feasibility pilot" in verdict.open_categories["feasibility"]


def test_an_invalid_category_is_red_even_beside_open_ones():
    verdict = level(grade(decision=("invalid", ["DEC-7: observations disagree."]), correctness=("unverified", [])))
    assert (verdict.word, verdict.exit_status) == (RED, 1)
    assert "decision invalid" in verdict.headline() and "correctness" in verdict.open_categories


def test_a_record_level_problem_is_red_though_every_category_is_verified():
    verdict = level(grade(problems=["EVID-8: events.jsonl line 3 is not JSON."]))
    assert verdict.word == RED and "1 problem" in verdict.headline()


def test_a_missing_or_malformed_grade_is_red():
    assert level(None).word == RED
    assert level({"categories": []}).word == RED
    assert level(grade(decision=("bogus", []))).word == RED  # a status the exchange does not have
