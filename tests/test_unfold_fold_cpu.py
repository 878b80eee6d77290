"""unfold / fold on the NumPy backend against loop and np.add.at references."""

import numpy as np
import pytest

import gpuops
from tests.cases import case_id, random_conv_cases
from tests.references import fold_ref, unfold_ref

CASES = [c for c in random_conv_cases(40, seed=7) if c.padding_mode == "zeros"]


def _geom(case):
    return dict(kernel_size=(case.kh, case.kw), dilation=case.dilation, padding=case.padding,
                stride=case.stride)  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_unfold_matches_loop_reference(case, rng):
    x, _, _ = case.arrays(rng)
    cols = gpuops.unfold(x, **_geom(case))
    ref = unfold_ref(x, (case.kh, case.kw), case.dilation, case.padding, case.stride)
    assert cols.shape == ref.shape
    np.testing.assert_array_equal(cols, ref.astype(np.float32))


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_fold_matches_add_at_reference(case, rng):
    g = gpuops.window_geometry(case.H, case.W, (case.kh, case.kw), case.stride, case.padding, case.dilation)
    cols = rng.standard_normal((case.N, case.C * case.kh * case.kw, g.L)).astype(np.float32)
    y = gpuops.fold(cols, (case.H, case.W), **_geom(case))
    ref = fold_ref(cols, (case.H, case.W), (case.kh, case.kw), case.dilation, case.padding, case.stride)
    assert y.shape == ref.shape
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)


def test_unbatched_unfold_and_fold_shapes(rng):
    x = rng.standard_normal((2, 5, 7)).astype(np.float32)
    cols = gpuops.unfold(x, (2, 3))
    assert cols.shape == (2 * 2 * 3, 4 * 5)
    assert gpuops.fold(cols, (5, 7), (2, 3)).shape == (2, 5, 7)


def test_fold_of_unfold_divided_by_counts_is_identity(rng):
    """The page's claim: fold(unfold(x)) / overlap count == x (where every pixel is covered)."""
    x = rng.standard_normal((1, 2, 9, 10)).astype(np.float32)
    k, s, p, d = (3, 2), (1, 2), (1, 0), (2, 1)
    back = gpuops.fold(gpuops.unfold(x, k, d, p, s), (9, 10), k, d, p, s)
    ones = gpuops.fold(gpuops.unfold(np.ones_like(x), k, d, p, s), (9, 10), k, d, p, s)
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
