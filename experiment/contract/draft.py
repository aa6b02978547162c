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

import importlib.metadata
import json
import math
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from experiment import PROJECT_ROOT
from experiment.contract.spec import (
    ROLE_LABELS, ArmSpec, Spec, SpecError, _read_json_object, apply_revision, is_unresolved,
    plan_file_path,
)
from experiment.contract.spec_prose import arms_from_text, margin_from_text

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
    features = _draft_features(spec, arms, training, draft)
    _draft_arm_data(spec, arms, features, draft)
    _draft_correctness(spec, arms, features, draft)
    _draft_restoration(spec, arms, features, training, draft)
    _draft_verdict(spec, arms, training, draft)
    _draft_open_values(spec, draft)
    return draft.revision, draft.items


def _family_of(arm: dict[str, Any]) -> str:
    optimizer = arm.get("optimizer")
    return str(optimizer.get("family") if isinstance(optimizer, dict) else optimizer)


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
    """The arms the rest is drafted for: the spec's own, or those its method and baseline texts describe."""
    arms = [a for a in spec.get("arms") or [] if isinstance(a, dict) and isinstance(a.get("name"), str)]
    if not arms:
        drafted = arms_from_text(spec)
        draft.revision["arms"] = drafted
        named = ", ".join(f"{a['name']} ({a['role']}, {_family_of(a)})" for a in drafted)
        draft.note("arms", "add", f"the spec names no arms; drafted from its method and baseline texts: {named}, each "
                                  "with its optimizer (family and the settings the texts state) and LR grid where "
                                  "stated; confirm, and rename them if you like (the verdict rule's weights use "
                                  "these names)")
        return drafted
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

    role, why = None, ""
    # the spec as the plan reads it; its rules aside when they still hold open values (the role reads the baseline text)
    for partial in ({**spec, "arms": None}, {**spec, "arms": None, "decision_rule": None, "verdict_rule": None}):
        try:
            role, why = _role(Spec.model_validate(partial), ArmSpec.model_validate(arm))
            break
        except Exception:  # a partial spec the plan cannot read yet
            continue
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


def _draft_features(spec: dict[str, Any], arms: list[dict[str, Any]], training: Any, draft: _Draft) -> dict[str, Any]:
    """Each feature the spec does not state, proposed from what it does state (to confirm), so that the draft is
    complete in one pass and `--plan`'s support checks can run on it."""
    stated = spec.get("experiment_features") if isinstance(spec.get("experiment_features"), dict) else {}
    texts = f"{_text(spec.get('method'))} {_text(spec.get('optimizer'))} {_text(spec.get('baseline'))}".lower()
    forked = "fork" in texts
    trained = [a for a in arms if a.get("trained", True) is not False]
    generated = training == "rl" and re.search(r"\bgenerat", _text(spec.get("method")).lower()) is not None
    proposals: dict[str, tuple[bool, str]] = {
        "custom_loss": (training == "rl" and "custom loss" in texts,
                        "the method names a custom loss" if "custom loss" in texts else "no custom loss is named"),
        "custom_optimizer": (forked, "the spec's optimizer or method names a fork" if forked
                             else "no forked or custom optimizer is named"),
        "paired_comparison": (training == "rl", "training_type rl decides by a paired decision_rule" if training == "rl"
                              else "training_type sft decides by the best-LR verdict_rule, not a paired decision"),
        "paired_training_arms": (len(trained) > 1, f"{len(trained)} trained arm(s) start from one initialization"),
        "generated_training_data": (bool(generated), "the method generates training tasks" if generated
                                    else "no arm trains on generated tasks"),
        "heldout_loss": ("nll" in _text(spec.get("eval")).lower(), "the eval metric is a held-out NLL"
                         if "nll" in _text(spec.get("eval")).lower() else "the eval metric is no loss"),
        "adaptive_selection": (False, "one candidate per role (true, training_type rl: two or more arms hold the role "
                                      "the primary criterion weights, one is chosen on half the eval items)"),
        "checkpoint_restore": (False, "no designed save and restore is asked for (true: every trained arm, for "
                                      "training_type sft every run of its LR grid, continues at its midpoint step on "
                                      "a client restored from its saved state)"),
    }
    missing = {}
    for name in FEATURES:
        if isinstance(stated.get(name), bool):
            continue
        value, why = proposals.get(name, (False, "the pipeline refuses it when true: the contract leaves it undefined "
                                                 "(--plan quotes what is missing)"))
        missing[name] = value
        draft.note(f"experiment_features.{name}", "add", f"proposed {str(value).lower()}: {why}; confirm (each feature "
                                                         "decides which gates apply)")
    if missing:
        draft.revision["experiment_features"] = missing
    return {**stated, **missing}


