"""Pipeline overhead against the embedded backend with injected per-call latency (a benchmark).

    python benchmarks/bench_pipeline.py [--json] [--latency-ms 100] [--scale wiring|standard]
                                        [--eval-items 16] [--arm-steps 4] [--skip-rehearsal]
    python benchmarks/bench_pipeline.py --profile spindle-qwen3.5-2b --time-factor 0.1 --scale standard
                                        [--spec specs/X.json] [--capacity-exhausted-seconds S] --json

With --profile the server holds every call for its service time (embedded_tinker/service_profile.py,
docs/service-profile.md; latency defaults to 0) and a Prefect server is started first and handed to
the CLI (PREFECT_API_URL), as deployments have one. The rehearsal then also reports
``time_to_verdict``: the wall time from the run's claim (its run directory appears) to its verdict
(result.json leaves "running"), divided by the service's critical path (the profile's busy_seconds:
the time at least one call was in service on some lane; arms' lanes side by side count once),
goal <= 1.05; where the service sat idle (per gate, between gates, before the first call, after the
last); and the feasibility pilot's projection against the measured run, per phase (``projection``).
``busy_seconds`` is the critical path *as the client scheduled it*: a run that did independent work one gate
after another scores about 1.0 against it. ``dependency_critical_path`` is the longest chain of dependent
gates (experiment.contract.dependencies.critical_path over each gate's service busy seconds; without a
profile, over each gate's recorded duration), with the time to verdict against it from the claim and from
the CLI's start: what a schedule that overlaps every independent gate could reach.
``--compare-schedules`` runs the rehearsal twice at once, one gate at a time and ``--overlap-gates``, each
on its own profiled server, and reports both with their ratios (time to verdict; service seconds as billed and
at the profile's rates, ``scheduled_service_seconds``; calls).

Every API call to the embedded server waits --latency-ms first (the server's fault injection,
embedded_tinker.faults.FaultConfig), so that service time dominates and what the pipeline adds
shows up as the difference. Three measurements, each printed in one JSON object with --json:

  * rehearsal: ``python -m flows.run SPEC --rehearse --rehearsal-scale SCALE --fresh`` in a
    subprocess, pointed at the server through TINKER_BASE_URL. The server reports, in healthz,
    ``busy_seconds``: the time during which at least one API call of a client was in flight
    (latency, long polls for pending work and the work itself included; heartbeats excluded).
    ``overhead = wall / busy`` (goal <= 1.10): 1.0 means the pipeline always waited on the
    service. Also reported: the time before the first API call (interpreter and Prefect start-up,
    spec loading) and after the last one (records, plots, shutdown), from polling healthz.
  * arms: the same arm-shaped work for two arms (per step: sample a batch, forward_backward,
    optim_step, through the SDK), once through the pipeline's ``experiment.gates.run_side_by_side``
    and once one arm after the other. ``speedup = sequential / concurrent`` (goal >= 1.8).
  * evaluation: the pipeline's greedy evaluation (``experiment.rl.math_eval.greedy_predictions``) of
    --eval-items items of the spec's evaluation set, requests pipelined (the pipeline's default
    concurrency) against one request at a time.

Only public entry points: embedded_tinker.launch.start_server, the tinker SDK, the pipeline CLI and
the pipeline functions named above. The default run takes a few minutes on 2 cores; --scale
standard and larger --eval-items/--arm-steps scale it up.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TINKER_TELEMETRY", "0")

import httpx
import tinker
from tinker import types

from embedded_tinker.faults import FaultConfig
from embedded_tinker.launch import LOCAL_API_KEY, start_server
from embedded_tinker.service_profile import profile_named
from experiment.contract.dependencies import critical_path

DEFAULT_SPEC = ROOT / "specs" / "gs1_kernel_vs_grpo_gsm8k.json"


def busy(base_url: str) -> dict:
    """The server's busy_seconds and api_calls so far (healthz)."""
    report = httpx.get(f"{base_url}/api/v1/healthz", timeout=10).json()
    return {"busy_seconds": report["busy_seconds"], "api_calls": report["api_calls"]}


