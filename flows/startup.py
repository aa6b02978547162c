"""How a CLI run starts, in one place: the start-up machinery of `python -m flows.run` (which keeps its argument
parsing and exit codes).

A run's start, in order (start_run up to the claim, then run_flow):
1. a finished run of the spec is answered at once (no service, no Prefect, no write); a run of the spec in progress
   in another process is refused before anything is started for it;
2. what the flow imports (Prefect, torch, the SDK: 9-37 s on a loaded machine) is imported in the background
   (BackgroundImports) beside the preconditions: the backend answers (unreachable_backend, answer_problem) and
   serves the spec's model, the data can be read, a configured Prefect server answers;
3. the servers the run starts itself answer before the claim, side by side (servers_ready_before_claim): the
   embedded backend, started early (EarlyEmbedded), and a temporary Prefect server (flows.lifetime);
4. the run is prepared once (experiment.run.prepare.prepare_run: plan, claim, configuration) and handed to the
   flow as its `prepared` parameter, with the early-started backend inside its service target: nothing goes
   through a module global;
5. the flow runs under its guards: SIGINT/SIGTERM unwind it (flows.interrupts), its directory deleted or its
   Prefect server lost end it (flows.run_guard); a run that ended without an outcome is settled.
Every line to say is said here, where it happens; what became of the start (Started) is mapped to the exit code
by flows.run.
"""

from __future__ import annotations

import importlib
import os
import socket
import sys
import threading
import time
import urllib.request
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlsplit

from experiment.contract.plan import ExecutionPlan
from experiment.contract.spec import Spec
from experiment.contract.text import printable
from experiment.data import unreadable_data
from experiment.run.config import RunConfig, embedded_checkpoint_dir
from experiment.run.prepare import PreparedRun, prepare_run
from experiment.run.store import STALE, RunStore, StoreError, storage_failure, writable_runs_dir
from experiment.service.target import EMBEDDED_MODELS, EarlyEmbedded, ServiceTarget, embedded_serves, not_served
from flows.backend_url import BACKEND_URL_ENV, public_backend_url
from flows.interrupts import interrupting_signal, interrupts_raised, stop_reason
from flows.lifetime import TemporaryPrefectServer, imports_frozen, startup_budget_s, startup_progress_line
from flows.run_guard import RunGuard, guarded_api_url, server_home_of

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

# What became of a run's start (Started.outcome)
REFUSED = "refused"  # bad input or a precondition: one line said, nothing claimed
FINISHED = "finished"  # the spec's newest run finished: answered, nothing run
FLOW_ENDED = "flow_ended"  # the flow ran and ended in Started.state
CRASHED = "crashed"  # Prefect itself failed (e.g. its temporary server did not start): one line said
INTERRUPTED = "interrupted"  # SIGINT or SIGTERM (Started.signal): one line said, the record says so


@dataclass(frozen=True)
class RunRequest:
    """What the CLI was asked to run: the spec as parsed (with `rehearse` and `rehearsal_scale` applied), its plan
    (built once, by the CLI's intake), and its options."""

    spec_path: str
    spec: Spec
    plan: ExecutionPlan
    backend: str  # as given: may carry credentials, which never become a flow parameter
    runs_dir: str | None
    exposure: str
    rehearse: bool
    rehearsal_scale: str
    fresh: bool
    overlap_gates: bool = False  # --overlap-gates: independent gates side by side (experiment.contract.schedule)


@dataclass(frozen=True)
class Claimed:
    """A run claimed for the CLI, its flow still to run (run_flow): what was started for it before the claim."""

    prepared: PreparedRun
    flow_imports: BackgroundImports
    prefect_server: TemporaryPrefectServer | None
    early: EarlyEmbedded | None  # the embedded backend started early: stopped unless the run took it over


@dataclass(frozen=True)
class Started:
    """What became of a run's start (one of the outcomes above); flows.run maps it to the exit code."""

    outcome: str
    store: RunStore | None = None  # FINISHED: the run to answer with
    state: Any = None  # FLOW_ENDED: the flow's final state
    signal: int | None = None  # INTERRUPTED: the signal's number


def refused(line: str) -> Started:
    print(printable(line), file=sys.stderr)
    return Started(REFUSED)


