"""Credentials in a backend URL never reach Prefect: the flow parameter and the real Prefect server's
database hold the URL without them (checked over the server's REST API and in its database file)."""

from __future__ import annotations

import json
import subprocess
import sys

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
GS1_SPEC = REPO_ROOT / "specs" / "gs1_kernel_vs_grpo_gsm8k.json"
SECRET_PASSWORD = "tml-password-do-not-store-7f3a"
SECRET_TOKEN = "token-do-not-store-91c2"

WEAKENED = ("import sys, flows.run as cli, flows.startup as startup; "
            "startup.hide_backend_credentials = lambda backend: backend; "
            "cli.survive_closed_console(); cli.exit_process(cli.main(sys.argv[1:]))")


def run_cli(server, runs_dir, backend: str, weakened: bool = False) -> subprocess.CompletedProcess:
    env = {**server.env, "PYTHONPATH": str(REPO_ROOT), "TINKER_API_KEY": "tml-test-key"}
    for name in ("TINKER_BASE_URL", "MODAL_PROXY_TOKEN_ID", "MODAL_PROXY_TOKEN_SECRET"):
        env.pop(name, None)
    head = [sys.executable, "-c", WEAKENED] if weakened else [sys.executable, "-m", "flows.run"]
    return subprocess.run([*head, str(GS1_SPEC), "--backend", backend, "--runs-dir", str(runs_dir)],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)


def flow_run_parameters(server, runs_dir) -> list[dict]:
    return [run["parameters"] for run in server.flow_runs_of(runs_dir)]


@pytest.mark.slow  # the pipeline's CLI as a process, through a gate (pyproject.toml: markers)
def test_backend_credentials_stay_out_of_prefect(prefect_server, fake_tinker_service, tmp_path):
    with fake_tinker_service(["Qwen/Qwen3.5-2B"]) as fake:
        host = fake.base_url.removeprefix("http://")
        backend = f"http://probe:{SECRET_PASSWORD}@{host}/?token={SECRET_TOKEN}"
        done = run_cli(prefect_server, tmp_path / "real", backend)
        reached = len([r for r in fake.requests if r["path"].endswith("get_server_capabilities")])
        assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]  # the stand-in fails the probe
        assert reached >= 1  # the run reached the service with the URL it was given
        (parameters,) = flow_run_parameters(prefect_server, tmp_path / "real")
        assert parameters["backend"] == f"http://{host}/"
        text = json.dumps(parameters) + done.stdout + done.stderr
        assert SECRET_PASSWORD not in text and SECRET_TOKEN not in text
        database = prefect_server.database_bytes()
        assert database and SECRET_PASSWORD.encode() not in database and SECRET_TOKEN.encode() not in database

        # the same checks catch a weakened CLI that passes the URL through as given
        run_cli(prefect_server, tmp_path / "weak", backend, weakened=True)
    (weak_parameters,) = flow_run_parameters(prefect_server, tmp_path / "weak")
    assert SECRET_PASSWORD in weak_parameters["backend"]
    assert SECRET_PASSWORD.encode() in prefect_server.database_bytes()
