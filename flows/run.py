"""CLI: python -m flows.run SPEC [--plan] [--backend local|URL] [--runs-dir DIR]

Exit codes: 0 the run reached a decision, 1 a gate failed (RESULT says which and why),
2 bad input (spec, plan file, backend), 3 the run crashed (a bug; see the log).
`--plan` prints the execution plan as JSON and contacts no service (Prefect is not even imported).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from experiment.plan import build_plan
from experiment.service import ServiceConfigError, ServiceTarget
from experiment.spec import SpecError, load_spec

EXIT_DECISION, EXIT_GATE_FAILED, EXIT_BAD_INPUT, EXIT_CRASHED = 0, 1, 2, 3


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m flows.run", description="Run an experiment spec through the gated flow.")
    parser.add_argument("spec", help="path to a spec JSON file (a companion <name>.plan.json beside it is read too)")
    parser.add_argument("--plan", action="store_true", help="print the execution plan as JSON and exit; contacts no service")
    parser.add_argument("--backend", default="local", help="'local' (embedded, or $TINKER_BASE_URL when set) or a service URL")
    parser.add_argument("--runs-dir", default=None, help="where run directories go (default $RX_RUNS_DIR or ./runs)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    try:
        plan = build_plan(load_spec(args.spec))
        ServiceTarget.from_backend(args.backend)
    except (SpecError, ServiceConfigError) as err:
        print(err, file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.plan:
        print(json.dumps(plan.to_dict(), indent=2))
        return EXIT_DECISION

    # A loaded 2-core machine can take longer than Prefect's default 20 s to start its temporary server.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    from flows.experiment_flow import run_experiment  # imports Prefect; only needed for a real run

    try:
        state = run_experiment(args.spec, backend=args.backend, runs_dir=args.runs_dir, return_state=True)
    except Exception as err:  # Prefect itself failed (e.g. its temporary server did not start)
        print(f"run crashed before finishing: {type(err).__name__}: {err}", file=sys.stderr)
        return EXIT_CRASHED
    return exit_code_for(state)


def exit_code_for(state) -> int:
    """Map the flow's final state to the CLI exit code and print one closing line."""
    if state.is_completed():
        print(state.message or "run completed")
        return EXIT_DECISION
    outcome = state.result(raise_on_failure=False)
    print(f"{state.name}: {outcome}", file=sys.stderr)
    if state.name == "GateFailed":
        return EXIT_GATE_FAILED
    if isinstance(outcome, (SpecError, ServiceConfigError)):
        return EXIT_BAD_INPUT
    return EXIT_CRASHED


if __name__ == "__main__":
    sys.exit(main())
