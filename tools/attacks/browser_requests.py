"""What a web page (CSRF, DNS rebinding), a caller without the key, and a second client can do to the embedded service.

    python -m tools.attacks.browser_requests --start-server
    python -m tools.attacks.browser_requests --url http://127.0.0.1:PORT --key KEY_A --other-key KEY_B

Loopback only; a dozen requests. With --start-server the current code's server is started with two keys
(two clients). Prints one JSON object: for each attempt, the HTTP status the service answered (2xx: the
attack worked).
"""

from __future__ import annotations

import argparse
import http.client
import json

from embedded_tinker.launch import start_server

from .loopback import loopback_target, post_json

KEY_A, KEY_B = "tml-attack-client-a", "tml-attack-client-b"


def get(host: str, port: int, path: str, key: str) -> tuple[int, dict]:
    connection = http.client.HTTPConnection(host, port, timeout=30)
    try:
        connection.request("GET", f"/api/v1/{path}", headers={"X-API-Key": key})
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read() or b"{}")
    finally:
        connection.close()


def attack(host: str, port: int, key: str, other_key: str) -> dict:
    session = lambda **headers: post_json(host, port, "create_session", {}, key, headers=headers)[0]  # noqa: E731
    report = {
        "cross-origin text/plain create_session": session(**{"Origin": "http://evil.example",
                                                              "Content-Type": "text/plain"}),
        "Host: attacker.example (DNS rebinding)": session(Host="attacker.example"),
        "form-encoded body": session(**{"Content-Type": "application/x-www-form-urlencoded"}),
        "wrong key": post_json(host, port, "create_session", {}, "tml-guessed")[0],
        "no key": post_json(host, port, "create_session", {}, "", headers={"X-API-Key": ""})[0],
        "the SDK's own request (control)": session(),
    }
    # client A makes a run and a checkpoint; client B (another key) tries to see them
    status, answer = post_json(host, port, "create_session", {}, key)
    session_id = answer.get("session_id", "sess-attack")
    status, answer = post_json(host, port, "create_model", {"session_id": session_id, "model_seq_id": 0,
                                                            "base_model": "embedded/tiny-random",
                                                            "lora_config": {"rank": 1}}, key)
    run_id = f"{session_id}:train:0"
    while post_json(host, port, "retrieve_future", {"request_id": answer.get("request_id", "")}, key)[0] == 408:
        pass
    status, answer = post_json(host, port, "save_weights", {"model_id": run_id, "path": "a-state", "seq_id": 1}, key)
    while post_json(host, port, "retrieve_future", {"request_id": answer.get("request_id", "")}, key)[0] == 408:
        pass
    state = f"tinker://{run_id}/weights/a-state"
    listed = get(host, port, "checkpoints", other_key)[1].get("checkpoints", [])
    report.update({
        "client B lists client A's checkpoints": 200 if any(c["tinker_path"] == state for c in listed) else 404,
        "client B lists client A's run": get(host, port, f"training_runs/{run_id}/checkpoints", other_key)[0],
        "client B reads client A's checkpoint": post_json(host, port, "weights_info", {"tinker_path": state},
                                                          other_key)[0],
        "client B loads client A's checkpoint": post_json(host, port, "load_weights", {
            "path": state, "session_id": "sess-b", "model_seq_id": 0}, other_key)[0],
        "listing ../ (raw %2e%2e)": get(host, port, "training_runs/%2e%2e/checkpoints", key)[0],
    })
    return report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.attacks.browser_requests")
    parser.add_argument("--url")
    parser.add_argument("--key", default=KEY_A)
    parser.add_argument("--other-key", default=KEY_B)
    parser.add_argument("--start-server", action="store_true")
    args = parser.parse_args(argv)
    if args.start_server == bool(args.url):
        parser.error("give --url or --start-server")
    if args.url:
        print(json.dumps(attack(*loopback_target(args.url), args.key, args.other_key), indent=1))
        return
    with start_server(api_keys=(KEY_A, KEY_B)) as server:
        print(json.dumps(attack(*loopback_target(server.base_url), KEY_A, KEY_B), indent=1))


if __name__ == "__main__":
    main()