def _draft_arm_data(spec: dict[str, Any], arms: list[dict[str, Any]], features: dict[str, Any], draft: _Draft) -> None:
    if features.get("generated_training_data") is not True or isinstance(spec.get("arm_data"), dict):
        return
    texts = sorted({str(a.get("data")) for a in arms if a.get("data") is not None})
    if not texts:
        return
    draft.revision["arm_data"] = {text: _data_source(text) for text in texts}
    draft.note("arm_data", "add", "maps each arm's data text to its source; required when generated training data "
                                  "may be declared, so the generated set's arm is named, not guessed; proposed from "
                                  "each text's words (generated -> generated_tasks, none -> none, a dataset -> dataset)")


def _data_source(text: str) -> str:
    """The source an arm's data text names: "640 audited ...-generated tasks" -> generated_tasks, "none" -> none,
    "640 GSM8K train problems" -> dataset; UNRESOLVED when it says neither."""
    lowered = text.strip().lower()
    if lowered in ("none", "no data", "nothing"):
        return "none"
    if re.search(r"\bgenerat", lowered):
        return "generated_tasks"
    if re.search(r"\b(train|dataset|problems|examples|split)\b", lowered):
        return "dataset"
    return unresolved("dataset, generated_tasks or none")


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
        "baseline_revision": _baseline_revision(arms),
        "precision": _precision(spec),
        "update_learning_rates": grid,
        "error_analysis": {"derivation": ANALYSIS, "rank": rank, "fixed_before_measuring": True},
        **planned,
    }


def _baseline_revision(arms: list[dict[str, Any]]) -> str:
    """Proposed: the installed tinker SDK and the baseline arm's optimizer (the parity check's stock side)."""
    baseline = next((a for a in arms if a.get("role") == "baseline"), None)
    try:
        sdk = f"tinker=={importlib.metadata.version('tinker')}"
    except importlib.metadata.PackageNotFoundError:
        return unresolved("the baseline optimizer's service and version the parity check compares with")
    name = baseline["name"].replace("_", "-") if baseline else "the baseline optimizer"
    return f"{sdk} {name} on the stock service; the fork commit is recorded by the run"


def _precision(spec: dict[str, Any]) -> str:
    """Proposed from the method's words (the TriMuon spec: "Use the FP16 polar core and TF32 disabled")."""
    method = _text(spec.get("method"))
    stated = [phrase for phrase in ("FP16 polar core", "TF32 disabled", "bf16", "float32")
              if phrase.lower() in method.lower()]
    if not stated:
        return unresolved("the implementation's precision (e.g. float32, an FP16 core) against float64")
    return f"fork: {', '.join(stated)}; reference: float64"


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


def _draft_restoration(spec: dict[str, Any], arms: list[dict[str, Any]], features: dict[str, Any], training: Any,
                       draft: _Draft) -> None:
    """training_type rl starts every trained arm from the initialization the restoration preflight proves, and
    `--plan` refuses an arm in no restoration group (name, optimizer, optimizer_config): drafted from the arms."""
    section = spec.get("restoration_preflight")
    if training != "rl" or (isinstance(section, dict) and section.get("groups")) or features.get("paired_training_arms") is False:
        return
    rank = spec.get("lora_rank")
    members = []
    for arm in arms:
        if arm.get("trained", True) is False:
            continue
        lr = arm.get("lr") if arm.get("lr") is not None else _spec_lr(spec)
        config = {"learning_rate": lr if lr is not None else unresolved("the arm's learning rate"),
                  **({"lora_rank": rank} if isinstance(rank, int) else {}), "seed": arm.get("seed", 0)}
        members.append({"name": arm["name"], "optimizer": _optimizer_name(spec, arm) or "adamw", "optimizer_config": config})
    drafted = {"groups": [{"arms": members}]}
    if not isinstance(section, dict):
        drafted = {"applicable": True, "fixed_batch_required": True,
                   "reason": "the trained arms start from one initialization: shown by matching logprobs on a fixed "
                             "tokenized batch before the first update, the optimizer verified after creation",
                   **drafted}
    draft.revision["restoration_preflight"] = drafted
    draft.note("restoration_preflight.groups", "add", "training_type rl starts every trained arm from the "
                                                      "initialization the restoration preflight proves, and --plan "
                                                      "refuses an arm in no group; drafted: one group of the trained "
                                                      "arms, each with its optimizer and learning rate")


