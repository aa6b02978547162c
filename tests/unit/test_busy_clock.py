"""The server's busy clock: time with at least one API call in flight, overlapping calls counted once, and
the most calls in flight at once."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from embedded_tinker import server


def test_overlapping_calls_count_once_and_idle_time_not_at_all(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(server.time, "monotonic", lambda: now[0])
    clock = server.BusyClock()

    clock.begin()  # call A from 100
    now[0] = 101.0
    clock.begin()  # call B from 101, overlapping A
    now[0] = 102.0
    clock.end()  # A ends at 102
    now[0] = 104.0
    clock.end()  # B ends at 104: busy 100..104
    now[0] = 110.0  # idle 104..110
    clock.begin()  # call C from 110, still open
    now[0] = 110.5

    assert clock.report() == {"busy_seconds": 4.5, "api_calls": 3, "max_in_flight": 2}  # A and B at once
    clock.end()
    now[0] = 200.0
    assert clock.report() == {"busy_seconds": 4.5, "api_calls": 3, "max_in_flight": 2}