def start_run(request: RunRequest, imports: ExitStack) -> Claimed | Started:
    """Start a CLI run up to its claim (the module's doc says in what order): the run Claimed, its flow to run next
    (run_flow), or how it ended before (Started: refused, or finished). `imports` holds imports_frozen from the
    flow's imports' start to the flow's; the caller leaves it on every way out."""
    early: EarlyEmbedded | None = None  # the embedded backend started ahead of the run, if it is one
    try:
        # A finished run is answered at once, before any precondition: no service, no Prefect, no write.
        finished = None if request.fresh else RunStore.finished_run(request.runs_dir, request.plan.spec_sha256,
                                                                    request.exposure)
        if finished is not None:
            return Started(FINISHED, store=finished)
        # Every precondition before the claim: a refused run leaves no run directory and no index row.
        runs_dir = writable_runs_dir(request.runs_dir)  # RunsDirError (a StoreError): a URL, or may not be written
        # a run of this spec in progress in another process is refused at once, before anything is imported or
        # started for it (the claim decides, under its lock; this spares the wait)
        refusal = None if request.fresh else RunStore.in_progress_refusal(runs_dir, request.plan.spec_sha256,
                                                                          request.exposure)
        if refusal:
            return refused(refusal)
        flow_imports = start_flow_imports(imports)
        early, prefect_server, problem = checked_before_the_claim(request, runs_dir, flow_imports)
        if problem:
            stop_early_embedded(early)
            flow_imports.finish()  # after the module in progress: a refused run does not wait for the rest
            return refused(problem)
        # Credentials never become flow parameters (Prefect stores and shows them): the flow gets the URL
        # without them, and the service target in its prepared run the full one.
        config = RunConfig.compose(hide_backend_credentials(request.backend), request.backend, request.runs_dir,
                                   request.exposure, early_embedded=early)
        # The one claim: this process then holds the run's lock; a live run is refused here.
        prepared = prepare_run(request.spec, config, fresh=request.fresh, plan=request.plan)
    except (StoreError, ValueError) as err:  # RunInProgress, a runs dir that is a URL or not writable, a damaged
        stop_early_embedded(early)  # record; a missing credential or a bad capacity setting (ServiceConfigError,
        return refused(str(err))  # ValueError)
    if prepared.how == "finished":  # it finished between the look and the claim
        stop_early_embedded(early)
        return Started(FINISHED, store=prepared.store)
    return Claimed(prepared, flow_imports, prefect_server, early)


def start_flow_imports(imports: ExitStack) -> BackgroundImports:
    """What the flow imports is imported from here on, beside the preconditions, instead of after the claim with
    the run's service waiting on it."""
    imports.enter_context(imports_frozen())  # the run's garbage collections skip what is imported from here
    flow_imports = BackgroundImports(FLOW_IMPORTS)
    # however the run ends (a refusal, a signal), the process does not exit mid-import: torch's teardown under a
    # thread still importing it aborts the interpreter (SIGABRT) instead of exiting with main's code; a run
    # that ends before its flow starts waits only for the module in progress
    imports.callback(flow_imports.finish)
    return flow_imports


def checked_before_the_claim(request: RunRequest, runs_dir: Path, flow_imports: BackgroundImports
                             ) -> tuple[EarlyEmbedded | None, TemporaryPrefectServer | None, str | None]:
    """(the embedded backend started early, the temporary Prefect server, None), or a problem's one line last:
    the preconditions of the claim, checked while the flow's imports go on and the embedded backend boots."""
    backend, exposure, early, prefect_server = request.backend, request.exposure, None, None
    try:
        problem = unreachable_backend(backend, CONNECT_BUDGET_S)
        # what follows reads Prefect's settings, imports httpx or starts the backend (its launcher imports httpx
        # and rich): after the thread has imported them
        flow_imports.wait_for(PREFECT_SETTINGS_MODULE)
        if embedded_backend_started_here(backend) and not problem:
            early = start_embedded_early(embedded_checkpoint_dir(runs_dir), exposure)  # boots beside the checks
        if os.environ.get("PREFECT_API_URL") and not problem:
            # A Prefect server is up (as a deployment has one): nothing boots after the claim to hide the imports
            # behind, so the run is claimed once they are done, as a deployment's flow process claims it. (With no
            # server, the imports go on beside the temporary server's start, before the claim.)
            flow_imports.join()
        required = None if request.rehearse else request.plan.base_model  # outside a rehearsal: the spec's model
        problem = (problem or unserved_on_embedded(backend, required) or unreachable_prefect_server()
                   or remote_answer_problem(backend, exposure, required, flow_imports)
                   or unreadable_data(request.spec, request.rehearse))
        if not problem:
            # the temporary Prefect server and the embedded backend answer before the claim, or nothing is claimed
            prefect_server, problem = servers_ready_before_claim(early)
    except BaseException:  # e.g. a missing credential (ServiceConfigError): the refusal stops what was started
        stop_early_embedded(early)
        raise
    return early, prefect_server, problem


def remote_answer_problem(backend: str, exposure: str, required: str | None, flow_imports: BackgroundImports
                          ) -> str | None:
    """ServiceTarget.answer_problem for a remote backend (one plain get_server_capabilities; the embedded backend
    this run starts is not asked), holding a slot of the service-wide limit while it is in flight where the
    Prefect server named by PREFECT_API_URL holds that limit, as the run's own requests will. Sent outside a slot,
    it was one request more than the limit at a backend that deployment runs kept at the limit (issue 48)."""
    target = ServiceTarget.from_backend(backend, exposure)
    if target.kind == "embedded":
        return None
    from prefect.settings import PREFECT_API_URL

    if not PREFECT_API_URL.value():  # the run starts a temporary Prefect server: no limit to share
        return target.answer_problem(ANSWER_BUDGET_S, required)
    flow_imports.wait_for(FLOW_MODULE)  # one importer at a time (BackgroundImports): the flow's module imports it
    from flows.concurrency import service_slot_if_limited

    with service_slot_if_limited():
        return target.answer_problem(ANSWER_BUDGET_S, required)


