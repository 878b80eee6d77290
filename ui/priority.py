"""Long runs give way on the machine's cores: the script thread of a long run drops its CPU priority.

The turns (ui/fair_share.py) bound how many long runs go at once, but a long run still spends most
of its time in NumPy, which lets go of the interpreter lock and then competes for the cores like
any process. On the 2-core classroom server that was where a light rerun lost its time: py-spy under
the hostile mix found the interpreter lock held only 38% of the time while the server took most of
both cores. Linux keeps a nice value per thread, so a long run's thread can step aside for the rest
of the process (light reruns, the event loop that carries every session's messages) while its own
session still gets every core nobody else wants.

Raising a thread's nice value needs no privilege; lowering it again does (CAP_SYS_NICE or an
RLIMIT_NICE that allows it). A run tries to restore its thread at its end. Where that is refused
the thread keeps the lower priority, which costs little: Streamlit starts a new thread for every
full rerun (runner.fastReruns, on by default), so only fragment reruns of that session (the
classroom poll) would still run on it. On systems without per-thread nice values nothing changes.
"""

from __future__ import annotations

import os
import sys
import threading

LONG_RUN_NICE = 19  # the lowest priority: the long run gets the cores nobody else wants now
ENV = "CONV_EXPLORER_LONG_RUN_NICE"  # 0 leaves long runs at the priority they have (comparisons)
SUPPORTED = sys.platform.startswith("linux") and hasattr(os, "setpriority")


def from_environment(value: str | None) -> int:
    """The nice value CONV_EXPLORER_LONG_RUN_NICE asks for (unset: LONG_RUN_NICE)."""
    if value is None or not value.strip():
        return LONG_RUN_NICE
    try:
        nice = int(value)
    except ValueError:
        nice = -1
    if not 0 <= nice <= 19:
        raise ValueError(f"{ENV}: expected a nice value from 0 (off) to 19, got {value!r}")
    return nice


long_run_nice = from_environment(os.environ.get(ENV))


def get(thread_id: int) -> int | None:
    """The nice value of a thread of this process (None where threads have none of their own)."""
    if not SUPPORTED:
        return None
    try:
        return os.getpriority(os.PRIO_PROCESS, thread_id)
    except OSError:
        return None


def set_nice(thread_id: int, nice: int) -> bool:
    """Give a thread of this process this nice value; False where the system refused."""
    if not SUPPORTED:
        return False
    try:
        os.setpriority(os.PRIO_PROCESS, thread_id, nice)
    except OSError:  # EPERM: lowering the value needs a privilege; ESRCH: the thread has ended
        return False
    return True


class LongRunPriority:
    """The calling thread's priority for one run: `demote()` (now or from a timer, at most once,
    never after `end()`), and `end()` puts back what the thread had, where the system allows it."""

    def __init__(self, nice: int | None = None) -> None:
        self.thread_id = threading.get_native_id()
        self.nice = long_run_nice if nice is None else nice
        self._before = get(self.thread_id)
        self._lock = threading.Lock()
        self._ended = False
        self.demoted = False

    def demote(self) -> None:
        with self._lock:
            if self._ended or self.demoted or self._before is None:
                return
            self.demoted = set_nice(self.thread_id, max(self.nice, self._before))

    def end(self) -> bool:
        """Restore the thread's priority; False where it was demoted and the system refused."""
        with self._lock:
            self._ended = True
            if not self.demoted:
                return True
            self.demoted = not set_nice(self.thread_id, self._before)
            return not self.demoted
