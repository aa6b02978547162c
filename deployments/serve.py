"""Serve the experiment flow as the deployment `run-experiment/local` (see deployments/README.md).

    PREFECT_API_URL=http://127.0.0.1:4200/api python deployments/serve.py [--max-runs N]

The process stays up, runs each triggered or scheduled flow run (re-queued runs included) in a
subprocess, and stops on Ctrl-C. Flow runs execute in the repository root, so the default runs
directory is ./runs (override with RX_RUNS_DIR).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEPLOYMENT_NAME = "local"
DEFAULT_PARAMETERS = {"backend": "local"}  # spec_path is given per run: --param spec_path=...


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python deployments/serve.py", description=__doc__.splitlines()[0])
    parser.add_argument("--name", default=DEPLOYMENT_NAME, help="deployment name (default: local)")
    parser.add_argument(
        "--max-runs",
        type=int,
        default=1,
        help="flow runs of this deployment at once (default 1: one experiment at a time on a small machine)",
    )
    return parser.parse_args(argv)


def build_deployment(name: str = DEPLOYMENT_NAME, max_runs: int = 1):
    """The RunnerDeployment for `run_experiment` (imports Prefect and the flow)."""
    from flows.experiment_flow import run_experiment

    return run_experiment.to_deployment(
        name=name,
        parameters=DEFAULT_PARAMETERS,
        concurrency_limit=max_runs,
        description="One experiment spec through the gated flow; RESULT in <runs dir>/<run id>/result.json.",
        tags=["experiment"],
    )


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    if not os.environ.get("PREFECT_API_URL"):
        print("PREFECT_API_URL is not set; start 'prefect server start' and export it first", file=sys.stderr)
        return 2
    # flow runs are subprocesses of this one: they must find the repository's packages and files
    os.chdir(REPO_ROOT)
    sys.path.insert(0, str(REPO_ROOT))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))

    from prefect import serve

    serve(build_deployment(args.name, args.max_runs), limit=args.max_runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