class CallWatcher:
    """Polls healthz to find when the first and the last API call of a client happened, and keeps
    (wall clock, busy_seconds) samples so that the service's idle time inside any window is known.
    With a service profile, busy_seconds is the profile's (calls in service); else the HTTP one.
    Given a runs dir, it also notes when the run was claimed (its result.json appears), when each
    gate event was written and when result.json left "running" (the verdict), to 0.1 s."""

    def __init__(self, base_url: str | None, interval_s: float = 0.1, runs_dir: Path | None = None):
        """base_url None: the CLI starts the backend itself; its URL is read from the run's first
        event that names it (the spec_intake gate's, after the service's first call)."""
        self.base_url, self.interval_s, self.runs_dir = base_url, interval_s, runs_dir
        self.start_calls = busy(base_url)["api_calls"] if base_url else 0
        self.last_profile: dict | None = None  # the latest healthz service_profile
        self.first_call_at: float | None = None
        self.last_call_at: float | None = None
        self.samples: list[tuple[float, float]] = []  # (time.time(), busy_seconds)
        self.service_samples: list[tuple[float, float]] = []  # (time.time(), service_seconds) with a profile
        self.claimed_at: float | None = None  # time.time()
        self.verdict_at: float | None = None
        self.gate_seen_at: dict[str, float] = {}
        self.flow_started_at: float | None = None  # the flow's run_config event: the CLI's imports are done
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        calls = self.start_calls
        while not self._stop.wait(self.interval_s):
            if self.runs_dir is not None:
                self._watch_run()
            if self.base_url is None:
                continue
            try:
                report = httpx.get(f"{self.base_url}/api/v1/healthz", timeout=10).json()
            except httpx.HTTPError:
                continue  # a backend the CLI started ends with it
            profiled = self.last_profile = report.get("service_profile")
            self.samples.append((time.time(), profiled["busy_seconds"] if profiled else report["busy_seconds"]))
            if profiled:
                self.service_samples.append((time.time(), profiled["service_seconds"]))
            now_calls = report["api_calls"]
            if now_calls != calls:
                now = time.perf_counter()
                self.first_call_at = self.first_call_at or now
                self.last_call_at = now
                calls = now_calls

    def _watch_run(self) -> None:
        now = time.time()
        for result in self.runs_dir.glob("*/result.json"):
            self.claimed_at = self.claimed_at or now
            if self.verdict_at is None:
                try:
                    if json.loads(result.read_text()).get("status") not in (None, "running"):
                        self.verdict_at = now
                except (OSError, json.JSONDecodeError):
                    pass
        for event in run_events(self.runs_dir):
            if event.get("event") == "gate":
                self.gate_seen_at.setdefault(event["gate"], now)
                if self.base_url is None:
                    self.base_url = ((event.get("measured") or {}).get("service") or {}).get("base_url")
            elif event.get("event") == "run_config" and self.flow_started_at is None:
                self.flow_started_at = now

    def busy_at(self, when: float, samples: list[tuple[float, float]] | None = None) -> float:
        """busy_seconds (or another of the sampled counters) at wall-clock time `when` (linear between samples)."""
        samples = self.samples if samples is None else samples
        if not samples:
            return 0.0
        if when <= samples[0][0]:
            return samples[0][1]
        for (t0, b0), (t1, b1) in zip(samples, samples[1:]):
            if t0 <= when <= t1:
                return b0 + (b1 - b0) * ((when - t0) / (t1 - t0) if t1 > t0 else 0.0)
        return samples[-1][1]

    def service_between(self, start: float, end: float) -> float:
        """The profile's service_seconds spent in [start, end] (every lane counted)."""
        return self.busy_at(end, self.service_samples) - self.busy_at(start, self.service_samples)

    def idle_between(self, start: float | None, end: float | None) -> float:
        """Seconds of [start, end] (time.time()) during which the service was not busy."""
        if start is None or end is None or end <= start:
            return 0.0
        return max(0.0, (end - start) - (self.busy_at(end) - self.busy_at(start)))

    def __enter__(self) -> CallWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


# ---------------------------------------------------------------------- rehearsal


