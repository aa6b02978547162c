"""`python -m flows.runs` at team scale: the time to list, filter and JSON-list N runs, and one index upsert.

    python benchmarks/bench_runs_list.py [--runs 1000]

Builds N run directories' index rows (runs/index.parquet, the file the list reads; every 10th run "running" so the
list checks its lock) in a temporary runs dir, then times each command in-process, the median of 5 rounds.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from experiment.run.store import RunIndex, _typed  # noqa: E402
from flows.runs import main  # noqa: E402

KINDS = ("decided", "gate_failed", "capacity_blocked", "interrupted", "running")


def build(runs_dir: Path, count: int) -> None:
    rows = []
    for i in range(count):
        kind = KINDS[i % len(KINDS)] if i % 10 else "running"
        run_id = f"spec{i % 7}-20261207T{i // 3600:02d}{i // 60 % 60:02d}{i % 60:02d}-{i:06x}"
        (runs_dir / run_id).mkdir(parents=True)
        rows.append({"run_id": run_id, "spec_title": f"Spec {i % 7}", "spec_sha256": "0" * 64,
                     "status": "running" if kind == "running" else "succeeded" if kind == "decided" else "failed",
                     "verdict": "supported" if kind == "decided" else None, "effect": 0.01 * (i % 9),
                     "started": f"2026-12-07T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}+00:00",
                     "finished": None, "spec": f"spec{i % 7}.json", "scale": "wiring", "kind": kind})
    frame = _typed(pd.DataFrame(rows, columns=RunIndex.COLUMNS))
    frame.to_parquet(runs_dir / "index.parquet", index=False)


def timed(argv: list[str], rounds: int = 5) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(argv) == 0
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main_bench() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp) / "runs"
        runs.mkdir()
        build(runs, args.runs)
        base = ["--runs-dir", str(runs)]
        for label, argv in (("list", base), ("list --json", base + ["--json"]),
                            ("list --spec spec3 --kind capacity_blocked", base + ["--spec", "spec3", "--kind", "capacity_blocked"]),
                            ("list --sort duration", base + ["--sort", "duration"])):
            print(f"{label:45s} {timed(argv) * 1000:8.1f} ms  ({args.runs} runs, median of 5)")
        index = RunIndex(runs)
        start = time.perf_counter()
        index.upsert({"run_id": "new-run", "status": "running", "kind": "running"})
        print(f"{'one index upsert (each result write)':45s} {(time.perf_counter() - start) * 1000:8.1f} ms")


if __name__ == "__main__":
    main_bench()
