"""Servers from two (or more) checkouts side by side, as bench_embedded.py's HTTP side measures one (a benchmark).

    python benchmarks/ab_sampling_servers.py NAME=CHECKOUT[@ENV:VALUE,...] NAME=CHECKOUT ... [--rounds 10]

Each CHECKOUT (a directory holding an embedded_tinker package, e.g. `git archive <commit> embedded_tinker | tar -x
-C DIR`) serves in its own subprocess (`python -m embedded_tinker serve`, PYTHONPATH=CHECKOUT, one torch thread,
the optional environment variables given after @). This process pins itself to one CPU first (--cpu, default the
last one it may use), so every server and its threads share that CPU, as in bench_embedded.py. Each round sends
bench_embedded.py's burst (64 concurrent SDK requests x 64 tokens, seeded, temperature 1, stop=[]) to every server
and runs the same generate() batch, in one order on even rounds and the reverse on odd ones, and reads per burst:
the wall time, this process's CPU (the SDK client), the server process's CPU and, from healthz, the engine's step
CPU and steps. Printed: medians over rounds, and generate()'s CPU over each server's (client + server) per round,
the HTTP guard's ratio per CPU second. A figure of a shared machine, not an assertion.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TINKER_TELEMETRY", "0")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_embedded as bench  # noqa: E402
import httpx  # noqa: E402
import tinker  # noqa: E402
import torch  # noqa: E402

from embedded_tinker.launch import LOCAL_API_KEY  # noqa: E402
from embedded_tinker.model import load_base_model, load_hf_model, resolve_base_model  # noqa: E402

MODEL = "embedded/tiny-arith"
PROMPTS, PROMPT_LENGTH, NEW_TOKENS = 64, 16, 64


def serve(checkout: str, extra_env: dict[str, str], log: Path) -> tuple[subprocess.Popen, str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": checkout, "EMBEDDED_TINKER_TORCH_THREADS": "1", **extra_env}
    process = subprocess.Popen([sys.executable, "-m", "embedded_tinker", "serve", f"--port={port}", "--torch-threads=1"],
                               env=env, cwd=checkout, stdout=log.open("w"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(f"{url}/api/v1/healthz", timeout=2).status_code == 200:
                return process, url
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"{checkout}: no server at {url} (log {log})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("servers", nargs="+", help="NAME=CHECKOUT[@ENV:VALUE,...]")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--cpu", type=int, default=None)
    args = parser.parse_args()
    os.sched_setaffinity(0, {args.cpu if args.cpu is not None else max(os.sched_getaffinity(0))})
    torch.set_num_threads(1)
    load_at_start = os.getloadavg()
    servers = {}
    for spec in args.servers:
        name, _, rest = spec.partition("=")
        checkout, _, extra = rest.partition("@")
        extra_env = dict(item.split(":", 1) for item in extra.split(",") if item)
        servers[name] = serve(str(Path(checkout).resolve()), extra_env, Path(f"/tmp/ab-server-{name}.log"))
    base = load_base_model(MODEL)
    plain = load_hf_model(resolve_base_model(MODEL)).eval()
    prompts = [s[:PROMPT_LENGTH] for s in bench.make_batch(PROMPTS, PROMPT_LENGTH, base.config.vocab_size, seed=1)]
    clients = {}
    try:
        for name, (_, url) in servers.items():
            client = tinker.ServiceClient(base_url=url, api_key=LOCAL_API_KEY)
            clients[name] = (client, client.create_sampling_client(base_model=MODEL).result())
            bench.server_tokens(clients[name][1], prompts, NEW_TOKENS, 10_000)  # warm-up
        bench.generate_tokens(plain, prompts, 4)
        results: dict[str, list[dict]] = {name: [] for name in [*servers, "generate"]}
        for round_index in range(args.rounds):
            order = [*servers, "generate"]
            for name in order if round_index % 2 == 0 else reversed(order):
                started, cpu = time.perf_counter(), time.process_time()
                if name == "generate":
                    bench.generate_tokens(plain, prompts, NEW_TOKENS)
                    results[name].append({"wall": time.perf_counter() - started, "cpu": time.process_time() - cpu})
                    continue
                process, url = servers[name]
                before, server_cpu = bench.engine_report(url), bench.process_cpu_seconds(process.pid)
                started, cpu = time.perf_counter(), time.process_time()
                bench.server_tokens(clients[name][1], prompts, NEW_TOKENS, round_index * PROMPTS)
                wall, client = time.perf_counter() - started, time.process_time() - cpu
                server = bench.process_cpu_seconds(process.pid) - server_cpu
                after = bench.engine_report(url)
                results[name].append({"wall": wall, "client": client, "server": server, "cpu": client + server,
                                      "engine": after["step_cpu_seconds"] - before["step_cpu_seconds"],
                                      "steps": after["steps"] - before["steps"]})
    finally:
        for name, (process, _) in servers.items():
            if name in clients:
                clients[name][0].close("success")
            process.terminate()
    median = statistics.median
    print(f"load {load_at_start[0]:.2f} -> {os.getloadavg()[0]:.2f}; {args.rounds} alternating rounds, medians; "
          f"generate() {median(r['cpu'] for r in results['generate']):.3f} CPU-s per burst")
    for name in servers:
        rows = results[name]
        ratios = [g["cpu"] / r["cpu"] for g, r in zip(results["generate"], rows)]
        print(f"{name}: CPU-s per burst {median(r['cpu'] for r in rows):.3f} (client {median(r['client'] for r in rows):.3f},"
              f" server {median(r['server'] for r in rows):.3f}: engine steps {median(r['engine'] for r in rows):.3f},"
              f" the rest {median(r['server'] - r['engine'] for r in rows):.3f}); steps {median(r['steps'] for r in rows)};"
              f" wall {median(r['wall'] for r in rows):.3f} s; generate()/this per CPU-s {median(ratios):.3f}"
              f" (rounds {', '.join(f'{x:.2f}' for x in ratios)})")


if __name__ == "__main__":
    main()
