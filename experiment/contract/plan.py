"""The execution plan: what the pipeline will do for a spec, derived before anything runs.

`build_plan(spec)` returns an `ExecutionPlan` (plain data, `.to_dict()` is JSON) with
- arms and their roles (treatment / baseline / untrained_base), each mapping with its reason,
- the training runs (one per arm and LR grid point), the scheduled seeds and the replicas (every arm at
  every seed of `decision_rule.seeds`),
- every gate of the contract, in order, marked applicable / not applicable / "unknown" with the reason
  ("unknown" blocks like applicable: missing evidence is never "not applicable"),
- decision criteria with role labels mapped to arms, the eval, the verdict vocabulary and the budget.

`build_plan` then refuses what the pipeline cannot carry out (experiment.contract.support: exit 2 at
intake); `draft_plan` is the same plan without that check (the graders grade a record against any spec).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from experiment.stats.correctness import pinned_revisions, unresolved_revisions
from experiment.stats.feasibility import pilot_size
from experiment.stats.selection import CHOICE_RULE, SPLIT_RULE, split_sizes
from experiment.contract.verdict import GATE_ORDER
from experiment.contract.cost import static_cost
from experiment.contract.spec import ArmSpec, Spec, SpecError
from experiment.contract.support import check_supported, scheduled_seeds

Applicability = Literal[True, False, "unknown"]

# The verdict vocabulary is fixed by each spec's own text (GEN-3, GEN-4): the GS1 and
# TriMuon texts use direction+confidence, the self-generated text three-way. Keyed by spec file stem
# prefix so copies (gs1_..._test_size.json) inherit it; a spec may also set `verdict_vocabulary` itself.
VOCABULARY_BY_SPEC_PREFIX = {
    "gs1_": "direction_confidence",
    "trimuon_": "direction_confidence",
    "selfgen_": "three_way",
}
DEFAULT_VOCABULARY = "direction_confidence"
VOCABULARIES = ("direction_confidence", "three_way")

# LOSS-1: how the loss aggregation is read from the eval text
_EXAMPLE_MEAN_WORDS = ("per example", "example mean", "example weighted", "mean of example", "per sequence")
_TOKEN_MEAN_WORDS = ("per token", "token mean", "token weighted", "per assistant token", "nats/token")
_LOSS_WORDS = ("nll", "loss", "perplexity", "cross entropy", "cross-entropy", "log likelihood")


@dataclass
class PlannedArm:
    name: str
    role: str
    role_reason: str
    trained: bool
    data: str | None
    optimizer: dict[str, Any] | None  # {"family": ..., "config": {...}}
    lr: float | None
    lr_grid: list[float] | None
    group_size: int | None
    groups_per_batch: int | None
    steps: int | None
    seed: int | None
    service: str  # "shared" or "fork"


@dataclass
class TrainingRun:
    """One training run: an arm at one learning rate of its grid, at one scheduled seed (training_type sft
    trains every arm's grid at every seed of its verdict_rule.seeds). The name is the arm's (`<arm>@lr=<lr>`
    with an LR grid) at the first scheduled seed, with `-seed<s>` appended at each further seed."""

    name: str  # "<arm>", "<arm>@lr=<lr>" with an LR grid; "...-seed<s>" at a further scheduled seed
    arm: str
    lr: float | None
    steps: int | None
    seed: int | None

    @property
    def label(self) -> str:
        """The run's key beneath its arm (metrics.arms.<arm>.runs, loss_eval.arms.<arm>.runs): its LR, with
        `-seed<s>` at a further scheduled seed."""
        seed_suffix = f"-seed{self.seed}" if self.seed is not None and self.name.endswith(f"-seed{self.seed}") else ""
        return f"{float(self.lr):g}{seed_suffix}" if self.lr is not None else self.name


@dataclass
class Replica:
    """One arm at one scheduled seed: what arm training trains (trained arms) and evaluation scores.

    Every arm trains and is scored at every seed of `decision_rule.seeds`. `label` names the replica
    in the run's own files, tables and clients: the arm's name at the first scheduled seed (a
    one-seed run reads as before), `<arm>-seed<s>` at each further seed; records carry `arm` and `seed`."""

    label: str
    arm: str
    seed: int
    trained: bool


def replica_label(arm: str, seed: int, seeds: list[int]) -> str:
    return arm if seed == seeds[0] else f"{arm}-seed{seed}"


def at_replica_seed(requested: dict[str, Any], seed: int) -> dict[str, Any]:
    """An arm's requested model and optimizer config (a restoration group's `optimizer_config`) for its
    replica at one scheduled seed: a `seed` the config states is the replica's own, since every arm trains
    at every scheduled seed (the run requests it, the grader expects it: REST-5)."""
    return {**requested, "seed": seed} if "seed" in requested else dict(requested)


@dataclass
class GatePlan:
    name: str
    applicable: Applicability
    reason: str
    enforced: bool = True
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def blocks(self) -> bool:
        """Whether the run must pass this gate (applicable or unknown)."""
        return self.applicable is not False


@dataclass
class PlannedCriterion:
    id: str
    metric: str
    weights: dict[str, float]  # as written in the spec (arm names or role labels)
    arm_weights: dict[str, float]  # role labels replaced by arm names
    margin: float
    bounds: list[float] | None
    comparison: str = "exceeds"


@dataclass
class ExecutionPlan:
    spec_title: str
    spec_path: str
    spec_sha256: str
    spec_revision: dict[str, Any] | None
    base_model: str
    training_type: str
    vocabulary: str
    primary_endpoint: str
    arms: list[PlannedArm]
    training_runs: list[TrainingRun]
    role_to_arm: dict[str, dict[str, str]]
    gates: list[GatePlan]
    decision: dict[str, Any] | None
    criteria: list[PlannedCriterion]
    eval: dict[str, Any]
    budget: dict[str, Any]
    # --rehearse: what the rehearsal substituted (experiment.contract.rehearsal); None for the spec as written
    rehearsal: dict[str, Any] | None = None
    seeds: list[int] = field(default_factory=lambda: [0])  # scheduled seeds: every arm trains at each
    replicas: list[Replica] = field(default_factory=list)  # every arm x scheduled seed
    # experiment_features.adaptive_selection: the role whose candidates are chosen between on selection items,
    # the split's rule and sizes (experiment.stats.selection); None without adaptive selection
    selection: dict[str, Any] | None = None

    def gate(self, name: str) -> GatePlan:
        for gate in self.gates:
            if gate.name == name:
                return gate
        raise KeyError(name)

    def arm(self, name: str) -> PlannedArm:
        for arm in self.arms:
            if arm.name == name:
                return arm
        raise KeyError(name)

    @property
    def trained_arms(self) -> list[PlannedArm]:
        return [arm for arm in self.arms if arm.trained]

    def replicas_of(self, arm: str) -> list[Replica]:
        return [replica for replica in self.replicas if replica.arm == arm]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for gate, gate_dict in zip(self.gates, data["gates"]):
            gate_dict["blocks"] = gate.blocks
        return data


def build_plan(spec: Spec) -> ExecutionPlan:
    """The execution plan of a spec the pipeline can carry out; SpecError (exit 2) for anything it cannot
    (experiment.contract.support), so nothing knowable at intake fails after the first training call."""
    written = spec.source.as_written
    if written is not None:  # a rehearsal previews the run of the spec as written: that must be runnable too
        check_supported(written, draft_plan(written))
    plan = draft_plan(spec)
    check_supported(spec, plan)
    return plan


def draft_plan(spec: Spec) -> ExecutionPlan:
    """The plan as derived from the spec, before the support check (gate applicability, roles, criteria)."""
    source = spec.source
    arms = _plan_arms(spec)
    criteria = _plan_criteria(spec, arms)
    seeds = scheduled_seeds(spec)
    selection = _plan_selection(spec, arms)
    return ExecutionPlan(
        spec_title=spec.title,
        spec_path=source.path,
        spec_sha256=source.sha256,
        spec_revision=source.revision.to_dict() if source.revision else None,
        base_model=spec.base_model,
        training_type=spec.training_type,
        vocabulary=_vocabulary(spec),
        primary_endpoint=getattr(spec, "primary_endpoint", None) or spec.eval.metric,
        arms=arms,
        training_runs=_training_runs(arms, seeds if spec.training_type == "sft" else None),
        role_to_arm=_role_to_arm(arms),
        gates=_plan_gates(spec, arms),
        decision=_plan_decision(spec),
        criteria=criteria,
        eval=_plan_eval(spec),
        budget=spec.budget.model_dump(),
        rehearsal=source.rehearsal,
        seeds=seeds,
        replicas=[Replica(replica_label(arm.name, seed, seeds), arm.name, seed, arm.trained)
                  for seed in seeds for arm in arms],
        selection=selection,
    )


def _vocabulary(spec: Spec) -> str:
    explicit = getattr(spec, "verdict_vocabulary", None)
    if explicit is not None:
        if explicit not in VOCABULARIES:
            raise SpecError("verdict_vocabulary", f"must be one of {', '.join(VOCABULARIES)} (got {explicit!r})")
        return explicit
    stem = spec.source.stem
    for prefix, vocabulary in VOCABULARY_BY_SPEC_PREFIX.items():
        if stem.startswith(prefix):
            return vocabulary
    return DEFAULT_VOCABULARY


def _optimizer(spec: Spec, arm: ArmSpec) -> dict[str, Any] | None:
    """Normalise to {"family", "config"}. The spec's `adam` is the server's `adamw` family."""
    if not arm.trained:
        return None
    value = arm.optimizer if arm.optimizer is not None else spec.section("optimizer").get("name")
    if isinstance(value, dict):
        return {"family": value.get("family"), "config": dict(value.get("config") or {})}
    name = str(value or "adam")
    family = name.split(" ")[0].lower()
    return {"family": "adamw" if family == "adam" else family, "config": {}}


def _role(spec: Spec, arm: ArmSpec) -> tuple[str, str]:
    if arm.role:
        return arm.role, f"explicit role {arm.role!r} in the arm definition"
    if not arm.trained:
        return "untrained_base", "trained is false (evaluation-only arm)"
    baseline_text = (spec.baseline or "").lower()
    if re.search(rf"\b{re.escape(arm.name.lower())}\b", baseline_text):
        return "baseline", f"the spec's baseline text names {arm.name!r}"
    if arm.advantage == "group_mean" and re.search(r"group[- ]mean", baseline_text):
        return "baseline", "advantage is group_mean and the spec's baseline text describes group-mean advantages"
    return "treatment", "trained arm that the baseline text does not describe"


def _arm_lr(spec: Spec, arm: ArmSpec) -> float | None:
    """The arm's own lr; a trained arm without lr or grid uses the spec's optimizer.lr."""
    if arm.lr is not None or not arm.trained or arm.lr_grid:
        return arm.lr
    return spec.section("optimizer").get("lr")


def _plan_arms(spec: Spec) -> list[PlannedArm]:
    arms = []
    for arm in spec.arms or []:
        role, reason = _role(spec, arm)
        optimizer = _optimizer(spec, arm)
        fork = getattr(arm, "service", None) == "fork" or "fork" in str(spec.section("optimizer").get("name", ""))
        arms.append(
            PlannedArm(
                name=arm.name,
                role=role,
                role_reason=reason,
                trained=arm.trained,
                data=arm.data,
                optimizer=optimizer,
                lr=_arm_lr(spec, arm),
                lr_grid=arm.lr_grid,
                group_size=arm.group_size,
                groups_per_batch=arm.groups_per_batch,
                steps=(arm.steps or spec.steps) if arm.trained else None,
                seed=arm.seed,
                service="fork" if fork and arm.trained else "shared",
            )
        )
    return arms


def arms_by_role(arms: list[PlannedArm]) -> dict[str, list[str]]:
    """role -> the arms that hold it, in spec order (several arms may share a role: two treatments)."""
    holders: dict[str, list[str]] = {}
    for arm in arms:
        holders.setdefault(arm.role, []).append(arm.name)
    return holders


def _role_to_arm(arms: list[PlannedArm]) -> dict[str, dict[str, str]]:
    """The roles held by exactly one arm; a shared role maps to no single arm (weights name the arms)."""
    unique = {role for role, names in arms_by_role(arms).items() if len(names) == 1}
    return {arm.role: {"arm": arm.name, "reason": arm.role_reason} for arm in arms if arm.role in unique}


def _training_runs(arms: list[PlannedArm], seeds: list[int] | None) -> list[TrainingRun]:
    """Every trained arm x its LR grid (one run without a grid); with `seeds` (training_type sft), all of them at
    every scheduled seed, seed after seed, named as replicas are (the first seed's run keeps its name)."""
    runs = []
    for seed in seeds or [None]:
        suffix = "" if seed is None or seed == seeds[0] else f"-seed{seed}"
        for arm in arms:
            if not arm.trained:
                continue
            at_seed = arm.seed if seed is None else seed
            if arm.lr_grid:
                runs += [TrainingRun(f"{arm.name}@lr={lr:g}{suffix}", arm.name, lr, arm.steps, at_seed)
                         for lr in arm.lr_grid]
            else:
                runs.append(TrainingRun(f"{arm.name}{suffix}", arm.name, arm.lr, arm.steps, at_seed))
    return runs


def _weight_key_arm(key: str, index: int, arms: list[PlannedArm]) -> str:
    """The arm a criterion weight key names: an arm name, or a role label held by exactly one arm."""
    names = [arm.name for arm in arms]
    if key in names:
        return key
    where = f"decision_rule.criteria[{index}].weights"
    holders = arms_by_role(arms).get(key, [])
    if len(holders) == 1:
        return holders[0]
    if holders:
        raise SpecError(where, f"role {key!r} is ambiguous: arms {', '.join(holders)} all hold it; key the weights "
                               f"by arm name instead (e.g. {{{', '.join(repr(n) + ': ...' for n in holders)}}}), "
                               f"or give exactly one arm the role {key!r} (or, for a positive weight, set "
                               "experiment_features.adaptive_selection true to choose between them on selection items)")
    raise SpecError(where, f"role {key!r} maps to no arm (roles: "
                           f"{', '.join(f'{arm.name}={arm.role}' for arm in arms)}); key the weights by arm name "
                           f"({', '.join(names)}) or give one arm \"role\": {key!r}")


def _selection_role(spec: Spec, arms: list[PlannedArm]) -> str | None:
    """Adaptive selection: the role label the primary criterion weights positively that several arms hold (the
    candidates; the largest effect then picks the strongest of them, never the weakest comparator)."""
    if spec.feature("adaptive_selection") is not True or spec.decision_rule is None or not spec.decision_rule.criteria:
        return None
    holders = arms_by_role(arms)
    names = {arm.name for arm in arms}
    shared = [key for key, weight in spec.decision_rule.criteria[0].weights.items()
              if key not in names and weight > 0 and len(holders.get(key, [])) >= 2]
    return shared[0] if shared else None


def _plan_selection(spec: Spec, arms: list[PlannedArm]) -> dict[str, Any] | None:
    role = _selection_role(spec, arms)
    if role is None:
        return None
    n_selection, n_confirmation = split_sizes(spec.eval.n_examples)
    return {"role": role, "candidates": sorted(arms_by_role(arms)[role]),
            "criterion": spec.decision_rule.criteria[0].id, "rule": CHOICE_RULE,
            "split": {"rule": SPLIT_RULE, "selection_items": n_selection, "confirmation_items": n_confirmation},
            "frozen_before_confirmation": "the choice is retained (evidence adaptive-selection.json, event "
                                          "selection_frozen) before any confirmation observation is written; "
                                          "the decision uses confirmation items only"}


def _plan_criteria(spec: Spec, arms: list[PlannedArm]) -> list[PlannedCriterion]:
    if spec.decision_rule is None:
        return []
    criteria = []
    selection_role = _selection_role(spec, arms)
    for index, criterion in enumerate(spec.decision_rule.criteria):
        arm_weights: dict[str, float] = {}
        for key, weight in criterion.weights.items():
            # adaptive selection: the candidates' role stands for whichever of them the selection items choose
            chosen_among = arms_by_role(arms)[key] if key == selection_role else [_weight_key_arm(key, index, arms)]
            for arm in chosen_among:
                if arm in arm_weights:
                    raise SpecError(f"decision_rule.criteria[{index}].weights",
                                    f"arm {arm!r} is weighted twice (by name and by its role); keep one key per arm")
                arm_weights[arm] = weight
        criteria.append(
            PlannedCriterion(
                id=criterion.id,
                metric=criterion.metric,
                weights=dict(criterion.weights),
                arm_weights=arm_weights,
                margin=criterion.margin,
                bounds=criterion.bounds,
                comparison=getattr(criterion, "comparison", None) or "exceeds",
            )
        )
    return criteria


def _plan_decision(spec: Spec) -> dict[str, Any] | None:
    rule = spec.decision_rule
    if rule is None:
        return None
    n_criteria = len(rule.criteria)
    return {
        "method": rule.method,
        "alpha": rule.alpha,
        "unit": rule.unit,
        "seeds": rule.seeds,
        # DEC-8: simultaneous intervals over several criteria use Bonferroni (alpha split evenly)
        "adjustment": "bonferroni" if n_criteria > 1 and rule.method == "paired_hoeffding" else "none",
        "alpha_per_criterion": (rule.alpha / n_criteria) if rule.alpha is not None else None,
    }


def _plan_eval(spec: Spec) -> dict[str, Any]:
    text = f"{spec.eval.metric} {spec.eval.benchmark or ''}".lower().replace("-", " ")
    aggregation = spec.eval.aggregation
    if aggregation is None:
        if any(word in text for word in _EXAMPLE_MEAN_WORDS):
            aggregation = "example_mean"
        elif any(word in text for word in _TOKEN_MEAN_WORDS):
            aggregation = "token_mean"
    is_loss = any(word.replace("-", " ") in text for word in _LOSS_WORDS)
    return {
        "benchmark": spec.eval.benchmark,
        "metric": spec.eval.metric,
        "n_examples": spec.eval.n_examples,
        "decoding": "greedy" if "greedy" in text else None,
        "aggregation": aggregation,
        "loss_eval": is_loss or aggregation is not None or spec.feature("heldout_loss") is True,
    }


# ---- gate applicability (RUN-1; per gate: CORR-1, REST-1, FEAS-1, GA-1, ACT-1, DEC-1) ----


def _feature_text(spec: Spec, name: str) -> str:
    value = spec.feature(name)
    return "missing" if value is None else str(value).lower()


def _gate_spec_intake(spec: Spec, arms: list[PlannedArm]) -> GatePlan:
    return GatePlan("spec_intake", True, "always (project convention): parse, plan, resolve the served model")


def _gate_preflight_probe(spec: Spec, arms: list[PlannedArm]) -> GatePlan:
    probe = spec.section("preflight").get("probe")
    if probe:
        return GatePlan("preflight_probe", True, "always before any arm trains; the spec's preflight.probe", details={"probe": probe})
    return GatePlan(
        "preflight_probe",
        True,
        "always before any arm trains; no preflight.probe in the spec, so one optim_step per arm with its exact "
        "optimizer and config on one example, and a finite loss",
    )


def _resolver_dependence(spec: Spec) -> list[str]:
    """Whom the generation block's re-solver is not independent of, by name (the generator, the trained
    base model); the generation audit refuses such a re-solver before generating (issue 28)."""
    block = spec.section("generation")
    solver = str(block.get("solver_path") or block.get("solver_model") or "").strip().lower()
    others = {"generator": block.get("generator_path") or block.get("generator_model"), "trained base model": spec.base_model}
    return [role for role, name in others.items() if solver and str(name or "").strip().lower() == solver]


def _gate_generation_audit(spec: Spec, arms: list[PlannedArm]) -> GatePlan:
    audit = spec.section("generation_audit")
    required = audit.get("required") is True
    generated = spec.feature("generated_training_data")
    if required or generated:
        why = [w for w, on in (("generation_audit.required is true", required),
                               ("experiment_features.generated_training_data is true", generated)) if on]
        return GatePlan("generation_audit", True, " and ".join(why),
                        details={**audit, "resolver_not_independent_of": _resolver_dependence(spec)})
    if generated is None:
        return GatePlan(
            "generation_audit",
            "unknown",
            "experiment_features.generated_training_data is missing: applicability unknown, which blocks like applicable",
        )
    return GatePlan(
        "generation_audit",
        False,
        f"generation_audit.required is {str(audit.get('required', 'absent')).lower()} and no feature it covers "
        "(experiment_features.generated_training_data) is true",
    )


def _gate_correctness_preflight(spec: Spec, arms: list[PlannedArm]) -> GatePlan:
    section = spec.section("correctness_preflight")
    forked = [arm.name for arm in arms if arm.service == "fork"]
    why = []
    if section.get("required") is True:
        why.append("correctness_preflight.required is true")
    for feature in ("custom_loss", "custom_optimizer"):
        if spec.feature(feature):
            why.append(f"experiment_features.{feature} is true")
    if forked:
        why.append(f"arms {', '.join(forked)} use a forked optimizer path")
    details = {"paths": section.get("paths", []), "status": section.get("status")}
    # Pinned in the spec or in its recorded revision file (experiment.stats.correctness.pinned_revisions);
    # the run never pins them itself, and an unresolved one stops the run at this gate.
    supplied = spec.source.revision.supplied if spec.source.revision else ()
    pins = pinned_revisions(spec.to_dict(), supplied)
    details["revision_pins"] = pins
    details["revisions_unresolved"] = bool(unresolved_revisions(pins))
    if why:
        return GatePlan("correctness_preflight", True, "; ".join(why), details=details)
    if spec.feature("custom_loss") is None or spec.feature("custom_optimizer") is None:
        return GatePlan(
            "correctness_preflight",
            "unknown",
            f"experiment_features.custom_loss is {_feature_text(spec, 'custom_loss')} and custom_optimizer is "
            f"{_feature_text(spec, 'custom_optimizer')}: applicability unknown, which blocks like applicable",
        )
    if section.get("required") is not False:
        # the spec leaves its correctness preflight state out: unknown, never a silent skip
        return GatePlan(
            "correctness_preflight",
            "unknown",
            "correctness_preflight.required is missing and no feature decides it: applicability unknown, "
            "which blocks like applicable",
            details=details,
        )
    reason = section.get("reason") or "no custom or forked loss or optimizer path"
    return GatePlan("correctness_preflight", False, f"correctness_preflight.required is false: {reason}")


def _gate_restoration_preflight(spec: Spec, arms: list[PlannedArm]) -> GatePlan:
    section = spec.section("restoration_preflight")
    paired = spec.feature("paired_training_arms")
    details = {"groups": section.get("groups", []), "fixed_batch_required": section.get("fixed_batch_required")}
    if section.get("applicable") is True:
        reason = "restoration_preflight.applicable is true"
        if section.get("reason"):
            reason += f": {section['reason']}"
        return GatePlan("restoration_preflight", True, reason, details=details)
    if paired:
        return GatePlan("restoration_preflight", True, "experiment_features.paired_training_arms is true", details=details)
    if paired is None and section.get("applicable") is None:
        return GatePlan(
            "restoration_preflight",
            "unknown",
            "no restoration_preflight section and experiment_features.paired_training_arms is missing: unknown, blocks like applicable",
        )
    return GatePlan("restoration_preflight", False, section.get("reason") or "no paired training arms share an initialization")


def _gate_feasibility_pilot(spec: Spec, arms: list[PlannedArm]) -> GatePlan:
    required = getattr(spec, "feasibility_required", None) is True
    reason = "always, after the served model is resolved and before the full comparison"
    reason += "; enforced because feasibility_required is true" if required else "; feasibility_required is not set (not enforced)"
    size = pilot_size(spec.to_dict())
    stated = ({"steps_per_arm": size.steps_per_arm, "eval_items": size.eval_items, "source": size.source}
              if size.source.startswith("spec") else None)  # a pilot size the spec's own words fix (FEAS-10)
    cost = static_cost(spec)  # the budget against the production service's rates (None on an embedded model)
    return GatePlan("feasibility_pilot", True, reason, enforced=required,
                    details={"budget": spec.budget.model_dump(), "stated_pilot": stated,
                             "static_estimate": cost.to_dict() if cost else None})


def _gate_activation_gate(spec: Spec, arms: list[PlannedArm]) -> GatePlan:
    section = spec.section("activation_gate")
    checks = [
        {key: check[key] for key in ("metric", "measures", "min", "max", "one_of") if key in check}
        for check in section.get("checks", [])
    ]
    if section.get("applicable") is True:
        return GatePlan("activation_gate", True, f"activation_gate.applicable is true: {section.get('reason', '')}", details={"checks": checks})
    if section.get("applicable") is False:
        return GatePlan("activation_gate", False, f"activation_gate.applicable is false: {section.get('reason', '')}")
    return GatePlan("activation_gate", False, "the spec has no activation_gate section, so there are no prespecified checks to measure")


def _gate_arm_training(spec: Spec, arms: list[PlannedArm]) -> GatePlan:
    trained = [arm for arm in arms if arm.trained]
    grids = {arm.name: arm.lr_grid for arm in trained if arm.lr_grid}
    n_runs = sum(len(arm.lr_grid or [None]) for arm in trained)
    reason = f"{len(trained)} trained arms, {n_runs} training runs"
    if grids:
        reason += "; per-arm LR grids run under the same budget, the selected LR per arm is reported, an edge selection sets grid_edge"
    return GatePlan("arm_training", True, reason, details={"lr_grids": grids})


def _gate_evaluation(spec: Spec, arms: list[PlannedArm]) -> GatePlan:
    return GatePlan("evaluation", True, "always; the evaluator is frozen before the first score of any arm or the base model")


def _gate_decision(spec: Spec, arms: list[PlannedArm]) -> GatePlan:
    if spec.decision_rule is None:
        if (spec.to_dict().get("verdict_rule") or {}).get("method"):
            return GatePlan("decision", True, "the spec has no decision_rule, so RESULT carries no decision object; the "
                            "verdict follows the effect against the margin (GEN-3) as the plan file's "
                            "verdict_rule measures it")
        return GatePlan("decision", False, "the spec has no decision_rule")
    source = "plan file" if spec.source.revision and "decision_rule" in spec.source.revision.supplied else "spec"
    return GatePlan("decision", True, f"decision_rule ({spec.decision_rule.method}) given in the {source}")


_GATE_PLANNERS = {
    "spec_intake": _gate_spec_intake,
    "preflight_probe": _gate_preflight_probe,
    "generation_audit": _gate_generation_audit,
    "correctness_preflight": _gate_correctness_preflight,
    "restoration_preflight": _gate_restoration_preflight,
    "feasibility_pilot": _gate_feasibility_pilot,
    "activation_gate": _gate_activation_gate,
    "arm_training": _gate_arm_training,
    "evaluation": _gate_evaluation,
    "decision": _gate_decision,
}


def _plan_gates(spec: Spec, arms: list[PlannedArm]) -> list[GatePlan]:
    return [_GATE_PLANNERS[name](spec, arms) for name in GATE_ORDER]
