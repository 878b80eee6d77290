"""Pick the fastest of several equivalent GPU implementations once per shape, then remember it.

The same idea as cuDNN's benchmark mode: the first call for a shape times each candidate with
CUDA events (gpuops.timing); later calls for that shape reuse the winner (the cache policy of gpuops.cache).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from gpuops import timing
from gpuops.cache import Memo

_choices = Memo("autotune_choices", 512)


def fastest(
    key: Hashable, candidates: dict[str, Callable[[], Any]], repeat: int = 10, rounds: int = 2
) -> str | None:
    """Name of the fastest candidate for `key` (measured on the first call only).

    Each candidate is timed in `rounds` rounds of repeat / rounds runs, the rounds interleaved
    (all candidates, then all again), and keeps its best round's median: a transient that slows
    one round (a first cuBLAS call, a pool growing, another process's kernels) does not decide.
    (H100, one bench run: grad_weight's auto on a 7x7x512 layer chose a 0.68 ms algorithm over a
    0.29 ms one, timed once each.) A candidate that raises ValueError (it cannot handle these
    arguments) is skipped; None when every candidate refused. After the first round a short
    candidate runs enough times to fill timing.SHORT_ROUND_MS, in timing.SHORT_ROUNDS rounds.
    """
    key = repr(key)
    choice = _choices.get(key)
    if choice is not None:
        return choice
    timings: dict[str, float] = {}
    refused: set[str] = set()
    for round_ in range(max(rounds, timing.SHORT_ROUNDS)):
        for name, fn in candidates.items():
            if name in refused or not timing.takes_round(round_, rounds, repeat // rounds, timings.get(name)):
                continue
            try:
                warmup = 2 if round_ == 0 else 1
                runs = timing.runs_to_fill(repeat // rounds, timings.get(name))
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


def remembered() -> dict[Hashable, str]:
    """A copy of the choices made so far (for tests and the benchmark report)."""
    return _choices.snapshot()
