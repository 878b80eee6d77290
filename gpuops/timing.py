"""Median runtime after warm-up: CUDA events on the GPU, perf_counter on the CPU.

On the GPU the timed calls are queued back to back, a pair of events around each, and the host
waits once at the end (as a training loop runs them). The time of a call is then what the GPU
spends on it, with the host's Python hidden behind the previous call's kernels, unless the host
is the slower side, when the gaps show. Synchronizing after every call (cupyx.profiler.benchmark)
counts the host's launch time instead: 0.06-0.1 ms of a 0.2 ms grad_input on the H100, and its
jitter made rows of one algorithm differ by up to 25% (bench/NOTES.md).
"""

from __future__ import annotations

import contextlib
import gc
import math
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

# After a first round, a short call runs enough times to fill this many milliseconds (at most
# MAX_RUNS): five runs of a 0.05 ms call are a quarter of a millisecond, where the host's jitter
# can decide between two algorithms (H100: image512's grad_input chose 0.072 ms over 0.055).
SHORT_ROUND_MS = 1.0
MAX_RUNS = 50
# A short call (one that runs more than asked to fill SHORT_ROUND_MS) gets this many rounds in
# all, a long one the rounds its caller asks for: a short call's time is mostly the host's, which
# a transient can hold up for a whole round (H100: late_stage's reflect_pad_backward, gather's row
# 0.0219 ms in both of its rounds, auto's row of the same call 0.0140 in the same run).
SHORT_ROUNDS = 4


def runs_to_fill(runs: int, call_ms: float | None) -> int:
    """Runs of a round: `runs`, or, for a call that an earlier round timed at call_ms, enough to
    fill SHORT_ROUND_MS (at most MAX_RUNS). gpuops.autotune and the benchmark time their rounds
    this way."""
    runs = max(1, runs)
    if call_ms is None or call_ms <= 0:
        return runs
    return max(runs, min(MAX_RUNS, math.ceil(SHORT_ROUND_MS / call_ms)))


def takes_round(round_: int, rounds: int, runs: int, call_ms: float | None) -> bool:
    """Whether a call timed at call_ms so far gets round `round_` (from 0) of at most
    max(rounds, SHORT_ROUNDS): each gets `rounds`, a short one SHORT_ROUNDS."""
    if round_ < rounds:
        return True
    return round_ < SHORT_ROUNDS and runs_to_fill(runs, call_ms) > max(1, runs)


@dataclass(frozen=True)
class Timing:
    median_ms: float
    runs: int
    clock: str  # "cuda-events" or "perf_counter"

    def label(self) -> str:
        return f"{self.median_ms:.3f} ms (median of {self.runs}, {self.clock})"


def measure(
    fn: Callable[[], Any],
    *,
    gpu: bool,
    warmup: int = 3,
    repeat: int = 10,
    max_seconds: float | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> Timing:
    """Time fn() `repeat` times after `warmup` calls and return the median in milliseconds.

    max_seconds bounds the CPU measurement (fewer repeats for slow calls), so a page stays
    responsive on a laptop. clock (seconds) is the CPU's timer; tests pass their own.
    """
    if gpu:
        times = gpu_times(fn, warmup, repeat)
        return Timing(statistics.median(times), len(times), "cuda-events")
    for _ in range(warmup):
        fn()
    times: list[float] = []
    with no_collection():
        start = clock()
        for _ in range(repeat):
            t0 = clock()
            fn()
            t1 = clock()
            times.append((t1 - t0) * 1e3)
            if max_seconds is not None and t1 - start > max_seconds:
                break
    return Timing(statistics.median(times), len(times), "perf_counter")


@contextlib.contextmanager
def no_collection() -> Iterator[None]:
    """Python's cyclic garbage collector off for the timed calls (as timeit does): a collection
    of a large heap pauses the host for milliseconds, in whichever call it happens to start."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def gpu_times(fn: Callable[[], Any], warmup: int, repeat: int) -> list[float]:
    """Milliseconds of each of `repeat` calls of fn on the current stream, queued back to back
    after `warmup` calls: an event before and after each call, one wait at the end."""
    import cupy

    for _ in range(warmup):
        fn()
    stream = cupy.cuda.get_current_stream()
    stream.synchronize()
    events = [(cupy.cuda.Event(), cupy.cuda.Event()) for _ in range(repeat)]
    with no_collection():
        for start, end in events:
            start.record(stream)
            fn()
            end.record(stream)
    events[-1][1].synchronize()
    return [float(cupy.cuda.get_elapsed_time(start, end)) for start, end in events]
