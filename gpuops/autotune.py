"""Pick the fastest of several equivalent GPU implementations once per shape, then remember it.

The same idea as cuDNN's benchmark mode: the first call for a shape times each candidate with
CUDA events (gpuops.timing); later calls for that shape reuse the winner (the cache policy of gpuops.cache).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from gpuops import timing
from gpuops.cache import Memo

_choices = Memo("autotune_choices", 512)

# After the first round a candidate runs enough times to fill this many milliseconds (at most
# MAX_RUNS): five runs of a 0.05 ms call are a quarter of a millisecond, where the host's jitter
# can decide between two algorithms (H100: image512's grad_input chose 0.072 ms over 0.055).
SHORT_ROUND_MS = 1.0
MAX_RUNS = 50


def fastest(
    key: Hashable, candidates: dict[str, Callable[[], Any]], repeat: int = 10, rounds: int = 2
) -> str | None:
    """Name of the fastest candidate for `key` (measured on the first call only).

    Each candidate is timed in `rounds` rounds of repeat / rounds runs, the rounds interleaved
    (all candidates, then all again), and keeps its best round's median: a transient that slows
    one round (a first cuBLAS call, a pool growing, another process's kernels) does not decide.
    (H100, one bench run: grad_weight's auto on a 7x7x512 layer chose a 0.68 ms algorithm over a
    0.29 ms one, timed once each.) A candidate that raises ValueError (it cannot handle these
    arguments) is skipped; None when every candidate refused.
    """
    key = repr(key)
    choice = _choices.get(key)
    if choice is not None:
        return choice
    timings: dict[str, float] = {}
    refused: set[str] = set()
    for round_ in range(rounds):
        for name, fn in candidates.items():
            if name in refused:
                continue
            try:
                warmup = 2 if round_ == 0 else 1
                runs = _runs(repeat // rounds, timings.get(name))
                median = float(np.median(timing.gpu_times(fn, warmup, runs)))
            except ValueError:
                refused.add(name)
                continue
            timings[name] = min(median, timings.get(name, median))
    if not timings:
        return None
    choice = min(timings, key=timings.__getitem__)
    _choices.put(key, choice)
    return choice


def _runs(runs: int, first_ms: float | None) -> int:
    """Runs of a round: `runs`, or for a candidate whose earlier round took first_ms a call,
    enough to fill SHORT_ROUND_MS (at most MAX_RUNS)."""
    runs = max(1, runs)
    if first_ms is None or first_ms <= 0:
        return runs
    return max(runs, min(MAX_RUNS, math.ceil(SHORT_ROUND_MS / first_ms)))


def remembered() -> dict[Hashable, str]:
    """A copy of the choices made so far (for tests and the benchmark report)."""
    return _choices.snapshot()
