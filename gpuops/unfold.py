"""unfold (im2col) and fold (col2im) with PyTorch F.unfold / F.fold semantics."""

from __future__ import annotations

import functools
from types import ModuleType
from typing import Any

import numpy as np

from gpuops import autotune, cuda_kernels
from gpuops.arrays import as_float32
from gpuops.geometry import WindowGeometry, as_pair, check_ndim, window_geometry
from gpuops.indexmath import tap_slice

SOURCE = "unfold_fold.cu"
FOLD_VARIANTS = ("auto", "gather", "scatter")


def geometry_args(g: WindowGeometry) -> tuple[int, ...]:
    """The GEOMETRY_ARGS of unfold_fold.cu, in order."""
    return (g.H, g.W, g.KH, g.KW, g.H_out, g.W_out, g.stride_h, g.stride_w,
            g.pad_top, g.pad_left, g.dil_h, g.dil_w)  # fmt: skip


def zero_pad_numpy(x: np.ndarray, g: WindowGeometry) -> np.ndarray:
    pads = ((0, 0),) * (x.ndim - 2) + ((g.pad_top, g.pad_bottom), (g.pad_left, g.pad_right))
    return np.pad(x, pads)


def unfold_numpy(x: np.ndarray, g: WindowGeometry) -> np.ndarray:
    """(N, C, H, W) -> (N, C*KH*KW, L): one strided copy per tap (ki, kj), not per pixel."""
    N, C = x.shape[:2]
    padded = zero_pad_numpy(x, g)
    cols = np.empty((N, C, g.KH, g.KW, g.H_out, g.W_out), dtype=np.float32)
    for ki in range(g.KH):
        rows = tap_slice(ki, g.dil_h, g.stride_h, g.H_out)
        for kj in range(g.KW):
            cols[:, :, ki, kj] = padded[:, :, rows, tap_slice(kj, g.dil_w, g.stride_w, g.W_out)]
    return cols.reshape(N, C * g.KH * g.KW, g.L)


def unfold_cupy_into(x: Any, g: WindowGeometry, out: Any) -> Any:
    """Run the unfold kernel on (N, C, H, W), writing (N, C*KH*KW, L) into `out`."""
    if out.size:
        rows = out.size // g.W_out  # (n, c, ki, kj, oh) rows of W_out columns
        per_row = g.W_out // 4 if g.W_out % 4 == 0 else g.W_out  # threads a row needs (float4 stores)
        cuda_kernels.launch_rows(SOURCE, "unfold_kernel", x, out, rows, per_row, *geometry_args(g))
    return out


def fold_numpy(cols: np.ndarray, C: int, g: WindowGeometry) -> np.ndarray:
    """(N, C*KH*KW, L) -> (N, C, H, W), summing overlaps; the inverse walk of unfold_numpy."""
    N = cols.shape[0]
    blocks = cols.reshape(N, C, g.KH, g.KW, g.H_out, g.W_out)
    Hp, Wp = g.padded_hw
    out = np.zeros((N, C, Hp, Wp), dtype=np.float32)
    for ki in range(g.KH):
        rows = tap_slice(ki, g.dil_h, g.stride_h, g.H_out)
        for kj in range(g.KW):
            out[:, :, rows, tap_slice(kj, g.dil_w, g.stride_w, g.W_out)] += blocks[:, :, ki, kj]
    return np.ascontiguousarray(out[:, :, g.pad_top : g.pad_top + g.H, g.pad_left : g.pad_left + g.W])


def fold_cupy(cols: Any, C: int, g: WindowGeometry, variant: str) -> Any:
    import cupy

    N = cols.shape[0]
    if variant == "scatter":
        y = cupy.zeros((N, C, g.H, g.W), dtype=np.float32)
        if cols.size:
            rows = cols.size // g.W_out
            cuda_kernels.launch_rows(SOURCE, "fold_scatter_kernel", cols, y, rows, g.W_out, *geometry_args(g))
    else:
        y = cupy.empty((N, C, g.H, g.W), dtype=np.float32)
        if y.size:
            rows = y.size // g.W  # (n, c, ih) rows of W pixels
            cuda_kernels.launch_rows(SOURCE, "fold_gather_kernel", cols, y, rows, g.W, *geometry_args(g))
    return y


def _batched(x: Any, xp: ModuleType, ndim_batched: int) -> tuple[Any, bool]:
    return (x, True) if x.ndim == ndim_batched else (x[None], False)


def unfold(x: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> Any:
    """F.unfold: (N,C,H,W) -> (N, C*kh*kw, L); (C,H,W) -> (C*kh*kw, L)."""
    xp, x = as_float32(x, "input")
    check_ndim(x.shape, (3, 4), "input", "(C, H, W) or (N, C, H, W)")
    x, batched = _batched(x, xp, 4)
    N, C, H, W = x.shape
    g = window_geometry(H, W, kernel_size, stride, padding, dilation)
    if xp is np:
        cols = unfold_numpy(x, g)
    else:
        cols = unfold_cupy_into(x, g, xp.empty((N, C * g.KH * g.KW, g.L), dtype=np.float32))
    return cols if batched else cols[0]


def fold_geometry(
    cols_shape: tuple[int, ...], output_size: Any, kernel_size: Any, dilation: Any, padding: Any, stride: Any
) -> tuple[int, WindowGeometry]:
    """Check fold's arguments; return (channels C, geometry)."""
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
    if variant not in FOLD_VARIANTS:
        raise ValueError(f"variant {variant!r} must be one of {FOLD_VARIANTS}")
    xp, cols = as_float32(cols, "input")
    check_ndim(cols.shape, (2, 3), "input", "(C*kh*kw, L) or (N, C*kh*kw, L)")
    cols, batched = _batched(cols, xp, 3)
    C, g = fold_geometry(cols.shape, output_size, kernel_size, dilation, padding, stride)
    if xp is np:
        y = fold_numpy(cols, C, g)
    else:
        if variant == "auto":
            candidates = {v: functools.partial(fold_cupy, cols, C, g, v) for v in ("gather", "scatter")}
            variant = autotune.fastest(("fold", cols.shape, g), candidates) or "gather"
        y = fold_cupy(cols, C, g, variant)
    return y if batched else y[0]
