"""CLI: python -m flows.run SPEC [--plan | --draft-revision] [--rehearse [--rehearsal-scale wiring]] [--fresh] [--backend local|URL] [--runs-dir DIR]
       [--exposure embedded|production]

Exit codes: 0 the run reached a decision, 1 a gate failed (RESULT says which and why),
2 bad input (spec, plan file, backend) or a run of this spec is in progress in another process, or a server the
run starts itself did not answer before its claim (servers_ready_before_claim), or what the run stands on went away
mid-run (its directory deleted, its Prefect server lost: flows.run_guard),
3 the run crashed (a bug; see the log).
`--plan` prints the execution plan as JSON and contacts no service (Prefect is not even imported).
`--rehearse` runs the spec as written plus its revision file at rehearsal scale on the embedded
backend (experiment.contract.rehearsal); the record is marked as a rehearsal.
Re-running a spec whose newest run finished prints that run's outcome and exits with its code at
once, without Prefect or any service; `--fresh` starts a new replicate instead.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import socket
import sys
import threading
import time
import urllib.request
from contextlib import ExitStack
from pathlib import Path
from typing import Callable
from urllib.parse import urlsplit

from experiment.contract.plan import build_plan
from experiment.contract.verdict import GATE_ORDER
from experiment.report.summary import RESULT_MARKER, closing_lines, finished_message
from experiment.run.capacity import ServiceFailedMidRun
from experiment.run.config import embedded_checkpoint_dir
from experiment.run.data import unreadable_data
from experiment.run.service import (EMBEDDED_MODELS, EXPOSURES, ServiceConfigError, ServiceTarget, early_embedded_problem,
                                    embedded_serves, not_served, start_embedded_early, stop_early_embedded)
from flows.backend_url import BACKEND_URL_ENV, public_backend_url
from flows.interrupts import interrupting_signal, interrupts_raised, stop_reason
from flows.run_guard import RunGuard, guarded_api_url, server_home_of
from flows.lifetime import (TemporaryPrefectServer, exit_process, imports_frozen, startup_budget_s, startup_progress_line,
                            survive_closed_console)
from experiment.contract.rehearsal import SCALES as REHEARSAL_SCALES
from experiment.contract.spec import SpecError, load_spec
from experiment.contract.text import printable
from experiment.run.store import STALE, RunStore, StoreError, storage_failure, writable_runs_dir

EXIT_DECISION, EXIT_GATE_FAILED, EXIT_BAD_INPUT, EXIT_CRASHED, EXIT_CAPACITY_BLOCKED = 0, 1, 2, 3, 4
# What the CLI imports while the temporary Prefect server boots, after the flow's module (which imports the gate
# table, experiment.gates, and with it every family's steps: the cookbook's environments and recipes): the module
# the SDK's get_tokenizer() loads its tokenizer with (transformers' AutoTokenizer, 4.8 s on 2 cores).
IMPORTED_WHILE_PREFECT_BOOTS = ("transformers.models.auto.tokenization_auto",)
# What a run imports in the background from before the preconditions of its claim (BackgroundImports):
# Prefect's settings first (the preconditions read them), the flow's module (Prefect, torch, the SDK), then
# what the first gates import.
PREFECT_SETTINGS_MODULE, FLOW_MODULE = "prefect.settings", "flows.experiment_flow"
FLOW_IMPORTS = (PREFECT_SETTINGS_MODULE, FLOW_MODULE, *IMPORTED_WHILE_PREFECT_BOOTS)
CONNECT_BUDGET_S = 20.0  # a backend refusing connections this long fails the run at start (exit 2)
ANSWER_BUDGET_S = 30.0  # a remote backend must answer get_server_capabilities within this (a hang: exit 2)
PREFECT_CONNECT_BUDGET_S = 10.0  # a configured Prefect server not answering this long: exit 2, before any claim


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
    """Long because: the CLI's start-up order (preconditions before the claim, servers side by side, background imports,
    exit codes) is what the function is about; each step is commented where it happens.
    """
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
    exposure = args.exposure or "embedded"
    try:
        # A finished run is answered at once, before any precondition: no service, no Prefect, no write.
        finished = None if args.fresh else RunStore.finished_run(args.runs_dir, plan.spec_sha256, exposure)
        if finished is not None:
            return answer_finished(finished)
        # Every precondition before the claim: a refused run leaves no run directory and no index row.
        runs_dir = writable_runs_dir(args.runs_dir)  # RunsDirError (a StoreError) when it is a URL or may not be written
        # a run of this spec in progress in another process is refused at once, before anything is imported or
        # started for it (the claim decides, under its lock; this spares the wait)
        refusal = None if args.fresh else RunStore.in_progress_refusal(runs_dir, plan.spec_sha256, exposure)
        if refusal:
            print(printable(refusal), file=sys.stderr)
            return EXIT_BAD_INPUT
        # What the flow imports (Prefect, torch, the SDK: 9-37 s on a loaded machine) is imported from here on,
        # beside the preconditions below, instead of after the claim with the run's service waiting on it.
        imports.enter_context(imports_frozen())  # the run's garbage collections skip what is imported from here
        flow_imports = BackgroundImports(FLOW_IMPORTS)
        # however main ends (a refusal, a signal), the process does not exit mid-import: torch's teardown under a
        # thread still importing it aborts the interpreter (SIGABRT) instead of exiting with main's code; a run
        # that ends before its flow starts waits only for the module in progress
        imports.callback(flow_imports.finish)
        problem = unreachable_backend(args.backend, CONNECT_BUDGET_S)
        # what follows reads Prefect's settings, imports httpx or starts the backend (its launcher imports httpx
        # and rich): after the thread has imported them
        flow_imports.wait_for(PREFECT_SETTINGS_MODULE)
        if embedded_backend_started_here(args.backend) and not problem:
            start_embedded_early(embedded_checkpoint_dir(runs_dir), exposure)  # boots beside the checks and imports
        if os.environ.get("PREFECT_API_URL") and not problem:
            # A Prefect server is up (as a deployment has one): nothing boots after the claim to hide the imports
            # behind, so the run is claimed once they are done, as a deployment's flow process claims it. (With no
            # server, the imports go on beside the temporary server's start, before the claim.)
            flow_imports.join()
        required = None if args.rehearse else plan.base_model  # outside a rehearsal the served model is the spec's
        problem = (problem or unserved_on_embedded(args.backend, required)
                   or ServiceTarget.from_backend(args.backend, exposure).answer_problem(ANSWER_BUDGET_S, required)
                   or unreadable_data(spec, args.rehearse) or unreachable_prefect_server())
        if not problem:
            # the temporary Prefect server and the embedded backend answer before the claim, or nothing is claimed
            prefect_server, problem = servers_ready_before_claim(args.backend, exposure, runs_dir)
        if problem:
            stop_early_embedded()
            flow_imports.finish()  # after the module in progress: a refused run does not wait for the rest
            print(printable(problem), file=sys.stderr)
            return EXIT_BAD_INPUT
        # Claim the run before the flow starts: this process then holds the run's lock and the flow's own claim
        # finds it (re-entrant); a live run is refused here.
        store, how = RunStore.claim(args.runs_dir, spec, plan, fresh=args.fresh, exposure=exposure)
    except (StoreError, ServiceConfigError) as err:  # RunInProgress, a runs dir that is a URL or not writable,
        stop_early_embedded()
        print(printable(str(err)), file=sys.stderr)   # a damaged record; a missing credential
        return EXIT_BAD_INPUT
    if how == "finished":  # it finished between the look and the claim
        stop_early_embedded()
        return answer_finished(store)
    # Credentials never become flow parameters (Prefect stores and shows them): the flow gets the URL
    # without them and finds the full one in this process's environment.
    backend = hide_backend_credentials(args.backend)

    try:
        with interrupts_raised():  # SIGTERM as well as SIGINT unwinds the run, so its record says so
            with imports:  # (imports_frozen) the run's garbage collections skip what is imported until here
                prefect_ready = start_servers_early(backend, exposure, store, flow_imports, prefect_server)
                flow_imports.wait_for(FLOW_MODULE)  # imported in the background, not beside it
                from flows.experiment_flow import run_experiment
                prefect_ready()
            # its directory deleted, or its Prefect server lost, mid-run: one line, exit 2, no hang (flows.run_guard)
            with RunGuard(store, plan, guarded_api_url(prefect_server), server_home_of(prefect_server)):
                state = run_experiment.with_options(flow_run_name=store.run_id)(  # named after the run from its first log line
                    args.spec, backend=backend, runs_dir=args.runs_dir, rehearse=args.rehearse,
                    rehearsal_scale=args.rehearsal_scale,
                    exposure=exposure,
                    spec=spec,  # parsed once, here: the flow does not read the file again
                    overlap_gates=args.overlap_gates,
                    return_state=True)  # not fresh: the claimed run (a new replicate if asked) is the one
        # A flow that ended without writing its outcome (it crashed outside any gate) leaves no run "running".
        store.settle_unfinished(plan, f"the flow ended {state.name} without an outcome: {state.message or ''}".strip())
    except Exception as err:  # Prefect itself failed (e.g. its temporary server did not start)
        store.settle_unfinished(plan, stop_reason(err))
        print(f"run {store.run_id} {stop_reason(err)}" if storage_failure(err) else
              f"run crashed before finishing: {type(err).__name__}: {err}", file=sys.stderr)
        return EXIT_CRASHED
    except BaseException as err:  # SIGINT or SIGTERM as RunInterrupted (or as Prefect's TerminationSignal)
        number = interrupting_signal(err)
        if number is None:
            raise
        store.settle_unfinished(plan, stop_reason(err))
        print(f"run {store.run_id} {stop_reason(err)}; its record says so, and running the same command again "
              "resumes it", file=sys.stderr)
        return 128 + number
    finally:
        stop_early_embedded()  # an early-started backend that no run took over
        store.release()
        say_if_left_running(store)
    return exit_code_for(state)


def say_if_left_running(store: RunStore) -> None:
    """After the run's process let go of it: one line when its record still says "running" (a full disk refused
    even the failure marker). `python -m flows.runs` shows such a run as stale; running the command again resumes it."""
    try:
        left_running = store.read_result().get("status") == "running"
    except Exception:  # noqa: BLE001 - an unreadable record is reported where it is read next
        return
    if left_running:
        print(f"run {store.run_id}: its record could not be updated and still says running; `python -m flows.runs` "
              f"shows it as {STALE}, and running the same command again resumes it", file=sys.stderr)


def answer_finished(store: RunStore) -> int:
    """Print a finished run's outcome and return its exit code; nothing is run again (its pictures are drawn
    when they are missing: draw_missing_pictures)."""
    result = store.read_result()
    draw_missing_pictures(store.run_dir)
    print(printable(finished_message(store.run_id, store.run_dir / "result.json", result)))
    if result.get("summary"):
        print(printable(str(result["summary"])))
    return EXIT_DECISION if result.get("status") == "succeeded" else EXIT_GATE_FAILED


def draw_missing_pictures(run_dir: Path) -> None:
    """Draw a finished run's pictures when its plots/ holds none: the flow draws them after its last gate, so a
    run killed between its decision and the drawing (kill -9) had none, and answering it never drew them.
    A run with its pictures is not touched. Drawing is never the reason an answer fails: a problem is one line."""
    plots = run_dir / "plots"
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


def servers_ready_before_claim(backend: str, exposure: str, runs_dir: Path) -> tuple[TemporaryPrefectServer | None, str | None]:
    """(the temporary Prefect server, None), or (None, one line) when a server the run starts itself did not answer.

    Side by side, while the flow's imports go on: a temporary Prefect server, started here (no PREFECT_API_URL
    configured; flows.lifetime, with its own database), and the embedded backend (the local backend without
    TINKER_BASE_URL), started beside the checks before. Both must answer before the run is claimed: a server that is slow or fails to start is a
    precondition, refused with nothing left behind, not a crash after the claim. Their start-up budget grows with
    the machine's load (flows.lifetime.startup_budget_s; $PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS, when set,
    is used as given), with a line on stderr every 30 s while they start."""
    explicit = os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS")
    budget_s = float(explicit) if explicit else startup_budget_s()
    started = time.monotonic()
    embedded = embedded_backend_started_here(backend)  # started beside the checks before (start_embedded_early)
    from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_EPHEMERAL_ENABLED

    server = None
    if not PREFECT_API_URL.value() and PREFECT_SERVER_EPHEMERAL_ENABLED.value():
        server = TemporaryPrefectServer(budget_s, progress=say).start()
        try:
            server.wait_until_healthy()
        except RuntimeError as err:
            server.stop()
            return None, f"{err}: nothing was claimed; run the same command again (when the machine is less busy)"
    if embedded:
        problem = early_embedded_problem(
            embedded_checkpoint_dir(runs_dir), exposure, max(0.0, budget_s - (time.monotonic() - started)),
            progress=lambda waited: say(startup_progress_line("the embedded backend", waited, budget_s)))
        if problem:
            if server is not None:
                server.stop()
            return None, problem
    return server, None


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def start_servers_early(backend: str, exposure: str, store: RunStore, flow_imports: BackgroundImports,
                        prefect_server: TemporaryPrefectServer | None = None):
    """After the claim: hand the flow the servers started before it (servers_ready_before_claim). The flow's
    ServiceTarget takes the embedded server over (same checkpoint dir and exposure as on demand; started here when
    it was not yet). Returns a function that ends the background imports after the module in progress (the gates
    import the rest themselves) and makes the temporary Prefect server, if any, this process's PREFECT_API_URL."""
    if embedded_backend_started_here(backend):
        start_embedded_early(embedded_checkpoint_dir(store.run_dir.parent), exposure)
    if prefect_server is None:  # a configured server (or none allowed): the flow's imports were done before the claim
        return flow_imports.finish

    def ready() -> None:
        flow_imports.finish()
        prefect_server.use()

    return ready


