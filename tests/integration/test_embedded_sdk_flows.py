"""The stock tinker SDK against the embedded server over HTTP: every flow of sdk-call-trace.txt.

One embedded server for the session (tests/conftest.py), model embedded/tiny-random (no trained weights needed).
"""

from __future__ import annotations

import os
import re
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TINKER_TELEMETRY", "0")

import numpy as np
import pytest
import tinker
from tinker import types
from tinker.types.optimizer import OptimizerConfigBase, OptimParamsBase

from embedded_tinker.launch import LOCAL_API_KEY

MODEL = "embedded/tiny-random"


@pytest.fixture(scope="module")
def tokenizer(service_client):
    training = service_client.create_lora_training_client(base_model=MODEL, rank=2).result()
    return training.get_tokenizer()


def make_datum(tokens: list[int]) -> types.Datum:
    return types.Datum(
        model_input=types.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={"target_tokens": tokens[1:], "weights": [1.0] * (len(tokens) - 1)},
    )


@pytest.fixture
def tokens(tokenizer) -> list[int]:
    return tokenizer.encode("Tom has 12 apples and buys 30 more. \\boxed{42}<|im_end|>")


def forward_logprobs(training, datum) -> np.ndarray:
    output = training.forward([datum], "cross_entropy").result()
    return output.loss_fn_outputs[0]["logprobs"].to_numpy()


def test_capabilities_list_the_registry(embedded_server):
    rest = tinker.RestClient(base_url=embedded_server.base_url, api_key=LOCAL_API_KEY)
    names = {m.model_name for m in rest.get_server_capabilities().result().supported_models}
    assert names == {"embedded/tiny-arith", "embedded/tiny-random"}


def test_unknown_base_model_is_a_400_naming_the_served_models(service_client):
    with pytest.raises(tinker.BadRequestError, match="embedded/tiny-arith"):
        service_client.create_lora_training_client(base_model="Qwen/Qwen3-4B", rank=2).result()


def test_get_info_reports_model_tokenizer_and_provenance(service_client):
    training = service_client.create_lora_training_client(base_model=MODEL, rank=4, seed=3).result()
    info = training.get_info()
    assert re.fullmatch(r"sess-[0-9a-f]+:train:\d+", info.model_id)
    assert info.model_data.model_name == MODEL and info.lora_rank == 4 and info.is_lora
    assert os.path.isdir(info.model_data.tokenizer_id)
    assert info.optimizer_config.type == "adamw"
    assert re.fullmatch(r"[0-9a-f]{64}", info.optimizer_config.adapter_sha256)
    assert info.optimizer_config.optimizer_step == 0
    assert training.get_tokenizer().decode(training.get_tokenizer().encode("12+30")) == "12+30"


def test_supervised_steps_reduce_the_loss(service_client, tokens):
    training = service_client.create_lora_training_client(base_model=MODEL, rank=4).result()
    datum = make_datum(tokens)
    forward = training.forward([datum], "cross_entropy").result()
    assert set(forward.loss_fn_outputs[0]) == {"logprobs", "elementwise_loss"}
    losses = []
    for _ in range(4):
        backward = training.forward_backward([datum], "cross_entropy")
        step = training.optim_step(types.AdamParams(learning_rate=3e-3))
        losses.append(backward.result().metrics["loss:sum"])
        metrics = step.result().metrics
        assert all(key.count(":") == 1 for key in metrics) and metrics["grad_norm:mean"] > 0
    assert losses[0] == pytest.approx(forward.metrics["loss:sum"], rel=1e-6)
    assert losses[-1] < losses[0]


