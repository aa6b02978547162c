"""Credentials are sent to the service but never written: not in the run directory, not in logs."""

from __future__ import annotations

import logging
import warnings

import pytest
from suite import FakeTinkerService, GS1_SPEC

from experiment.service.target import ServiceConfigError, ServiceTarget

SECRETS = {
    "TINKER_API_KEY": "tml-FAKE-SECRET-123",
    "MODAL_PROXY_TOKEN_ID": "MODAL-FAKE-ID-456",
    "MODAL_PROXY_TOKEN_SECRET": "MODAL-FAKE-SECRET-789",
    "RUNS_PROXY_TOKEN_ID": "RUNS-FAKE-ID-246",
    "RUNS_PROXY_TOKEN_SECRET": "RUNS-FAKE-SECRET-135",
}


@pytest.fixture
def fake_secrets(monkeypatch, no_service_env):
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)


def _leaks(text: str) -> list[str]:
    return [value for value in SECRETS.values() if value in text]


def test_run_sends_credentials_and_never_writes_them(tmp_path, prefect_harness, fake_secrets, caplog, capfd):
    from flows.experiment_flow import GateFailedError, run_experiment

    caplog.set_level(logging.DEBUG)  # the strictest setting: even debug logs must not carry secrets
    with FakeTinkerService(["Qwen/Qwen3.5-2B"]) as fake:
        state = run_experiment(str(GS1_SPEC), backend=fake.base_url, runs_dir=str(tmp_path / "runs"), return_state=True)
    assert isinstance(state.result(raise_on_failure=False), GateFailedError)

    capabilities = [r for r in fake.requests if r["path"].endswith("/get_server_capabilities")]
    assert capabilities, "the run never contacted the service"
    headers = {k.lower(): v for k, v in capabilities[0]["headers"].items()}
    assert headers["x-api-key"] == SECRETS["TINKER_API_KEY"]
    assert headers["modal-key"] == SECRETS["MODAL_PROXY_TOKEN_ID"]
    assert headers["modal-secret"] == SECRETS["MODAL_PROXY_TOKEN_SECRET"]

    written = [path for path in (tmp_path / "runs").rglob("*") if path.is_file()]
    assert any(path.name == "result.json" for path in written)
    for path in written:
        assert _leaks(path.read_bytes().decode("latin-1")) == [], path
    out, err = capfd.readouterr()
    assert _leaks(caplog.text + out + err) == []


def test_fork_client_sends_the_runs_proxy_headers(fake_secrets):
    with FakeTinkerService(["Qwen/Qwen3.5-4B"]) as fake:
        client = ServiceTarget.from_backend(fake.base_url).service_client(fork=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            client.create_rest_client().get_server_capabilities().result()
        client.close("success").result()
    headers = {k.lower(): v for k, v in fake.requests[-1]["headers"].items()}
    assert (headers["modal-key"], headers["modal-secret"]) == (SECRETS["RUNS_PROXY_TOKEN_ID"], SECRETS["RUNS_PROXY_TOKEN_SECRET"])


def test_target_repr_and_description_carry_no_secrets(fake_secrets):
    target = ServiceTarget.from_backend("https://user:pw@spindle.example/api?token=abc")
    assert target.describe() == {"kind": "remote", "base_url": "https://spindle.example/api"}
    assert "pw" not in repr(target) and "token" not in repr(target)
    assert _leaks(repr(target) + str(target.describe())) == []


def test_local_backend_uses_tinker_base_url_when_set(monkeypatch, no_service_env):
    assert ServiceTarget.from_backend("local").kind == "embedded"
    monkeypatch.setenv("TINKER_BASE_URL", "http://127.0.0.1:8123/")
    target = ServiceTarget.from_backend("local")
    assert (target.kind, target.base_url) == ("remote", "http://127.0.0.1:8123")


def test_missing_api_key_is_a_one_line_error(monkeypatch, no_service_env):
    monkeypatch.delenv("TINKER_API_KEY")
    with pytest.raises(ServiceConfigError, match="^TINKER_API_KEY is not set"):
        ServiceTarget.from_backend("http://127.0.0.1:9").service_client()


def test_half_a_proxy_token_is_refused(monkeypatch, fake_secrets):
    monkeypatch.delenv("MODAL_PROXY_TOKEN_SECRET")
    with pytest.raises(ServiceConfigError, match="set both MODAL_PROXY_TOKEN_ID and MODAL_PROXY_TOKEN_SECRET") as caught:
        ServiceTarget.from_backend("http://127.0.0.1:9").service_client()
    assert _leaks(str(caught.value)) == []

