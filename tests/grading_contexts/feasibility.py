"""Minimal feasibility contexts (experiment/grading/feasibility.py, FEAS-1..FEAS-12) and the finding reader."""

from __future__ import annotations

from types import SimpleNamespace


def context(record=None, **result):
    return SimpleNamespace(result={"feasibility": record if record is not None else {}, **result}, plan=None,
                           spec=None, gate_applicable=lambda name: None, generation_settings=None,
                           evidence=SimpleNamespace(jsonl=lambda name: None, json=lambda name: None))


def messages(issues):
    return [(issue.rule, issue.status, issue.message) for issue in issues]