def test_rl_flow_sample_then_policy_gradient_losses(service_client, tokens):
    training = service_client.create_lora_training_client(base_model=MODEL, rank=4).result()
    sampler = training.save_weights_and_get_sampling_client().result()
    prompt = types.ModelInput.from_ints(tokens[:8])
    result = sampler.sample(prompt, 3, types.SamplingParams(max_tokens=6, seed=11)).result()
    assert len(result.sequences) == 3
    assert len({s.sequence_id for s in result.sequences}) == 3
    sequence = result.sequences[0]
    full = tokens[:8] + sequence.tokens
    advantages = [0.0] * 7 + [1.0] * len(sequence.tokens)
    sampling_logprobs = [0.0] * 7 + sequence.logprobs
    datum = types.Datum(
        model_input=types.ModelInput.from_ints(full[:-1]),
        loss_fn_inputs={"target_tokens": full[1:], "logprobs": sampling_logprobs, "advantages": advantages},
    )
    is_output = training.forward_backward([datum], "importance_sampling").result()
    # On policy the ratio is 1, so the loss is -(sum of advantages).
    assert is_output.metrics["loss:sum"] == pytest.approx(-len(sequence.tokens), rel=1e-4)
    trained_logprobs = is_output.loss_fn_outputs[0]["logprobs"].to_numpy()[7:]
    np.testing.assert_allclose(trained_logprobs, sequence.logprobs, rtol=1e-4, atol=1e-5)
    ppo_output = training.forward_backward(
        [datum], "ppo", loss_fn_config={"clip_low_threshold": 0.9, "clip_high_threshold": 1.1}
    ).result()
    assert ppo_output.metrics["loss:sum"] == pytest.approx(-len(sequence.tokens), rel=1e-4)
    training.optim_step(types.AdamParams(learning_rate=1e-3)).result()
    prompt_logprobs = sampler.compute_logprobs(types.ModelInput.from_ints(full)).result()
    assert prompt_logprobs[0] is None and len(prompt_logprobs) == len(full)
    np.testing.assert_allclose(
        prompt_logprobs[1:], is_output.loss_fn_outputs[0]["logprobs"].to_numpy(), rtol=1e-4, atol=1e-5
    )


def test_save_load_round_trip_gives_bit_identical_logprobs(embedded_server, service_client, tokens):
    training = service_client.create_lora_training_client(base_model=MODEL, rank=4).result()
    datum = make_datum(tokens)
    training.forward_backward([datum], "cross_entropy")
    training.optim_step(types.AdamParams(learning_rate=1e-2)).result()
    saved_logprobs = forward_logprobs(training, datum)
    path = training.save_state("round-trip").result().path
    assert path == f"tinker://{training.get_info().model_id}/weights/round-trip"

    training.forward_backward([datum], "cross_entropy")
    training.optim_step(types.AdamParams(learning_rate=1e-2)).result()
    assert not np.array_equal(forward_logprobs(training, datum), saved_logprobs)
    with pytest.warns(FutureWarning, match="load_state"):  # the legacy flow of the call trace
        training.load_state(path).result()
    assert np.array_equal(forward_logprobs(training, datum), saved_logprobs)

    weights_only = service_client.create_training_client_from_state(path).result()
    with_optimizer = service_client.create_training_client_from_state_with_optimizer(path).result()
    for restored in (weights_only, with_optimizer):
        assert np.array_equal(forward_logprobs(restored, datum), saved_logprobs)
    rest = tinker.RestClient(base_url=embedded_server.base_url, api_key=LOCAL_API_KEY)
    info = rest.get_weights_info_by_tinker_path(path).result()
    assert info.base_model == MODEL and info.lora_rank == 4
    assert info.optimizer_config.type == "adamw" and info.optimizer_config.optimizer_step == 1
    assert with_optimizer.get_info().optimizer_config.optimizer_step == 1
    assert weights_only.get_info().optimizer_config.optimizer_step == 0
    assert with_optimizer.get_info().optimizer_config.adapter_sha256 == info.optimizer_config.adapter_sha256
    assert weights_only.get_info().optimizer_config.adapter_sha256 == info.optimizer_config.adapter_sha256


def test_checkpoints_are_immutable(service_client, tokens):
    training = service_client.create_lora_training_client(base_model=MODEL, rank=2).result()
    first = training.save_state("fixed").result().path
    assert training.save_state("fixed").result().path == first  # same bytes: a retry, accepted
    training.forward_backward([make_datum(tokens)], "cross_entropy")
    training.optim_step(types.AdamParams(learning_rate=1e-2)).result()
    with pytest.raises(tinker.RequestFailedError, match="immutable"):
        training.save_state("fixed").result()


def test_sampler_from_a_path_serves_exactly_those_weights(service_client, tokens):
    training = service_client.create_lora_training_client(base_model=MODEL, rank=4).result()
    datum = make_datum(tokens)
    training.forward_backward([datum], "cross_entropy")
    training.optim_step(types.AdamParams(learning_rate=1e-2)).result()
    at_save = forward_logprobs(training, datum)
    path = training.save_weights_for_sampler("sampler-1").result().path
    assert path.endswith("/sampler_weights/sampler-1")
    training.forward_backward([datum], "cross_entropy")
    training.optim_step(types.AdamParams(learning_rate=1e-2)).result()

    sampler = training.create_sampling_client(path).result()
    served = sampler.compute_logprobs(types.ModelInput.from_ints(tokens)).result()
    np.testing.assert_allclose(served[1:], at_save, rtol=1e-5, atol=1e-6)
    assert not np.allclose(forward_logprobs(training, datum), at_save, atol=1e-4)
    base_sampler = service_client.create_sampling_client(base_model=MODEL).result()
    assert base_sampler.get_base_model() == MODEL


