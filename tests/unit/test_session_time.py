"""The embedded backend's own per-session service time (embedded_tinker/session_time.py): which session a call's
lane belongs to, and a session's busy seconds with overlapping calls counted once (a fake clock: no timing)."""

from __future__ import annotations

from concurrent.futures import Future

import pytest

from embedded_tinker.session_time import SessionClock, session_of


@pytest.mark.parametrize(("lane", "session"), [
    ("sess-0123456789ab:train:0", "sess-0123456789ab"),  # a training model (create_model, forward_backward, ...)
    ("sample-sess-0123456789ab-3", "sess-0123456789ab"),  # a sampling session of the SDK
    ("path:tinker://sess-x:train:0/sampler_weights/a", None),  # sampled from a bare model path: no session
    ("base:embedded/tiny-arith", None),
    ("sample-", None), ("sample-sess-x-", None), ("", None), (None, None),
])
def test_a_calls_lane_names_its_session_as_the_sdk_makes_the_ids(lane, session):
    assert session_of(lane) == session


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_sessions_busy_seconds_count_overlapping_calls_once_and_leave_other_sessions_alone():
    clock = FakeClock()
    sessions = SessionClock(clock)
    first, second, other = Future(), Future(), Future()
    sessions.track("sample-sess-a-0", first)
    clock.now = 1.0
    sessions.track("sess-a:train:0", second)  # overlaps the first from 1 s
    sessions.track("sample-sess-b-0", other)
    clock.now = 3.0
    first.set_result(None)
    assert sessions.report("sess-a")["busy_seconds"] == pytest.approx(3.0)  # the second call still in service
    clock.now = 4.0
    second.set_result(None)
    clock.now = 10.0  # idle: no call of the session in service
    report = sessions.report("sess-a")
    assert (report["busy_seconds"], report["calls"], report["in_service"]) == (pytest.approx(4.0), 2, 0)
    assert sessions.report("sess-b")["busy_seconds"] == pytest.approx(9.0)  # still in service since 1 s
    assert sessions.report("sess-never")["calls"] == 0


def test_a_failed_call_ends_its_service_as_a_finished_one_does_and_a_sessionless_call_is_not_counted():
    clock = FakeClock()
    sessions = SessionClock(clock)
    failed, bare = Future(), Future()
    sessions.track("sess-a:train:0", failed)
    sessions.track("base:embedded/tiny-arith", bare)
    clock.now = 2.0
    failed.set_exception(ValueError("a user error"))
    bare.set_result(None)
    assert sessions.report("sess-a")["busy_seconds"] == pytest.approx(2.0)
    assert sessions.report("sess-a")["in_service"] == 0
