"""im2col + GEMM: copy every receptive field into a column of X_unroll (the unfold kernel), then
one matrix product per group (cuBLAS), as in PMPP ch. 16 and the source article on im2col.

X_unroll is C*K*K times the output's pixel count: on the GPU the batch is unrolled in chunks
that fit in half of the free memory, into one reused buffer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from gpuops.checks import WindowGeometry
from gpuops.cublas import check_gemm_sides, gemm_strided, samples_per_chunk
from gpuops.launch import Launch
from gpuops.unfold_fold import unfold_into, unfold_launch, unfold_numpy

if TYPE_CHECKING:
    from gpuops.conv2d import ConvProblem


def unfold_launch_of(p: ConvProblem) -> Launch:
    """The unfold launch im2col makes (for the whole batch; chunks repeat it on fewer samples)."""
    g = p.geometry.unpadded() if p.reflect else p.geometry
    return unfold_launch(g, p.N, p.C)


def is_pointwise(g: WindowGeometry) -> bool:
    """A 1x1 kernel, stride 1, no padding: X_unroll IS the input (C x H*W per sample), so the
    convolution is a plain GEMM with nothing to unfold."""
    return (g.KH, g.KW, g.stride_h, g.stride_w) == (1, 1, 1, 1) and not any(g.pads)


def batch_chunk(p: ConvProblem, budget_bytes: int | None = None) -> int:
    """Samples per GEMM so that X_unroll stays within the budget (default: half of free memory).

    Raises ValueError when one sample alone does not fit, saying how many bytes it needs, or
    when a matrix side is too large for cuBLAS's 32-bit sizes.
    """
    g = p.geometry
    check_gemm_sides({"output pixels": g.L, "rows of X_unroll": (p.C // p.groups) * g.KH * g.KW},
                     "use algorithm='direct'")  # fmt: skip
    if is_pointwise(g):
        return p.N  # nothing is unrolled
    return samples_per_chunk(p.N, p.x_unroll_bytes_per_sample, "im2col's X_unroll",
                             "use algorithm='direct' or 'tiled'", budget_bytes)  # fmt: skip


def gemm_batched(w_mat: Any, cols: Any, out: Any) -> None:
    """out[n] = w_mat @ cols[n] for every n: one strided-batched SGEMM, the filter matrix shared
    by every sample (batch stride 0). cols and out may be views (a group's rows of a sample)."""
    gemm_strided(w_mat if w_mat.flags.c_contiguous else w_mat.copy(), cols, out)


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


def im2col_cupy(x: Any, w: Any, p: ConvProblem, g: WindowGeometry, y: Any, budget_bytes: int | None,
                chunk: int | None = None) -> None:  # fmt: skip
    """Unroll a chunk of samples into one reused X_unroll buffer, then one batched GEMM per group.
    x is already padded when g has no padding (reflect mode). chunk: samples per GEMM when the
    caller already knows it (batch_chunk's answer for a batch that always fits)."""
    import cupy

    G = p.groups
    Cg, Mg, kk = p.C // G, p.M // G, g.KH * g.KW
    chunk = chunk or batch_chunk(p, budget_bytes)
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