def unserved_on_embedded(backend: str, model: str | None) -> str | None:
    """One line when a run outside a rehearsal asks the embedded backend it starts for a model it does not serve."""
    if model is None or not embedded_backend_started_here(backend) or embedded_serves(model):
        return None
    return not_served(model, "the embedded backend", EMBEDDED_MODELS)


def embedded_backend_started_here(backend: str) -> bool:
    """Whether this run's service is the embedded backend it starts itself (local, no TINKER_BASE_URL)."""
    return backend == "local" and not os.environ.get("TINKER_BASE_URL")


class BackgroundImports:
    """`modules` imported one after another in a daemon thread, each only while `wanted()` (asked before each
    module; the main thread may replace it). A module that fails here is imported again, and fails visibly,
    where the code that needs it imports it.

    One thread imports at a time: while this one runs, the main thread imports none of these modules itself.
    It waits for one to be imported here (`wait_for`), for all (`join`), or for the one in progress (`finish`).
    Two threads importing into one package at once hand each other partially initialised modules (Prefect's
    settings imported in the main thread beside the flow's import here printed "Failed to initialize plugins:
    cannot import name 'SettingsContext' from partially initialized module 'prefect.context'"); the main
    thread waiting on a module's import cannot deadlock, as it holds no import lock while it waits."""

    def __init__(self, modules: tuple[str, ...], wanted: Callable[[], bool] = lambda: True):
        self.modules = modules
        self.wanted = wanted
        self._imported = {module: threading.Event() for module in modules}
        self._thread = threading.Thread(target=self._run, name="background-imports", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for module in self.modules:
                if not self.wanted():
                    return
                try:
                    importlib.import_module(module)
                except Exception:  # noqa: BLE001 - see the class's doc
                    pass
                self._imported[module].set()
        finally:  # what was not imported here, whoever waits for it imports itself
            for imported in self._imported.values():
                imported.set()

    def wait_for(self, module: str) -> None:
        """Until `module` is imported here, or will not be (the thread stopped before it; not one of `modules`)."""
        if module in self._imported:
            self._imported[module].wait()

    def join(self) -> None:
        """Until every module is imported, or the thread stopped (`wanted()` said no)."""
        self._thread.join()

    def finish(self) -> None:
        """No module after the one in progress; until that one is imported."""
        self.wanted = lambda: False
        self._thread.join()


def exit_code_for(state) -> int:
    """Map the flow's final state to the CLI exit code and print the closing lines: verdict (or why
    there is none), effect against the margin in words, grades, and the paths of RESULT and plots."""
    if state.name == "RunInProgress":
        print(state.message, file=sys.stderr)
        return EXIT_BAD_INPUT
    result_path = result_path_in(state.message or "")
    if state.name == "CapacityBlocked":  # flows.requeue.capacity_blocked_state; no decision: the service had no capacity past the contract's limits
        print("\n".join(closing_lines_for(result_path)) if result_path else state.message or "capacity blocked")
        print(f"no decision: {state.message}; running the same command again resumes the run", file=sys.stderr)
        return EXIT_CAPACITY_BLOCKED
    if state.is_completed():
        print("\n".join(closing_lines_for(result_path)) if result_path else state.message or "run completed")
        return EXIT_DECISION
    outcome = state.result(raise_on_failure=False)
    run_dir = getattr(outcome, "run_dir", None)
    if run_dir and (Path(run_dir) / "result.json").is_file():
        result_path = Path(run_dir) / "result.json"
    if result_path:
        print("\n".join(closing_lines_for(result_path)))
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


def hide_backend_credentials(backend: str) -> str:
    """The backend as a flow parameter: user:password, query and fragment removed. The full URL stays
    in this process's environment (BACKEND_URL_ENV), where the flow finds it again."""
    if backend == "local":
        return backend
    public = public_backend_url(backend)
    if public != backend:
        os.environ[BACKEND_URL_ENV] = backend
    return public


def unreachable_prefect_server(budget_s: float | None = None) -> str | None:
    """One line when PREFECT_API_URL names a Prefect server that does not answer its health check, else None
    (no PREFECT_API_URL: the run starts its own temporary server). Checked before a run is claimed."""
    from prefect.settings import PREFECT_API_URL

    url = PREFECT_API_URL.value()
    if not url:
        return None
    budget_s = PREFECT_CONNECT_BUDGET_S if budget_s is None else budget_s
    health = url.rstrip("/") + "/health"
    deadline = time.monotonic() + budget_s
    while True:
        try:
            with urllib.request.urlopen(health, timeout=5) as answer:
                if answer.status == 200:
                    return None
                last = f"HTTP {answer.status}"
        except (OSError, ValueError) as err:
            last = getattr(getattr(err, "reason", None), "strerror", None) or str(getattr(err, "reason", "")) or type(err).__name__
        if time.monotonic() >= deadline:
            break
        time.sleep(1.0)
    return (f"the Prefect server at PREFECT_API_URL={public_backend_url(url)} does not answer ({last}, for "
            f"{budget_s:.0f} s): start it (prefect server start), or unset PREFECT_API_URL so the run starts its own")


def unreachable_backend(backend: str, budget_s: float = CONNECT_BUDGET_S) -> str | None:
    """One line when a remote backend refuses connections (not a capacity problem), else None.

    Tries a TCP connection for up to `budget_s` seconds (a service that is just starting gets that
    long); the embedded backend is started by the run itself and is not checked."""
    url = os.environ.get("TINKER_BASE_URL") if backend == "local" else backend
    if not url:
        return None
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    deadline = time.monotonic() + budget_s
    while True:
        try:
            with socket.create_connection((parts.hostname, port), timeout=5):
                return None
        except OSError as err:
            last = err
        if time.monotonic() >= deadline:
            break
        time.sleep(1.0)
    reason = last.strerror or type(last).__name__
    return (f"backend {public_backend_url(url)} is unreachable ({reason}, for {budget_s:.0f} s): start the "
            "service or pass another --backend; this is not a capacity refusal")


if __name__ == "__main__":
    survive_closed_console()
    exit_process(main())
