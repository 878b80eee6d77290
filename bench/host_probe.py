"""Host time per call of each operation's repeat path (Python + launch, the GPU left to run
asynchronously): `python3 -m bench.host_probe` prints microseconds per call. To compare host paths,
run it for two trees on one machine: in an older tree's root, `PYTHONPATH=<this repository> python3
-m bench.host_probe` times that tree's gpuops (the current folder comes first on the path)."""

from __future__ import annotations

import time

import cupy as cp

import gpuops


def per_call_us(fn, calls: int = 2000) -> float:
    for _ in range(50):
        fn()
    cp.cuda.runtime.deviceSynchronize()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls * 1e6)
        cp.cuda.runtime.deviceSynchronize()
    return best


x = cp.random.standard_normal((1, 3, 64, 64), dtype=cp.float32)
w = cp.random.standard_normal((16, 3, 3, 3), dtype=cp.float32)
cols = gpuops.unfold(x, 3, 1, 1, 1)
probes = {
    "reflect_pad": lambda: gpuops.reflect_pad(x, 2),
    "unfold": lambda: gpuops.unfold(x, 3, 1, 1, 1),
    "fold gather": lambda: gpuops.fold(cols, (64, 64), 3, 1, 1, 1, variant="gather"),
    **{
        f"conv2d {a}": (lambda a=a: gpuops.conv2d(x, w, None, 1, 1, algorithm=a))
        for a in ("tiled", "im2col", "auto")
    },
}
for name, fn in probes.items():
    print(f"{name:<16}{per_call_us(fn):8.1f} us per call")