def rehearsal(base_url: str | None, spec: Path, scale: str, timeout_s: float, prefect_api_url: str | None = None,
              profile=None, overlap_gates: bool = False) -> dict:
    """The pipeline CLI's rehearsal of ``spec`` against the server; wall time against busy time.
    With a service profile on the server: time to verdict against the critical path (profiled_report).
    base_url None: the CLI starts the embedded backend itself, with `profile` from the environment."""
    if base_url is None:
        return cli_started_rehearsal(spec, scale, timeout_s, prefect_api_url, profile)
    runs_dir = tempfile.mkdtemp(prefix="bench-pipeline-runs-")
    env = {**os.environ, "TINKER_BASE_URL": base_url, "TINKER_API_KEY": LOCAL_API_KEY, "PYTHONPATH": str(ROOT)}
    if prefect_api_url:
        env.update(PREFECT_API_URL=prefect_api_url, PREFECT_UI_URL="")
    command = [sys.executable, "-m", "flows.run", str(spec), "--rehearse", "--rehearsal-scale", scale,
               "--fresh", "--runs-dir", runs_dir] + (["--overlap-gates"] if overlap_gates else [])
    before = busy(base_url)
    profile_before = service_profile_report(base_url)
    with CallWatcher(base_url, runs_dir=Path(runs_dir)) as watcher:
        started, started_wall = time.perf_counter(), time.time()
        completed = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout_s)
        wall = time.perf_counter() - started
    after = busy(base_url)
    busy_s = after["busy_seconds"] - before["busy_seconds"]
    report = {
        "command": " ".join(command[1:]),
        "exit_code": completed.returncode,
        "wall_s": round(wall, 3),
        "busy_s": round(busy_s, 3),
        "overhead": round(wall / busy_s, 3) if busy_s > 0 else None,
        "goal": 1.10,
        "api_calls": after["api_calls"] - before["api_calls"],
        "before_first_call_s": round(watcher.first_call_at - started, 3) if watcher.first_call_at else None,
        "after_last_call_s": round(started + wall - watcher.last_call_at, 3) if watcher.last_call_at else None,
        "recorded": gate_durations(Path(runs_dir)),
        "service_idle_s": idle_by_gate(Path(runs_dir), watcher),
    }
    report["dependency_critical_path"] = dependency_report(
        report["recorded"]["gate_duration_s"], watcher.verdict_at, watcher.claimed_at, started_wall,
        basis="each gate's recorded duration_s (wall time: the pipeline's own work included)")
    if completed.returncode != 0:
        report["output_tail"] = (completed.stdout + completed.stderr)[-2000:]
    if profile_before is not None:
        report["profiled"] = profiled_report(Path(runs_dir), watcher, profile_before,
                                             service_profile_report(base_url), started_wall)
    return report


def cli_started_rehearsal(spec: Path, scale: str, timeout_s: float, prefect_api_url: str | None, profile) -> dict:
    """The rehearsal with the embedded backend the CLI starts on demand (as a user's run has it: the
    SFT spec's correctness preflight runs the backend's optimizer in its checkout, which needs it),
    the service profile passed through the environment."""
    runs_dir = tempfile.mkdtemp(prefix="bench-pipeline-runs-")
    env = {k: v for k, v in os.environ.items() if k != "TINKER_BASE_URL"}
    env.update(PYTHONPATH=str(ROOT), EMBEDDED_TINKER_SERVICE_PROFILE=profile.name,
               EMBEDDED_TINKER_TIME_FACTOR=str(profile.time_factor))
    if prefect_api_url:
        env.update(PREFECT_API_URL=prefect_api_url, PREFECT_UI_URL="")
    command = [sys.executable, "-m", "flows.run", str(spec), "--rehearse", "--rehearsal-scale", scale,
               "--fresh", "--runs-dir", runs_dir]
    with CallWatcher(None, runs_dir=Path(runs_dir)) as watcher:
        started, started_wall = time.perf_counter(), time.time()
        completed = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout_s)
        wall = time.perf_counter() - started
    report = {"command": " ".join(command[1:]), "backend": "started by the CLI (profile from the environment)",
              "exit_code": completed.returncode, "wall_s": round(wall, 3),
              "recorded": gate_durations(Path(runs_dir))}
    if completed.returncode != 0:
        report["output_tail"] = (completed.stdout + completed.stderr)[-2000:]
    if watcher.last_profile is not None:  # counted from the server's start: the run is its only client
        before = {"busy_seconds": 0.0, "service_seconds": 0.0, "scheduled_seconds": 0.0, "calls": 0, "overran": 0}
        report["profiled"] = profiled_report(Path(runs_dir), watcher, before, watcher.last_profile, started_wall)
        report["profiled"]["note"] = ("healthz is polled from the spec_intake gate's end (where the run names the "
                                      "backend's URL) to the verdict; the service's first call comes before it")
    return report


