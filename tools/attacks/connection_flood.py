"""Flood the embedded service with idle and slow-headed connections, then see whether a client still gets in.

    python -m tools.attacks.connection_flood --url http://127.0.0.1:PORT [--idle 2000] [--slow 50] [--seconds 20]
    python -m tools.attacks.connection_flood --start-server [--server-nofile 1024] ...

Loopback only, bounded: at most 20,000 connections and 120 s. It opens `--idle` connections that never send a
byte and `--slow` ones that send a request head one byte per second, then times one keyed request
(`telemetry`) from a fresh connection, waits `--seconds`, and counts the attacker's connections the server
closed. Prints one JSON object. `--start-server` starts the current code's server (subprocess) with its
descriptor limit lowered to `--server-nofile`, as on a desktop whose soft limit is 1024.
"""

from __future__ import annotations

import argparse
import json
import resource
import selectors
import socket
import time

from embedded_tinker.launch import LOCAL_API_KEY, start_server

from .loopback import loopback_target, post_json

MAX_CONNECTIONS = 20_000
MAX_SECONDS = 120.0


def _open(host: str, port: int, count: int) -> tuple[list[socket.socket], int]:
    opened, refused = [], 0
    for _ in range(count):
        try:
            opened.append(socket.create_connection((host, port), timeout=5))
        except OSError:
            refused += 1
    return opened, refused


def _closed_by_server(sockets: list[socket.socket]) -> int:
    """How many of `sockets` the server has closed (readable with EOF or reset)."""
    closed = 0
    with selectors.DefaultSelector() as selector:
        for sock in sockets:
            sock.setblocking(False)
            selector.register(sock, selectors.EVENT_READ)
        for key, _ in selector.select(timeout=0.5):
            try:
                if key.fileobj.recv(1, socket.MSG_PEEK) == b"":
                    closed += 1
            except OSError:
                closed += 1
    return closed


def attack(host: str, port: int, idle: int, slow: int, seconds: float, api_key: str) -> dict:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    idle_sockets, refused_idle = _open(host, port, idle)
    slow_sockets, refused_slow = _open(host, port, slow)
    head = f"POST /api/v1/telemetry HTTP/1.1\r\nHost: {host}:{port}\r\nX-Padding: ".encode()
    started = time.monotonic()
    try:
        status, _ = post_json(host, port, "telemetry", {}, api_key, timeout=30)
        client = {"status": status, "seconds": round(time.monotonic() - started, 3)}
    except OSError as error:
        client = {"error": f"{type(error).__name__}: {error}", "seconds": round(time.monotonic() - started, 3)}
    sent = 0
    while time.monotonic() - started < seconds:
        for sock in slow_sockets:
            try:
                sock.send(head[sent % len(head):sent % len(head) + 1])
            except OSError:
                pass
        sent += 1
        time.sleep(1.0)
    report = {
        "idle_opened": len(idle_sockets), "idle_refused_at_connect": refused_idle,
        "slow_opened": len(slow_sockets), "slow_refused_at_connect": refused_slow,
        "client_during_flood": client, "waited_seconds": seconds,
        "idle_closed_by_server": _closed_by_server(idle_sockets),
        "slow_closed_by_server": _closed_by_server(slow_sockets),
    }
    for sock in idle_sockets + slow_sockets:
        sock.close()
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.attacks.connection_flood")
    parser.add_argument("--url")
    parser.add_argument("--start-server", action="store_true")
    parser.add_argument("--server-nofile", type=int, default=1024)
    parser.add_argument("--idle", type=int, default=2000)
    parser.add_argument("--slow", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--api-key", default=LOCAL_API_KEY)
    args = parser.parse_args(argv)
    if args.idle + args.slow > MAX_CONNECTIONS or not 0 <= args.seconds <= MAX_SECONDS:
        parser.error(f"bounded: at most {MAX_CONNECTIONS} connections and {MAX_SECONDS:.0f} s")
    if args.start_server == bool(args.url):
        parser.error("give --url or --start-server")
    if args.url:
        host, port = loopback_target(args.url)
        print(json.dumps(attack(host, port, args.idle, args.slow, args.seconds, args.api_key)))
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(args.server_nofile, hard), hard))  # the server inherits it
    try:
        server = start_server()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    with server:
        host, port = loopback_target(server.base_url)
        print(json.dumps({"server_nofile": args.server_nofile,
                          **attack(host, port, args.idle, args.slow, args.seconds, args.api_key)}))


if __name__ == "__main__":
    main()
