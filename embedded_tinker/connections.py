"""Connections to the embedded service: capped, and an idle or slow-headed one does not stay.

uvicorn's HTTP protocol (httptools', as h11's) on its own keeps a connection that never sends a request, or sends
its head a byte at a time, for as long as the peer likes, and accepts connections until the process runs out of
file descriptors: about 20,000 idle connections left every client with "connection reset".
``GuardedHttpToolsProtocol`` adds:

- a **head deadline**: from the moment a connection opens, and again from the end of each response, the
  next request's head must be complete within HEAD_TIMEOUT_SECONDS, or the connection is closed (a
  request being served or a long poll is never cut: the deadline counts only while no request is in);
- a **connection cap**: past MAX_CONNECTIONS open connections, a new one closes the connection that has
  been idle longest (no request in it), or is itself closed when none is idle. A flood of idle
  connections therefore cannot lock a client out, and the server stays below its descriptor limit.

uvicorn's own keep-alive timeout (KEEP_ALIVE_SECONDS after a response) still applies. Both the server
subprocess (``python -m embedded_tinker serve``) and ``start_server(in_process=True)`` run with
``uvicorn_options()``. tools/attacks/connection_flood.py measures it.

The guard sits on httptools' C parser, not h11's pure-Python one (issue 48): the server process spends
less CPU per request on it (64 concurrent sampling requests, asample + retrieve_future each: figures in
docs/embedded-backend.md, "Where the HTTP side's CPU goes").
"""

from __future__ import annotations

import asyncio
import resource

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

HEAD_TIMEOUT_SECONDS = 10.0
KEEP_ALIVE_SECONDS = 5  # uvicorn's default, stated
MAX_CONNECTIONS = 1024


def connection_cap() -> int:
    """MAX_CONNECTIONS, or half the process's descriptor limit when that is lower (1024 is a common soft limit)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return MAX_CONNECTIONS if soft == resource.RLIM_INFINITY else max(16, min(MAX_CONNECTIONS, soft // 2))


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    _head_deadline: asyncio.TimerHandle | None = None
    _idle_since: float = 0.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._idle_since = self.loop.time()
        if len(self.connections) > connection_cap():
            idle = [c for c in self.connections if c is not self and isinstance(c, GuardedHttpToolsProtocol) and c.idle()]
            victim = min(idle, key=lambda c: c._idle_since) if idle else self
            victim.close_idle()
            if victim is self:
                return
        self._arm_head_deadline()

    def idle(self) -> bool:
        """No request in this connection: none begun, or the last one answered and no new head complete
        (httptools makes a request's cycle once its head is complete; a partial head makes none; a head completed
        while another request is served waits in the pipeline)."""
        return (self.cycle is None or self.cycle.response_complete) and not self.pipeline

    def close_idle(self) -> None:
        self._cancel_head_deadline()
        if not self.transport.is_closing():
            self.transport.close()

    def _arm_head_deadline(self) -> None:
        self._cancel_head_deadline()
        self._head_deadline = self.loop.call_later(HEAD_TIMEOUT_SECONDS, self._head_deadline_passed)

    def _cancel_head_deadline(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_deadline_passed(self) -> None:
        self._head_deadline = None
        if self.idle():
            self.close_idle()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._idle_since = self.loop.time()
            self._arm_head_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_deadline()
        super().connection_lost(exc)


def uvicorn_options() -> dict:
    """The uvicorn.Config / uvicorn.run options that put GuardedHttpToolsProtocol in front of the service."""
    return {"http": GuardedHttpToolsProtocol, "timeout_keep_alive": KEEP_ALIVE_SECONDS}
