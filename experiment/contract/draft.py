"""`python -m flows.run SPEC --draft-revision`: the skeleton of a spec's revision file.

A revision file (`specs/<name>.plan.json`) adds what the pipeline needs and the spec does not state,
and pins what the spec marks UNRESOLVED; it never changes a stated value (experiment/contract/spec.py).
`draft_revision(raw)` looks at a spec (merged with its revision file when there is one) and drafts
every entry still missing, each with its reason in `draft_items`:

- arms: named arms with one role each (treatment, baseline, untrained_base); roles the plan would
  only infer are proposed as inferred, to be confirmed;
- the data mapping (`arm_data`) when generated training data is declared;
- LR grids of SFT arms (the best-LR rule selects on a grid), an lr for RL arms;
- experiment_features: the contract's ten, each true or false;
- correctness pins: an optimizer path with the reference and the a-priori tolerances for
  TriMuon/DiMuon families (computed now, before anything is measured), or revision pins for
  paths whose revisions the spec leaves UNRESOLVED;
- the verdict rule: `verdict_rule` (SFT, best LR) or `decision_rule` (RL, paired) with its criterion.

Values a person must choose are `"UNRESOLVED: <what to write>"`. While the file still carries
`draft_items`, loading the spec refuses it (exit 2) with that instruction, so an unfinished draft
never runs.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from experiment import PROJECT_ROOT
from experiment.contract.spec import (
    ROLE_LABELS, ArmSpec, Spec, SpecError, _read_json_object, apply_revision, plan_file_path,
)

DRAFT_KEY = "draft_items"
FEATURES = ("custom_loss", "custom_optimizer", "paired_comparison", "paired_training_arms", "checkpoint_restore",
            "warmup_adaptation", "generated_training_data", "learned_generator", "heldout_loss", "adaptive_selection")
REFERENCED_FAMILIES = ("trimuon", "dimuon")  # families experiment/stats/optim_reference.py implements
OPTIMIZER_REFERENCE = "experiment/stats/optim_reference.py"
LR_GRID_FACTORS = (0.5, 1.0, 2.0)


def unresolved(what: str) -> str:
    return f"UNRESOLVED: {what}"


class _Draft:
    """The revision being drafted and one item (field, action, why) per entry."""

    def __init__(self) -> None:
        self.revision: dict[str, Any] = {}
        self.items: list[dict[str, str]] = []

    def note(self, field: str, action: str, why: str) -> None:
        self.items.append({"field": field, "action": action, "why": why})

    def arm(self, name: str) -> dict[str, Any]:
        arms = self.revision.setdefault("arms", [])
        entry = next((a for a in arms if a["name"] == name), None)
        if entry is None:
            entry = {"name": name}
            arms.append(entry)
        return entry


def load_for_draft(spec_path: Path) -> tuple[dict[str, Any], dict[str, Any], Path | None]:
    """(spec as written, spec merged with its revision file, that file or None). SpecError on bad input."""
    if spec_path.name.endswith(".plan.json"):
        raise SpecError("", f"{spec_path} is a revision file; pass the spec beside it")
    raw = _read_json_object(spec_path)
    existing = plan_file_path(spec_path)
    if not existing.exists():
        return raw, raw, None
    merged, _ = apply_revision(raw, _read_json_object(existing), existing)
    return raw, merged, existing


def draft_revision(spec: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """(revision entries still missing, one item per entry with its reason) for a merged spec dict."""
    draft = _Draft()
    training = spec.get("training_type")
    arms = _draft_arms(spec, draft)
    _draft_lrs(spec, arms, training, draft)
    features = _draft_features(spec, draft)
    _draft_arm_data(spec, arms, features, draft)
    _draft_correctness(spec, arms, features, draft)
    _draft_verdict(spec, arms, training, draft)
    return draft.revision, draft.items


def _optimizer_name(spec: dict[str, Any], arm: dict[str, Any]) -> str:
    value = arm.get("optimizer", (spec.get("optimizer") or {}).get("name") if isinstance(spec.get("optimizer"), dict) else None)
    if isinstance(value, dict):
        return str(value.get("family") or "")
    family = str(value or "adam").split(" ")[0].lower()
    return "adamw" if family == "adam" else family


def _spec_lr(spec: dict[str, Any]) -> float | None:
    lr = (spec.get("optimizer") or {}).get("lr") if isinstance(spec.get("optimizer"), dict) else None
    return float(lr) if isinstance(lr, (int, float)) and not isinstance(lr, bool) and lr > 0 else None


def _draft_arms(spec: dict[str, Any], draft: _Draft) -> list[dict[str, Any]]:
    """The arms the rest is drafted for: the spec's own, or two placeholders when it names none."""
    arms = [a for a in spec.get("arms") or [] if isinstance(a, dict) and isinstance(a.get("name"), str)]
    if not arms:
        dataset = spec.get("dataset") if isinstance(spec.get("dataset"), dict) else {}
        data = f"{dataset.get('name') or 'the spec dataset'} train, seed-0 order"
        spec_optimizer = (spec.get("optimizer") or {}).get("name") if isinstance(spec.get("optimizer"), dict) else None
        placeholders = [
            {"name": "treatment", "role": "treatment", "trained": True, "data": data,
             "optimizer": spec_optimizer or unresolved("the treatment's optimizer family")},
            {"name": "baseline", "role": "baseline", "trained": True, "data": data,
             "optimizer": unresolved(f"the baseline's optimizer family (spec baseline: {_text(spec.get('baseline'))})")},
        ]
        draft.revision["arms"] = placeholders
        draft.note("arms", "add", "the spec names no arms; the pipeline trains and compares named arms: one per arm the "
                                  "method and baseline texts describe (rename them), each with one role, its data and "
                                  "its optimizer (the treatment's proposed from the spec's optimizer.name)")
        return placeholders
    taken = {a.get("role") for a in arms if a.get("role") in ROLE_LABELS}
    for arm in arms:
        if arm.get("role") in ROLE_LABELS:
            continue
        role, why = _proposed_role(spec, arm, taken)
        taken.add(role)
        draft.arm(arm["name"])["role"] = role
        draft.note(f"arms[{arm['name']}].role", "add", f"no role: {why}; the decision's weights and the preflights "
                                                       "name arms by role, so each arm needs exactly one")
    return arms