def service_profile_report(base_url: str) -> dict | None:
    return httpx.get(f"{base_url}/api/v1/healthz", timeout=10).json().get("service_profile")


GOAL_TIME_TO_VERDICT = 1.05


def profiled_report(runs_dir: Path, watcher: CallWatcher, before: dict, after: dict, cli_started: float) -> dict:
    """Time to verdict over the critical path, where the service sat idle, and the feasibility
    pilot's projection against the measured run, per phase."""
    critical = after["busy_seconds"] - before["busy_seconds"]
    claimed, verdict = watcher.claimed_at, watcher.verdict_at
    to_verdict = verdict - claimed if claimed and verdict else None
    windows = gate_windows(runs_dir, watcher)
    idle = {gate: round(watcher.idle_between(start, end), 2) for gate, (start, end) in windows.items()}
    first_start = min((start for start, _ in windows.values()), default=None)
    last_end = max((end for _, end in windows.values()), default=None)
    within = watcher.idle_between(claimed, verdict) if to_verdict else None
    flow_started = watcher.flow_started_at
    flow_to_verdict = verdict - flow_started if flow_started and verdict else None
    report = {
        "profile": after["name"], "time_factor": after["time_factor"],
        "claim_to_verdict_s": round(to_verdict, 2) if to_verdict else None,
        # a deployment's flow process has imported everything before its flow starts; the CLI claims first
        "flow_start_to_verdict_s": round(flow_to_verdict, 2) if flow_to_verdict else None,
        "claim_to_flow_start_s": round(flow_started - claimed, 2) if flow_started and claimed else None,
        "critical_path_s": round(critical, 2),
        "service_seconds": round(after["service_seconds"] - before["service_seconds"], 2),
        # the same at the profile's rates: what the machine's load adds to calls that overran is left out
        "scheduled_service_seconds": round(after.get("scheduled_seconds", 0.0) - before.get("scheduled_seconds", 0.0), 2),
        "time_to_verdict_over_critical_path": round(to_verdict / critical, 3) if to_verdict and critical else None,
        "flow_start_to_verdict_over_critical_path":
            round(flow_to_verdict / critical, 3) if flow_to_verdict and critical else None,
        "goal": GOAL_TIME_TO_VERDICT,
        "calls": after["calls"] - before["calls"],
        "overran": after["overran"] - before["overran"],
        "overran_by_kind": {kind: n - before.get("overran_by_kind", {}).get(kind, 0)
                            for kind, n in after.get("overran_by_kind", {}).items()},
        "cli_start_to_claim_s": round(claimed - cli_started, 2) if claimed else None,
        "service_idle_s": {
            "claim_to_verdict": round(within, 2) if within is not None else None,
            "claim_to_first_gate": round(watcher.idle_between(claimed, first_start), 2) if claimed and first_start else None,
            "claim_to_flow_start": round(watcher.idle_between(claimed, flow_started), 2) if claimed and flow_started else None,
            "between_gates": round(max(0.0, within - sum(idle.values()) - watcher.idle_between(claimed, first_start)
                                   - watcher.idle_between(last_end, verdict)), 2) if within is not None and first_start else None,
            "last_gate_to_verdict": round(watcher.idle_between(last_end, verdict), 2) if verdict and last_end else None,
            "by_gate": idle,
        },
        "gate_wall_s": {gate: round(end - start, 2) for gate, (start, end) in windows.items()},
        "gate_service_busy_s": {gate: round(watcher.busy_at(end) - watcher.busy_at(start), 2)
                                for gate, (start, end) in windows.items()},
        "projection": projection_against_run(runs_dir, windows, watcher),
    }
    report["dependency_critical_path"] = dependency_report(report["gate_service_busy_s"], verdict, claimed, cli_started)
    if report["time_to_verdict_over_critical_path"] and after["time_factor"] != 1:
        # the pipeline's own time does not scale with the service; the critical path does (when no call overran)
        overhead = to_verdict - critical
        report["extrapolated_ratio_at_time_factor_1"] = round(1 + overhead / (critical / after["time_factor"]), 3)
    return report


