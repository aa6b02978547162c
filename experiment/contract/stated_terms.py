"""Terms a spec states that the run would read differently, or not at all: refused at intake, one line each.

The spec model keeps fields it does not know (experiment.contract.spec, `extra="allow"`), so a term the pipeline
never reads passed intake without a word: an arm's `lr_schedule`, a decision_rule's `adjustment: "holm"` (the
project applies Bonferroni, exchange-contract.md section 7), a verdict criterion compared `at_most` (read as
`exceeds`), a verdict metric the SFT runs never measure (a KeyError after every training run), a margin written
as a string (the decision stopped after training), a top-level `seeds` (read only inside a rule), an SFT
optimizer setting its family does not take (the probe's client creation was refused). `check_stated_terms` refuses each before anything runs,
saying what the run would do instead.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from experiment.contract.errors import SpecError

if TYPE_CHECKING:
    from experiment.contract.spec import Spec

# Arm keys the pipeline reads beyond the typed ones of experiment.contract.spec.ArmSpec: where the arm runs.
ARM_KEYS_READ = ("service",)
# The settings an SFT arm's optimizer config may state, per family: what the run's step applies
# (experiment.sft.loop.optim_params) and the client is created with (the embedded backend declares the same:
# "trimuon config does not take ['beta3'] (declarable: beta1, grad_clip_norm, learning_rate, polar_step)").
SFT_OPTIMIZER_SETTINGS = {"adamw": ("beta1", "beta2", "eps", "weight_decay", "grad_clip_norm"),
                          "dimuon": ("beta1", "grad_clip_norm", "polar_step", "version"),
                          "trimuon": ("beta1", "grad_clip_norm", "polar_step")}
# What the SFT family's verdict_rule (best_lr_threshold) can compare: the values every training run records
# (experiment.sft.steps.decision reads exactly these).
SFT_VERDICT_METRICS = ("heldout_nll_token_mean", "median_optim_step_seconds")
# How a best-LR criterion's effect meets its margin: at_least (effect >= margin, the default) or exceeds (>).
VERDICT_COMPARISONS = ("at_least", "exceeds")
# A decision_rule criterion passes when its lower bound exceeds the margin (exchange-contract.md section 7).
DECISION_COMPARISON = "exceeds"
CONTRACT_ADJUSTMENT = ("the contract leaves the adjustment of simultaneous intervals open and the project uses "
                       "Bonferroni, alpha split evenly over the criteria (exchange-contract.md section 7)")


# Top-level keys the spec language reads elsewhere: at the top a run never sees them (a top-level "seeds": [0, 1]
# trained seed 0 alone). Each names where it is read.
MISPLACED_KEYS = {
    "seeds": "decision_rule.seeds (for training_type sft without a decision_rule: the revision's verdict_rule.seeds)",
    "seed": "arms[].seed", "lr": "optimizer.lr or arms[].lr", "lr_grid": "arms[].lr_grid",
    "alpha": "decision_rule.alpha", "margin": "decision_rule.criteria[].margin",
    "group_size": "arms[].group_size", "groups_per_batch": "arms[].groups_per_batch",
    "max_tokens": "rollout.max_tokens", "temperature": "rollout.temperature",
}


def check_stated_terms(spec: Spec) -> None:
    misplaced = sorted(set(spec.model_extra or {}) & set(MISPLACED_KEYS))
    if misplaced:
        raise SpecError(misplaced[0], f"is not read at the top of a spec: the spec language reads it as "
                                      f"{MISPLACED_KEYS[misplaced[0]]}; move it there")
    _check_arm_keys(spec)
    if spec.training_type == "sft":
        _check_sft_optimizer_settings(spec)
    decision = spec.decision_rule.model_dump() if spec.decision_rule is not None else None
    if decision is not None:
        _check_unique_ids("decision_rule", decision["criteria"])
        _check_adjustment(decision)
        for index, criterion in enumerate(decision["criteria"]):
            comparison = criterion.get("comparison", DECISION_COMPARISON)
            if comparison != DECISION_COMPARISON:
                raise SpecError(f"decision_rule.criteria[{index}].comparison",
                                f"{comparison!r}: a {decision['method']} criterion passes when its lower bound "
                                "exceeds the margin (exchange-contract.md section 7); state the margin so that "
                                "\"exceeds\" is meant, or leave comparison out")
    verdict = getattr(spec, "verdict_rule", None)
    if isinstance(verdict, dict) and isinstance(verdict.get("criteria"), list):
        _check_verdict_criteria(verdict["criteria"])


def _check_arm_keys(spec: Spec) -> None:
    for index, arm in enumerate(spec.arms or []):
        unread = sorted(set(arm.model_extra or {}) - set(ARM_KEYS_READ))
        if unread:
            known = sorted({*type(arm).model_fields, *ARM_KEYS_READ})
            raise SpecError(f"arms[{index}].{unread[0]}", f"arm {arm.name} states {unread[0]!r}, which no run "
                                                          f"applies (an arm states {', '.join(known)}); remove it, "
                                                          "or describe the setting in the method text")


def _check_sft_optimizer_settings(spec: Spec) -> None:
    for index, arm in enumerate(spec.arms or []):
        optimizer = arm.optimizer if isinstance(arm.optimizer, dict) else {}
        family, config = str(optimizer.get("family", "")).lower(), optimizer.get("config")
        declarable = SFT_OPTIMIZER_SETTINGS.get(family)
        if declarable is None or not isinstance(config, dict):
            continue
        unknown = sorted(set(config) - set(declarable))
        if unknown:
            raise SpecError(f"arms[{index}].optimizer.config.{unknown[0]}",
                            f"arm {arm.name}: {family} takes {', '.join(declarable)} (and the learning rate); "
                            f"{unknown[0]!r} is none of them (the service refuses the client, or the step drops it)")


def _check_unique_ids(rule: str, criteria: list[Any]) -> None:
    seen: set[Any] = set()
    for index, criterion in enumerate(criteria):
        key = criterion.get("id") if isinstance(criterion, dict) else None
        if key in seen:
            raise SpecError(f"{rule}.criteria[{index}].id", f"{key!r} names two criteria; the decision records each "
                                                            "criterion under its id, so give each its own")
        seen.add(key)


def _check_adjustment(decision: dict[str, Any]) -> None:
    if "adjustment" not in decision:
        return
    applied = "bonferroni" if len(decision["criteria"]) > 1 and decision["method"] == "paired_hoeffding" else "none"
    stated = decision["adjustment"]
    if not isinstance(stated, str) or stated.lower() != applied:
        raise SpecError("decision_rule.adjustment", f"{stated!r}, but this rule's {len(decision['criteria'])} "
                                                    f"criteria are adjusted {applied!r}: {CONTRACT_ADJUSTMENT}; state "
                                                    f"{applied!r} or leave adjustment out")


def _check_verdict_criteria(criteria: list[Any]) -> None:
    _check_unique_ids("verdict_rule", criteria)
    for index, criterion in enumerate(criteria):
        where = f"verdict_rule.criteria[{index}]"
        if not isinstance(criterion, dict):
            raise SpecError(where, f"must be an object with id, metric, weights and margin (got {criterion!r})")
        if criterion.get("metric") not in SFT_VERDICT_METRICS:
            raise SpecError(f"{where}.metric", f"{criterion.get('metric')!r}: every training run records "
                                               f"{' and '.join(SFT_VERDICT_METRICS)}, which a best-LR criterion "
                                               "compares; no run measures anything else")
        margin = criterion.get("margin")
        if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not math.isfinite(margin):
            raise SpecError(f"{where}.margin", f"must be a number (got {margin!r})")
        comparison = criterion.get("comparison", VERDICT_COMPARISONS[0])
        if comparison not in VERDICT_COMPARISONS:
            raise SpecError(f"{where}.comparison", f"{comparison!r}: a best-LR criterion's effect meets its margin "
                                                   f"{' or '.join(VERDICT_COMPARISONS)} it (effect >= margin, or >); "
                                                   "to ask for a smaller value, weight the arms the other way")
