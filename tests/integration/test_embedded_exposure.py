"""The exposure profiles through the stock SDK: each production difference, and the embedded default.

`production` runs as `python -m embedded_tinker serve --exposure production` (a subprocess, so the
CLI flag is exercised); `embedded` runs in this process (cheaper; the default path is covered by the
other embedded tests too). Every test makes the same call against both and compares the answers.
"""

from __future__ import annotations

import re
import warnings

import httpx
import pytest
import tinker
from tinker.types.optimizer import DimuonOptimizerConfig, DimuonParams, OptimizerConfigBase

from embedded_tinker.launch import LOCAL_API_KEY, start_server
from experiment.service.service_time import SessionServiceTime, session_id_of
from experiment.service.target import ServiceTarget

MODEL = "embedded/tiny-random"
HEX64 = re.compile(r"[0-9a-f]{64}")


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    with start_server(checkpoint_dir=tmp_path_factory.mktemp("production"), exposure="production") as production, \
            start_server(checkpoint_dir=tmp_path_factory.mktemp("embedded"), in_process=True) as embedded:
        yield {"production": production, "embedded": embedded}


@pytest.fixture(scope="module")
def clients(servers):
    made = {name: tinker.ServiceClient(base_url=server.base_url, api_key=LOCAL_API_KEY)
            for name, server in servers.items()}
    yield made
    made["embedded"].close("success").result()
    with pytest.raises(tinker.NotFoundError):  # no sessions/{id}/finish in production (see the last test)
        made["production"].close("success").result()


