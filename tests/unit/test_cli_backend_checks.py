"""The CLI's checks on a backend before Prefect is involved: credentials are taken out of the URL the
flow gets (and found again inside the flow), and a backend refusing connections is one clear line."""

from __future__ import annotations

import socket
import time

from flows.backend_url import BACKEND_URL_ENV, with_credentials
from flows.startup import hide_backend_credentials, unreachable_backend


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens once the probe is closed


def test_credentials_leave_the_parameter_and_come_back_inside_the_flow(monkeypatch):
    monkeypatch.delenv(BACKEND_URL_ENV, raising=False)
    given = "https://alice:tml-secret@svc.example:8443/v1?token=abc#frag"
    public = hide_backend_credentials(given)
    assert public == "https://svc.example:8443/v1"
    assert "secret" not in public and "abc" not in public
    assert with_credentials(public) == given
    assert with_credentials("https://other.example/v1") == "https://other.example/v1"  # never to another host
    assert hide_backend_credentials("local") == "local"


def test_a_plain_url_is_passed_as_is(monkeypatch):
    monkeypatch.delenv(BACKEND_URL_ENV, raising=False)
    assert hide_backend_credentials("http://127.0.0.1:8000") == "http://127.0.0.1:8000"
    assert BACKEND_URL_ENV not in __import__("os").environ


def test_a_refusing_backend_is_one_line_within_its_budget(monkeypatch):
    monkeypatch.delenv("TINKER_BASE_URL", raising=False)
    port = closed_port()
    started = time.monotonic()
    problem = unreachable_backend(f"http://u:tml-pw@127.0.0.1:{port}/", budget_s=2)
    assert time.monotonic() - started < 10
    assert problem and "\n" not in problem and "unreachable" in problem and "not a capacity" in problem
    assert "tml-pw" not in problem
    assert unreachable_backend("local") is None  # the embedded backend is started by the run itself


def test_a_listening_backend_passes():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        assert unreachable_backend(f"http://127.0.0.1:{server.getsockname()[1]}", budget_s=2) is None


def test_local_with_a_refusing_tinker_base_url(monkeypatch):
    monkeypatch.setenv("TINKER_BASE_URL", f"http://127.0.0.1:{closed_port()}")
    assert "unreachable" in unreachable_backend("local", budget_s=1)