def dependency_report(gate_seconds: dict[str, float], verdict: float | None, claimed: float | None,
                      cli_started: float | None, basis: str = "each gate's service busy seconds (the profile's "
                      "busy_seconds inside the gate's window)") -> dict:
    """The longest chain of dependent gates (experiment.contract.dependencies: the preflights that read only
    the initial state side by side, the two pilots side by side, arms side by side inside arm training) and
    the time to verdict against it, from the run's claim and from the CLI's start (time.time() values)."""
    path = critical_path(gate_seconds)
    report = {**path.to_dict(), "durations": basis, "gates_one_after_another_s": round(sum(gate_seconds.values()), 2)}
    for name, start in (("claim", claimed), ("cli_start", cli_started)):
        to_verdict = verdict - start if verdict and start else None
        report[f"{name}_to_verdict_s"] = round(to_verdict, 2) if to_verdict else None
        report[f"{name}_to_verdict_over_path"] = round(to_verdict / path.seconds, 3) if to_verdict and path.seconds else None
    return report


def gate_windows(runs_dir: Path, watcher: CallWatcher) -> dict[str, tuple[float, float]]:
    """(start, end) in time.time() of each gate: its end when the watcher saw its event (to 0.1 s),
    its start that minus the duration_s it recorded."""
    windows = {}
    for event in run_events(runs_dir):
        if event.get("event") == "gate" and event.get("duration_s") is not None and event["gate"] in watcher.gate_seen_at:
            end = watcher.gate_seen_at[event["gate"]]
            windows[event["gate"]] = (end - float(event["duration_s"]), end)
    return windows


def projection_against_run(runs_dir: Path, windows: dict[str, tuple[float, float]], watcher: CallWatcher) -> dict:
    """The feasibility record's projection (result.json) against what the run measured, per phase:
    wall seconds of the gates each phase stands for, and the service's busy seconds in them."""
    results = list(runs_dir.glob("*/result.json"))
    feasibility = json.loads(results[0].read_text()).get("feasibility") if results else None
    if not feasibility:
        return {"note": "no feasibility record"}
    projected = feasibility.get("projection", {})
    phases = projected.get("phases") or {}
    comparison, totals = {}, {"projected_wall_s": 0.0, "measured_wall_s": 0.0,
                              "projected_service_s": 0.0, "measured_service_s": 0.0}
    calibrated = any(len(e.get("pilots") or ()) > 1 for e in run_events(runs_dir) if e.get("event") == "activation_pilots")
    for gate, names in GATE_PHASES.items():
        if gate == "activation_gate" and calibrated:  # the spec's calibration tried a further candidate
            names = (*names, "activation_calibration")
        names = tuple(name for name in names if name in phases)  # the SFT pilot has no checkpoint/load phases
        if gate not in windows or not names:
            continue
        start, end = windows[gate]
        row = {"phases": list(names),
               "projected_wall_s": sum(phases[n]["wall_seconds"] for n in names),
               "measured_wall_s": end - start,
               "projected_service_s": sum(phases[n]["service_seconds"] for n in names),
               "measured_service_s": watcher.service_between(start, end)}
        for key in totals:
            totals[key] += row[key]
        comparison[gate] = _with_ratios(row)
    return {"by_gate": comparison, "total": _with_ratios(dict(totals)),
            "setup": {**phases.get("setup", {}), "note": "the arms' clients of the full run are created in "
                      "restoration_preflight, among its checks: not measured apart"},
            "recovery_s": (feasibility.get("recovery") or {}).get("seconds"),
            "measured_capacity_waits_s": sum(float(e.get("delay_seconds") or 0) for e in run_events(runs_dir)
                                             if e.get("event") == "capacity_wait"),
            "projected_wall_s": projected.get("wall_seconds"), "goal": "projected within ±10% of measured"}