def test_greedy_is_deterministic_and_seeds_repeat(service_client, tokens):
    sampler = service_client.create_sampling_client(base_model=MODEL).result()
    prompt = types.ModelInput.from_ints(tokens[:6])

    def run(**params):
        result = sampler.sample(prompt, 2, types.SamplingParams(max_tokens=8, stop=[], **params)).result()
        return [s.tokens for s in result.sequences]

    greedy = run(temperature=0.0)
    assert greedy[0] == greedy[1] == run(temperature=0.0)[0]
    assert run(seed=5) == run(seed=5)
    assert run(seed=5) != run(seed=6)
    assert run(seed=5, top_k=1) == greedy  # top_k = 1 is greedy
    assert all(len(t) == 8 for t in greedy)


def test_healthz_reports_the_sampling_engine(embedded_server, service_client, tokens):
    import httpx

    def report() -> dict:
        return httpx.get(f"{embedded_server.base_url}/api/v1/healthz").json()["sampler"]

    before = report()
    sampler = service_client.create_sampling_client(base_model=MODEL).result()
    prompt = types.ModelInput.from_ints(tokens[:6])
    futures = [
        sampler.sample(prompt, 1, types.SamplingParams(max_tokens=5, stop=[], seed=i)) for i in range(3)
    ]
    assert all(len(f.result().sequences[0].tokens) == 5 for f in futures)
    # a step's counters are added just after its requests are answered: wait for the last one
    for _ in range(200):
        after = report()
        if after["row_steps"] - before["row_steps"] >= 15:
            break
        time.sleep(0.05)
    assert after["requests"] - before["requests"] == 3
    assert after["row_steps"] - before["row_steps"] == 15
    assert after["steps"] - before["steps"] >= 5


def test_stop_tokens_strings_and_max_tokens(service_client, tokenizer, tokens):
    sampler = service_client.create_sampling_client(base_model=MODEL).result()
    prompt = types.ModelInput.from_ints(tokens[:6])
    greedy = sampler.sample(prompt, 1, types.SamplingParams(max_tokens=8, temperature=0, stop=[])).result()
    free_run = greedy.sequences[0].tokens
    assert greedy.sequences[0].stop_reason == "length"
    stop_token = free_run[3]
    by_token = sampler.sample(
        prompt, 1, types.SamplingParams(max_tokens=8, temperature=0, stop=[stop_token])
    ).result()
    first = free_run.index(stop_token)
    assert by_token.sequences[0].tokens == free_run[: first + 1]
    assert by_token.sequences[0].stop_reason == "stop"
    stop_text = tokenizer.decode(free_run[first : first + 1])
    by_string = sampler.sample(
        prompt, 1, types.SamplingParams(max_tokens=8, temperature=0, stop=[stop_text])
    ).result()
    assert stop_text in tokenizer.decode(by_string.sequences[0].tokens)
    assert by_string.sequences[0].stop_reason == "stop"


def test_other_optimizer_family_and_family_mismatch(service_client, tokens):
    training = service_client.create_lora_training_client(
        base_model=MODEL, rank=2, optimizer=OptimizerConfigBase(type="sgd")
    ).result()
    assert training.get_info().optimizer_config.type == "sgd"
    datum = make_datum(tokens)
    training.forward_backward([datum], "cross_entropy")
    metrics = training.optim_step(OptimParamsBase(type="sgd", learning_rate=0.1)).result().metrics
    assert metrics["optimizer_step:max"] == 1
    training.forward_backward([datum], "cross_entropy")
    with pytest.raises(tinker.RequestFailedError, match="do not match") as raised:
        training.optim_step(types.AdamParams()).result()
    assert raised.value.category == "user"


def test_unimplemented_optimizer_family_is_refused(service_client):
    with pytest.raises(tinker.BadRequestError, match="not implemented"):
        service_client.create_lora_training_client(
            base_model=MODEL, rank=2, optimizer=OptimizerConfigBase(type="no-such-family")
        ).result()


