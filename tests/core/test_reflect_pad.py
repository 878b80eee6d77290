"""reflect_pad on NumPy and on the CUDA kernel (-m gpu): PyTorch's documented examples and
np.pad(mode='reflect')."""

import numpy as np
import pytest

import gpuops
from tests.support.cases import reflect_pad_cases
from tests.support.helpers import BACKENDS, host, on
from tests.support.references import reflect_pad_ref

backends = pytest.mark.parametrize("xp", BACKENDS, indirect=True)


@backends
def test_documented_reflectionpad2d_example_pad_2(xp):
    x = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
    expected = np.array(
        [
            [8, 7, 6, 7, 8, 7, 6],
            [5, 4, 3, 4, 5, 4, 3],
            [2, 1, 0, 1, 2, 1, 0],
            [5, 4, 3, 4, 5, 4, 3],
            [8, 7, 6, 7, 8, 7, 6],
            [5, 4, 3, 4, 5, 4, 3],
            [2, 1, 0, 1, 2, 1, 0],
        ],
        np.float32,
    )
    np.testing.assert_array_equal(host(gpuops.reflect_pad(*on(xp, x), 2))[0, 0], expected)


@backends
def test_documented_reflectionpad2d_example_per_side(xp):
    x = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
    expected = np.array(
        [[7, 6, 7, 8, 7], [4, 3, 4, 5, 4], [1, 0, 1, 2, 1], [4, 3, 4, 5, 4], [7, 6, 7, 8, 7]], np.float32
    )
    np.testing.assert_array_equal(host(gpuops.reflect_pad(*on(xp, x), (1, 1, 2, 0)))[0, 0], expected)


@backends
@pytest.mark.parametrize("shape,pads", reflect_pad_cases(40), ids=str)
def test_reflect_pad_matches_numpy_pad(shape, pads, xp, rng):
    x = rng.standard_normal(shape).astype(np.float32)
    y = gpuops.reflect_pad(*on(xp, x), pads)
    ref = reflect_pad_ref(x, pads)
    assert y.shape == ref.shape
    np.testing.assert_array_equal(host(y), ref.astype(np.float32))


@backends
@pytest.mark.parametrize("shape", [(1, 2, 5, 700), (2, 3, 300, 9)], ids=str)
def test_reflect_pad_on_wide_and_narrow_rows(shape, xp, rng):
    """Rows longer than a block (threads loop along the row) and rows shorter than a warp."""
    x = rng.standard_normal(shape).astype(np.float32)
    np.testing.assert_array_equal(
        host(gpuops.reflect_pad(*on(xp, x), (3, 4, 2, 1))), reflect_pad_ref(x, (3, 4, 2, 1))
    )
