"""im2col + GEMM: copy every receptive field into a column of X_unroll (the unfold kernel), then
one matrix product per group (cuBLAS), as in PMPP ch. 16 and the source article on im2col.

X_unroll is C*K*K times the output's pixel count: on the GPU the batch is unrolled in chunks
that fit in half of the free memory, into one reused buffer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from gpuops.cache import memoised
from gpuops.checks import WindowGeometry, as_float32, check_ndim
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
    sides = {"output pixels": g.L, "rows of X_unroll": (p.C // p.groups) * g.KH * g.KW}
    check_gemm_sides(sides, "use algorithm='direct'")
    if is_pointwise(g):
        return p.N  # nothing is unrolled
    instead = "use algorithm='direct' or 'tiled'"
    return samples_per_chunk(p.N, p.x_unroll_bytes_per_sample, "im2col's X_unroll", instead, budget_bytes)


def gemm_batched(w_mat: Any, cols: Any, out: Any) -> None:
    """out[n] = w_mat @ cols[n] for every n: one strided-batched SGEMM, the filter matrix shared
    by every sample (batch stride 0). cols and out may be views (a group's rows of a sample)."""
    gemm_strided(w_mat if w_mat.flags.c_contiguous else w_mat.copy(), cols, out)


@dataclass(frozen=True)
class GemmPlan:
    """A checked GEMM step: (M, K) @ (K, L) for each of the samples (None: one 2-D x_unroll). It
    runs as one cuBLAS call, no kernel of ours, so it holds no Launch."""

    M: int
    K: int
    L: int
    samples: int | None
    launches: tuple[Launch, ...] = ()

    @property
    def out_shape(self) -> tuple[int, ...]:
        return (self.M, self.L) if self.samples is None else (self.samples, self.M, self.L)


@memoised("gemm_plans", 1024)
def plan_gemm(filter_shape: tuple[int, ...], x_unroll_shape: tuple[int, ...]) -> GemmPlan:
    """Check the two matrices' shapes: (M, K) and (K, L) or (N, K, L), K the same; sides within
    cuBLAS's 32-bit sizes."""
    check_ndim(filter_shape, (2,), "filter_matrix", "(M, K)")
    check_ndim(x_unroll_shape, (2, 3), "x_unroll", "(K, L) or (N, K, L)")
    (M, K), (rows, L) = filter_shape, x_unroll_shape[-2:]
    if rows != K:
        raise ValueError(f"x_unroll has {rows} rows, but filter_matrix has {K} columns; they must be equal")
    check_gemm_sides({"filters": M, "rows of X_unroll": K, "output pixels": L}, "use a smaller input")
    return GemmPlan(M, K, L, x_unroll_shape[0] if len(x_unroll_shape) == 3 else None)


def gemm(filter_matrix: Any, x_unroll: Any) -> Any:
    """The GEMM step of im2col on its own: (M, K) @ (K, L) or (N, K, L) -> (M, L) or (N, M, L).

    On the GPU this is the same strided-batched cuBLAS call im2col makes, so the page's
    "unroll vs GEMM" split times what conv2d(algorithm="im2col") really runs.
    """
    xp, cols = as_float32(x_unroll, "x_unroll")
    _, w = as_float32(filter_matrix, "filter_matrix", xp)
    plan = plan_gemm(w.shape, cols.shape)
    if xp is np:
        return np.matmul(w, cols)
    out = xp.empty(plan.out_shape, dtype=np.float32)
    gemm_batched(w, cols if cols.ndim == 3 else cols[None], out if out.ndim == 3 else out[None])
    return out


def im2col_cupy(
    x: Any,
    w: Any,
    p: ConvProblem,
    g: WindowGeometry,
    y: Any,
    budget_bytes: int | None,
    chunk: int | None = None,
) -> None:
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