def _proposed_role(spec: dict[str, Any], arm: dict[str, Any], taken: set[Any]) -> tuple[str, str]:
    """The role the execution plan would infer for the arm (experiment.contract.plan), to be confirmed."""
    # the plan's own inference: one home for it (imported here: the plan loads numpy, a draft's other paths do not)
    from experiment.contract.plan import _role

    try:
        typed_spec = Spec.model_validate({**spec, "arms": None})
        role, why = _role(typed_spec, ArmSpec.model_validate(arm))
    except Exception:  # a partial spec the plan cannot read yet
        role, why = None, ""
    if role in ROLE_LABELS and role not in taken:
        return role, f"proposed {role} (the plan would infer it: {why}); confirm"
    return unresolved(f"one of {', '.join(ROLE_LABELS)} for {arm['name']}"), "no unambiguous role can be inferred"


def _draft_lrs(spec: dict[str, Any], arms: list[dict[str, Any]], training: Any, draft: _Draft) -> None:
    lr = _spec_lr(spec)
    for arm in arms:
        if arm.get("trained") is False or arm.get("lr") is not None or arm.get("lr_grid"):
            continue
        entry = draft.arm(arm["name"])
        if training == "sft":
            entry["lr_grid"] = ([_round(lr * f) for f in LR_GRID_FACTORS] if lr else
                                unresolved("the learning rates this arm sweeps"))
            draft.note(f"arms[{arm['name']}].lr_grid", "add",
                       "an SFT comparison selects each arm's best learning rate on a grid"
                       + (f"; proposed the spec's optimizer.lr {lr:g} x {list(LR_GRID_FACTORS)}" if lr else ""))
        elif lr is None:
            entry["lr"] = unresolved("this arm's learning rate")
            draft.note(f"arms[{arm['name']}].lr", "add", "the spec states no optimizer.lr and the arm no lr")


