"""Past 2**31 elements (-m gpu, on a card with >= 40 GB): every op and algorithm is correct or
refuses up front with a ValueError naming the limit; `auto` never launches a candidate that can
fault. References are independent: NumPy's own pad, CPU convolutions of crops, and
fold(unfold(x)) = x * (number of windows covering each pixel)."""

from __future__ import annotations

import numpy as np
import pytest

import gpuops
from tests.support.references import conv2d_ref

pytestmark = pytest.mark.gpu
BIG = 46_400  # one 46400 x 46400 plane: 2,152,960,000 cells > 2**31 - 1


@pytest.fixture
def cp():
    import cupy

    yield cupy
    cupy.get_default_memory_pool().free_all_blocks()


def _conv_crop_reference(x_host_rows, w, r0, c0, size, H, W):
    """Reference outputs [r0, r0+size) x [c0, c0+size) of a 3x3, padding-1 convolution, from the
    input rows/cols around them (zeros outside the image), in float64."""
    rows = np.arange(r0 - 1, r0 + size + 1)
    cols = np.arange(c0 - 1, c0 + size + 1)
    crop = np.zeros((1, 1, rows.size, cols.size))
    ok_r, ok_c = (rows >= 0) & (rows < H), (cols >= 0) & (cols < W)
    crop[0, 0][np.ix_(ok_r, ok_c)] = x_host_rows(rows[ok_r], cols[ok_c])
    return conv2d_ref(crop, w)[0, 0]


def test_one_plane_larger_than_2_31_cells(cp, rng):
    x = cp.random.standard_normal((1, 1, BIG, BIG), dtype=cp.float32)
    w = rng.standard_normal((1, 1, 3, 3)).astype(np.float32)
    wd = cp.asarray(w)
    for algorithm in ("tiled_basic", "tiled", "implicit_gemm", "implicit_gemm_tf32", "im2col"):
        with pytest.raises(ValueError, match=r"limit|bytes|more than"):
            gpuops.conv2d(x, wd, padding=1, algorithm=algorithm)

    def host(rows, cols):
        return x[0, 0, int(rows[0]) : int(rows[-1]) + 1, int(cols[0]) : int(cols[-1]) + 1].get()

    for algorithm in ("direct", "auto"):
        y = gpuops.conv2d(x, wd, padding=1, algorithm=algorithm)
        for r0, c0 in [(0, 0), (BIG - 8, BIG - 8), (30_000, 45_000), (46_300, 17)]:
            ref = _conv_crop_reference(host, w, r0, c0, 8, BIG, BIG)
            np.testing.assert_allclose(y[0, 0, r0 : r0 + 8, c0 : c0 + 8].get(), ref, rtol=1e-4, atol=1e-4)
        del y


def test_a_batch_larger_than_2_31_elements_on_every_algorithm(cp, rng):
    N, C, S, M = 520, 4, 1024, 4  # 2,181,038,080 input elements, as many outputs
    x = cp.random.standard_normal((N, C, S, S), dtype=cp.float32)
    w = rng.standard_normal((M, C, 3, 3)).astype(np.float32)
    wd = cp.asarray(w)
    ends = [0, N - 1]
    refs = {n: gpuops.conv2d(x[n].get(), w, padding=1) for n in ends}
    for algorithm in (*gpuops.ALGORITHMS, "auto"):
        y = gpuops.conv2d(x, wd, padding=1, algorithm=algorithm)
        for n in ends:
            np.testing.assert_allclose(y[n].get(), refs[n], rtol=1e-4, atol=2e-4, err_msg=algorithm)
        del y
    y = gpuops.conv2d(x, wd, padding=1, algorithm="implicit_gemm_tf32")
    for n in ends:
        err = float(np.linalg.norm(y[n].get() - refs[n]) / np.linalg.norm(refs[n]))
        assert err < 2e-3, err  # TF32: about 1e-4 relative


def test_unfold_and_fold_past_2_31_elements(cp):
    S = 16_384  # unfold with a 3x3 window: 9 * 16384^2 = 2,415,919,104 elements
    x = cp.random.standard_normal((1, 1, S, S), dtype=cp.float32)
    cols = gpuops.unfold(x, 3, padding=1)
    assert cols.size > 2**31
    flat = cols.reshape(9, S, S)  # row (ki, kj), column l = oh * S + ow
    xh = x[0, 0]
    for ki, kj, oh, ow in [(0, 0, 0, 0), (2, 2, S - 1, S - 1), (1, 2, S - 1, 5), (2, 0, 9_999, S - 1)]:
        ih, iw = oh - 1 + ki, ow - 1 + kj
        want = float(xh[ih, iw]) if 0 <= ih < S and 0 <= iw < S else 0.0
        assert float(flat[ki * 3 + kj, oh, ow]) == want
    for variant in ("gather", "scatter"):
        back = gpuops.fold(cols, (S, S), 3, padding=1, variant=variant)
        for r0, c0 in [(0, 0), (S - 4, S - 4), (8_000, 12_345)]:
            patch = back[0, 0, r0 : r0 + 4, c0 : c0 + 4].get()
            count = np.outer(
                3 - (np.arange(r0, r0 + 4) % (S - 1) == 0), 3 - (np.arange(c0, c0 + 4) % (S - 1) == 0)
            )
            np.testing.assert_allclose(
                patch, xh[r0 : r0 + 4, c0 : c0 + 4].get() * count, rtol=1e-5, atol=1e-5
            )
        del back


def test_reflect_pad_past_2_31_elements(cp):
    S, p = 46_000, 200  # output 46400 x 46400
    x = cp.random.standard_normal((1, 1, S, S), dtype=cp.float32)
    y = gpuops.reflect_pad(x, p)
    assert y.size > 2**31
    corner = np.pad(x[0, 0, :300, :300].get(), p, mode="reflect")[: 2 * p, : 2 * p]
    np.testing.assert_array_equal(y[0, 0, : 2 * p, : 2 * p].get(), corner)
    far = np.pad(x[0, 0, -300:, -300:].get(), p, mode="reflect")[-2 * p :, -2 * p :]
    np.testing.assert_array_equal(y[0, 0, -2 * p :, -2 * p :].get(), far)
