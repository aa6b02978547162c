"""Minimal generation-audit contexts (experiment/grading/generation_audit.py, GA-1..GA-11): audit files as
retained evidence, the context over an audit record, the finding reader, and GA-8's recount context."""

from __future__ import annotations

import hashlib
import json
from types import SimpleNamespace

from experiment.grading.evidence import EvidenceAccess


def audit_file(name, value, kind="generated_tasks", jsonl=True):
    text = "".join(json.dumps(row) + "\n" for row in value) if jsonl and isinstance(value, list) else json.dumps(value)
    return {"name": name, "kind": kind, "content": text, "sha256": hashlib.sha256(text.encode()).hexdigest()}


def context(audit, files=(), spec=None, events=None, settings=None, **result):
    record = {"generation_audit": audit, "evidence": {"version": 1, "files": list(files)}, **result}
    return SimpleNamespace(result=record, spec=spec, events=events, evidence=EvidenceAccess(record),
                           generation_settings=settings)


def found(issues):
    return [(issue.rule, issue.status, issue.message) for issue in issues]


GA8_TASKS = [{"item_id": "t1", "prompt": "What is 2 + 2?", "answer": "4", "disposition": "accepted"},
         {"item_id": "t2", "prompt": "What is 3 + 5?", "answer": "8", "disposition": "accepted"}]


def ga8_context(evaluation_rows, overlap_count):
    def jsonl(rows):
        return "".join(json.dumps(row) + "\n" for row in rows)

    result = {"generation_audit": {"dataset_file": "tasks.jsonl", "evaluation_file": "eval.jsonl",
                                   "overlap_count": overlap_count},
              "evidence": {"version": 1, "files": [{"name": "tasks.jsonl", "content": jsonl(GA8_TASKS)},
                                                   {"name": "eval.jsonl", "content": jsonl(evaluation_rows)}]}}
    return SimpleNamespace(result=result, spec=None, evidence=EvidenceAccess(result))
