"""The embedded server's launcher serves on a port no other process can take.

Found in a clean-clone CI run (6 failures in test_embedded_exposure.py): the launcher probed a free
port, closed the probe and started the server, which bound that port seconds later. Meanwhile another
xdist worker's server took it, and the launcher's health wait, which accepts any 200 from the port,
took that server's answer for its own: the production-exposure server's URL answered "embedded".
The launcher now binds the socket itself and hands it to the server (embedded_tinker/launch.py), as a
socket whose accepted connections get TCP_NODELAY (the last test).
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from embedded_tinker import launch
from embedded_tinker.launch import start_server


class _ForeignHealthAnswer(BaseHTTPRequestHandler):
    """A stand-in for another process's embedded server: 200 with an embedded-exposure health body."""

    def do_GET(self):
        body = json.dumps({"status": "ok", "exposure": "embedded"}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def foreign_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ForeignHealthAnswer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_the_health_wait_alone_takes_any_server_on_the_port_for_its_own(foreign_server):
    """The attack, against a launcher weakened to its health wait: the wait cannot tell whose server
    answers, so the port must be this launcher's before its server starts."""
    url = f"http://127.0.0.1:{foreign_server.server_address[1]}"
    launch._wait_until_healthy(url, alive=lambda: True, log_path=None)  # returns: the foreign answer passed
    assert httpx.get(f"{url}/api/v1/healthz").json()["exposure"] == "embedded"


@pytest.mark.parametrize("in_process", [False, True], ids=["subprocess", "in-process"])
def test_a_taken_port_is_refused_not_served_by_the_other_server(foreign_server, in_process, tmp_path):
    """Before the fix this returned a "production" server whose URL answered "embedded"."""
    with pytest.raises(OSError) as refused:
        start_server(port=foreign_server.server_address[1], checkpoint_dir=tmp_path, exposure="production",
                     in_process=in_process)
    assert refused.value.errno == errno.EADDRINUSE


def test_the_port_is_taken_before_the_server_process_starts(monkeypatch, tmp_path):
    """At the moment the server process is started, a rival can no longer bind its port (before the fix
    the port was free until the server bound it), and the server answers on it as itself."""
    rival_binds: list[object] = []
    popen = launch._popen_tied_to_process

    def start_with_a_rival(command, **kwargs):
        fd = int(next(arg for arg in command if arg.startswith("--fd=")).split("=", 1)[1])
        with socket.socket(fileno=os.dup(fd)) as handed:
            port = handed.getsockname()[1]
        with socket.socket() as rival:
            rival.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                rival.bind(("127.0.0.1", port))
                rival_binds.append("bound")
            except OSError as error:
                rival_binds.append(error.errno)
        return popen(command, **kwargs)

    monkeypatch.setattr(launch, "_popen_tied_to_process", start_with_a_rival)
    with start_server(checkpoint_dir=tmp_path, exposure="production") as server:
        assert rival_binds == [errno.EADDRINUSE]
        assert httpx.get(f"{server.base_url}/api/v1/healthz").json()["exposure"] == "production"


def test_serve_refuses_an_fd_that_is_not_a_socket(tmp_path):
    with open(tmp_path / "not-a-socket", "w") as plain:
        done = subprocess.run([sys.executable, "-m", "embedded_tinker", "serve", f"--fd={plain.fileno()}"],
                              pass_fds=(plain.fileno(),), capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "not a listening socket" in done.stderr and "Traceback" not in done.stderr


def _nodelay_of_an_accepted_connection(listener: socket.socket) -> int:
    """TCP_NODELAY on the server side of one connection that asyncio (as uvicorn) accepts on `listener`."""
    seen: list[int] = []

    class Record(asyncio.Protocol):
        def connection_made(self, transport):
            seen.append(transport.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()

    async def accept_one():
        server = await asyncio.get_running_loop().create_server(Record, sock=listener)
        port = listener.getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        while not seen:
            await asyncio.sleep(0.01)
        writer.close()
        server.close()

    asyncio.run(asyncio.wait_for(accept_one(), 30))
    return seen[0]


def test_the_connections_a_handed_socket_accepts_are_tcp_nodelay():
    """Without TCP_NODELAY each answer waits out the client's delayed ACK: the first form of this fix handed the
    socket through uvicorn's `fd`, which labels it AF_UNIX with protocol 0, and asyncio then leaves TCP_NODELAY off
    (a sequential healthz took 46 ms instead of 0.8 ms). The weakened forms first, then the launcher's two paths:
    the socket `serve --fd` builds from the descriptor, and the in-process listener itself."""
    as_uvicorn_fd = launch._listening_socket("127.0.0.1", 0)
    assert _nodelay_of_an_accepted_connection(socket.fromfd(as_uvicorn_fd.fileno(), socket.AF_UNIX,
                                                            socket.SOCK_STREAM)) == 0
    as_uvicorn_fd.close()
    protocol_zero = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    protocol_zero.bind(("127.0.0.1", 0))
    protocol_zero.listen()
    assert _nodelay_of_an_accepted_connection(protocol_zero) == 0

    handed = launch._listening_socket("127.0.0.1", 0)
    assert _nodelay_of_an_accepted_connection(launch.serving_socket(os.dup(handed.fileno()))) != 0
    handed.close()
    assert _nodelay_of_an_accepted_connection(launch._listening_socket("127.0.0.1", 0)) != 0
