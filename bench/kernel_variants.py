"""Time variants of a kernel side by side, on the same inputs and the same Launch, in one run.

A variant is the shipped kernel file with text replaced (or an older file), compiled as its own
module; every variant's output is compared with the shipped kernel's before it is timed.
`python3 bench/kernel_variants.py [--repeat 30] [--old DIR]`: DIR holds an older gpuops/ tree
(e.g. `git archive <commit> gpuops | tar -x -C DIR`) whose kernels join as "old" variants.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import cupy as cp
import numpy as np
from cupyx.profiler import benchmark

import gpuops
from gpuops.bench import STANDARD_SHAPES
from gpuops.conv2d import check_conv2d, tiled_launch
from gpuops.launch import KERNEL_DIR, source_text
from gpuops.unfold_fold import fold_launch

# (file, kernel, {variant name: [(old text, new text), ...]})
VARIANTS = {
    "v3 tiled": (
        "conv2d.cu",
        "conv2d_v3_register_tiled",
        {
            "32-bit plane offsets in load_padded": [
                ("return plane[(long long)ih * W + iw];", "return plane[ih * W + iw];")
            ],
            "shared row from threadIdx": [
                (
                    "(c * in_h + input_coord(oh, stride_h, pad_h, ki, dil_h) - ih0) * pitch\n"
                    "                                     + input_coord(tile_ow + threadIdx.x, stride_w, pad_w, 0, dil_w) - iw0",
                    "(c * in_h + threadIdx.y * stride_h + ki * dil_h) * pitch + threadIdx.x * stride_w",
                )
            ],
        },
    ),
    "fold gather": ("unfold_fold.cu", "fold_v2_gather", {}),
}
OLD = {"v3 tiled": ("conv2d.cu", "conv2d_tiled"), "fold gather": ("unfold_fold.cu", "fold_gather_kernel")}


def compile_text(text: str, kernel: str) -> cp.RawKernel:
    return cp.RawModule(code=text, options=("-std=c++17", f"-I{KERNEL_DIR}")).get_function(kernel)


def median_ms(fn, repeat: int) -> float:
    return float(np.median(benchmark(fn, n_warmup=5, n_repeat=repeat).gpu_times[0]) * 1e3)


def cases(family: str):
    """(shape name, Launch, arrays (inputs + output)) per standard shape."""
    for s in STANDARD_SHAPES:
        x = cp.random.standard_normal((s.N, s.C, s.H, s.W), dtype=cp.float32)
        if family == "v3 tiled":
            w = cp.random.standard_normal((s.M, s.C, s.K, s.K), dtype=cp.float32)
            p = check_conv2d(x.shape, w.shape, None, s.stride, s.pad)
            yield s.name, tiled_launch(p), (x, w, None, cp.empty(p.out_shape, cp.float32))
        else:
            g = gpuops.window_geometry(s.H, s.W, s.K, s.stride, s.pad)
            cols = gpuops.unfold(x, s.K, 1, s.pad, s.stride)
            yield s.name, fold_launch(g, s.N, s.C, "gather"), (cols, cp.empty(x.shape, cp.float32))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--old", type=Path, default=None)
    args = parser.parse_args()
    print(f"{'family':<13}{'shape':<14}{'variant':<40}{'median ms':>10}{'max diff':>10}")
    for family, (filename, kernel, changes) in VARIANTS.items():
        shipped = source_text(filename)
        kernels = {"shipped": compile_text(shipped, kernel)}
        for name, edits in changes.items():
            text = shipped
            for old, new in edits:
                if old not in text:
                    raise SystemExit(f"{family} / {name}: text not found: {old[:60]!r}")
                text = text.replace(old, new)
            kernels[name] = compile_text(text, kernel)
        if args.old is not None:
            old_file, old_kernel = OLD[family]
            old_dir = args.old / "gpuops" / "kernels"
            text = (old_dir / old_file).read_text()
            kernels["old (" + old_kernel + ")"] = cp.RawModule(
                code=text, options=("-std=c++17", f"-I{old_dir}")
            ).get_function(old_kernel)
        for shape, launch, arrays in cases(family):
            params = (*(a if a is not None else np.uint64(0) for a in arrays), *(v for _, v in launch.args))
            reference = None
            for name, fn in kernels.items():

                def call(fn=fn, launch=launch, params=params):
                    fn(launch.grid, launch.block, params, shared_mem=launch.shared_bytes)

                arrays[-1][...] = cp.nan
                call()
                out = arrays[-1].copy()
                reference = out if reference is None else reference
                diff = float(cp.abs(out - reference).max())
                print(f"{family:<13}{shape:<14}{name:<40}{median_ms(call, args.repeat):>10.4f}{diff:>10.2e}")


if __name__ == "__main__":
    main()
