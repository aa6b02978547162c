"""End-to-end tests: whole runs through the CLI, a Prefect server, a browser. Every test here is
`slow` (minutes); CI runs them too, `pytest -m "not slow"` leaves them out.

`gs1_wiring_rehearsal` is the one clean GS1 rehearsal at the wiring scale that several files check
(what it records, what the UI shows, the decision a faulted or killed run must reach again): its
files are one unit of `suite.FILE_GROUPS`, so they run on one xdist worker and the run happens once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from suite import GS1_SPEC, GS1_WIRING_ARGS, only_run_dir, run_cli

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def gs1_wiring_rehearsal(prefect_server, tmp_path_factory) -> dict:
    """`python -m flows.run GS1_SPEC --rehearse --rehearsal-scale wiring`, clean, on the embedded
    backend, recorded on the session's Prefect server: its flow run, run directory and output."""
    runs_dir = tmp_path_factory.mktemp("gs1-wiring-runs")
    done = run_cli("flows.run", str(GS1_SPEC), *GS1_WIRING_ARGS, "--runs-dir", str(runs_dir),
                   env_extra=prefect_server.cli_env, timeout=1500)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (flow_run,) = prefect_server.flow_runs_of(runs_dir)
    return {"flow_run": flow_run, "run_dir": only_run_dir(runs_dir), "stdout": done.stdout, "stderr": done.stderr}
