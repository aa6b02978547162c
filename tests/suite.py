"""What tests share that is not a fixture: repository paths, the seed specs, the CLI runner of the
end-to-end tests, and the HTTP stand-in for a remote service. Fixtures live in conftest.py; tests
import these names from here (`from suite import ...`), never from conftest.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

from tools.attacks.loopback import json_answer, send_request

REPO_ROOT = Path(__file__).resolve().parent.parent
SPECS_DIR = REPO_ROOT / "specs"
GS1_SPEC = SPECS_DIR / "gs1_kernel_vs_grpo_gsm8k.json"
SELFGEN_SPEC = SPECS_DIR / "selfgen_tasks_vs_gsm8k.json"
TRIMUON_SPEC = SPECS_DIR / "trimuon_vs_dimuon_no_robots.json"
# The rehearsal scale of the end-to-end runs (tests/e2e/conftest.py: wiring_rehearsal, one run per seed spec and session)
GS1_WIRING_ARGS = ("--rehearse", "--rehearsal-scale", "wiring")
# In the environment of the seed specs' shared wiring rehearsals (tests/e2e/conftest.py): never stored anywhere
FAKE_PROXY_SECRET = "tml-FAKE-SELFGEN-SECRET-7781"
# What the longest files outside tests/e2e take, in seconds: the sum of their tests' wall time (setup, call,
# teardown) in one `pytest -m "not slow"` run on an idle machine, 3 December 2026 (SUITE_TIMELINE,
# benchmarks/suite_timeline.py). Only the order is used: after the end-to-end files, the workers get these
# longest first (tests/conftest.py, pytest_collection_modifyitems), the rest after them in collection order,
# so that no long file starts when the other workers are nearly done. A file missing here only goes out
# later. Refresh: run that command with SUITE_TIMELINE set and sum per file.
FILE_SECONDS = {
    # three files added since, from a loaded `pytest -m "not slow"` run (7 December, load 8 to 15), their walls divided
    # by 2.79, the median of measured over listed for the files listed here: test_grading_leaf_inventory.py went out
    # last in collection order and its 134 s on one worker ended that run 71 s after the other two workers
    "tests/unit/test_grading_leaf_inventory.py": 48,
    "tests/integration/test_service_stops_answering.py": 72,
    "tests/unit/test_runs_left_behind.py": 32,
    "tests/integration/test_temporary_prefect_server.py": 25,
    "tests/unit/test_sandbox.py": 22,
    "tests/integration/test_cli.py": 22,
    "tests/integration/test_correctness_through_service.py": 21,
    "tests/integration/test_backend_credentials_prefect_db.py": 21,
    "tests/integration/test_quiet_logs.py": 17,
    "tests/integration/test_records_correctness_gate_pins.py": 17,
    "tests/integration/test_production_never_substitutes.py": 17,
    "tests/unit/test_sampling_engine.py": 15,
    "tests/integration/test_embedded_faults.py": 15,
    "tests/integration/test_sdk_client_exit.py": 14,
    "tests/integration/test_embedded_sdk_flows.py": 12,
    "tests/integration/test_flow.py": 12,
    "tests/unit/test_validation.py": 11,
    "tests/unit/test_grading_every_leaf.py": 9,
    "tests/integration/test_tinker_cli_embedded.py": 9,
    "tests/unit/test_grading_cli.py": 9,
    "tests/integration/test_gs1_preflight.py": 8,
    "tests/unit/test_no_prefect_in_domain.py": 8,
    "tests/unit/test_grading_leaf_holes.py": 8,
    "tests/unit/test_qwen3.py": 8,
    "tests/integration/test_service_profile.py": 7,
    "tests/integration/test_service_request_limit.py": 7,
    "tests/unit/test_grading_rules.py": 6,
    "tests/unit/test_grader_loads_no_torch.py": 6,
    "tests/unit/test_closed_console.py": 6,
    "tests/unit/test_spec_corpus.py": 6,
    "tests/integration/test_embedded_exposure.py": 6,
    "tests/unit/test_run_claim_lock.py": 5,
    "tests/unit/test_runs_cli.py": 5,
    "tests/integration/test_task_generation.py": 5,
    "tests/unit/test_grading_replicas.py": 5,
    "tests/unit/test_grading_rule_table.py": 4,
    "tests/unit/test_decide_cli.py": 3,
    "tests/unit/test_embedded_assets.py": 3,
    "tests/unit/test_sandbox_vocabulary.py": 3,
    "tests/unit/test_cli_backend_checks.py": 3,
    "tests/unit/test_grading_secrets.py": 3,
    "tests/unit/test_store_evidence_caps.py": 3,
    "tests/integration/test_credentials.py": 3,
    "tests/unit/test_plots.py": 3,
    "tests/integration/test_sft_loop.py": 3,
    "tests/integration/test_restore_checks_embedded.py": 2,
    "tests/integration/test_capacity.py": 2,
}



def children_of(pid: int) -> dict[int, str]:
    """The processes whose parent is `pid`: pid -> command line."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid == pid:
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError, ValueError):
            continue
    return found


