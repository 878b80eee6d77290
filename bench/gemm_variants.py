"""Time ways to run im2col's GEMM (W @ X_unroll per sample) with CuPy, next to torch.matmul.

`python bench/gemm_variants.py`: on the resnet56 and stride2 shapes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import cupy as cp
import numpy as np
import torch
from cupyx.profiler import benchmark

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from gpuops.conv import gemm_batched

torch.backends.cuda.matmul.allow_tf32 = False


def time_variants(name: str, N: int, K: int, L: int, M: int) -> None:
    cols = cp.random.standard_normal((N, K, L), dtype=cp.float32)
    w = cp.random.standard_normal((M, K), dtype=cp.float32)
    out = cp.empty((N, M, L), cp.float32)
    tw, tc = torch.as_tensor(w, device="cuda"), torch.as_tensor(cols, device="cuda")
    variants = {
        "cupy.matmul(w, cols)": lambda: cp.matmul(w, cols),
        "cupy.matmul(w[None], cols, out=)": lambda: cp.matmul(w[None], cols, out=out),
        "cupy.matmul 4-D groups form": lambda: cp.matmul(w.reshape(1, M, K), cols.reshape(N, 1, K, L)),
        "loop of 2-D cupy.matmul": lambda: [cp.matmul(w, cols[n], out=out[n]) for n in range(N)],
        "gpuops.conv.gemm_batched": lambda: gemm_batched(w, cols, out),
        "torch.matmul": lambda: torch.matmul(tw, tc),
    }
    for label, fn in variants.items():
        t = np.median(benchmark(fn, n_warmup=3, n_repeat=20, name=label).gpu_times[0]) * 1e3
        print(f"{name:9s} {label:36s} {t:.4f} ms  {2 * N * M * K * L / t / 1e9:.1f} TFLOP/s")


if __name__ == "__main__":
    for shape_name, dims in {"resnet56": (32, 576, 3136, 64), "stride2": (16, 576, 3136, 128)}.items():
        time_variants(shape_name, *dims)
