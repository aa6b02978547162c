"""CLI: python -m flows.run SPEC [--plan | --draft-revision] [--rehearse [--rehearsal-scale wiring]] [--fresh] [--backend local|URL] [--runs-dir DIR]
       [--exposure embedded|production]

Exit codes: 0 the run reached a decision, 1 a gate failed (RESULT says which and why),
2 bad input (spec, plan file, backend) or a run of this spec is in progress in another process, or a server the
run starts itself did not answer before its claim (flows.startup), or what the run stands on went away
mid-run (its directory deleted, its Prefect server lost: flows.run_guard),
3 the run crashed (a bug; see the log), 4 capacity blocked (no decision; running the same command again resumes),
128+N interrupted by signal N (the record says so; running the same command again resumes).
The start-up machinery (preconditions, servers, background imports, the claim, the flow under its guards) is
flows.startup; this module parses the arguments and maps what became of the run to its exit code.
`--plan` prints the execution plan as JSON and contacts no service (Prefect is not even imported).
`--rehearse` runs the spec as written plus its revision file at rehearsal scale on the embedded
backend (experiment.contract.rehearsal); the record is marked as a rehearsal.
Re-running a spec whose newest run finished prints that run's outcome and exits with its code at
once, without Prefect or any service; `--fresh` starts a new replicate instead.
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import ExitStack
from pathlib import Path

from experiment.contract.plan import build_plan
from experiment.contract.rehearsal import SCALES as REHEARSAL_SCALES
from experiment.contract.run_layout import plots_dir, result_path
from experiment.contract.spec import SpecError, load_spec
from experiment.contract.text import printable
from experiment.report.summary import RESULT_MARKER, closing_lines, finished_message
from experiment.run.store import RunStore, storage_failure
from experiment.service.capacity import ServiceFailedMidRun
from experiment.service.target import EXPOSURES, ServiceConfigError, ServiceTarget
from flows.interrupts import stop_reason
from flows.lifetime import exit_process, survive_closed_console
from flows.startup import (CRASHED, FINISHED, FLOW_ENDED, INTERRUPTED, Claimed, RunRequest, Started,
                           embedded_backend_started_here, run_flow, start_run)

EXIT_DECISION, EXIT_GATE_FAILED, EXIT_BAD_INPUT, EXIT_CRASHED, EXIT_CAPACITY_BLOCKED = 0, 1, 2, 3, 4


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m flows.run", description="Run an experiment spec through the gated flow.")
    parser.add_argument("spec", help="path to a spec JSON file (a companion <name>.plan.json beside it is read too)")
    parser.add_argument("--plan", action="store_true", help="print the execution plan as JSON and exit; contacts no service")
    parser.add_argument("--backend", default="local", help="'local' (embedded, or $TINKER_BASE_URL when set) or a service URL")
    parser.add_argument("--runs-dir", default=None, help="where run directories go (default $RX_RUNS_DIR or ./runs)")
    parser.add_argument("--exposure", choices=EXPOSURES, default=None,
                        help="what the service exposes: the embedded backend this run starts answers as the production "
                             "service does under 'production' (recorded in the run); --plan predicts grades for it "
                             "(default: embedded for the local backend, production for a service URL)")
    parser.add_argument("--rehearse", action="store_true",
                        help="run the spec and its revision file at rehearsal scale on the embedded backend (minutes)")
    parser.add_argument("--rehearsal-scale", choices=REHEARSAL_SCALES, default="standard",
                        help="with --rehearse: 'standard' (default) or 'wiring', the smallest run through every gate "
                             "and record, whose verdict means nothing (end-to-end tests)")
    parser.add_argument("--draft-revision", action="store_true",
                        help="write the skeleton of the spec's revision file (<name>.plan.json, or <name>.plan.draft.json "
                             "beside an existing one): every entry the spec leaves to add or pin, with its reason "
                             "(docs/new-spec.md); contacts no service")
    parser.add_argument("--overlap-gates", action="store_true",
                        help="run independent gates side by side (the preflights that read only the initial state; the "
                             "feasibility pilot beside the activation gate); opt-in: it departs from the contract's "
                             "listed order. --plan states what a failing gate could waste under it")
    parser.add_argument("--fresh", action="store_true",
                        help="start a new replicate even if a run of this spec already finished")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    imports = ExitStack()  # holds imports_frozen from the flow's imports' start to the flow's; left on every way out
    with imports:
        return _main(argv, imports)


def _main(argv: list[str] | None, imports: ExitStack) -> int:
    """Intake (the spec parsed and planned once: bad input is exit 2), --plan and --draft-revision, then the run's
    start (flows.startup) and its exit code."""
    args = _parse_args(argv)
    if args.draft_revision:
        return draft_revision(args.spec)
    try:
        if args.rehearse and args.backend != "local":
            raise ServiceConfigError("--rehearse runs on the embedded backend: drop --backend; to rehearse against "
                                     "an embedded backend served on its own (python -m embedded_tinker serve --port "
                                     "N), set TINKER_BASE_URL=http://127.0.0.1:N and TINKER_API_KEY=tml-local instead")
        if args.rehearsal_scale != "standard" and not args.rehearse:
            raise SpecError("rehearsal_scale", "--rehearsal-scale goes with --rehearse")
        spec = load_spec(args.spec, rehearse=args.rehearse, rehearsal_scale=args.rehearsal_scale)
        plan = build_plan(spec)
        ServiceTarget.from_backend(args.backend, exposure=args.exposure or "embedded")
    except (SpecError, ServiceConfigError) as err:
        print(err, file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.plan:
        from experiment.grading.predict import predict_grades, predicted_stop
        from experiment.run.schedule_outlook import gate_schedule_outlook

        exposure = args.exposure or ("embedded" if embedded_backend_started_here(args.backend) else "production")
        stop = predicted_stop(plan, exposure)
        print(json.dumps({**plan.to_dict(), "exposure": exposure,
                          "predicted_stop": {"gate": stop[0], "reason": stop[1]} if stop else None,
                          "predicted_grades": predict_grades(plan, exposure),
                          "gate_schedule": gate_schedule_outlook(plan, args.overlap_gates, args.runs_dir)}, indent=2))
        return EXIT_DECISION
    request = RunRequest(args.spec, spec, plan, args.backend, args.runs_dir, args.exposure or "embedded",
                         args.rehearse, args.rehearsal_scale, args.fresh, args.overlap_gates)
    started = start_run(request, imports)  # the preconditions and the one claim (flows.startup)
    if isinstance(started, Claimed):
        started = run_flow(request, started, imports)  # the flow, under its guards
    return exit_code_of(started)


def exit_code_of(started: Started) -> int:
    """The exit code of a run's start (flows.startup said what there was to say), the closing lines of a run
    that finished or whose flow ended."""
    if started.outcome == FINISHED:
        return answer_finished(started.store)
    if started.outcome == FLOW_ENDED:
        return exit_code_for(started.state)
    if started.outcome == INTERRUPTED:
        return 128 + started.signal
    return EXIT_CRASHED if started.outcome == CRASHED else EXIT_BAD_INPUT  # REFUSED


def answer_finished(store: RunStore) -> int:
    """Print a finished run's outcome and return its exit code; nothing is run again (its pictures are drawn
    when they are missing: draw_missing_pictures)."""
    result = store.read_result()
    draw_missing_pictures(store.run_dir)
    print(printable(finished_message(store.run_id, result_path(store.run_dir), result)))
    if result.get("summary"):
        print(printable(str(result["summary"])))
    return EXIT_DECISION if result.get("status") == "succeeded" else EXIT_GATE_FAILED


def draw_missing_pictures(run_dir: Path) -> None:
    """Draw a finished run's pictures when its plots/ holds none: the flow draws them after its last gate, so a
    run killed between its decision and the drawing (kill -9) had none, and answering it never drew them.
    A run with its pictures is not touched. Drawing is never the reason an answer fails: a problem is one line."""
    plots = plots_dir(run_dir)
    if plots.is_dir() and any(plots.glob("*.png")):
        return
    try:
        from experiment.report.plots import write_run_pictures  # matplotlib, only for a run missing its pictures

        write_run_pictures(run_dir)
    except Exception as err:  # noqa: BLE001 - e.g. a read-only runs dir: the answer stands without pictures
        print(printable(f"could not draw the pictures of {run_dir.name}: {type(err).__name__}: {err}".splitlines()[0]),
              file=sys.stderr)


def draft_revision(spec_path: str) -> int:
    """--draft-revision: write the revision-file skeleton (experiment.contract.draft) and list its items."""
    from experiment.contract.draft import write_draft

    try:
        target, items = write_draft(Path(spec_path))
    except (SpecError, OSError) as err:
        print(str(err).splitlines()[0] if str(err) else type(err).__name__, file=sys.stderr)
        return EXIT_BAD_INPUT
    if target is None:
        print(f"{spec_path}: nothing to add or pin; its revision file covers what the pipeline needs")
        return EXIT_DECISION
    print(f"wrote {target} ({len(items)} entries to add or pin):")
    for item in items:
        print(f"  {item['action']} {item['field']}: {item['why']}")
    if not any(item["action"] in ("check", "fix") for item in items):  # experiment.contract.draft.plan_check passed
        print("taken as proposed, the draft passes --plan and --plan --rehearse --rehearsal-scale wiring; confirm "
              "each entry, then delete draft_items")
    return EXIT_DECISION


def exit_code_for(state) -> int:
    """Map the flow's final state to the CLI exit code and print the closing lines: verdict (or why
    there is none), effect against the margin in words, grades, and the paths of RESULT and plots."""
    if state.name == "RunInProgress":
        print(state.message, file=sys.stderr)
        return EXIT_BAD_INPUT
    result_file = result_path_in(state.message or "")
    if state.name == "CapacityBlocked":  # flows.requeue.capacity_blocked_state; no decision: the service had no capacity past the contract's limits
        print("\n".join(closing_lines_for(result_file)) if result_file else state.message or "capacity blocked")
        print(f"no decision: {state.message}; running the same command again resumes the run", file=sys.stderr)
        return EXIT_CAPACITY_BLOCKED
    if state.is_completed():
        print("\n".join(closing_lines_for(result_file)) if result_file else state.message or "run completed")
        return EXIT_DECISION
    outcome = state.result(raise_on_failure=False)
    run_dir = getattr(outcome, "run_dir", None)
    if run_dir and result_path(run_dir).is_file():
        result_file = result_path(run_dir)
    if result_file:
        print("\n".join(closing_lines_for(result_file)))
    if isinstance(outcome, ServiceFailedMidRun):  # the backend broke mid-run: as a backend refused at the start
        print(f"the run stopped: {outcome}; its record says so (failed, resumable): run the same command again "
              "once the service answers", file=sys.stderr)
        return EXIT_BAD_INPUT
    if isinstance(outcome, BaseException) and storage_failure(outcome):
        print(f"the run {stop_reason(outcome)} the same command to resume it", file=sys.stderr)
        return EXIT_CRASHED
    print(f"{state.name}: {outcome}", file=sys.stderr)
    if state.name == "GateFailed":
        return EXIT_GATE_FAILED
    if isinstance(outcome, (SpecError, ServiceConfigError)):
        return EXIT_BAD_INPUT
    return EXIT_CRASHED


def result_path_in(message: str) -> Path | None:
    """The RESULT path the flow names in its final message ("...; RESULT in <path>")."""
    if RESULT_MARKER not in message:
        return None
    path = Path(message.rsplit(RESULT_MARKER, 1)[1].strip())
    return path if path.is_file() else None


def closing_lines_for(result_path: Path) -> list[str]:
    try:
        result = json.loads(result_path.read_text())
    except (OSError, json.JSONDecodeError):
        return [f"{RESULT_MARKER}{result_path}"]
    return closing_lines(result, result_path.parent)


if __name__ == "__main__":
    survive_closed_console()
    exit_process(main())