def _draft_open_values(spec: dict[str, Any], draft: _Draft) -> None:
    """A value the spec itself leaves UNRESOLVED (outside the correctness revisions, pinned by correctness_revisions)
    is pinned in the revision file: a margin from the success criterion where it states one."""
    for rule_key in ("decision_rule", "verdict_rule"):
        rule = spec.get(rule_key)
        criteria = rule.get("criteria") if isinstance(rule, dict) else None
        for index, criterion in enumerate(criteria if isinstance(criteria, list) else []):
            if not isinstance(criterion, dict) or not is_unresolved(criterion.get("margin")):
                continue
            metric = "nll" if "nll" in str(criterion.get("metric")).lower() else "accuracy"
            margin = margin_from_text(spec.get("success_criterion"), metric)
            pin = {"id": criterion.get("id", f"criterion_{index}"), "margin": margin if margin is not None else
                   unresolved(f"the margin the success criterion states ({_text(spec.get('success_criterion'))[:200]})")}
            draft.revision.setdefault(rule_key, {}).setdefault("criteria", []).append(pin)
            draft.note(f"{rule_key}.criteria[{index}].margin", "pin",
                       f"the spec leaves it open ({criterion.get('margin')!r}); a revision file pins it"
                       + (f"; proposed {margin:g} from the success criterion" if margin is not None else ""))


def _open_values(value: Any, where: str = "") -> list[str]:
    """Where a drafted revision still holds UNRESOLVED values (open correctness revisions included: a revision
    file may leave them open, but the run would stop at the correctness preflight, so --plan refuses them)."""
    if isinstance(value, dict):
        return [p for key, inner in value.items() if key != DRAFT_KEY
                for p in _open_values(inner, f"{where}.{key}" if where else key)]
    if isinstance(value, list):
        return [p for index, inner in enumerate(value) for p in _open_values(inner, f"{where}[{index}]")]
    return [where] if is_unresolved(value) else []


def _merge(existing: Any, drafted: Any) -> Any:
    """The existing revision with the draft's entries added (lists of named or id'd entries merged by key)."""
    if isinstance(existing, dict) and isinstance(drafted, dict):
        return {**existing, **{k: _merge(existing[k], v) if k in existing else v for k, v in drafted.items()}}
    if isinstance(existing, list) and isinstance(drafted, list):
        key = next((k for k in ("name", "id") if all(isinstance(i, dict) and k in i for i in existing + drafted)), None)
        if key:
            by_key = {item[key]: item for item in drafted}
            merged = [_merge(item, by_key.pop(item[key])) if item[key] in by_key else item for item in existing]
            return merged + list(by_key.values())
    return drafted


def plan_check(spec_path: Path, existing: dict[str, Any] | None, revision: dict[str, Any]) -> dict[str, str] | None:
    """What `--plan` (and a wiring `--rehearse`) would refuse once the draft is taken as proposed: one item, or
    None when both plan it. The spec and the completed revision are written to a scratch directory under the
    spec's own name (its family prefix decides its vocabulary); nothing is contacted."""
    from experiment.contract.plan import build_plan  # the plan loads numpy; a draft alone does not need it
    from experiment.contract.spec import load_spec

    completed = _merge(existing or {}, revision)
    open_values = _open_values(completed)
    if open_values:
        return {"field": open_values[0], "action": "check",
                "why": f"{len(open_values)} value(s) still UNRESOLVED (first: {open_values[0]}); --plan's support "
                       "checks run on the draft once they are filled: run --draft-revision again then"}
    with tempfile.TemporaryDirectory(prefix="draft-check-") as scratch:
        target = Path(scratch) / spec_path.name
        shutil.copy(spec_path, target)
        plan_file_path(target).write_text(json.dumps(completed))
        for rehearse in (False, True):
            try:
                build_plan(load_spec(target, rehearse=rehearse, rehearsal_scale="wiring"))
            except SpecError as err:
                line = str(err).splitlines()[0].replace(scratch, str(spec_path.parent))
                return {"field": err.field_name or "spec", "action": "fix",
                        "why": f"--plan{' --rehearse' if rehearse else ''} refuses the spec with this draft taken as "
                               f"proposed: {line.removeprefix('spec error: ')}"}
    return None


def _draft_verdict(spec: dict[str, Any], arms: list[dict[str, Any]], training: Any, draft: _Draft) -> None:
    if spec.get("decision_rule") is not None or spec.get("verdict_rule") is not None:
        return
    roles = {**{a.get("role"): a["name"] for a in arms}, **{a.get("role"): a["name"] for a in draft.revision.get("arms", [])}}
    treatment, baseline = roles.get("treatment", "treatment"), roles.get("baseline", "baseline")
    stated = margin_from_text(spec.get("success_criterion"), "nll" if training == "sft" else "accuracy")
    margin = stated if stated is not None else unresolved(
        f"the margin the success criterion states ({_text(spec.get('success_criterion'))[:200]})")
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
            "criteria": [{"id": "primary", "metric": "accuracy" if "accura" in _text(spec.get("eval")).lower() else
                          unresolved("the per-item metric (e.g. accuracy)"),
                          "weights": {treatment: 1, baseline: -1}, "margin": margin, "bounds": [0, 1]}]}
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
    refusal = plan_check(spec_path, _read_json_object(existing) if existing else None, revision)
    if refusal is not None:
        items.append(refusal)
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
