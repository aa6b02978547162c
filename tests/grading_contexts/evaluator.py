"""Minimal evaluator contexts (experiment/grading/evaluator.py, EVAL-1..EVAL-10, LOSS-1..LOSS-4): one frozen
evaluator and its key, inline evidence by name, prediction rows, held-out loss entries and the finding readers."""

from __future__ import annotations

import hashlib
import json
from types import SimpleNamespace

from experiment.grading import evaluator as rules


PROVENANCE = {"code_sha256": "c" * 64, "items": {"ids": ["i1", "i2"]},
              "decoding": {"temperature": 0.0, "max_tokens": 16, "stop": ["\n"]}}


def evaluator_key(provenance) -> str:
    """EVAL-2's formula, written out: sha256 of the canonical JSON."""
    text = json.dumps(provenance, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


KEY = evaluator_key(PROVENANCE)


class InlineEvidence:
    """Inline files by name: each a list of JSONL rows (None: retained but not JSONL); a name not listed is
    not retained."""

    def __init__(self, files=None):
        self.files = files or {}

    def usable(self, name):
        return name in self.files

    def why(self, name):
        return f"{name} is not retained"

    def jsonl(self, name):
        return self.files.get(name)


def context(evaluators=None, scores=None, files=None, **result):
    evaluation = {"evaluators": {KEY: PROVENANCE} if evaluators is None else evaluators, "scores": scores or []}
    return SimpleNamespace(result={"evaluation": evaluation, **result}, spec={}, plan=None, trained=False,
                           finished=True, evidence=InlineEvidence(files))


def messages(issues):
    return [(issue.rule, issue.status, issue.message) for issue in issues]


SCORE = {"arm": "T", "metric": "accuracy", "value": 0.5, "seed": 0, "evaluator_id": KEY, "predictions_ref": "t.jsonl"}


def prediction_row(item, **extra):
    return {"item_id": item, "arm": "T", "prediction": "4", "reference": "4", "metric": "accuracy",
            "evaluator_id": KEY, "seed": 0, "value": 1.0, **extra}


def eval9_messages(rows, score=SCORE, evaluators=None):
    return messages(rules.EVAL_9(context(evaluators, scores=[score], files={"t.jsonl": rows})))


def loss_context(loss_eval=None, scores=(), files=None, aggregation="token_mean", loss=True, trained=True, runs=(),
              trained_arms=("T",)):
    ctx = context(scores=list(scores), files=files, **({"loss_eval": loss_eval} if loss_eval is not None else {}))
    ctx.trained = trained
    ctx.plan = SimpleNamespace(eval={"loss_eval": loss, "aggregation": aggregation}, training_runs=list(runs),
                               trained_arms=[SimpleNamespace(name=a) for a in trained_arms])
    return ctx


def nll_rows(*pairs):
    return [{"prediction": {"nll_sum": s, "n_tokens": n}} for s, n in pairs]


ROWS = nll_rows((6.0, 2), (3.0, 6), (0.0, 0))  # token_mean 9/8; example_mean (3 + 0.5) / 2; one empty example


def loss_entry(aggregation="token_mean", **changes):
    entry = {"aggregation": aggregation, "value": 9 / 8 if aggregation == "token_mean" else 1.75, "token_mean": 9 / 8,
             "example_mean": 1.75, "nll_sum": 9.0, "n_tokens": 8, "n_examples": 2, "n_empty": 1}
    return {**entry, **changes}


LOSS_SCORE = {**SCORE, "metric": "heldout_nll", "value": 9 / 8}


def loss3_findings(entry, score=LOSS_SCORE, rows=ROWS, aggregation="token_mean", **ctx_args):
    loss_eval = {"aggregation": aggregation, "arms": {"T": entry}}
    ctx = loss_context(loss_eval, scores=[score], files={"t.jsonl": rows}, aggregation=aggregation, **ctx_args)
    return [(status, message) for _, status, message in messages(rules.LOSS_3(ctx))]
