"""A cookbook group's rollouts go out as one sample request of group_size samples (experiment.rl.loop
SeededTokenCompleter), against the real embedded server through the stock SDK: the same tokens and
logprobs as one request per rollout, in group_size times fewer requests."""

from __future__ import annotations

import warnings

import httpx
import pytest
import tinker

from embedded_tinker.launch import LOCAL_API_KEY
from experiment.rl.loop import RLArmSettings, collect_rollouts
from experiment.rl.recipe import renderer_for, run_async, training_items
from experiment.contract.spec import load_spec
from suite import REPO_ROOT

ARM = RLArmSettings("grpo_gs8", "group_mean", group_size=4, groups_per_batch=3, learning_rate=1e-3, max_tokens=12)


@pytest.fixture(scope="module")
def sampler(embedded_server):
    service = tinker.ServiceClient(base_url=embedded_server.base_url, api_key=LOCAL_API_KEY)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        training = service.create_lora_training_client(base_model="embedded/tiny-arith", rank=4, seed=0).result()
    sampling = training.save_weights_and_get_sampling_client()
    yield (sampling.result() if hasattr(sampling, "result") else sampling), training
    service.close("success").result()


def sample_requests(embedded_server) -> int:
    return httpx.get(f"{embedded_server.base_url}/api/v1/healthz", timeout=10).json()["sampler"]["requests"]


def rollouts(sampler, training, problems, group_size_per_request: int, monkeypatch):
    """collect_rollouts with its completers sending group_size_per_request calls per request at most."""
    from experiment.rl import loop

    original = loop.SeededTokenCompleter.__init__

    def limited(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.group_size = min(self.group_size, group_size_per_request)

    with monkeypatch.context() as patch:
        patch.setattr(loop.SeededTokenCompleter, "__init__", limited)
        groups = run_async(collect_rollouts(sampler, renderer_for(training, ARM.renderer_name), problems, ARM, base_seed=91))
    return [[(t.transitions[0].ac.tokens, t.transitions[0].ac.maybe_logprobs) for t in g.trajectories_G] for g in groups]


def test_a_group_is_one_request_with_the_same_rollouts(sampler, embedded_server, monkeypatch):
    sampling_client, training = sampler
    problems = training_items(load_spec(REPO_ROOT / "specs" / "gs1_kernel_vs_grpo_gsm8k.json", rehearse=True))[:3]
    before = sample_requests(embedded_server)
    one_per_rollout = rollouts(sampling_client, training, problems, group_size_per_request=1, monkeypatch=monkeypatch)
    between = sample_requests(embedded_server)
    grouped = rollouts(sampling_client, training, problems, group_size_per_request=ARM.group_size, monkeypatch=monkeypatch)
    after = sample_requests(embedded_server)
    assert between - before == len(problems) * ARM.group_size  # the control: one request per rollout
    assert after - between == len(problems)  # one request per group
    assert [[tokens for tokens, _ in g] for g in grouped] == [[tokens for tokens, _ in g] for g in one_per_rollout]
    for group, reference in zip(grouped, one_per_rollout):
        for (_, logprobs), (_, expected) in zip(group, reference):
            assert logprobs == pytest.approx(expected, abs=1e-5)
    assert len({tuple(tokens) for g in grouped for tokens, _ in g}) > len(problems)  # distinct samples per group
