"""Faults an operator's machine deals a CLI run mid-way, through the real CLI at wiring scale (issue 47, S5 and O3).

    python benchmarks/cli_fault_drills.py [--drills delete-run-dir,kill-prefect] [--workdir /tmp] [--spec SPEC] [--keep]

Each drill starts `python -m flows.run SPEC --rehearse --rehearsal-scale wiring` (the embedded backend, a
temporary Prefect server, no PREFECT_API_URL) in a fresh runs dir, waits until its flow logs its first passed
gate, deals the fault, and prints what the operator sees: exit code, seconds from the fault to the exit, the
line that says why, tracebacks on stderr, and what `python -m flows.runs` lists afterwards.

  delete-run-dir   the run's directory is deleted (rm -rf): expected exit 2, one line, no index row
  kill-prefect     the temporary Prefect server is killed (kill -9); the command is then run again: expected
                   exit 2, one line, an interruption entry, and the re-run resumes the run to its end (exit 0)

Each drill takes 2-4 minutes on a loaded 2-core machine; the runs dirs are removed at the end (--keep keeps them).

Known (7 December, 5 kill-prefect drills): the re-run resumed to exit 0 in 3, and exited 3 in 2, both stopped
inside activation_gate: the resumed gate ran its pilot again and added `activation-pilot-bw0.5.jsonl` with other
bytes (its step_seconds and optim_seconds differ), which the store refuses ("evidence names are immutable").
Fixed since: a resumed gate reuses every pilot whose log the stopped attempt kept (experiment.rl.pilot.kept_pilot;
tests/integration/test_activation_gate_resume.py stops the gate at that point deterministically).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GATE_PASSED = re.compile(r"gate (\w+): passed")


def cli_env(workdir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "TINKER_BASE_URL")}
    env.update(PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1", PREFECT_HOME=str(workdir / "prefect-home"))
    return env


def start_run(spec: str, runs: Path, workdir: Path, tag: str) -> tuple[subprocess.Popen, Path]:
    err = workdir / f"{tag}.err"
    process = subprocess.Popen([sys.executable, "-m", "flows.run", spec, "--rehearse", "--rehearsal-scale", "wiring",
                                "--runs-dir", str(runs)], cwd=REPO, env=cli_env(workdir), stdout=subprocess.DEVNULL,
                               stderr=open(err, "w"))
    return process, err


def wait_for_first_gate(process: subprocess.Popen, err: Path, timeout_s: float = 900) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and process.poll() is None:
        if GATE_PASSED.search(err.read_text(errors="replace")):
            return
        time.sleep(0.5)
    raise RuntimeError(f"no gate passed (exit {process.poll()}); see {err}")


def report(tag: str, process: subprocess.Popen, err: Path, dealt_at: float, runs: Path, workdir: Path) -> dict:
    code = process.wait(timeout=900)
    seconds = time.monotonic() - dealt_at
    text = err.read_text(errors="replace")
    said = [line for line in text.splitlines() if " stopped" in line and line.startswith("run ")]
    listed = subprocess.run([sys.executable, "-m", "flows.runs", "--runs-dir", str(runs)], cwd=REPO,
                            env=cli_env(workdir), capture_output=True, text=True).stdout.strip().splitlines()
    row = {"drill": tag, "exit": code, "seconds_after_fault": round(seconds, 1), "tracebacks": text.count("Traceback"),
           "said": said[-1] if said else None, "runs_listed": listed[1:]}
    print(json.dumps(row, indent=2), flush=True)
    return row


def delete_run_dir(spec: str, workdir: Path) -> None:
    runs = workdir / "runs-delete"
    process, err = start_run(spec, runs, workdir, "delete-run-dir")
    wait_for_first_gate(process, err)
    (run_dir,) = [path for path in runs.iterdir() if path.is_dir() and not path.name.startswith(".")]
    dealt_at = time.monotonic()
    shutil.rmtree(run_dir)
    report("delete-run-dir", process, err, dealt_at, runs, workdir)


def kill_prefect(spec: str, workdir: Path) -> None:
    runs = workdir / "runs-kill-prefect"
    process, err = start_run(spec, runs, workdir, "kill-prefect")
    wait_for_first_gate(process, err)
    children = subprocess.run(["pgrep", "-P", str(process.pid), "-f", "rx-prefect-server"], capture_output=True,
                              text=True).stdout.split()
    if not children:
        raise RuntimeError("no temporary Prefect server among the run's children")
    dealt_at = time.monotonic()
    os.kill(int(children[0]), signal.SIGKILL)
    report("kill-prefect", process, err, dealt_at, runs, workdir)
    for result in runs.glob("*/result.json"):
        print(json.dumps({"interruption": json.loads(result.read_text()).get("interruption")}), flush=True)
    again, err_again = start_run(spec, runs, workdir, "kill-prefect-rerun")
    code = again.wait(timeout=900)
    text = err_again.read_text(errors="replace")
    print(json.dumps({"rerun_exit": code, "resumed": "resuming run" in text,
                      "tracebacks": text.count("Traceback")}), flush=True)


DRILLS = {"delete-run-dir": delete_run_dir, "kill-prefect": kill_prefect}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--drills", default=",".join(DRILLS))
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--spec", default=str(REPO / "specs" / "gs1_kernel_vs_grpo_gsm8k.json"))
    parser.add_argument("--keep", action="store_true", help="keep the runs dirs and the runs' stderr (printed at the end)")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="cli-fault-drills-", dir=args.workdir))
    try:
        for name in args.drills.split(","):
            DRILLS[name](args.spec, workdir)
    finally:
        if args.keep:
            print(f"kept: {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
