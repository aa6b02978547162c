"""The service-wide limit per request in flight: no more of this process's requests at the service than the
slots it holds of the limit.

A pipeline call fans out into many HTTP requests (an evaluation samples every item at once, an RL step
samples every group), so a slot per pipeline call does not bound what the service sees. The bound is
kept where every request passes: the stock SDK's HTTP client (`tinker._base_client.AsyncHttpxClientWrapper`,
the httpx client of every `AsyncTinker` it builds; `ServiceClient` takes no client of ours). While
`requests_limited_by(slots)` is active, each request (work of the service: a submission, the long poll
for its result, a session's creation and finish; not the heartbeats, telemetry and client-config reads)
is sent only with a slot of `slots` in hand, and gives it back when its answer arrived. A request sent beside the
SDK (a plain httpx call: an export's download) takes its slot with `plain_request_slot()`.

`RequestSlots` holds slots of the shared limit only while this process has requests that want them: a
request that finds no free slot waits for one (first come, first served) and, when the process holds
fewer than `capacity`, one more is taken from the limit (`take_slot`, blocking, in a thread of its own);
a request that ends hands its slot to the next waiting request, or, when none waits, keeps it idle for a
moment (`linger_seconds`, for the next request of a chain) and then gives it back to the limit. So a fan-out
of 48 requests takes at most `capacity` slots once and passes them along, a training step's chain of
requests takes one, and a process with nothing to send holds none after a second. Between processes the
limit decides (a Prefect limit grants slots to whoever asks first after one is freed, in no queue): a
process whose requests keep waiting keeps its slots until they stop waiting, between two pipeline calls.
The slot source is the flow's (flows/concurrency.py: a Prefect global concurrency limit); this module
imports no Prefect.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from tinker import _base_client as sdk_http

# Requests that carry no work for the service: not counted by it, never held back (a session whose
# heartbeats waited for a slot could expire).
BACKGROUND_ENDPOINTS = ("session_heartbeat", "telemetry", "client/config", "client/dynamic_config", "healthz")

Release = Callable[[], None]


def is_background(request: httpx.Request) -> bool:
    return request.url.path.rstrip("/").endswith(BACKGROUND_ENDPOINTS)


class RequestSlots:
    """Slots of a shared limit, held while this process's requests use them or wait for them.

    `take_slot()` blocks until the shared limit grants one slot and returns the function that gives it
    back; it may raise (no such limit), and then every request waiting for a slot fails with that error.
    A slot whose request ended and that no request waits for is kept `linger_seconds` for the process's
    next request (a chain of requests one after another, as a training step makes, then takes the limit
    once), then given back. Slots are taken and given back in threads of their own (both are API calls
    to the limit's keeper). Used from the SDK's event loop (`async with slots.request()`), thread-safe."""

    def __init__(self, take_slot: Callable[[], Release], capacity: int, linger_seconds: float = 1.0):
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1 (got {capacity})")
        self.take_slot = take_slot
        self.capacity = capacity
        self.linger_seconds = linger_seconds
        self._lock = threading.Lock()
        self._busy: list[Release] = []  # slots this process holds that carry a request now
        self._idle: list[tuple[Release, float]] = []  # slots it holds that carry none, each with since when
        self._waiting: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future]] = deque()
        self._taking = False  # a take_slot() is under way
        self._taker: threading.Thread | None = None  # the thread of the latest take_slot()
        self._closed = False
        self._giving_back: list[threading.Thread] = []
        self.slots_taken = 0  # from the shared limit, so far (a figure for the run's log)
        self.most_in_flight = 0  # the most requests this process had in flight at once

    @property
    def carrying(self) -> int:
        """Slots carrying a request now (or handed from one request to the next)."""
        return len(self._busy)

    def request(self) -> _Slot:
        return _Slot(self)

    def give_back_all(self) -> None:
        """At the run's end: give back every slot (those of requests left behind by a run that stopped too:
        their answers no longer matter) and wait until the limit has them, a slot still being taken included:
        it is given back as soon as the limit grants it. (Not waiting for it left that slot held by a process
        about to exit: its lease renewal failed once the Prefect client closed, and the limit counted the slot
        active until the lease expired.)"""
        with self._lock:
            self._closed = True
            held = self._busy + [give_back for give_back, _ in self._idle]
            self._busy, self._idle = [], []
            left_waiting, self._waiting = list(self._waiting), deque()
            taker = self._taker  # joining one that already ended returns at once
        for loop, waiter in left_waiting:
            if not loop.is_closed():
                loop.call_soon_threadsafe(_settle, waiter, RuntimeError("the run's service slots were given back"))
        for give_back in held:
            self._give_back(give_back)
        self._wait_for_take(taker)
        for thread in list(self._giving_back):
            thread.join()

    @staticmethod
    def _wait_for_take(taker: threading.Thread | None) -> None:
        """Until a take under way has ended (closed, its slot goes straight back: _take_one)."""
        if taker is not None:
            taker.join()

    async def _enter(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._closed:
                raise RuntimeError("the run's service slots were given back")
            if self._idle:
                self._use(self._idle.pop()[0])
                return
            waiter = loop.create_future()
            self._waiting.append((loop, waiter))
            self._take_more_if_wanted()
        try:
            await waiter
        except asyncio.CancelledError:
            with self._lock:
                if (loop, waiter) in self._waiting:
                    self._waiting.remove((loop, waiter))
                    raise
            self._exit()  # it was handed a slot as it was cancelled: pass that slot on
            raise

    def _exit(self) -> None:
        with self._lock:
            if self._closed or self._wake_next():  # the slot goes to the next waiting request as it is
                return
            self._idle.append((self._busy.pop(), time.monotonic()))
        self._give_back_idle_later()

    def _use(self, give_back: Release) -> None:
        self._busy.append(give_back)
        self.most_in_flight = max(self.most_in_flight, len(self._busy))

    def _wake_next(self) -> bool:
        """Hand a busy slot to the first request still waiting (lock held)."""
        while self._waiting:
            loop, waiter = self._waiting.popleft()
            if not loop.is_closed():
                loop.call_soon_threadsafe(_settle, waiter, None)
                return True
        return False

    def _give_back_idle(self) -> None:
        """Give back the slots no request has used for `linger_seconds`."""
        with self._lock:
            cutoff = time.monotonic() - self.linger_seconds
            expired = [give_back for give_back, since in self._idle if since <= cutoff]
            self._idle = [(give_back, since) for give_back, since in self._idle if since > cutoff]
        for give_back in expired:
            self._give_back(give_back)

    def _take_more_if_wanted(self) -> None:
        """One more slot from the shared limit for the waiting requests, if the process may hold one more
        (lock held): taken in a thread of its own, since the limit may keep it waiting."""
        held = len(self._busy) + len(self._idle)
        if self._waiting and not self._taking and held < self.capacity:
            self._taking = True
            self._taker = threading.Thread(target=self._take_one, name="service slot", daemon=True)
            self._taker.start()

    def _take_one(self) -> None:
        try:
            give_back = self.take_slot()
        except BaseException as err:  # noqa: BLE001 - every waiting request fails with it
            with self._lock:
                self._taking = False
                failed, self._waiting = list(self._waiting), deque()
            for loop, waiter in failed:
                if not loop.is_closed():
                    loop.call_soon_threadsafe(_settle, waiter, err)
            return
        with self._lock:
            self._taking = False
            self.slots_taken += 1
            kept = not self._closed
            if kept:
                self._use(give_back)
                if self._wake_next():
                    self._take_more_if_wanted()
                    return
                self._busy.pop()  # nobody waits any more (cancelled): idle, as after a request
                self._idle.append((give_back, time.monotonic()))
        if kept:
            self._give_back_idle_later()
        else:
            self._give_back(give_back)

    def _give_back_idle_later(self) -> None:
        timer = threading.Timer(self.linger_seconds, self._give_back_idle)
        timer.daemon = True
        timer.start()

    def _give_back(self, give_back: Release) -> None:
        thread = threading.Thread(target=give_back, name="service slot back", daemon=True)
        with self._lock:
            self._giving_back = [t for t in self._giving_back if t.is_alive()] + [thread]
        thread.start()


class _Slot:
    def __init__(self, slots: RequestSlots):
        self.slots = slots

    async def __aenter__(self) -> None:
        await self.slots._enter()

    async def __aexit__(self, *exc: Any) -> None:
        self.slots._exit()


def _settle(waiter: asyncio.Future, error: BaseException | None) -> None:
    if waiter.done():
        return
    if error is None:
        waiter.set_result(None)
    else:
        waiter.set_exception(error)


# ---------------------------------------------------------------- the SDK's requests

_active: RequestSlots | None = None
_sdk_send = sdk_http.AsyncHttpxClientWrapper.send


async def _send_in_a_slot(client: httpx.AsyncClient, request: httpx.Request, *args: Any, **kwargs: Any) -> httpx.Response:
    slots = _active
    if slots is None or is_background(request):
        return await _sdk_send(client, request, *args, **kwargs)
    async with slots.request():
        return await _sdk_send(client, request, *args, **kwargs)


@contextmanager
def plain_request_slot() -> Iterator[None]:
    """A request sent beside the SDK (a plain httpx call, from a thread with no event loop running: the download
    of an export's file by its signed URL) holds one of the active slots while it is in flight, as the SDK's
    requests do: waits for one, gives it back after. Without an active limit it goes as it is. (Sent outside a
    slot, it was one more request at the service than the limit: issue 48, docs/testing.md.)"""
    slots = _active
    if slots is None:
        yield
        return
    asyncio.run(slots._enter())
    try:
        yield
    finally:
        slots._exit()


@contextmanager
def requests_limited_by(slots: RequestSlots) -> Iterator[RequestSlots]:
    """Every SDK request of this process, while active, holds one of `slots` (one run per process)."""
    global _active
    if _active is not None:
        raise RuntimeError("the SDK's requests are already limited in this process")
    sdk_http.AsyncHttpxClientWrapper.send = _send_in_a_slot  # type: ignore[method-assign]
    _active = slots
    try:
        yield slots
    finally:
        _active = None
