"""unfold / fold on NumPy and on the CUDA kernels (-m gpu) against loop and np.add.at references."""

import numpy as np
import pytest

import gpuops
from tests.support.cases import case_id, random_conv_cases
from tests.support.helpers import BACKENDS, host, on
from tests.support.references import fold_ref, unfold_ref

CASES = [c for c in random_conv_cases(60, seed=11) if c.padding_mode == "zeros"]
backends = pytest.mark.parametrize("xp", BACKENDS, indirect=True)


def _geom(case):
    return dict(
        kernel_size=(case.kh, case.kw), dilation=case.dilation, padding=case.padding, stride=case.stride
    )


@backends
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_unfold_matches_loop_reference(case, xp, rng):
    x, _, _ = case.arrays(rng)
    cols = gpuops.unfold(*on(xp, x), **_geom(case))
    ref = unfold_ref(x, (case.kh, case.kw), case.dilation, case.padding, case.stride)
    assert cols.shape == ref.shape
    np.testing.assert_array_equal(host(cols), ref.astype(np.float32))


def _fold_case(case, rng, xp, variant="auto"):
    g = gpuops.window_geometry(case.H, case.W, (case.kh, case.kw), case.stride, case.padding, case.dilation)
    cols = rng.standard_normal((case.N, case.C * case.kh * case.kw, g.L)).astype(np.float32)
    y = gpuops.fold(*on(xp, cols), (case.H, case.W), **_geom(case), variant=variant)
    ref = fold_ref(cols, (case.H, case.W), (case.kh, case.kw), case.dilation, case.padding, case.stride)
    assert y.shape == ref.shape
    np.testing.assert_allclose(host(y), ref, rtol=1e-5, atol=1e-5)


@backends
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_fold_matches_add_at_reference(case, xp, rng):
    _fold_case(case, rng, xp)


@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["gather", "scatter"])
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_both_fold_kernels_match_add_at_reference(case, variant, rng):
    """The GPU has two fold kernels (the CPU one twin): each against the reference."""
    import cupy

    _fold_case(case, rng, cupy, variant)


@backends
def test_unbatched_unfold_and_fold_shapes(xp, rng):
    x = rng.standard_normal((2, 5, 7)).astype(np.float32)
    cols = gpuops.unfold(*on(xp, x), (2, 3))
    assert cols.shape == (2 * 2 * 3, 4 * 5)
    assert gpuops.fold(cols, (5, 7), (2, 3)).shape == (2, 5, 7)


@backends
def test_fold_of_unfold_divided_by_counts_is_identity(xp, rng):
    """The page's claim: fold(unfold(x)) / overlap count == x (where every pixel is covered)."""
    x = rng.standard_normal((1, 2, 9, 10)).astype(np.float32)
    k, s, p, d = (3, 2), (1, 2), (1, 0), (2, 1)
    back = host(gpuops.fold(gpuops.unfold(*on(xp, x), k, d, p, s), (9, 10), k, d, p, s))
    ones = host(gpuops.fold(gpuops.unfold(*on(xp, np.ones_like(x)), k, d, p, s), (9, 10), k, d, p, s))
    covered = ones > 0
    np.testing.assert_allclose(back[covered] / ones[covered], x[covered], rtol=1e-5)


def test_pytorch_documented_fold_shape():
    """F.fold's documented example: (1, 3*2*2, 12) into 4x5 with a 2x2 kernel -> (1, 3, 4, 5)."""
    cols = np.random.default_rng(0).standard_normal((1, 3 * 2 * 2, 12)).astype(np.float32)
    assert gpuops.fold(cols, output_size=(4, 5), kernel_size=(2, 2)).shape == (1, 3, 4, 5)


def test_pytorch_documented_unfold_shape():
    """F.unfold's documented example: (2, 5, 3, 4) with a 2x3 kernel -> (2, 30, 4)."""
    x = np.random.default_rng(0).standard_normal((2, 5, 3, 4)).astype(np.float32)
    assert gpuops.unfold(x, kernel_size=(2, 3)).shape == (2, 30, 4)


@backends
@pytest.mark.parametrize("shape", [(1, 2, 5, 700), (2, 3, 300, 9)], ids=str)
def test_row_kernels_on_wide_and_narrow_rows(shape, xp, rng):
    """Rows longer than a block (threads loop along the row) and rows shorter than a warp."""
    x = rng.standard_normal(shape).astype(np.float32)
    kw = dict(kernel_size=(2, 3), dilation=(1, 2), padding=(1, 2), stride=(1, 3))
    cols = gpuops.unfold(*on(xp, x), **kw)
    np.testing.assert_array_equal(
        host(cols), unfold_ref(x, (2, 3), (1, 2), (1, 2), (1, 3)).astype(np.float32)
    )
    for variant in ("gather", "scatter"):
        got = host(gpuops.fold(cols, shape[-2:], variant=variant, **kw))
        ref = fold_ref(host(cols), shape[-2:], (2, 3), (1, 2), (1, 2), (1, 3))
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
def test_gather_fold_is_deterministic(rng):
    import cupy as cp

    cols = cp.asarray(rng.standard_normal((2, 3 * 9, 30 * 30)).astype(np.float32))
    runs = [gpuops.fold(cols, (32, 32), 3, variant="gather") for _ in range(3)]
    assert all(bool((r == runs[0]).all()) for r in runs)
