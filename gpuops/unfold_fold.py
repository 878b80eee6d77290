"""unfold (im2col) and fold (col2im) with PyTorch F.unfold / F.fold semantics: check -> plan -> run.

Kernels: kernels/unfold_fold.cu (unfold_v1, fold_v1_scatter, fold_v2_gather). The NumPy twins
walk the same (ki, kj) taps, one strided copy per tap instead of one thread row per row.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuops import autotune
from gpuops.cache import Memo, memoised
from gpuops.checks import WindowGeometry, as_float32, as_pair, check_ndim, window_args, window_geometry
from gpuops.index_math import tap_slices
from gpuops.launch import Call, Launch, ints, keep_ready, l2_bytes, ready_call, ready_key, row_launch

SOURCE = "unfold_fold.cu"
FOLD_VARIANTS = ("auto", "gather", "scatter")


# ---- unfold --------------------------------------------------------------------------------------
_unfold_launches = Memo("unfold_launches", 1024)


def unfold_launch(g: WindowGeometry, N: int, C: int) -> Launch:
    """v1 unfold over (N, C*KH*KW, L): rows of W_out cells, 4 per store when W_out % 4 == 0.
    Remembered: im2col asks for it on every call."""
    return _unfold_launches.get_or_make((g, N, C), lambda: _build_unfold_launch(g, N, C))


def _build_unfold_launch(g: WindowGeometry, N: int, C: int) -> Launch:
    streaming = int(_plane_outgrows_l2(g.H * g.W * 4))
    cells = 4 if g.W_out % 4 == 0 else 1
    return _walk_cols("unfold_v1", ("x", "cols"), g, N, C, extra=ints(streaming=streaming), cells=cells)


def _walk_cols(
    kernel: str,
    arrays: tuple[str, ...],
    g: WindowGeometry,
    N: int,
    C: int,
    *,
    extra: tuple = (),
    cells: int = 1,
) -> Launch:
    """A row kernel over the rows of cols (N, C*KH*KW, L): rows of W_out cells."""
    shape = (N, C * g.KH * g.KW, g.L)
    args = window_args(g) + extra
    return row_launch(kernel, SOURCE, arrays, shape, g.W_out, args, cells=cells, index="(n, row, l) of cols")


def _plane_outgrows_l2(plane_bytes: int) -> bool:
    """Between two taps' reads of an input plane, unfold writes about a plane of output: when
    the two together exceed half of L2, the re-read misses unless the output streams past L2
    (measured on the H100: image2048_k7 unfold 1.08 -> 0.98 ms; resnet56 / stride2 unchanged).
    Without a GPU (the app drawing a plan) the answer is no."""
    from gpuops.backend import backend_info

    return backend_info().gpu and 2 * plane_bytes > l2_bytes() // 2


def unfold_numpy(x: np.ndarray, g: WindowGeometry) -> np.ndarray:
    """Twin of unfold_v1: (N, C, H, W) -> (N, C*KH*KW, L), one strided copy per tap (ki, kj)."""
    N, C = x.shape[:2]
    padded = np.pad(x, ((0, 0), (0, 0), (g.pad_top, g.pad_bottom), (g.pad_left, g.pad_right)))
    cols = np.empty((N, C, g.KH, g.KW, g.H_out, g.W_out), dtype=np.float32)
    for ki, kj, rows, columns in tap_slices(g):
        cols[:, :, ki, kj] = padded[:, :, rows, columns]
    return cols.reshape(N, C * g.KH * g.KW, g.L)


def unfold_into(x: Any, g: WindowGeometry, out: Any) -> Any:
    """Run unfold_v1 on (N, C, H, W) into `out` (N, C*KH*KW, L), a reused buffer (im2col)."""
    from gpuops.launch import run

    if out.size:
        run(unfold_launch(g, x.shape[0], x.shape[1]), x, out)
    return out


@dataclass(frozen=True)
class UnfoldPlan:
    """A checked unfold call: the windows, the output's shape (2-D for one sample) and v1's
    launch over the whole batch (None: nothing to compute)."""

    geometry: WindowGeometry
    out_shape: tuple[int, ...]
    launch: Launch | None

    @property
    def launches(self) -> tuple[Launch, ...]:
        return () if self.launch is None else (self.launch,)


@memoised("unfold_checks", 1024)
def check_unfold(
    x_shape: tuple[int, ...], kernel_size: Any, dilation: Any, padding: Any, stride: Any
) -> tuple[int, int, WindowGeometry]:
    """Check unfold's arguments; return (samples N, channels C, geometry)."""
    check_ndim(x_shape, (3, 4), "input", "(C, H, W) or (N, C, H, W)")
    N, C, H, W = x_shape if len(x_shape) == 4 else (1, *x_shape)
    return N, C, window_geometry(H, W, kernel_size, stride, padding, dilation)


