"""A compute budget per rerun, so no slider move can stall a classroom server.

Before a page computes, it estimates the work and memory (`conv2d_cost`, `bytes_cost`) and asks
`check`: over the budget, an `OverBudgetError` error (a ValueError, shown in place of the result by
ui.common.shown_errors) says what it would take and what to change. GPU work from every session
of a server process runs one at a time (`gpu_work`), and each session may hold a share of the free
GPU memory that shrinks as more sessions are active. Fairness between sessions comes from this
budget and from running several server processes (scripts/dev.py serve), not from a scheduler.

CPU costs, measured on a quiet 2-core machine: the NumPy twins are bound by copying strided
slices (the tap loop copies the input once per tap: ~1.8 GB/s; im2col writes X_unroll into
fresh memory: ~0.5 GB/s) plus the matrix products (BLAS, ~10 GFLOP/s or more); e.g. 1024 px,
K=15, depthwise: tap loop 0.9 s (filters that see one channel take a plain multiply-add per
tap: ~3 GB/s of slices), im2col 7.7 s. The estimate rounds toward slow, which leaves the page's
figures room within the rerun's 2 s.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import streamlit as st

import gpuops
from gpuops.conv2d import ConvProblem

CPU_SECONDS = 2.0  # per rerun
CPU_BYTES = 512 * 2**20
CPU_COPY = {"im2col": 0.5e9, "default": 1.5e9, "one_channel": 2.5e9}  # bytes/s the NumPy twins copy (above)
CPU_FLOPS = 10e9  # flop/s of NumPy's matrix products on 2 cores
GPU_SESSION_FLOOR = 256 * 2**20  # a session may always use this much GPU memory
ACTIVE_WINDOW_S = 120.0  # a session counts as active this long after its last rerun
HEAVY_SIZE = 512  # a session whose working size (longest side, px) is at least this is heavy
HEAVY_LANES = int(os.environ.get("CONV_EXPLORER_HEAVY_LANES", "1"))  # heavy runs at once per process; 0: any
HEAVY_WAIT_S = 20.0  # the longest a heavy run waits for its lane before it runs anyway
# a worker of `serve`'s large-image pool (ui/lanes.py): no light session shares its interpreter
LARGE_WORKER = os.environ.get("CONV_EXPLORER_LANE", "").strip() == "large"


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
    sid = st.session_state.setdefault("_session_token", secrets.token_hex(8))
    seen, lock = _sessions()
    now = time.monotonic()
    with lock:
        seen[sid] = now
        for old in [s for s, t in seen.items() if now - t > ACTIVE_WINDOW_S]:
            del seen[old]


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


@st.cache_resource
def gpu_lock() -> threading.RLock:
    """The one GPU lock of this server process: one session's kernels or timings at a time, so
    memory peaks of concurrent sessions do not add up and no timing shares the GPU with another
    session's work. Re-entrant: a timing may call code that takes it again."""
    return threading.RLock()


@contextlib.contextmanager
def gpu_work() -> Iterator[None]:
    """Run GPU work of one session at a time (kernels are milliseconds). On the CPU it does
    nothing: NumPy's heavy calls release the GIL, so sessions share the cores."""
    if not gpuops.backend_info().gpu:
        yield
        return
    with gpu_lock():
        yield


# ---- heavy sessions --------------------------------------------------------------------------------
@st.cache_resource
def _heavy_lanes() -> threading.BoundedSemaphore:
    return threading.BoundedSemaphore(max(1, HEAVY_LANES))


_in_lane = threading.local()  # .held: this thread's run has passed a heavy lane


@contextlib.contextmanager
def heavy_lane(working_size: int, *, in_class: bool = False) -> Iterator[None]:
    """Runs of sessions working on large images (HEAVY_SIZE px and more) go HEAVY_LANES at a time
    per server process; everyone else's runs never wait here. A heavy run is mostly interpreter
    work (figures of large images, uploads) that shares the process's one interpreter lock with the
    light sessions the proxy placed on the same process: two heavy runs at once leave a light
    run a third of the interpreter, one leaves it half (bench/hostile_load.py measures this). A
    heavy run waits at most HEAVY_WAIT_S, then runs anyway: a click is late, never lost. The runs of
    a class (`in_class`: the instructor's, and followers', which take turns of their own) never wait
    here. Re-entrant: a heavy step inside a run that has passed the lane already (a LeNet training
    chunk of a large-image session) does not wait for it again.

    Under `scripts/dev.py serve` with lanes (ui/lanes.py), heavy sessions run on workers of their
    own, where nobody light is left to protect: there no run waits here. On a light worker the lane
    still covers heavy runs that land there (the large pool down, a class at a large size)."""
    held = getattr(_in_lane, "held", False)
    if LARGE_WORKER or in_class or HEAVY_LANES <= 0 or working_size < HEAVY_SIZE or held:
        yield
        return
    lanes = _heavy_lanes()
    got = lanes.acquire(timeout=HEAVY_WAIT_S)
    _in_lane.held = True
    try:
        yield
    finally:
        _in_lane.held = False
        if got:
            lanes.release()
