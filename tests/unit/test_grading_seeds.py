"""The grader with several scheduled seeds (issue 29): each seed's arms form the restoration groups again
(REST-3), and every (arm, seed) score reproduces that seed's mean from the observations (DEC-10).
Minimal grading contexts, literals only; the plan is the real two-seed plan of the GS1 seed spec."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from spec_variants import variant, write_variant

from experiment.contract.plan import build_plan
from experiment.contract.spec import load_spec
from experiment.grading import decision as decision_rules
from experiment.grading import restoration as rules


@pytest.fixture
def two_seed_plan(tmp_path):
    return build_plan(load_spec(write_variant(variant("seeds-0-1"), tmp_path)))


def _entry(adapter: str) -> dict:
    return {"initialization": {"adapter_sha256": adapter, "checkpoint_uri": f"tinker://init/{adapter[:4]}"}}


def _restoration_ctx(plan, seed1_adapters):
    arms = {"grpo_gs8": _entry("a" * 64), "gs1_kernel": _entry("a" * 64),
            "grpo_gs8-seed1": _entry(seed1_adapters[0]), "gs1_kernel-seed1": _entry(seed1_adapters[1])}
    spec = {"restoration_preflight": {"groups": [{"arms": [{"name": "grpo_gs8"}, {"name": "gs1_kernel"}]}]}}
    return SimpleNamespace(result={"initialization_provenance": {"version": 1, "arms": arms}}, spec=spec, plan=plan)


def test_each_seeds_arms_must_share_their_initialization(two_seed_plan, monkeypatch):
    split = _restoration_ctx(two_seed_plan, ("b" * 64, "c" * 64))  # seed 1's arms started from different adapters
    monkeypatch.setattr(rules, "_seed_replicas", lambda ctx: [])  # weakened: the spec's groups only
    assert rules.REST_3(split) == []
    monkeypatch.undo()
    issues = rules.REST_3(split)
    assert issues and {issue.rule for issue in issues} == {"REST-3"}
    assert "grpo_gs8-seed1/gs1_kernel-seed1" in issues[0].message
    assert rules.REST_3(_restoration_ctx(two_seed_plan, ("b" * 64, "b" * 64))) == []  # one init per seed is fine


def test_every_seeds_score_reproduces_that_seeds_mean(two_seed_plan, monkeypatch):
    scores = [{"arm": "gs1_kernel", "seed": 0, "metric": "accuracy", "value": 0.5},
              {"arm": "gs1_kernel", "seed": 1, "metric": "accuracy", "value": 0.25}]
    recomputed = {"method": "paired_hoeffding", "criteria": [{
        "metric": "accuracy", "per_arm_means": {"gs1_kernel": 0.375},
        "per_arm_seed_means": {"gs1_kernel": {"0": 0.5, "1": 0.25}}}]}
    monkeypatch.setattr(decision_rules, "read_observations", lambda ctx: [])
    monkeypatch.setattr(decision_rules, "_recompute", lambda ctx: (recomputed, ""))
    ctx = SimpleNamespace(result={"evaluation": {"scores": scores}}, plan=two_seed_plan)
    assert decision_rules.DEC_10(ctx) == []
    scores[1]["value"] = 0.5  # seed 1's score copied from seed 0
    issues = decision_rules.DEC_10(ctx)
    assert [issue.rule for issue in issues] == ["DEC-10"] and "mean 0.25" in issues[0].message
