"""Minimal decision contexts (experiment/grading/decision.py, DEC-6..DEC-13): two-arm best-LR and three-LR
records with their retained observation files, and the criterion summaries a direction verdict reports."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from experiment.grading import decision


class ObservationFiles:
    """Retained files by name: (sha256, usable, why, JSONL rows or None)."""

    def __init__(self, files):
        self.files = files

    def sha256(self, name):
        return self.files.get(name, (None,))[0]

    def usable(self, name):
        return self.files[name][1]

    def why(self, name):
        return self.files[name][2]

    def state(self, name):
        return ("usable" if self.files[name][1] else "missing"), None, self.files[name][2]

    def jsonl(self, name):
        return self.files[name][3]


def observation_context(decision_object, files=None):
    from types import SimpleNamespace

    return SimpleNamespace(result={"decision": decision_object}, spec={"decision_rule": {"method": "paired_hoeffding"}},
                           evidence=ObservationFiles(files or {}))


def two_arm_best_lr_context(vocabulary="direction_confidence"):
    from types import SimpleNamespace

    values = {"a1": {"nll": 1.0, "time": 5.0}, "a2": {"nll": 2.0, "time": 1.0}, "b1": {"nll": 3.0, "time": 2.0}}
    rows = [{"item_id": "best_lr_threshold", "arm": run, "seed": 0, "metric": metric, "value": value,
             "evaluator_id": "e"} for run, by_metric in values.items() for metric, value in by_metric.items()]
    ctx = observation_context({"observations": rows})
    ctx.spec = {"verdict_rule": {"method": "best_lr_threshold", "seeds": [0], "criteria": [
        {"id": "c1", "metric": "nll", "weights": {"A": 1, "B": -1}, "margin": 0.0},
        {"id": "c2", "metric": "time", "weights": {"A": 1}, "margin": 0.0}]}}
    runs = [SimpleNamespace(name="a1", arm="A", lr=0.01), SimpleNamespace(name="a2", arm="A", lr=0.02),
            SimpleNamespace(name="b1", arm="B", lr=0.01)]
    ctx.plan = SimpleNamespace(role_to_arm={}, selection=None, decision=None, vocabulary=vocabulary,
                               training_runs=runs)
    return ctx


def three_lr_context(values=None, weights=None, **result):
    """Arm A trains at three learning rates with held-out NLL 2, 1, 3: the lowest is the middle rate's (a2),
    inside the grid, so no grid edge; arm B trains at one rate (a grid of one has no edge either)."""
    values = values or {"a1": 2.0, "a2": 1.0, "a3": 3.0, "b1": 4.0}
    rows = [{"item_id": "best_lr_threshold", "arm": run, "seed": 0, "metric": "nll", "value": value, "evaluator_id": "e"}
            for run, value in values.items()]
    runs = [SimpleNamespace(name=name, arm=name[0].upper(), lr=lr)
            for name, lr in (("a1", 0.01), ("a2", 0.02), ("a3", 0.04), ("b1", 0.01))]
    return SimpleNamespace(
        result={"decision": {"observations": rows}, **result},
        spec={"verdict_rule": {"method": "best_lr_threshold", "seeds": [0], "criteria": [
            {"id": "c1", "metric": "nll", "weights": weights or {"A": 1, "B": -1}, "margin": 0.0}]}},
        plan=SimpleNamespace(role_to_arm={}, selection=None, decision=None, vocabulary="three_way", training_runs=runs,
                             eval={}),
        evidence=SimpleNamespace(entries=[], jsonl=lambda name: None))


# _three_lr_ctx's recomputation: A selects a2 (rate 0.02, NLL 1, inside its grid), B b1 (0.01, NLL 4);
# c1 = 1 * 1 - 1 * 4 = -3 against margin 0: not met.
SELECTED = {"A": {"selected_run": "a2", "selected_lr": 0.02, "grid_edge": False, "nll": 1.0},
            "B": {"selected_run": "b1", "selected_lr": 0.01, "grid_edge": False, "nll": 4.0}}


CRITERION_C1 = {"id": "c1", "metric": "nll", "effect": -3.0, "margin": 0.0, "met": False}


def summaries(metrics_arms, files=None, weights=None):
    import json

    files = files or {}
    ctx = three_lr_context(weights=weights, metrics={"arms": metrics_arms})
    ctx.evidence = SimpleNamespace(entries=[{"name": n} for n in files],
                                   json=lambda name: json.loads(json.dumps(files[name])) if name in files else None)
    recomputed, _ = decision._recompute(ctx)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(decision, "derived_rows", lambda ctx: (None, "not under test"))
        return [i.message for i in decision._selection_summaries(ctx, recomputed)]
