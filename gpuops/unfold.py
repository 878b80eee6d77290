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
_ready_unfold = cuda_kernels.ReadyCalls()
_ready_fold = cuda_kernels.ReadyCalls()


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


def unfold_plan(g: WindowGeometry, out_size: int) -> cuda_kernels.PackedLaunch | None:
    """Row launch of the unfold kernel writing `out_size` floats (None when there is nothing)."""
    if not out_size:
        return None
    rows = out_size // g.W_out  # (n, c, ki, kj, oh) rows of W_out columns
    per_row = g.W_out // 4 if g.W_out % 4 == 0 else g.W_out  # threads a row needs (float4 stores)
    streaming = int(_plane_outgrows_l2(g.H * g.W * 4))
    return cuda_kernels.row_plan(SOURCE, "unfold_kernel", rows, per_row, *geometry_args(g), streaming)


def _plane_outgrows_l2(plane_bytes: int) -> bool:
    """Between two taps' reads of an input plane, unfold writes about a plane of output: when
    the two together exceed half of L2, the re-read misses unless the output streams past L2
    (measured on the H100: image2048_k7 unfold 1.08 -> 0.98 ms; resnet56 / stride2 unchanged)."""
    return 2 * plane_bytes > cuda_kernels.l2_bytes() // 2


def unfold_cupy_into(x: Any, g: WindowGeometry, out: Any) -> Any:
    """Run the unfold kernel on (N, C, H, W), writing (N, C*KH*KW, L) into `out`."""
    plan = unfold_plan(g, out.size)
    if plan is not None:
        plan(x, out)
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


def fold_plan(
    cols_size: int, y_size: int, g: WindowGeometry, variant: str
) -> cuda_kernels.PackedLaunch | None:
    """Row launch of a fold kernel (None when there is nothing to add up)."""
    if variant == "scatter":
        rows, width, name = cols_size // max(1, g.W_out), g.W_out, "fold_scatter_kernel"
    else:
        rows, width, name = y_size // max(1, g.W), g.W, "fold_gather_kernel"
    if not rows:
        return None
    return cuda_kernels.row_plan(SOURCE, name, rows, width, *geometry_args(g))


def fold_call(
    cols_shape: tuple[int, ...], C: int, g: WindowGeometry, variant: str, batched: bool = True
) -> Any:
    """The fold call for (N, C*KH*KW, L) columns; its output drops N when not batched.
    scatter adds onto y, so y starts at zero; gather writes every pixel."""
    N = cols_shape[0]
    plan = fold_plan(int(np.prod(cols_shape)), N * C * g.H * g.W, g, variant)
    return cuda_kernels.RowCall((N, C, g.H, g.W)[0 if batched else 1 :], plan, zeroed=variant == "scatter")


def fold_cupy(cols: Any, C: int, g: WindowGeometry, variant: str) -> Any:
    return fold_call(cols.shape, C, g, variant)(cols)


def _batched(x: Any, xp: ModuleType, ndim_batched: int) -> tuple[Any, bool]:
    return (x, True) if x.ndim == ndim_batched else (x[None], False)


def unfold(x: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> Any:
    """F.unfold: (N,C,H,W) -> (N, C*kh*kw, L); (C,H,W) -> (C*kh*kw, L)."""
    key = (kernel_size, dilation, padding, stride)
    ready = _ready_unfold.get(x, key)
    if ready is not None:  # this shape and these arguments passed every check before
        return ready(x)
    xp, x = as_float32(x, "input")
    check_ndim(x.shape, (3, 4), "input", "(C, H, W) or (N, C, H, W)")
    x, batched = _batched(x, xp, 4)
    N, C, H, W = x.shape
    g = window_geometry(H, W, kernel_size, stride, padding, dilation)
    if xp is np:
        cols = unfold_numpy(x, g)
        return cols if batched else cols[0]
    out_shape = (N, C * g.KH * g.KW, g.L)[0 if batched else 1 :]
    call = cuda_kernels.RowCall(out_shape, unfold_plan(g, N * C * g.KH * g.KW * g.L))
    _ready_unfold.put(x if batched else x[0], key, call)
    return call(x)


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
    key = (output_size, kernel_size, dilation, padding, stride, variant)
    ready = _ready_fold.get(cols, key)
    if ready is not None:  # this shape and these arguments passed every check before
        return ready(cols)
    if variant not in FOLD_VARIANTS:
        raise ValueError(f"variant {variant!r} must be one of {FOLD_VARIANTS}")
    xp, cols = as_float32(cols, "input")
    check_ndim(cols.shape, (2, 3), "input", "(C*kh*kw, L) or (N, C*kh*kw, L)")
    cols, batched = _batched(cols, xp, 3)
    C, g = fold_geometry(cols.shape, output_size, kernel_size, dilation, padding, stride)
    if xp is np:
        y = fold_numpy(cols, C, g)
        return y if batched else y[0]
    chosen = variant
    if variant == "auto":
        candidates = {v: functools.partial(fold_cupy, cols, C, g, v) for v in ("gather", "scatter")}
        chosen = autotune.fastest(("fold", cols.shape, g), candidates) or "gather"
    call = fold_call(cols.shape, C, g, chosen, batched)
    _ready_fold.put(cols if batched else cols[0], key, call)
    return call(cols)