def _draft_features(spec: dict[str, Any], draft: _Draft) -> dict[str, Any]:
    stated = spec.get("experiment_features") if isinstance(spec.get("experiment_features"), dict) else {}
    forked = "fork" in _text(spec.get("optimizer")).lower() or "fork" in _text(spec.get("method")).lower()
    missing = {}
    for name in FEATURES:
        if isinstance(stated.get(name), bool):
            continue
        if name == "custom_optimizer" and forked:
            missing[name] = True
            why = "proposed true: the spec's optimizer or method names a fork"
        elif name == "heldout_loss" and "nll" in _text(spec.get("eval")).lower():
            missing[name] = True
            why = "proposed true: the eval metric is a held-out NLL"
        elif name == "adaptive_selection":
            missing[name] = unresolved("true or false")
            why = ("not stated (true, training_type rl: two or more arms hold the role the primary criterion weights, "
                   "one of them is chosen on half the eval items and the decision uses the other half; false: every "
                   "eval item is observed)")
        else:
            missing[name] = unresolved("true or false")
            why = "not stated"
        draft.note(f"experiment_features.{name}", "add", f"{why}; each feature decides which gates apply (unknown "
                                                         "blocks like applicable)")
    if missing:
        draft.revision["experiment_features"] = missing
    return {**stated, **missing}


def _draft_arm_data(spec: dict[str, Any], arms: list[dict[str, Any]], features: dict[str, Any], draft: _Draft) -> None:
    if features.get("generated_training_data") is not True or isinstance(spec.get("arm_data"), dict):
        return
    texts = sorted({str(a.get("data")) for a in arms if a.get("data") is not None})
    if not texts:
        return
    draft.revision["arm_data"] = {text: unresolved("dataset, generated_tasks or none") for text in texts}
    draft.note("arm_data", "add", "maps each arm's data text to its source; required when generated training data "
                                  "may be declared, so the generated set's arm is named, not guessed")


def _correctness_required(spec: dict[str, Any], arms: list[dict[str, Any]], features: dict[str, Any]) -> bool:
    forked = any(a.get("service") == "fork" for a in arms)
    return features.get("custom_optimizer") is True or features.get("custom_loss") is True or forked


def _draft_correctness(spec: dict[str, Any], arms: list[dict[str, Any]], features: dict[str, Any], draft: _Draft) -> None:
    section = spec.get("correctness_preflight") if isinstance(spec.get("correctness_preflight"), dict) else {}
    paths = [p for p in section.get("paths") or [] if isinstance(p, dict)]
    if paths:
        _draft_revision_pins(spec, paths, draft)
        return
    if not _correctness_required(spec, arms, features):
        if "required" not in section:
            draft.revision["correctness_preflight"] = {
                "required": False, "paths": [], "reason": "no custom or forked loss or optimizer path: every arm uses "
                                                          "the service's stock loss and optimizers"}
            draft.note("correctness_preflight.required", "add", "proposed false (no feature or arm declares a custom or "
                                                                "forked path); confirm: a missing value blocks like a "
                                                                "required preflight")
        return
    families = sorted({_optimizer_name(spec, a) for a in arms if a.get("trained", True) is not False})
    if features.get("custom_optimizer") is True and set(families) <= set(REFERENCED_FAMILIES):
        draft.revision["correctness_preflight"] = {"required": True, "paths": [_optimizer_path(spec, arms)]}
        draft.note("correctness_preflight.paths", "add",
                   f"a custom optimizer path ({', '.join(families)}) is checked against an independent reference "
                   f"before training; {OPTIMIZER_REFERENCE} implements these families and the tolerances below are "
                   "the written a-priori analysis (experiment/stats/update_tolerance.py) at the sweep's LRs and rank, "
                   "computed now, before anything is measured")
        return
    draft.revision["correctness_preflight"] = {"required": True, "paths": [{
        "id": "custom_path", "kind": unresolved("optimizer or loss"),
        "reference_file": unresolved("an independent reference implementation in this repository"),
        "reference_revision": unresolved("sha256 of the reference file"),
        "baseline_revision": unresolved("the stock implementation it is compared with, with its version"),
        "tolerances": unresolved("{check: {atol, rtol, min_cosine}} from a written error analysis")}]}
    draft.note("correctness_preflight.paths", "add", "a custom or forked path needs an accepted correctness plan "
                                                     "(CORR-7): reference, pins and tolerances fixed before measuring")


