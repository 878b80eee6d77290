"""Run each GPU kernel once on the standard shapes, for Nsight Compute to profile.

`ncu --metrics ... python3 -m bench.profile_kernels` (see bench/NOTES.md for the command).
"""

from __future__ import annotations

import sys

import cupy as cp

import gpuops
from bench.suite import STANDARD_SHAPES

for s in STANDARD_SHAPES:
    x = cp.random.standard_normal((s.N, s.C, s.H, s.W), dtype=cp.float32)
    w = cp.random.standard_normal((s.M, s.C, s.K, s.K), dtype=cp.float32)
    gpuops.reflect_pad(x, min(s.pad + 2, s.H - 1))
    cols = gpuops.unfold(x, s.K, 1, s.pad, s.stride)
    gpuops.fold(cols, (s.H, s.W), s.K, 1, s.pad, s.stride, variant="gather")
    gpuops.fold(cols, (s.H, s.W), s.K, 1, s.pad, s.stride, variant="scatter")
    for algorithm in ("direct", "tiled_basic", "tiled", "implicit_gemm"):
        gpuops.conv2d(x, w, stride=s.stride, padding=s.pad, algorithm=algorithm)
    cp.cuda.Device().synchronize()
    print("profiled", s.name, file=sys.stderr)
