"""Peak memory and time of `python -m flows.validate` on oversized input (issue 47, G1).

    python benchmarks/grader_input_memory.py [--repo DIR] [--workdir /tmp] [--cases a,b,...] [--run-dir RUN]

Builds each input under a fresh directory in --workdir, runs the grader of --repo (default: this checkout;
pass an older checkout to measure it, e.g. the parent commit's worktree) as a child process under
/usr/bin/time, prints one row per case (exit code, wall seconds, peak RSS, the first line of stderr), and
deletes the input before the next case. --run-dir is a finished run directory to copy for the run-directory
cases (default: the newest wiring rehearsal under /tmp/*/runs or ./runs).

Cases:
  result-300mb      a bare result.json of 300 MB (one inline evidence file of 300 MB of text)
  result-1gb        a bare result.json of 1 GB (the same shape)
  events-1gb        a run directory whose events.jsonl is 1 GB (1 MB lines)
  events-200mb      a run directory whose events.jsonl is 200 MB (1 MB lines): under the cap, read in full
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MB = 1000 * 1000
LINE = 1000 * 1000  # bytes per events.jsonl line in the run-directory cases


def bare_result(size: int):
    def build(where: Path) -> Path:
        path = where / "result.json"
        head = b'{"status": "succeeded", "evidence": {"version": 1, "files": [{"name": "blob.txt", "kind": "metrics", "content": "'
        tail = b'"}]}}'
        with open(path, "wb") as out:
            out.write(head)
            chunk = b"a" * MB
            left = size - len(head) - len(tail)
            while left > 0:
                out.write(chunk[:left])
                left -= len(chunk)
            out.write(tail)
        return path
    return build


def run_dir_with_events(size: int, source: Path):
    def build(where: Path) -> Path:
        target = where / source.name
        shutil.copytree(source, target, ignore=shutil.ignore_patterns("run.lock"))
        line = b'{"ts": "2026-12-07T15:00:00+00:00", "event": "progress", "note": "' + b"x" * (LINE - 80) + b'"}\n'
        with open(target / "events.jsonl", "ab") as out:
            for _ in range(max(1, (size - (target / "events.jsonl").stat().st_size) // len(line))):
                out.write(line)
        return target
    return build


def newest_run_dir() -> Path | None:
    found = [Path(p) for p in glob.glob("/tmp/*/*/runs/*/result.json") + glob.glob("runs/*/result.json")]
    return max(found, key=lambda p: p.stat().st_mtime).parent if found else None


def measure(repo: Path, target: Path) -> tuple[int, float, float, str]:
    with tempfile.NamedTemporaryFile("r", suffix=".time") as timing:
        done = subprocess.run(["/usr/bin/time", "-o", timing.name, "-f", "%e %M", sys.executable, "-m", "flows.validate",
                               str(target)], cwd=repo, capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(repo), "HF_HUB_OFFLINE": "1"})
        seconds, kib = timing.read().split()[-2:]
    first = (done.stderr.strip().splitlines() or [""])[0][:150]
    return done.returncode, float(seconds), int(kib) / 1024, first


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=REPO)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--cases", default="result-300mb,result-1gb,events-1gb,events-200mb")
    parser.add_argument("--run-dir", type=Path, default=None)
    args = parser.parse_args()
    source = args.run_dir or newest_run_dir()
    builders = {"result-300mb": bare_result(300 * MB), "result-1gb": bare_result(1000 * MB)}
    if source is not None:
        builders |= {"events-1gb": run_dir_with_events(1000 * MB, source),
                     "events-200mb": run_dir_with_events(200 * MB, source)}
    print(f"grader of {args.repo}")
    print(f"{'case':14} {'exit':>4} {'seconds':>8} {'peak RSS MB':>12}  stderr")
    for case in args.cases.split(","):
        if case not in builders:
            print(f"{case:14} skipped (no run directory to copy: pass --run-dir)" if case.startswith("events")
                  else f"{case:14} unknown case")
            continue
        where = Path(tempfile.mkdtemp(prefix="grader-input-", dir=args.workdir))
        try:
            code, seconds, rss, first = measure(args.repo, builders[case](where))
        finally:
            shutil.rmtree(where, ignore_errors=True)
        print(f"{case:14} {code:>4} {seconds:>8.2f} {rss:>12.0f}  {first}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
