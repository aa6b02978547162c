"""The grader's generation-audit rules (experiment/grading/generation_audit.py; docs/contract-rules.md
GA-8: the audit's counts recompute from the retained files), on a minimal grading context."""

from __future__ import annotations


from experiment.grading import generation_audit as rules
from grading_contexts.generation_audit import ga8_context as _ctx


def test_evaluation_rows_without_a_prompt_are_invalid_not_an_exception():
    issues = rules.GA_8(_ctx([{"item_id": "e1"}], overlap_count=0))
    assert [(issue.rule, issue.status, issue.message) for issue in issues] == [
        ("GA-8", "invalid", "the evaluation file rows lack item_id or prompt")]


def test_the_overlap_count_recomputes_from_the_files():
    # one held-out prompt equals an accepted task's prompt: one overlap
    rows = [{"item_id": "e1", "prompt": "What is 2 + 2?"}, {"item_id": "e2", "prompt": "Name a prime."}]
    assert rules.GA_8(_ctx(rows, overlap_count=1)) == []
    issues = rules.GA_8(_ctx(rows, overlap_count=0))
    assert [(issue.rule, issue.status) for issue in issues] == [("GA-8", "invalid")]
    assert issues[0].message == "overlap_count 0 but the evaluation set gives 1"
