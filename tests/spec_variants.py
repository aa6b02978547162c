"""The corpus of spec variants: what a researcher brings next, written from the three seed specs.

Each `Variant` edits one seed spec (its file and its recorded revision file, `specs/<name>.plan.json`)
the way a researcher would (seeds, arms, features, LR grids, vocabularies, datasets) and says what
intake must do with it: plan it (`refused=None`) or refuse it with exit 2 and one line that contains
`refused`. `write_variant` writes the pair of files under a directory, named so that the spec family
(`gs1_`, `selfgen_`, `trimuon_`) and with it the verdict vocabulary stay the seed's.

EXCHANGE_NEXT holds the specs written as the exchange would write its next ones (issue 46, deliverable 9): each
planned one was rehearsed at the wiring scale and graded with `--spec` when it was added, each refused one checked
for exit 2 and one line; `why` says what it did before intake refused it.

tests/unit/test_spec_corpus.py takes every variant through intake (as written and under `--rehearse`);
tests/e2e/test_spec_corpus_rehearsals.py rehearses REHEARSED at the wiring scale and compares the
grades `--plan` predicted with the grades of the finished record.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from suite import GS1_SPEC, SELFGEN_SPEC, TRIMUON_SPEC

SEEDS = {"gs1": GS1_SPEC, "selfgen": SELFGEN_SPEC, "trimuon": TRIMUON_SPEC}
FEATURES = ("custom_loss", "custom_optimizer", "paired_comparison", "paired_training_arms", "checkpoint_restore",
            "warmup_adaptation", "generated_training_data", "learned_generator", "heldout_loss", "adaptive_selection")
Edit = Callable[[dict[str, Any], dict[str, Any]], None]  # (spec file, revision file), edited in place


@dataclass(frozen=True)
class Variant:
    name: str
    seed: str  # gs1 | selfgen | trimuon
    edit: Edit
    refused: str | None  # None: planned; else a fragment of the one-line refusal
    why: str = ""
    # how the revision file lies beside the spec: "file" (written), "none" (no revision file), "symlink" (a link
    # to the written file), "dangling" (a link to nothing), "loop" (a link to itself)
    revision_as: str = "file"
    # data files written beside the spec (name -> bytes); "{dir}" in a dataset or eval path names that directory
    # (tests put it among the data directories, $RX_DATA_DIRS)
    data: tuple[tuple[str, bytes], ...] = ()


def seed_files(seed: str) -> tuple[dict[str, Any], dict[str, Any]]:
    spec = SEEDS[seed]
    return json.loads(spec.read_text()), json.loads(spec.with_name(spec.name.replace(".json", ".plan.json")).read_text())


def write_variant(variant: Variant, directory: Path) -> Path:
    """`<seed prefix>_<variant>.json` + its `.plan.json` under directory; returns the spec path."""
    spec, revision = (copy.deepcopy(part) for part in seed_files(variant.seed))
    variant.edit(spec, revision)
    path = directory / f"{SEEDS[variant.seed].name.split('_')[0]}_{variant.name.replace('-', '_')}.json"
    for name, content in variant.data:
        (directory / name).write_bytes(content)
    for section in ("dataset", "eval"):
        if isinstance(spec.get(section), dict) and isinstance(spec[section].get("path"), str):
            spec[section]["path"] = spec[section]["path"].replace("{dir}", str(directory))
    path.write_text(json.dumps(spec, indent=1))
    revision_path = path.with_name(path.name.replace(".json", ".plan.json"))
    if variant.revision_as == "file":
        revision_path.write_text(json.dumps(revision, indent=1))
    elif variant.revision_as == "symlink":
        kept = directory / "kept" / revision_path.name
        kept.parent.mkdir(exist_ok=True)
        kept.write_text(json.dumps(revision, indent=1))
        revision_path.symlink_to(kept)
    elif variant.revision_as == "dangling":
        revision_path.symlink_to(directory / "gone.plan.json")
    elif variant.revision_as == "loop":
        revision_path.symlink_to(revision_path)
    return path


# ---------------------------------------------------------------- edits

def _features(spec: dict[str, Any], revision: dict[str, Any]) -> dict[str, Any]:
    """The experiment_features a seed states (the TriMuon spec's come from its revision file)."""
    return spec["experiment_features"] if "experiment_features" in spec else revision["experiment_features"]


def set_feature(name: str, value: Any) -> Edit:
    return lambda spec, revision: _features(spec, revision).update({name: value})


def seeds(values: list[Any]) -> Edit:
    return lambda spec, revision: spec["decision_rule"].update(seeds=values)


def _arm(spec: dict[str, Any], name: str) -> dict[str, Any]:
    return next(arm for arm in spec["arms"] if arm["name"] == name)


def kernel_rollouts_per_prompt(size: int, check: str) -> Edit:
    """The GS1 kernel arm samples `size` rollouts per prompt (64 per step as before); its activation check
    expects `check`. With two rollouts of a prompt sharing its features, the kernel's effective neighbours
    and its baseline's correlation with the held-out mean come out lower, so the researcher lowers those two
    minimums (4 neighbours, a correlation above 0)."""
    def edit(spec: dict[str, Any], revision: dict[str, Any]) -> None:
        _arm(spec, "gs1_kernel").update(group_size=size, groups_per_batch=64 // size)
        lowered = {"executed_group_size_treatment": {"one_of": [check]},
                   "kernel_effective_neighbors_p10": {"min": 4.0}, "baseline_reward_corr": {"min": 0.0}}
        for each in spec["activation_gate"]["checks"]:
            each.update(lowered.get(each["metric"], {}))
    return edit


def gs1_third_arm(spec: dict[str, Any], revision: dict[str, Any], *, grouped: bool = True) -> None:
    """A third GS1 arm: GRPO at group size 4 (16 prompts x 4), trained from the same initialization."""
    spec["arms"].append({"name": "grpo_gs4", "advantage": "group_mean", "group_size": 4, "groups_per_batch": 16,
                         "lr": 4e-05, "seed": 0})
    if grouped:
        group = spec["restoration_preflight"]["groups"][0]["arms"]
        group.append({**copy.deepcopy(group[0]), "name": "grpo_gs4"})


def gs1_roles(roles: dict[str, str]) -> Edit:
    def edit(spec: dict[str, Any], revision: dict[str, Any]) -> None:
        for name, role in roles.items():
            _arm(spec, name)["role"] = role
    return edit


def weights(criterion_weights: dict[str, float]) -> Edit:
    return lambda spec, revision: spec["decision_rule"]["criteria"][0].update(weights=criterion_weights)


def no_activation_gate(spec: dict[str, Any], revision: dict[str, Any]) -> None:
    spec["activation_gate"] = {"applicable": False, "reason": "the arms share no kernel baseline to activate"}


def both(*edits: Edit) -> Edit:
    def edit(spec: dict[str, Any], revision: dict[str, Any]) -> None:
        for one in edits:
            one(spec, revision)
    return edit


def gs1_three_arms_two_seeds(spec: dict[str, Any], revision: dict[str, Any]) -> None:
    """Three GS1 arms (one treatment, two baselines) at seeds 0 and 1, weights by arm name, no activation pilot."""
    gs1_third_arm(spec, revision)
    gs1_roles({"gs1_kernel": "treatment", "grpo_gs8": "baseline", "grpo_gs4": "baseline"})(spec, revision)
    weights({"gs1_kernel": 1, "grpo_gs8": -1})(spec, revision)
    no_activation_gate(spec, revision)
    seeds([0, 1])(spec, revision)


def _unseed_groups(spec: dict[str, Any], revision: dict[str, Any]) -> None:
    """The restoration groups' arms without a stated seed (each replica requests its own)."""
    for group in spec["restoration_preflight"]["groups"]:
        for arm in group["arms"]:
            arm["optimizer_config"].pop("seed", None)


def gs1_adaptive_two_treatments(spec: dict[str, Any], revision: dict[str, Any]) -> None:
    """Adaptive selection: two treatment candidates (the GS1 kernel, GRPO at group size 4) against the GRPO
    group-size-8 baseline, weights keyed by role; which treatment goes forward is chosen on selection items."""
    gs1_third_arm(spec, revision)
    gs1_roles({"gs1_kernel": "treatment", "grpo_gs8": "baseline", "grpo_gs4": "treatment"})(spec, revision)
    no_activation_gate(spec, revision)
    set_feature("adaptive_selection", True)(spec, revision)


def _set(section: str, **values: Any) -> Edit:
    return lambda spec, revision: spec.setdefault(section, {}).update(values)


def _trimuon_grid(grid: list[float]) -> Edit:
    def edit(spec: dict[str, Any], revision: dict[str, Any]) -> None:
        for arm in revision["arms"]:
            arm["lr_grid"] = list(grid)
    return edit


# ---------------------------------------------------------------- the corpus

# What intake does with each contract feature set to true, per seed family (rl: gs1, selfgen; sft: trimuon).
# None: planned. The feature values the seeds state are planned as they are (the seeds themselves).
FEATURE_TRUE = {
    "custom_loss": {"gs1": None, "selfgen": "correctness_preflight: training_type rl checks one custom path",
                    "trimuon": "custom_loss: true is supported for training_type rl only"},
    "custom_optimizer": {"gs1": "custom_optimizer: true is supported for training_type sft only",
                         "selfgen": "custom_optimizer: true is supported for training_type sft only",
                         "trimuon": None},
    "paired_comparison": {"gs1": None, "selfgen": None,
                          "trimuon": "decision_rule: required because experiment_features.paired_comparison is true"},
    "paired_training_arms": {"gs1": None, "selfgen": None, "trimuon": None},
    # refused with the contract's words and what it leaves undefined (issue 46, deliverable 3)
    # a designed mid-run save and restore of every RL arm (before: refused, "true is not supported") and of every
    # SFT training run (before: refused, "true is supported for training_type rl only")
    "checkpoint_restore": {"gs1": None, "selfgen": None, "trimuon": None},
    "warmup_adaptation": dict.fromkeys(SEEDS, "warmup_adaptation: true is not supported: the contract defines the "
                                              "manifest (exchange-contract.md section 9"),
    "generated_training_data": dict(gs1="no trained arm's data maps to generated_tasks", selfgen=None,
                                    trimuon="no trained arm's data maps to generated_tasks"),
    "learned_generator": dict.fromkeys(SEEDS, "learned_generator: true is not supported: the contract says only "
                                              "(its table of experiment_features): \"a feature the applicability "
                                              "checker reads"),
    "heldout_loss": {"gs1": "heldout_loss: true is supported for training_type sft only",
                     "selfgen": "heldout_loss: true is supported for training_type sft only", "trimuon": None},
    # one treatment arm: nothing to choose between (the planned form: ADAPTIVE, two treatment candidates)
    "adaptive_selection": {"gs1": "adaptive_selection: true chooses between candidate arms on selection items",
                           "selfgen": "adaptive_selection: true chooses between candidate arms on selection items",
                           "trimuon": "adaptive_selection: true is supported for training_type rl only"},
}
# Set to false: a feature that only adds a requirement is planned without it, except one: TriMuon's restoration
# preflight follows paired_training_arms (its spec states no restoration_preflight), and without that gate no
# training run has an initialization checkpoint to start from (planned before: the run stopped at the feasibility
# pilot, loading a checkpoint path of None, after the preflights had run; RX_REHEARSE_CORPUS=all found it).
FEATURE_FALSE = {feature: dict.fromkeys(SEEDS, None) for feature in FEATURES}
FEATURE_FALSE["paired_training_arms"]["trimuon"] = "training_type sft starts every arm from the initialization checkpoint"


def _feature_variants() -> list[Variant]:
    variants = []
    for feature in FEATURES:
        for seed in SEEDS:
            for value, expected in ((True, FEATURE_TRUE), (False, FEATURE_FALSE)):
                variants.append(Variant(f"{feature}-{str(value).lower()}", seed, set_feature(feature, value),
                                        expected[feature][seed]))
        variants.append(Variant(f"{feature}-not-a-flag", "gs1", set_feature(feature, "yes"), "must be true or false"))
    variants.append(Variant("unknown-feature", "gs1", set_feature("curriculum", True), "unknown feature"))
    return variants


CORPUS: list[Variant] = _feature_variants() + [
    # seeds
    Variant("seeds-0-1", "gs1", seeds([0, 1]), None, "issue 29: trained seed 0 only, then DecisionError exit 3"),
    Variant("seeds-0-1-2", "gs1", seeds([0, 1, 2]), None),
    Variant("seeds-0-1", "selfgen", seeds([0, 1]), None),
    Variant("seeds-unscheduled-arm-seed", "gs1", seeds([1]), "arms[0].seed: 0 is not a scheduled seed"),
    Variant("seeds-empty", "gs1", seeds([]), "decision_rule.seeds: is empty"),
    Variant("seeds-repeated", "gs1", seeds([0, 0]), "must be distinct non-negative integers"),
    Variant("seeds-negative", "gs1", seeds([-1]), "must be distinct non-negative integers"),
    Variant("seeds-arms-unseeded", "gs1", both(lambda s, r: [a.pop("seed") for a in s["arms"]], _unseed_groups,
                                                seeds([3, 4])), None),
    Variant("seeds-group-seed-unscheduled", "gs1", both(lambda s, r: [a.pop("seed") for a in s["arms"]], seeds([3, 4])),
            "optimizer_config.seed: 0 is not a scheduled seed", "the restoration group still states seed 0"),
    Variant("seeds-arms-differ", "gs1", both(lambda s, r: s["decision_rule"].pop("seeds"),
                                             lambda s, r: _arm(s, "gs1_kernel").update(seed=1)),
            "arms state different seeds [0, 1]"),
    Variant("seeds-sft", "trimuon", lambda s, r: s.update(decision_rule={
        "version": 1, "method": "best_lr_threshold", "seeds": [0, 1],
        "criteria": [{"id": "primary", "metric": "nll", "weights": {"trimuon": 1, "dimuon_lite": -1}, "margin": 0}]}),
            "verdict_rule: the spec has a decision_rule too: one rule decides"),
    # arms and roles
    Variant("roles-explicit", "gs1", gs1_roles({"gs1_kernel": "treatment", "grpo_gs8": "baseline"}), None),
    Variant("roles-swapped", "gs1", gs1_roles({"gs1_kernel": "baseline", "grpo_gs8": "treatment"}),
            "treatment grpo_gs8 is neither"),
    Variant("roles-unknown", "gs1", gs1_roles({"gs1_kernel": "candidate"}), "must be one of treatment"),
    Variant("roles-two-treatments", "trimuon", lambda s, r: [arm.update(role="treatment") for arm in r["arms"]],
            "role treatment is held by several arms: give exactly one arm each of the two roles"),
    Variant("three-arms-role-weights", "gs1", both(gs1_third_arm, gs1_roles(
        {"gs1_kernel": "treatment", "grpo_gs8": "baseline", "grpo_gs4": "treatment"})),
            "role 'treatment' is ambiguous: arms gs1_kernel, grpo_gs4 all hold it; key the weights by arm name"),
    Variant("three-arms-name-weights-activation", "gs1", both(gs1_third_arm, weights({"gs1_kernel": 1, "grpo_gs8": -1})),
            "the activation pilot needs exactly one arm with role treatment and one with role baseline"),
    Variant("three-arms-name-weights", "gs1", both(gs1_third_arm, weights({"gs1_kernel": 1, "grpo_gs8": -1}),
                                                  no_activation_gate), None),
    Variant("three-arms-two-criteria", "gs1", both(gs1_third_arm, no_activation_gate, lambda s, r: s["decision_rule"]
                                                   .update(criteria=[
                                                       {"id": "vs_gs8", "metric": "accuracy", "margin": -0.03,
                                                        "weights": {"gs1_kernel": 1, "grpo_gs8": -1}, "bounds": [0, 1]},
                                                       {"id": "vs_gs4", "metric": "accuracy", "margin": -0.03,
                                                        "weights": {"gs1_kernel": 1, "grpo_gs4": -1}, "bounds": [0, 1]}])),
            None),
    Variant("three-arms-two-seeds", "gs1", gs1_three_arms_two_seeds, None),
    Variant("three-arms-ungrouped", "gs1", both(lambda s, r: gs1_third_arm(s, r, grouped=False),
                                               weights({"gs1_kernel": 1, "grpo_gs8": -1}), no_activation_gate),
            "trained arms grpo_gs4 are in no restoration group"),
    Variant("no-restoration", "gs1", both(set_feature("paired_training_arms", False), lambda s, r: s[
        "restoration_preflight"].update(applicable=False)), "training_type rl starts every arm from the initialization"),
    Variant("weights-role-and-name", "gs1", weights({"treatment": 1, "gs1_kernel": 1, "baseline": -1}),
            "is weighted twice"),
    Variant("weights-unknown-arm", "gs1", weights({"gs1_kernel": 1, "ppo": -1}), "names arm 'ppo' that does not exist"),
    Variant("weights-role-without-arm", "selfgen", lambda s, r: s["decision_rule"]["criteria"][0].update(
        weights={"rl_selfgen": 1, "untrained_base": -1, "baseline": 0}), None),
    Variant("criterion-metric-unscored", "gs1", lambda s, r: s["decision_rule"]["criteria"][0].update(metric="pass@8"),
            "training_type rl scores accuracy"),
    Variant("criterion-bounds-narrow", "gs1", lambda s, r: s["decision_rule"]["criteria"][0].update(bounds=[0, 0.5]),
            "does not contain the accuracy values 0 and 1"),
    Variant("no-alpha", "gs1", lambda s, r: s["decision_rule"].pop("alpha"), "paired_hoeffding needs alpha"),
    Variant("method-best-lr-rl", "gs1", lambda s, r: s["decision_rule"].update(method="best_lr_threshold"),
            "training_type rl supports paired_hoeffding"),
    Variant("kernel-arm-missing", "gs1", lambda s, r: _arm(s, "gs1_kernel").update(advantage="group_mean"),
            "role 'treatment' maps to no arm (roles: grpo_gs8=baseline, gs1_kernel=baseline); key the weights by "
            "arm name"),
    Variant("kernel-arm-missing-name-weights", "gs1", both(lambda s, r: _arm(s, "gs1_kernel").update(
        advantage="group_mean"), weights({"gs1_kernel": 1, "grpo_gs8": -1})), "training_type rl checks one custom path"),
    # activation checks
    Variant("activation-check-unmeasured", "gs1", lambda s, r: s["activation_gate"]["checks"].append(
        {"metric": "kl_to_base", "measures": "KL of the policy to the base", "max": 0.1}),
            "'kl_to_base' is not measured by this spec's activation pilot"),
    Variant("activation-check-no-range", "selfgen", lambda s, r: s["activation_gate"]["checks"][0].update(
        min=None, max=None, one_of=None), "has no range"),
    Variant("activation-check-number-one-of", "gs1", lambda s, r: s["activation_gate"]["checks"][0].update(
        one_of=[1]), "must be a list of strings"),
    Variant("activation-check-dropped", "gs1", lambda s, r: s["activation_gate"]["checks"].pop(), None),
    # adaptive selection (DEC-13): candidates chosen on selection items, the decision on confirmation items
    Variant("adaptive-two-treatments", "gs1", gs1_adaptive_two_treatments, None),
    Variant("adaptive-two-treatments-two-seeds", "gs1", both(gs1_adaptive_two_treatments, seeds([0, 1])), None),
    Variant("adaptive-two-treatments-three-way", "gs1", both(gs1_adaptive_two_treatments,
                                                            lambda s, r: s.update(verdict_vocabulary="three_way")), None),
    Variant("adaptive-two-treatments-checkpoint-restore", "gs1", both(gs1_adaptive_two_treatments,
                                                                     set_feature("checkpoint_restore", True)), None),
    Variant("adaptive-name-weights", "gs1", both(gs1_adaptive_two_treatments,
                                                 weights({"gs1_kernel": 1, "grpo_gs8": -1})),
            "adaptive_selection: true chooses between candidate arms on selection items"),
    Variant("adaptive-two-baselines", "gs1", both(gs1_third_arm, gs1_roles(
        {"gs1_kernel": "treatment", "grpo_gs8": "baseline", "grpo_gs4": "baseline"}), no_activation_gate,
        set_feature("adaptive_selection", True)), "role 'baseline' is ambiguous"),
    Variant("adaptive-activation-pilot", "gs1", both(gs1_adaptive_two_treatments, lambda s, r: s.update(
        activation_gate=json.loads(SEEDS["gs1"].read_text())["activation_gate"])),
            "the activation pilot needs exactly one arm with role treatment"),
    Variant("adaptive-one-eval-item", "gs1", both(gs1_adaptive_two_treatments, _set("eval", n_examples=1)),
            "adaptive selection splits the evaluated items"),
    Variant("adaptive-sft-grid", "trimuon", both(set_feature("adaptive_selection", True),
                                                 _trimuon_grid([1e-4, 3e-4, 1e-3])),
            "adaptive_selection: true is supported for training_type rl only"),
    # group sizes: the pilot's executed group size is each arm's group_size, known at intake
    Variant("kernel-two-rollouts-per-prompt", "gs1", kernel_rollouts_per_prompt(2, "2"), None),
    Variant("kernel-group-size-against-its-check", "gs1", kernel_rollouts_per_prompt(2, "1"),
            "executed_group_size_treatment will be 2", "the activation gate stopped the run after the preflights"),
    Variant("kernel-group-size-unstated", "gs1", lambda s, r: _arm(s, "gs1_kernel").pop("group_size"),
            "executed_group_size_treatment will be 8", "the loop samples 8 rollouts per prompt where none is stated"),
    Variant("baseline-group-size-against-its-check", "gs1",
            lambda s, r: _arm(s, "grpo_gs8").update(group_size=4, groups_per_batch=16),
            "executed_group_size_baseline will be 4"),
    # LR grids
    Variant("arm-steps-differ", "gs1", lambda s, r: _arm(s, "gs1_kernel").update(steps=5),
            "arm gs1_kernel: 5 steps, but training_type rl trains every arm the spec's 40 steps",
            "planned 5 steps for the arm while the run trained it the spec's 40"),
    Variant("lr-grid-rl", "gs1", lambda s, r: _arm(s, "gs1_kernel").update(lr_grid=[2e-05, 4e-05, 8e-05]),
            "defines no held-out split to select an RL arm's LR on"),  # the refusal cites the contract's LR-grid row
    Variant("lr-grid-wider", "trimuon", _trimuon_grid([1e-4, 3e-4, 1e-3, 3e-3]), None),
    Variant("lr-grid-one-point", "trimuon", _trimuon_grid([1e-4]), None),
    Variant("lr-grid-without-the-spec-lr", "trimuon", _trimuon_grid([3e-4]), "leaves out the spec's optimizer.lr"),
    Variant("lr-grid-empty", "trimuon", _trimuon_grid([]), "is empty; list at least one learning rate"),
    # vocabularies
    Variant("vocabulary-three-way", "gs1", lambda s, r: s.update(verdict_vocabulary="three_way"), None),
    Variant("vocabulary-direction", "selfgen", lambda s, r: r.update(verdict_vocabulary="direction_confidence"), None),
    Variant("vocabulary-unknown", "gs1", lambda s, r: s.update(verdict_vocabulary="bayesian"),
            "verdict_vocabulary: must be one of direction_confidence, three_way"),
    # datasets
    Variant("dataset-math", "gs1", _set("dataset", name="MATH", hf_path="hendrycks/competition_math"),
            "training_type rl reads GSM8K"),
    Variant("dataset-task-file", "gs1", _set("dataset", path="embedded_tinker/tasks/data/train.jsonl"),
            None),
    Variant("dataset-outside-data-dirs", "gs1", _set("dataset", path="/etc/passwd"), "dataset.path"),
    Variant("dataset-too-many-examples", "gs1", _set("dataset", n_examples=10000),
            "dataset.n_examples: is 10000 but the training set has 7473 items"),
    Variant("dataset-fewer-prompts-than-steps", "gs1", _set("dataset", n_examples=96),
            "dataset.n_examples: gives 96 prompts, but arm grpo_gs8 takes 8 distinct prompts a step for 40 steps",
            "stopped at the correctness preflight's second batch (the wiring rehearsal) or at the arm's 13th step"),
    Variant("dataset-fewer-prompts-than-steps", "selfgen", _set("dataset", n_examples=48),
            "dataset.n_examples: gives 48 prompts, but arm rl_gsm8k takes 16 distinct prompts a step for 40 steps",
            "rehearsed green at the wiring scale, then would stop at the baseline's 4th step in production"),
    Variant("fewer-tasks-than-steps", "selfgen", lambda s, r: r["generation"].update(n_accept=320),
            "generation.n_accept: gives 320 prompts, but arm rl_selfgen takes 16 distinct prompts a step for 40 steps"),
    Variant("kernel-half-the-rollouts", "gs1", lambda s, r: _arm(s, "gs1_kernel").update(groups_per_batch=32), None),
    Variant("steps-two", "gs1", lambda s, r: s.update(steps=2), None),
    Variant("lora-rank-8", "gs1", lambda s, r: s.update(lora_rank=8), None),
    Variant("eval-ten-items", "gs1", _set("eval", n_examples=10), None),
    Variant("alpha-0-2", "gs1", lambda s, r: s["decision_rule"].update(alpha=0.2), None),
    Variant("steps-three", "trimuon", lambda s, r: s.update(steps=3), None),
    Variant("eval-ten-items", "trimuon", _set("eval", n_examples=10), None),
    Variant("batch-eight", "trimuon", lambda s, r: s.update(batch_size=8), None),
    Variant("seed-1-only", "gs1", lambda s, r: [s["decision_rule"].update(seeds=[1])] + [a.update(seed=1) for a in s["arms"]]
            + [m["optimizer_config"].update(seed=1) for g in s["restoration_preflight"]["groups"] for m in g["arms"]], None),
    Variant("margin-positive", "gs1", lambda s, r: s["decision_rule"]["criteria"][0].update(margin=0.05), None),
    Variant("lora-rank-1", "gs1", lambda s, r: s.update(lora_rank=1), None),
    Variant("max-seq-len-64", "gs1", lambda s, r: s.update(max_seq_len=64),
            "max_tokens 512 (from spec prose (method/command)) leaves no room for the prompt in max_seq_len 64",
            "planned before (issue 46): 512-token answers in 64-token sequences"),
    Variant("eval-one-item", "gs1", _set("eval", n_examples=1), None),
    Variant("budget-tiny", "gs1", lambda s, r: s["budget"].update(gpu_hours=0.001, max_wall_minutes=1),
            "1 min (60 s) cannot hold the run: even the floor of the static estimate is 174 s",
            "planned before (issue 46): 40 production steps never fit a minute"),
    Variant("audit-300", "selfgen", lambda s, r: s["generation_audit"].update(min_sample_size=300), None),
    Variant("filter-one-sample", "selfgen", lambda s, r: r["generation"].update(filter_samples=1, keep_band=[0, 1]), None),
    Variant("eval-five-items", "selfgen", _set("eval", n_examples=5), None),
    # TriMuon's verdict rule and optimizers
    Variant("margin-negative", "trimuon", lambda s, r: r["verdict_rule"]["criteria"][0].update(margin=-0.01), None),
    Variant("one-criterion", "trimuon", lambda s, r: r["verdict_rule"].update(criteria=r["verdict_rule"]["criteria"][:1]), None),
    Variant("step-time-at-most", "trimuon", lambda s, r: r["verdict_rule"]["criteria"][1].update(comparison="at_most",
                                                                                                 margin=0.5),
            "'at_most': a best-LR criterion's effect meets its margin at_least or exceeds it",
            "planned before: the decision read at_most as exceeds (effect > margin), the opposite"),
    Variant("optimizer-settings-both-arms", "trimuon", lambda s, r: [arm["optimizer"]["config"].update(
        beta1=0.5, grad_clip_norm=1.0) for arm in r["arms"]], None),
    Variant("adamw-baseline", "trimuon", lambda s, r: r["arms"][1]["optimizer"].update(
        family="adamw", config={"beta1": 0.9, "grad_clip_norm": 0.0}),
            "training_type sft checks one optimizer path", "stopped at the correctness preflight's baseline check"),
    Variant("baseline-beta1-differs", "trimuon", lambda s, r: r["arms"][1]["optimizer"]["config"].update(beta1=0.5),
            "training_type sft checks one optimizer path"),
    Variant("rollout-greedy-short", "gs1", lambda s, r: r.update(rollout={"max_tokens": 8, "temperature": 0.0}), None),
    Variant("audit-without-generated-data", "gs1", lambda s, r: s["generation_audit"].update(required=True),
            "the audit applies (generation_audit.required is true), but no arm trains on generated tasks",
            "stopped at the generation audit, after the preflights, on a generation design the spec never states"),
    Variant("audit-not-required", "selfgen", lambda s, r: s["generation_audit"].update(required=False), None),
    Variant("no-activation-gate", "selfgen", lambda s, r: s["activation_gate"].update(
        applicable=False, reason="the researcher skips the pilot"), None),
    Variant("no-feasibility", "gs1", lambda s, r: s.update(feasibility_required=False), None),
    Variant("correctness-not-required", "gs1", lambda s, r: s["correctness_preflight"].update(required=False), None),
    Variant("no-fixed-batch", "gs1", lambda s, r: s["restoration_preflight"].update(fixed_batch_required=False), None),
    Variant("rollout-no-tokens", "gs1", lambda s, r: r.update(rollout={"max_tokens": 0}),
            "rollout: max_tokens 0, temperature 1.0", "rehearsed (the stand-in's own cap); production samples nothing"),
    Variant("rollout-negative-temperature", "gs1", lambda s, r: r.update(rollout={"max_tokens": 8, "temperature": -1}),
            "a rollout samples at least one token at a temperature >= 0"),
    Variant("no-max-tokens", "gs1", lambda s, r: s.update(method=s["method"].replace("max_tokens=512", "a token cap"),
                                                         command=s["command"].replace("max_tokens=512", "a token cap")),
            "rollout: the spec states no max_tokens", "rehearsed (the stand-in's own cap) and crashed in production"),
    Variant("arm-lr-against-its-group", "gs1", lambda s, r: _arm(s, "gs1_kernel").update(lr=8e-05),
            "optimizer_config.lr: 4e-05, but arm gs1_kernel trains at lr 8e-05",
            "stopped at the restoration preflight's first optim_step (the service refused the contradiction)"),
    Variant("eval-too-many-items", "gs1", _set("eval", n_examples=5000),
            "eval.n_examples: is 5000 but the held-out set has 1319 items"),
    Variant("eval-benchmark-unknown", "gs1", _set("eval", benchmark="MATH500 test", metric="exact match"),
            "training_type rl scores GSM8K test"),
    Variant("steps-negative", "gs1", lambda s, r: s.update(steps=-3), "steps: must be a positive integer"),
]

# ---------------------------------------------------------------- refused before any spending (issue 46)

def _criterion(**values: Any) -> Edit:
    return lambda spec, revision: spec["decision_rule"]["criteria"][0].update(values)


def _budget(minutes: float, **spec_values: Any) -> Edit:
    return lambda spec, revision: [spec["budget"].update(max_wall_minutes=minutes), spec.update(spec_values)]


def _data_file(section: str, name: str) -> Edit:
    """The section's data is the variant's own file (written beside the spec)."""
    return lambda spec, revision: spec[section].update(path="{dir}/" + name)


TASK_ROW = b'{"id": "t0", "question": "What is 2 plus 3?", "answer": "5"}\n'
CHAT_ROW = b'{"id": "c0", "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]}\n'
BINARY = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00" * 8
MALFORMED = TASK_ROW + b'{"id": "t1", "question": "What is 1 plus 1?", "answer": \n'
DUPLICATE_ID = TASK_ROW + TASK_ROW.replace(b"2 plus 3", b"2 plus 4").replace(b'"5"', b'"6"')
NESTED = b'{"id": "t0", "question": ' + b"[" * 40 + b'"x"' + b"]" * 40 + b', "answer": "1"}\n'
NESTED_PAST_THE_PARSER = b'{"id": "t0", "question": "q", "answer": "1", "x": ' + b"[" * 200_000 + b"]" * 200_000 + b"}\n"
NOT_OBJECTS = b'["t0", "What is 2 plus 3?", "5"]\n'

BEFORE_SPENDING: list[Variant] = [
    # correctness revisions UNRESOLVED: the run stopped at the correctness preflight after the probe (350 s)
    Variant("pins-unresolved-no-revision", "gs1", lambda s, r: None,
            "are UNRESOLVED and the spec has no revision file", "planned before, stopped at the correctness preflight",
            revision_as="none"),
    Variant("pins-unresolved-revision-without-pins", "gs1", lambda s, r: r.pop("correctness_preflight"),
            "are UNRESOLVED and its revision file"),
    # a wall budget the static estimate shows cannot hold the run (feasibility_required: the pilot stops it)
    Variant("budget-six-seconds", "gs1", _budget(0.1), "cannot hold the run: even the floor of the static estimate",
            "planned before, stopped at the feasibility pilot (projected 84 s exceeds 6 s) after the preflights"),
    Variant("budget-two-minutes", "selfgen", _budget(2), "cannot hold the run"),
    Variant("budget-may-not-fit", "gs1", _budget(20), None, "planned; predicted: may stop at feasibility"),
    Variant("budget-tiny-short-run", "gs1", _budget(1, steps=2), None, "planned; predicted: may stop at feasibility"),
    Variant("budget-tiny-not-enforced", "gs1", _budget(1, feasibility_required=False), None,
            "planned; predicted: the budget may be overrun, and the record says so (budget_use)"),
    Variant("budget-one-minute", "trimuon", _budget(1), None, "TriMuon does not enforce its budget"),
    # bounds and margin on the metric's scale
    Variant("bounds-percent", "gs1", _criterion(bounds=[0, 100], margin=-3), "[0, 100] is not the range of accuracy",
            "planned before: a margin of -3 on bounds [0, 100] can never be met"),
    Variant("bounds-percent-fraction-margin", "gs1", _criterion(bounds=[0, 100]), "is not the range of accuracy"),
    Variant("bounds-symmetric", "gs1", _criterion(bounds=[-1, 1]), "[-1, 1] is not the range of accuracy"),
    Variant("margin-in-points", "gs1", _criterion(margin=-3), "-3 lies outside the effect's range (-1, 1)"),
    Variant("bounds-percent", "selfgen", _criterion(bounds=[0, 100]), "is not the range of accuracy"),
    # max_tokens against max_seq_len
    Variant("rollout-fills-seq-len", "gs1", lambda s, r: [s.update(max_seq_len=32768), r.update(
        rollout={"max_tokens": 32768, "temperature": 1.0})], "max_tokens 32768 (from spec.rollout) leaves no room"),
    Variant("max-seq-len-512", "selfgen", lambda s, r: s.update(max_seq_len=512), "leaves no room for the prompt"),
    Variant("max-seq-len-600", "gs1", lambda s, r: s.update(max_seq_len=600), None),
    # revision files that are not regular files beside the spec
    Variant("revision-symlink", "gs1", lambda s, r: None, "is a symbolic link", revision_as="symlink"),
    Variant("revision-dangling", "gs1", lambda s, r: None, "is a symbolic link",
            "planned before as a spec with no revision file", revision_as="dangling"),
    Variant("revision-loop", "gs1", lambda s, r: None, "is a symbolic link", revision_as="loop"),
    Variant("revision-dangling", "trimuon", lambda s, r: None, "is a symbolic link", revision_as="dangling"),
    # data files validated at intake
    Variant("dataset-binary", "gs1", _data_file("dataset", "train.bin.jsonl"), "train.bin.jsonl:1: not UTF-8 text",
            "planned before: intake counted nothing and said nothing", data=(("train.bin.jsonl", BINARY),)),
    Variant("dataset-nul-bytes", "gs1", _data_file("dataset", "train.jsonl"), "train.jsonl:2: binary data (a NUL byte)",
            data=(("train.jsonl", TASK_ROW + b"\x00\x01\x02\x03" * 16 + b"\n"),)),
    Variant("dataset-malformed", "gs1", _data_file("dataset", "train.jsonl"), "not valid JSON",
            data=(("train.jsonl", MALFORMED),)),
    Variant("dataset-duplicate-id", "gs1", _data_file("dataset", "train.jsonl"), "duplicate id 't0'",
            data=(("train.jsonl", DUPLICATE_ID),)),
    Variant("dataset-deeply-nested", "gs1", _data_file("dataset", "train.jsonl"), "nested deeper than 16 levels",
            data=(("train.jsonl", NESTED),)),
    Variant("dataset-nested-past-the-parser", "gs1", _data_file("dataset", "train.jsonl"), "nested deeper than",
            "a traceback before (RecursionError)", data=(("train.jsonl", NESTED_PAST_THE_PARSER),)),
    Variant("dataset-rows-not-objects", "gs1", _data_file("dataset", "train.jsonl"), "each line must be a JSON object",
            data=(("train.jsonl", NOT_OBJECTS),)),
    Variant("eval-file-malformed", "gs1", _data_file("eval", "test.jsonl"), "eval.path", data=(("test.jsonl", MALFORMED),)),
    Variant("dataset-binary", "trimuon", _data_file("dataset", "train.jsonl"), "train.jsonl:1: not UTF-8 text",
            data=(("train.jsonl", BINARY),)),
    Variant("eval-file-duplicate-id", "trimuon", _data_file("eval", "test.jsonl"), "duplicate id 'c0'",
            data=(("test.jsonl", CHAT_ROW + CHAT_ROW),)),
]
CORPUS += BEFORE_SPENDING


def _verdict_seeds(values: list[Any]) -> Edit:
    return lambda spec, revision: revision["verdict_rule"].update(seeds=values)


# SFT seeds in the recorded revision's verdict_rule (the TriMuon spec's "optional second seed", scheduled before
# anything is measured): every arm's LR grid trains at each seed, in that seed's data order (issue 46, item 1; the
# first round planned seed 0 only and the record graded DEC-6 "6 observations missing ... seed 1", the second
# refused two seeds at intake)
CORPUS += [
    Variant("verdict-seeds-0-1", "trimuon", _verdict_seeds([0, 1]), None,
            "refused before: training_type sft trains one seed per run"),
    Variant("verdict-seeds-1", "trimuon", _verdict_seeds([1]), "arms[0].seed: 0 is not a scheduled seed "
            "(verdict_rule.seeds [1])"),
    Variant("verdict-seeds-1-unseeded-arms", "trimuon", both(_verdict_seeds([1]),
                                                             lambda s, r: [arm.pop("seed") for arm in r["arms"]]), None),
    Variant("verdict-seeds-0", "trimuon", _verdict_seeds([0]), None),
    Variant("verdict-seeds-repeated", "trimuon", _verdict_seeds([0, 0]), "verdict_rule.seeds: must be a non-empty "
            "list of distinct non-negative integers"),
]



def _decision_method(method: str) -> Edit:
    return lambda spec, revision: spec["decision_rule"].update(method=method)


# A decision method the contract does not define: refused with what it does define (issue 46, deliverable 3;
# before: "unknown method" and the known names, without the contract's definition or what is missing)
CORPUS += [Variant("decision-method-bootstrap-bca", seed, _decision_method("paired_bootstrap_bca"),
                   "the contract defines one decision method, exchange-contract.md section 7") for seed in ("gs1", "selfgen")]



def _open_margin(pinned: float | None) -> Edit:
    """The spec leaves its margin UNRESOLVED; the revision pins it (`pinned`) or not."""
    def edit(spec: dict[str, Any], revision: dict[str, Any]) -> None:
        spec["decision_rule"]["criteria"][0]["margin"] = "UNRESOLVED: the noninferiority margin"
        if pinned is not None:
            revision["decision_rule"] = {"criteria": [{"id": spec["decision_rule"]["criteria"][0]["id"], "margin": pinned}]}
    return edit


# A margin the spec leaves open (issue 46, onboarding): refused with where to pin it (before: pydantic's "Input should
# be a valid number, unable to parse string as a number"), planned once the revision file pins it.
CORPUS += [
    Variant("margin-open", "gs1", _open_margin(None), "the spec leaves this value open ('UNRESOLVED: the "
            "noninferiority margin'); pin it in the spec's revision file"),
    Variant("margin-open-pinned", "gs1", _open_margin(-0.03), None),
    Variant("margin-open", "selfgen", _open_margin(None), "pin it in the spec's revision file"),
]



def _chat_rows(prefix: str, n: int) -> bytes:
    return b"".join(CHAT_ROW.replace(b'"c0"', f'"{prefix}{i}"'.encode()).replace(b"Hello", f"Hello {i}".encode())
                    for i in range(n))


def _task_rows(prefix: str, n: int) -> bytes:
    return b"".join(TASK_ROW.replace(b'"t0"', f'"{prefix}{i}"'.encode()).replace(b"2 plus 3", f"2 plus {i}".encode())
                    .replace(b'"5"', f'"{2 + i}"'.encode()) for i in range(n))


def _own_chat_data(spec: dict[str, Any], revision: dict[str, Any]) -> None:
    spec["dataset"] = {"name": "hg arithmetic chat", "path": "{dir}/chat_train.jsonl", "n_examples": 64}
    spec["eval"].update(path="{dir}/chat_test.jsonl", benchmark="hg arithmetic chat test", n_examples=16)


# The researcher's own local data in a rehearsal (issue 46, deliverable 1): used as given, scaled, never swapped
# for a stand-in (before: --plan accepted SFT on local chat JSONL, --rehearse refused "no local stand-in for 'hg
# arithmetic chat'"; RL eval.path was swapped for the stand-in's test split). Each planned at --plan and --rehearse.
CORPUS += [
    Variant("dataset-own-chat-files", "trimuon", _own_chat_data, None,
            data=(("chat_train.jsonl", _chat_rows("c", 64)), ("chat_test.jsonl", _chat_rows("e", 16)))),
    Variant("eval-own-task-file", "gs1", lambda spec, revision: spec["eval"].update(path="{dir}/test.jsonl", n_examples=40),
            None, data=(("test.jsonl", _task_rows("e", 40)),)),
]

def _trimuon_three_optimizers(spec: dict[str, Any], revision: dict[str, Any]) -> None:
    """Three optimizers in one SFT spec, each with its own LR grid: TriMuon (treatment) against DiMuon-lite and
    AdamW (both baselines); the verdict rule contrasts TriMuon's best LR with each baseline's."""
    adamw = copy.deepcopy(revision["arms"][1])
    adamw.update(name="adamw", optimizer={"family": "adamw", "config": {"beta1": 0.9, "grad_clip_norm": 0.0}},
                 lr_grid=[1e-4, 3e-4, 1e-3])
    revision["arms"].append(adamw)
    criteria = revision["verdict_rule"]["criteria"]
    criteria.insert(1, {**copy.deepcopy(criteria[0]), "id": "nll_gap_adamw", "weights": {"adamw": 1, "trimuon": -1}})


# Any number of SFT arms, each with its own LR grid (issue 46, item 1: "three optimizers in one SFT spec (AdamW,
# DiMuon, TriMuon with LR grids)" was refused, "needs exactly one arm with role treatment and one with role
# baseline"); the correctness preflight measures the one TriMuon/DiMuon-lite path whatever other arms run.
CORPUS += [
    Variant("three-optimizers-grids", "trimuon", _trimuon_three_optimizers, None,
            "refused before: needs exactly one arm with role treatment and one with role baseline"),
    Variant("three-optimizers-grids-two-seeds", "trimuon", both(_trimuon_three_optimizers, _verdict_seeds([0, 1])),
            None),
    Variant("three-optimizers-role-weights", "trimuon", both(_trimuon_three_optimizers, lambda s, r: r["verdict_rule"][
        "criteria"][1].update(weights={"baseline": 1, "treatment": -1})),
            "verdict_rule.criteria[1].weights: key 'baseline' is not a trained arm"),
    Variant("three-optimizers-no-dimuon", "trimuon", both(_trimuon_three_optimizers, lambda s, r: r["arms"][1][
        "optimizer"].update(family="adamw", config={"beta1": 0.9, "grad_clip_norm": 0.0})),
            "training_type sft checks one optimizer path"),
    Variant("one-arm", "trimuon", lambda s, r: r["arms"].pop(1), "training_type sft compares two or more trained arms"),
]

def _trimuon_paired_decision(spec: dict[str, Any], revision: dict[str, Any]) -> None:
    """The TriMuon comparison decided by a paired Hoeffding rule on each held-out conversation's NLL (the contract's
    section 7 decision on a per-item held-out measure): one LR per arm, example-mean aggregation, no verdict_rule."""
    for arm in revision["arms"]:
        arm.pop("lr_grid")
        arm["lr"] = 1e-4
    revision.pop("verdict_rule")
    revision["experiment_features"]["paired_comparison"] = True
    spec["eval"]["aggregation"] = "example_mean"
    spec["decision_rule"] = {
        "version": 1, "method": "paired_hoeffding", "alpha": 0.05, "unit": "held-out conversation", "seeds": [0],
        "criteria": [{"id": "nll_gap", "metric": "heldout_nll_example_mean", "margin": 0.01, "bounds": [0, 40],
                      "weights": {"dimuon_lite": 1, "trimuon": -1}}]}


# Paired decisions on per-item held-out measures for SFT (issue 46, item 1: "SFT with a paired_hoeffding decision
# on held-out items" was refused): each conversation's held-out NLL is the paired observation.
CORPUS += [
    Variant("paired-decision", "trimuon", _trimuon_paired_decision, None, "refused before: training_type sft "
            "decides by the recorded revision's verdict_rule"),
    Variant("paired-decision-two-seeds", "trimuon", both(_trimuon_paired_decision,
                                                         lambda s, r: s["decision_rule"].update(seeds=[0, 1])), None),
    Variant("paired-decision-role-weights", "trimuon", both(_trimuon_paired_decision, lambda s, r: s["decision_rule"][
        "criteria"][0].update(weights={"baseline": 1, "treatment": -1})), None),
    Variant("paired-decision-token-mean", "trimuon", both(_trimuon_paired_decision,
                                                          lambda s, r: s["eval"].update(aggregation="token_mean")),
            "eval.aggregation: 'token_mean': a paired decision on held-out NLL observes each conversation's own NLL"),
    Variant("paired-decision-lr-grid", "trimuon", both(_trimuon_paired_decision, _trimuon_grid([5e-5, 1e-4, 2e-4])),
            "a decision_rule on training_type sft compares arms of one learning rate each"),
    Variant("paired-decision-bounds-above-zero", "trimuon", both(_trimuon_paired_decision, lambda s, r: s[
        "decision_rule"]["criteria"][0].update(bounds=[1, 40])), "a held-out NLL is at least 0"),
    Variant("decision-rule-best-lr-seeds", "trimuon", lambda s, r: (r.pop("verdict_rule"), s.update(decision_rule={
        "version": 1, "method": "best_lr_threshold", "seeds": [0, 1], "criteria": [
            {"id": "primary", "metric": "heldout_nll_token_mean", "weights": {"trimuon": -1, "dimuon_lite": 1},
             "margin": 0.01}]})), "a best-LR threshold is the revision's verdict_rule (its seeds in verdict_rule.seeds)"),
    Variant("paired-decision-beside-verdict-rule", "trimuon", both(
        _trimuon_paired_decision, lambda s, r: r.update(verdict_rule=seed_files("trimuon")[1]["verdict_rule"])),
            "one rule decides"),
]

# checkpoint_restore on SFT (issue 46, deliverable 3; refused before: "supported for training_type rl only"): every
# training run of every arm's LR grid, at every seed, saved and restored at its midpoint step.
CORPUS += [
    Variant("checkpoint-restore-two-seeds", "trimuon", both(set_feature("checkpoint_restore", True),
                                                            _verdict_seeds([0, 1])), None),
    Variant("checkpoint-restore-one-step", "trimuon", both(set_feature("checkpoint_restore", True),
                                                           lambda s, r: s.update(steps=1)),
            "checkpoint_restore: true saves and restores every arm mid-run, between two steps"),
]

def _rename_arm(old: str, new: str) -> Edit:
    """An RL arm renamed everywhere the spec names it (arms, restoration groups, weights keyed by name)."""
    def edit(spec: dict[str, Any], revision: dict[str, Any]) -> None:
        _arm(spec, old)["name"] = new
        for group in spec["restoration_preflight"]["groups"]:
            for arm in group["arms"]:
                if arm["name"] == old:
                    arm["name"] = new
        for criterion in spec["decision_rule"]["criteria"]:
            if old in criterion["weights"]:
                criterion["weights"][new] = criterion["weights"].pop(old)
    return edit


def _rename_sft_arm(old: str, new: str) -> Edit:
    def edit(spec: dict[str, Any], revision: dict[str, Any]) -> None:
        next(arm for arm in revision["arms"] if arm["name"] == old)["name"] = new
        for criterion in revision["verdict_rule"]["criteria"]:
            criterion["weights"][new] = criterion["weights"].pop(old)
    return edit


def _per_arm_lr(name: str, lr: float) -> Edit:
    """One RL arm at its own learning rate, its restoration group entry stating the same."""
    def edit(spec: dict[str, Any], revision: dict[str, Any]) -> None:
        _arm(spec, name)["lr"] = lr
        for group in spec["restoration_preflight"]["groups"]:
            for arm in group["arms"]:
                if arm["name"] == name:
                    arm["optimizer_config"]["lr"] = lr
    return edit


def _rows(rows: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(row).encode() + b"\n" for row in rows)


# the researcher's own task rows in other shapes: integer ids, extra fields the pipeline does not read
TASKS_INT_IDS = _rows([{"id": i, "question": f"What is 2 plus {i}?", "answer": str(2 + i), "source": "own",
                        "difficulty": i % 3, "tags": ["arith"]} for i in range(40)])
TASKS_MIXED_ID_TYPES = _rows([{"id": 1, "question": "What is 2 plus 1?", "answer": "3"},
                              {"id": "1", "question": "What is 2 plus 2?", "answer": "4"}])
CHATS_INT_IDS = _rows([{"id": i, "source": "own", "messages": [
    {"role": "system", "content": "Answer briefly."}, {"role": "user", "content": f"Add 2 and {i}."},
    {"role": "assistant", "content": str(2 + i)}]} for i in range(64)])


def _decision(**values: Any) -> Edit:
    return lambda spec, revision: spec["decision_rule"].update(values)


def _drop(*keys: str) -> Edit:
    return lambda spec, revision: [spec.pop(key, None) for key in keys]


def _selfgen_third_criterion(spec: dict[str, Any], revision: dict[str, Any]) -> None:
    spec["decision_rule"]["criteria"].append({"id": "beats_base", "metric": "accuracy", "margin": 0.0,
                                              "weights": {"rl_selfgen": 1, "base": -1}, "bounds": [0, 1]})


def _selfgen_without_base(spec: dict[str, Any], revision: dict[str, Any]) -> None:
    spec["arms"] = [arm for arm in spec["arms"] if arm["name"] != "base"]
    revision["arms"] = [arm for arm in revision["arms"] if arm["name"] != "base"]
    spec["decision_rule"]["criteria"] = spec["decision_rule"]["criteria"][:1]


# The exchange's next specs (issue 46, deliverable 9): variants written as the exchange would, across the three
# families, beside the ones above: other seed keys, unicode and unusual names, per-arm settings, decision
# parameters, budgets, the researcher's own data in other shapes, missing optional keys, unknown keys, wrong types.
NAME_REFUSAL = "an arm's name names its run's files"
EXCHANGE_NEXT: list[Variant] = [
    # names
    Variant("arm-name-unicode", "gs1", _rename_arm("gs1_kernel", "gs1_κernel_試"), NAME_REFUSAL,
            "planned before; the rehearsal stopped at the restoration preflight (StoreError: bad file name, exit 3)"),
    Variant("arm-name-path", "gs1", _rename_arm("grpo_gs8", "../grpo_gs8"), NAME_REFUSAL, "planned before"),
    Variant("arm-names-duplicate", "gs1", _rename_arm("gs1_kernel", "grpo_gs8"), "duplicate arm name 'grpo_gs8'"),
    Variant("title-unicode", "gs1", lambda s, r: s.update(title="GS1 κ-baseline vs GRPO — 試験 ✓"), None),
    Variant("arm-name-unicode", "trimuon", _rename_sft_arm("trimuon", "trimüon_三"), NAME_REFUSAL, "planned before"),
    # per-arm settings
    Variant("per-arm-lr", "gs1", _per_arm_lr("grpo_gs8", 2e-05), None),
    Variant("per-arm-lr-grids-differ", "trimuon", lambda s, r: [r["arms"][1].update(lr_grid=[1e-4, 3e-4])], None),
    Variant("arm-unknown-key", "gs1", lambda s, r: _arm(s, "gs1_kernel").update(lr_schedule="cosine", warmup_steps=5),
            "arm gs1_kernel states 'lr_schedule', which no run applies", "planned before: silently trained at a constant lr"),
    # seeds under the other key / in other types
    Variant("verdict-seeds-on-rl", "gs1", lambda s, r: r.update(verdict_rule={"seeds": [0, 1]}), "decision_rule.seeds schedules [0]; state the seeds once"),
    Variant("seeds-as-strings", "gs1", seeds(["0", "1"]), "decision_rule.seeds[0]: must be an integer (got '0')",
            "planned before as seeds [0, 1] (pydantic turned the strings into integers)"),
    Variant("seeds-as-bools", "gs1", seeds([False, True]), "decision_rule.seeds[0]: must be an integer (got False)", "planned before as [0, 1]"),
    Variant("verdict-seeds-0-1", "selfgen", lambda s, r: r.update(verdict_rule={"seeds": [0, 1]}), "state the seeds once"),
    # decision parameters
    Variant("alpha-above-one", "gs1", _decision(alpha=1.5), "decision_rule.alpha: must be between 0 and 1 (got 1.5)"),
    Variant("alpha-zero", "gs1", _decision(alpha=0), "decision_rule.alpha: must be between 0 and 1 (got 0.0)"),
    Variant("alpha-as-string", "gs1", _decision(alpha="0.05"), "decision_rule.alpha: must be a number (got '0.05')", "planned before as 0.05"),
    Variant("adjustment-holm", "selfgen", _decision(adjustment="holm"), "decision_rule.adjustment: 'holm', but this rule's 2 criteria are adjusted 'bonferroni'",
            "planned before: the decision applied Bonferroni without a word"),
    Variant("criteria-duplicate-ids", "selfgen", lambda s, r: [c.update(id="primary") for c in s["decision_rule"]
                                                               ["criteria"]], "'primary' names two criteria", "planned before"),
    Variant("weights-all-zero", "gs1", weights({"treatment": 0, "baseline": 0}), "every weight is 0"),
    Variant("margin-at-range-edge", "gs1", _criterion(margin=-1), "-1 lies outside the effect's range (-1, 1)"),
    Variant("criteria-empty", "gs1", _decision(criteria=[]), "decision_rule.criteria: must list at least one criterion"),
    Variant("three-criteria-bonferroni", "selfgen", _selfgen_third_criterion, None),
    Variant("no-untrained-base", "selfgen", _selfgen_without_base, None),
    Variant("verdict-comparison-unknown", "trimuon", lambda s, r: r["verdict_rule"]["criteria"][0].update(
        comparison="greater"), "'greater': a best-LR criterion's effect meets its margin at_least or exceeds it",
            "planned before: read as exceeds"),
    Variant("verdict-metric-unknown", "trimuon", lambda s, r: r["verdict_rule"]["criteria"][0].update(metric="rouge_l"),
            "'rouge_l': every training run records heldout_nll_token_mean and median_optim_step_seconds",
            "planned before: the decision read a metric no run records (KeyError after every training run)"),
    Variant("verdict-margin-string", "trimuon", lambda s, r: r["verdict_rule"]["criteria"][0].update(margin="0.01"),
            "verdict_rule.criteria[0].margin: must be a number (got '0.01')", "planned before: decision failed after training"),
    # features in combinations
    Variant("features-missing", "gs1", lambda s, r: s.pop("experiment_features"), "but no arm trains on generated "
            "tasks", "planned before (generation audit predicted unknown, the rest verified); the rehearsal stopped at "
            "the generation audit after the probe (the spec states no generation design), every category unknown"),
    Variant("features-missing", "selfgen", lambda s, r: s.pop("experiment_features"),
            "training_type rl checks one custom path"),
    Variant("features-missing", "trimuon", lambda s, r: r.pop("experiment_features"), "but no arm trains on "
            "generated tasks", "planned before; the rehearsal stopped at the generation audit after the probe"),
    Variant("paired-false-with-decision-rule", "gs1", set_feature("paired_comparison", False), None,
            "planned: the decision_rule the spec states decides"),
    Variant("decision-rule-missing", "gs1", _drop("decision_rule"), "decision_rule: required because experiment_features.paired_comparison is true"),
    Variant("heldout-and-custom-loss", "trimuon", both(set_feature("custom_loss", True),
                                                       set_feature("heldout_loss", False)), "custom_loss: true is supported for training_type rl only"),
    # budgets
    Variant("budget-missing", "gs1", _drop("budget"), "budget: required field is missing"),
    Variant("budget-huge", "gs1", lambda s, r: s["budget"].update(gpu_hours=1e6, max_wall_minutes=1e7), None),
    Variant("budget-gpu-hours-tiny", "gs1", lambda s, r: s["budget"].update(gpu_hours=0.0001), None,
            "planned: the embedded backend reports no GPU count, so GPU-hours stay unknown and the rehearsal budget replaces it"),
    Variant("budget-missing", "trimuon", _drop("budget"), "budget: required field is missing"),
    # missing optional keys
    Variant("max-seq-len-missing", "gs1", _drop("max_seq_len"), None),
    Variant("lora-rank-missing", "gs1", _drop("lora_rank"), "lora_rank: is missing: training_type rl reads it with no default",
            "planned before: the probe stopped at int(None), after the claim"),
    Variant("lora-rank-missing", "trimuon", _drop("lora_rank"), "lora_rank: is missing"),
    Variant("max-seq-len-missing", "trimuon", _drop("max_seq_len"), "max_seq_len: is missing: training_type sft reads it"),
    Variant("batch-size-missing", "trimuon", _drop("batch_size"), "batch_size: is missing: training_type sft reads it",
            "planned before: KeyError 'batch_size' at the run's first SFT settings"),
    Variant("eval-aggregation-missing", "gs1", lambda s, r: s["eval"].pop("aggregation"), None),
    # wrong types
    Variant("steps-float", "gs1", lambda s, r: s.update(steps=2.5), "steps: must be a positive integer (got 2.5)"),
    Variant("steps-whole-float", "gs1", lambda s, r: s.update(steps=2.0), "steps: must be a positive integer (got 2.0)"),
    Variant("eval-n-as-string", "selfgen", _set("eval", n_examples="100"), "eval.n_examples: must be a positive integer (got '100')"),
    Variant("arms-not-a-list", "gs1", lambda s, r: s.update(arms={"grpo_gs8": {}}), "arms: Input should be a valid list"),
    Variant("weights-as-list", "gs1", weights([1, -1]), "weights: Input should be a valid dictionary"),
    # the researcher's own data in other shapes
    Variant("eval-own-file-int-ids-extra-fields", "gs1", lambda s, r: s["eval"].update(
        path="{dir}/test.jsonl", n_examples=40), None, data=(("test.jsonl", TASKS_INT_IDS),)),
    Variant("eval-own-file-fewer-than-n-eval", "gs1", lambda s, r: s["eval"].update(
        path="{dir}/test.jsonl", n_examples=400), "eval.n_examples: is 400 but the held-out set has 40 items", data=(("test.jsonl", TASKS_INT_IDS),)),
    Variant("dataset-own-file-mixed-id-types", "gs1", _data_file("dataset", "train.jsonl"), "duplicate id '1'",
            data=(("train.jsonl", TASKS_MIXED_ID_TYPES),)),
    Variant("dataset-own-chat-int-ids-system", "trimuon", lambda s, r: [
        s.update(dataset={"name": "own chats", "path": "{dir}/chats.jsonl", "n_examples": 64}),
        s["eval"].update(path="{dir}/chats_eval.jsonl", n_examples=16, benchmark="own chats held out")], None,
            data=(("chats.jsonl", CHATS_INT_IDS), ("chats_eval.jsonl", CHATS_INT_IDS.replace(b'"id": ', b'"id": 1000')))),
    Variant("eval-own-chat-fewer-than-n-eval", "trimuon", lambda s, r: s["eval"].update(
        path="{dir}/chats_eval.jsonl"), "eval.n_examples: is 500 but eval.path has 64 rows",
            "planned before (the RL family refused it): the rehearsal scales n_examples down; production reads 500 of 64", data=(("chats_eval.jsonl", CHATS_INT_IDS),)),
    Variant("eval-own-file", "selfgen", lambda s, r: s["eval"].update(path="{dir}/test.jsonl", n_examples=40), None,
            data=(("test.jsonl", TASKS_INT_IDS),)),
    # rollout, generation and optimizer settings in other types and values
    Variant("rollout-max-tokens-string", "gs1", lambda s, r: r.update(rollout={"max_tokens": "8", "temperature": 1.0}),
            None, "planned: read as 8 by the one reader of rollout settings (experiment.contract.rollout)"),
    Variant("keep-band-inverted", "selfgen", lambda s, r: r["generation"].update(keep_band=[6, 1]), "generation.keep_band: [6, 1]: the filter keeps a task whose correct count",
            "planned before: the filter keeps none, generation runs to max_candidates after the preflights"),
    Variant("n-accept-string", "selfgen", lambda s, r: r["generation"].update(n_accept="640"), "generation.n_accept: must be a positive integer (got '640')",
            "planned before, past the prompts-per-step check (which read only integers)"),
    Variant("audit-sample-zero", "selfgen", lambda s, r: s["generation_audit"].update(min_sample_size=0), "generation_audit.min_sample_size: must be a positive integer (got 0)",
            "planned before: the audit read 0 as 100"),
    Variant("group-lr-string", "gs1", lambda s, r: [m["optimizer_config"].update(lr="4e-05") for g in s[
        "restoration_preflight"]["groups"] for m in g["arms"]], "optimizer_config.lr: must be a number (got '4e-05')", "planned before"),
    Variant("activation-min-string", "gs1", lambda s, r: s["activation_gate"]["checks"][2].update(min="0.1"), "activation_gate.checks[2].min: must be a number (got '0.1')"),
    Variant("eval-zero-items", "gs1", _set("eval", n_examples=0), "eval.n_examples: must be a positive integer (got 0)"),
    Variant("dataset-n-string", "gs1", _set("dataset", n_examples="2560"), "dataset.n_examples: must be a positive integer (got '2560')",
            "planned before, past the training-set size check (which read only integers)"),
    Variant("verdict-seeds-strings", "trimuon", _verdict_seeds(["0", "1"]), "verdict_rule.seeds: must be a non-empty list of distinct non-negative integers"),
    Variant("optimizer-family-unknown", "trimuon", lambda s, r: r["arms"][1]["optimizer"].update(family="lion"), "training_type sft checks one optimizer path"),
    Variant("optimizer-config-unknown-key", "trimuon", lambda s, r: [arm["optimizer"]["config"].update(beta3=0.5)
                                                                     for arm in r["arms"]],
            "'beta3' is none of them", "planned before; the rehearsal stopped at the preflight probe (create_model "
            "refused: trimuon config does not take ['beta3'])"),
    Variant("optimizer-config-polar-switch", "trimuon", lambda s, r: r["arms"][0]["optimizer"]["config"].update(
        polar_step="polar_switch"), None, "planned: TriMuon's own polar step, stated"),
    Variant("lr-grid-strings", "trimuon", _trimuon_grid(["5e-05", "1e-4"]), "arms[0].lr_grid[0]: must be a positive number (got '5e-05')"),
    Variant("verdict-select-unknown", "trimuon", lambda s, r: r["verdict_rule"].update(select="last LR"), None,
            "planned: select is the rule's prose; best_lr_threshold selects the lowest held-out NLL, recorded as such"),
    # keys in a place the spec language does not read them
    Variant("seeds-top-level", "gs1", lambda s, r: s.update(seeds=[0, 1]), "seeds: is not read at the top of a spec",
            "planned before: trained seed 0 alone"),
    Variant("seeds-top-level", "trimuon", lambda s, r: s.update(seeds=[0, 1]), "the revision's verdict_rule.seeds"),
    Variant("lr-grid-top-level", "trimuon", lambda s, r: s.update(lr_grid=[5e-05, 1e-4]), "lr_grid: is not read at the top of a spec"),
    Variant("seed-in-eval", "gs1", _set("eval", seed=3), None, "planned: greedy decoding draws nothing at random; eval keys are descriptive"),
]
CORPUS += EXCHANGE_NEXT

# Accepted variants rehearsed end to end (tests/e2e/test_spec_corpus_rehearsals.py): two seeds, three arms,
# weights by arm name, two criteria in one run; adaptive selection between two treatment candidates, with every arm
# saved and restored mid-run (experiment_features.checkpoint_restore: the rehearsal of its own before, GS1 with the
# feature alone, is one GS1 run fewer; CI time is limited: each a wiring rehearsal of about two minutes).
# SFT: three optimizers with their own LR grids at two seeds in one run (two rehearsals before, one per feature: the
# same checks, one start-up and one set of preflights fewer); a paired decision on per-conversation held-out NLL at
# two seeds (an arm of one LR at each seed: its runs `trimuon`, `trimuon-seed1`).
REHEARSED = ("three-arms-two-seeds", "adaptive-two-treatments-checkpoint-restore", ("three-optimizers-grids-two-seeds", "trimuon"),
             ("paired-decision-two-seeds", "trimuon"))
# The exchange's next specs (EXCHANGE_NEXT): three self-generated criteria under Bonferroni (alpha / 3). (GS1 arms at
# their own learning rates, per-arm-lr, was rehearsed and graded as planned once by hand; CI time keeps it plan-only.)
REHEARSED += (("three-criteria-bonferroni", "selfgen"),)


def accepted() -> list[Variant]:
    """Every variant intake plans (refused None): what `RX_REHEARSE_CORPUS=all` rehearses."""
    return [each for each in CORPUS if each.refused is None]


def variant(name: str | tuple[str, str], seed: str = "gs1") -> Variant:
    """A variant by name (and seed family, default gs1), or by a (name, seed family) pair as REHEARSED lists it."""
    name, seed = name if isinstance(name, tuple) else (name, seed)
    return next(v for v in CORPUS if v.name == name and v.seed == seed)
