"""Minimal correctness contexts (experiment/grading/correctness.py, CORR-1..CORR-11): one planned path, its
tolerance and measured errors, inline evidence by name, and the finding reader."""

from __future__ import annotations

import hashlib
import json
from types import SimpleNamespace


TOLERANCE = {"atol": 1e-6, "rtol": 1e-4}


SPEC_PATH = {"id": "p1", "baseline_revision": "stock@1", "reference_revision": "ref@2",
             "tolerances": {"baseline_update": TOLERANCE}}


ERRORS = {"max_abs_error": 1e-7, "reference_max_abs": 1.0, "relative_l2_error": 1e-5, "cosine_similarity": 1.0}


PATH = {"id": "p1", "baseline_revision": "stock@1", "reference_revision": "ref@2", "fixed_input": {"sha256": "f" * 64},
        "errors": {"baseline_update": ERRORS}}


class InlineEvidence:
    def __init__(self, files=None):
        self.files = files or {}  # name -> bytes
        self.entries = [{"name": name} for name in self.files]

    def usable(self, name):
        return name in self.files

    def sha256(self, name):
        return hashlib.sha256(self.files[name]).hexdigest() if name in self.files else None

    def json(self, name):
        try:
            return json.loads(self.files[name])
        except (KeyError, ValueError):
            return None


def context(paths=(PATH,), spec_paths=(SPEC_PATH,), spec=None, files=None, revision_fields=(), **result):
    record = {"required": True, "paths": list(paths)}
    return SimpleNamespace(result={"correctness_preflight": record, **result},
                           spec={"correctness_preflight": {"paths": list(spec_paths)}, **(spec or {})},
                           revision_fields=set(revision_fields), evidence=InlineEvidence(files), trained=True)


def messages(issues):
    return [(issue.rule, issue.status, issue.message) for issue in issues]
