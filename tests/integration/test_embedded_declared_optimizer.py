"""Optimizer hyperparameters declared at creation are echoed by the server and enforced.

This is what lets the restoration preflight verify a client's optimizer *config* (not only its
family) from a server response, and what stops a silent hyperparameter swap.
"""

from __future__ import annotations

import warnings

import pytest
import tinker
from tinker.types.optimizer import OptimizerConfigBase



@pytest.fixture(scope="module")
def service(embedded_server):
    server = embedded_server  # one backend for the session (tests/conftest.py)
    client = tinker.ServiceClient(base_url=server.base_url, api_key="tml-local")
    yield client
    client.close("success").result()


def one_token_batch(tokenizer):
    tokens = tokenizer.encode("Tom has 3 apples.")
    return [tinker.Datum(
        model_input=tinker.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={"target_tokens": tokens[1:], "weights": [1.0] * (len(tokens) - 1)},
    )]


def test_declared_config_is_reported_and_contradictions_are_refused(service):
    declared = OptimizerConfigBase(type="adamw", learning_rate=1e-3, beta1=0.9, beta2=0.95, eps=1e-8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        client = service.create_lora_training_client(base_model="embedded/tiny-random", rank=2, seed=0,
                                                     optimizer=declared).result()
    reported = client.get_info().optimizer_config.model_dump()
    assert reported["type"] == "adamw"
    assert {k: reported[k] for k in ("learning_rate", "beta1", "beta2", "eps")} == {
        "learning_rate": 1e-3, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8}

    batch = one_token_batch(client.get_tokenizer())
    client.forward_backward(batch, loss_fn="cross_entropy").result()
    step = client.optim_step(tinker.AdamParams(learning_rate=1e-3, beta1=0.9, beta2=0.95, eps=1e-8)).result()
    assert step.metrics["optimizer_step:max"] == 1.0

    client.forward_backward(batch, loss_fn="cross_entropy").result()
    with pytest.raises(tinker.RequestFailedError, match="contradict"):
        client.optim_step(tinker.AdamParams(learning_rate=2e-3, beta1=0.9, beta2=0.95, eps=1e-8)).result()


def test_undeclarable_config_key_is_a_user_error(service):
    with pytest.raises(Exception, match="does not take"):
        service.create_lora_training_client(base_model="embedded/tiny-random", rank=2, seed=0,
                                            optimizer=OptimizerConfigBase(type="adamw", momentum=0.5)).result()
