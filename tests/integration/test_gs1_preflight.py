"""The GS1 correctness preflight against the real embedded server through the stock SDK.

It must pass on the implementation as written, and fail when the implementation is
deliberately perturbed (the kernel window no longer excludes rollout i itself).
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import replace

import pytest
import tinker

from experiment.rl import advantages, gs1_preflight, loop as rl_loop
from experiment.rl.loop import RLArmSettings
from experiment.rl.recipe import renderer_for, run_async, training_items
from experiment.contract.spec import load_spec

from suite import REPO_ROOT

GS1_SEED = REPO_ROOT / "specs" / "gs1_kernel_vs_grpo_gsm8k.json"

# small batches keep this test in seconds; the rules are the full run's
GRPO = RLArmSettings("grpo_gs8", "group_mean", group_size=4, groups_per_batch=2, learning_rate=1e-3, max_tokens=12)
GS1 = RLArmSettings("gs1_kernel", "kernel_cross_prompt_baseline", group_size=1, groups_per_batch=16,
                    learning_rate=1e-3, max_tokens=12)


@pytest.fixture(scope="module")
def training_client(embedded_server):

    server = embedded_server  # one backend for the session (tests/conftest.py)
    service = tinker.ServiceClient(base_url=server.base_url, api_key="tml-local")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        client = service.create_lora_training_client(base_model="embedded/tiny-arith", rank=4, seed=0).result()
    yield client
    service.close("success").result()


def run_preflight(client):
    spec = load_spec(GS1_SEED, rehearse=True)
    path = spec.to_dict()["correctness_preflight"]["paths"][0]
    renderer = renderer_for(client, GS1.renderer_name)
    return run_async(gs1_preflight.run_gs1_loss_path_preflight(
        client, renderer, training_items(spec), GRPO, GS1, path))


def test_preflight_passes_and_records_every_tolerance_key(training_client):
    outcome = run_preflight(training_client)
    assert outcome.passed, outcome.reasons
    record = outcome.record
    tolerances = load_spec(GS1_SEED, rehearse=True).to_dict()["correctness_preflight"]["paths"][0]["tolerances"]
    assert set(record["errors"]) == set(tolerances)
    assert len(record["fixed_input"]["sha256"]) == 64
    for key in ("baseline_revision", "reference_revision", "implementation_revision"):
        assert "sha256:" in record[key]
    # the kernel really engaged on the fixed input: non-zero GS1 advantages exist
    assert any(abs(a) > 1e-6 for group in outcome.fixed_input["advantages"]["gs1_implementation"] for a in group)


def test_preflight_fails_when_the_kernel_includes_item_i(training_client, monkeypatch):
    perturbed = functools.partial(advantages.gs1_kernel_advantages, exclude_self=False)
    monkeypatch.setattr(rl_loop, "gs1_kernel_advantages", perturbed)
    outcome = run_preflight(training_client)
    assert not outcome.passed
    failed = [reason for reason in outcome.reasons
              if reason.startswith("reference_") and ("exceeds" in reason or "below" in reason)]
    assert failed, outcome.reasons
    # treatment disabled is untouched by the perturbation: the baseline checks still pass
    assert all("<=" in reason for reason in outcome.reasons if reason.startswith("baseline_"))
    assert outcome.record["errors"]["reference_gradient"]["max_abs_error"] > 1e-5


def test_offline_activation_checks_detect_a_dead_kernel():
    assert gs1_preflight.offline_activation_checks(0.5)["forced_activation"]["passed"]
    # a bandwidth so wide that every prompt looks alike cannot activate
    assert not gs1_preflight.offline_activation_checks(1e6)["forced_activation"]["passed"]


def test_arm_settings_keep_the_full_run_regime():
    assert replace(GS1, groups_per_batch=64).rollouts_per_step == replace(GRPO, group_size=8, groups_per_batch=8).rollouts_per_step


def test_preflight_fails_when_its_offline_activation_checks_fail(training_client):
    """Forced bandwidth 1e6: both loss paths still agree (same bandwidth on each side), but the kernel
    cannot activate, so the preflight as a whole must fail (issue 17)."""
    spec = load_spec(GS1_SEED, rehearse=True)
    path = spec.to_dict()["correctness_preflight"]["paths"][0]
    renderer = renderer_for(training_client, GS1.renderer_name)
    dead = replace(GS1, kernel_bandwidth=1e6)
    outcome = run_async(gs1_preflight.run_gs1_loss_path_preflight(
        training_client, renderer, training_items(spec), GRPO, dead, path))
    assert outcome.passed is False
    assert any(reason.startswith("forced_activation: FAILED") for reason in outcome.reasons), outcome.reasons
    assert outcome.record["offline_checks"]["forced_activation"]["passed"] is False


# A kernel arm that samples several rollouts per prompt (a spec may set group_size > 1 for it): every
# rollout of a prompt shares its prompt's features, in the batch and in the window the next step reads.
# Before, the window was given one reward per rollout but one feature pair per prompt, and the first
# applied update (the preflight probe's, before any gate) stopped the run with a ValueError.
GS1_GROUPS = replace(GS1, group_size=2, groups_per_batch=8)


def test_preflight_passes_for_a_kernel_arm_with_several_rollouts_per_prompt(training_client):
    spec = load_spec(GS1_SEED, rehearse=True)
    path = spec.to_dict()["correctness_preflight"]["paths"][0]
    renderer = renderer_for(training_client, GS1.renderer_name)
    outcome = run_async(gs1_preflight.run_gs1_loss_path_preflight(
        training_client, renderer, training_items(spec), GRPO, GS1_GROUPS, path))
    assert outcome.passed, outcome.reasons
    assert [len(group) for group in outcome.fixed_input["advantages"]["gs1_reference"]] == [2] * 8
    assert "8 prompts x 2" in outcome.record["fixed_input"]["description"]


def test_kernel_window_holds_one_entry_per_rollout_with_its_prompts_features(training_client):
    spec = load_spec(GS1_SEED, rehearse=True)
    renderer = renderer_for(training_client, GS1.renderer_name)
    window = advantages.KernelBaselineState(capacity=GS1_GROUPS.kernel_window)
    records = []
    for step in range(2):
        record, window = run_async(rl_loop.train_one_step(
            training_client, renderer, GS1_GROUPS, training_items(spec), step, kernel_state=window))
        records.append(record)
    assert [r.executed_group_size for r in records] == [2.0, 2.0]
    assert list(window.rewards) == records[0].rewards + records[1].rewards
    spread = [f for r in records for f in r.prompt_features for _ in range(2)]
    assert list(window.prompt_token_lengths) == [f[0] for f in spread]
    assert list(window.prompt_mean_logprobs) == [f[1] for f in spread]
    # the second step's baselines draw on the first step's 16 rollouts
    assert len(records[1].baseline_values) == 16
