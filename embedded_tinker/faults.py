"""Fault injection, configured when the server starts.

rate_429 / rate_503      probability that an API call is answered 429 / 503 before it is
                         handled (the request has no effect, so a retry is safe)
latency_ms               added to every API call
capacity_exhausted_seconds
                         for this long after the first create_model call (not the server's
                         start: a client that starts late still meets the refusals), every
                         create_model future fails with "trainer capacity exhausted" (category server)
endpoints                restrict 429/503/latency to these endpoint names (e.g.
                         "create_sampling_session"); empty = every endpoint but healthz
retry_after_ms           when set, 429/503 answers carry ``Retry-After-Ms`` (the SDK's
                         per-call retry waits that long instead of its own backoff)
stop_answering_after     after this many API calls (of `endpoints`, when given), every later one gets no
                         proper answer (a backend that broke mid-run), per `stop_answering_mode`:
                         "hang"    the request is held open, never answered (until the server stops)
                         "close"   the response starts, then the connection is closed mid-body
                         "garbage" 200 with a body that is not JSON
seed                     the 429/503 draws come from ``random.Random(seed)``: the same
                         sequence of calls gets the same faults
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field


STOP_ANSWERING_MODES = ("hang", "close", "garbage")


@dataclass(frozen=True)
class FaultConfig:
    rate_429: float = 0.0
    rate_503: float = 0.0
    latency_ms: float = 0.0
    capacity_exhausted_seconds: float = 0.0
    endpoints: tuple[str, ...] = field(default_factory=tuple)
    retry_after_ms: int | None = None
    seed: int = 0
    stop_answering_after: int | None = None
    stop_answering_mode: str = "hang"

    def __post_init__(self):
        if self.stop_answering_mode not in STOP_ANSWERING_MODES:
            raise ValueError(f"stop_answering_mode must be one of {', '.join(STOP_ANSWERING_MODES)}")
        if self.stop_answering_after is not None and self.stop_answering_after < 0:
            raise ValueError("stop_answering_after must be at least 0")
        if not (0 <= self.rate_429 <= 1 and 0 <= self.rate_503 <= 1 and self.rate_429 + self.rate_503 <= 1):
            raise ValueError("fault rates must lie in [0, 1] and sum to at most 1")

    def to_cli_args(self) -> list[str]:
        args = [
            f"--fault-429-rate={self.rate_429}",
            f"--fault-503-rate={self.rate_503}",
            f"--fault-latency-ms={self.latency_ms}",
            f"--capacity-exhausted-seconds={self.capacity_exhausted_seconds}",
            f"--fault-seed={self.seed}",
        ]
        if self.endpoints:
            args.append(f"--fault-endpoints={','.join(self.endpoints)}")
        if self.stop_answering_after is not None:
            args += [f"--fault-stop-answering-after={self.stop_answering_after}",
                     f"--fault-stop-answering-mode={self.stop_answering_mode}"]
        if self.retry_after_ms is not None:
            args.append(f"--fault-retry-after-ms={self.retry_after_ms}")
        return args


class FaultInjector:
    def __init__(self, config: FaultConfig | None = None):
        self.config = config or FaultConfig()
        self._random = random.Random(self.config.seed)
        self._lock = threading.Lock()
        self.injected = {429: 0, 503: 0}
        self._first_create_model_at: float | None = None
        self._answered_calls = 0
        self.unanswered = 0  # calls that got no proper answer (stop_answering_after)

    def applies_to(self, endpoint: str) -> bool:
        if endpoint == "healthz":
            return False
        return not self.config.endpoints or endpoint in self.config.endpoints

    def draw_status(self, endpoint: str) -> int | None:
        """429, 503 or None (no fault) for one call of ``endpoint``."""
        if not self.applies_to(endpoint) or (self.config.rate_429 == 0 and self.config.rate_503 == 0):
            return None
        with self._lock:
            draw = self._random.random()
            status = (
                429
                if draw < self.config.rate_429
                else 503
                if draw < self.config.rate_429 + self.config.rate_503
                else None
            )
            if status:
                self.injected[status] += 1
            return status

    def stops_answering(self, endpoint: str) -> bool:
        """Asked once per API call: True once `stop_answering_after` calls of these endpoints were answered."""
        if self.config.stop_answering_after is None or not self.applies_to(endpoint):
            return False
        with self._lock:
            if self._answered_calls < self.config.stop_answering_after:
                self._answered_calls += 1
                return False
            self.unanswered += 1
            return True

    def latency_seconds(self, endpoint: str) -> float:
        return self.config.latency_ms / 1000 if self.applies_to(endpoint) else 0.0

    def capacity_exhausted(self) -> bool:
        """Asked once per create_model call: the refusal window opens at the first one."""
        if self.config.capacity_exhausted_seconds <= 0:
            return False
        with self._lock:
            now = time.monotonic()
            if self._first_create_model_at is None:
                self._first_create_model_at = now
            return now - self._first_create_model_at < self.config.capacity_exhausted_seconds

    def fault_headers(self) -> dict[str, str]:
        if self.config.retry_after_ms is None:
            return {}
        return {"Retry-After-Ms": str(self.config.retry_after_ms)}
