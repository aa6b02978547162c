"""Make many requests and never retrieve their results; measure what the server keeps, and for how long.

    python -m tools.attacks.unretrieved_results --start-server [--requests 8000] [--ttl 20] [--rounds 3]

Loopback only, bounded (at most 5 rounds of 20,000 requests of one sampled token each). --ttl starts the server with
EMBEDDED_TINKER_UNRETRIEVED_TTL_S (default 900 s) lowered, so expiry can be watched. Prints the server's
healthz `results` and resident memory after each round's requests and again after the TTL passed: kept
results add up round after round, expired ones leave room for the next round's.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from embedded_tinker.launch import LOCAL_API_KEY, start_server
from embedded_tinker.results import TTL_ENV

from .model_hoard import rss_mb


def attack(base_url: str, pid: int, requests: int, wait_s: float, rounds: int) -> dict:
    """`rounds` times: `requests` requests never retrieved, then a wait past the TTL. Freed results make room for
    the next round's (RSS flat); kept ones add up (RSS grows each round)."""
    headers = {"X-API-Key": LOCAL_API_KEY}
    body = {"base_model": "embedded/tiny-random", "num_samples": 1, "sampling_params": {"max_tokens": 1},
            "prompt": {"chunks": [{"type": "encoded_text", "tokens": [1, 2, 3]}]}}
    report: dict = {"requests_per_round": requests, "waited_s": wait_s, "server_rss_before_mb": rss_mb(pid),
                    "rounds": []}
    with httpx.Client(base_url=base_url, headers=headers, timeout=60) as client, ThreadPoolExecutor(8) as pool:
        for _ in range(rounds):
            statuses = list(pool.map(lambda _: client.post("/api/v1/asample", json=body).status_code,
                                     range(requests)))
            time.sleep(5.0)  # the last samples finish
            held = client.get("/api/v1/healthz").json().get("results")
            after = rss_mb(pid)
            time.sleep(wait_s)
            report["rounds"].append({"accepted": statuses.count(200), "results_after_requests": held,
                                     "server_rss_after_requests_mb": after,
                                     "results_after_wait": client.get("/api/v1/healthz").json().get("results"),
                                     "server_rss_after_wait_mb": rss_mb(pid)})
    return report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.attacks.unretrieved_results")
    parser.add_argument("--start-server", action="store_true", required=True)
    parser.add_argument("--requests", type=int, default=8000)
    parser.add_argument("--ttl", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    if not (0 < args.requests <= 20_000 and 0 < args.ttl <= 600 and 0 < args.rounds <= 5):
        parser.error("bounded: at most 5 rounds of 20,000 requests and a TTL of at most 600 s")
    os.environ[TTL_ENV] = str(args.ttl)  # the server subprocess inherits it
    with start_server() as server:
        print(json.dumps(attack(server.base_url, server.process.pid, args.requests, args.ttl + 15.0, args.rounds)))


if __name__ == "__main__":
    main()
