"""Run the benchmark command on one core: the one where the host issues GPU work fastest.

Rows of short calls are timed by the host: their GPU work takes less than the Python and the
launch that queue it. On the 16-core device machine (one NUMA node, a virtual machine) the same
reflect_pad_backward call took 13-15 us a call from six of the cores and 19-23 us from the others
(`taskset -c K`, H100), and an unpinned process moves between them: within one run auto's row of
a call measured 0.0218 ms while the row of the algorithm it runs, the same call, measured 0.0149.
Pinned to one core, every row of a run sees the same host, and the fastest core makes runs comparable.
Only the command pins itself (the Benchmarks page runs inside the app's server: it never does).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable


def probe_us(call: Callable[[], object], calls: int = 200, rounds: int = 3) -> float:
    """Microseconds a call of `call` takes on the host, the best of `rounds` loops of `calls`."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        best = min(best, (time.perf_counter() - start) / calls * 1e6)
    return best


def pin_to_fastest_core(probe: Callable[[], float]) -> dict[str, object] | None:
    """Pin this thread (and the threads it starts later) to the allowed core where probe() (a
    host time, lower is faster) is lowest; what was measured, or None where the system cannot
    pin (no os.sched_setaffinity, one core)."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        return None
    times: dict[int, float] = {}
    for core in allowed:
        os.sched_setaffinity(0, {core})
        times[core] = probe()
    best = min(times, key=times.__getitem__)
    os.sched_setaffinity(0, {best})
    return {
        "core": best,
        "cores": len(allowed),
        "probe_us": round(times[best], 2),
        "slowest_us": round(max(times.values()), 2),
    }


def gpu_launch_probe() -> Callable[[], float]:
    """probe() for pin_to_fastest_core on the GPU: host microseconds of a tiny CuPy kernel's launch
    (the GPU finishes each before the host has queued the next)."""
    import cupy

    x = cupy.zeros(32, dtype=cupy.float32)

    def launch() -> None:
        x.fill(1.0)

    def probe() -> float:
        us = probe_us(launch)
        cupy.cuda.get_current_stream().synchronize()
        return us

    probe()  # the kernel compiled and the context made before any core is timed
    return probe
