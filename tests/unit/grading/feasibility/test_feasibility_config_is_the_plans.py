"""FEAS-14: the feasibility record's config (the full run it projects) is the plan's, not a smaller run a submitter
chose (issue 45): half the eval items in config and effective_config alike graded as the honest record before this
rule (FEAS-2 holds the two copies to each other, FEAS-12 the projection to the measurements, nothing to the spec)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from experiment.contract.plan import draft_plan
from experiment.contract.spec import load_spec
from experiment.grading import feasibility
from suite import GS1_SPEC, SELFGEN_SPEC, TRIMUON_SPEC

SPECS = {"gs1": GS1_SPEC, "selfgen": SELFGEN_SPEC, "trimuon": TRIMUON_SPEC}


def _ctx(family: str, scale: str | None, **config_edit):
    spec = load_spec(SPECS[family], rehearse=scale is not None, rehearsal_scale=scale or "standard")
    raw, plan = spec.to_dict(), draft_plan(spec)
    config = {"lora_rank": raw["lora_rank"], "batch_size": raw["batch_size"], "max_seq_len": raw["max_seq_len"],
              "steps": raw["steps"], "n_examples": raw["dataset"]["n_examples"], "n_eval": plan.eval["n_examples"],
              "dataset": raw["dataset"], "base_model": raw["base_model"], "max_tokens": 16,
              "arms": [arm.name for arm in plan.trained_arms]}
    config.update(config_edit)
    return SimpleNamespace(spec=raw, plan=plan, result={"feasibility": {"config": config,
                                                                         "effective_config": dict(config)}})


@pytest.mark.parametrize("family", list(SPECS))
@pytest.mark.parametrize("scale", ["wiring", "standard", None])
def test_the_plans_config_passes(family, scale):
    assert feasibility.FEAS_14(_ctx(family, scale)) == []


@pytest.mark.parametrize("key", ["n_eval", "steps", "lora_rank", "batch_size", "max_seq_len", "n_examples"])
def test_a_config_value_other_than_the_plans_is_named(key):
    ctx = _ctx("selfgen", "wiring")
    ctx.result["feasibility"]["config"][key] //= 2
    issues = feasibility.FEAS_14(ctx)
    assert [(i.rule, i.status) for i in issues] == [("FEAS-14", "unknown")] and key in issues[0].message


def test_without_a_plan_or_a_config_nothing_is_compared():
    ctx = _ctx("gs1", "wiring")
    assert feasibility.FEAS_14(SimpleNamespace(spec=None, plan=None, result=ctx.result)) == []
    assert feasibility.FEAS_14(SimpleNamespace(spec=ctx.spec, plan=ctx.plan, result={"feasibility": {}})) == []


def test_without_the_spec_or_without_the_plan_nothing_is_compared():
    """Either one missing is enough: the planned values come from both (the eval count from the plan)."""
    ctx = _ctx("gs1", "wiring", n_eval=1)
    assert feasibility.FEAS_14(SimpleNamespace(spec=None, plan=ctx.plan, result=ctx.result)) == []
    assert feasibility.FEAS_14(SimpleNamespace(spec=ctx.spec, plan=None, result=ctx.result)) == []


def test_only_what_the_config_states_and_the_plan_fixes_as_a_number_is_compared():
    ctx = _ctx("selfgen", "wiring", steps=1)
    del ctx.result["feasibility"]["config"]["steps"]  # a key the config does not state is not compared
    assert feasibility.FEAS_14(ctx) == []
    ctx = _ctx("selfgen", "wiring", lora_rank=1)
    ctx.spec["lora_rank"] = None  # the spec fixes no number: nothing to hold the config to
    assert feasibility.FEAS_14(ctx) == []
    ctx.result["feasibility"]["config"]["batch_size"] = ctx.spec["batch_size"] + 1
    issues = feasibility.FEAS_14(ctx)
    assert len(issues) == 1 and "batch_size" in issues[0].message and "lora_rank" not in issues[0].message
