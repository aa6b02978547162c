"""Shared test setup: offline, no Prefect server of our own, fast flow runs.

Prefect env vars must be set before prefect is imported (prefect-notes.md, "No-server default and
fast tests"). Flow tests use the session-scoped `prefect_harness` fixture; pure-logic tests never
import Prefect at all.
"""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TINKER_TELEMETRY", "0")
os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ["PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_ENABLED"] = "false"

REPO_ROOT = Path(__file__).resolve().parent.parent
SPECS_DIR = REPO_ROOT / "specs"
GS1_SPEC = SPECS_DIR / "gs1_kernel_vs_grpo_gsm8k.json"
SELFGEN_SPEC = SPECS_DIR / "selfgen_tasks_vs_gsm8k.json"
TRIMUON_SPEC = SPECS_DIR / "trimuon_vs_dimuon_no_robots.json"


@pytest.fixture(scope="session")
def prefect_harness():
    """One temporary Prefect backend for all flow tests, heartbeats off."""
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120), temporary_settings({PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        yield


@pytest.fixture
def no_service_env(monkeypatch):
    """No ambient service URL or credentials leak into a test."""
    for name in ("TINKER_BASE_URL", "TINKER_API_KEY", "MODAL_PROXY_TOKEN_ID", "MODAL_PROXY_TOKEN_SECRET",
                 "RUNS_PROXY_TOKEN_ID", "RUNS_PROXY_TOKEN_SECRET", "RX_RUNS_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TINKER_API_KEY", "tml-test-key")


# A tiny HTTP stand-in for a remote Tinker service: answers get_server_capabilities and records every
# request (headers included), so tests check what the pipeline SENDS without a real backend.


class FakeTinkerService:
    def __init__(self, served_models: list[str]):
        self.served_models = served_models
        self.requests: list[dict] = []
        service = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                service.requests.append({"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body})
                if self.path.endswith("/get_server_capabilities"):
                    payload = {"supported_models": [{"model_name": name} for name in service.served_models]}
                else:
                    payload = {}
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer

            def log_message(self, *args) -> None:  # keep test output quiet
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeTinkerService:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
