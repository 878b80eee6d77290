"""unfold (im2col) and fold (col2im) with PyTorch F.unfold / F.fold semantics: check -> plan -> run.

Kernels: kernels/unfold_fold.cu (unfold_v1, fold_v1_scatter, fold_v2_gather). The NumPy twins
walk the same (ki, kj) taps, one strided copy per tap instead of one thread row per row.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from gpuops import autotune
from gpuops.cache import Memo, memoised
from gpuops.checks import WindowGeometry, as_float32, as_pair, check_ndim, window_args, window_geometry
from gpuops.index_math import tap_slices
from gpuops.launch import Call, Launch, ints, l2_bytes, ready_device, row_launch

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
    return _walk_cols("unfold_v1", ("x", "cols"), g, N, C, ints(streaming=streaming), cells)


def _walk_cols(kernel: str, arrays: tuple[str, ...], g: WindowGeometry, N: int, C: int,
               extra: tuple = (), cells: int = 1) -> Launch:  # fmt: skip
    """A row kernel over the rows of cols (N, C*KH*KW, L): rows of W_out cells."""
    return row_launch(kernel, SOURCE, arrays, (N, C * g.KH * g.KW, g.L), g.W_out, window_args(g) + extra,
                      cells=cells, index="(n, row, l) of cols")  # fmt: skip


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


_ready_unfold = Memo("unfold_ready_calls", 4096)


def unfold(x: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> Any:
    """F.unfold: (N,C,H,W) -> (N, C*kh*kw, L); (C,H,W) -> (C*kh*kw, L)."""
    device = ready_device(x)
    key = (device, x.shape, repr((kernel_size, dilation, padding, stride))) if device is not None else None
    ready = _ready_unfold.get(key) if key else None
    if ready is not None:  # this shape and these arguments passed every check before
        return ready(x)
    xp, x = as_float32(x, "input")
    check_ndim(x.shape, (3, 4), "input", "(C, H, W) or (N, C, H, W)")
    batched = x.ndim == 4
    x4 = x if batched else x[None]
    N, C, H, W = x4.shape
    g = window_geometry(H, W, kernel_size, stride, padding, dilation)
    if xp is np:
        cols = unfold_numpy(x4, g)
        return cols if batched else cols[0]
    out_shape = (N, C * g.KH * g.KW, g.L)[0 if batched else 1 :]
    call = Call(out_shape, unfold_launch(g, N, C) if N * C * g.KH * g.KW * g.L else None)
    if key:
        _ready_unfold.put(key, call)
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
    return row_launch("fold_v2_gather", SOURCE, ("cols", "y"), (N, C, g.H, g.W), g.W, window_args(g),
                      index="(n, c, ih, iw) of y")  # fmt: skip


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


def _fold_call(cols_shape: tuple[int, ...], C: int, g: WindowGeometry, variant: str, batched: bool) -> Call:
    """scatter adds onto y, so y starts at zero; gather writes every pixel."""
    N = cols_shape[0]
    out_shape = (N, C, g.H, g.W)[0 if batched else 1 :]
    empty = not (N * C * g.H * g.W) or not int(np.prod(cols_shape))
    return Call(out_shape, None if empty else fold_launch(g, N, C, variant), zeroed=variant == "scatter")


_ready_fold = Memo("fold_ready_calls", 4096)


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
    device = ready_device(cols)
    args = repr((output_size, kernel_size, dilation, padding, stride, variant))
    key = (device, cols.shape, args) if device is not None else None
    ready = _ready_fold.get(key) if key else None
    if ready is not None:  # this shape and these arguments passed every check before
        return ready(cols)
    if variant not in FOLD_VARIANTS:
        raise ValueError(f"variant {variant!r} must be one of {FOLD_VARIANTS}")
    xp, cols = as_float32(cols, "input")
    C, g = check_fold(cols.shape, output_size, kernel_size, dilation, padding, stride)
    batched = cols.ndim == 3
    cols3 = cols if batched else cols[None]
    if xp is np:
        y = fold_numpy(cols3, C, g)
        return y if batched else y[0]
    chosen = variant
    if variant == "auto":
        candidates = {
            v: functools.partial(_fold_call(cols3.shape, C, g, v, True), cols3) for v in ("gather", "scatter")
        }
        chosen = autotune.fastest(("fold", cols3.shape, g), candidates) or "gather"
    call = _fold_call(cols3.shape, C, g, chosen, batched)
    if key:
        _ready_fold.put(key, call)
    return call(cols3)