def stop_process_group(process: subprocess.Popen, children_exit_s: float = 60) -> None:
    """Stop a process the test started in its own session (a Prefect worker, `prefect serve`) and its process
    group, the flow-run subprocesses included. Its children get up to `children_exit_s` to end on their own
    first: a flow run has reported its final state before its process drains its last log lines to the
    server and exits, and a SIGTERM in between loses them (a run's closing "service requests: at most" line
    was missing from the server once, test_shared_service_limit.py, on a loaded machine)."""
    if process.poll() is not None:
        return
    deadline = time.monotonic() + children_exit_s
    while children_of(process.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def alive(pid: int) -> bool:
    """Whether process `pid` still runs (a zombie has exited; only its reaper is missing)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"

def transformers_reference(spec):
    """transformers' own Qwen3ForCausalLM for a base-model spec (embedded_tinker.model.REGISTRY), frozen,
    with model.py's adapter hooks on its linears (so `BaseModel.active(adapter)` adds the adapter to it
    too): the reference the served decoder (embedded_tinker/qwen3.py) and the sampling engine are held to."""
    import torch

    from embedded_tinker.model import _make_lora_hook, load_hf_model

    model = load_hf_model(spec).float().eval().requires_grad_(False)
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Linear):
            module.register_forward_hook(_make_lora_hook(name))
    return model


def run_cli(module: str, *args: str, env_extra: dict | None = None, timeout: int = 900) -> subprocess.CompletedProcess:
    """`python -m <module> args...` from the repository root, without any ambient service URL or key."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), **(env_extra or {})}
    for name in ("TINKER_BASE_URL", "TINKER_API_KEY"):
        env.pop(name, None)
    return subprocess.run([sys.executable, "-m", module, *args], cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def run_main(module: str, *args: str) -> subprocess.CompletedProcess:
    """`main(argv)` of a CLI module (flows.run for --plan, flows.validate) in this process, without any ambient
    service URL or key, its exit code, stdout and stderr as `run_cli` gives them. A fresh `python -m` process
    pays its imports again (about 2 CPU-s for `--plan`); the real entry points keep their own subprocess cases
    (tests/integration/test_cli.py, tests/unit/test_grading_cli.py, the validator runs of
    tests/e2e/test_local_gs1_run.py and test_sft_local_run.py)."""
    import contextlib
    import importlib
    import io

    main = importlib.import_module(module).main
    saved = {name: os.environ.pop(name) for name in ("TINKER_BASE_URL", "TINKER_API_KEY") if name in os.environ}
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
    finally:
        os.environ.update(saved)
    return subprocess.CompletedProcess([module, *args], code, out.getvalue(), err.getvalue())


def copy_seed_spec(spec: Path, folder: Path) -> Path:
    """A seed spec and its revision file (`<stem>.plan.json`) copied into `folder` (made if missing): the copy's path."""
    folder.mkdir(parents=True, exist_ok=True)
    for source in (spec, spec.with_name(spec.name.replace(".json", ".plan.json"))):
        shutil.copy(source, folder / source.name)
    return folder / spec.name


def only_run_dir(runs_dir: Path) -> Path:
    """The one run directory a runs dir holds (hidden entries such as the index lock left out)."""
    (run_dir,) = [p for p in runs_dir.iterdir() if p.is_dir() and not p.name.startswith(".")]
    return run_dir


# A tiny HTTP stand-in for a remote Tinker service: answers get_server_capabilities, refuses the session and
# model that the first create_model needs (HTTP 400, a user error: the preflight probe fails its gate) and records every request (headers
# included), so tests check what the pipeline SENDS without a real backend.


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
                status = 200
                if self.path.endswith("/get_server_capabilities"):
                    payload = {"supported_models": [{"model_name": name} for name in service.served_models]}
                elif self.path.endswith(("/create_session", "/create_model")):  # refused: a user error (HTTP 400)
                    status, payload = 400, {"error": "the stand-in service creates no models", "category": "user"}
                else:
                    payload = {}
                data = json.dumps(payload).encode()
                self.send_response(status)
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


def raw_request(base_url: str, method: str, path: str, headers: dict[str, str], body: bytes | None = None,
                ) -> tuple[int, dict]:
    """(status, JSON answer, or {"raw": text}) of one HTTP request sent as given: the path unnormalized (a
    `%2e%2e` stays), exactly the headers given (Host included), Content-Length from the body (the attack
    scripts' own sender, tools/attacks/loopback.py)."""
    parts = urlsplit(base_url)
    status, payload = send_request(parts.hostname, parts.port, method, path, headers, body)
    return status, json_answer(payload)
