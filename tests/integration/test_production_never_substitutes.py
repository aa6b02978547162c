"""A production path that never substitutes (issue 46): outside a rehearsal, a model the service does not serve or
data the run cannot read is bad input, refused with exit 2 and one line before the run is claimed (no run
directory); a substitution happens only in a rehearsal, as a deviation (tests/integration/test_flow.py). Before:
the TriMuon spec with --backend URL printed "Qwen/Qwen3.5-4B is not served ... using the service's default
embedded/tiny-arith", trained on it and recorded original_hypothesis_tested true; a Hub dataset that could not
be read offline crashed the run at preflight_probe (exit 3) after the claim.

Real components: `python -m flows.run` as a process, against the embedded backend served on its own over HTTP.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from suite import GS1_SPEC, REPO_ROOT, TRIMUON_SPEC

from embedded_tinker.launch import LOCAL_API_KEY


def _run(*args: str, tmp_path, **env_extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "HF_HUB_OFFLINE": "1", "TINKER_API_KEY": LOCAL_API_KEY,
           "PREFECT_HOME": str(tmp_path / "prefect-home"), **env_extra}
    for name in ("PREFECT_API_URL", "TINKER_BASE_URL"):
        if name not in env_extra:
            env.pop(name, None)
    return subprocess.run([sys.executable, "-m", "flows.run", *args, "--runs-dir", str(tmp_path / "runs")],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)


def _refused_with_one_line(done: subprocess.CompletedProcess, tmp_path) -> str:
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stderr and done.stderr.strip().count("\n") == 0, done.stderr
    runs = tmp_path / "runs"
    assert not runs.exists() or not [p for p in runs.iterdir() if not p.name.startswith(".")], "a run was claimed"
    return done.stderr.strip()


def test_a_model_the_service_does_not_serve_is_refused_before_the_claim(tmp_path, embedded_server):
    line = _refused_with_one_line(_run(str(TRIMUON_SPEC), "--backend", embedded_server.base_url, tmp_path=tmp_path),
                                  tmp_path)
    assert "does not serve Qwen/Qwen3.5-4B" in line and "never substitutes" in line and "--rehearse" in line


def test_the_embedded_backend_outside_a_rehearsal_serves_only_its_own_models(tmp_path):
    line = _refused_with_one_line(_run(str(GS1_SPEC), tmp_path=tmp_path), tmp_path)
    assert line.startswith("the embedded backend does not serve Qwen/Qwen3.5-2B (it serves embedded/tiny-arith")


def test_a_dataset_that_cannot_be_read_here_is_refused_before_the_claim(tmp_path, embedded_server):
    """The TriMuon spec on a model the service serves, its no_robots data named on the Hub, read offline."""
    spec = json.loads(TRIMUON_SPEC.read_text())
    spec["base_model"] = "embedded/tiny-arith"
    path = tmp_path / TRIMUON_SPEC.name
    path.write_text(json.dumps(spec))
    path.with_name(TRIMUON_SPEC.name.replace(".json", ".plan.json")).write_text(
        TRIMUON_SPEC.with_name(TRIMUON_SPEC.name.replace(".json", ".plan.json")).read_text())
    line = _refused_with_one_line(_run(str(path), "--backend", embedded_server.base_url, tmp_path=tmp_path), tmp_path)
    assert line.startswith("dataset.hf_path: HuggingFaceH4/no_robots cannot be read here")


def test_rehearse_with_a_backend_url_names_the_route_that_works(tmp_path, embedded_server):
    """The route is exercised end to end by tests/e2e/test_backend_breaks_mid_run.py and test_capacity_e2e.py
    (a wiring rehearsal with TINKER_BASE_URL naming an embedded server)."""
    line = _refused_with_one_line(_run(str(GS1_SPEC), "--rehearse", "--backend", embedded_server.base_url,
                                       tmp_path=tmp_path), tmp_path)
    assert "TINKER_BASE_URL=http://127.0.0.1:N" in line and "python -m embedded_tinker serve --port N" in line
