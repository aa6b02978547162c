"""Reading what a pilot run cost the service (experiment/service/service_time.py): the service's own time for
the session where it reports one, else the client's run-queue wait. The HTTP answers here are fakes (a service
that has the route, one that has not, one that drops the connection); the real route is read in
tests/integration/test_embedded_exposure.py."""

from __future__ import annotations

from types import SimpleNamespace

import httpx
import pytest

from experiment.service.service_time import (SessionServiceTime, largest_wait, measured_run, runqueue_waits,
                                             session_id_of)
from experiment.service.target import ServiceTarget


def embedded_at(url: str) -> ServiceTarget:
    return ServiceTarget(kind="embedded", base_url=url)


class FakeService:
    """Answers GET service_time/{session} with the next of `answers` (a status and busy seconds, or an error)."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.asked: list[tuple[str, dict]] = []

    def __call__(self, url, headers, timeout):
        self.asked.append((url, headers))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        status, busy = answer
        return SimpleNamespace(status_code=status, json=lambda: {"busy_seconds": busy})


def test_the_services_busy_seconds_are_read_for_the_session_with_the_services_key():
    fake = FakeService((200, 1.5), (200, 4.0))
    service = SessionServiceTime(embedded_at("http://127.0.0.1:9/"), "sess-a", get=fake)
    assert (service.busy_seconds(), service.busy_seconds()) == (1.5, 4.0)
    assert fake.asked[0] == ("http://127.0.0.1:9/api/v1/service_time/sess-a", {"X-API-Key": "tml-local"})


def test_a_service_without_the_route_is_asked_once_and_then_reports_none():
    fake = FakeService((404, None))
    service = SessionServiceTime(embedded_at("http://127.0.0.1:9"), "sess-a", get=fake)
    assert service.busy_seconds() is None and service.busy_seconds() is None
    assert len(fake.asked) == 1


def test_a_dropped_or_malformed_answer_counts_as_no_report_and_is_asked_again():
    fake = FakeService(httpx.ConnectError("refused"), (500, None), (200, "soon"), (200, True), (200, 2.0))
    service = SessionServiceTime(embedded_at("http://127.0.0.1:9"), "sess-a", get=fake)
    assert [service.busy_seconds() for _ in range(5)] == [None, None, None, None, 2.0]


def test_no_session_or_no_address_asks_nothing():
    fake = FakeService()
    assert SessionServiceTime(embedded_at("http://127.0.0.1:9"), None, get=fake).busy_seconds() is None
    assert SessionServiceTime(ServiceTarget(kind="embedded", base_url=None), "sess-a", get=fake).busy_seconds() is None
    assert fake.asked == []


def test_the_session_id_is_the_sdk_holders_and_none_where_the_client_does_not_say():
    class Holder:
        def get_session_id(self):
            return "sess-a"

    class Broken:
        def get_session_id(self):
            raise AssertionError("no session yet")

    assert session_id_of(SimpleNamespace(holder=Holder())) == "sess-a"
    assert session_id_of(SimpleNamespace(holder=Broken())) is None
    assert session_id_of(object()) is None


def test_the_run_queue_wait_is_the_most_one_thread_waited_and_a_new_thread_counts_from_zero():
    before = {"1": 10.0, "2": 3.0}
    after = {"1": 10.5, "2": 4.0, "3": 0.25}  # thread 3 started during the run; a thread that ended is gone
    assert largest_wait(before, after) == pytest.approx(1.0)
    assert largest_wait({}, {}) == 0.0


def test_the_run_queue_waits_are_read_from_each_threads_schedstat(tmp_path):
    for thread, line in (("11", "5000 2500000000 7\n"), ("12", "1 500000000 1\n"), ("13", "garbled\n")):
        (tmp_path / thread).mkdir()
        (tmp_path / thread / "schedstat").write_text(line)
    assert runqueue_waits(tmp_path) == {"11": 2.5, "12": 0.5}
    assert runqueue_waits(tmp_path / "absent") is None


def test_a_measured_run_reports_the_services_seconds_and_the_clients_wait_over_it_and_none_without_them():
    fake = FakeService((200, 1.0), (200, 3.5))
    waits = iter([{"1": 1.0}, {"1": 1.75}])
    service = SessionServiceTime(embedded_at("http://127.0.0.1:9"), "sess-a", get=fake)
    assert measured_run(lambda: "done", service, read_waits=lambda: next(waits)) == ("done", 2.5, 0.75)
    unsupported = SessionServiceTime(embedded_at("http://127.0.0.1:9"), "sess-a", get=FakeService((404, None)))
    assert measured_run(lambda: "done", unsupported, read_waits=lambda: None) == ("done", None, None)
