"""The planned cuBLAS calls (gpuops.cublas.StridedGemm, grad_weight's WeightGemm layout) checked
on the CPU: their arguments run through a NumPy model of cublasSgemmStridedBatched as cuBLAS's
documentation defines it (column-major matrices, leading dimensions, batch strides), on flat
buffers, against products NumPy computes from the arrays."""

from __future__ import annotations

import numpy as np
import pytest

import gpuops
from gpuops import conv_backward as cb
from gpuops.cublas import Matrices, StridedGemm


def cells(at: int, m: Matrices, i: int, shape: tuple[int, int]) -> np.ndarray:
    """Where matrix i of a batch lies as cuBLAS reads it: shape[0] x shape[1] elements,
    column-major, columns m.ld apart, matrices m.stride apart, from element `at` of a buffer."""
    rows, cols = np.arange(shape[0])[:, None], np.arange(shape[1])[None, :]
    return at + i * m.stride + rows + m.ld * cols


def column_major(operand: tuple, m: Matrices, i: int, shape: tuple[int, int]) -> np.ndarray:
    """Matrix i of an operand (flat buffer, element offset)."""
    return operand[0][cells(operand[1], m, i, shape)]


def sgemm_strided_batched(gemm: StridedGemm, a: tuple, b: tuple, out: tuple) -> None:
    """C_i = op(A_i) @ op(B_i) for each i (alpha 1, beta 0), where cuBLAS's A is our b and its
    B our a; each operand is (flat buffer, element offset)."""
    (m, n, k), (trans_first, trans_second) = gemm.sizes, gemm.transposed
    for i in range(gemm.batch):
        first = column_major(b, gemm.b, i, (k, m) if trans_first else (m, k))
        second = column_major(a, gemm.a, i, (n, k) if trans_second else (k, n))
        product = (first.T if trans_first else first) @ (second.T if trans_second else second)
        out[0][cells(out[1], gemm.out, i, (m, n))] = product


@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
@pytest.mark.parametrize("shared_a", [False, True])
def test_a_planned_gemm_computes_each_products_of_the_batch(trans_a, trans_b, shared_a, rng):
    """Row-major views with padded rows (leading dimension past the width), a batch of 3, a shared a."""
    batch, M, N, K = 3, 5, 7, 4
    a_shape = (K, M) if trans_a else (M, K)
    b_shape = (N, K) if trans_b else (K, N)
    a_full = rng.standard_normal((batch, a_shape[0], a_shape[1] + 3)).astype(np.float32)
    b_full = rng.standard_normal((batch, b_shape[0], b_shape[1] + 2)).astype(np.float32)
    a = a_full[0, :, : a_shape[1]] if shared_a else a_full[:, :, : a_shape[1]]
    b = b_full[:, :, : b_shape[1]]
    out = np.full((batch, M, N), np.nan, np.float32)
    gemm = StridedGemm.plan(
        Matrices.of(a, "a"), Matrices.of(b, "b"), Matrices.of(out, "out"), batch, trans_a, trans_b
    )
    flat_out = out.reshape(-1)
    sgemm_strided_batched(gemm, (a_full.reshape(-1), 0), (b_full.reshape(-1), 0), (flat_out, 0))
    want = (a.swapaxes(-1, -2) if trans_a else a) @ (b.swapaxes(-1, -2) if trans_b else b)
    np.testing.assert_allclose(flat_out.reshape(batch, M, N), want, rtol=1e-5, atol=1e-5)


def test_nothing_to_plan_for_an_empty_output():
    empty = Matrices(0, 4, 4, 16)
    assert StridedGemm.plan(Matrices(0, 3, 3, 9), Matrices(3, 4, 4, 12), empty, 2) is None
    assert StridedGemm.plan(Matrices(2, 3, 3, 6), Matrices(3, 4, 4, 12), Matrices(2, 4, 4, 8), 0) is None


def test_matrices_refuse_a_strided_column():
    with pytest.raises(ValueError, match="a must be float32 with unit column stride"):
        Matrices.of(np.zeros((4, 6), np.float32)[:, ::2], "a")


@pytest.mark.parametrize(
    "layer",
    [
        (3, 8, 5, 6, 4, 1, 1, 0, 1),  # 1x1: x's planes are the columns
        (2, 8, 5, 6, 12, 1, 1, 0, 4),  # 1x1, four groups: each group's rows of dy and x
        (2, 6, 7, 5, 4, 3, 2, 1, 2),  # 3x3, stride 2, two groups: unfolded columns
    ],
    ids=str,
)
def test_weight_gemm_layout_sums_every_groups_products(layer, rng):
    """WeightGemm's GEMMs and offsets, run through the model on flat dy / cols / products
    buffers, give conv2d_grad_weight's NumPy result."""
    N, C, H, W, M, K, S, P, G = layer
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    w_shape = (M, C // G, K, K)
    kw = dict(stride=S, padding=P, groups=G)
    dy_shape = gpuops.plan_conv2d(x.shape, w_shape, None, S, P, 1, G).out_shape
    dy = rng.standard_normal(dy_shape).astype(np.float32)
    _, q = cb.check_conv2d_backward(dy.shape, x.shape, w_shape, **kw)
    cols = cb.unfold_numpy(x, q.geometry)  # (N, C*K*K, L)
    product, at, total = cb.weight_gemm_layout(q, N)
    products = np.full(N * M * (C // G) * K * K, np.nan, np.float32)
    for dy_at, cols_at, out_at in at:  # byte offsets: elements are 4 bytes
        sgemm_strided_batched(
            product, (dy.reshape(-1), dy_at // 4), (cols.reshape(-1), cols_at // 4), (products, out_at // 4)
        )
    dw = np.full(np.prod(w_shape), np.nan, np.float32)
    sgemm_strided_batched(total, (np.ones(N, np.float32), 0), (products, 0), (dw, 0))
    want = gpuops.conv2d_grad_weight(dy, x, w_shape, **kw)
    np.testing.assert_allclose(dw.reshape(w_shape), want, rtol=1e-4, atol=1e-4)
