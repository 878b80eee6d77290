"""The GEMM steps (im2col's product, the backward pass's W^T x dY and unfold(x) x dY^T) through
cuBLAS: one strided-batched SGEMM call, the size rules it imposes, and how many samples of
unfolded columns fit in GPU memory at once."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpuops.index_math import INT32_MAX

MIN_BUDGET = 64 * 2**20  # bytes; unfolded columns may use this much even when memory is tight
_ONE = np.ones((), np.float32)
_ZERO = np.zeros((), np.float32)


def gemm_strided(a: Any, b: Any, out: Any, *, trans_a: bool = False, trans_b: bool = False) -> None:
    """out[i] = op(a[i]) @ op(b[i]) for every i: ONE cuBLAS strided-batched SGEMM.

    a, b, out are (batch, rows, cols) views with unit column stride; a 2-D a or b is one matrix
    shared by the whole batch (batch stride 0, nothing copied). op transposes when asked.
    cuBLAS is column-major: a row-major matrix with row stride ld is, to it, the transposed
    matrix with leading dimension ld, so we ask for out^T = op(b)^T @ op(a)^T.
    """
    from cupy.cuda import cublas, device

    batch, M, N = out.shape
    K = a.shape[-2] if trans_a else a.shape[-1]
    if batch == 0 or M == 0 or N == 0:
        return
    for name, arr in (("a", a), ("b", b), ("out", out)):
        if arr.strides[-1] != 4 or arr.dtype != np.float32:
            raise ValueError(f"gemm_strided: {name} must be float32 with unit column stride")

    def ld_and_stride(arr: Any) -> tuple[int, int]:  # leading dimension, batch stride (floats)
        return max(1, arr.strides[-2] // 4), (arr.strides[0] // 4 if arr.ndim == 3 else 0)

    (ldb, sb), (lda, sa), (ldo, so) = ld_and_stride(b), ld_and_stride(a), ld_and_stride(out)
    op = cublas.CUBLAS_OP_T, cublas.CUBLAS_OP_N
    cublas.sgemmStridedBatched(
        device.get_cublas_handle(),
        op[not trans_b],
        op[not trans_a],
        N,
        M,
        K,
        _ONE.ctypes.data,
        b.data.ptr,
        ldb,
        sb,
        a.data.ptr,
        lda,
        sa,
        _ZERO.ctypes.data,
        out.data.ptr,
        ldo,
        so,
        batch,
    )


def check_gemm_sides(sides: dict[str, int], instead: str) -> None:
    """Refuse a GEMM side over cuBLAS's 32-bit limit, naming it and what to use instead."""
    for what, size in sides.items():
        if size > INT32_MAX:  # cuBLAS takes matrix sizes and leading dimensions as 32-bit ints
            raise ValueError(
                f"the GEMM has {size:,} {what} per sample, more than cuBLAS's 32-bit limit {INT32_MAX:,}; "
                f"{instead}"
            )


def samples_per_chunk(
    N: int, per_sample: int, what: str, instead: str, budget_bytes: int | None = None
) -> int:
    """Samples whose unfolded columns (per_sample bytes each) fit the budget, default half of the
    free GPU memory (at least MIN_BUDGET); ValueError saying the bytes when one sample does not."""
    per_sample = max(1, per_sample)
    if budget_bytes is None and N * per_sample <= MIN_BUDGET:
        return max(1, N)  # fits the budget it always has: no need to ask the driver (a few us)
    if budget_bytes is None:
        import cupy

        free, _total = cupy.cuda.runtime.memGetInfo()
        free += cupy.get_default_memory_pool().free_bytes()
        budget_bytes = max(MIN_BUDGET, free // 2)
    if per_sample > budget_bytes:
        raise ValueError(
            f"{what} needs {per_sample:,} bytes for one sample, more than the {budget_bytes:,} bytes "
            f"of GPU memory it may use; {instead}"
        )
    return max(1, min(N, budget_bytes // per_sample))