def _with_ratios(row: dict) -> dict:
    row = {k: round(v, 2) if isinstance(v, float) else v for k, v in row.items()}
    for kind in ("wall", "service"):
        measured = row[f"measured_{kind}_s"]
        row[f"{kind}_projected_over_measured"] = round(row[f"projected_{kind}_s"] / measured, 3) if measured else None
    return row


# The gates of the full run and the projected phases that stand for them.
GATE_PHASES = {"activation_gate": ("activation_setup", "activation_steps", "activation_heldout",
                                   "activation_heldout_sampler"),
               "arm_training": ("training", "final_checkpoints"),
               "evaluation": ("evaluation", "evaluation_latency", "sampler_loads", "evaluation_setup")}


def run_events(runs_dir: Path):
    """Every parseable event of the runs under runs_dir (their events.jsonl), in file order."""
    for events in runs_dir.rglob("events.jsonl"):
        for line in events.read_text().splitlines():
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue


def gate_durations(runs_dir: Path) -> dict:
    """What the run recorded (events.jsonl of the run under runs_dir): each gate's duration_s, and
    the arm training steps' step_seconds summed per arm. Their total over arm_training's duration
    is how much the arms overlapped in the pipeline itself (2.0: two arms fully side by side)."""
    gates: dict[str, float] = {}
    step_seconds: dict[str, float] = {}
    for event in run_events(runs_dir):
        if event.get("event") == "gate" and event.get("duration_s") is not None:
            gates[event["gate"]] = round(float(event["duration_s"]), 3)
        if event.get("event") == "training_step" and event.get("step_seconds") is not None:
            arm = str(event.get("arm"))
            step_seconds[arm] = step_seconds.get(arm, 0.0) + float(event["step_seconds"])
    recorded: dict = {"gate_duration_s": gates, "arm_step_seconds": {a: round(v, 3) for a, v in step_seconds.items()}}
    if gates.get("arm_training") and step_seconds:
        recorded["arm_overlap"] = round(sum(step_seconds.values()) / gates["arm_training"], 3)
    return recorded


def idle_by_gate(runs_dir: Path, watcher: CallWatcher) -> dict:
    """Seconds of each gate (from events.jsonl: the gate event's time and duration_s, whole seconds)
    during which no API call was in flight: where the pipeline's own work sits on the critical path."""
    import datetime as dt

    idle: dict[str, float] = {}
    for event in run_events(runs_dir):
        if event.get("event") != "gate" or not event.get("duration_s"):
            continue
        end = dt.datetime.fromisoformat(event["ts"]).timestamp() + 0.5  # the second the gate ended in
        start = end - float(event["duration_s"])
        served = watcher.busy_at(end) - watcher.busy_at(start)
        idle[event["gate"]] = round(max(0.0, float(event["duration_s"]) - served), 1)
    return idle


# ---------------------------------------------------------------------- arms


def arm_work(client: tinker.ServiceClient, model: str, steps: int, seed: int):
    """Arm-shaped work: a LoRA model; per step sample 8 rollouts, forward_backward, optim_step."""

    def work() -> None:
        training = client.create_lora_training_client(base_model=model, rank=8).result()
        prompt = types.ModelInput.from_ints([5, 6, 7, 8, 9, 10, 11, 12])
        datum = types.Datum(model_input=types.ModelInput.from_ints(list(range(3, 35))),
                            loss_fn_inputs={"target_tokens": list(range(4, 36)), "weights": [1.0] * 32})
        for step in range(steps):
            sampler = training.save_weights_and_get_sampling_client(f"arm-{seed}-{step}").result()
            sampler.sample(prompt, 8, types.SamplingParams(max_tokens=16, temperature=1.0, seed=seed + step)).result()
            training.forward_backward([datum] * 4, "cross_entropy").result()
            training.optim_step(types.AdamParams(learning_rate=1e-4)).result()

    return work


