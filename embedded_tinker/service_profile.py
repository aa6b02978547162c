"""Service profiles: per-call service time shaped like a production service, scaled by a time factor.

    python -m embedded_tinker serve --service-profile spindle-qwen3.5-2b --time-factor 0.1
    (or env EMBEDDED_TINKER_SERVICE_PROFILE / EMBEDDED_TINKER_TIME_FACTOR, which the server the CLI
    starts on demand inherits)

A call that does work (create_model, load_weights, save_weights[_for_sampler], forward_backward,
forward, optim_step, asample, create_sampling_session from a checkpoint) is answered no earlier than
its *service time* after it entered service. Service time = the profile's cost of the call (per
call, or per sequence of the call) x the time factor. Calls on one *lane* are served one after
another, as one trainer or one sampler serves them: a training model's calls share the lane of its
model_id, a sampling session's requests the lane of that session. Different lanes (two arms' models,
two arms' samplers) are served side by side. The embedded backend still does the real work; when
that takes longer than the profile allows, the call ends when the work does (``overran`` counts
those: the profile did not dominate there).

The figures of SPINDLE_QWEN35_2B and how they were derived: docs/service-profile.md.

The profile composes with faults.py: injected latency and 429/503 answers come first (in the HTTP
middleware, before a call is handled); a create refused for capacity is answered at once and costs
no service time.

Accounting (healthz ``service_profile``): ``service_seconds``, the sum over lanes of the time each
lane was serving a call (what a GPU service bills; calls whose real work overran their slots and
overlap on their lane count once); ``busy_seconds``, the time during which at least one call
was in service or queued on its lane (the service's critical path as the client scheduled it: side
by side lanes count once); ``scheduled_seconds``, the sum over answered calls of their service time at the
profile's rates (the bill on a service whose time per call is the profile's: unlike ``service_seconds``, what
the machine's load adds to calls that overran their slots is not in it); ``calls``; ``overran``.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, replace

# What a call costs is looked up by its kind (CALL_KINDS), per call or per sequence.
CALL_KINDS = (
    "create_model", "create_from_checkpoint", "load_checkpoint", "save_checkpoint", "sampler_weights",
    "sampler_load", "forward_backward", "forward", "optim_step", "sample", "sample_greedy",
)


@dataclass(frozen=True)
class ServiceProfile:
    """Seconds per call (or per sequence, where named) at time factor 1."""

    name: str
    create_model_s: float  # a new LoRA training model
    load_checkpoint_s: float  # a saved state into a training model (added to create_model_s when created from it)
    save_checkpoint_s: float  # save_weights (adapter + optimizer), or named sampler weights
    sampler_weights_s: float  # save_weights_for_sampler handing the current weights to a sampling session
    sampler_load_s: float  # a sampling session from a checkpoint path
    forward_backward_per_sequence_s: float
    forward_per_sequence_s: float
    optim_step_s: float
    sampled_sequence_s: float  # one rollout sampled at temperature > 0 (an RL step's rollouts)
    greedy_sequence_s: float  # one greedy answer (temperature 0: evaluation)
    time_factor: float = 1.0

    def __post_init__(self):
        if not self.time_factor > 0:
            raise ValueError(f"time factor must be > 0 (got {self.time_factor})")

    def scaled(self, time_factor: float) -> ServiceProfile:
        return replace(self, time_factor=time_factor)

    def seconds(self, kind: str, units: int = 1) -> float:
        """Service time of one call of `kind` with `units` sequences, time factor applied."""
        per_call = {
            "create_model": self.create_model_s,
            "create_from_checkpoint": self.create_model_s + self.load_checkpoint_s,
            "load_checkpoint": self.load_checkpoint_s,
            "save_checkpoint": self.save_checkpoint_s,
            "sampler_weights": self.sampler_weights_s,
            "sampler_load": self.sampler_load_s,
            "optim_step": self.optim_step_s,
        }
        per_sequence = {
            "forward_backward": self.forward_backward_per_sequence_s,
            "forward": self.forward_per_sequence_s,
            "sample": self.sampled_sequence_s,
            "sample_greedy": self.greedy_sequence_s,
        }
        if kind in per_call:
            return per_call[kind] * self.time_factor
        if kind in per_sequence:
            return per_sequence[kind] * max(1, units) * self.time_factor
        raise ValueError(f"unknown call kind {kind!r}; one of {', '.join(CALL_KINDS)}")

    def rl_step_seconds(self, rollouts: int) -> float:
        """One RL step of `rollouts` sequences: weights to the sampler, sample, forward_backward, optim_step."""
        return (self.seconds("sampler_weights") + self.seconds("sample", rollouts)
                + self.seconds("forward_backward", rollouts) + self.seconds("optim_step"))

    def describe(self) -> dict:
        return {"name": self.name, "time_factor": self.time_factor,
                "unit_seconds_at_factor_1": {k: v for k, v in self.__dict__.items() if k.endswith("_s")}}


# Derived from a GS1 run of Qwen3.5-2B on Spindle (docs/service-profile.md): setup ~30 s, an RL step of
# 64 rollouts (<= 512 tokens) ~37 s, greedy evaluation of 1,319 items ~26 s. How each phase splits over
# its calls was not recorded; the split below is this profile's assumption and keeps every total.
SPINDLE_QWEN35_2B = ServiceProfile(
    name="spindle-qwen3.5-2b",
    create_model_s=20.0,
    load_checkpoint_s=10.0,  # setup: create (20) + load the initialization checkpoint (10) = 30 s
    save_checkpoint_s=8.0,
    sampler_weights_s=5.0,  # RL step of 64 rollouts: 5 + 64 x 0.25 + 64 x 0.2 + 3.2 = 37.0 s
    sampler_load_s=5.0,
    forward_backward_per_sequence_s=0.2,
    forward_per_sequence_s=0.1,
    optim_step_s=3.2,
    sampled_sequence_s=0.25,
    greedy_sequence_s=26.0 / 1319,  # evaluation: 1,319 greedy items in 26 s
)
PROFILES = {SPINDLE_QWEN35_2B.name: SPINDLE_QWEN35_2B}


def profile_named(name: str | None, time_factor: float = 1.0) -> ServiceProfile | None:
    """The named profile at `time_factor`; None for no name, "" or "none"."""
    if not name or name == "none":
        return None
    if name not in PROFILES:
        raise ValueError(f"unknown service profile {name!r}; one of none, {', '.join(PROFILES)}")
    return PROFILES[name].scaled(time_factor)


class ServiceSchedule:
    """Holds each profiled call until its service time has passed on its lane (see the module doc)."""

    def __init__(self, profile: ServiceProfile | None):
        self.profile = profile
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._lane_free_at: dict[str, float] = {}
        self._lane_released_at: dict[str, float] = {}  # when the lane's latest call was answered
        self._releases: list[tuple[float, int, Future, Future, str, float]] = []
        self._order = itertools.count()
        self._in_flight = 0
        self._busy_since = 0.0
        self.busy_seconds = 0.0
        self.service_seconds = 0.0
        self.scheduled_seconds = 0.0
        self.calls = 0
        self.overran = 0
        self.overran_by_kind: dict[str, int] = {}
        self._thread: threading.Thread | None = None

    def _enter(self, lane: str, seconds: float) -> tuple[float, float]:
        """(service start, service end) of a call arriving now on `lane`; counts it in flight."""
        now = time.monotonic()
        start = max(now, self._lane_free_at.get(lane, 0.0))
        end = start + seconds
        self._lane_free_at[lane] = end
        self.calls += 1
        if self._in_flight == 0:
            self._busy_since = now
        self._in_flight += 1
        return start, end

    def _leave(self, lane: str, started: float, now: float) -> None:
        """The call answered now: its service time is the part of [started, now] its lane did not
        already spend on an earlier call (calls that overran their slots overlap on the lane)."""
        since = max(started, self._lane_released_at.get(lane, 0.0))
        self.service_seconds += max(0.0, now - since)
        self._lane_released_at[lane] = max(now, self._lane_released_at.get(lane, 0.0))
        self._in_flight -= 1
        if self._in_flight == 0:
            self.busy_seconds += now - self._busy_since

    def hold(self, lane: str, kind: str, units: int, work: Future) -> Future:
        """A future that completes as `work` does, but not before the call's service time on `lane`."""
        if self.profile is None:
            return work
        held: Future = Future()
        with self._lock:
            start, end = self._enter(lane, self.profile.seconds(kind, units))
            self._ensure_thread()

        def done(finished: Future) -> None:
            with self._cond:
                now = time.monotonic()
                failed = finished.cancelled() or finished.exception() is not None
                if failed and self._lane_free_at.get(lane) == end:
                    self._lane_free_at[lane] = now  # the lane is free again: the refused call was not served
                if not failed:
                    self.scheduled_seconds += end - start
                if not failed and now > end:
                    self.overran += 1
                    self.overran_by_kind[kind] = self.overran_by_kind.get(kind, 0) + 1
                release_at = now if failed else max(end, now)  # a refusal costs no service time
                heapq.heappush(self._releases, (release_at, next(self._order), finished, held, lane, start))
                self._cond.notify()

        work.add_done_callback(done)
        return held

    def hold_here(self, lane: str, kind: str, units: int = 1) -> None:
        """Block the calling (worker) thread until a call of `kind` entering service now would end."""
        if self.profile is None:
            return
        with self._lock:
            start, end = self._enter(lane, self.profile.seconds(kind, units))
            self.scheduled_seconds += end - start
        time.sleep(max(0.0, end - time.monotonic()))
        with self._lock:
            now = time.monotonic()
            self._leave(lane, min(start, now), now)

    def _ensure_thread(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._release_loop, name="service-profile", daemon=True)
            self._thread.start()

    def _release_loop(self) -> None:
        while True:
            with self._cond:
                while not self._releases or self._releases[0][0] > time.monotonic():
                    timeout = self._releases[0][0] - time.monotonic() if self._releases else None
                    self._cond.wait(timeout)
                _, _, finished, held, lane, start = heapq.heappop(self._releases)
                now = time.monotonic()
                self._leave(lane, min(start, now), now)
            _copy_outcome(finished, held)

    def report(self) -> dict | None:
        if self.profile is None:
            return None
        with self._lock:
            now = time.monotonic()
            open_interval = now - self._busy_since if self._in_flight else 0.0
            return {**self.profile.describe(), "calls": self.calls, "overran": self.overran,
                    "overran_by_kind": dict(self.overran_by_kind),
                    "service_seconds": round(self.service_seconds, 6),
                    "scheduled_seconds": round(self.scheduled_seconds, 6),
                    "busy_seconds": round(self.busy_seconds + open_interval, 6)}


def _copy_outcome(source: Future, target: Future) -> None:
    if source.cancelled():
        target.cancel()
    elif source.exception() is not None:
        target.set_exception(source.exception())
    else:
        target.set_result(source.result())
