"""Create many large training models in one session, then finish it, and measure the server's memory.

    python -m tools.attacks.model_hoard --start-server [--models 16] [--rank 1024]

Loopback only, bounded (at most 64 models, rank at most 1024). Prints the server's resident memory
(VmRSS, /proc/PID/status) before, after the models, and after `sessions/{id}/finish` (ServiceClient.close()),
and how many models the server made and refused.
"""

from __future__ import annotations

import argparse
import gc
import json
import time

import httpx
import tinker

from embedded_tinker.launch import LOCAL_API_KEY, start_server


def rss_mb(pid: int) -> float:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError("no VmRSS")


def attack(base_url: str, pid: int, models: int, rank: int) -> dict:
    before = rss_mb(pid)
    service = tinker.ServiceClient(base_url=base_url, api_key=LOCAL_API_KEY)
    made, refused = 0, []
    for _ in range(models):
        try:
            service.create_lora_training_client(base_model="embedded/tiny-random", rank=rank).result()
            made += 1
        except tinker.TinkerError as error:  # the server's limit
            refused.append(str(error)[:200])
    with_models = rss_mb(pid)
    service.close("success").result()
    gc.collect()
    time.sleep(1.0)
    live = httpx.get(f"{base_url}/api/v1/healthz").json().get("live_models")
    return {"live_models_after_finish": live, "models_asked": models, "rank": rank, "models_made": made, "refused": len(refused),
            "first_refusal": refused[0] if refused else None, "server_rss_before_mb": before,
            "server_rss_with_models_mb": with_models, "server_rss_after_finish_mb": rss_mb(pid)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.attacks.model_hoard")
    parser.add_argument("--start-server", action="store_true", required=True)
    parser.add_argument("--models", type=int, default=16)
    parser.add_argument("--rank", type=int, default=1024)
    args = parser.parse_args(argv)
    if not (0 < args.models <= 64 and 0 < args.rank <= 1024):
        parser.error("bounded: at most 64 models of rank at most 1024")
    with start_server() as server:
        print(json.dumps(attack(server.base_url, server.process.pid, args.models, args.rank)))


if __name__ == "__main__":
    main()
