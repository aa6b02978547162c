"""CLI: --plan for every spec, exit codes 0/1/2, one-line errors with no traceback."""

from __future__ import annotations

import importlib.abc
import importlib.util
import inspect
import json
import os
import shutil
import subprocess
import sys
import threading

import pytest
from suite import FakeTinkerService, GS1_SPEC, REPO_ROOT, SELFGEN_SPEC, TRIMUON_SPEC

from flows.run import EXIT_BAD_INPUT, EXIT_CAPACITY_BLOCKED, EXIT_DECISION, exit_code_for, main
from flows.startup import FLOW_IMPORTS, IMPORTED_WHILE_PREFECT_BOOTS, BackgroundImports, start_servers_early


def _cli_env(env: dict | None = None) -> dict:
    """The environment of a CLI process whose Prefect settings do not come from this test session."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "TINKER_", "MODAL_", "RUNS_PROXY_"))}
    base["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
    return {**base, **(env or {})}


def _cli(*args: str, env: dict | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    """Run the CLI in a fresh process whose Prefect settings do not come from this test session."""
    return subprocess.run(
        [sys.executable, "-m", "flows.run", *args],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout, env=_cli_env(env),
    )


def _main(capsys, *args: str) -> subprocess.CompletedProcess:
    """The CLI's `main(argv)` in this process, its exit code, stdout and stderr as `_cli` gives them: what
    `python -m flows.run` runs, less its console guard and process exit, which one subprocess case of
    each kind below keeps (a subprocess costs about a second of CPU here, importing the CLI again)."""
    capsys.readouterr()
    code = main(list(args))
    out = capsys.readouterr()
    return subprocess.CompletedProcess(["flows.run", *args], code, out.out, out.err)


@pytest.fixture
def cli_env(monkeypatch):
    """This process's environment as `_cli_env` gives a CLI process: no service, Prefect or proxy setting."""
    for name in list(os.environ):
        if name.startswith(("PREFECT_", "TINKER_", "MODAL_", "RUNS_PROXY_")):
            monkeypatch.delenv(name)


@pytest.mark.parametrize("path", [GS1_SPEC, SELFGEN_SPEC, TRIMUON_SPEC])
def test_plan_prints_json_for_every_spec(path, capsys, cli_env):
    done = _main(capsys, str(path), "--plan")
    assert done.returncode == EXIT_DECISION, done.stderr
    plan = json.loads(done.stdout)
    assert plan["spec_title"] == json.loads(path.read_text())["title"]
    assert [gate["name"] for gate in plan["gates"]][0] == "spec_intake"


def test_plan_through_the_real_entry_point_is_the_in_process_one(capsys, cli_env):
    """`python -m flows.run SPEC --plan` in its own process prints what `main` prints in this one."""
    done = _cli(str(GS1_SPEC), "--plan")
    assert done.returncode == EXIT_DECISION, done.stderr
    assert json.loads(done.stdout) == json.loads(_main(capsys, str(GS1_SPEC), "--plan").stdout)