@memoised("unfold_plans", 1024)
def plan_unfold(
    x_shape: tuple[int, ...], kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1
) -> UnfoldPlan:
    """check_unfold, then the output's shape and the launch."""
    N, C, g = check_unfold(tuple(x_shape), kernel_size, dilation, padding, stride)
    out_shape = (N, C * g.KH * g.KW, g.L)[0 if len(x_shape) == 4 else 1 :]
    empty = N * C == 0  # KH, KW and L are at least 1 once checked
    return UnfoldPlan(g, out_shape, None if empty else unfold_launch(g, N, C))


def unfold(x: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> Any:
    """F.unfold: (N,C,H,W) -> (N, C*kh*kw, L); (C,H,W) -> (C*kh*kw, L)."""
    key = ready_key("unfold", (x,), (kernel_size, dilation, padding, stride))
    ready = ready_call(key)
    if ready is not None:  # this shape and these arguments passed every check before
        return ready(x)
    xp, x = as_float32(x, "input")
    plan = plan_unfold(x.shape, kernel_size, dilation, padding, stride)
    if xp is np:
        cols = unfold_numpy(x if x.ndim == 4 else x[None], plan.geometry)
        return cols.reshape(plan.out_shape)
    call = Call(plan.out_shape, plan.launch)
    keep_ready(key, call)
    return call(x)


# ---- fold ----------------------------------------------------------------------------------------
@memoised("fold_checks", 1024)
def check_fold(
    cols_shape: tuple[int, ...], output_size: Any, kernel_size: Any, dilation: Any, padding: Any, stride: Any
) -> tuple[int, WindowGeometry]:
    """Check fold's arguments; return (channels C, geometry)."""
    check_ndim(cols_shape, (2, 3), "input", "(C*kh*kw, L) or (N, C*kh*kw, L)")
    H, W = as_pair(output_size, "output_size")
    g = window_geometry(H, W, kernel_size, stride, padding, dilation)
    rows, L = cols_shape[-2:]
    kk = g.KH * g.KW
    if rows % kk:
        raise ValueError(
            f"fold input has {rows} rows, which is not a multiple of kernel_size {g.KH}x{g.KW} = {kk}"
        )
    if L != g.L:
        raise ValueError(
            f"fold input has {L} columns (blocks), but output_size ({H}, {W}) with this kernel, "
            f"stride, padding and dilation gives {g.H_out} x {g.W_out} = {g.L} blocks"
        )
    return rows // kk, g


def fold_launch(g: WindowGeometry, N: int, C: int, variant: str) -> Launch:
    """v1 scatter walks the rows of cols (N, C*KH*KW, L); v2 gather the rows of y (N, C, H, W)."""
    if variant == "scatter":
        return _walk_cols("fold_v1_scatter", ("cols", "y"), g, N, C)
    shape = (N, C, g.H, g.W)
    return row_launch(
        "fold_v2_gather", SOURCE, ("cols", "y"), shape, g.W, window_args(g), index="(n, c, ih, iw) of y"
    )


def fold_numpy(cols: np.ndarray, C: int, g: WindowGeometry) -> np.ndarray:
    """Twin of the fold kernels: (N, C*KH*KW, L) -> (N, C, H, W), adding each tap's strided
    slice back onto the padded image, then cropping the padding."""
    N = cols.shape[0]
    blocks = cols.reshape(N, C, g.KH, g.KW, g.H_out, g.W_out)
    Hp, Wp = g.padded_hw
    out = np.zeros((N, C, Hp, Wp), dtype=np.float32)
    for ki, kj, rows, columns in tap_slices(g):
        out[:, :, rows, columns] += blocks[:, :, ki, kj]
    return np.ascontiguousarray(out[:, :, g.pad_top : g.pad_top + g.H, g.pad_left : g.pad_left + g.W])


@dataclass(frozen=True)
class FoldPlan:
    """A checked fold call: channels C, the windows, the output's shape (3-D for one sample), the
    variant and its launch (None: "auto", chosen per call, or nothing to compute)."""

    C: int
    geometry: WindowGeometry
    out_shape: tuple[int, ...]
    variant: str
    launch: Launch | None

    @property
    def launches(self) -> tuple[Launch, ...]:
        return () if self.launch is None else (self.launch,)

    def call(self) -> Call:
        """The GPU call: scatter adds onto y, so y starts at zero; gather writes every pixel."""
        return Call(self.out_shape, self.launch, zeroed=self.variant == "scatter")


def check_variant(variant: str) -> None:
    if variant not in FOLD_VARIANTS:
        raise ValueError(f"variant {variant!r} must be one of {FOLD_VARIANTS}")


@memoised("fold_plans", 1024)
def plan_fold(
    cols_shape: tuple[int, ...],
    output_size: Any,
    kernel_size: Any,
    dilation: Any = 1,
    padding: Any = 0,
    stride: Any = 1,
    variant: str = "auto",
) -> FoldPlan:
    """check_fold and the variant, then the output's shape and the variant's launch."""
    check_variant(variant)
    cols_shape = tuple(cols_shape)
    C, g = check_fold(cols_shape, output_size, kernel_size, dilation, padding, stride)
    N = cols_shape[0] if len(cols_shape) == 3 else 1
    out_shape = (N, C, g.H, g.W)[0 if len(cols_shape) == 3 else 1 :]
    empty = N * C == 0  # H, W and L are at least 1 once checked
    launch = None if variant == "auto" or empty else fold_launch(g, N, C, variant)
    return FoldPlan(C, g, out_shape, variant, launch)


def fold(
    cols: Any,
    output_size: Any,
    kernel_size: Any,
    dilation: Any = 1,
    padding: Any = 0,
    stride: Any = 1,
    *,
    variant: str = "auto",
) -> Any:
    """F.fold: sums every column back onto the pixels it came from (overlaps add up).

    variant (GPU only): "gather" (one thread per pixel, deterministic), "scatter" (one thread
    per column entry, atomicAdd) or "auto": the faster of the two for this shape, measured on
    the first call and remembered (neither wins everywhere: scatter for strided or 7x7
    windows, gather for 3x3 stride 1 in bench/results).
    """
    args = (output_size, kernel_size, dilation, padding, stride, variant)
    key = ready_key("fold", (cols,), args)
    ready = ready_call(key)
    if ready is not None:  # this shape and these arguments passed every check before
        return ready(cols)
    check_variant(variant)
    xp, cols = as_float32(cols, "input")
    plan = plan_fold(cols.shape, *args)
    if xp is np:
        y = fold_numpy(cols if cols.ndim == 3 else cols[None], plan.C, plan.geometry)
        return y.reshape(plan.out_shape)
    if variant == "auto":
        batch_shape = cols.shape if cols.ndim == 3 else (1, *cols.shape)
        candidates = {
            v: functools.partial(plan_fold(cols.shape, *args[:-1], v).call(), cols)
            for v in ("gather", "scatter")
        }
        chosen = autotune.fastest(("fold", batch_shape, plan.geometry), candidates) or "gather"
        plan = plan_fold(cols.shape, *args[:-1], chosen)
    call = plan.call()
    keep_ready(key, call)
    return call(cols)
