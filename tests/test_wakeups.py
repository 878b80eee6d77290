"""ui.wakeups: a session's callbacks reach the event loop all of them, in order, with one wake-up
per burst; on the loop's own thread a message is queued without waking the loop."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from ui import wakeups


class LoopThread:
    """A real asyncio loop on a thread of its own, as Streamlit's server runs one; counts the
    thread-safe calls (each one writes to the loop's wake-up socket)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.wakeups = 0
        self.errors: list[BaseException] = []
        self.loop.set_exception_handler(lambda loop, ctx: self.errors.append(ctx["exception"]))
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def call_soon_threadsafe(self, session: object, callback) -> None:  # AppSession's method, unpatched
        self.wakeups += 1
        self.loop.call_soon_threadsafe(callback)

    def settle(self) -> None:
        """Wait until everything scheduled so far (and what it scheduled) has run."""
        for _ in range(3):
            asyncio.run_coroutine_threadsafe(asyncio.sleep(0), self.loop).result(5)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


@pytest.fixture
def loop():
    lt = LoopThread()
    yield lt
    lt.close()


class Session:
    """Stands in for an AppSession: the patched method looks only at its __dict__."""


def test_every_callback_runs_in_order_with_fewer_wakeups(loop):
    call_soon = wakeups.batched_call_soon(loop.call_soon_threadsafe)
    sessions = [Session() for _ in range(4)]
    seen: dict[int, list[int]] = {i: [] for i in range(4)}
    hold = threading.Event()
    loop.loop.call_soon_threadsafe(hold.wait, 5)  # the loop is busy: a burst piles up behind it

    def script(i: int) -> None:  # one script thread per session, 500 elements each
        for k in range(500):
            call_soon(sessions[i], lambda i=i, k=k: seen[i].append(k))

    threads = [threading.Thread(target=script, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    hold.set()
    loop.settle()
    assert all(seen[i] == list(range(500)) for i in range(4))  # all of them, each session in order
    assert loop.wakeups == 4  # one per session's burst, not 2000
    assert not loop.errors


def test_a_burst_after_the_loop_drained_wakes_it_again(loop, monkeypatch):
    monkeypatch.setattr(wakeups, "LINGER_S", 0.001)
    call_soon = wakeups.batched_call_soon(loop.call_soon_threadsafe)
    session, seen = Session(), []
    for burst in range(3):
        call_soon(session, lambda b=burst: seen.append(b))
        loop.settle()
        assert seen == list(range(burst + 1))  # run at once: the loop was woken for it
        time.sleep(0.2)  # the loop has looked again, found nothing, and sleeps
    assert loop.wakeups == 3  # nothing waits for a wake-up that never comes


def test_messages_a_little_apart_share_one_wakeup(loop, monkeypatch):
    """A script draws its elements a little apart: after a drain the loop looks again on its own
    timer (LINGER_S, long here so that a loaded machine's late sleeps stay within it), so the
    script thread does not wake it for each one."""
    monkeypatch.setattr(wakeups, "LINGER_S", 0.5)
    call_soon = wakeups.batched_call_soon(loop.call_soon_threadsafe)
    session, seen = Session(), []
    for k in range(20):
        call_soon(session, lambda k=k: seen.append(k))
        time.sleep(0.002)
    assert seen[:1] == [0] and loop.wakeups == 1  # the first woke the loop, the rest wait for its look
    deadline = time.monotonic() + 5
    while len(seen) < 20 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert seen == list(range(20)) and loop.wakeups == 1  # without the linger: one per message (20)


def test_a_long_burst_lets_the_loop_serve_others_between_turns(loop):
    call_soon = wakeups.batched_call_soon(loop.call_soon_threadsafe)
    session, order = Session(), []
    hold = threading.Event()
    loop.loop.call_soon_threadsafe(hold.wait, 5)
    n = 2 * wakeups.MAX_PER_TURN + 10
    for k in range(n):
        call_soon(session, lambda k=k: order.append(k))
    # another session's message, scheduled while the first session's burst waits
    loop.loop.call_soon_threadsafe(lambda: order.append("other"))
    hold.set()
    loop.settle()
    assert [x for x in order if x != "other"] == list(range(n))
    assert 0 < order.index("other") <= wakeups.MAX_PER_TURN  # served after the first turn, not at the end


def test_a_raising_callback_is_reported_and_the_rest_still_run(loop):
    call_soon = wakeups.batched_call_soon(loop.call_soon_threadsafe)
    session, seen = Session(), []
    hold = threading.Event()
    loop.loop.call_soon_threadsafe(hold.wait, 5)
    call_soon(session, lambda: seen.append(1))
    call_soon(session, lambda: 1 / 0)
    call_soon(session, lambda: seen.append(3))
    hold.set()
    loop.settle()
    assert seen == [1, 3]
    assert len(loop.errors) == 1 and isinstance(loop.errors[0], ZeroDivisionError)


class FakeRuntime:
    def __init__(self, eventloop) -> None:
        self.sets = 0
        self.woken = 0

        class Objs:
            pass

        self._async_objs = Objs()
        self._async_objs.eventloop = eventloop
        self._async_objs.need_send_data = self
        self.loop = eventloop

    def set(self) -> None:  # need_send_data.set
        self.sets += 1

    def _enqueued_some_message(self) -> None:  # Streamlit's: wake the loop through its socket
        self.woken += 1


class FakeSession:
    def __init__(self, runtime: FakeRuntime) -> None:
        self._message_enqueued_callback = runtime._enqueued_some_message
        self._browser_queue = self
        self.queued: list[str] = []

    def enqueue(self, msg: str) -> None:
        self.queued.append(msg)


def original_enqueue(session: FakeSession, msg: str) -> None:
    session._browser_queue.enqueue(msg)
    session._message_enqueued_callback()


def test_on_the_loop_a_message_is_queued_without_waking_the_loop(loop):
    enqueue = wakeups.direct_on_loop(original_enqueue)
    runtime = FakeRuntime(loop.loop)
    session = FakeSession(runtime)
    enqueue(session, "from a script thread")  # not the loop's thread: Streamlit's way
    asyncio.run_coroutine_threadsafe(_call(enqueue, session, "on the loop"), loop.loop).result(5)
    assert session.queued == ["from a script thread", "on the loop"]
    assert runtime.woken == 1 and runtime.sets == 1


async def _call(fn, *args) -> None:
    fn(*args)


def test_install_patches_streamlit_once():
    from streamlit.runtime.app_session import AppSession

    wakeups.install()  # True here, or False when app.py ran in this process first
    assert getattr(AppSession._call_soon_on_event_loop, "coalesced", False)
    assert getattr(AppSession._enqueue_forward_msg, "coalesced", False)
    assert wakeups.install() is False
