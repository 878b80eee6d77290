"""Time the v1 direct kernel under several block shapes against the source article's naive kernel
(bench/peers/article_naive_conv.cu), on the standard shapes, in one run.

`python3 -m bench.direct_variants [--repeat 30]`: prints a table (median ms, CUDA events) and
checks every variant against cuDNN-free float64-ish ground truth (our tiled kernel) first.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import cupy as cp
import numpy as np

import gpuops
from bench.suite import STANDARD_SHAPES
from gpuops.conv2d import PixelRowMap, check_conv2d, direct_launch
from gpuops.launch import KERNEL_DIR, source_text
from gpuops.timing import measure

PEER = (Path(__file__).parent / "peers" / "article_naive_conv.cu").read_text()
BLOCKS = [(16, 16, 1), (32, 8, 1), (64, 4, 1), (128, 2, 1), (32, 4, 1), (64, 2, 1)]


def median_ms(fn, repeat: int) -> float:
    return measure(fn, gpu=True, warmup=5, repeat=repeat).median_ms


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    peer = cp.RawModule(code=PEER).get_function("article_naive_conv")
    print(f"{'shape':<14}{'variant':<22}{'median ms':>10}{'max err':>10}")
    for s in STANDARD_SHAPES:
        x = cp.random.standard_normal((s.N, s.C, s.H, s.W), dtype=cp.float32)
        w = cp.random.standard_normal((s.M, s.C, s.K, s.K), dtype=cp.float32)
        ref = gpuops.conv2d(x, w, stride=s.stride, padding=s.pad, algorithm="tiled")
        p = check_conv2d(x.shape, w.shape, None, s.stride, s.pad)
        g = p.geometry
        y = cp.empty(p.out_shape, cp.float32)
        grid = ((g.L + 15) // 16, (s.M + 15) // 16, s.N)
        ints = [
            np.int32(v)
            for v in (s.N, s.C, s.H, s.W, s.M, s.K, s.K, s.stride, s.stride, s.pad, s.pad, g.H_out, g.W_out)
        ]

        def article(y=y, grid=grid, ints=ints, x=x, w=w):
            peer(grid, (16, 16, 1), (x, w, y, *ints))

        article()
        err = float(cp.abs(y - ref).max())
        print(f"{s.name:<14}{'article 16x16':<22}{median_ms(article, args.repeat):>10.4f}{err:>10.2e}")
        base = direct_launch(p)
        for block in BLOCKS:
            grid_v = (max(1, -(-g.L // block[0])), -(-s.M // block[1]), s.N)
            launch = dataclasses.replace(
                base, grid=grid_v, block=block, threads=PixelRowMap(block[0], block[1], g.W_out)
            )

            kernel = cp.RawModule(code=source_text("conv2d.cu"), options=("-std=c++17", f"-I{KERNEL_DIR}"))
            fn = kernel.get_function(launch.kernel)
            params = (x, w, np.uint64(0), y, *(v for _, v in launch.args))

            def ours(fn=fn, launch=launch, params=params):  # launched as the article's kernel is (fair)
                fn(launch.grid, launch.block, params)

            y[...] = cp.nan
            ours()
            err = float(cp.abs(y - ref).max())
            print(
                f"{s.name:<14}{'v1 ' + str(block[:2]):<22}{median_ms(ours, args.repeat):>10.4f}{err:>10.2e}"
            )


if __name__ == "__main__":
    main()
