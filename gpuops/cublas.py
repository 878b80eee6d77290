"""The GEMM steps (im2col's product, the backward pass's W^T x dY and unfold(x) x dY^T) through
cuBLAS: one strided-batched SGEMM call, the size rules it imposes, and how many samples of
unfolded columns fit in GPU memory at once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuops.index_math import INT32_MAX

MIN_BUDGET = 64 * 2**20  # bytes; unfolded columns may use this much even when memory is tight
_ONE = np.ones((), np.float32)
_ZERO = np.zeros((), np.float32)
_ONE_PTR, _ZERO_PTR = _ONE.ctypes.data, _ZERO.ctypes.data  # alpha and beta, host pointers


@dataclass(frozen=True)
class Matrices:
    """A batch of row-major float32 matrices as cuBLAS sees them: rows x cols, row stride ld,
    batch stride (0: one matrix shared by the whole batch), all in floats."""

    rows: int
    cols: int
    ld: int
    stride: int

    @classmethod
    def of(cls, arr: Any, name: str) -> Matrices:
        """The matrices of a (batch, rows, cols) or (rows, cols) view with unit column stride."""
        if arr.strides[-1] != 4 or arr.dtype != np.float32:
            raise ValueError(f"gemm_strided: {name} must be float32 with unit column stride")
        stride = arr.strides[0] // 4 if arr.ndim == 3 else 0
        return cls(arr.shape[-2], arr.shape[-1], max(1, arr.strides[-2] // 4), stride)


@dataclass(frozen=True)
class StridedGemm:
    """out[i] = op(a[i]) @ op(b[i]) for i < batch, planned once: ONE cuBLAS strided-batched SGEMM
    whose sizes, leading dimensions and strides are worked out, called with device pointers of
    arrays laid out as planned. A repeat (a ready call) then costs cuBLAS's own host time only.

    cuBLAS is column-major: a row-major matrix with row stride ld is, to it, the transposed
    matrix with leading dimension ld, so we ask for out^T = op(b)^T @ op(a)^T.
    """

    transposed: tuple[bool, bool]  # whether cuBLAS transposes b, a (its first and second matrix)
    sizes: tuple[int, int, int]  # out^T's rows (out's cols), out^T's cols (out's rows), the sum's length
    a: Matrices
    b: Matrices
    out: Matrices
    batch: int

    @classmethod
    def plan(
        cls, a: Matrices, b: Matrices, out: Matrices, batch: int, trans_a: bool = False, trans_b: bool = False
    ) -> StridedGemm | None:
        """None when there is nothing to compute (an empty batch or output)."""
        if batch == 0 or out.rows == 0 or out.cols == 0:
            return None
        sizes = (out.cols, out.rows, a.rows if trans_a else a.cols)
        return cls((trans_b, trans_a), sizes, a, b, out, batch)

    def __call__(self, a_ptr: int, b_ptr: int, out_ptr: int) -> None:
        from cupy.cuda import cublas, device

        a, b, out = self.a, self.b, self.out
        op = cublas.CUBLAS_OP_N, cublas.CUBLAS_OP_T
        cublas.sgemmStridedBatched(
            device.get_cublas_handle(),
            op[self.transposed[0]],
            op[self.transposed[1]],
            *self.sizes,
            _ONE_PTR,
            b_ptr,
            b.ld,
            b.stride,
            a_ptr,
            a.ld,
            a.stride,
            _ZERO_PTR,
            out_ptr,
            out.ld,
            out.stride,
            self.batch,
        )


def gemm_strided(a: Any, b: Any, out: Any, *, trans_a: bool = False, trans_b: bool = False) -> None:
    """out[i] = op(a[i]) @ op(b[i]) for every i: ONE cuBLAS strided-batched SGEMM (StridedGemm).

    a, b, out are (batch, rows, cols) views with unit column stride; a 2-D a or b is one matrix
    shared by the whole batch (batch stride 0, nothing copied). op transposes when asked.
    """
    if 0 in out.shape:
        return
    layouts = (Matrices.of(a, "a"), Matrices.of(b, "b"), Matrices.of(out, "out"))
    gemm = StridedGemm.plan(*layouts, out.shape[0], trans_a, trans_b)
    if gemm is not None:
        gemm(a.data.ptr, b.data.ptr, out.data.ptr)


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
