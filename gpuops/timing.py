"""Median runtime after warm-up: CUDA events on the GPU, perf_counter on the CPU."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


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
        from cupyx.profiler import benchmark

        result = benchmark(fn, n_warmup=warmup, n_repeat=repeat)
        times = [float(t) * 1e3 for t in result.gpu_times[0]]
        return Timing(statistics.median(times), len(times), "cuda-events")
    for _ in range(warmup):
        fn()
    times: list[float] = []
    start = clock()
    for _ in range(repeat):
        t0 = clock()
        fn()
        t1 = clock()
        times.append((t1 - t0) * 1e3)
        if max_seconds is not None and t1 - start > max_seconds:
            break
    return Timing(statistics.median(times), len(times), "perf_counter")