def test_forward_backward_custom_runs_through_cross_entropy(service_client, tokens):
    training = service_client.create_lora_training_client(base_model=MODEL, rank=2).result()
    datum = make_datum(tokens)

    def negative_logprob_sum(data, logprobs_list):
        loss = -sum(lp.sum() for lp in logprobs_list)
        return loss, {"custom:sum": float(loss.detach())}

    custom = training.forward_backward_custom([datum], negative_logprob_sum).result()
    plain = training.forward([datum], "cross_entropy").result()
    assert custom.metrics["loss:sum"] == pytest.approx(plain.metrics["loss:sum"], rel=1e-5)


def test_bad_requests_are_user_errors(service_client):
    training = service_client.create_lora_training_client(base_model=MODEL, rank=2).result()
    bad = types.Datum(
        model_input=types.ModelInput.from_ints([1, 2, 3]),
        loss_fn_inputs={"target_tokens": [2, 3, 10**6], "weights": [1.0, 1.0, 1.0]},
    )
    with pytest.raises(tinker.BadRequestError, match="target_tokens outside"):
        training.forward([bad], "cross_entropy").result()


def test_a_local_checkpoint_directory_loads_through_the_same_path(service_client, tokens, tmp_path):
    from transformers import AutoTokenizer

    from embedded_tinker.model import REGISTRY, load_hf_model

    spec = REGISTRY[MODEL]
    load_hf_model(spec).save_pretrained(tmp_path)  # the tiny-random weights, as an HF checkpoint
    AutoTokenizer.from_pretrained(spec.tokenizer_dir).save_pretrained(tmp_path)
    from_directory = service_client.create_lora_training_client(base_model=str(tmp_path), rank=2).result()
    from_registry = service_client.create_lora_training_client(base_model=MODEL, rank=2).result()
    assert from_directory.get_info().model_data.tokenizer_id == str(tmp_path.resolve())
    datum = make_datum(tokens)
    assert np.array_equal(forward_logprobs(from_directory, datum), forward_logprobs(from_registry, datum))


def test_get_info_fetched_again_reports_the_current_adapter(embedded_server, service_client, tokens):
    from tinker.lib.public_interfaces.training_client import fetch_training_info

    training = service_client.create_lora_training_client(base_model=MODEL, rank=2).result()
    at_creation = training.get_info().optimizer_config.adapter_sha256
    training.forward_backward([make_datum(tokens)], "cross_entropy")
    training.optim_step(types.AdamParams(learning_rate=1e-2)).result()
    current = training.holder.run_coroutine_threadsafe(
        fetch_training_info(training.holder, training.model_id)
    ).result()
    assert current.optimizer_config.adapter_sha256 != at_creation
    assert current.optimizer_config.optimizer_step == 1
    assert current.optimizer_config.last_optim_params["learning_rate"] == 1e-2
    saved = training.save_weights_for_sampler("current").result().path
    rest = tinker.RestClient(base_url=embedded_server.base_url, api_key=LOCAL_API_KEY)
    assert rest.get_weights_info_by_tinker_path(saved).result().optimizer_config.adapter_sha256 == (
        current.optimizer_config.adapter_sha256
    )


def test_adapter_sha256_follows_the_documented_byte_order(embedded_server, service_client, tokens):
    import hashlib

    from safetensors.torch import load_file

    from embedded_tinker.model import REGISTRY, load_hf_model

    training = service_client.create_lora_training_client(base_model=MODEL, rank=2, train_mlp=False).result()
    training.forward_backward([make_datum(tokens)], "cross_entropy")
    training.optim_step(types.AdamParams(learning_rate=1e-2)).result()
    path = training.save_state("sha").result().path
    model_id = training.get_info().model_id
    tensors = load_file(str(embedded_server.checkpoint_dir / model_id / "weights" / "sha" / "adapter.safetensors"))
    module_order = [name for name, _ in load_hf_model(REGISTRY[MODEL]).named_modules()]
    digest = hashlib.sha256()
    for module in module_order:
        for part in ("lora_A", "lora_B"):
            if f"{module}.{part}" in tensors:
                digest.update(tensors[f"{module}.{part}"].numpy().astype("<f4").tobytes())
    assert not any(".mlp." in name for name in tensors)
    rest = tinker.RestClient(base_url=embedded_server.base_url, api_key=LOCAL_API_KEY)
    assert (
        rest.get_weights_info_by_tinker_path(path).result().optimizer_config.adapter_sha256
        == digest.hexdigest()
    )
