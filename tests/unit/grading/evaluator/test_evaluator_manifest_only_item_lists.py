"""The grader's evaluator rules (experiment/grading/evaluator.py, docs/contract-rules.md EVAL-4), on
a minimal grading context: the record's evaluators and the spec only."""

from __future__ import annotations

from types import SimpleNamespace

from experiment.grading import evaluator as rules

KEY = "0123456789abcdef" * 4  # a 64-hex evaluator id


class _Evidence:
    """Every reference is retained inline, with the sha256 "m" * 64."""

    def state(self, ref):
        return ("usable",)

    def sha256(self, ref):
        return "m" * 64


def _ctx(items, spec):
    result = {"evaluation": {"evaluators": {KEY: {"items": items}}}}
    return SimpleNamespace(result=result, spec=spec, evidence=_Evidence())


def test_a_manifest_only_item_list_under_a_decision_rule_is_unverified_and_names_the_evaluator():
    items = {"manifest_ref": "items.jsonl", "manifest_sha256": "m" * 64}
    issues = rules.EVAL_4(_ctx(items, {"decision_rule": {"method": "paired_hoeffding"}}))
    assert [(issue.rule, issue.status) for issue in issues] == [("EVAL-4", "unverified")]
    assert issues[0].message.startswith("evaluator 0123456789ab: a manifest-only item list")


def test_a_retained_manifest_only_item_list_without_a_decision_rule_passes():
    items = {"manifest_ref": "items.jsonl", "manifest_sha256": "m" * 64}
    assert rules.EVAL_4(_ctx(items, {})) == []


def test_duplicate_item_ids_are_invalid_and_name_the_evaluator():
    issues = rules.EVAL_4(_ctx({"ids": ["a", "b", "a"]}, {}))
    assert [(issue.rule, issue.status, issue.message) for issue in issues] == [
        ("EVAL-4", "invalid", "evaluator 0123456789ab: items.ids has duplicates")]
