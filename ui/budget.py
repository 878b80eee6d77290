"""A compute budget per rerun, so no slider move can stall a classroom server.

Before a page computes, it estimates the work and memory (`conv2d_cost`, `bytes_cost`) and asks
`check`: over the budget, an `OverBudgetError` error (a ValueError, shown in place of the result by
ui.common.shown_errors) says what it would take and what to change. GPU work from every session
runs through one process-wide queue (`gpu_work`), and each session may hold a share of the free
GPU memory that shrinks as more sessions are active.

CPU costs, measured on a quiet 2-core machine: the NumPy twins are bound by copying strided
slices (the tap loop copies the input once per tap: ~1.8 GB/s; im2col writes X_unroll into
fresh memory: ~0.5 GB/s) plus the matrix products (BLAS, ~10 GFLOP/s or more); e.g. 1024 px,
K=15, depthwise: tap loop 0.9 s (filters that see one channel take a plain multiply-add per
tap: ~3 GB/s of slices), im2col 7.7 s. The estimate rounds toward slow, which leaves the page's
figures room within the rerun's 2 s.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import streamlit as st

import gpuops
from gpuops.conv2d import ConvProblem
from ui import fair_share

CPU_SECONDS = 2.0  # per rerun
CPU_BYTES = 512 * 2**20
CPU_COPY = {"im2col": 0.5e9, "default": 1.5e9, "one_channel": 2.5e9}  # bytes/s the NumPy twins copy (above)
CPU_FLOPS = 10e9  # flop/s of NumPy's matrix products on 2 cores
GPU_SESSION_FLOOR = 256 * 2**20  # a session may always use this much GPU memory
ACTIVE_WINDOW_S = 120.0  # a session counts as active this long after its last rerun


class OverBudgetError(ValueError):
    """This step would take too long or too much memory; the message says what to change."""


@dataclass(frozen=True)
class Cost:
    seconds: float
    bytes: int

    def __str__(self) -> str:
        return f"about {self.seconds:.1f} s and {self.bytes / 2**20:,.0f} MB"


def conv2d_cost(p: ConvProblem, algorithm: str) -> Cost:
    """Estimated time and peak extra memory of one conv2d on the current backend."""
    g = p.geometry
    out_bytes = 4 * p.N * p.M * g.L
    padded = 4 * p.N * p.C * g.padded_hw[0] * g.padded_hw[1]
    unroll = p.N * p.x_unroll_bytes_per_sample if algorithm == "im2col" else 0
    if gpuops.backend_info().gpu:
        return Cost(p.flops / 5e12, out_bytes + unroll)  # seconds are not the limit on the GPU
    copied = 4 * p.N * p.C * g.L * g.KH * g.KW  # every tap's slice (tap loop) or X_unroll (im2col)
    one_channel = p.C // p.groups == 1  # the tap loop's multiply-add path (measured 3.1 GB/s)
    rate = CPU_COPY["im2col" if algorithm == "im2col" else "one_channel" if one_channel else "default"]
    return Cost(copied / rate + p.flops / CPU_FLOPS, out_bytes + padded + unroll)


def bytes_cost(nbytes: int, seconds: float = 0.0) -> Cost:
    return Cost(seconds, int(nbytes))


def check(cost: Cost, what: str, advice: str) -> None:
    """Refuse a step over the budget: "what" would take `cost`; `advice` says what to change."""
    if gpuops.backend_info().gpu:
        limit = gpu_session_bytes()
        if cost.bytes > limit:
            raise OverBudgetError(
                f"{what} needs {cost.bytes / 2**20:,.0f} MB of GPU memory, more than this session's share "
                f"({limit / 2**20:,.0f} MB while {active_sessions()} sessions share the GPU). {advice}"
            )
        return
    if cost.seconds > CPU_SECONDS or cost.bytes > CPU_BYTES:
        raise OverBudgetError(
            f"{what} would take {cost} on this CPU server, over the budget of {CPU_SECONDS:.0f} s and "
            f"{CPU_BYTES / 2**20:,.0f} MB per step. {advice}"
        )


# ---- sessions and the GPU ----------------------------------------------------------------------------
@st.cache_resource
def _sessions() -> tuple[dict[str, float], threading.Lock]:
    return {}, threading.Lock()


def note_session() -> None:
    """Count this session as active (app.py calls this on every rerun)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None:
        return
    seen, lock = _sessions()
    now = time.monotonic()
    with lock:
        seen[ctx.session_id] = now
        for sid in [s for s, t in seen.items() if now - t > ACTIVE_WINDOW_S]:
            del seen[sid]


def active_sessions() -> int:
    seen, lock = _sessions()
    now = time.monotonic()
    with lock:
        return max(1, sum(1 for t in seen.values() if now - t <= ACTIVE_WINDOW_S))


def gpu_session_bytes() -> int:
    """This session's share of the GPU: half of the free memory, split over the active sessions."""
    import cupy

    free, _total = cupy.cuda.runtime.memGetInfo()
    free += cupy.get_default_memory_pool().free_bytes()
    return max(GPU_SESSION_FLOOR, free // 2 // active_sessions())


class FairQueue:
    """A lock that serves sessions in the order they asked. threading.Lock does not: a session
    that releases it and asks again at once (a student pressing "Run the benchmark" over and over)
    wins again and again, and on the H100 the hostile load test saw 20 light sessions get one
    rerun in 60 s beside three such benchmark sessions."""

    def __init__(self) -> None:
        self._turns = threading.Condition()
        self._next_ticket = 0  # the ticket the next arrival takes
        self._serving = 0  # the ticket whose holder may run now
        self._gone: set[int] = set()  # tickets whose holder stopped waiting (their turn is skipped)

    def acquire(self, blocking: bool = True) -> bool:
        """Take a turn: wait for it, or (blocking=False) take it only if nobody holds or waits."""
        with self._turns:
            if not blocking and self._serving != self._next_ticket:
                return False
            ticket = self._next_ticket
            self._next_ticket += 1
            try:
                while ticket != self._serving:
                    self._turns.wait()
            except BaseException:
                self._gone.add(ticket)
                self._skip_gone()
                raise
        return True

    def release(self) -> None:
        with self._turns:
            self._serving += 1
            self._skip_gone()

    def __enter__(self) -> FairQueue:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def _skip_gone(self) -> None:
        while self._serving in self._gone:
            self._gone.discard(self._serving)
            self._serving += 1
        self._turns.notify_all()


@st.cache_resource
def _gpu_queue() -> FairQueue:
    return FairQueue()


@contextlib.contextmanager
def gpu_work() -> Iterator[None]:
    """Run GPU work of one session at a time (kernels are milliseconds; a queue keeps memory
    peaks of concurrent sessions from adding up). On the CPU it does nothing: NumPy's heavy
    calls release the GIL, so sessions share the cores. Long measurements (a benchmark run, a
    size sweep) do not hold it: they take ui.common.gpu_lock, one measurement at a time, and let
    the students' millisecond kernels run beside them; holding this queue for a minute-long first
    benchmark run (kernels compiled, cuDNN tuned) stalled every other session on the H100."""
    if not gpuops.backend_info().gpu:
        yield
        return
    fair_share.give_way()  # a long run lets the light reruns under way finish first
    with _gpu_queue():
        yield
