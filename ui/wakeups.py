"""One wake-up of the server's event loop per burst of messages, not one per message.

Streamlit hands every element a script draws to the event loop that writes the websockets:
the script thread calls AppSession._call_soon_on_event_loop, which is the loop's
call_soon_threadsafe, which writes a byte to the loop's wake-up socket; on the loop,
Runtime._enqueued_some_message wakes the loop again the same way, from the loop's own thread. A
Direct page rerun draws about a hundred elements. Each write releases the interpreter lock, and
getting it back means waiting for the thread holding it (the lock is handed over every
millisecond at best): under the hostile mix (bench/hostile_load.py, py-spy) script threads spent
14% of their samples, and the loop a similar share, in that write.

Here the callbacks one session sends the loop go into a queue of its own; only the first of a
burst wakes the loop, which then runs all that arrived, in order. On the loop's own thread a
message is queued and the runtime's "send data" event set directly (AppSession.
_enqueue_forward_msg). What runs, and in which order, is unchanged; only the
wake-ups are fewer. `install()` patches the two Streamlit methods once per process (ui.
server_tuning calls it) and leaves a Streamlit without them as it is; CONV_EXPLORER_WAKEUPS=off
leaves Streamlit's own (for comparisons).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

_LOG = logging.getLogger(__name__)
MAX_PER_TURN = 256  # callbacks one drain runs before it lets the loop serve other sessions
# After a drain empties the queue the loop looks again this much later, on its own timer, before
# it asks to be woken: a script draws its elements a few hundred microseconds apart, so without it
# an idle loop was woken for nearly every one (each wake-up crosses CPUs; on a KVM guest that cost
# 19% of a light rerun's script-thread samples). A message waits at most this long.
LINGER_S = 0.002


def _no_checkpoint() -> None:
    pass


# Called on the script thread before each callback it sends the loop (every element it draws):
# ui.server_tuning sets ui.fair_share.give_way here, where a long run steps aside for short ones.
checkpoint: Callable[[], None] = _no_checkpoint


class Batch:
    """The callbacks one session has sent the event loop that have not run yet."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.callbacks: deque[Callable[[], None]] = deque()
        self.scheduled = False  # a drain is due on the loop: no need to wake it again

    def add(self, callback: Callable[[], None], schedule: Callable[[Callable[[], None]], Any]) -> None:
        """Queue `callback`; the first of a burst schedules the drain with `schedule` (a
        thread-safe call-soon of the loop)."""
        with self.lock:
            self.callbacks.append(callback)
            if self.scheduled:
                return
            self.scheduled = True
        schedule(self.drain)

    def linger(self) -> None:
        """On the loop, LINGER_S after a drain emptied the queue: drain what arrived meanwhile, or
        end the burst (the next callback wakes the loop again)."""
        with self.lock:
            if not self.callbacks:
                self.scheduled = False
                return
        self.drain()

    def drain(self) -> None:
        """On the loop: run what has arrived, in order; more later in this burst runs on the
        loop's next pass or, once the queue is empty, when it looks again LINGER_S later (no
        wake-up needed: the loop's own timer)."""
        loop = asyncio.get_running_loop()
        for _ in range(MAX_PER_TURN):
            with self.lock:
                if not self.callbacks:
                    loop.call_later(LINGER_S, self.linger)
                    return
                callback = self.callbacks.popleft()
            try:
                callback()
            except (SystemExit, KeyboardInterrupt):
                raise
            except BaseException as exc:  # as asyncio's Handle does: report, and go on with the rest
                loop.call_exception_handler({"message": "Exception in a session callback", "exception": exc})
        loop.call_soon(self.drain)


def batched_call_soon(original: Callable[[Any, Callable[[], None]], None]) -> Callable[..., None]:
    """AppSession._call_soon_on_event_loop, with the session's callbacks batched."""

    def call_soon(session: Any, callback: Callable[[], None]) -> None:
        checkpoint()
        batch = session.__dict__.get("_wakeup_batch")
        if batch is None:
            batch = session.__dict__.setdefault("_wakeup_batch", Batch())  # atomic: one per session
        batch.add(callback, lambda drain: original(session, drain))

    call_soon.coalesced = True  # type: ignore[attr-defined]
    return call_soon


def direct_on_loop(original: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
    """AppSession._enqueue_forward_msg: on the loop's own thread, the message is queued and the
    runtime's "send data" event set directly (Streamlit would wake the running loop through its
    socket). Elsewhere, or when the callback is not the runtime's, as before."""

    def enqueue(session: Any, msg: Any) -> None:
        runtime = getattr(
            session._message_enqueued_callback, "__self__", None
        )  # Runtime._enqueued_some_message
        objs = getattr(runtime, "_async_objs", None)
        if objs is None or asyncio._get_running_loop() is not objs.eventloop:
            original(session, msg)
            return
        session._browser_queue.enqueue(msg)
        objs.need_send_data.set()

    enqueue.coalesced = True  # type: ignore[attr-defined]
    return enqueue


_install_lock = threading.Lock()


def install() -> bool:
    """Patch Streamlit's two wake-up paths (once per process). False when already done, when
    CONV_EXPLORER_WAKEUPS=off, or when this Streamlit has other internals (then nothing changes)."""
    if os.environ.get("CONV_EXPLORER_WAKEUPS", "").strip().lower() == "off":
        return False
    try:
        from streamlit.runtime.app_session import AppSession
    except ImportError:
        return False
    with _install_lock:
        call_soon = getattr(AppSession, "_call_soon_on_event_loop", None)
        enqueue = getattr(AppSession, "_enqueue_forward_msg", None)
        if call_soon is None or enqueue is None:
            _LOG.info(
                "this Streamlit has no _call_soon_on_event_loop / _enqueue_forward_msg: wake-ups as they are"
            )
            return False
        if getattr(call_soon, "coalesced", False):
            return False
        AppSession._call_soon_on_event_loop = batched_call_soon(call_soon)
        AppSession._enqueue_forward_msg = direct_on_loop(enqueue)
        return True
