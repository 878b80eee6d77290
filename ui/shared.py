"""What the server processes of one deployment share: the room store, and one measurement at a time.

`python3 scripts/dev.py app` runs one process and keeps both in its memory;
`python3 scripts/dev.py serve` runs several behind a reverse proxy and points them at one Redis
(CONV_EXPLORER_REDIS_URL), so a room started on one worker is followed from any other, and a
benchmark on one worker waits for a benchmark on another (timings of two at once would both be
wrong, and on one GPU they would share it).
"""

from __future__ import annotations

import contextlib
import secrets
import threading
from collections.abc import Iterator

import streamlit as st

from ui.classroom import RoomStore

MEASURE_KEY = "ce:lock:measure"
MEASURE_TTL_S = 900.0  # a worker that dies while measuring frees the lock after this long


@st.cache_resource(show_spinner=False)
def store() -> RoomStore:
    """This process's handle on the deployment's rooms (ConfigError on bad CONV_EXPLORER_* values)."""
    return RoomStore.from_env()


@st.cache_resource(show_spinner=False)
def _process_lock() -> threading.Lock:
    return threading.Lock()


@contextlib.contextmanager
def measuring() -> Iterator[bool]:
    """Take the deployment's one measurement slot without waiting; yields whether it was taken.

    Within a process a lock; across processes a key in the shared store, set only if absent and
    removed by its holder (or after MEASURE_TTL_S). A store that does not answer counts as taken
    by someone else: the page says "try again", nothing is measured twice at once."""
    lock = _process_lock()
    if not lock.acquire(blocking=False):
        yield False
        return
    token = secrets.token_hex(8).encode()
    backend = store().backend
    try:
        try:
            held = backend.put(MEASURE_KEY, token, MEASURE_TTL_S, only_new=True)
        except Exception:  # StoreUnavailable: better no benchmark than two at once
            held = False
        try:
            yield held
        finally:
            if held:
                with contextlib.suppress(Exception):
                    if backend.get(MEASURE_KEY) == token:
                        backend.delete(MEASURE_KEY)
    finally:
        lock.release()
