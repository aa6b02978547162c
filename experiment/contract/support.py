"""What the pipeline can run: a spec asking for anything else is refused at intake (exit 2), before spending.

`check_supported(spec, plan)` runs at the end of `build_plan`, so `--plan`, a run and a deployment
run refuse the same specs, with one `SpecError` line that names the field, what was asked and
what is supported. Every rule here stands for a step that would otherwise fail, or silently do
something else, only after the first training call:

- `experiment_features`: the ten features of the contract, each implemented end to end or refused
  (IMPLEMENTED_FEATURES and REFUSED_FEATURES say which, and how);
- the decision and the seed schedule (`decision_rule.seeds`, or the SFT family's `verdict_rule.seeds`: every
  arm, and every point of its LR grid, trains at every scheduled seed);
- the gate steps each family has: the RL correctness preflight measures one loss path (group-mean
  against the kernel baseline), the activation pilots need one treatment and one baseline arm, the
  SFT family has no activation pilot and decides by the recorded revision's `verdict_rule` (best LR per arm,
  any number of arms) or by a paired `decision_rule` on per-conversation held-out NLL (one LR per arm).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

from experiment.contract.before_spending import check_before_spending
from experiment.contract.errors import SpecError
from experiment.contract.rollout import rollout_settings
from experiment.data import DEFAULT_GSM8K_DIR, DataError, count_jsonl_rows, count_task_file, resolve_data_path
from experiment.stats.activation import GS1_ACTIVATION_METRICS, PILOT_STEPS, SELFGEN_ACTIVATION_METRICS, check_range
from experiment.stats.decision import weights_problem

if TYPE_CHECKING:
    from experiment.contract.spec import Spec


class PlanView(Protocol):
    """What the support check reads of an ExecutionPlan (experiment.contract.plan builds the plan and calls
    check_supported, so this module names the plan's shape instead of importing it)."""

    training_type: str
    arms: list[Any]
    role_to_arm: dict[str, dict[str, str]]
    selection: dict[str, Any] | None
    eval: dict[str, Any]

    @property
    def trained_arms(self) -> list[Any]: ...

    def gate(self, name: str) -> Any: ...

# The contract's experiment_features, in its order.
CONTRACT_FEATURES = ("custom_loss", "custom_optimizer", "paired_comparison", "paired_training_arms",
                     "checkpoint_restore", "warmup_adaptation", "generated_training_data", "learned_generator",
                     "heldout_loss", "adaptive_selection")
# Features implemented end to end when true, and how.
IMPLEMENTED_FEATURES: dict[str, str] = {
    "custom_loss": "the correctness preflight of the loss path (training_type rl: group-mean vs kernel-baseline "
                   "advantages)",
    "custom_optimizer": "the correctness preflight of the optimizer update (training_type sft)",
    "paired_comparison": "the decision_rule, required and applied",
    "paired_training_arms": "the restoration preflight: every trained arm starts from one initialization per seed",
    "generated_training_data": "the generation audit before any update on generated tasks (training_type rl)",
    "heldout_loss": "the held-out loss evaluation (loss_eval, training_type sft)",
    "checkpoint_restore": "a designed mid-run save and restore: every trained arm (training_type rl), every training "
                          "run of every arm's LR grid at every seed (training_type sft), continues from its own "
                          "state saved at the midpoint step, on a client restored from it, its optimizer verified "
                          "from the server's response and the restore recorded in initialization_provenance "
                          "(restore_count, restores, one optimizer_check each; exchange-contract.md section 5)",
    "adaptive_selection": "the candidates (two or more arms holding the role the primary criterion weights) are "
                          "chosen between on selection items, frozen as decision.selection before confirmation, and "
                          "the decision uses the disjoint confirmation items only (training_type rl, DEC-13)",
}
# Features refused when true, each with what the contract says of it and what it leaves undefined, quoted so a
# researcher can ask the exchange for the missing definition (issue 46, deliverable 3). One line each.
REFUSED_FEATURES: dict[str, str] = {
    "warmup_adaptation": "the contract defines the manifest (exchange-contract.md section 9: each training arm reports {arm, pair, "
                         "warmup_batches, adaptation_batch_ids, adaptation_batch_hash}; \"a treatment-only warmup is "
                         "iterated separately\") and when it applies (ADAPT-1, the contract's adaptation rule: \"any arm has a phase before the steps it "
                         "shares with another arm\"); it leaves undefined how many warmup batches an arm runs and where "
                         "a spec states it (the seeds' ADAPT_STEPS and WARMUP constants have no spec field), so no run "
                         "can be checked against a warmup the spec fixed; supported: false (paired arms run identical "
                         "batches in identical order)",
    "learned_generator": "the contract says only (its table of experiment_features): \"a feature the applicability "
                         "checker reads. The seeds do not say which check it triggers. Carry it, and ask\"; it leaves "
                         "undefined what the generator is trained on, when, and which audit a trained generator's "
                         "tasks must pass (section 10 audits a frozen generator's tasks); supported: false "
                         "(generated_training_data uses the frozen generator of the self-generated-tasks family)",
}
# Features that only one training type carries.
FEATURE_TRAINING_TYPES = {"custom_loss": "rl", "custom_optimizer": "sft", "generated_training_data": "rl",
                          "heldout_loss": "sft", "adaptive_selection": "rl"}


def designed_restore_step(spec: Spec) -> int | None:
    """checkpoint_restore true: the step (0-based) before which every trained arm continues on a client restored
    from its own state saved after the previous step, the midpoint of its steps (a project reading: the contract
    defines the evidence of a restore, section 5, and that a lone resumed arm records at least one, REST-9, not
    when it happens). None when the feature is not true."""
    if spec.feature("checkpoint_restore") is not True or not spec.steps:
        return None
    return max(1, int(spec.steps) // 2)


def designed_restore_due(spec: Spec, step: int, start: int = 0) -> bool:
    """Whether a training loop continues on a client restored from its own saved state before `step` (0-based):
    checkpoint_restore's designed step, when the loop did not start there (a run resumed at or past it already
    continues on a restored client). One rule for every family's loop (RL arms, SFT runs)."""
    designed = designed_restore_step(spec)
    return designed is not None and step == designed and step > start


RL_DECISION_METRICS = ("accuracy",)
KERNEL_ADVANTAGE, GROUP_MEAN_ADVANTAGE = "kernel_cross_prompt_baseline", "group_mean"



# Why an RL arm's LR grid is refused (issue 46; docs/changelog.md, 7 December 2026). The contract's LR-grid row
# (exchange-contract.md section 1, item 8) runs every grid point under the same budget and reports the selected LR
# per arm, with grid_edge; it says nothing of the items the LR is selected on. An RL decision is a paired
# comparison on the evaluation items, so an LR chosen on those items would decide on the items it was chosen by.
RL_LR_GRID_REFUSAL = (
    "training_type rl trains one learning rate per arm (lr, or optimizer.lr). The contract's LR-grid row "
    "(exchange-contract.md section 1, item 8: every grid point under the same budget, the selected LR per arm "
    "reported) defines no held-out split to select an RL arm's LR on, and selecting it on the paired decision's "
    "evaluation items would bias the decision; give one lr per arm, or compare the LRs as arms of one role with "
    "experiment_features.adaptive_selection (chosen on half the items, frozen, decided on the other half). "
    "Per-arm LR grids: training_type sft (best LR by held-out loss)")

def check_supported(spec: Spec, plan: PlanView) -> None:
    """Raise SpecError for the first thing in the spec the pipeline cannot carry out as written."""
    _check_features(spec)
    _check_designed_restore(spec)
    check_criteria_weights(spec)
    _check_seeds(spec, plan)
    if plan.training_type == "rl":
        _check_adaptive_selection(spec, plan)
        _check_rl(spec, plan)
    else:
        _check_sft(spec, plan)
    check_before_spending(spec, plan)


def _check_features(spec: Spec) -> None:
    features = getattr(spec, "experiment_features", None)
    if features is None:
        return
    if not isinstance(features, dict):
        raise SpecError("experiment_features", f"must be an object of true/false flags (got {features!r})")
    for name, value in features.items():
        where = f"experiment_features.{name}"
        if name not in CONTRACT_FEATURES:
            raise SpecError(where, f"unknown feature; the contract's features are {', '.join(CONTRACT_FEATURES)}")
        if value is not None and not isinstance(value, bool):
            raise SpecError(where, f"must be true or false (got {value!r})")
        if value is not True:
            continue
        if name in REFUSED_FEATURES:
            raise SpecError(where, f"true is not supported: {REFUSED_FEATURES[name]}")
        needed = FEATURE_TRAINING_TYPES.get(name)
        if needed and spec.training_type != needed:
            raise SpecError(where, f"true is supported for training_type {needed} only ({IMPLEMENTED_FEATURES[name]}); "
                                   f"this spec's training_type is {spec.training_type}")


def _check_designed_restore(spec: Spec) -> None:
    if designed_restore_step(spec) is not None and int(spec.steps or 0) < 2:
        raise SpecError("experiment_features.checkpoint_restore", f"true saves and restores every arm mid-run, "
                                                                  f"between two steps; this spec trains {spec.steps}; "
                                                                  "give at least 2 steps")


def check_criteria_weights(spec: Spec) -> None:
    """Every criterion of the decision_rule (or the recorded revision's verdict_rule) weights the arms by a contrast
    the contract defines (experiment.stats.decision.weights_problem): never all zero, never a level."""
    rules = {"decision_rule": spec.decision_rule.model_dump() if spec.decision_rule is not None else None,
             "verdict_rule": getattr(spec, "verdict_rule", None)}
    for name, rule in rules.items():
        criteria = rule.get("criteria") if isinstance(rule, dict) else None
        for index, criterion in enumerate(criteria if isinstance(criteria, list) else []):
            weights = criterion.get("weights") if isinstance(criterion, dict) else None
            problem = weights_problem(weights)
            if problem is not None:
                raise SpecError(f"{name}.criteria[{index}].weights", problem)


def scheduled_seeds(spec: Spec) -> list[int]:
    """The seeds every arm trains and is scored at: decision_rule.seeds, else the recorded revision's
    verdict_rule.seeds (the SFT family's rule), else the arms' own seed (default 0)."""
    rule = spec.decision_rule
    if rule is not None and rule.seeds:
        return list(rule.seeds)
    stated = _verdict_rule_seeds(spec)
    if stated is not None and _valid_seeds(stated):
        return list(stated)
    arm_seeds = sorted({arm.seed for arm in spec.arms or [] if arm.trained and arm.seed is not None})
    return arm_seeds or [0]


def _verdict_rule_seeds(spec: Spec) -> Any:
    rule = getattr(spec, "verdict_rule", None)
    return rule.get("seeds") if isinstance(rule, dict) else None


def _valid_seeds(seeds: Any) -> bool:
    return (isinstance(seeds, list) and bool(seeds) and len(set(map(str, seeds))) == len(seeds)
            and all(not isinstance(s, bool) and isinstance(s, int) and s >= 0 for s in seeds))


def _seeds_key(spec: Spec) -> str:
    """The field the scheduled seeds come from, for the refusals that name it."""
    if spec.decision_rule is not None and spec.decision_rule.seeds:
        return "decision_rule.seeds"
    return "verdict_rule.seeds" if _verdict_rule_seeds(spec) is not None else "decision_rule.seeds"


def _check_seeds(spec: Spec, plan: PlanView) -> None:
    rule = spec.decision_rule
    if rule is not None and rule.seeds is not None:
        if not rule.seeds:
            raise SpecError("decision_rule.seeds", "is empty; schedule at least one seed (e.g. [0])")
        if any(isinstance(s, bool) or s < 0 for s in rule.seeds) or len(set(rule.seeds)) != len(rule.seeds):
            raise SpecError("decision_rule.seeds", f"must be distinct non-negative integers (got {rule.seeds!r})")
    _check_verdict_rule_seeds(spec)
    seeds, key = scheduled_seeds(spec), _seeds_key(spec)
    for index, arm in enumerate(spec.arms or []):
        if arm.trained and arm.seed is not None and arm.seed not in seeds:
            raise SpecError(f"arms[{index}].seed", f"{arm.seed} is not a scheduled seed ({key} "
                                                   f"{seeds}); every arm trains at every scheduled seed, so give "
                                                   "the arm one of them or leave its seed out")
    _check_group_seeds(spec, seeds)
    if len(seeds) > 1 and (rule is None or not rule.seeds) and _verdict_rule_seeds(spec) is None:
        raise SpecError("arms", f"arms state different seeds {seeds}; schedule them in decision_rule.seeds "
                                "(every arm then trains at every seed)")


def _check_verdict_rule_seeds(spec: Spec) -> None:
    """The recorded revision's `verdict_rule.seeds` (the SFT family's rule) are the scheduled seeds: every arm's
    LR grid trains at each of them, in that seed's data order, and the grader expects observations for each
    (issue 46: [0, 1] once trained seed 0 only, and the record graded `DEC-6: 6 observations missing ... seed 1`).
    A spec with a decision_rule schedules its seeds there."""
    stated = _verdict_rule_seeds(spec)
    if stated is None:
        return
    if not _valid_seeds(stated):
        raise SpecError("verdict_rule.seeds", f"must be a non-empty list of distinct non-negative integers (got "
                                              f"{stated!r})")
    rule = spec.decision_rule  # (training_type sft refuses a decision_rule, with what it decides by instead)
    if spec.training_type != "sft" and rule is not None and rule.seeds and list(rule.seeds) != stated:
        raise SpecError("verdict_rule.seeds", f"{stated}, but decision_rule.seeds schedules {list(rule.seeds)}; "
                                              "state the seeds once")


def _group_members(spec: Spec) -> Iterator[tuple[int, int, dict[str, Any], dict[str, Any]]]:
    """(group index, member index, member, its optimizer_config) of every restoration group member that states
    an optimizer_config (members and configs of any other shape are the spec model's to refuse)."""
    groups = (spec.section("restoration_preflight") or {}).get("groups")
    for g, group in enumerate(groups if isinstance(groups, list) else []):
        members = group.get("arms") if isinstance(group, dict) else None
        for a, member in enumerate(members if isinstance(members, list) else []):
            config = member.get("optimizer_config") if isinstance(member, dict) else None
            if isinstance(config, dict):
                yield g, a, member, config


def _check_group_seeds(spec: Spec, seeds: list[int]) -> None:
    """A restoration group's `optimizer_config.seed` is the arm's seed: a scheduled one (each replica then
    requests its own seed, experiment.contract.plan.at_replica_seed)."""
    for g, a, _, config in _group_members(spec):
        seed = config.get("seed")
        if seed is not None and seed not in seeds:
            raise SpecError(f"restoration_preflight.groups[{g}].arms[{a}].optimizer_config.seed",
                            f"{seed!r} is not a scheduled seed ({_seeds_key(spec)} {seeds}); every arm trains "
                            "at every scheduled seed and its replica at each seed requests that seed, so state "
                            "one of them or leave the seed out")


def _check_adaptive_selection(spec: Spec, plan: PlanView) -> None:
    """adaptive_selection true: the primary criterion weights a role two or more arms hold (the candidates), and
    the evaluation has items for both halves of the split."""
    if spec.feature("adaptive_selection") is not True:
        return
    where = "experiment_features.adaptive_selection"
    if plan.selection is None:
        roles = ", ".join(f"{arm.name}={arm.role}" for arm in plan.arms)
        raise SpecError(where, "true chooses between candidate arms on selection items: give two or more arms the "
                               "role the primary criterion weights positively (e.g. two arms with role treatment, "
                               f"weights keyed by 'treatment'); this spec's arms are {roles} and its primary "
                               "criterion weights positively no role they share; supported otherwise: false")
    n_selection, n_confirmation = plan.selection["split"]["selection_items"], plan.selection["split"]["confirmation_items"]
    if n_selection < 1 or n_confirmation < 1:
        raise SpecError("eval.n_examples", f"is {plan.eval['n_examples']}: adaptive selection splits the evaluated "
                                           "items into selection and confirmation items; give at least 2")


def _unique_role(plan: PlanView, role: str) -> str | None:
    entry = plan.role_to_arm.get(role)
    return entry["arm"] if entry else None


def _two_roles_or_refuse(plan: PlanView, field: str, what: str, otherwise: str = "") -> tuple[str, str]:
    """The one treatment and the one baseline `what` compares; refused with the roles held and the fix."""
    treatment, baseline = _unique_role(plan, "treatment"), _unique_role(plan, "baseline")
    if treatment is None or baseline is None:
        roles = ", ".join(f"{arm.name}={arm.role}" for arm in plan.arms)
        shared = [role for role in ("treatment", "baseline") if sum(arm.role == role for arm in plan.arms) > 1]
        fix = (f"role {' and '.join(shared)} is held by several arms: give exactly one arm each of the two roles"
               if shared else "give one arm \"role\": \"treatment\" and one \"role\": \"baseline\"")
        raise SpecError(field, f"{what} needs exactly one arm with role treatment and one with role baseline "
                               f"(arms: {roles}); {fix}{otherwise}")
    return treatment, baseline


def _arm_advantage(spec: Spec, name: str) -> str:
    arm = next(arm for arm in spec.arms or [] if arm.name == name)
    return arm.advantage or GROUP_MEAN_ADVANTAGE


def _check_rl(spec: Spec, plan: PlanView) -> None:
    """Long because: the RL family's support checks, one after another in the order a spec states them; each is a few
    lines and a one-line refusal.
    """
    rule = spec.decision_rule
    if rule is None:
        raise SpecError("decision_rule", "training_type rl decides by a decision_rule (method paired_hoeffding); "
                                         "the spec has none")
    if rule.method != "paired_hoeffding":
        raise SpecError("decision_rule.method", f"{rule.method!r}: training_type rl supports paired_hoeffding")
    if rule.alpha is None:
        raise SpecError("decision_rule.alpha", "paired_hoeffding needs alpha (e.g. 0.05)")
    for index, criterion in enumerate(rule.criteria):
        where = f"decision_rule.criteria[{index}]"
        if criterion.metric not in RL_DECISION_METRICS:
            raise SpecError(f"{where}.metric", f"{criterion.metric!r}: training_type rl scores "
                                               f"{', '.join(RL_DECISION_METRICS)} per item")
        bounds = criterion.bounds
        if bounds is None or len(bounds) != 2 or not bounds[0] < bounds[1]:
            raise SpecError(f"{where}.bounds", f"must be [lo, hi] with lo < hi (accuracy: [0, 1]; got {bounds!r})")
        if bounds[0] > 0 or bounds[1] < 1:
            raise SpecError(f"{where}.bounds", f"{bounds} does not contain the accuracy values 0 and 1")
    _check_rl_data(spec)
    _check_prompts_suffice(spec, plan)
    try:
        rollout = rollout_settings(spec)
    except (ValueError, TypeError, KeyError) as err:
        raise SpecError("rollout", f"{err}: the rollouts' length cannot be read; state max_tokens (a `rollout` block "
                                   "in the revision file, or max_tokens=N in the method)") from None
    if rollout.max_tokens < 1 or not rollout.temperature >= 0:
        raise SpecError("rollout", f"max_tokens {rollout.max_tokens}, temperature {rollout.temperature} (from "
                                   f"{rollout.source}): a rollout samples at least one token at a temperature >= 0")
    _check_group_learning_rates(spec, plan)
    for index, arm in enumerate(spec.arms or []):
        if arm.lr_grid:
            raise SpecError(f"arms[{index}].lr_grid", f"arm {arm.name}: {RL_LR_GRID_REFUSAL}")
        if arm.trained and arm.steps is not None and arm.steps != spec.steps:
            raise SpecError(f"arms[{index}].steps", f"arm {arm.name}: {arm.steps} steps, but training_type rl trains "
                                                    f"every arm the spec's {spec.steps} steps on the same batches; "
                                                    "leave the arm's steps out or state the spec's")
    _check_initialization(plan, "training_type rl")
    grouped = {str(a.get("name")) for g in plan.gate("restoration_preflight").details.get("groups") or [] for a in g.get("arms") or []}
    outside = [arm.name for arm in plan.trained_arms if arm.name not in grouped]
    if outside:
        raise SpecError("restoration_preflight.groups", f"trained arms {', '.join(outside)} are in no restoration "
                                                        "group; list every trained arm (name, optimizer, "
                                                        "optimizer_config) in a group")
    generated = [arm.name for arm in plan.trained_arms if spec.data_source(arm.name) == "generated_tasks"]
    treatment = _unique_role(plan, "treatment")
    if generated and generated != [treatment]:
        roles = ", ".join(f"{arm.name}={arm.role}" for arm in plan.arms)
        raise SpecError("arms", f"arms {', '.join(generated)} train on generated tasks; the self-generated-tasks "
                                f"family trains exactly one such arm, the one arm with role treatment (roles: {roles}); "
                                "train one arm on generated tasks and give it, and no other arm, \"role\": \"treatment\"")
    if plan.gate("generation_audit").applicable is True and not generated:
        raise SpecError("generation_audit", f"the audit applies ({plan.gate('generation_audit').reason}), but no arm "
                                            "trains on generated tasks: it generates and audits the task set of the "
                                            "arm that trains on it, so it would stop the run with nothing to audit; "
                                            "set generation_audit.required false, or map an arm's data to "
                                            "generated_tasks (arm_data)")
    correctness = plan.gate("correctness_preflight")
    if correctness.blocks:
        advantages = {_arm_advantage(spec, arm.name) for arm in plan.trained_arms}
        if not correctness.details.get("paths") or not {GROUP_MEAN_ADVANTAGE, KERNEL_ADVANTAGE} <= advantages:
            raise SpecError("correctness_preflight", "training_type rl checks one custom path: group_mean against "
                                                     "kernel_cross_prompt_baseline advantages, with a plan in "
                                                     "correctness_preflight.paths; this spec's arms use "
                                                     f"{', '.join(sorted(advantages))}"
                                                     f"{'' if correctness.details.get('paths') else ' and it has no paths'}"
                                                     "; supported otherwise: a stock-only spec (custom_loss false, "
                                                     "correctness_preflight.required false)")
    if plan.gate("activation_gate").blocks:
        treatment, baseline = _two_roles_or_refuse(plan, "activation_gate", "the activation pilot",
                                                   ", or set activation_gate.applicable false")
        if not generated and _arm_advantage(spec, treatment) != KERNEL_ADVANTAGE:
            raise SpecError("activation_gate", f"the activation pilot measures a kernel_cross_prompt_baseline "
                                               f"treatment (GS1) or a generated-tasks treatment; treatment "
                                               f"{treatment} is neither; set activation_gate.applicable false")
        _check_activation_checks(plan, SELFGEN_ACTIVATION_METRICS if generated else GS1_ACTIVATION_METRICS)
        if not generated:
            _check_executed_group_sizes(spec, plan, {"treatment": treatment, "baseline": baseline})


def _check_executed_group_sizes(spec: Spec, plan: PlanView, arms: dict[str, str]) -> None:
    """The pilot's executed group size is each arm's planned group_size (distinct prompts per step, group_size
    rollouts each), known before anything runs: a check it cannot pass would stop the run at the activation
    gate, after the preflights were paid for."""
    sizes = {arm.name: spec.rollout_shape(arm.name)[0] for arm in plan.trained_arms}
    for index, check in enumerate(plan.gate("activation_gate").details.get("checks") or []):
        role = str(check.get("metric")).removeprefix("executed_group_size_")
        size = sizes.get(arms.get(role, ""))
        if role == check.get("metric") or not size:
            continue
        outcome = check_range(check, float(size))
        if not outcome.passed:
            raise SpecError(f"activation_gate.checks[{index}]",
                            f"{check['metric']} will be {size} (the {role} arm {arms[role]} samples group_size "
                            f"{size} rollouts per prompt), outside the check ({outcome.reason.split(': ', 1)[1]}); "
                            f"the activation gate would stop the run after the preflights; make the check and "
                            f"the arm's group_size agree")


def _check_activation_checks(plan: PlanView, measured: tuple[str, ...]) -> None:
    """Every check names a metric the pilot measures and a range fixed now (min, max or one_of)."""
    for index, check in enumerate(plan.gate("activation_gate").details.get("checks") or []):
        where = f"activation_gate.checks[{index}]"
        if check.get("metric") not in measured:
            raise SpecError(f"{where}.metric", f"{check.get('metric')!r} is not measured by this spec's activation "
                                               f"pilot (it measures {', '.join(measured)})")
        if all(check.get(key) is None for key in ("min", "max", "one_of")):
            raise SpecError(where, "has no range: give min, max or one_of before anything is measured")
        for key in ("min", "max"):
            if check.get(key) is not None and (isinstance(check[key], bool)
                                               or not isinstance(check[key], (int, float))):
                raise SpecError(f"{where}.{key}", f"must be a number (got {check[key]!r})")
        if check.get("one_of") is not None and (not isinstance(check["one_of"], list)
                                                or not all(isinstance(v, str) for v in check["one_of"])):
            raise SpecError(f"{where}.one_of", f"must be a list of strings (got {check['one_of']!r})")


def _check_initialization(plan: PlanView, family: str) -> None:
    """Every training run of both families starts from the initialization checkpoint the restoration preflight
    makes and proves (the pilots, the arms and the evaluation's base client load it): without that gate there
    is nothing to start from, and the run would stop at its first pilot, after the preflights were paid for."""
    restoration = plan.gate("restoration_preflight")
    if not restoration.blocks:
        raise SpecError("restoration_preflight", f"{family} starts every arm from the initialization "
                                                 "checkpoint the restoration preflight makes and proves; it is not "
                                                 f"applicable here ({restoration.reason}); set "
                                                 "restoration_preflight.applicable true with the arms' groups")


def _check_sft(spec: Spec, plan: PlanView) -> None:
    _check_sft_data(spec)
    rule = getattr(spec, "verdict_rule", None)
    if spec.decision_rule is not None:
        _check_sft_decision_rule(spec, plan, rule)
    elif not isinstance(rule, dict) or rule.get("method") != "best_lr_threshold":
        raise SpecError("verdict_rule", "training_type sft needs a verdict_rule with method best_lr_threshold "
                                        "in its recorded revision, or a decision_rule (paired_hoeffding on "
                                        "per-conversation held-out NLL)")
    _check_sft_arms(plan, rule if spec.decision_rule is None else {})
    if plan.gate("activation_gate").blocks:
        raise SpecError("activation_gate", "training_type sft has no activation pilot; set "
                                           "activation_gate.applicable false")
    paths = plan.gate("correctness_preflight").details.get("paths") or []
    wrong = [p.get("id") for p in paths if isinstance(p, dict) and p.get("kind", "optimizer") != "optimizer"]
    if wrong:
        raise SpecError("correctness_preflight.paths", f"{', '.join(map(str, wrong))}: training_type sft checks "
                                                       "optimizer paths (kind optimizer) only")
    if paths and plan.gate("correctness_preflight").blocks:
        sft_correctness_pair(plan)
    _check_initialization(plan, "training_type sft")


# The per-item measure of an SFT paired decision: each held-out conversation's NLL over its counted tokens. The
# contract's statistic is per item (section 7: "the per-item statistic sum_arm w_arm * value_arm(item)", its mean
# over the n items), so the arm's mean of it is section 8's example_mean, never its token_mean.
SFT_PAIRED_METRIC = "heldout_nll_example_mean"
SFT_DECISION_LR_GRID_REFUSAL = (
    "a decision_rule on training_type sft compares arms of one learning rate each (arms[i].lr): the contract's "
    "LR-grid row (exchange-contract.md section 1, item 8: every grid point under the same budget, the selected LR "
    "per arm reported) defines no held-out split to select an LR on, and selecting it on the paired decision's "
    "held-out items would decide on the items it was chosen by; give one lr per arm, or drop the decision_rule "
    "and decide by the revision's verdict_rule (best_lr_threshold)")


def _check_sft_decision_rule(spec: Spec, plan: PlanView, verdict_rule: Any) -> None:
    """A decision_rule on an SFT spec (issue 46: paired decisions on per-item held-out measures): the contract's
    section 7 decision, paired_hoeffding with alpha, on each held-out conversation's NLL (SFT_PAIRED_METRIC,
    aggregation example_mean), bounds that contain an NLL's floor 0, arms of one learning rate each, and no
    verdict_rule beside it (one rule decides)."""
    rule = spec.decision_rule
    if isinstance(verdict_rule, dict) and verdict_rule:
        raise SpecError("verdict_rule", "the spec has a decision_rule too: one rule decides; drop the revision's "
                                        "verdict_rule (best-LR threshold) or the decision_rule (paired)")
    if rule.method != "paired_hoeffding":
        raise SpecError("decision_rule.method", f"{rule.method!r}: a decision_rule on training_type sft is "
                                                "paired_hoeffding; a best-LR threshold is the revision's verdict_rule "
                                                "(its seeds in verdict_rule.seeds)")
    if rule.alpha is None:
        raise SpecError("decision_rule.alpha", "paired_hoeffding needs alpha (e.g. 0.05)")
    gridded = [arm.name for arm in plan.trained_arms if arm.lr_grid]
    if gridded:
        raise SpecError(f"arms[{gridded[0]}].lr_grid", SFT_DECISION_LR_GRID_REFUSAL)
    if plan.eval.get("aggregation") != "example_mean":
        raise SpecError("eval.aggregation", f"{plan.eval.get('aggregation')!r}: a paired decision on held-out NLL "
                                            "observes each conversation's own NLL and averages the items (the "
                                            "contract's per-item statistic, section 7), which is section 8's "
                                            "example_mean; set eval.aggregation \"example_mean\"")
    for index, criterion in enumerate(rule.criteria):
        where = f"decision_rule.criteria[{index}]"
        if criterion.metric != SFT_PAIRED_METRIC:
            raise SpecError(f"{where}.metric", f"{criterion.metric!r}: training_type sft observes "
                                               f"{SFT_PAIRED_METRIC} per held-out conversation")
        bounds = criterion.bounds
        if not bounds or len(bounds) != 2 or not bounds[0] <= 0 < bounds[1]:
            raise SpecError(f"{where}.bounds", f"{bounds!r}: a held-out NLL is at least 0, so the bounds [lo, hi] "
                                               "need lo <= 0 < hi (hi the largest per-conversation NLL the spec "
                                               "allows; a value past it stops the decision, never clipped)")


def _check_sft_arms(plan: PlanView, rule: dict[str, Any]) -> None:
    """Any number of trained arms (two or more), each with its own LR grid (or one lr): the verdict_rule's criteria
    contrast them by arm name, and per arm the best LR is selected (best_lr_threshold). Its weights name trained
    arms only, by name (the method selects each arm's best run, so a role label held by several arms, or by none,
    names no run to select)."""
    trained = [arm.name for arm in plan.trained_arms]
    if len(trained) < 2:
        raise SpecError("arms", f"training_type sft compares two or more trained arms (trained: {trained})")
    for index, criterion in enumerate(rule.get("criteria") if isinstance(rule.get("criteria"), list) else []):
        weights = criterion.get("weights") if isinstance(criterion, dict) else None
        for key in weights if isinstance(weights, dict) else {}:
            if key not in trained:
                raise SpecError(f"verdict_rule.criteria[{index}].weights", f"key {key!r} is not a trained arm; the "
                                                                          "best-LR rule selects each weighted arm's "
                                                                          "best run, so key the weights by arm name "
                                                                          f"({', '.join(trained)})")


# TriMuon with its one change switched off: DiMuon-lite's polar step. The SFT correctness preflight's baseline
# check runs this against the baseline arm's optimizer, which must then update exactly as it does.
TRIMUON_DISABLED = {"polar_step": "polar_express"}


def sft_correctness_pair(plan: PlanView) -> tuple[str, str]:
    """(treatment, baseline): the arms whose optimizer path the SFT correctness preflight measures, a TriMuon
    treatment against a DiMuon-lite baseline with the same settings, since the baseline check compares the
    treatment with its change switched off (TRIMUON_DISABLED) to the baseline arm's updates. Any other pair fails
    that check by construction, at the correctness preflight, after the probe's training calls. With several
    baseline arms (three optimizers: AdamW, DiMuon-lite, TriMuon), the baseline is the one arm of role baseline
    the parity holds for; SpecError when there is none."""
    treatment = _unique_role(plan, "treatment")
    if treatment is None:
        _two_roles_or_refuse(plan, "arms", "the correctness preflight of training_type sft")
    baselines = [arm.name for arm in plan.arms if arm.role == "baseline"]
    matching = [name for name in baselines if _optimizer_parity_problem(plan, treatment, name) is None]
    if matching:
        return treatment, matching[0]
    if not baselines:
        _two_roles_or_refuse(plan, "arms", "the correctness preflight of training_type sft")
    raise SpecError("correctness_preflight", _optimizer_parity_problem(plan, treatment, baselines[0]))


def _optimizer_parity_problem(plan: PlanView, treatment_name: str, baseline_name: str) -> str | None:
    """Why the treatment and this baseline are not the path the SFT correctness preflight measures, or None."""
    arms = {arm.name: arm for arm in plan.arms}
    treatment, baseline = arms[treatment_name], arms[baseline_name]
    families = [(arm.optimizer or {}).get("family") for arm in (treatment, baseline)]
    configs = [dict((arm.optimizer or {}).get("config") or {}) for arm in (treatment, baseline)]
    disabled, stock = {**configs[0], **TRIMUON_DISABLED}, {**TRIMUON_DISABLED, **configs[1]}
    if families != ["trimuon", "dimuon"] or disabled != stock:
        return (f"training_type sft checks one optimizer path: a trimuon treatment whose updates with "
                f"{TRIMUON_DISABLED} are the dimuon baseline's (the same settings otherwise); treatment "
                f"{treatment.name} is {families[0]} {configs[0]}, baseline {baseline.name} {families[1]} {configs[1]}; "
                "supported otherwise: correctness_preflight.required false with no custom optimizer")
    return None


def _check_rl_data(spec: Spec) -> None:
    """RL trains on GSM8K (openai/gsm8k) or a task file (dataset.path) and evaluates on GSM8K test or eval.path."""
    raw = spec.to_dict()
    dataset = raw.get("dataset") if isinstance(raw.get("dataset"), dict) else {}
    if not dataset.get("path") and not _names_gsm8k(dataset.get("name"), dataset.get("hf_path")):
        raise SpecError("dataset", f"{dataset.get('name') or dataset.get('hf_path')!r}: training_type rl reads GSM8K "
                                   "(openai/gsm8k) or a task file of {id, question, answer} rows named by "
                                   "dataset.path (in the project's data directories)")
    evaluation = raw.get("eval") if isinstance(raw.get("eval"), dict) else {}
    if not evaluation.get("path") and not _names_gsm8k(evaluation.get("benchmark"), evaluation.get("metric")):
        raise SpecError("eval", f"{evaluation.get('benchmark')!r}: training_type rl scores GSM8K test or a task file "
                                "named by eval.path")
    available = _items_in(evaluation.get("path"), "test", "eval.path")
    if available is not None and spec.eval.n_examples > available:
        raise SpecError("eval.n_examples", f"is {spec.eval.n_examples} but the held-out set has {available} items")
    wanted, pool = dataset.get("n_examples"), _items_in(dataset.get("path"), "train", "dataset.path")
    if isinstance(wanted, int) and pool is not None and wanted > pool:
        raise SpecError("dataset.n_examples", f"is {wanted} but the training set has {pool} items")


def _check_group_learning_rates(spec: Spec, plan: PlanView) -> None:
    """An RL arm's client is created with its restoration group's optimizer_config, and each step asks for the
    arm's own learning rate: a service holds the two to one (the embedded backend refuses the step; an arm at
    8e-5 in a group stating 4e-5 stopped at the restoration preflight's first optim_step, exit 3)."""
    lrs = {arm.name: arm.lr if arm.lr is not None else (spec.section("optimizer") or {}).get("lr")
           for arm in plan.trained_arms}
    for g, a, member, config in _group_members(spec):
        stated, planned = config.get("lr"), lrs.get(member.get("name"))
        if isinstance(stated, (int, float)) and isinstance(planned, (int, float)) and not math.isclose(
                stated, planned, rel_tol=1e-12):
            raise SpecError(f"restoration_preflight.groups[{g}].arms[{a}].optimizer_config.lr",
                            f"{stated!r}, but arm {member['name']} trains at lr {planned!r}; its client is created "
                            "with this config and every step asks for its own rate; state the same rate")


def _check_prompts_suffice(spec: Spec, plan: PlanView) -> None:
    """Each step of an RL arm takes its next groups_per_batch distinct prompts from the arm's order, never one
    twice (experiment.rl.loop.step_problems): the spec's dataset (its first n_examples, else the whole training
    set) or the generated tasks (generation.n_accept). An order too short for the arm's steps stopped the run at
    the step that ran out, after the preflights (at full scale, after most of the arm's training). A kernel arm
    and the activation pilot's treatment use two steps before training (the correctness preflight's window and
    batch, the pilot's PILOT_STEPS), so they need that many even when the spec trains fewer."""
    raw = spec.to_dict()
    dataset = raw.get("dataset") if isinstance(raw.get("dataset"), dict) else {}
    generation = raw.get("generation") if isinstance(raw.get("generation"), dict) else {}
    stated = dataset.get("n_examples")
    sizes = {"dataset": ("dataset.n_examples", stated if isinstance(stated, int) and not isinstance(stated, bool)
                         else _items_in(dataset.get("path"), "train", "dataset.path")),
             "generated_tasks": ("generation.n_accept", generation.get("n_accept")
                                 if isinstance(generation.get("n_accept"), int) else None)}
    pilot = _unique_role(plan, "treatment") if plan.gate("activation_gate").blocks else None
    for arm in plan.trained_arms:
        source = spec.data_source(arm.name)
        _, prompts_per_step = spec.rollout_shape(arm.name)
        if source not in sizes or not spec.steps:
            continue
        field, available = sizes[source]
        before_training = PILOT_STEPS if arm.name == pilot or _arm_advantage(spec, arm.name) == KERNEL_ADVANTAGE else 0
        steps = max(int(spec.steps), before_training)
        needed = steps * prompts_per_step
        if available is not None and needed > available:
            raise SpecError(field, f"gives {available} prompts, but arm {arm.name} takes {prompts_per_step} distinct "
                                   f"prompts a step for {steps} steps ({needed}; no prompt is used twice); give at "
                                   f"least {needed}, or fewer steps or groups_per_batch")


def _names_gsm8k(*texts: object) -> bool:
    return any("gsm8k" in str(text or "").lower() for text in texts)


def _items_in(path: str | None, gsm8k_split: str, field: str = "") -> int | None:
    """Items in a task file (every row checked: a file that cannot be read as one is refused, SpecError on
    `field`), or in the GSM8K split read when there is none (None when it is not here to count)."""
    if path:
        try:
            return count_task_file(resolve_data_path(path))
        except DataError as err:
            raise SpecError(field, f"{err}; a task file is UTF-8 JSONL, one {{id, question, answer}} object a line "
                                   "with unique ids") from None
    try:
        split = DEFAULT_GSM8K_DIR / f"{gsm8k_split}.jsonl"
        return sum(1 for line in split.read_text().splitlines() if line.strip()) if split.is_file() else None
    except OSError:
        return None


def _check_sft_data(spec: Spec) -> None:
    """An SFT spec's own data files (dataset.path, eval.path; JSONL) read as the run reads them: a file that cannot
    be is refused here instead of at the run's first read, after the claim."""
    raw = spec.to_dict()
    for section in ("dataset", "eval"):
        block = raw.get(section) if isinstance(raw.get(section), dict) else {}
        path = block.get("path")
        if not isinstance(path, str) or path.endswith(".parquet"):
            continue
        try:
            count_jsonl_rows(resolve_data_path(path))
        except DataError as err:
            raise SpecError(f"{section}.path", f"{err}; a data file is UTF-8 JSONL, one object a line") from None
