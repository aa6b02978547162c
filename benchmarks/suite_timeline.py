"""Where a test run's wall time went: per worker, the files it ran in order with their wall and CPU seconds,
and which worker ended last. Reads the JSON lines that tests/conftest.py writes with SUITE_TIMELINE=<dir>.

    SUITE_TIMELINE=/tmp/tl pytest ...          # mkdir /tmp/tl first
    python -m benchmarks.suite_timeline /tmp/tl [--top 25]

CPU is the test process's own plus its reaped children's (servers and CLIs a test started and waited for);
a session server started by the controller, or a server of a module fixture torn down after a later test
began, is counted where it is reaped, if anywhere.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path


def read(folder: Path) -> list[dict]:
    return [json.loads(line) for path in sorted(folder.glob("*.jsonl")) for line in path.read_text().splitlines()]


def by_file(rows: list[dict]) -> dict[tuple[str, str], dict]:
    """(worker, file) -> first start, last end, wall (sum of its tests'), cpu, tests."""
    files: dict[tuple[str, str], dict] = {}
    for row in rows:
        key = (row["worker"], row["test"].split("::", 1)[0])
        entry = files.setdefault(key, {"start": row["start"], "end": row["end"], "wall": 0.0, "cpu": 0.0, "tests": 0})
        entry["start"], entry["end"] = min(entry["start"], row["start"]), max(entry["end"], row["end"])
        entry["wall"] += row["end"] - row["start"]
        entry["cpu"] += row["cpu"] + row["children_cpu"]
        entry["tests"] += 1
    return files


def report(rows: list[dict], top: int) -> str:
    t0 = min(r["start"] for r in rows)
    files = by_file(rows)
    workers: dict[str, list] = defaultdict(list)
    for (worker, file), entry in files.items():
        workers[worker].append((entry["start"], file, entry))
    lines = [f"{len(rows)} tests, {len(files)} (worker, file) pairs; times in s from the first test's start"]
    ends = {w: max(e["end"] for _, _, e in items) - t0 for w, items in workers.items()}
    for worker in sorted(workers, key=lambda w: ends[w]):
        items = sorted(workers[worker])
        busy = sum(e["wall"] for _, _, e in items)
        cpu = sum(e["cpu"] for _, _, e in items)
        lines.append(f"\n{worker}: ends at {ends[worker]:.1f}, tests' wall {busy:.1f}, cpu {cpu:.1f} "
                     f"(own + reaped children), {len(items)} files")
        for start, file, entry in items:
            if entry["wall"] >= 5 or entry["end"] - t0 > ends[worker] - 30:
                lines.append(f"  {start - t0:7.1f} -> {entry['end'] - t0:7.1f}  wall {entry['wall']:6.1f}  "
                             f"cpu {entry['cpu']:6.1f}  {entry['tests']:4d}  {file}")
    total_cpu: dict[str, float] = defaultdict(float)
    for (_, file), entry in files.items():
        total_cpu[file] += entry["cpu"]
    lines.append(f"\nCPU by file (top {top}; all files {sum(total_cpu.values()):.1f}):")
    for file, seconds in sorted(total_cpu.items(), key=lambda kv: -kv[1])[:top]:
        lines.append(f"  {seconds:7.1f}  {file}")
    slowest = sorted(rows, key=lambda r: r["start"] - r["end"])[:top]
    lines.append(f"\nlongest tests (wall; top {top}):")
    lines += [f"  {r['end'] - r['start']:7.1f}  cpu {r['cpu'] + r['children_cpu']:6.1f}  {r['worker']}  {r['test']}"
              for r in slowest]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    print(report(read(args.folder), args.top))


if __name__ == "__main__":
    main()