def arms(client: tinker.ServiceClient, model: str, steps: int) -> dict:
    from experiment.gates import run_side_by_side

    work = {"treatment": arm_work(client, model, steps, 100), "baseline": arm_work(client, model, steps, 200)}
    started = time.perf_counter()
    outcomes = run_side_by_side("train", work)
    concurrent = time.perf_counter() - started
    errors = [repr(o) for o in outcomes.values() if isinstance(o, BaseException)]
    started = time.perf_counter()
    for fn in work.values():
        fn()
    sequential = time.perf_counter() - started
    return {"steps_per_arm": steps, "concurrent_s": round(concurrent, 3), "sequential_s": round(sequential, 3),
            "speedup": round(sequential / concurrent, 3), "goal": 1.8, "errors": errors}


# ---------------------------------------------------------------------- evaluation


def evaluation(client: tinker.ServiceClient, model: str, spec_path: Path, n_items: int, tokenizer_id: str) -> dict:
    from experiment.rl.math_eval import greedy_predictions
    from experiment.rl.recipe import eval_items, renderer_named, rollout_settings
    from experiment.contract.spec import load_spec

    spec = load_spec(spec_path, rehearse=True)
    items = eval_items(spec)[:n_items]
    rollout = rollout_settings(spec)
    renderer = renderer_named(tokenizer_id, rollout.renderer_name)
    sampler = client.create_sampling_client(base_model=model).result()

    def timed(concurrency: int | None) -> float:
        options = {} if concurrency is None else {"concurrency": concurrency}
        started = time.perf_counter()
        asyncio.run(greedy_predictions(sampler, renderer, items, rollout.max_tokens, rollout.few_shot, **options))
        return time.perf_counter() - started

    timed(None)  # warm-up (tokenizer, grader)
    pipelined, one_at_a_time = timed(None), timed(1)
    return {"items": len(items), "max_tokens": rollout.max_tokens, "pipelined_s": round(pipelined, 3),
            "one_at_a_time_s": round(one_at_a_time, 3), "speedup": round(one_at_a_time / pipelined, 3)}


def running_prefect_server():
    """A Prefect server started before the run, as a deployment has one (the CLI's own temporary
    server, started here instead; it stops when this process exits)."""
    if os.environ.get("PREFECT_API_URL"):
        return None  # one is configured already: the run uses it
    from flows.lifetime import TemporaryPrefectServer

    server = TemporaryPrefectServer(timeout_s=180).start()
    server.wait_until_healthy()
    return server


def started_server(faults: FaultConfig, profile=None, attempts: int = 3):
    """start_server, tried again when a loaded machine makes start-up outlast its timeout."""
    for attempt in range(attempts):
        try:
            return start_server(faults=faults, profile=profile)
        except TimeoutError:
            if attempt == attempts - 1:
                raise


