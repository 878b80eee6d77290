"""The backward pass of conv2d and the transposed convolution: check -> plan -> run, on CuPy or NumPy.

grad_input and conv_transpose2d are one computation (the adjoint of the forward convolution),
with four algorithms:
  scatter       grad_input_v1 (kernels/conv_backward.cu): one thread per output gradient adds dy * w onto
                the input cells its window read (atomicAdd)
  gather        grad_input_v2: one thread per input cell sums the output gradients that read it (the
                flipped filter, PMPP fig. 16.9-16.10); deterministic
  gemm_fold     cols = W^T @ dY through cuBLAS, then col2im with gpuops.fold (its gather kernel)
  flipped_conv  gather's sum IS a forward convolution: conv2d of dY with the flipped, in/out-swapped
                filter, padded by dilation*(k-1) - padding; with stride S, S x S of them, one per
                phase of dx (the cells r, r + S, ... meet every S-th tap). Each runs on the
                forward's fastest fp32 kernel for its shape (conv2d's auto), so every speed-up of
                the forward (v3 / v6 tiles, v15, implicit GEMM, im2col; on Hopper v13, and v14 where
                the layer's input channels per group, the flipped filter's filters, are few)
                reaches grad_input
  auto          on the GPU the fastest for the shape, measured once (gpuops.autotune); on the CPU
                scatter (one strided slice per tap, no K*K-times larger cols)
grad_weight has seven:
  gemm          unfold(x), then dW = dY @ cols^T through cuBLAS per sample, summed over the batch
  batch_gemm    gemm as ONE product over the whole batch: the samples side by side in one wide image
                (zero columns between them), one unfold of it, then dW = dY_wide [M, N*L'] @ cols^T
                (in chunks that fit the memory budget); no per-sample products to store and add, and
                one long GEMM instead of N short ones (L' = L plus the columns between samples)
  direct        grad_weight_v1: one block per weight sums dy * x, a shared-memory tree reduction;
                deterministic
  direct_pairs  grad_weight_v3: one block per (filter, channel) pair and slice of the batch's output
                rows, a warp per tap: the pair's KH*KW weights share one pass over dy and x; the
                slices' partial sums are added here. For depthwise layers (few pairs, long sums);
                deterministic. auto measures it in v1's place there (the same sums in one pass)
  direct_pairs_shared
                grad_weight_v4: direct_pairs with each chunk of rows staged in shared memory once
                for all taps (a team of threads per tap reads it there); depthwise layers too
  direct_columns
                grad_weight_v5: direct_pairs with a thread per column of outputs summing up to 9
                taps in registers, the block's sums added tap by tap; fewer, longer slices
  forward_conv  dW IS a forward convolution too: x with batch and channels swapped (C images of N
                channels) convolved with dY swapped the same way as its filters (M filters of
                N channels, H_out x W_out taps), stride and dilation swapped; output (c, m, ki, kj)
                is dW[m, c, ki, kj]. Runs on the forward's fastest fp32 kernel for that shape
                (conv2d's auto: on Hopper v13 or v14 where N is a multiple of 32)
  implicit_gemm_3xtf32
                grad_weight_v2 (Hopper only, kernels/conv_backward_hopper.cu): dW as one implicit
                GEMM on the tensor cores in 3xTF32 (fp32 accuracy), x read through KW shifted
                copies (one per column tap and row phase), no cols (gpuops.conv_backward_hopper)
  auto          on the GPU the fastest of all but direct, measured; on the CPU direct
Reflect padding: the forward pass is a convolution of the reflect-padded input, so the backward
pass works on the padded input and folds the mirrored cells back with reflect_pad_backward.

The NumPy twin of each launcher sits next to it and loops over the taps (ki, kj) only.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuops import autotune, sm90a
from gpuops import conv_backward_hopper as hopper
from gpuops.backend import array_module
from gpuops.cache import Memo, memoised
from gpuops.checks import (
    AXES,
    Layer,
    WindowGeometry,
    as_float32,
    check_groups,
    checked_pairs,
    layer_shapes,
    window_args,
    window_geometry,
)
from gpuops.conv2d import AUTO, ConvProblem, PixelRowMap, check_conv2d
from gpuops.cublas import MIN_BUDGET, Matrices, StridedGemm, check_gemm_sides, gemm_strided, samples_per_chunk
from gpuops.im2col import is_pointwise
from gpuops.index_math import INT32_MAX, ceil_div, output_coord, tap_slice, tap_slices
from gpuops.launch import (
    SHARED_LIMIT,
    Call,
    Launch,
    ThreadRef,
    check_grid,
    ints,
    keep_ready,
    ready_call,
    ready_key,
    row_launch,
)
from gpuops.reflect_pad import reflect_pad, reflect_pad_backward
from gpuops.unfold_fold import fold, fold_launch, fold_numpy, unfold_into, unfold_launch, unfold_numpy

SOURCE = "conv_backward.cu"
FLIP_KERNEL, SLICES_KERNEL = "flip_filter", "add_slices"  # copies of the host's compositions
GRAD_INPUT_ALGORITHMS = ("scatter", "gather", "gemm_fold", "flipped_conv")
GRAD_WEIGHT_ALGORITHMS = (
    "gemm",
    "batch_gemm",
    "direct",
    "direct_pairs",
    "direct_pairs_shared",
    "direct_columns",
    "forward_conv",
)
# v3, v4, v5: a block per (filter, channel) pair and slice of the rows
PAIR_ALGORITHMS = ("direct_pairs", "direct_pairs_shared", "direct_columns")
HOPPER_WEIGHT_ALGORITHMS = (hopper.ALGORITHM,)  # sm_90a kernels alone: auto measures them on Hopper
KERNELS = {
    "scatter": "grad_input_v1_scatter",
    "gather": "grad_input_v2_gather",
    "direct": "grad_weight_v1_reduce",
    "direct_pairs": "grad_weight_v3_pairs",
    "direct_pairs_shared": "grad_weight_v4_pairs_shared",
    "direct_columns": "grad_weight_v5_columns",
}
SCATTER_MAX_THREADS = 256  # grad_input_v1: threads per block (fewer for small output planes)
REDUCE_BLOCK = (32, 8, 1)  # grad_weight_v1; a CPU test checks it against the #defines of the .cu file
# grad_weight_v3 cuts the batch's output rows into slices until there are about this many blocks:
# 32 for each of the H100's 132 multiprocessors (a constant, so that a CPU draws the same plan).
# H100, depthwise 3x3 layer: 5 / 9 / 17 / 33 slices (8 / 16 / 32 / 64 an SM) 0.71 / 0.66 / 0.65 / 0.65 ms
PAIRS_TARGET_BLOCKS = 32 * 132
PAIRS_WARPS = 16  # grad_weight_v3's warps a block at most (its __launch_bounds__(512)): one a tap
SHARED_PAIRS_THREADS = 256  # grad_weight_v4's block (V4_THREADS)
# grad_weight_v4 stages about this many output pixels at once (16 a thread). H100, depthwise 3x3
# layer, two rounds: 512 / 1024 / 2048 / 4096 pixels 0.476 / 0.410 / 0.383 / 0.367 ms
SHARED_PAIRS_PIXELS = 4096
COLUMNS_THREADS = 256  # grad_weight_v5's block (V5_THREADS)
COLUMNS_TAPS = 9  # grad_weight_v5's taps a pass (V5_TAPS)
# grad_weight_v5 cuts the rows into slices until there are about this many blocks (8 an SM):
# a thread then walks many rows of its column between two reductions
COLUMNS_TARGET_BLOCKS = 8 * 132
FOLD_VARIANT = "gather"  # gemm_fold's col2im: deterministic, and the launch the plan names
# auto measures forward_conv where the batch (its convolution's channels) fills v13's 32-channel
# stages; elsewhere that convolution of H_out x W_out taps lost to batch_gemm (H100: VGG-like, 8
# samples, 6.4 ms against 1.1; 7x7x1024, 16 samples, 0.86 against 0.76)
FORWARD_CONV_BATCH = 32
FLIPPED_FORWARD = AUTO  # the conv2d algorithm flipped_conv runs: the forward's fastest fp32 kernel


# ---- check --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GradProblem(Layer):
    """One backward computation, checked: dx (N, C, H, W) from dy (N, M, H_dy, W_dy) and
    w (M, C/groups, KH, KW) through `geometry`, the forward windows over dx (H, W, pads...).

    conv2d_backward: dx is the forward input (the padded input in reflect mode), dy the
    forward output, so (H_dy, W_dy) = (geometry.H_out, geometry.W_out).
    conv_transpose2d: dy is the transposed convolution's input, dx its output; with
    output_padding >= stride, window_count gives windows no input feeds, so H_dy < geometry.H_out.
    """

    H_dy: int
    W_dy: int

    @property
    def dx_shape(self) -> tuple[int, int, int, int]:
        return self.N, self.C, self.geometry.H, self.geometry.W

    @property
    def dy_shape(self) -> tuple[int, int, int, int]:
        return self.N, self.M, self.H_dy, self.W_dy

    @property
    def flops(self) -> int:
        """Of the forward convolution this is the adjoint of."""
        return self.flops_for(self.H_dy * self.W_dy)

    @property
    def cols_bytes_per_sample(self) -> int:
        """Bytes of one sample's cols (C*KH*KW x L) for gemm_fold and the gemm weight gradient."""
        g = self.geometry
        return 4 * self.C * g.KH * g.KW * g.L

    @property
    def empty(self) -> bool:
        return min(self.dx_shape) == 0 or min(self.dy_shape) == 0


def check_input_algorithm(algorithm: str) -> None:
    if algorithm not in (*GRAD_INPUT_ALGORITHMS, AUTO):
        raise ValueError(f"algorithm {algorithm!r} must be one of {(*GRAD_INPUT_ALGORITHMS, AUTO)}")


def offered_weight_algorithms() -> tuple[str, ...]:
    """The grad_weight algorithms a comparison offers on this machine: the portable ones, and
    grad_weight v2 where the device is a Hopper GPU (checked without compiling)."""
    if sm90a.targets_device(hopper.SOURCE):
        return GRAD_WEIGHT_ALGORITHMS + HOPPER_WEIGHT_ALGORITHMS
    return GRAD_WEIGHT_ALGORITHMS