def _optimizer_path(spec: dict[str, Any], arms: list[dict[str, Any]]) -> dict[str, Any]:
    # imported here: both load numpy, which a draft without a custom optimizer does not need
    from experiment.stats.correctness import file_sha256
    from experiment.stats.update_tolerance import ANALYSIS, update_check_plan

    rank = int(spec.get("lora_rank") or 32)
    grid = sorted({float(lr) for a in arms for lr in (a.get("lr_grid") or []) if isinstance(lr, (int, float))})
    grid = grid or ([_round(_spec_lr(spec) * f) for f in LR_GRID_FACTORS] if _spec_lr(spec) else [])
    planned = update_check_plan(grid, rank) if grid else {"tolerances": unresolved("LR grid first"), "lr_scaling": {}}
    return {
        "id": "optimizer_update", "kind": "optimizer", "reference_file": OPTIMIZER_REFERENCE,
        "reference_revision": f"sha256:{file_sha256(PROJECT_ROOT / OPTIMIZER_REFERENCE)} ({OPTIMIZER_REFERENCE})",
        "baseline_revision": unresolved("the baseline optimizer's service and version the parity check compares with"),
        "precision": unresolved("the implementation's precision (e.g. float32, an FP16 core) against float64"),
        "update_learning_rates": grid,
        "error_analysis": {"derivation": ANALYSIS, "rank": rank, "fixed_before_measuring": True},
        **planned,
    }


def _draft_revision_pins(spec: dict[str, Any], paths: list[dict[str, Any]], draft: _Draft) -> None:
    pins: dict[str, dict[str, str]] = {}
    existing = spec.get("correctness_revisions") if isinstance(spec.get("correctness_revisions"), dict) else {}
    for path in paths:
        for key in ("baseline_revision", "reference_revision"):
            value = path.get(key)
            if (not value or str(value).strip().lower().startswith("unresolved")) and not (existing.get(path.get("id")) or {}).get(key):
                pins.setdefault(str(path.get("id")), {})[key] = unresolved(f"the {key.replace('_', ' ')} pinned: a "
                                                                          "version or file sha256")
    if pins:
        draft.revision["correctness_revisions"] = pins
        draft.note("correctness_revisions", "pin", "the spec leaves these revisions UNRESOLVED: the correctness check "
                                                   "stays unverified and the run stops before training until they are "
                                                   "pinned (CORR-6)")


def _draft_verdict(spec: dict[str, Any], arms: list[dict[str, Any]], training: Any, draft: _Draft) -> None:
    if spec.get("decision_rule") is not None or spec.get("verdict_rule") is not None:
        return
    roles = {**{a.get("role"): a["name"] for a in arms}, **{a.get("role"): a["name"] for a in draft.revision.get("arms", [])}}
    treatment, baseline = roles.get("treatment", "treatment"), roles.get("baseline", "baseline")
    margin = unresolved(f"the margin the success criterion states ({_text(spec.get('success_criterion'))[:200]})")
    if training == "sft":
        draft.revision["verdict_rule"] = {
            "method": "best_lr_threshold", "seeds": [0],
            "select": "per arm, the LR grid point with the lowest held-out token-mean NLL",
            "criteria": [{"id": "nll_gap", "metric": "heldout_nll_token_mean", "weights": {baseline: 1, treatment: -1},
                          "comparison": "at_least", "margin": margin}]}
        draft.note("verdict_rule", "add", "the spec has no decision_rule: the prose success criterion must be measured "
                                          "by a rule fixed before training (metric, weights by arm, margin)")
    else:
        draft.revision["decision_rule"] = {
            "method": "paired_hoeffding", "alpha": 0.05, "seeds": [0], "unit": "eval item",
            "criteria": [{"id": "primary", "metric": unresolved("the per-item metric (e.g. accuracy)"),
                          "weights": {treatment: 1, baseline: -1}, "margin": margin}]}
        draft.note("decision_rule", "add", "the spec has no decision_rule: a paired per-item rule fixed before training "
                                           "turns the success criterion into a verdict")


def _round(value: float) -> float:
    return float(f"{value:.3g}") if math.isfinite(value) else value


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value) if value is not None else "none stated"


def write_draft(spec_path: Path) -> tuple[Path | None, list[dict[str, str]]]:
    """Write the draft beside the spec: `<name>.plan.json`, or `<name>.plan.draft.json` when a revision
    file exists (its entries are kept; the draft holds only what is still missing). (None, []) when
    nothing is missing."""
    _, merged, existing = load_for_draft(spec_path)
    revision, items = draft_revision(merged)
    if not items:
        return None, []
    target = plan_file_path(spec_path)
    if existing is not None:
        target = target.with_name(target.name.removesuffix(".plan.json") + ".plan.draft.json")
    body = {"plan_file_note": f"DRAFT revision of {spec_path.name} written by --draft-revision: fill every "
                              f"UNRESOLVED value, confirm every proposed one, then delete {DRAFT_KEY}",
            **revision, DRAFT_KEY: items}
    target.write_text(json.dumps(body, indent=2) + "\n")
    return target, items
