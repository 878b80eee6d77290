"""im2col + GEMM: copy every receptive field into a column of X_unroll (the unfold kernel), then
one matrix product per group (cuBLAS), as in PMPP ch. 16 and the source article on im2col.

X_unroll is C*K*K times the output's pixel count: on the GPU the batch is unrolled in chunks
that fit in half of the free memory, into one reused buffer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from gpuops.checks import WindowGeometry
from gpuops.launch import Launch
from gpuops.unfold_fold import unfold_into, unfold_launch, unfold_numpy

if TYPE_CHECKING:
    from gpuops.conv2d import ConvProblem

MIN_BUDGET = 64 * 2**20  # bytes; X_unroll may use this much even when memory is tight


def unfold_launch_of(p: ConvProblem) -> Launch:
    """The unfold launch im2col makes (for the whole batch; chunks repeat it on fewer samples)."""
    g = p.geometry.unpadded() if p.reflect else p.geometry
    return unfold_launch(g, p.N, p.C)


def is_pointwise(g: WindowGeometry) -> bool:
    """A 1x1 kernel, stride 1, no padding: X_unroll IS the input (C x H*W per sample), so the
    convolution is a plain GEMM with nothing to unfold."""
    return (g.KH, g.KW, g.stride_h, g.stride_w) == (1, 1, 1, 1) and not any(g.pads)


GEMM_LIMIT = 2**31 - 1  # cuBLAS takes matrix sizes and leading dimensions as 32-bit ints


def batch_chunk(p: ConvProblem, budget_bytes: int | None = None) -> int:
    """Samples per GEMM so that X_unroll stays within the budget (default: half of free memory).

    Raises ValueError when one sample alone does not fit, saying how many bytes it needs, or
    when a matrix is too large for cuBLAS's 32-bit sizes.
    """
    g = p.geometry
    rows = (p.C // p.groups) * g.KH * g.KW
    if g.L > GEMM_LIMIT or rows > GEMM_LIMIT:
        raise ValueError(
            f"im2col's GEMM would be {rows:,} x {g.L:,} per sample: a side over cuBLAS's 32-bit limit "
            f"{GEMM_LIMIT:,}; use algorithm='direct'"
        )
    if is_pointwise(g):
        return p.N  # nothing is unrolled
    per_sample = max(1, p.x_unroll_bytes_per_sample)
    if budget_bytes is None and p.N * per_sample <= MIN_BUDGET:
        return p.N  # fits the budget it always has: no need to ask the driver (a few us)
    if budget_bytes is None:
        import cupy

        free, _total = cupy.cuda.runtime.memGetInfo()
        free += cupy.get_default_memory_pool().free_bytes()
        budget_bytes = max(MIN_BUDGET, free // 2)
    if per_sample > budget_bytes:
        raise ValueError(
            f"im2col needs {per_sample:,} bytes for X_unroll of one sample, more than the "
            f"{budget_bytes:,} bytes of GPU memory it may use; use algorithm='direct' or 'tiled'"
        )
    return max(1, min(p.N, budget_bytes // per_sample))


_ONE = np.ones((), np.float32)
_ZERO = np.zeros((), np.float32)


def gemm_batched(w_mat: Any, cols: Any, out: Any) -> None:
    """out[n] = w_mat @ cols[n] for every n: ONE cuBLAS strided-batched SGEMM, the filter matrix
    shared by every sample (batch stride 0), nothing copied.

    cuBLAS is column-major: a row-major (K, L) block is a column-major (L, K) matrix, so we ask
    for out[n]^T (L x M) = cols[n]^T (L x K) @ w_mat^T (K x M), which is out[n] in row-major.
    cols and out may be views (a group's rows of a sample); rows must be contiguous.
    """
    import cupy
    from cupy.cuda import cublas, device

    nb, K, L = cols.shape
    M = w_mat.shape[0]
    w_mat = cupy.ascontiguousarray(w_mat)
    sample_cols, row_cols = cols.strides[0] // 4, cols.strides[1] // 4
    sample_out, row_out = out.strides[0] // 4, out.strides[1] // 4
    if cols.strides[2] != 4 or out.strides[2] != 4:
        raise ValueError("gemm_batched needs rows with unit stride")
    cublas.sgemmStridedBatched(
        device.get_cublas_handle(),
        cublas.CUBLAS_OP_N,
        cublas.CUBLAS_OP_N,
        L,
        M,
        K,
        _ONE.ctypes.data,
        cols.data.ptr,
        row_cols,
        sample_cols,
        w_mat.data.ptr,
        K,
        0,
        _ZERO.ctypes.data,
        out.data.ptr,
        row_out,
        sample_out,
        nb,
    )


def gemm(filter_matrix: Any, x_unroll: Any) -> Any:
    """The GEMM step of im2col on its own: (M, K) @ (K, L) or (N, K, L) -> (M, L) or (N, M, L).

    On the GPU this is the same strided-batched cuBLAS call im2col makes, so the page's
    "unroll vs GEMM" split times what conv2d(algorithm="im2col") really runs.
    """
    from gpuops.backend import array_module

    xp = array_module(x_unroll)
    if xp is np:
        return np.matmul(filter_matrix, x_unroll)
    batched = x_unroll.ndim == 3
    cols = x_unroll if batched else x_unroll[None]
    out = xp.empty((cols.shape[0], filter_matrix.shape[0], cols.shape[2]), dtype=np.float32)
    gemm_batched(filter_matrix, xp.ascontiguousarray(cols), out)
    return out if batched else out[0]


def im2col_cupy(x: Any, w: Any, p: ConvProblem, g: WindowGeometry, y: Any, budget_bytes: int | None) -> None:
    """Unroll a chunk of samples into one reused X_unroll buffer, then one batched GEMM per group.
    x is already padded when g has no padding (reflect mode)."""
    import cupy

    G = p.groups
    Cg, Mg, kk = p.C // G, p.M // G, g.KH * g.KW
    chunk = batch_chunk(p, budget_bytes)
    pointwise = is_pointwise(g)
    buffer = None if pointwise else cupy.empty((chunk, p.C * kk, g.L), dtype=np.float32)
    y_rows = y.reshape(p.N, p.M, g.L)  # a view: y is contiguous
    for n0 in range(0, p.N, chunk):
        nb = min(chunk, p.N - n0)
        if pointwise:  # 1x1: the input already is X_unroll
            cols = x[n0 : n0 + nb].reshape(nb, p.C, g.L)
        else:
            cols = unfold_into(x[n0 : n0 + nb], g, buffer[:nb])
        for group in range(G):  # one strided-batched GEMM per group, over the samples
            gemm_batched(
                w[group * Mg : (group + 1) * Mg].reshape(Mg, Cg * kk),
                cols[:, group * Cg * kk : (group + 1) * Cg * kk],
                y_rows[n0 : n0 + nb, group * Mg : (group + 1) * Mg],
            )


def im2col_numpy(x: np.ndarray, w: np.ndarray, p: ConvProblem) -> np.ndarray:
    """CPU twin: the whole X_unroll (as the GPU path builds it per chunk), then one matmul per group."""
    from gpuops.reflect_pad import reflect_pad

    g, G = p.geometry, p.groups
    if p.reflect:
        x, g = reflect_pad(x, g.pads), g.unpadded()
    cols = unfold_numpy(x, g)  # (N, C*KK, L)
    kk = g.KH * g.KW
    out = w.reshape(G, p.M // G, (p.C // G) * kk) @ cols.reshape(p.N, G, (p.C // G) * kk, g.L)
    return out.reshape(p.out_shape)