def check_weight_algorithm(algorithm: str) -> None:
    known = (*GRAD_WEIGHT_ALGORITHMS, *HOPPER_WEIGHT_ALGORITHMS, AUTO)
    if algorithm not in known:
        raise ValueError(f"weight_algorithm {algorithm!r} must be one of {known}")


@dataclass(frozen=True)
class TransposeGeometry:
    """A transposed convolution along both axes: an H_in x W_in input becomes an H_out x W_out
    output, H_out = (H_in - 1)*stride - 2*padding + dilation*(KH - 1) + output_padding + 1.
    `forward` is the convolution it is the adjoint of: its windows over the OUTPUT."""

    H_in: int
    W_in: int
    output_padding: tuple[int, int]
    forward: WindowGeometry

    @property
    def H_out(self) -> int:
        return self.forward.H

    @property
    def W_out(self) -> int:
        return self.forward.W


@memoised("transpose_geometries", 1024)
def transpose_geometry(
    H_in: int,
    W_in: int,
    kernel_size: Any,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    dilation: Any = 1,
) -> TransposeGeometry:
    """Check a transposed convolution's window arguments and return its geometry."""
    (kh, kw), (sh, sw), (dh, dw), (ph, pw), (oph, opw) = checked_pairs(
        kernel_size=(kernel_size, 1),
        stride=(stride, 1),
        dilation=(dilation, 1),
        padding=(padding, 0),
        output_padding=(output_padding, 0),
    )
    sizes = []
    for axis, size, k, s, p, op, d in zip(
        AXES, (H_in, W_in), (kh, kw), (sh, sw), (ph, pw), (oph, opw), (dh, dw), strict=True
    ):
        if size < 1:
            raise ValueError(f"input {axis} {size} must be at least 1")
        if op >= s and op >= d:
            raise ValueError(f"output_padding {op} ({axis}) must be smaller than stride {s} or dilation {d}")
        out = (size - 1) * s - 2 * p + d * (k - 1) + op + 1
        if out < 1:
            raise ValueError(
                f"conv_transpose2d output {axis} {out} = (input {size} - 1) x stride {s} - 2 x padding {p} "
                f"+ dilation {d} x (kernel {k} - 1) + output_padding {op} + 1 must be at least 1"
            )
        sizes.append(out)
    forward = window_geometry(sizes[0], sizes[1], (kh, kw), (sh, sw), (ph, pw), (dh, dw))
    return TransposeGeometry(H_in, W_in, (oph, opw), forward)


@memoised("conv_transpose2d_checks", 1024)
def check_conv_transpose2d(
    x_shape: tuple[int, ...],
    w_shape: tuple[int, ...],
    bias_shape: tuple[int, ...] | None = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: Any = 1,
    dilation: Any = 1,
) -> GradProblem:
    """Validate conv_transpose2d's arguments by shape alone; ValueError names parameter and limit."""
    groups = check_groups(groups)
    N, C_in, H_in, W_in, rows, Cg_out, KH, KW = layer_shapes(
        x_shape,
        w_shape,
        bias_shape,
        x_meaning="(C_in, H, W) or (N, C_in, H, W)",
        w_meaning="(in_channels, out_channels/groups, kh, kw)",
        bias_count=lambda _, cg_out: cg_out * groups,
        bias_meaning="output channel",
    )
    if C_in % groups:
        raise ValueError(f"groups {groups} must divide the input channels {C_in}")
    if rows != C_in:
        raise ValueError(f"weight has {rows} input channels (its first dimension), but the input has {C_in}")
    C_out = Cg_out * groups
    tg = transpose_geometry(H_in, W_in, (KH, KW), stride, padding, output_padding, dilation)
    return GradProblem(N, C_out, C_in, groups, tg.forward, H_in, W_in)


@memoised("conv2d_backward_checks", 1024)
def check_conv2d_backward(
    grad_output_shape: tuple[int, ...],
    x_shape: tuple[int, ...],
    w_shape: tuple[int, ...],
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: Any = 1,
    padding_mode: str = "zeros",
) -> tuple[ConvProblem, GradProblem]:
    """The forward problem (conv2d's checks) and the backward one; grad_output must have the
    forward output's shape. In reflect mode the GradProblem's dx is the padded input."""
    p = check_conv2d(tuple(x_shape), tuple(w_shape), None, stride, padding, dilation, groups, padding_mode)
    expected = p.out_shape if len(x_shape) == 4 else p.out_shape[1:]
    if tuple(grad_output_shape) != tuple(expected):
        raise ValueError(
            f"grad_output shape {tuple(grad_output_shape)} must equal the forward output's shape "
            f"{tuple(expected)}"
        )
    g = p.geometry.unpadded() if p.reflect else p.geometry
    return p, GradProblem(p.N, p.C, p.M, p.groups, g, g.H_out, g.W_out)


# ---- plan: one launch helper per kernel ---------------------------------------------------------------
def _geometry_args(q: GradProblem) -> tuple[tuple[str, Any], ...]:
    """The arguments every kernel of conv_backward.cu takes after its arrays, in order."""
    return ints(N=q.N, C=q.C, M=q.M) + window_args(q.geometry, q.H_dy, q.W_dy) + ints(groups=q.groups)


@dataclass(frozen=True)
class WeightBlockMap:
    """grad_weight_v1: block ((m*Cg + c)*KH + ki)*KW + kj sums weight (m, c, ki, kj); thread 0 stores it."""

    Cg: int
    KH: int
    KW: int

    def thread_of(self, launch: Launch, index: tuple[int, ...]) -> ThreadRef:
        m, c, ki, kj = index
        return ThreadRef((((m * self.Cg + c) * self.KH + ki) * self.KW + kj, 0, 0), (0, 0, 0))

    def describe(self) -> str:
        x, y, _ = REDUCE_BLOCK
        return (
            f"one block of {x * y} threads per weight: {y} thread rows take output rows (n, oh), {x} threads "
            "walk each row; a shared-memory tree adds their sums and thread 0 stores the weight's gradient"
        )


def _scatter_pixels(L: int) -> int:
    """Threads per block of grad_input_v1: a power of two, 32..256, no more than the plane needs."""
    bx = 32
    while bx < min(L, SCATTER_MAX_THREADS):
        bx *= 2
    return bx


def input_scatter_launch(q: GradProblem) -> Launch:
    """grad_input_v1: grid (pixel blocks, M, N) over dy; dx must be zeroed."""
    L = q.H_dy * q.W_dy
    bx = _scatter_pixels(L)
    grid = (max(1, ceil_div(L, bx)), q.M, q.N)
    check_grid(grid, "the scatter kernel")
    does = (
        "one thread per output gradient dy (n, m, oh, ow): it atomically adds dy x w onto every input cell "
        "its window read"
    )
    threads = PixelRowMap(bx, 1, q.W_dy, does)
    return Launch(
        KERNELS["scatter"],
        SOURCE,
        grid,
        (bx, 1, 1),
        0,
        ("dy", "w", "dx"),
        _geometry_args(q),
        threads,
        "(n, m, oh, ow) of dy",
    )


def input_gather_launch(q: GradProblem) -> Launch:
    """grad_input_v2: a row kernel over dx (N, C, H, W), rows of W cells."""
    g = q.geometry
    return row_launch(
        KERNELS["gather"],
        SOURCE,
        ("dy", "w", "dx"),
        q.dx_shape,
        g.W,
        _geometry_args(q),
        index="(n, c, ih, iw) of dx",
    )


def _check_weight_rows(q: GradProblem, algorithm: str) -> None:
    """grad_weight v1 and v3 count the batch's output rows N*H_out with 32-bit ints."""
    rows = q.N * q.H_dy
    if rows > INT32_MAX:
        raise ValueError(
            f"the {algorithm} weight-gradient kernel counts output rows N x H_out = {rows:,} with 32-bit "
            f"ints (limit {INT32_MAX:,}); split the batch or use weight_algorithm='gemm'"
        )


def weight_reduce_launch(q: GradProblem) -> Launch:
    """grad_weight_v1: one block per weight; the block's rows are the N*H_out output rows (32-bit)."""
    _check_weight_rows(q, "direct")
    Cg = q.C // q.groups
    grid = (max(1, q.M * Cg * q.geometry.KH * q.geometry.KW), 1, 1)
    check_grid(grid, "the direct weight-gradient kernel")
    return Launch(
        KERNELS["direct"],
        SOURCE,
        grid,
        REDUCE_BLOCK,
        0,
        ("dy", "x", "dw"),
        _geometry_args(q),
        WeightBlockMap(Cg, q.geometry.KH, q.geometry.KW),
        "(m, c, ki, kj) of dw",
    )


