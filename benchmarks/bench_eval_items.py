"""The feasibility pilot's greedy evaluation, timed at several item counts (a benchmark, issue 31.3).

    python benchmarks/bench_eval_items.py [--time-factor 0.3] [--repeats 3] [--items 1 32 500] [--json]

The pilot times the evaluation of a few items per scored model (32 by default) and projects the full
evaluation (hundreds of items per model) from their time per item. This measures whether that holds:
on an embedded backend with the `spindle-qwen3.5-2b` service profile (a subprocess, as the pipeline's),
the pipeline's own `greedy_predictions` over the stock SDK (64 requests in flight, the base model of the
rehearsal, its held-out arithmetic items) answers the first N items for each N in --items, --repeats
times, one after another. For each it reports the client's wall time per item, the service time per
item (the profile's service_seconds from healthz: what the service bills), the CPU seconds per
item of this client process (the SDK's threads, prompt rendering, answer grading), and the pilot's
split of the same items into its calls (EvaluationPace: the pace per item and the fixed time per evaluation).

When the machine keeps up with the profile, the time per item is the same at 32 items as at 500 and
the pilot's projection comes true; when the client's CPU per item exceeds the profile's time per item
(a small --time-factor on a 2-core machine), the phase is CPU-shaped and the times per item vary with
the machine's load (docs/service-profile.md).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TINKER_TELEMETRY", "0")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import tinker

from bench_pipeline import service_profile_report  # benchmarks/ is on sys.path: run as a script from there
from embedded_tinker.launch import LOCAL_API_KEY, start_server
from embedded_tinker.service_profile import profile_named
from experiment.contract.rollout import DEFAULT_RENDERER
from experiment.data import load_task_file
from experiment.rl.math_eval import greedy_predictions
from experiment.rl.recipe import renderer_for, run_async
from experiment.stats.feasibility import EvaluationPace

MODEL = "embedded/tiny-arith"
ITEMS = Path(__file__).resolve().parent.parent / "embedded_tinker" / "tasks" / "data" / "test.jsonl"
MAX_TOKENS = 16  # the arithmetic stand-in's answer length (experiment.contract.rehearsal)


def service_seconds(base_url: str) -> float:
    """What the service has billed so far (the profile's service_seconds)."""
    return service_profile_report(base_url)["service_seconds"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--time-factor", type=float, default=0.3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--items", type=int, nargs="+", default=[1, 32, 128, 500])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()

    items = load_task_file(ITEMS)
    rows = []
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    with start_server(profile=profile_named("spindle-qwen3.5-2b", args.time_factor)) as server:
        client = tinker.ServiceClient(base_url=server.base_url, api_key=LOCAL_API_KEY)
        renderer = renderer_for(client.create_lora_training_client(base_model=MODEL, rank=8), DEFAULT_RENDERER)
        sampler = client.create_sampling_client(base_model=MODEL).result()
        run_async(greedy_predictions(sampler, renderer, items[:8], MAX_TOKENS, few_shot=False))  # warm-up
        for repeat in range(args.repeats):
            for n in args.items:
                billed, started, cpu = service_seconds(server.base_url), time.perf_counter(), time.process_time()
                run_async(greedy_predictions(sampler, renderer, items[:n], MAX_TOKENS, few_shot=False))
                wall, cpu = time.perf_counter() - started, time.process_time() - cpu
                billed = service_seconds(server.base_url) - billed
                # the pilot's calls over the same items (experiment.stats.feasibility.EvaluationPace)
                timed, start = [], 0
                for size in EvaluationPace.calls(n):
                    begun = time.perf_counter()
                    run_async(greedy_predictions(sampler, renderer, items[start:start + size], MAX_TOKENS,
                                                 few_shot=False))
                    timed.append((size, time.perf_counter() - begun))
                    start += size
                pace = EvaluationPace.of_calls(timed)
                rows.append({"repeat": repeat, "items": n, "wall_ms_per_item": 1e3 * wall / n,
                             "service_ms_per_item": 1e3 * billed / n, "client_cpu_ms_per_item": 1e3 * cpu / n,
                             "split_pace_ms_per_item": 1e3 * pace.seconds_per_item,
                             "split_fixed_ms": 1e3 * pace.fixed_seconds})
                if not args.json:
                    print(f"repeat {repeat} items {n:4d}: wall {rows[-1]['wall_ms_per_item']:7.2f} ms/item, "
                          f"service {rows[-1]['service_ms_per_item']:7.2f}, client CPU "
                          f"{rows[-1]['client_cpu_ms_per_item']:7.2f}", flush=True)
    profile_ms = 1e3 * profile_named("spindle-qwen3.5-2b", args.time_factor).seconds("sample_greedy")
    by_items = {n: [r for r in rows if r["items"] == n] for n in args.items}
    summary = {str(n): {key: round(statistics.median(r[key] for r in group), 3)
                        for key in ("wall_ms_per_item", "service_ms_per_item", "client_cpu_ms_per_item",
                            "split_pace_ms_per_item", "split_fixed_ms")}
               for n, group in by_items.items()}
    report = {"time_factor": args.time_factor, "profile_ms_per_greedy_item": round(profile_ms, 3),
              "load_average_at_start": load_at_start, "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
              "median_by_items": summary, "rows": rows}
    print(json.dumps(report, indent=1) if args.json else
          f"profile {profile_ms:.2f} ms per greedy item; medians by items: {json.dumps(summary)}")


if __name__ == "__main__":
    main()
