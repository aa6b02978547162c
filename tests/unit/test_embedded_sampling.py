"""The sampler in-process: token choice rules and left-padded batching (no server needed)."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import math

import pytest
import torch

from embedded_tinker.model import load_base_model
from embedded_tinker.sampling import SampleJob, SamplerWeights, SamplingSpec, choose_token, generate

MODEL = "embedded/tiny-random"


def spec(**overrides) -> SamplingSpec:
    values = dict(
        max_tokens=8, temperature=1.0, top_k=-1, top_p=1.0, seed=0, stop_token_ids=(), stop_strings=()
    )
    return SamplingSpec(**{**values, **overrides})


def test_top_k_and_top_p_restrict_the_choice():
    logits = torch.log(torch.tensor([0.5, 0.3, 0.15, 0.05]))
    generator = torch.Generator().manual_seed(0)
    top_k = {choose_token(logits, spec(top_k=2), generator) for _ in range(300)}
    assert top_k == {0, 1}
    # top_p = 0.7: the smallest set with mass >= 0.7 is {0, 1} (0.5 + 0.3)
    top_p = {choose_token(logits, spec(top_p=0.7), generator) for _ in range(300)}
    assert top_p == {0, 1}
    everything = {choose_token(logits, spec(), generator) for _ in range(2000)}
    assert everything == {0, 1, 2, 3}
    assert choose_token(logits, spec(temperature=0.0), None) == 0


def test_temperature_sharpens_the_distribution():
    logits = torch.log(torch.tensor([0.6, 0.4]))
    generator = torch.Generator().manual_seed(1)
    cold = sum(choose_token(logits, spec(temperature=0.25), generator) == 0 for _ in range(2000)) / 2000
    expected = 0.6**4 / (0.6**4 + 0.4**4)  # softmax(log p / T) with T = 1/4
    assert cold == pytest.approx(expected, abs=0.03)


@pytest.fixture(scope="module")
def weights():
    base = load_base_model(MODEL)
    return SamplerWeights(base, None, f"{MODEL}@base")


def test_batched_rows_match_rows_decoded_alone(weights):
    prompts = [[5, 6, 7, 8, 9, 10, 11], [40, 41], [300, 17, 23, 99]]
    greedy = spec(temperature=0.0, max_tokens=6)
    together = generate(
        weights, [SampleJob(weights, p, 1, greedy, want_prompt_logprobs=True) for p in prompts]
    )
    for prompt, batched in zip(prompts, together, strict=True):
        alone = generate(weights, [SampleJob(weights, prompt, 1, greedy, want_prompt_logprobs=True)])[0]
        assert batched.sequences[0][0] == alone.sequences[0][0]
        assert batched.sequences[0][1] == pytest.approx(alone.sequences[0][1], abs=1e-4)
        assert math.isnan(batched.prompt_logprobs[0])
        assert batched.prompt_logprobs[1:] == pytest.approx(alone.prompt_logprobs[1:], abs=1e-4)


def test_prompt_logprobs_match_a_plain_forward_pass(weights):
    prompt = [3, 14, 15, 92, 65, 35]
    result = generate(
        weights, [SampleJob(weights, prompt, 1, spec(max_tokens=1), want_prompt_logprobs=True)]
    )[0]
    expected = weights.base.target_logprobs([prompt[:-1]], [prompt[1:]], None)[0]
    assert result.prompt_logprobs[1:] == pytest.approx(expected.tolist(), abs=1e-5)
    last_two = generate(
        weights,
        [
            SampleJob(
                weights, prompt, 1, spec(max_tokens=1), want_prompt_logprobs=True, prompt_logprobs_last_n=2
            )
        ],
    )[0]
    assert all(math.isnan(v) for v in last_two.prompt_logprobs[:4])
    assert last_two.prompt_logprobs[4:] == pytest.approx(expected.tolist()[-2:], abs=1e-5)


def test_num_samples_rows_use_consecutive_seeds(weights):
    sampling = spec(seed=100, max_tokens=5)
    both = generate(weights, [SampleJob(weights, [5, 6, 7], 2, sampling)])[0]
    second_alone = generate(weights, [SampleJob(weights, [5, 6, 7], 1, spec(seed=101, max_tokens=5))])[0]
    assert both.sequences[1][0] == second_alone.sequences[0][0]
