"""conv2d on the NumPy backend against an independent float64 loop reference."""

import numpy as np
import pytest

import gpuops
from tests.cases import case_id, random_conv_cases
from tests.references import conv2d_ref

CASES = random_conv_cases(40)


@pytest.mark.parametrize("algorithm", gpuops.ALGORITHMS)
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_conv2d_matches_loop_reference(case, algorithm, rng):
    x, w, b = case.arrays(rng)
    y = gpuops.conv2d(x, w, b, algorithm=algorithm, **case.kwargs())
    ref = conv2d_ref(x, w, b, **case.kwargs())
    assert y.dtype == np.float32
    assert y.shape == ref.shape
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)


def test_unbatched_input_gives_unbatched_output(rng):
    x = rng.standard_normal((3, 8, 5)).astype(np.float32)
    w = rng.standard_normal((2, 3, 3, 3)).astype(np.float32)
    y = gpuops.conv2d(x, w, padding=1)
    assert y.shape == (2, 8, 5)
    np.testing.assert_allclose(y, conv2d_ref(x[None], w, padding=(1, 1))[0], rtol=1e-4, atol=1e-4)


def test_uint8_image_is_computed_in_float32():
    img = np.arange(3 * 4 * 4, dtype=np.uint8).reshape(1, 3, 4, 4) * 5  # values up to 235
    ones = np.ones((1, 3, 2, 2), dtype=np.float64)
    y = gpuops.conv2d(img, ones)
    assert y.dtype == np.float32
    # each output sums 12 uint8 values: far above 255, so nothing wrapped around
    np.testing.assert_allclose(y, conv2d_ref(img.astype(np.float64), ones), rtol=1e-6)
    assert y.max() == 12 * 142.5


def test_identity_kernel_returns_the_image(rng):
    x = rng.standard_normal((1, 1, 6, 9)).astype(np.float32)
    ident = np.zeros((1, 1, 3, 3), np.float32)
    ident[0, 0, 1, 1] = 1
    for algorithm in gpuops.ALGORITHMS:
        np.testing.assert_array_equal(gpuops.conv2d(x, ident, padding=1, algorithm=algorithm), x)


def test_hand_computed_stride_two_example():
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    w = np.ones((1, 1, 2, 2), np.float32)
    # 2x2 sums of non-overlapping blocks: [[0+1+4+5, 2+3+6+7], [8+9+12+13, 10+11+14+15]]
    expected = np.array([[[[10, 18], [42, 50]]]], np.float32)
    for algorithm in gpuops.ALGORITHMS:
        np.testing.assert_array_equal(gpuops.conv2d(x, w, stride=2, algorithm=algorithm), expected)


def test_pmpp_worked_example():
    """PMPP ch. 16's example: C=3 maps of 3x3, M=2 filters of 2x2 -> 2 outputs of 2x2."""
    x = np.array([[[1, 2, 0], [1, 1, 3], [0, 2, 2]],
                  [[0, 2, 1], [0, 3, 2], [1, 1, 0]],
                  [[1, 2, 1], [0, 1, 3], [3, 3, 2]]], np.float32)  # fmt: skip
    w = np.array([[[[1, 1], [2, 2]], [[1, 1], [1, 1]], [[0, 1], [1, 0]]],
                  [[[1, 0], [0, 1]], [[2, 1], [2, 1]], [[1, 2], [2, 0]]]], np.float32)  # fmt: skip
    # the book's result: filter 0 -> [[14, 20], [15, 24]], filter 1 -> [[12, 24], [17, 26]]
    expected = np.array([[[14, 20], [15, 24]], [[12, 24], [17, 26]]], np.float32)
    for algorithm in gpuops.ALGORITHMS:
        np.testing.assert_array_equal(gpuops.conv2d(x, w, algorithm=algorithm), expected)


def test_auto_on_the_cpu_runs_direct(rng):
    x = rng.standard_normal((1, 2, 9, 8)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    assert gpuops.resolve_algorithm(x, w) == "direct"
    np.testing.assert_array_equal(
        gpuops.conv2d(x, w, algorithm="auto"), gpuops.conv2d(x, w, algorithm="direct")
    )