def compare_schedules(faults: FaultConfig, profile, args, prefect_api_url: str | None) -> dict:
    """The same rehearsal twice at once, one gate at a time and with --overlap-gates, each on its own profiled
    server (so each server's busy and service seconds are its run's alone), under the same load; the time to
    verdict and the service seconds of the two against each other."""
    runs: dict[str, dict] = {}

    def one(name: str, overlap: bool) -> None:
        with started_server(faults, profile) as server:
            runs[name] = rehearsal(server.base_url, args.spec, args.scale, args.rehearsal_timeout_s, prefect_api_url,
                                   overlap_gates=overlap)

    threads = [threading.Thread(target=one, args=(name, overlap)) for name, overlap in
               (("one_gate_at_a_time", False), ("overlap_gates", True))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    before, after = (runs.get(name, {}).get("profiled") or {} for name in ("one_gate_at_a_time", "overlap_gates"))

    def ratio(key: str) -> float | None:
        return round(after[key] / before[key], 3) if before.get(key) and after.get(key) else None

    return {**runs, "overlap_over_one_at_a_time": {
        key: ratio(key) for key in ("claim_to_verdict_s", "flow_start_to_verdict_s", "critical_path_s", "service_seconds",
                                    "scheduled_service_seconds", "calls")},
        "goal_claim_to_verdict": 0.75}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--spec", type=Path, default=DEFAULT_SPEC)
    parser.add_argument("--scale", choices=("wiring", "standard"), default="wiring", help="rehearsal scale")
    parser.add_argument("--latency-ms", type=float, default=None,
                        help="injected per API call (default 100; 0 with --profile)")
    parser.add_argument("--model", default="embedded/tiny-arith", help="model of the arm and evaluation parts")
    parser.add_argument("--arm-steps", type=int, default=3)
    parser.add_argument("--eval-items", type=int, default=16)
    parser.add_argument("--skip-rehearsal", action="store_true")
    parser.add_argument("--rehearsal-timeout-s", type=float, default=1800)
    parser.add_argument("--profile", default=None, help="service profile of the server (docs/service-profile.md)")
    parser.add_argument("--time-factor", type=float, default=0.1, help="with --profile: scales its service times")
    parser.add_argument("--capacity-exhausted-seconds", type=float, default=0.0,
                        help="create_model refused for this long after the first one (a run with capacity refusals)")
    parser.add_argument("--backend-by-cli", action="store_true",
                        help="with --profile: the CLI starts the embedded backend itself (profile via the environment)")
    parser.add_argument("--overlap-gates", action="store_true", help="the rehearsal with --overlap-gates")
    parser.add_argument("--compare-schedules", action="store_true",
                        help="with --profile: two rehearsals side by side, each on its own server, one gate at a time "
                             "and --overlap-gates (the same load for both); reports both and the ratios")
    parser.add_argument("--skip-arms-and-evaluation", action="store_true",
                        help="only the rehearsal (the arms and evaluation parts take minutes under a profile)")
    args = parser.parse_args()
    if args.latency_ms is None:
        args.latency_ms = 0.0 if args.profile else 100.0

    load = os.getloadavg()
    report: dict = {"latency_ms": args.latency_ms, "spec": str(args.spec.resolve().relative_to(ROOT)),
                    "scale": args.scale, "cpu_count": os.cpu_count(),
                    "load_average_at_start": [round(x, 2) for x in load],
                    "note": "shared machine: other engineers' work runs beside this benchmark"}
    try:
        profile = profile_named(args.profile, args.time_factor) if args.profile else None
    except ValueError as error:
        parser.error(str(error))
    faults = FaultConfig(latency_ms=args.latency_ms, capacity_exhausted_seconds=args.capacity_exhausted_seconds)
    prefect = running_prefect_server() if profile and not args.skip_rehearsal else None
    if args.backend_by_cli:
        if not profile:
            parser.error("--backend-by-cli goes with --profile")
        report["rehearsal"] = rehearsal(None, args.spec, args.scale, args.rehearsal_timeout_s,
                                        prefect.api_url if prefect else os.environ.get("PREFECT_API_URL"), profile)
        report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
        print(json.dumps(report) if args.json else json.dumps(report, indent=2))
        return
    if args.compare_schedules:
        if not profile:
            parser.error("--compare-schedules goes with --profile")
        report["schedules"] = compare_schedules(faults, profile, args, prefect.api_url if prefect else
                                                os.environ.get("PREFECT_API_URL"))
        report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
        print(json.dumps(report) if args.json else json.dumps(report, indent=2))
        return
    with started_server(faults, profile) as server:
        if not args.skip_rehearsal:
            report["rehearsal"] = rehearsal(server.base_url, args.spec, args.scale, args.rehearsal_timeout_s,
                                            prefect.api_url if prefect else os.environ.get("PREFECT_API_URL"),
                                            overlap_gates=args.overlap_gates)
            if prefect:
                report["rehearsal"]["prefect_server"] = "started before the run and handed to it (PREFECT_API_URL)"
        if args.skip_arms_and_evaluation:
            report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
            print(json.dumps(report) if args.json else json.dumps(report, indent=2))
            return
        client = tinker.ServiceClient(base_url=server.base_url, api_key=LOCAL_API_KEY)
        try:
            tokenizer_id = client.create_lora_training_client(base_model=args.model, rank=8).result().get_info().model_data.tokenizer_id
            report["arms"] = arms(client, args.model, args.arm_steps)
            report["evaluation"] = evaluation(client, args.model, args.spec, args.eval_items, tokenizer_id)
        finally:
            client.close("success")
    report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(report) if args.json else json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
