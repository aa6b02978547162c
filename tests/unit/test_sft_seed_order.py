"""SFT seeds (issue 46): a scheduled seed is the training data's order (the TriMuon spec's "same data order and
seed"); every run at one seed consumes that seed's batches, and each seed's runs form their own adaptation pair."""

from __future__ import annotations

import json

from experiment.contract.spec import load_spec
from experiment.sft.adaptation import adaptation_manifest
from experiment.sft.loop import training_examples
from experiment.sft.runs import SFTRun
from experiment.sft.steps.arm_training import PAIR, arm_manifests, seed_pair
from spec_variants import variant, write_variant


def _run(arm: str, lr: float, seed: int) -> SFTRun:
    suffix = "" if seed == 0 else f"-seed{seed}"
    return SFTRun(f"{arm}@lr={lr:g}{suffix}", arm, "adamw", {}, lr, seed, f"{lr:g}{suffix}")


def test_each_seed_draws_its_own_order_of_the_training_rows(tmp_path):
    """Like the spec's command (no_robots_batches(..., seed=0)): the seed shuffles the training split, and the
    run trains on the first dataset.n_examples rows of that seed's order."""
    spec = load_spec(write_variant(variant("verdict-seeds-0-1", "trimuon"), tmp_path), rehearse=True,
                     rehearsal_scale="wiring")
    first, second = training_examples(spec, 0), training_examples(spec, 1)
    assert [e.id for e in first] == [e.id for e in training_examples(spec)]  # the arms' seed (0) is the default
    assert [e.id for e in first] != [e.id for e in second]
    assert len(first) == len(second) == len({e.id for e in first}) == spec.to_dict()["dataset"]["n_examples"]


def test_each_seed_is_its_own_adaptation_pair_covering_that_seeds_runs():
    runs = [_run(arm, lr, seed) for seed in (0, 1) for arm in ("a", "b") for lr in (0.1, 0.2)]
    per_run = [adaptation_manifest(run.name, seed_pair(run.seed, [0, 1]), [f"step0000-{run.seed}"]) for run in runs]
    manifests = arm_manifests(runs, per_run)
    assert [(m["arm"], m["pair"], m["runs"]) for m in manifests] == [
        ("a", PAIR, ["a@lr=0.1", "a@lr=0.2"]), ("b", PAIR, ["b@lr=0.1", "b@lr=0.2"]),
        ("a", f"{PAIR}-seed1", ["a@lr=0.1-seed1", "a@lr=0.2-seed1"]),
        ("b", f"{PAIR}-seed1", ["b@lr=0.1-seed1", "b@lr=0.2-seed1"])]
    assert json.loads(json.dumps(manifests[2]["adaptation_batch_ids"])) == ["step0000-1"]