def run_flow(request: RunRequest, claimed: Claimed, imports: ExitStack) -> Started:
    """The flow of a run this process claimed, under its guards; the run released however it ends."""
    prepared, prefect_server = claimed.prepared, claimed.prefect_server
    store, plan = prepared.store, prepared.plan
    try:
        with interrupts_raised():  # SIGTERM as well as SIGINT unwinds the run, so its record says so
            with imports:  # (imports_frozen) the run's garbage collections skip what is imported until here
                prefect_ready = start_servers_early(claimed.flow_imports, prefect_server)
                claimed.flow_imports.wait_for(FLOW_MODULE)  # imported in the background, not beside it
                from flows.experiment_flow import run_experiment
                prefect_ready()
            # its directory deleted, or its Prefect server lost, mid-run: one line, exit 2, no hang (flows.run_guard)
            with RunGuard(store, plan, guarded_api_url(prefect_server), server_home_of(prefect_server)):
                state = run_experiment.with_options(flow_run_name=store.run_id)(  # named after the run from its first log line
                    request.spec_path, backend=prepared.config.backend, runs_dir=request.runs_dir,
                    rehearse=request.rehearse, rehearsal_scale=request.rehearsal_scale, exposure=request.exposure,
                    prepared=prepared,  # parsed, planned and claimed once, here: the flow goes on with it
                    overlap_gates=request.overlap_gates, return_state=True)
        # A flow that ended without writing its outcome (it crashed outside any gate) leaves no run "running".
        store.settle_unfinished(plan, f"the flow ended {state.name} without an outcome: {state.message or ''}".strip())
    except Exception as err:  # Prefect itself failed (e.g. its temporary server did not start)
        store.settle_unfinished(plan, stop_reason(err))
        print(f"run {store.run_id} {stop_reason(err)}" if storage_failure(err) else
              f"run crashed before finishing: {type(err).__name__}: {err}", file=sys.stderr)
        return Started(CRASHED)
    except BaseException as err:  # SIGINT or SIGTERM as RunInterrupted (or as Prefect's TerminationSignal)
        number = interrupting_signal(err)
        if number is None:
            raise
        store.settle_unfinished(plan, stop_reason(err))
        print(f"run {store.run_id} {stop_reason(err)}; its record says so, and running the same command again "
              "resumes it", file=sys.stderr)
        return Started(INTERRUPTED, signal=number)
    finally:
        stop_early_embedded(claimed.early)  # an early-started backend that no run took over
        store.release()
        say_if_left_running(store)
    return Started(FLOW_ENDED, state=state)


def start_embedded_early(checkpoint_dir: str, exposure: str) -> EarlyEmbedded:
    """The embedded backend, started now in the background for a run whose checkpoints go to `checkpoint_dir`."""
    return EarlyEmbedded(checkpoint_dir, exposure)


def stop_early_embedded(early: EarlyEmbedded | None) -> None:
    """Stop the early-started backend unless the run took it over (or none was started)."""
    if early is not None:
        early.stop()


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


def servers_ready_before_claim(early: EarlyEmbedded | None) -> tuple[TemporaryPrefectServer | None, str | None]:
    """(the temporary Prefect server, None), or (None, one line) when a server the run starts itself did not answer.

    Side by side, while the flow's imports go on: a temporary Prefect server, started here (no PREFECT_API_URL
    configured; flows.lifetime, with its own database), and the embedded backend `early` (the local backend without
    TINKER_BASE_URL), started beside the checks before. Both must answer before the run is claimed: a server that is slow or fails to start is a
    precondition, refused with nothing left behind, not a crash after the claim. Their start-up budget grows with
    the machine's load (flows.lifetime.startup_budget_s; $PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS, when set,
    is used as given), with a line on stderr every 30 s while they start."""
    explicit = os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS")
    budget_s = float(explicit) if explicit else startup_budget_s()
    started = time.monotonic()
    from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_EPHEMERAL_ENABLED

    server = None
    if not PREFECT_API_URL.value() and PREFECT_SERVER_EPHEMERAL_ENABLED.value():
        server = TemporaryPrefectServer(budget_s, progress=say).start()
        try:
            server.wait_until_healthy()
        except RuntimeError as err:
            server.stop()
            return None, f"{err}: nothing was claimed; run the same command again (when the machine is less busy)"
    if early is not None:
        problem = early.problem(
            max(0.0, budget_s - (time.monotonic() - started)),
            progress=lambda waited: say(startup_progress_line("the embedded backend", waited, budget_s)))
        if problem:
            if server is not None:
                server.stop()
            return None, problem
    return server, None


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def start_servers_early(flow_imports: BackgroundImports, prefect_server: TemporaryPrefectServer | None = None
                        ) -> Callable[[], None]:
    """After the claim: a function that ends the background imports after the module in progress (the gates
    import the rest themselves) and makes the temporary Prefect server started before the claim
    (servers_ready_before_claim), if any, this process's PREFECT_API_URL. (The embedded backend started before the
    claim is in the prepared run's service target, which takes it over.)"""
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
