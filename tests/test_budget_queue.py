"""The process-wide GPU queue (ui.budget.FairQueue) serves sessions in the order they asked: a
session that asks again the moment it is done waits behind those already waiting."""

from __future__ import annotations

import threading
import time

from ui.budget import FairQueue


def _wait_until(check, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "the threads did not line up"
        time.sleep(0.005)


def test_waiting_sessions_are_served_in_arrival_order_and_a_greedy_one_goes_last():
    queue = FairQueue()
    served: list[str] = []
    release = threading.Event()

    def greedy() -> None:  # holds the queue, then asks again at once (a benchmark pressed twice)
        with queue:
            served.append("greedy")
            release.wait(5)
        with queue:
            served.append("greedy again")

    def session(name: str) -> None:
        with queue:
            served.append(name)

    threads = [threading.Thread(target=greedy)]
    threads[0].start()
    _wait_until(lambda: served == ["greedy"])
    for i, name in enumerate(("a", "b", "c")):  # they arrive one after another while greedy holds it
        t = threading.Thread(target=session, args=(name,))
        t.start()
        threads.append(t)
        _wait_until(lambda i=i: queue._next_ticket == i + 2)
    release.set()
    for t in threads:
        t.join(5)
    assert served == ["greedy", "a", "b", "c", "greedy again"]


def test_many_threads_each_get_their_turn_and_none_overlap():
    queue = FairQueue()
    inside, most, counts = 0, 0, [0] * 8
    lock = threading.Lock()

    def worker(k: int) -> None:
        nonlocal inside, most
        for _ in range(50):
            with queue:
                with lock:
                    inside += 1
                    most = max(most, inside)
                counts[k] += 1
                with lock:
                    inside -= 1

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert most == 1 and counts == [50] * 8


def test_a_try_succeeds_only_when_nobody_holds_or_waits():
    queue = FairQueue()
    assert queue.acquire(blocking=False)
    assert not queue.acquire(blocking=False), "held"
    waiting = threading.Thread(target=lambda: (queue.acquire(), queue.release()))
    waiting.start()
    _wait_until(lambda: queue._next_ticket == 2)
    queue.release()
    waiting.join(5)
    assert queue.acquire(blocking=False), "free again once the waiter had its turn"
    queue.release()