def test_plan_contacts_no_service_and_imports_no_prefect():
    code = (
        "import sys; from flows.run import main; "
        f"rc = main([{str(GS1_SPEC)!r}, '--plan', '--backend', 'http://127.0.0.1:9']); "
        "assert rc == 0 and 'prefect' not in sys.modules and 'tinker' not in sys.modules, sorted(sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def _bad_specs(tmp_path):
    gs1 = json.loads(GS1_SPEC.read_text())
    cases = {"not_json": "{ nope"}
    missing_model = dict(gs1)
    del missing_model["base_model"]
    cases["missing_base_model"] = missing_model
    cases["negative_steps"] = {**gs1, "steps": -3}
    cases["unknown_method"] = {**gs1, "decision_rule": {**gs1["decision_rule"], "method": "t_test"}}
    criterion = {**gs1["decision_rule"]["criteria"][0], "weights": {"treatment": 1, "ghost_arm": -1}}
    cases["weight_names_missing_arm"] = {**gs1, "decision_rule": {**gs1["decision_rule"], "criteria": [criterion]}}
    paths = {}
    for name, content in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_text(content if isinstance(content, str) else json.dumps(content))
        paths[name] = path
    legacy = tmp_path / TRIMUON_SPEC.name
    shutil.copy(TRIMUON_SPEC, legacy)
    paths["legacy_without_plan_file"] = legacy
    return paths


BAD_INPUT_LINES = {
    "not_json": "not valid JSON",
    "missing_base_model": "base_model: required field is missing",
    "negative_steps": "steps: must be a positive integer (got -3)",
    "unknown_method": "decision_rule.method: unknown method 't_test'",
    "weight_names_missing_arm": "names arm 'ghost_arm' that does not exist",
    "legacy_without_plan_file": "expected companion plan file",
}


def _assert_one_spec_error_line(name: str, done: subprocess.CompletedProcess) -> None:
    assert done.returncode == EXIT_BAD_INPUT, (name, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("spec error: ") and BAD_INPUT_LINES[name] in lines[0], (name, lines)


def test_bad_inputs_exit_2_with_one_line(tmp_path, capsys, cli_env):
    bad_specs = _bad_specs(tmp_path)
    assert sorted(bad_specs) == sorted(BAD_INPUT_LINES)
    for name, path in bad_specs.items():
        _assert_one_spec_error_line(name, _main(capsys, str(path)))


def test_a_bad_input_through_the_real_entry_point_exits_2_with_one_line(tmp_path):
    """`python -m flows.run` in its own process: exit code 2 and the one line, no traceback."""
    _assert_one_spec_error_line("negative_steps", _cli(str(_bad_specs(tmp_path)["negative_steps"])))


def test_bad_backend_exits_2(capsys, cli_env):
    done = _main(capsys, str(GS1_SPEC), "--backend", "ftp://example")
    assert done.returncode == EXIT_BAD_INPUT
    assert done.stderr.strip() == "backend must be 'local' or an http(s) URL (got 'ftp://example')"


def test_completed_state_maps_to_exit_0():  # a State object alone: no Prefect server needed
    from prefect.states import Completed

    assert exit_code_for(Completed(message="decision reached")) == EXIT_DECISION


def test_a_backend_that_broke_mid_run_exits_2_with_one_line(capsys, monkeypatch):  # State objects alone
    """The flow's Failed(ServiceFailed) state (a service that stopped answering or answered unreadably mid-run)
    is the backend's fault, as at the preconditions: exit 2 and one line; before, any such error was exit 3."""
    from prefect.states import Failed

    import flows.run as run_module
    from experiment.service.capacity import ServiceAnswerUnreadable

    broke = ServiceAnswerUnreadable("train_step (the call at experiment/sft/loop.py:206)", "JSONDecodeError: x", 0)
    state = Failed(name="ServiceFailed", message=str(broke), data=broke)
    with monkeypatch.context() as weak:  # attack first: no branch for it, read as any other failure
        weak.setattr(run_module, "ServiceFailedMidRun", type("Unrelated", (Exception,), {}))
        assert exit_code_for(state) == 3
    capsys.readouterr()
    assert exit_code_for(state) == EXIT_BAD_INPUT
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [f"the run stopped: {broke}; its record says so (failed, resumable): run the same command again "
                     "once the service answers"]


def test_a_capacity_block_exits_4_not_as_a_decision(capsys):  # State objects alone
    """A run stopped by a capacity block reached no decision. Its final state (the flow's, made by
    flows.requeue.capacity_blocked_state; tests/integration/test_quiet_logs.py runs a real blocked flow to it) is a
    Failed one named CapacityBlocked (not green in the UI); an unnamed state of either kind is read as any other:
    a completed one exits 0, which the README reserves for a decision, a failed one 3, a crash."""
    from prefect.states import Completed, Failed

    from flows.requeue import RequeueDecision, capacity_blocked_state

    blocked = capacity_blocked_state(RuntimeError("capacity exhausted"), RequeueDecision(False, "not deployed", 0))
    assert blocked.is_failed() and not blocked.is_completed()
    as_before = Completed(message=blocked.message)  # the attack: the branch every completed state took before
    assert exit_code_for(as_before) == EXIT_DECISION
    assert exit_code_for(Failed(message=blocked.message, data=RuntimeError("capacity exhausted"))) != 4
    capsys.readouterr()
    assert exit_code_for(blocked) == EXIT_CAPACITY_BLOCKED == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["no decision: capacity exhausted; not deployed; running the same command again resumes the run"]


@pytest.mark.slow  # the pipeline's CLI as a process, through a gate (pyproject.toml: markers)
def test_gate_failure_exits_1(tmp_path, prefect_server):
    # the flow run goes to the session's real Prefect server (a temporary server with a fresh database cost ~20 s)
    env = {**prefect_server.cli_env, "TINKER_API_KEY": "tml-test-key"}
    with FakeTinkerService(["Qwen/Qwen3.5-2B"]) as fake:
        done = _cli(str(GS1_SPEC), "--backend", fake.base_url, "--runs-dir", str(tmp_path / "runs"), env=env)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "GateFailed: gate preflight_probe failed: " in done.stderr, done.stderr
    [run_dir] = (tmp_path / "runs").glob("gs1-*")
    assert json.loads((run_dir / "result.json").read_text())["status"] == "failed"


@pytest.mark.slow  # the pipeline's CLI as a process, through a gate (pyproject.toml: markers)
def test_a_run_whose_console_closed_goes_on_to_its_record(tmp_path, prefect_server):
    """stdout and stderr to a pipe nobody reads (`... 2>&1 | head` after head exits): the run still reaches
    its gate failure and records it, with the exit code that says so (unguarded, the first log line
    ended it with exit 1 and RESULT left at "running": tests/unit/test_closed_console.py)."""
    env = _cli_env({**prefect_server.cli_env, "TINKER_API_KEY": "tml-test-key"})
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        with FakeTinkerService(["Qwen/Qwen3.5-2B"]) as fake:
            done = subprocess.run([sys.executable, "-m", "flows.run", str(GS1_SPEC), "--backend", fake.base_url,
                                   "--runs-dir", str(tmp_path / "runs")],
                                  cwd=REPO_ROOT, env=env, stdout=write_end, stderr=write_end, timeout=300)
    finally:
        os.close(write_end)
    [run_dir] = (tmp_path / "runs").glob("gs1-*")
    result = json.loads((run_dir / "result.json").read_text())
    assert (done.returncode, result["status"]) == (1, "failed")
    assert "stopped at the preflight_probe gate" in result["summary"], result["summary"]


def test_imports_made_while_prefect_boots_stop_when_it_is_up():
    """One module at a time while the temporary Prefect server boots, none once it is up (modules this
    process has not imported stand in for the real list, IMPORTED_WHILE_PREFECT_BOOTS)."""
    modules = ("wave", "xml.dom.pulldom", "email.mime.audio")
    assert not any(module in sys.modules for module in modules)
    answers = iter([True, True, False])
    imports = BackgroundImports(modules, wanted=lambda: next(answers))
    imports.join()
    assert [module in sys.modules for module in modules] == [True, True, False]
    imports.wait_for("email.mime.audio")  # not imported there: the waiter imports it itself, at once
    # the real list: Prefect's settings, the flow, the module the stock SDK's tokenizer loader imports, then every
    # gate module
    from tinker.lib.public_interfaces.sampling_client import _load_tokenizer_from_model_info

    assert FLOW_IMPORTS[:2] == ("prefect.settings", "flows.experiment_flow")
    (tokenizer_module,) = IMPORTED_WHILE_PREFECT_BOOTS
    assert FLOW_IMPORTS[2:] == IMPORTED_WHILE_PREFECT_BOOTS
    assert f"from {tokenizer_module} import AutoTokenizer" in inspect.getsource(_load_tokenizer_from_model_info)
    import flows.experiment_flow  # noqa: F401 - the flow's module brings in every gate's steps (one gate table)

    assert {f"experiment.{family}.steps.arm_training" for family in ("rl", "sft")} <= set(sys.modules)


def test_with_a_prefect_server_up_nothing_is_left_to_import_after_the_claim(monkeypatch):
    """A deployment's Prefect server is up before the run, and the run claimed it after the flow's imports:
    after the claim nothing boots and nothing is imported in the background; the flow starts at once."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    monkeypatch.setenv("TINKER_BASE_URL", "http://127.0.0.1:9")  # no embedded backend to start early
    imports = BackgroundImports(("email.mime.image", "xml.dom.expatbuilder"))
    imports.join()
    with temporary_settings({PREFECT_API_URL: "http://127.0.0.1:9/api"}):
        assert start_servers_early(imports, None) == imports.finish


def test_with_a_prefect_server_up_the_run_is_claimed_once_the_flow_is_imported(monkeypatch, tmp_path, cli_env):
    """A deployment-like run (PREFECT_API_URL set) imports the flow's modules beside its preconditions, with its
    embedded backend starting, and claims the run after them, so the claimed run's service never waits on those
    imports (stand-in modules this process has not imported for FLOW_IMPORTS; the backend's start recorded, not
    made; the claim is refused as for a live run, to stop there)."""
    import flows.startup as startup
    from experiment.run.config import embedded_checkpoint_dir
    from experiment.run.store import RunInProgress, RunStore

    modules = ("tabnanny", "pyclbr")
    assert not any(module in sys.modules for module in modules)
    monkeypatch.setattr(startup, "FLOW_IMPORTS", modules)
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")
    monkeypatch.setattr(startup, "unreachable_prefect_server", lambda: None)  # as if it answered
    backends_started, imported_at_claim = [], []
    monkeypatch.setattr(startup, "start_embedded_early", lambda *args: backends_started.append(args))

    def claim(*args, **kwargs):
        imported_at_claim.extend([*(module in sys.modules for module in modules), len(backends_started)])
        raise RunInProgress("a stand-in live run")

    monkeypatch.setattr(RunStore, "claim", claim)
    assert main([str(GS1_SPEC), "--rehearse", "--runs-dir", str(tmp_path / "runs")]) == EXIT_BAD_INPUT
    assert imported_at_claim == [True, True, 1]
    assert backends_started == [(embedded_checkpoint_dir(tmp_path / "runs"), "embedded")]


class _ImportedUntilReleased(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """A stand-in flow module whose import starts, says so and goes on until released."""

    def __init__(self, name: str):
        self.name, self.started, self.released = name, threading.Event(), threading.Event()
        self.waited_out = False  # never released: the import ended on its own timeout (an error raised there is swallowed)

    def find_spec(self, fullname, path=None, target=None):
        return importlib.util.spec_from_loader(fullname, self) if fullname == self.name else None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        self.started.set()
        self.waited_out = not self.released.wait(timeout=60)


def _refused_mid_import(monkeypatch, tmp_path, stand_in: str, others: tuple[str, ...]) -> list[bool]:
    """main() refused by its backend check while the first of the stand-in flow modules is being imported
    (it goes on until the refusal stops the run's early backend, right after the imports are told to stop):
    which of the others the refused run left imported."""
    import flows.startup as startup

    assert not any(module in sys.modules for module in (stand_in, *others))
    stand_in_import = _ImportedUntilReleased(stand_in)
    monkeypatch.setattr(sys, "meta_path", [stand_in_import, *sys.meta_path])
    monkeypatch.setattr(startup, "FLOW_IMPORTS", (stand_in, *others))
    monkeypatch.setattr(startup, "unreachable_backend",
                        lambda *args: stand_in_import.started.wait(timeout=60) and "backend unreachable (stand-in)")
    monkeypatch.setattr(startup, "stop_early_embedded", lambda early: stand_in_import.released.set())
    try:
        assert main([str(GS1_SPEC), "--rehearse", "--runs-dir", str(tmp_path / "runs")]) == EXIT_BAD_INPUT
    finally:
        stand_in_import.released.set()
        sys.modules.pop(stand_in, None)
    # the refusal stopped the backend while the import went on: it was not waited for first (a 60 s wait, then
    # the import ended on its own, as when finish() came before stop_early_embedded())
    assert not stand_in_import.waited_out
    return [module in sys.modules for module in others]


def test_a_run_refused_before_its_claim_waits_only_for_the_flow_module_being_imported(monkeypatch, tmp_path, cli_env):
    """A refused run (here its backend check) stops the flow's background imports after the module in progress:
    a fresh `python -m flows.run` refused at its preconditions paid for Prefect, torch, the SDK, transformers'
    tokenizer and every gate module (about 7.5 CPU-s) before it could exit. Weakened first: imports that ignore
    the refusal import the rest of the list before the refused run returns."""
    import flows.startup as startup

    with monkeypatch.context() as weak:
        weak.setattr(startup.BackgroundImports, "finish", startup.BackgroundImports.join)  # imports every module
        assert _refused_mid_import(weak, tmp_path / "weak", "stand_in_flow_weak", ("sched", "netrc")) == [True, True]
    assert _refused_mid_import(monkeypatch, tmp_path / "real", "stand_in_flow", ("graphlib", "mailbox")) == [False, False]


class _ImportedUntilWaitedFor(_ImportedUntilReleased):
    """A stand-in for Prefect's settings whose import (in the background thread) goes on until the main
    thread is seen waiting for it (BackgroundImports.wait_for on the main thread's stack) or until released."""

    def __init__(self, name: str):
        super().__init__(name)
        self.imported = threading.Event()

    def exec_module(self, module):
        main_thread = threading.main_thread().ident
        while not self.released.wait(0.01):
            frame = sys._current_frames().get(main_thread)
            while frame is not None and frame.f_code.co_name != "wait_for":
                frame = frame.f_back
            if frame is not None:
                break
        self.imported.set()


def _settings_read_after_their_import(monkeypatch, tmp_path, stand_in: str) -> bool:
    """main() of a local run (no PREFECT_API_URL) with a stand-in for Prefect's settings first among the flow's
    background imports: whether that import had finished when the main thread read the settings (the
    Prefect-server check; refused there, to stop)."""
    import flows.startup as startup

    settings = _ImportedUntilWaitedFor(stand_in)
    monkeypatch.setattr(sys, "meta_path", [settings, *sys.meta_path])
    monkeypatch.setattr(startup, "PREFECT_SETTINGS_MODULE", stand_in)
    monkeypatch.setattr(startup, "FLOW_IMPORTS", (stand_in,))
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    read_after_import = []

    def prefect_server_check():
        read_after_import.append(settings.imported.is_set())
        settings.released.set()
        return "the Prefect server check (stand-in) refuses, to stop here"

    monkeypatch.setattr(startup, "unreachable_prefect_server", prefect_server_check)
    try:
        assert main([str(GS1_SPEC), "--rehearse", "--runs-dir", str(tmp_path / "runs")]) == EXIT_BAD_INPUT
    finally:
        settings.released.set()
        sys.modules.pop(stand_in, None)
    return read_after_import == [True]


def test_the_main_thread_reads_prefect_settings_only_after_the_background_imported_them(monkeypatch, tmp_path, cli_env):
    """One importer at a time: the main thread imported Prefect's settings for its precondition checks while the
    background thread was importing Prefect for the flow, and Prefect printed "Failed to initialize plugins:
    cannot import name 'SettingsContext' from partially initialized module 'prefect.context'" (1 of 3 local runs
    of the README's command). Weakened first: without the wait, the settings are read mid-import."""
    import flows.startup as startup

    with monkeypatch.context() as weak:
        weak.setattr(startup.BackgroundImports, "wait_for", lambda self, module: None)
        assert not _settings_read_after_their_import(weak, tmp_path / "weak", "stand_in_settings_weak")
    assert _settings_read_after_their_import(monkeypatch, tmp_path / "real", "stand_in_settings")
