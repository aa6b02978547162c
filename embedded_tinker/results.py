"""The results of accepted requests until their client retrieves them (``retrieve_future``), and not forever.

Every request that does work is registered under its request_id with the client (access.py) that sent it;
another client's retrieval finds nothing. A result stays:

- while its work is pending;
- RETRIEVED_RETENTION_SECONDS after it was first retrieved (the SDK may retry a retrieval whose answer it
  lost);
- at most UNRETRIEVED_TTL_SECONDS after it was done when nobody retrieves it, and among the done,
  unretrieved results only the newest while their size stays under UNRETRIEVED_MAX_BYTES (the oldest
  go first).

The stock SDK retrieves each result within a long poll of its completion, so the limits only drop what a
client abandoned (before: 8000 unretrieved requests kept 41 MB for the server's life).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

RETRIEVED_RETENTION_SECONDS = 120.0
TTL_ENV = "EMBEDDED_TINKER_UNRETRIEVED_TTL_S"  # lowers the TTL, e.g. to watch expiry (tools/attacks/unretrieved_results.py)
UNRETRIEVED_TTL_SECONDS = float(os.environ.get(TTL_ENV) or 900.0)
UNRETRIEVED_MAX_BYTES = 128 * 1024 * 1024
JSON_RESULT_BYTES = 4096  # what a JSON result (a small dict, with its entry) is counted as
SWEEP_INTERVAL_SECONDS = 1.0


@dataclass
class HeldResult:
    future: Future
    owner: str | None
    done_at: float | None = None  # monotonic; set by the future's callback
    retrieved_at: float | None = None
    size: int = 0


class ResultStore:
    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._held: dict[str, HeldResult] = {}
        self._lock = threading.Lock()
        self._clock = clock
        self._last_sweep = 0.0
        self.expired = 0  # results dropped unretrieved (healthz)

    def register(self, request_id: str, owner: str | None, start: Callable[[], Future]) -> bool:
        """Start the work once per (request_id, owner): a retried submission keeps the first. False when
        another client holds that request_id."""
        with self._lock:
            self._sweep_locked()
            held = self._held.get(request_id)
            if held is not None:
                return held.owner == owner
            held = HeldResult(start(), owner)
            self._held[request_id] = held
        held.future.add_done_callback(lambda future: self._done(held, future))
        return True

    def _done(self, held: HeldResult, future: Future) -> None:
        if not future.cancelled() and future.exception() is not None:
            # only the error's text is answered; its traceback would keep the failed call's frames (and what
            # they referenced: models, tensors) alive as long as the result is held
            future.exception().__traceback__ = None
        size = JSON_RESULT_BYTES
        if not future.cancelled() and future.exception() is None and isinstance(future.result(), bytes):
            size = len(future.result())
        with self._lock:
            held.size, held.done_at = size, self._clock()

    def get(self, request_id: str, owner: str | None) -> Future | None:
        """The future of `owner`'s request_id, or None (unknown, expired or another client's)."""
        with self._lock:
            self._sweep_locked()
            held = self._held.get(request_id)
            if held is None or (owner is not None and held.owner is not None and held.owner != owner):
                return None
            return held.future

    def retrieved(self, request_id: str) -> None:
        """The result was answered: it stays RETRIEVED_RETENTION_SECONDS more (first retrieval counts)."""
        with self._lock:
            held = self._held.get(request_id)
            if held is not None and held.retrieved_at is None:
                held.retrieved_at = self._clock()

    def __len__(self) -> int:
        return len(self._held)

    def report(self) -> dict:
        with self._lock:
            unretrieved = [h for h in self._held.values() if h.done_at is not None and h.retrieved_at is None]
            return {"held": len(self._held), "unretrieved": len(unretrieved),
                    "unretrieved_bytes": sum(h.size for h in unretrieved), "expired": self.expired}

    def sweep(self) -> None:
        with self._lock:
            self._last_sweep = 0.0
            self._sweep_locked()

    def _sweep_locked(self) -> None:
        now = self._clock()
        if now - self._last_sweep < SWEEP_INTERVAL_SECONDS:
            return
        self._last_sweep = now
        unretrieved: list[tuple[float, str, HeldResult]] = []
        for request_id, held in list(self._held.items()):
            if held.retrieved_at is not None:
                if now - held.retrieved_at > RETRIEVED_RETENTION_SECONDS:
                    del self._held[request_id]
            elif held.done_at is not None:
                if now - held.done_at > UNRETRIEVED_TTL_SECONDS:
                    del self._held[request_id]
                    self.expired += 1
                else:
                    unretrieved.append((held.done_at, request_id, held))
        total = sum(held.size for _, _, held in unretrieved)
        for _, request_id, held in sorted(unretrieved, key=lambda entry: entry[0]):
            if total <= UNRETRIEVED_MAX_BYTES:
                break
            del self._held[request_id]
            total -= held.size
            self.expired += 1
