"""RequestSlots (experiment/service/request_slots.py): a process's requests in flight never outnumber the slots it
holds of a shared limit; a fan-out passes the slots along; a chain of requests takes one slot once.

The shared limit here is a bounded semaphore in this process (the flow's is a Prefect global concurrency
limit: tests/integration/test_service_request_limit.py and tests/e2e/test_shared_service_limit.py)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from experiment.service.request_slots import RequestSlots


class SharedLimit:
    """A limit of `slots` shared by every holder: take blocks until one is free; counts what was taken."""

    def __init__(self, slots: int):
        self.semaphore = threading.BoundedSemaphore(slots)
        self.taken = 0

    def take(self):
        self.semaphore.acquire()
        self.taken += 1
        return self.semaphore.release


async def _fan_out(slots: RequestSlots, requests: int) -> int:
    """`requests` concurrent requests through `slots`; the most in flight at once."""
    in_flight = most = 0

    async def one() -> None:
        nonlocal in_flight, most
        async with slots.request():
            in_flight += 1
            most = max(most, in_flight)
            await asyncio.sleep(0.001)
            in_flight -= 1

    await asyncio.gather(*[one() for _ in range(requests)])
    return most


class UnboundedSlots(RequestSlots):
    """The weakened version: a process that takes a slot and lets every request through."""

    async def _enter(self) -> None:
        return None

    def _exit(self) -> None:
        return None


def test_a_fan_out_never_has_more_requests_in_flight_than_slots():
    assert asyncio.run(_fan_out(UnboundedSlots(SharedLimit(3).take, capacity=3), 48)) > 3  # what the limit stops

    limit = SharedLimit(3)
    slots = RequestSlots(limit.take, capacity=3, linger_seconds=60)
    most = asyncio.run(_fan_out(slots, 48))
    assert most <= 3 and slots.most_in_flight <= 3
    assert limit.taken <= 3  # taken once, passed from request to request
    slots.give_back_all()
    assert all(limit.semaphore.acquire(blocking=False) for _ in range(3))  # every slot back with the limit


def test_a_chain_of_requests_takes_one_slot_and_gives_it_back():
    limit = SharedLimit(2)
    slots = RequestSlots(limit.take, capacity=2, linger_seconds=60)

    async def chain() -> None:
        for _ in range(10):  # one after another, as a training step's submit and result
            async with slots.request():
                await asyncio.sleep(0)

    asyncio.run(chain())
    assert limit.taken == 1 and slots.slots_taken == 1 and slots.most_in_flight == 1
    slots.give_back_all()
    assert limit.semaphore.acquire(blocking=False) and limit.semaphore.acquire(blocking=False)


def test_a_limit_that_refuses_fails_the_waiting_requests():
    def refuse():
        raise RuntimeError("no such limit")

    slots = RequestSlots(refuse, capacity=2)

    async def request() -> None:
        async with slots.request():
            pass

    with pytest.raises(RuntimeError, match="no such limit"):
        asyncio.run(request())


def _slots_given_back_when_give_back_all_returns(monkeypatch, weakened: bool) -> list[str]:
    """A run ends (give_back_all) while a request's slot is still being taken from the limit, which grants it
    only afterwards: what the limit had back when give_back_all returned. Deterministic: the grant comes after
    give_back_all closed the slots, and, for the weakened version, after it returned."""
    grant, given_back = threading.Event(), []

    def take_slot():
        grant.wait()
        return lambda: given_back.append("slot")

    if weakened:  # give_back_all that does not wait for a take under way
        monkeypatch.setattr(RequestSlots, "_wait_for_take", staticmethod(lambda taker: None))
    slots = RequestSlots(take_slot, capacity=1)

    async def request() -> None:
        with pytest.raises(RuntimeError, match="given back"):
            async with slots.request():
                pass

    requester = threading.Thread(target=asyncio.run, args=(request(),))
    requester.start()
    while not slots._taking:  # the request waits, its slot being taken
        threading.Event().wait(0.001)
    at_return: list[str] = []
    ending = threading.Thread(target=lambda: (slots.give_back_all(), at_return.extend(given_back)))
    ending.start()
    while not slots._closed:
        threading.Event().wait(0.001)
    if weakened:
        ending.join()
    grant.set()
    ending.join()
    requester.join()
    slots._taker.join()  # (the weakened version's slot goes back after the run ended)
    assert given_back == ["slot"]
    return at_return


def test_a_slot_being_taken_when_the_run_ends_is_given_back_before_the_run_returns(monkeypatch):
    """A run whose last request was still waiting for a slot as it ended left that slot held by its exiting
    process (tests/e2e/test_shared_service_limit.py: 'Concurrency lease renewal failed', active_slots 1 after
    every run had ended). Weakened first: give_back_all returns before the slot is granted, and nothing waits
    for its return."""
    with monkeypatch.context() as weak:
        assert _slots_given_back_when_give_back_all_returns(weak, weakened=True) == []
    assert _slots_given_back_when_give_back_all_returns(monkeypatch, weakened=False) == ["slot"]