@dataclass(frozen=True)
class WeightPairMap:
    """grad_weight_v3: block (m*Cg + c, slice) sums the pair's taps over its slice of rows, warp
    w taps w, w + warps, ...; lane 0 of the tap's warp stores partial[slice, m, c, ki, kj]."""

    Cg: int
    KW: int
    warps: int
    slices: int

    def thread_of(self, launch: Launch, index: tuple[int, ...]) -> ThreadRef:
        s, m, c, ki, kj = index
        t = ki * self.KW + kj
        return ThreadRef((m * self.Cg + c, s, 0), (0, t % self.warps, 0), (t // self.warps,))

    def describe(self) -> str:
        split = (
            f"; the batch's output rows are cut into {self.slices} slices (blocks along y), whose sums "
            "are added after the kernel"
        )
        return (
            f"one block per (filter, channel) pair: warp t sums tap t over the output rows (a warp "
            f"of {self.warps} in the block; 32 lanes walk each row), lane 0 stores the sum"
            + (split if self.slices > 1 else "")
        )


def pair_slices(q: GradProblem, blocks: int = PAIRS_TARGET_BLOCKS) -> tuple[int, int]:
    """(slices, rows a slice) of grad_weight_v3 / v4 (v5: blocks=COLUMNS_TARGET_BLOCKS): the
    N*H_out output rows cut into equal runs until the pairs x slices blocks reach `blocks`, never
    an empty slice."""
    rows = max(1, q.N * q.H_dy)
    pairs = max(1, q.M * (q.C // q.groups))
    per_slice = ceil_div(rows, min(rows, max(1, ceil_div(blocks, pairs))))
    return ceil_div(rows, per_slice), per_slice


def slices_of(q: GradProblem, algorithm: str) -> tuple[int, int]:
    """(slices, rows a slice) of a pair algorithm (v3, v4 or v5)."""
    return pair_slices(q, COLUMNS_TARGET_BLOCKS if algorithm == "direct_columns" else PAIRS_TARGET_BLOCKS)


def weight_pairs_launch(q: GradProblem) -> Launch:
    """grad_weight_v3: grid (pairs, slices), a warp per tap (at most PAIRS_WARPS); writes the
    slices' partial sums (slices, M, C/groups, KH, KW)."""
    _check_weight_rows(q, "direct_pairs")
    g, Cg = q.geometry, q.C // q.groups
    slices, per_slice = pair_slices(q)
    warps = min(g.KH * g.KW, PAIRS_WARPS)
    grid = (max(1, q.M * Cg), slices, 1)
    check_grid(grid, "the direct_pairs weight-gradient kernel")
    return Launch(
        KERNELS["direct_pairs"],
        SOURCE,
        grid,
        (32, warps, 1),
        0,
        ("dy", "x", "partial"),
        _geometry_args(q) + ints(rows_per_slice=per_slice),
        WeightPairMap(Cg, g.KW, warps, slices),
        "(slice, m, c, ki, kj) of the partial sums",
    )


@dataclass(frozen=True)
class WeightTeamMap:
    """grad_weight_v4: block (m*Cg + c, slice); in a pass of up to 256 taps, tap t's team is
    threads (t % 256) * team .., team = 256 // taps; its first thread stores partial[slice, m, c,
    ki, kj] after adding the team's shares."""

    Cg: int
    KH: int
    KW: int
    slices: int

    def thread_of(self, launch: Launch, index: tuple[int, ...]) -> ThreadRef:
        s, m, c, ki, kj = index
        t, kk = ki * self.KW + kj, self.KH * self.KW
        taps = min(kk - t // SHARED_PAIRS_THREADS * SHARED_PAIRS_THREADS, SHARED_PAIRS_THREADS)
        team = SHARED_PAIRS_THREADS // taps
        return ThreadRef(
            (m * self.Cg + c, s, 0), (t % SHARED_PAIRS_THREADS * team, 0, 0), (t // SHARED_PAIRS_THREADS,)
        )

    def describe(self) -> str:
        kk = self.KH * self.KW
        team = SHARED_PAIRS_THREADS // min(kk, SHARED_PAIRS_THREADS)
        split = f"; {self.slices} slices of the rows (blocks along y) are added after the kernel"
        return (
            f"one block per (filter, channel) pair stages chunks of its output rows and the input rows "
            f"they read in shared memory; a team of {team} threads per tap sums the tap's products "
            "there, and the team's first thread stores the sum" + (split if self.slices > 1 else "")
        )


def shared_pairs_chunk(q: GradProblem) -> tuple[int, int]:
    """grad_weight_v4's (chunk_rows, shared bytes): about SHARED_PAIRS_PIXELS output pixels a chunk
    (whole rows, at most a sample's), their dy rows and the x rows they read; ValueError when
    one row's chunk does not fit the 48 KB a block gets."""
    g = q.geometry
    rows = max(1, min(g.H_out, SHARED_PAIRS_PIXELS // max(1, g.W_out)))

    def floats(r: int) -> int:
        return ((r - 1) * g.stride_h + (g.KH - 1) * g.dil_h + 1) * g.W + r * g.W_out

    while rows > 1 and 4 * floats(rows) > SHARED_LIMIT - 4 * SHARED_PAIRS_THREADS:
        rows -= 1
    if 4 * floats(rows) > SHARED_LIMIT - 4 * SHARED_PAIRS_THREADS:
        raise ValueError(
            f"the direct_pairs_shared weight-gradient kernel stages whole input rows: one output row "
            f"needs {4 * floats(1):,} bytes of shared memory with rows of {g.W} cells, more than the "
            f"{SHARED_LIMIT - 4 * SHARED_PAIRS_THREADS:,} it has; use weight_algorithm='direct_pairs'"
        )
    return rows, 4 * floats(rows)


def weight_pairs_shared_launch(q: GradProblem) -> Launch:
    """grad_weight_v4: grid (pairs, slices) as v3, 256 threads, the chunk in dynamic shared memory;
    writes the slices' partial sums (slices, M, C/groups, KH, KW)."""
    _check_weight_rows(q, "direct_pairs_shared")
    g, Cg = q.geometry, q.C // q.groups
    slices, per_slice = pair_slices(q)
    chunk_rows, shared = shared_pairs_chunk(q)
    grid = (max(1, q.M * Cg), slices, 1)
    check_grid(grid, "the direct_pairs_shared weight-gradient kernel")
    return Launch(
        KERNELS["direct_pairs_shared"],
        SOURCE,
        grid,
        (SHARED_PAIRS_THREADS, 1, 1),
        shared,
        ("dy", "x", "partial"),
        _geometry_args(q) + ints(rows_per_slice=per_slice, chunk_rows=chunk_rows),
        WeightTeamMap(Cg, g.KH, g.KW, slices),
        "(slice, m, c, ki, kj) of the partial sums",
    )


@dataclass(frozen=True)
class WeightColumnsMap:
    """grad_weight_v5: block (m*Cg + c, slice); its threads walk columns of output rows, every
    tap's sum in registers; thread t of the block stores tap t0 + t of pass t0 // COLUMNS_TAPS."""

    Cg: int
    KW: int
    cols: int
    slices: int

    def thread_of(self, launch: Launch, index: tuple[int, ...]) -> ThreadRef:
        s, m, c, ki, kj = index
        t = ki * self.KW + kj
        return ThreadRef((m * self.Cg + c, s, 0), (t % COLUMNS_TAPS, 0, 0), (t // COLUMNS_TAPS,))

    def describe(self) -> str:
        runners = COLUMNS_THREADS // self.cols
        split = f"; {self.slices} slices of the rows (blocks along y) are added after the kernel"
        return (
            f"one block per (filter, channel) pair: its {COLUMNS_THREADS} threads stand on {self.cols} "
            f"output columns side by side, {runners} down the rows, each summing up to {COLUMNS_TAPS} taps "
            "in registers; the block adds its threads' sums tap by tap, and thread t stores tap t"
            + (split if self.slices > 1 else "")
        )


def weight_columns_launch(q: GradProblem) -> Launch:
    """grad_weight_v5: grid (pairs, slices), fewer slices than v3 / v4 (COLUMNS_TARGET_BLOCKS);
    256 threads; writes the slices' partial sums (slices, M, C/groups, KH, KW)."""
    _check_weight_rows(q, "direct_columns")
    g, Cg = q.geometry, q.C // q.groups
    slices, per_slice = slices_of(q, "direct_columns")
    grid = (max(1, q.M * Cg), slices, 1)
    check_grid(grid, "the direct_columns weight-gradient kernel")
    return Launch(
        KERNELS["direct_columns"],
        SOURCE,
        grid,
        (COLUMNS_THREADS, 1, 1),
        0,
        ("dy", "x", "partial"),
        _geometry_args(q) + ints(rows_per_slice=per_slice),
        WeightColumnsMap(Cg, g.KW, min(g.W_out, COLUMNS_THREADS), slices),
        "(slice, m, c, ki, kj) of the partial sums",
    )


def input_launch(q: GradProblem, algorithm: str) -> Launch | None:
    """The launch that writes grad_input: v1, v2, or gemm_fold's col2im (fold_v2_gather; None
    for a pointwise problem, where cuBLAS writes dx itself). None for flipped_conv too: conv2d's
    auto picks its forward kernel per shape, when it first runs."""
    if algorithm == "scatter":
        return input_scatter_launch(q)
    if algorithm == "gather":
        return input_gather_launch(q)
    if algorithm == "flipped_conv":
        return None
    return None if is_pointwise(q.geometry) else fold_launch(q.geometry, q.N, q.C, FOLD_VARIANT)


def weight_launch(q: GradProblem, algorithm: str) -> Launch | None:
    """The kernel launch of a weight-gradient algorithm: grad_weight_v1 or v3, or the unfold of gemm and
    batch_gemm (the GEMM is cuBLAS; None for a pointwise problem, which unfolds nothing)."""
    if algorithm == "direct":
        return weight_reduce_launch(q)
    if algorithm == "direct_pairs":
        return weight_pairs_launch(q)
    if algorithm == "direct_pairs_shared":
        return weight_pairs_shared_launch(q)
    if algorithm == "direct_columns":
        return weight_columns_launch(q)
    if algorithm in HOPPER_WEIGHT_ALGORITHMS:  # its GEMM (the shifted copies come first)
        reason = hopper.refusal(q)
        if reason is not None:
            raise ValueError(f"weight_algorithm {algorithm!r} (grad_weight v2) does not fit: {reason}")
        return hopper.gemm_launch(q)
    if algorithm == "forward_conv":  # conv2d's auto picks its kernel per shape, when it first runs
        return None
    if is_pointwise(q.geometry):
        return None
    if algorithm == "batch_gemm":  # the unfold of the batch's wide image (when one chunk holds it)
        return unfold_launch(side_by_side(q.geometry, q.N).wide, 1, q.C)
    return unfold_launch(q.geometry, q.N, q.C)


@dataclass(frozen=True)
class BackwardPlan:
    """A checked backward (or transposed) call and the launches it makes (None: chosen per call
    by "auto" or by flipped_conv's forward auto, nothing to compute, or cuBLAS alone: a pointwise
    GEMM path)."""

    problem: GradProblem
    input_algorithm: str
    input_launch: Launch | None
    weight_algorithm: str | None = None
    weight_launch: Launch | None = None
    pads: tuple[int, int, int, int] | None = None  # reflect mode: (left, right, top, bottom)

    @property
    def launches(self) -> tuple[Launch, ...]:
        return tuple(launch for launch in (self.input_launch, self.weight_launch) if launch is not None)


@memoised("conv_transpose2d_plans", 1024)
def plan_conv_transpose2d(*args: Any, algorithm: str = AUTO, **kwargs: Any) -> BackwardPlan:
    """check_conv_transpose2d's arguments (x_shape, w_shape, bias_shape, stride, padding,
    output_padding, groups, dilation), then `algorithm` (9th positional or by name): the checked
    problem and the launch that algorithm makes (the app draws it before running)."""
    if len(args) > 8:
        args, algorithm = args[:8], args[8]
    check_input_algorithm(algorithm)
    q = check_conv_transpose2d(*args, **kwargs)
    launch = None if algorithm == AUTO or q.empty else input_launch(q, algorithm)
    return BackwardPlan(q, algorithm, launch)


@memoised("conv2d_backward_plans", 1024)
def plan_conv2d_backward(
    *args: Any, algorithm: str = AUTO, weight_algorithm: str = AUTO, **kwargs: Any
) -> BackwardPlan:
    """check_conv2d_backward's arguments (grad_output_shape, x_shape, w_shape, stride, padding,
    dilation, groups, padding_mode), then `algorithm` and `weight_algorithm` (9th and 10th
    positional or by name): the checked problems and the launches of both gradients."""
    if len(args) > 8:
        args, (algorithm, *rest) = args[:8], args[8:]
        weight_algorithm = rest[0] if rest else weight_algorithm
    check_input_algorithm(algorithm)
    check_weight_algorithm(weight_algorithm)
    p, q = check_conv2d_backward(*args, **kwargs)
    il = None if algorithm == AUTO or q.empty else input_launch(q, algorithm)
    wl = None if weight_algorithm == AUTO or q.empty else weight_launch(q, weight_algorithm)
    return BackwardPlan(q, algorithm, il, weight_algorithm, wl, p.geometry.pads if p.reflect else None)


# ---- NumPy twins (loops over the taps only) ---------------------------------------------------------
def _grouped(q: GradProblem, dy: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """dy as (N, G, Mg, L_dy) and the weights as (G, Mg, Cg, KH, KW)."""
    G = q.groups
    Mg, Cg, g = q.M // G, q.C // G, q.geometry
    return dy.reshape(q.N, G, Mg, q.H_dy * q.W_dy), w.reshape(G, Mg, Cg, g.KH, g.KW)


def input_scatter_numpy(dy: np.ndarray, w: np.ndarray, q: GradProblem) -> np.ndarray:
    """Twin of grad_input_v1: per tap (ki, kj), every output gradient times w[:, :, ki, kj] (a product over
    the group's filters) lands on the strided slice of the padded input that tap read; then the
    padding is cropped off."""
    g, G, Cg = q.geometry, q.groups, q.C // q.groups
    dyg, wg = _grouped(q, dy, w)
    Hp, Wp = g.padded_hw
    dxp = np.zeros((q.N, G, Cg, Hp, Wp), dtype=np.float32)
    for ki in range(g.KH):
        rows = tap_slice(ki, g.dil_h, g.stride_h, q.H_dy)
        for kj in range(g.KW):
            cols = tap_slice(kj, g.dil_w, g.stride_w, q.W_dy)
            contrib = wg[:, :, :, ki, kj].transpose(0, 2, 1) @ dyg  # (N, G, Cg, L_dy)
            dxp[..., rows, cols] += contrib.reshape(q.N, G, Cg, q.H_dy, q.W_dy)
    dx = dxp[..., g.pad_top : g.pad_top + g.H, g.pad_left : g.pad_left + g.W]
    return np.ascontiguousarray(dx.reshape(q.dx_shape))


def input_gather_numpy(dy: np.ndarray, w: np.ndarray, q: GradProblem) -> np.ndarray:
    """Twin of grad_input_v2: per tap (ki, kj), every input cell takes the output gradient output_coord
    names (rows and columns where it is -1 take nothing), times w[:, :, ki, kj]."""
    g, G, Cg = q.geometry, q.groups, q.C // q.groups
    dyg, wg = _grouped(q, dy, w)
    dyg = dyg.reshape(q.N, G, q.M // G, q.H_dy, q.W_dy)
    dx = np.zeros((q.N, G, Cg, g.H, g.W), dtype=np.float32)
    ih, iw = np.arange(g.H), np.arange(g.W)
    for ki in range(g.KH):
        oh = output_coord(ih, g.stride_h, g.pad_top, ki, g.dil_h, q.H_dy)
        rows = np.flatnonzero(oh >= 0)
        if rows.size == 0:
            continue
        for kj in range(g.KW):
            ow = output_coord(iw, g.stride_w, g.pad_left, kj, g.dil_w, q.W_dy)
            cols = np.flatnonzero(ow >= 0)
            if cols.size == 0:
                continue
            # the rows (columns) that take a gradient are every stride-th, and the gradients they
            # take are consecutive: both are slices, so a tap reads and adds views, no index grids
            r_in, r_dy, c_in, c_dy = _steps(rows), _steps(oh[rows]), _steps(cols), _steps(ow[cols])
            taken = dyg[:, :, :, r_dy, c_dy]  # (N, G, Mg, r, c)
            contrib = wg[:, :, :, ki, kj].transpose(0, 2, 1) @ taken.reshape(q.N, G, q.M // G, -1)
            dx[:, :, :, r_in, c_in] += contrib.reshape(q.N, G, Cg, rows.size, cols.size)
    return dx.reshape(q.dx_shape)


def _steps(index: np.ndarray) -> slice:
    """An evenly spaced, increasing index array as the slice it equals (refused otherwise: the
    gather twin relies on it)."""
    step = int(index[1] - index[0]) if index.size > 1 else 1
    if step < 1 or not np.array_equal(index, np.arange(index[0], index[0] + step * index.size, step)):
        raise ValueError(f"indices {index[:4]}... are not evenly spaced")
    return slice(int(index[0]), int(index[-1]) + 1, step)


def _dy_on_all_windows(dy: Any, q: GradProblem) -> Any:
    """dy padded with zero rows / columns up to the geometry's window count (conv_transpose2d
    with output_padding >= stride has windows no input feeds); unchanged otherwise."""
    g = q.geometry
    if (q.H_dy, q.W_dy) == (g.H_out, g.W_out):
        return dy
    xp = array_module(dy)
    return xp.pad(dy, ((0, 0), (0, 0), (0, g.H_out - q.H_dy), (0, g.W_out - q.W_dy)))


def input_gemm_fold_numpy(dy: np.ndarray, w: np.ndarray, q: GradProblem) -> np.ndarray:
    """Twin of gemm_fold: cols = W_g^T @ dY_g per group (all of cols at once), then fold."""
    g, G = q.geometry, q.groups
    dy = _dy_on_all_windows(dy, q)
    wt = w.reshape(G, q.M // G, -1).transpose(0, 2, 1)  # (G, Cg*KK, Mg)
    cols = wt @ dy.reshape(q.N, G, q.M // G, g.L)  # (N, G, Cg*KK, L)
    return fold_numpy(cols.reshape(q.N, q.C * g.KH * g.KW, g.L), q.C, g)


def weight_gemm_numpy(dy: np.ndarray, x: np.ndarray, q: GradProblem) -> np.ndarray:
    """Twin of gemm: cols = unfold(x), then dW_g = sum over samples of dY_g @ cols_g^T."""
    g, G = q.geometry, q.groups
    cols = unfold_numpy(x, g).reshape(q.N, G, -1, g.L)  # (N, G, Cg*KK, L)
    dyg = dy.reshape(q.N, G, q.M // G, g.L)
    return (dyg @ cols.transpose(0, 1, 3, 2)).sum(axis=0, dtype=np.float32).reshape(q.w_shape)


def weight_direct_numpy(dy: np.ndarray, x: np.ndarray, q: GradProblem) -> np.ndarray:
    """Twin of grad_weight_v1: per tap (ki, kj), the strided slice of the padded input that tap read, times
    dy, summed over the samples and the output pixels (one matrix product per group)."""
    g, G = q.geometry, q.groups
    Mg, Cg = q.M // G, q.C // G
    padded = np.pad(x, ((0, 0), (0, 0), (g.pad_top, g.pad_bottom), (g.pad_left, g.pad_right)))
    padded = padded.reshape(q.N, G, Cg, *g.padded_hw)
    dyt = dy.reshape(q.N, G, Mg, g.L).transpose(1, 2, 0, 3).reshape(G, Mg, q.N * g.L)
    dw = np.empty((G, Mg, Cg, g.KH, g.KW), dtype=np.float32)
    for ki, kj, rows, columns in tap_slices(g):
        patch = padded[..., rows, columns]  # (N, G, Cg, Ho, Wo)
        patch = patch.reshape(q.N, G, Cg, g.L).transpose(1, 2, 0, 3).reshape(G, Cg, q.N * g.L)
        dw[..., ki, kj] = dyt @ patch.transpose(0, 2, 1)
    return dw.reshape(q.w_shape)


def weight_pairs_numpy(
    dy: np.ndarray, x: np.ndarray, q: GradProblem, algorithm: str = "direct_pairs"
) -> np.ndarray:
    """Twin of grad_weight_v3 (v4, v5: the algorithm's slices): per tap, dy * (the slice of the
    padded input it read) summed over the output columns, then over each slice of the N*H_out
    output rows (the blocks' partial sums), then the slices added in order, as the host does."""
    g, G = q.geometry, q.groups
    Mg, Cg = q.M // G, q.C // G
    slices, per_slice = slices_of(q, algorithm)
    padded = np.pad(x, ((0, 0), (0, 0), (g.pad_top, g.pad_bottom), (g.pad_left, g.pad_right)))
    padded = padded.reshape(q.N, G, Cg, *g.padded_hw)
    dyg = dy.reshape(q.N, G, Mg, g.H_out, g.W_out)
    partial = np.empty((slices, G, Mg, Cg, g.KH, g.KW), dtype=np.float32)
    starts = np.arange(0, q.N * g.H_out, per_slice)
    for ki, kj, rows, columns in tap_slices(g):
        per_row = np.einsum("ngmhw,ngchw->gmcnh", dyg, padded[..., rows, columns])  # sums over ow
        per_row = per_row.reshape(G, Mg, Cg, q.N * g.H_out)
        partial[..., ki, kj] = np.moveaxis(np.add.reduceat(per_row, starts, axis=-1), -1, 0)
    return partial.sum(axis=0, dtype=np.float32).reshape(q.w_shape)


def weight_pairs(dy: Any, x: Any, q: GradProblem, algorithm: str = "direct_pairs") -> Any:
    """grad_weight_v3, v4 or v5 on the GPU: its partial sums, then the slices added in order
    (add_slices: one planned launch, where a CuPy sum costs the host 3x as much)."""
    slices = slices_of(q, algorithm)[0]
    part = _call(q, algorithm, (slices, *q.w_shape))(dy, x)
    return part[0] if slices == 1 else _call(q, f"add_slices {algorithm}", q.w_shape)(part)


def add_slices_launch(q: GradProblem, slices: int) -> Launch:
    """add_slices: dw = the sum of a pair version's `slices` partial sums, one thread row per
    (filter, channel) row of dw."""
    taps = q.geometry.KH * q.geometry.KW
    args = ints(slices=slices, taps=taps)
    return row_launch(
        SLICES_KERNEL, SOURCE, ("partial", "dw"), q.w_shape, taps, args, index="(m, c, ki, kj) of dw"
    )


# ---- batch_gemm: the batch side by side in one wide image (one composition for both backends) --------
@dataclass(frozen=True)
class SideBySide:
    """batch_gemm's layout for `samples` samples: each padded sample row is a block of `block`
    columns (padded width rounded up to a multiple of stride_w) of one wide image, the top and
    bottom padding stay the unfold's. Window j of a wide output row reads block j // (block /
    stride_w) at the sample's own output column j % (block / stride_w); the columns past W_out
    read into the next block and meet zeros in the wide dY, so ONE unfold and ONE GEMM cover the
    batch, with the pixels of all samples as the GEMM's inner side."""

    samples: int
    block: int
    wide: WindowGeometry

    @property
    def outputs_per_block(self) -> int:
        return self.block // self.wide.stride_w


def side_by_side(g: WindowGeometry, samples: int) -> SideBySide:
    """The wide image of `samples` samples; `extra` zero columns after the last block (the
    unfold's right padding) let its last windows start at every block column, so the wide
    output row has exactly samples * block / stride_w windows."""
    block = ceil_div(g.W + g.pad_left + g.pad_right, g.stride_w) * g.stride_w
    extra = max(0, g.dil_w * (g.KW - 1) + 1 - g.stride_w)
    wide = dataclasses.replace(g, W=samples * block, pad_left=0, pad_right=extra)
    return SideBySide(samples, block, wide)


def side_by_side_bytes(q: GradProblem) -> int:
    """Bytes batch_gemm allocates per sample: the wide input, its cols and the wide dY."""
    g = q.geometry
    layout = side_by_side(g, 1)
    columns = g.H_out * layout.outputs_per_block
    unfolded = 0 if is_pointwise(g) else q.C * g.KH * g.KW * columns
    return 4 * (q.C * g.H * layout.block + unfolded + q.M * columns)


def side_by_side_chunk(q: GradProblem, budget_bytes: int | None = None) -> int:
    """Samples per wide image: within the memory budget (gpuops.cublas.samples_per_chunk) and
    cuBLAS's 32-bit sides (the GEMM's inner side is the chunk's wide pixels)."""
    layout = side_by_side(q.geometry, 1)
    columns = q.geometry.H_out * layout.outputs_per_block
    instead = "use weight_algorithm='direct'"
    check_gemm_sides({"wide output pixels": columns}, instead)
    chunk = samples_per_chunk(
        q.N, side_by_side_bytes(q), "batch_gemm (its wide image)", instead, budget_bytes
    )
    return max(1, min(chunk, INT32_MAX // columns))


def weight_batch_gemm(dy: Any, x: Any, q: GradProblem, budget_bytes: int | None = None) -> Any:
    """batch_gemm on dy's backend, per chunk of samples (NumPy: the whole batch at once): x and
    dY copied side by side into wide images (zeros between the samples), one unfold of the wide
    x (NumPy: its twin; a 1x1 stride-1 layer needs none), then ONE GEMM per group, batched over
    the groups: dW_g = dY_g [Mg, wide pixels] @ cols_g^T. Chunks are added."""
    g, G, xp = q.geometry, q.groups, array_module(dy)
    Mg, CgKK = q.M // G, (q.C // G) * g.KH * g.KW
    chunk = q.N if xp is np else side_by_side_chunk(q, budget_bytes)
    dw = None
    for n0 in range(0, q.N, chunk):
        nb = min(chunk, q.N - n0)
        layout = side_by_side(g, nb)
        x_wide = xp.zeros((q.C, g.H, nb, layout.block), dtype=np.float32)
        x_wide[..., g.pad_left : g.pad_left + g.W] = x[n0 : n0 + nb].transpose(1, 2, 0, 3)
        dy_wide = xp.zeros((q.M, g.H_out, nb, layout.outputs_per_block), dtype=np.float32)
        dy_wide[..., : g.W_out] = dy[n0 : n0 + nb].transpose(1, 2, 0, 3)
        pixels = layout.wide.L
        image = x_wide.reshape(1, q.C, g.H, nb * layout.block)
        if is_pointwise(g):
            cols = image  # a 1x1 window at stride 1 reads each cell once: the image IS cols
        elif xp is np:
            cols = unfold_numpy(image, layout.wide)
        else:
            cols = unfold_into(image, layout.wide, xp.empty((1, q.C * g.KH * g.KW, pixels), dtype=np.float32))
        a, b = dy_wide.reshape(G, Mg, pixels), cols.reshape(G, CgKK, pixels)
        if xp is np:
            part = a @ b.transpose(0, 2, 1)
        else:
            part = xp.empty((G, Mg, CgKK), dtype=np.float32)
            gemm_strided(a, b, part, trans_b=True)
        dw = part if dw is None else dw + part
    return dw.reshape(q.w_shape)


# ---- flipped_conv: grad_input as a forward convolution (one composition for both backends) -----------
def flipped_shape(q: GradProblem) -> tuple[int, int, int, int]:
    """The shape of flipped_filter's result: (groups*Cg, Mg, KH, KW)."""
    g = q.geometry
    return q.C, q.M // q.groups, g.KH, g.KW


def flip_filter_launch(q: GradProblem) -> Launch:
    """flip_filter (kernels/conv_backward.cu): flipped_filter(w, groups) on the GPU in one planned
    launch, one thread row per row (g*Cg + c, o) of the result, a thread per tap."""
    g = q.geometry
    taps = g.KH * g.KW
    args = ints(Mg=q.M // q.groups, Cg=q.C // q.groups, taps=taps)
    shape = flipped_shape(q)
    return row_launch(
        FLIP_KERNEL, SOURCE, ("w", "flipped"), shape, taps, args, index="(g*Cg + c, o, a, b) of flipped"
    )


def flipped_filter(w: Any, groups: int) -> Any:
    """The filter of grad_input's convolution: W'[g*Cg + c, o, a, b] = w[g*Mg + o, c, KH-1-a, KW-1-b].
    Each input channel c becomes a filter over its group's Mg output gradients (in and out swap
    within each group), and the taps are flipped: gather meets tap ki walking dY backwards."""
    M, Cg, KH, KW = w.shape
    Mg = M // groups
    flipped = w.reshape(groups, Mg, Cg, KH, KW)[..., ::-1, ::-1].transpose(0, 2, 1, 3, 4)
    return array_module(w).ascontiguousarray(flipped).reshape(groups * Cg, Mg, KH, KW)


@dataclass(frozen=True)
class Phase:
    """Along one axis, the dx cells first, first + stride, ... (count of them) and how a stride-1
    convolution of dY computes them: the taps that reach them (taps, None: no tap does, the
    cells stay zero), met dilation apart in dY, after cutting / zero-padding dY's ends."""

    first: int
    count: int
    taps: slice | None
    dilation: int = 1
    cut: tuple[int, int] = (0, 0)
    pad: tuple[int, int] = (0, 0)


def phases(n_dy: int, size: int, k: int, stride: int, dilation: int, pad: int) -> list[Phase]:
    """grad_input along one axis as `stride` stride-1 convolutions (phase decomposition).

    The forward put tap ki of output oh on i = oh*stride - pad + ki*dilation, so cell
    i = j*stride + r takes dY[j + (r + pad - ki*dilation) / stride] through tap ki wherever that
    division is exact: the taps of phase r are every (stride / gcd)-th, and consecutive ones meet
    dY dilation / gcd apart (gcd of stride and dilation). Flipped, that is a correlation of dY
    with those taps, dY cut or padded so that it gives the phase's `count` cells. Stride 1: one
    phase, all taps, padding dilation*(k-1) - pad (negative: cells no window reads are cut)."""
    common = math.gcd(stride, dilation)
    step, reach = stride // common, dilation // common
    out = []
    for r in range(min(stride, size)):
        count = ceil_div(size - r, stride)
        taps = [ki for ki in range(k) if (r + pad - ki * dilation) % stride == 0]
        if not taps:
            out.append(Phase(r, count, None))
            continue
        before = (taps[-1] * dilation - r - pad) // stride  # zeros before dY (negative: cells to cut)
        after = count + reach * (len(taps) - 1) - n_dy - before
        cut, padding = (max(0, -before), max(0, -after)), (max(0, before), max(0, after))
        if n_dy - sum(cut) < 1:  # no cell of dY reaches this phase
            out.append(Phase(r, count, None))
            continue
        out.append(Phase(r, count, slice(taps[0], taps[-1] + 1, step), reach, cut, padding))
    return out


_phase_plans = Memo("conv_backward_phase_plans", 256)


def phase_plan(q: GradProblem) -> tuple[list[Phase], list[Phase]]:
    """flipped_conv's phases along the rows and the columns of dx, worked out once per problem
    and found again by the problem's hash (this machine: 14 us to work out, 6 us for a key made
    by repr as `memoised` makes it, 1 us by hash)."""
    g = q.geometry
    return _phase_plans.get_or_make(
        q,
        lambda: (
            phases(q.H_dy, g.H, g.KH, g.stride_h, g.dil_h, g.pad_top),
            phases(q.W_dy, g.W, g.KW, g.stride_w, g.dil_w, g.pad_left),
        ),
    )


def input_flipped_conv(dy: Any, w: Any, q: GradProblem, *, forward: str = FLIPPED_FORWARD) -> Any:
    """flipped_conv on dy's backend: for each phase pair (stride_h x stride_w of them; one for
    stride 1), conv2d of dY, cut or zero-padded (asymmetric pads through an explicit pad), with
    the phase's flipped taps, stride 1, the phase's dilation and the forward's groups; a strided
    phase lands on every stride-th cell of dx. The same work as the forward pass in all; on
    NumPy conv2d runs its tap-by-tap twin: the same composition."""
    from gpuops.conv2d import conv2d

    g, xp = q.geometry, array_module(dy)
    rows, cols = phase_plan(q)
    single = len(rows) == len(cols) == 1 and None not in (rows[0].taps, cols[0].taps)  # its output is dx
    dx = None if single else xp.zeros(q.dx_shape, np.float32)
    every_tap = slice(0, g.KH, 1), slice(0, g.KW, 1)
    for row, col in itertools.product(rows, cols):
        if row.taps is None or col.taps is None:
            continue  # no tap reaches these cells: they stay zero
        part = dy
        if row.cut != (0, 0) or col.cut != (0, 0):
            part = dy[..., row.cut[0] : q.H_dy - row.cut[1], col.cut[0] : q.W_dy - col.cut[1]]
        (top, bottom), (left, right) = row.pad, col.pad
        padding: Any = (top, left)
        if (top, left) != (bottom, right):
            part, padding = xp.pad(part, ((0, 0), (0, 0), (top, bottom), (left, right))), 0
        if (row.taps, col.taps) == every_tap and xp is not np and w.flags.c_contiguous:
            taps = _call(q, "flip", flipped_shape(q))(w)  # one planned launch (flip_filter)
        else:
            taps = flipped_filter(
                w[..., row.taps, col.taps], q.groups
            )  # one copy: flipped, in and out swapped
        dilation = (row.dilation, col.dilation)
        phase = conv2d(part, taps, None, 1, padding, dilation, q.groups, algorithm=forward)
        if dx is None:
            return phase  # stride 1: the convolution's output IS dx
        dx[..., row.first :: g.stride_h, col.first :: g.stride_w] = phase
    return dx


@dataclass(frozen=True)
class FlippedConvCall:
    """flipped_conv's repeat where one phase covers dx (every tap, no cut rows, symmetric
    padding: stride-1 layers): the flip's planned launch and the forward convolution's planned
    call, held once. A call is then the two launches; input_flipped_conv also works out or
    looks up the phases, the flip's Call and conv2d's ready call every time, and on image512's
    dx (H100, ~0.055 ms of GPU work) that host path was about as long as the GPU's."""

    flip: Any  # w -> the flipped filters (flip_filter's Call)
    forward: Any  # (dy, taps, None) -> dx (gpuops.conv2d.conv2d_call)

    def __call__(self, dy: Any, w: Any) -> Any:
        return self.forward(dy, self.flip(w), None)


def flipped_conv_call(dy: Any, w: Any, q: GradProblem) -> FlippedConvCall | None:
    """FlippedConvCall for this problem on CuPy arrays dy (N, M, H_dy, W_dy) and a C-contiguous w,
    where one phase covers dx; None elsewhere (input_flipped_conv runs those)."""
    from gpuops.conv2d import conv2d_call

    g = q.geometry
    rows, cols = phase_plan(q)
    if len(rows) != 1 or len(cols) != 1 or array_module(dy) is np or not w.flags.c_contiguous:
        return None
    row, col = rows[0], cols[0]
    every_tap = (row.taps, col.taps) == (slice(0, g.KH, 1), slice(0, g.KW, 1))
    whole = row.cut == col.cut == (0, 0) and row.pad[0] == row.pad[1] and col.pad[0] == col.pad[1]
    if not (every_tap and whole):
        return None
    flip = _call(q, "flip", flipped_shape(q))
    padding, dilation = (row.pad[0], col.pad[0]), (row.dilation, col.dilation)
    forward = conv2d_call(dy, flip(w), 1, padding, dilation, q.groups, algorithm=FLIPPED_FORWARD)
    return None if forward is None else FlippedConvCall(flip, forward)


def input_grad_call(dy: Any, w: Any, q: GradProblem, algorithm: str) -> Any:
    """What the ready call of grad_input (conv2d_grad_input, conv_transpose2d) runs for
    (dy (N, M, H_dy, W_dy), w): flipped_conv planned once where flipped_conv_call holds it,
    else input_grad with `algorithm` (already resolved)."""
    if algorithm == "flipped_conv" and not q.empty:
        held = flipped_conv_call(dy, w, q)
        if held is not None:
            return held
    return lambda dy, w: input_grad(dy, w, q, algorithm)


# ---- forward_conv: grad_weight as a forward convolution (one composition for both backends) ----------
def weight_forward_conv(dy: Any, x: Any, q: GradProblem, *, forward: str = FLIPPED_FORWARD) -> Any:
    """forward_conv on dy's backend. The forward pass put
        dW[m, c, ki, kj] = sum over n, oh, ow of dy[n, m, oh, ow] * x[n, c, oh*S + ki*D - P, ow*S + kj*D - P]
    which, read with c as the batch, n as the channel and (oh, ow) as the taps, is conv2d of
    x^T (C, N, H, W) with dY^T (M, N, H_out, W_out) at stride D and dilation S, output
    (C, M, ., .) of at least KH x KW cells (more where the stride leaves input rows unread:
    cut). One convolution per group (its channels and filters), with the forward's padding
    (asymmetric "same" padding applied to x first)."""
    from gpuops.conv2d import conv2d

    g, xp, G = q.geometry, array_module(dy), q.groups
    Cg, Mg = q.C // G, q.M // G
    padding: Any = (g.pad_top, g.pad_left)
    if padding != (g.pad_bottom, g.pad_right):  # "same" with an even kernel: pad first
        x, padding = xp.pad(x, ((0, 0), (0, 0), (g.pad_top, g.pad_bottom), (g.pad_left, g.pad_right))), 0
    xt = xp.ascontiguousarray(x.transpose(1, 0, 2, 3))  # (C, N, H, W)
    dyt = xp.ascontiguousarray(dy.reshape(q.N, q.M, g.H_out, g.W_out).transpose(1, 0, 2, 3))
    dw = xp.empty(q.w_shape, dtype=np.float32)
    for group in range(G):
        part = conv2d(
            xt[group * Cg : (group + 1) * Cg],
            dyt[group * Mg : (group + 1) * Mg],
            None,
            (g.dil_h, g.dil_w),  # stride: consecutive taps ki are D input rows apart
            padding,
            (g.stride_h, g.stride_w),  # dilation: consecutive outputs oh are S rows apart
            algorithm=forward,
        )
        dw[group * Mg : (group + 1) * Mg] = part[:, :, : g.KH, : g.KW].transpose(1, 0, 2, 3)
    return dw


INPUT_TWINS = {
    "scatter": input_scatter_numpy,
    "gather": input_gather_numpy,
    "gemm_fold": input_gemm_fold_numpy,
    "flipped_conv": input_flipped_conv,
}
WEIGHT_TWINS = {
    "gemm": weight_gemm_numpy,
    "batch_gemm": lambda dy, x, q: weight_batch_gemm(dy, x, q),
    "direct": weight_direct_numpy,
    "direct_pairs": weight_pairs_numpy,
    "direct_pairs_shared": weight_pairs_numpy,  # the same slices' sums (their order within a slice aside)
    "direct_columns": lambda dy, x, q: weight_pairs_numpy(dy, x, q, "direct_columns"),
    "forward_conv": weight_forward_conv,
    hopper.ALGORITHM: hopper.weight_grad_numpy,  # its copies and rows, fp32-accurate as 3xTF32 is
}


# ---- the GPU paths -----------------------------------------------------------------------------------
_calls = Memo("conv_backward_calls", 1024)


def _call(q: GradProblem, which: str, out_shape: tuple[int, ...]) -> Call:
    """The Call of one of our kernels for this problem (remembered per device)."""
    import cupy

    def make() -> Call:
        if which == "flip":
            return Call(out_shape, flip_filter_launch(q))
        if which.startswith("add_slices "):
            return Call(out_shape, add_slices_launch(q, slices_of(q, which.split()[1])[0]))
        launch = {
            "scatter": input_scatter_launch,
            "gather": input_gather_launch,
            "direct": weight_reduce_launch,
            "direct_pairs": weight_pairs_launch,
            "direct_pairs_shared": weight_pairs_shared_launch,
            "direct_columns": weight_columns_launch,
        }[which](q)
        return Call(out_shape, launch, zeroed=which == "scatter")

    return _calls.get_or_make((cupy.cuda.runtime.getDevice(), q, which), make)


def batch_chunk(q: GradProblem, budget_bytes: int | None = None) -> int:
    """Samples per step so that cols stays within the budget (gpuops.cublas.samples_per_chunk);
    ValueError when one sample alone does not fit or a GEMM side is over cuBLAS's limit."""
    g = q.geometry
    instead = "use the scatter / gather / direct kernels"
    check_gemm_sides(
        {"output pixels": g.L, "rows of cols per group": (q.C // q.groups) * g.KH * g.KW}, instead
    )
    if is_pointwise(g):
        return max(1, q.N)  # nothing is unfolded
    return samples_per_chunk(
        q.N, q.cols_bytes_per_sample, "the GEMM path (its unfolded columns)", instead, budget_bytes
    )


def _input_gemm_fold_gpu(dy: Any, w: Any, q: GradProblem, budget_bytes: int | None = None) -> Any:
    """cols = W_g^T @ dY_g (one strided-batched GEMM per group over a chunk of samples), then
    fold (its gather kernel) into dx."""
    import cupy

    g, G = q.geometry, q.groups
    Mg, CgKK = q.M // G, (q.C // G) * g.KH * g.KW
    dy3 = _dy_on_all_windows(dy, q).reshape(q.N, q.M, g.L)
    wt = w.reshape(G, Mg, CgKK)
    if is_pointwise(g):  # cols IS dx: the GEMMs write it, nothing to fold
        dx = cupy.empty(q.dx_shape, dtype=np.float32)
        dx3 = dx.reshape(q.N, q.C, g.L)
        for group in range(G):
            gemm_strided(
                wt[group],
                dy3[:, group * Mg : (group + 1) * Mg],
                dx3[:, group * CgKK : (group + 1) * CgKK],
                trans_a=True,
            )
        return dx
    chunk = batch_chunk(q, budget_bytes)
    cols = cupy.empty((chunk, q.C * g.KH * g.KW, g.L), dtype=np.float32)
    dx = None
    for n0 in range(0, q.N, chunk):
        nb = min(chunk, q.N - n0)
        for group in range(G):
            gemm_strided(
                wt[group],
                dy3[n0 : n0 + nb, group * Mg : (group + 1) * Mg],
                cols[:nb, group * CgKK : (group + 1) * CgKK],
                trans_a=True,
            )
        if (g.pad_top, g.pad_left) == (g.pad_bottom, g.pad_right):
            part = fold(
                cols[:nb],
                (g.H, g.W),
                (g.KH, g.KW),
                (g.dil_h, g.dil_w),
                (g.pad_top, g.pad_left),
                (g.stride_h, g.stride_w),
                variant=FOLD_VARIANT,
            )
        else:  # padding="same" with one more cell after: F.fold takes symmetric pads, the kernel any
            part = Call((nb, q.C, g.H, g.W), fold_launch(g, nb, q.C, FOLD_VARIANT))(cols[:nb])
        if nb == q.N:
            return part
        if dx is None:
            dx = cupy.empty(q.dx_shape, dtype=np.float32)
        dx[n0 : n0 + nb] = part
    return dx


@dataclass(frozen=True)
class WeightGemm:
    """grad_weight's gemm for a chunk of `samples` samples, planned once: unfold x's chunk into
    cols (nothing on a 1x1 layer: x's planes are the columns), one strided-batched GEMM per group
    gives each sample's dY_g @ cols_g^T, and one more GEMM sums the samples (a row of ones times
    them: a fixed order). Calling it costs the allocations and cuBLAS's own host time. On a
    32 x 256 x 28 x 28 1x1 layer (H100, two processes each) the path worked out every call took
    0.095-0.164 ms of host time a call against the GPU's 0.082, so its time was the host's
    (0.091-0.161 ms queued); planned, 0.040-0.058 of host and 0.082-0.083 queued."""

    unfold: Call | None  # x chunk -> cols (samples, C*KH*KW, L)
    product: StridedGemm  # one group's per-sample products (every group's are alike)
    at: tuple[tuple[int, int, int], ...]  # per group: byte offsets into dy, cols, the products
    products_shape: tuple[int, int, int]  # (samples, M, C/groups*KH*KW)
    total: StridedGemm  # ones (1 x samples) @ products (samples x M*CgKK)
    ones: Any
    w_shape: tuple[int, int, int, int]

    @classmethod
    def plan(cls, q: GradProblem, samples: int) -> WeightGemm:
        g = q.geometry
        rows = q.C * g.KH * g.KW
        unfold = None if is_pointwise(g) else Call((samples, rows, g.L), unfold_launch(g, samples, q.C))
        product, at, total = weight_gemm_layout(q, samples)
        products_shape = (samples, q.M, rows // q.groups)
        return cls(unfold, product, at, products_shape, total, _ones(samples), q.w_shape)

    def __call__(self, dy: Any, x: Any) -> Any:
        """dW of one chunk from C-contiguous dy (samples, M, H_out, W_out) and x (samples, C, H, W)."""
        import cupy

        if not (dy.flags.c_contiguous and x.flags.c_contiguous):  # the plan's offsets assume it
            raise ValueError("grad_weight's gemm takes C-contiguous dy and x")
        cols = x if self.unfold is None else self.unfold(x)
        products = cupy.empty(self.products_shape, dtype=np.float32)
        dy_ptr, cols_ptr, out_ptr = dy.data.ptr, cols.data.ptr, products.data.ptr
        for dy_at, cols_at, out_at in self.at:
            self.product(dy_ptr + dy_at, cols_ptr + cols_at, out_ptr + out_at)
        dw = cupy.empty(self.w_shape, dtype=np.float32)
        self.total(self.ones.data.ptr, out_ptr, dw.data.ptr)
        return dw


def weight_gemm_layout(
    q: GradProblem, samples: int
) -> tuple[StridedGemm, tuple[tuple[int, int, int], ...], StridedGemm]:
    """WeightGemm's two GEMMs and its groups' byte offsets (into dy, cols and the products) for a
    chunk of `samples` samples: dy is (samples, M, L), cols (samples, C*KH*KW, L), the products
    (samples, M, CgKK) and dW (M, CgKK); group k reads rows k*Mg.. of dy and k*CgKK.. of cols."""
    g, G = q.geometry, q.groups
    Mg, CgKK, rows = q.M // G, (q.C // G) * g.KH * g.KW, q.C * g.KH * g.KW
    dy_g = Matrices(Mg, g.L, g.L, q.M * g.L)
    cols_g = Matrices(CgKK, g.L, g.L, rows * g.L)
    out_g = Matrices(Mg, CgKK, CgKK, q.M * CgKK)
    product = StridedGemm.plan(dy_g, cols_g, out_g, samples, trans_b=True)
    at = tuple((4 * k * Mg * g.L, 4 * k * CgKK * g.L, 4 * k * Mg * CgKK) for k in range(G))
    size = q.M * CgKK
    ones, products = Matrices(1, samples, samples, 0), Matrices(samples, size, size, 0)
    total = StridedGemm.plan(ones, products, Matrices(1, size, size, 0), 1)
    return product, at, total


def weight_gemm_plan(q: GradProblem, samples: int) -> WeightGemm:
    """WeightGemm for chunks of `samples` samples of this problem (remembered per device)."""
    import cupy

    key = (cupy.cuda.runtime.getDevice(), q, f"weight_gemm {samples}")
    return _calls.get_or_make(key, lambda: WeightGemm.plan(q, samples))


def _weight_gemm_gpu(dy: Any, x: Any, q: GradProblem, budget_bytes: int | None = None) -> Any:
    """gemm over chunks of samples whose unfolded columns fit the budget (WeightGemm each), the
    chunks' sums added."""
    chunk = batch_chunk(q, budget_bytes)
    dw = None
    for n0 in range(0, q.N, chunk):
        nb = min(chunk, q.N - n0)
        part = weight_gemm_plan(q, nb)(dy[n0 : n0 + nb], x[n0 : n0 + nb])
        dw = part if dw is None else dw + part
    return dw


def holds_whole_batch(q: GradProblem) -> bool:
    """Whether gemm takes the whole batch in one chunk whatever memory is free: a 1x1 layer (no
    cols), or cols within the budget the GEMM paths always have (gpuops.cublas.MIN_BUDGET)."""
    g = q.geometry
    return is_pointwise(g) or q.N * q.cols_bytes_per_sample <= MIN_BUDGET


def weight_grad_call(dy: Any, x: Any, q: GradProblem, algorithm: str) -> Any:
    """What the ready call of grad_weight (conv2d_grad_weight) runs for (dy, x): gemm planned
    once (WeightGemm) where one chunk holds the batch, else weight_grad with `algorithm`
    (already resolved)."""
    if algorithm == "gemm" and not q.empty and array_module(dy) is not np and holds_whole_batch(q):
        batch_chunk(q)  # its checks (cuBLAS's 32-bit sides) before a plan skips them
        return weight_gemm_plan(q, q.N)
    return lambda dy, x: weight_grad(dy, x, q, algorithm)


@memoised("gemm_ones_rows", 64)
def _ones_on(device: int, n: int) -> Any:
    import cupy

    return cupy.ones((1, n), dtype=np.float32)


def _ones(n: int) -> Any:
    """A (1, n) row of ones on the current device (the left factor of a sum by GEMM), kept."""
    import cupy

    return _ones_on(cupy.cuda.runtime.getDevice(), n)


def _input_grad_gpu(dy: Any, w: Any, q: GradProblem, algorithm: str) -> Any:
    if algorithm == "gemm_fold":
        return _input_gemm_fold_gpu(dy, w, q)
    if algorithm == "flipped_conv":
        return input_flipped_conv(dy, w, q)
    return _call(q, algorithm, q.dx_shape)(dy, w)


def _weight_grad_gpu(dy: Any, x: Any, q: GradProblem, algorithm: str) -> Any:
    if algorithm == "gemm":
        return _weight_gemm_gpu(dy, x, q)
    if algorithm == "batch_gemm":
        return weight_batch_gemm(dy, x, q)
    if algorithm == "forward_conv":
        return weight_forward_conv(dy, x, q)
    if algorithm in HOPPER_WEIGHT_ALGORITHMS:
        return hopper.weight_grad(dy, x, q)
    if algorithm in PAIR_ALGORITHMS:
        return weight_pairs(dy, x, q, algorithm)
    return _call(q, "direct", q.w_shape)(dy, x)


# ---- run ------------------------------------------------------------------------------------------------
def _fastest(which: str, q: GradProblem, run: Any, algorithms: tuple[str, ...], fallback: str) -> str:
    """The fastest of `algorithms` for this problem on the current GPU, measured once (CUDA events,
    gpuops.autotune) and remembered."""
    import cupy

    candidates = {a: functools.partial(run, a) for a in algorithms}
    return autotune.fastest((which, cupy.cuda.runtime.getDevice(), q), candidates) or fallback


def resolve_input_algorithm(dy: Any, w: Any, q: GradProblem) -> str:
    """The grad_input algorithm "auto" runs: on the GPU the fastest, measured once per problem;
    on the CPU scatter (strided slices per tap)."""
    if array_module(dy) is np:
        return "scatter"
    return _fastest(
        "conv_backward_input", q, lambda a: _input_grad_gpu(dy, w, q, a), GRAD_INPUT_ALGORITHMS, "gather"
    )


def resolve_weight_algorithm(dy: Any, x: Any, q: GradProblem) -> str:
    """The grad_weight algorithm "auto" runs: measured once per problem on the GPU; direct on the CPU.
    direct (v1) is not measured: direct_pairs (v3) makes the same sums in one pass over the data,
    not KH*KW; and v3 / v4 / v5 only where filters see one channel (depthwise): a pair's block
    reads whole planes, 11-500x slower than the GEMMs on dense layers (H100: 5x5 class 8.0 ms
    against 0.20, 7x7x1024 121 ms against 0.40)."""
    if array_module(dy) is np:
        return "direct"
    skip = {"direct"} | (set(PAIR_ALGORITHMS) if q.C // q.groups > 1 else set())
    candidates = tuple(a for a in GRAD_WEIGHT_ALGORITHMS if a not in skip)
    if hopper.refusal(q) is None and sm90a.available(hopper.SOURCE):
        candidates += HOPPER_WEIGHT_ALGORITHMS
    if q.N % FORWARD_CONV_BATCH:  # a convolution of N channels: v13 needs 32k, the rest lose to the GEMMs
        candidates = tuple(a for a in candidates if a != "forward_conv")
    return _fastest("conv_backward_weight", q, lambda a: _weight_grad_gpu(dy, x, q, a), candidates, "direct")


def _gradient(which: str, dy: Any, other: Any, q: GradProblem, algorithm: str) -> Any:
    """grad_input (other = w) or grad_weight (other = x): the chosen (or measured) algorithm on
    the arrays' backend, the NumPy twin on the CPU."""
    xp = array_module(dy)
    if q.empty:
        return xp.zeros(q.dx_shape if which == "input" else q.w_shape, dtype=np.float32)
    resolve, twins, gpu = {
        "input": (resolve_input_algorithm, INPUT_TWINS, _input_grad_gpu),
        "weight": (resolve_weight_algorithm, WEIGHT_TWINS, _weight_grad_gpu),
    }[which]
    chosen = resolve(dy, other, q) if algorithm == AUTO else algorithm
    return twins[chosen](dy, other, q) if xp is np else gpu(dy, other, q, chosen)


def input_grad(dy: Any, w: Any, q: GradProblem, algorithm: str = AUTO) -> Any:
    """dx (N, C, H, W) of the problem from dy (N, M, H_dy, W_dy): checked float32 arrays of one backend."""
    return _gradient("input", dy, w, q, algorithm)


def weight_grad(dy: Any, x: Any, q: GradProblem, algorithm: str = AUTO) -> Any:
    """dw (M, C/groups, KH, KW) from dy and the (padded, in reflect mode) input x."""
    return _gradient("weight", dy, x, q, algorithm)


def conv_transpose2d(
    x: Any,
    weight: Any,
    bias: Any = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: int = 1,
    dilation: Any = 1,
    *,
    algorithm: str = AUTO,
) -> Any:
    """F.conv_transpose2d: x (N, C_in, H, W) or (C_in, H, W), weight (C_in, C_out/groups, kh, kw).

    Every input cell stamps its channel's filters, scaled by its value, onto the output, stride
    cells apart: the adjoint of conv2d, i.e. conv2d's grad_input with x in the role of grad_output.
    algorithm: "scatter", "gather", "gemm_fold" or "auto" (see the module docstring). A repeat
    GPU call with the same shapes and arguments skips the checks, the plan and auto's lookup (the
    ready-call cache of gpuops.launch, as conv2d_grad_input's).
    """
    settings = (stride, padding, output_padding, groups, dilation, algorithm)
    key = ready_key("conv_transpose2d", (x, weight, bias), settings)
    ready = ready_call(key)
    if ready is not None:
        return ready(x, weight, bias)
    xp, x = as_float32(x, "input")
    _, w = as_float32(weight, "weight", xp)
    b = None if bias is None else as_float32(bias, "bias", xp)[1]
    plan = plan_conv_transpose2d(
        x.shape,
        w.shape,
        None if b is None else b.shape,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
        algorithm,
    )
    q = plan.problem
    chosen = algorithm
    if algorithm == AUTO and not q.empty:
        chosen = resolve_input_algorithm(x if x.ndim == 4 else x[None], w, q)

    grad = input_grad_call(x if x.ndim == 4 else x[None], w, q, chosen)

    def run(x: Any, w: Any, b: Any) -> Any:
        batched = x.ndim == 4
        y = grad(x if batched else x[None], w)
        if b is not None:
            y += b.reshape(1, -1, 1, 1)
        return y if batched else y[0]

    y = run(x, w, b)
    keep_ready(key, run)  # a GPU call only (key None otherwise), and only once it has run
    return y


def _backward_arrays(grad_output: Any, x: Any, weight: Any) -> tuple[Any, Any, Any, Any]:
    xp, dy = as_float32(grad_output, "grad_output")
    _, x = as_float32(x, "input", xp)
    _, w = as_float32(weight, "weight", xp)
    return xp, dy, x, w


def conv2d_grad_input(
    grad_output: Any,
    input_shape: tuple[int, ...],
    weight: Any,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    padding_mode: str = "zeros",
    *,
    algorithm: str = AUTO,
) -> Any:
    """grad_input of F.conv2d alone (torch.nn.grad.conv2d_input): needs the input's shape only.
    A repeat GPU call with the same shapes and arguments skips the checks, the plan and auto's
    lookup (the ready-call cache of gpuops.launch, as conv2d's)."""
    settings = (tuple(input_shape), stride, padding, dilation, groups, padding_mode, algorithm)
    key = ready_key("conv2d_grad_input", (grad_output, weight), settings)
    ready = ready_call(key)
    if ready is not None:
        return ready(grad_output, weight)
    xp, dy = as_float32(grad_output, "grad_output")
    _, w = as_float32(weight, "weight", xp)
    plan = plan_conv2d_backward(
        dy.shape, tuple(input_shape), w.shape, stride, padding, dilation, groups, padding_mode, algorithm
    )
    q = plan.problem
    chosen = algorithm
    if algorithm == AUTO and not q.empty:
        chosen = resolve_input_algorithm(dy if len(input_shape) == 4 else dy[None], w, q)

    grad = input_grad_call(dy if len(input_shape) == 4 else dy[None], w, q, chosen)

    def run(dy: Any, w: Any) -> Any:
        batched = len(input_shape) == 4
        dx = grad(dy if batched else dy[None], w)
        if plan.pads is not None:  # dx is the padded input's gradient: fold the mirrored cells back
            # with the same kind of kernel: atomic scatter after scatter, else the deterministic gather
            dx = reflect_pad_backward(dx, plan.pads, algorithm="scatter" if chosen == "scatter" else "gather")
        return dx if batched else dx[0]

    dx = run(dy, w)
    keep_ready(key, run)  # a GPU call only (key None otherwise), and only once it has run
    return dx


def conv2d_grad_weight(
    grad_output: Any,
    x: Any,
    weight_shape: tuple[int, ...],
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    padding_mode: str = "zeros",
    *,
    algorithm: str = AUTO,
) -> Any:
    """grad_weight of F.conv2d alone (torch.nn.grad.conv2d_weight): needs the weight's shape only.
    A repeat GPU call with the same shapes and arguments skips the checks, the plan and auto's
    lookup (the ready-call cache of gpuops.launch, as conv2d's)."""
    settings = (tuple(weight_shape), stride, padding, dilation, groups, padding_mode, algorithm)
    key = ready_key("conv2d_grad_weight", (grad_output, x), settings)
    ready = ready_call(key)
    if ready is not None:
        return ready(grad_output, x)
    xp, dy = as_float32(grad_output, "grad_output")
    _, x = as_float32(x, "input", xp)
    plan = plan_conv2d_backward(
        dy.shape,
        x.shape,
        tuple(weight_shape),
        stride,
        padding,
        dilation,
        groups,
        padding_mode,
        weight_algorithm=algorithm,
    )
    q, batched = plan.problem, x.ndim == 4

    def run(dy: Any, x: Any, grad: Any) -> Any:
        x4, dy4 = (x, dy) if batched else (x[None], dy[None])
        if plan.pads is not None:  # the kernels read the padded input
            x4 = reflect_pad(x4, plan.pads)
        return grad(dy4, x4)

    if q.empty or xp is np:
        return run(dy, x, lambda dy, x: weight_grad(dy, x, q, algorithm))
    x4, dy4 = (x, dy) if batched else (x[None], dy[None])
    chosen = algorithm
    if algorithm == AUTO:  # measured on what the kernels read: the padded input in reflect mode
        chosen = resolve_weight_algorithm(dy4, x4 if plan.pads is None else reflect_pad(x4, plan.pads), q)
    grad = weight_grad_call(dy4, x4, q, chosen)
    dw = run(dy, x, grad)
    keep_ready(key, lambda dy, x: run(dy, x, grad))  # GPU calls only (key None otherwise)
    return dw


def conv2d_backward(
    grad_output: Any,
    x: Any,
    weight: Any,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    padding_mode: str = "zeros",
    *,
    algorithm: str = AUTO,
    weight_algorithm: str = AUTO,
) -> tuple[Any, Any, Any]:
    """(grad_input, grad_weight, grad_bias) of F.conv2d(x, weight, bias, ...) for the gradient
    grad_output of its output: what autograd computes. padding_mode "reflect" is the convolution
    of the reflect-padded input (nn.Conv2d(padding_mode="reflect")). padding takes conv2d's
    "valid" and "same" too (one more cell on the bottom / right when dilation*(k-1) is odd).

    algorithm picks grad_input's kernel ("scatter", "gather", "gemm_fold", "auto"),
    weight_algorithm grad_weight's ("gemm", "direct", "auto").
    """
    _, dy, x, w = _backward_arrays(grad_output, x, weight)
    plan_conv2d_backward(  # every check first, before any work
        dy.shape,
        x.shape,
        w.shape,
        stride,
        padding,
        dilation,
        groups,
        padding_mode,
        algorithm,
        weight_algorithm,
    )
    grad_input = conv2d_grad_input(
        dy, x.shape, w, stride, padding, dilation, groups, padding_mode, algorithm=algorithm
    )
    grad_weight = conv2d_grad_weight(
        dy, x, w.shape, stride, padding, dilation, groups, padding_mode, algorithm=weight_algorithm
    )
    dy4 = dy if dy.ndim == 4 else dy[None]
    grad_bias = dy4.sum(axis=(0, 2, 3), dtype=np.float32)
    return grad_input, grad_weight, grad_bias


def adjoint_identity(
    x: Any, y: Any, weight: Any, stride: Any = 1, padding: Any = 0, dilation: Any = 1, groups: int = 1
) -> tuple[float, float]:
    """(<conv2d(x), y>, <x, conv_transpose2d(y)>) in float64: equal up to rounding, because the
    transposed convolution is the adjoint of the convolution. y has conv2d(x)'s shape;
    output_padding is chosen so that conv_transpose2d(y) has x's shape."""
    from gpuops.conv2d import conv2d

    xp, x = as_float32(x, "input")
    _, y = as_float32(y, "y", xp)
    _, w = as_float32(weight, "weight", xp)
    p = check_conv2d(x.shape, w.shape, None, stride, padding, dilation, groups)
    g = p.geometry
    output_padding = tuple(
        (size + 2 * pad - d * (k - 1) - 1) % s
        for size, pad, d, k, s in (
            (g.H, g.pad_top, g.dil_h, g.KH, g.stride_h),
            (g.W, g.pad_left, g.dil_w, g.KW, g.stride_w),
        )
    )
    forward = conv2d(x, w, None, stride, padding, dilation, groups)
    back = conv_transpose2d(y, w, None, stride, padding, output_padding, groups, dilation)
    lhs = float((forward.astype(np.float64) * y.astype(np.float64)).sum())
    rhs = float((x.astype(np.float64) * back.astype(np.float64)).sum())
    return lhs, rhs
