"""Pick the fastest of several equivalent GPU implementations once per shape, then remember it.

The same idea as cuDNN's benchmark mode: the first call for a shape times each candidate with
CUDA events; later calls for that shape reuse the winner (the cache policy of gpuops.cache).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from gpuops.cache import Memo

_choices = Memo("autotune_choices", 512)


def fastest(key: Hashable, candidates: dict[str, Callable[[], Any]], repeat: int = 10) -> str | None:
    """Name of the fastest candidate for `key` (measured on the first call only).

    A candidate that raises ValueError (it cannot handle these arguments) is skipped; None
    when every candidate refused.
    """
    key = repr(key)
    choice = _choices.get(key)
    if choice is not None:
        return choice
    from cupyx.profiler import benchmark

    timings = {}
    for name, fn in candidates.items():
        try:
            timings[name] = float(
                np.median(benchmark(fn, n_warmup=2, n_repeat=repeat, name=name).gpu_times[0])
            )
        except ValueError:
            continue
    if not timings:
        return None
    choice = min(timings, key=timings.__getitem__)
    _choices.put(key, choice)
    return choice


def remembered() -> dict[Hashable, str]:
    """A copy of the choices made so far (for tests and the benchmark report)."""
    return _choices.snapshot()
