"""Results of accepted requests are held until retrieved and expire when nobody retrieves them (issue 47, E7:
8000 unretrieved requests kept 41 MB for the server's life). A fake clock stands in for time."""

from __future__ import annotations

from concurrent.futures import Future

import pytest

import embedded_tinker.results as results
from embedded_tinker.results import ResultStore


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def done(value) -> Future:
    future: Future = Future()
    future.set_result(value)
    return future


def fill(store: ResultStore, count: int, value=b"x" * 1000) -> None:
    for index in range(count):
        assert store.register(f"req-{index}", "client-a", lambda: done(value))


def test_unretrieved_results_expire_after_their_ttl(monkeypatch):
    clock = FakeClock()
    with monkeypatch.context() as weak:  # attack first: no TTL, no cap: every abandoned result is kept
        weak.setattr(results, "UNRETRIEVED_TTL_SECONDS", float("inf"))
        weak.setattr(results, "UNRETRIEVED_MAX_BYTES", float("inf"))
        kept = ResultStore(clock)
        fill(kept, 8000)
        clock.now += 10**6
        kept.sweep()
        assert len(kept) == 8000
    store = ResultStore(clock)
    fill(store, 8000)
    clock.now += results.UNRETRIEVED_TTL_SECONDS - 1
    store.sweep()
    assert len(store) == 8000  # within the TTL: all still retrievable
    clock.now += 2
    store.sweep()
    assert len(store) == 0 and store.report()["expired"] == 8000


def test_unretrieved_results_past_the_byte_cap_drop_the_oldest(monkeypatch):
    monkeypatch.setattr(results, "UNRETRIEVED_MAX_BYTES", 10 * 1000)
    clock = FakeClock()
    store = ResultStore(clock)
    for index in range(25):
        clock.now += 1
        store.register(f"req-{index}", "client-a", lambda: done(b"x" * 1000))
    store.sweep()
    assert [f"req-{i}" for i in range(15, 25)] == [f"req-{i}" for i in range(25) if store.get(f"req-{i}", "client-a")]


def test_a_retrieved_result_stays_for_retries_then_goes():
    clock = FakeClock()
    store = ResultStore(clock)
    fill(store, 1)
    store.retrieved("req-0")
    clock.now += results.RETRIEVED_RETENTION_SECONDS - 1
    store.sweep()
    assert store.get("req-0", "client-a") is not None
    clock.now += 2
    store.sweep()
    assert store.get("req-0", "client-a") is None


def test_pending_work_never_expires():
    clock = FakeClock()
    store = ResultStore(clock)
    store.register("req-pending", "client-a", Future)
    clock.now += 10**6
    store.sweep()
    assert store.get("req-pending", "client-a") is not None


@pytest.mark.parametrize("owner", ["client-b"])
def test_another_client_neither_retrieves_nor_replaces_a_result(owner):
    store = ResultStore(FakeClock())
    fill(store, 1)
    assert store.get("req-0", owner) is None
    assert not store.register("req-0", owner, lambda: done(b"other"))
    assert store.get("req-0", "client-a").result() == b"x" * 1000
