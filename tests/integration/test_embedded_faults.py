"""Fault injection and restarts, seen through the stock SDK.

The SDK retries 429/5xx on its own (per HTTP call, honouring Retry-After-Ms, then for up to ~5
minutes in ``execute_with_retries``). To keep these tests fast, persistent faults target
``create_sampling_session``, which the SDK sends with per-call retries only, and the faults carry
``Retry-After-Ms: 1``.
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TINKER_TELEMETRY", "0")

import httpx
import numpy as np
import pytest
import tinker
from tinker import types

from embedded_tinker.faults import FaultConfig
from embedded_tinker.launch import LOCAL_API_KEY, start_server

MODEL = "embedded/tiny-random"
TOKENS = [5, 17, 99, 23, 8, 41, 77, 3, 250, 12]


def datum() -> types.Datum:
    return types.Datum(
        model_input=types.ModelInput.from_ints(TOKENS[:-1]),
        loss_fn_inputs={"target_tokens": TOKENS[1:], "weights": [1.0] * (len(TOKENS) - 1)},
    )


def forward_logprobs(training) -> np.ndarray:
    return training.forward([datum()], "cross_entropy").result().loss_fn_outputs[0]["logprobs"].to_numpy()


def test_capacity_exhausted_fails_create_model_for_the_configured_time(tmp_path):
    faults = FaultConfig(capacity_exhausted_seconds=3)  # counted from the first create_model call
    with start_server(checkpoint_dir=tmp_path, faults=faults, in_process=True) as server:
        client = tinker.ServiceClient(base_url=server.base_url, api_key=LOCAL_API_KEY)
        try:
            with pytest.raises(tinker.RequestFailedError, match="trainer capacity exhausted") as raised:
                client.create_lora_training_client(base_model=MODEL, rank=2).result()
            refused_at = time.monotonic()  # after the first create_model call: the window closes by refused_at + 3
            assert raised.value.category == "server"
            time.sleep(max(0.0, 3.5 - (time.monotonic() - refused_at)))
            training = client.create_lora_training_client(base_model=MODEL, rank=2).result()
            assert training.get_info().model_data.model_name == MODEL
        finally:
            client.close("success")


@pytest.mark.parametrize(
    "faults, expected, status",
    [
        (
            FaultConfig(rate_429=1.0, endpoints=("create_sampling_session",), retry_after_ms=1),
            tinker.RateLimitError,
            "429",
        ),
        (
            FaultConfig(rate_503=1.0, endpoints=("create_sampling_session",), retry_after_ms=1),
            tinker.InternalServerError,
            "503",
        ),
    ],
)
def test_persistent_faults_surface_as_sdk_exceptions(tmp_path, faults, expected, status):
    with start_server(checkpoint_dir=tmp_path, faults=faults, in_process=True) as server:
        client = tinker.ServiceClient(base_url=server.base_url, api_key=LOCAL_API_KEY)
        try:
            with pytest.raises(expected):
                client.create_sampling_client(base_model=MODEL).result()
            injected = httpx.get(f"{server.base_url}/api/v1/healthz").json()["faults_injected"]
            assert injected[status] > 1  # the SDK retried before giving up
        finally:
            client.close("success")


def test_random_faults_are_absorbed_by_sdk_retries(tmp_path):
    faults = FaultConfig(rate_429=0.1, rate_503=0.1, retry_after_ms=1, seed=3)
    with start_server(checkpoint_dir=tmp_path, faults=faults, in_process=True) as server:
        client = tinker.ServiceClient(base_url=server.base_url, api_key=LOCAL_API_KEY)
        try:
            training = client.create_lora_training_client(base_model=MODEL, rank=2).result()
            for _ in range(3):
                training.forward_backward([datum()], "cross_entropy")
                training.optim_step(types.AdamParams(learning_rate=1e-3)).result()
            sampler = training.save_weights_and_get_sampling_client().result()
            result = sampler.sample(
                types.ModelInput.from_ints(TOKENS), 2, types.SamplingParams(max_tokens=4, seed=1)
            ).result()
            assert len(result.sequences) == 2
        finally:
            client.close("success")
        injected = httpx.get(f"{server.base_url}/api/v1/healthz").json()["faults_injected"]
        assert injected["429"] + injected["503"] > 0


def test_added_latency(tmp_path):
    faults = FaultConfig(latency_ms=300, endpoints=("get_server_capabilities",))
    with start_server(checkpoint_dir=tmp_path, faults=faults, in_process=True) as server:
        rest = tinker.RestClient(base_url=server.base_url, api_key=LOCAL_API_KEY)
        started = time.monotonic()
        rest.get_server_capabilities().result()
        assert time.monotonic() - started >= 0.3


def test_restart_keeps_checkpoints_and_the_same_client_continues(tmp_path):
    checkpoint_dir = tmp_path / "checkpoints"
    server = start_server(checkpoint_dir=checkpoint_dir)
    client = tinker.ServiceClient(base_url=server.base_url, api_key=LOCAL_API_KEY)
    try:
        training = client.create_lora_training_client(base_model=MODEL, rank=2).result()
        training.forward_backward([datum()], "cross_entropy")
        training.optim_step(types.AdamParams(learning_rate=1e-2)).result()
        before = forward_logprobs(training)
        state_path = training.save_state("before-restart").result().path
        sampler_path = training.save_weights_for_sampler("before-restart").result().path
        rest = tinker.RestClient(base_url=server.base_url, api_key=LOCAL_API_KEY)
        sha_before = rest.get_weights_info_by_tinker_path(state_path).result().optimizer_config.adapter_sha256

        server.stop()
        server = start_server(port=server.port, checkpoint_dir=checkpoint_dir)

        info = rest.get_weights_info_by_tinker_path(state_path).result()
        assert (
            info.optimizer_config.adapter_sha256 == sha_before and info.optimizer_config.optimizer_step == 1
        )
        restored = client.create_training_client_from_state_with_optimizer(state_path).result()
        assert np.array_equal(forward_logprobs(restored), before)
        assert restored.get_info().optimizer_config.optimizer_step == 1
        sampler = client.create_sampling_client(model_path=sampler_path).result()
        served = sampler.compute_logprobs(types.ModelInput.from_ints(TOKENS)).result()
        np.testing.assert_allclose(served[1:], before, rtol=1e-5, atol=1e-6)
        with pytest.raises(tinker.BadRequestError, match="unknown model_id"):
            training.forward([datum()], "cross_entropy").result()  # lived in the stopped server
    finally:
        client.close("success")
        server.stop()


def test_a_server_removes_the_temporary_checkpoint_dir_it_made_and_keeps_a_given_one(tmp_path):
    with start_server(in_process=True) as made:  # no directory given: a temporary one of its own
        client = tinker.ServiceClient(base_url=made.base_url, api_key=LOCAL_API_KEY)
        try:
            training = client.create_lora_training_client(base_model=MODEL, rank=2).result()
            training.save_state("kept-while-running").result()
        finally:
            client.close("success")
        assert made.checkpoint_dir.name.startswith("embedded-tinker-ckpt-")
        assert any(made.checkpoint_dir.iterdir())  # the saved state is there while the server runs
    assert not made.checkpoint_dir.exists()

    given = tmp_path / "checkpoints"
    with start_server(checkpoint_dir=given, in_process=True) as server:
        tinker.RestClient(base_url=server.base_url, api_key=LOCAL_API_KEY).get_server_capabilities().result()
    assert given.is_dir()  # the caller's directory is the caller's: a later server finds its checkpoints