def create(client, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return client.create_lora_training_client(base_model=MODEL, rank=2, **kwargs).result()


def one_step(training, params) -> dict:
    tokens = training.get_tokenizer().encode("Tom has 3 apples and buys 4 more.")
    datum = tinker.Datum(model_input=tinker.ModelInput.from_ints(tokens[:-1]),
                         loss_fn_inputs={"target_tokens": tokens[1:], "weights": [1.0] * (len(tokens) - 1)})
    training.forward_backward([datum], "cross_entropy").result()
    return training.optim_step(params).result().metrics


def test_the_profile_is_reported_by_healthz(servers):
    for name, server in servers.items():
        assert server.exposure == name
        assert httpx.get(f"{server.base_url}/api/v1/healthz").json()["exposure"] == name


def test_unknown_profile_is_refused_before_starting():
    with pytest.raises(ValueError, match="unknown exposure"):
        start_server(exposure="prod")


def test_per_model_seed_is_rejected_in_production(clients):
    with pytest.raises(tinker.BadRequestError, match="seed"):
        create(clients["production"], seed=3)
    assert create(clients["production"]).get_info().lora_rank == 2  # without a seed it is served
    assert create(clients["embedded"], seed=3).get_info().lora_rank == 2


def test_get_info_shows_only_the_optimizer_family_in_production(clients):
    production = create(clients["production"]).get_info().optimizer_config
    assert production.model_dump() == {"type": "adamw"}
    assert getattr(production, "adapter_sha256", None) is None

    embedded = create(clients["embedded"]).get_info().optimizer_config
    assert embedded.type == "adamw" and HEX64.fullmatch(embedded.adapter_sha256)
    assert embedded.optimizer_step == 0


def test_raw_get_info_and_weights_info_carry_no_adapter_hash_in_production(servers, clients):
    for name, server in servers.items():
        training = create(clients[name])
        one_step(training, tinker.AdamParams(learning_rate=1e-3))
        path = training.save_state("after-one-step").result().path
        info = httpx.post(f"{server.base_url}/api/v1/get_info", json={"model_id": training.model_id},
                          headers={"X-API-Key": LOCAL_API_KEY}).json()
        weights = httpx.post(f"{server.base_url}/api/v1/weights_info", json={"tinker_path": path},
                             headers={"X-API-Key": LOCAL_API_KEY}).json()
        rest = tinker.RestClient(base_url=server.base_url, api_key=LOCAL_API_KEY)
        via_sdk = rest.get_weights_info_by_tinker_path(path).result()
        if name == "production":
            assert "adapter_sha256" not in str(info) and "adapter_sha256" not in str(weights)
            assert info["optimizer_config"] == {"type": "adamw"}
            assert set(weights) == {"base_model", "is_lora", "lora_rank", "train_unembed", "train_mlp",
                                    "train_attn"}
            assert getattr(via_sdk.optimizer_config, "adapter_sha256", None) is None
        else:
            assert HEX64.fullmatch(info["adapter_sha256"]) and info["optimizer_config"]["optimizer_step"] == 1
            assert via_sdk.optimizer_config.adapter_sha256 == weights["adapter_sha256"]
            assert weights["optimizer_config"]["optimizer_step"] == 1


def test_save_weights_external_is_not_found_in_production(clients):
    with pytest.raises(tinker.NotFoundError):
        create(clients["production"]).save_weights_external("export").result()
    exported = create(clients["embedded"]).save_weights_external("export").result().path
    assert exported.endswith("/external_weights/export")


def test_declared_optimizer_config_is_ignored_in_production(clients):
    declared = OptimizerConfigBase(type="adamw", learning_rate=1e-3)
    production = create(clients["production"], optimizer=declared)
    assert production.get_info().optimizer_config.model_dump() == {"type": "adamw"}
    # a step at another learning rate is taken: nothing was declared as far as the service knows
    metrics = one_step(production, tinker.AdamParams(learning_rate=5e-3))
    assert metrics["optimizer_step:max"] == 1.0

    embedded = create(clients["embedded"], optimizer=declared)
    assert embedded.get_info().optimizer_config.model_dump()["learning_rate"] == 1e-3
    with pytest.raises(tinker.RequestFailedError, match="contradict"):
        one_step(embedded, tinker.AdamParams(learning_rate=5e-3))


def test_another_family_silently_trains_with_adam_in_production(clients):
    production = create(clients["production"], optimizer=DimuonOptimizerConfig())
    assert production.get_info().optimizer_config.type == "adamw"  # the declared dimuon is ignored
    metrics = one_step(production, DimuonParams(learning_rate=1e-3))  # accepted, parsed as default Adam
    assert metrics["optimizer_step:max"] == 1.0

    embedded = create(clients["embedded"], optimizer=DimuonOptimizerConfig())
    assert embedded.get_info().optimizer_config.type == "dimuon"
    with pytest.raises(tinker.RequestFailedError, match="do not match"):
        one_step(embedded, tinker.AdamParams(learning_rate=1e-3))


def test_closing_a_session_is_not_found_in_production(servers):
    production = tinker.ServiceClient(base_url=servers["production"].base_url, api_key=LOCAL_API_KEY)
    create(production)
    with pytest.raises(tinker.NotFoundError):
        production.close("success").result()


def test_a_sessions_own_service_time_is_reported_in_the_embedded_profile_and_absent_in_production(servers, clients):
    """The pipeline's reader (experiment.service.service_time) of the embedded backend's per-session service time:
    a sample through the stock SDK adds its time in service to its session's busy seconds; production has no
    such route, so the reader reports none (the feasibility pilot then corrects for contention instead)."""
    readings = {}
    for name, client in clients.items():
        target = ServiceTarget(kind="embedded", base_url=servers[name].base_url)
        service_time = SessionServiceTime(target, session_id_of(client))
        before = service_time.busy_seconds()
        sampler = client.create_sampling_client(base_model=MODEL)
        sampler.sample(tinker.ModelInput.from_ints([1, 2, 3]), 2, tinker.SamplingParams(max_tokens=4)).result()
        readings[name] = (before, service_time.busy_seconds())
    before, after = readings["embedded"]
    assert before is not None and after > before
    assert readings["production"] == (None, None)
    assert httpx.get(f"{servers['production'].base_url}/api/v1/service_time/{session_id_of(clients['production'])}",
                     headers={"X-API-Key": LOCAL_API_KEY}).status_code == 404
    unknown = httpx.get(f"{servers['embedded'].base_url}/api/v1/service_time/sess-none",
                        headers={"X-API-Key": LOCAL_API_KEY})
    assert unknown.status_code == 404  # a session the service never saw
