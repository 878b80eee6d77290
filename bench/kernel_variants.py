"""Time variants of a kernel side by side, on the same inputs and the same Launch, in one run.

A variant is the shipped kernel file with text replaced (or an older file), compiled as its own
module; every variant's output is compared with the shipped kernel's before it is timed.
`python3 -m bench.kernel_variants [--repeat 30] [--old DIR]`: DIR holds an older gpuops/ tree
(e.g. `git archive <commit> gpuops | tar -x -C DIR`) whose kernels join as "old" variants.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import cupy as cp
import numpy as np

import gpuops
from bench.suite import STANDARD_SHAPES, Shape
from gpuops.launch import KERNEL_DIR, source_text
from gpuops.timing import measure


# (file, kernel, {variant name: ([(old text, new text), ...], launch change or None)})
# A launch change maps (shipped launch, problem) to (grid, block) for the variant.
def _ig(bn: int, bk: int):
    edits = [("#define IG_BN 128 ", f"#define IG_BN {bn} "), ("#define IG_BK 16 ", f"#define IG_BK {bk} ")]

    def change(launch, p):
        mg = p.M // p.groups
        return ((p.N * p.geometry.L + bn - 1) // bn, p.groups * ((mg + 63) // 64), 1), (bn, 1, 1)

    return edits, change


def _tc(bm: int, bn: int):
    edits = [("#define TC_BM 64 ", f"#define TC_BM {bm} "), ("#define TC_BN 128 ", f"#define TC_BN {bn} ")]

    def change(launch, p):
        mg = p.M // p.groups
        threads = 32 * (bm // 32) * (bn // 64)
        return ((p.N * p.geometry.L + bn - 1) // bn, p.groups * ((mg + bm - 1) // bm), 1), (threads, 1, 1)

    return edits, change


LOOP = (
    "            for (int c = 0; c < Cg; ++c, xp += plane, wp += KH * KW)   // ... then channel by channel\n"
    "                acc += *xp * *wp;"
)

VARIANTS = {
    "v1 direct": (
        "conv2d.cu",
        "conv2d_v1_direct",
        {
            "unroll 4 when Cg >= 8": (
                [
                    (
                        LOOP,
                        "            if (Cg >= 8) {\n#pragma unroll 4\n"
                        + LOOP
                        + "\n            } else {\n"
                        + LOOP
                        + "\n            }",
                    )
                ],
                None,
            ),
            "unroll 2": ([(LOOP, "#pragma unroll 2\n" + LOOP)], None),
            "no unroll": ([(LOOP, "#pragma unroll 1\n" + LOOP)], None),
            "unroll 4": ([(LOOP, "#pragma unroll 4\n" + LOOP)], None),
        },
    ),
    "v4 implicit gemm": (
        "conv2d.cu",
        "conv2d_v4_implicit_gemm",
        {
            "BK 8 (before)": ([("#define IG_BK 16 ", "#define IG_BK 8 ")], None),
            "BN 256": _ig(256, 16),
        },
    ),
    "v5 tf32": (
        "conv2d.cu",
        "conv2d_v5_implicit_gemm_tf32",
        {
            "BM 128 x BN 128": _tc(128, 128),
            "BM 64 x BN 256": _tc(64, 256),
            "no cvt (raw fp32 bits)": (
                [('asm("cvt.rna.tf32.f32 %0, %1;\\n" : "=r"(r) : "f"(v));', "r = __float_as_uint(v);")],
                None,
            ),
        },
    ),
}
OLD: dict[str, tuple[str, str]] = {}


def compile_text(text: str, kernel: str) -> cp.RawKernel:
    return cp.RawModule(code=text, options=("-std=c++17", f"-I{KERNEL_DIR}")).get_function(kernel)


def median_ms(fn, repeat: int) -> float:
    return measure(fn, gpu=True, warmup=5, repeat=repeat).median_ms


SHAPES = [
    *STANDARD_SHAPES,
    Shape("vgg_like", 8, 128, 112, 112, 128, 3, 1, 1),
    Shape("k5", 16, 32, 64, 64, 64, 5, 1, 2),
    Shape("late_stage", 32, 512, 7, 7, 512, 3, 1, 1),
]


FAMILY_ALGORITHMS = {
    "v1 direct": "direct",
    "v3 tiled": "tiled",
    "v4 implicit gemm": "implicit_gemm",
    "v5 tf32": "implicit_gemm_tf32",
}


def cases(family: str):
    """(shape name, problem, Launch, arrays (inputs + output)) per shape."""
    algorithm = FAMILY_ALGORITHMS[family]
    for s in SHAPES:
        x = cp.random.standard_normal((s.N, s.C, s.H, s.W), dtype=cp.float32)
        w = cp.random.standard_normal((s.M, s.C, s.K, s.K), dtype=cp.float32)
        plan = gpuops.plan_conv2d(x.shape, w.shape, None, s.stride, s.pad, algorithm=algorithm)
        yield s.name, plan.problem, plan.launch, (x, w, None, cp.empty(plan.out_shape, cp.float32))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--old", type=Path, default=None)
    parser.add_argument("--families", nargs="*", default=None, help="which kernel families (default: all)")
    args = parser.parse_args()
    print(f"{'family':<17}{'shape':<13}{'variant':<30}{'median ms':>10}{'TFLOP/s':>8}{'rel diff':>10}")
    for family, (filename, kernel, changes) in VARIANTS.items():
        if args.families and family not in args.families:
            continue
        shipped = source_text(filename)
        kernels = {"shipped": (compile_text(shipped, kernel), None)}
        for name, (edits, change) in changes.items():
            text = shipped
            for old, new in edits:
                if old not in text:
                    raise SystemExit(f"{family} / {name}: text not found: {old[:60]!r}")
                text = text.replace(old, new)
            try:
                fn = compile_text(text, kernel)
                _ = fn.kernel  # compiles now: a variant that cannot build is reported, not fatal
            except cp.cuda.compiler.CompileException as exc:
                why = str(exc).strip().splitlines()[-1][:80]
                print(f"{family:<17}{'-':<13}{name:<30} does not compile: {why}")
                continue
            kernels[name] = (fn, change)
        if args.old is not None:
            old_file, old_kernel = OLD[family]
            old_dir = args.old / "gpuops" / "kernels"
            text = (old_dir / old_file).read_text()
            kernels["old (" + old_kernel + ")"] = (
                cp.RawModule(code=text, options=("-std=c++17", f"-I{old_dir}")).get_function(old_kernel),
                None,
            )
        for shape, problem, launch, arrays in cases(family):
            params = (*(a if a is not None else np.uint64(0) for a in arrays), *(v for _, v in launch.args))
            reference = None
            for name, (fn, change) in kernels.items():
                grid, block = change(launch, problem) if change else (launch.grid, launch.block)

                def call(fn=fn, grid=grid, block=block, params=params, launch=launch):
                    fn(grid, block, params, shared_mem=launch.shared_bytes)

                arrays[-1][...] = cp.nan
                call()
                out = arrays[-1].copy()
                reference = out if reference is None else reference
                diff = float(cp.abs(out - reference).max() / cp.abs(reference).max())
                ms = median_ms(call, args.repeat)
                tflops = problem.flops / ms / 1e9
                print(f"{family:<17}{shape:<13}{name:<30}{ms:>10.4f}{tflops:>8.1f}{diff:>10.2e}")


if __name__ == "__main__":
    main()
