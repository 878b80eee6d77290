"""reflect_pad on the NumPy backend: PyTorch's documented examples and np.pad(mode='reflect')."""

import numpy as np
import pytest

import gpuops
from tests.cases import reflect_pad_cases
from tests.references import reflect_pad_ref


def test_documented_reflectionpad2d_example_pad_2():
    x = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
    expected = np.array([[8, 7, 6, 7, 8, 7, 6],
                         [5, 4, 3, 4, 5, 4, 3],
                         [2, 1, 0, 1, 2, 1, 0],
                         [5, 4, 3, 4, 5, 4, 3],
                         [8, 7, 6, 7, 8, 7, 6],
                         [5, 4, 3, 4, 5, 4, 3],
                         [2, 1, 0, 1, 2, 1, 0]], np.float32)  # fmt: skip
    np.testing.assert_array_equal(gpuops.reflect_pad(x, 2)[0, 0], expected)


def test_documented_reflectionpad2d_example_per_side():
    x = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
    expected = np.array([[7, 6, 7, 8, 7],
                         [4, 3, 4, 5, 4],
                         [1, 0, 1, 2, 1],
                         [4, 3, 4, 5, 4],
                         [7, 6, 7, 8, 7]], np.float32)  # fmt: skip
    np.testing.assert_array_equal(gpuops.reflect_pad(x, (1, 1, 2, 0))[0, 0], expected)


@pytest.mark.parametrize("shape,pads", reflect_pad_cases(40), ids=str)
def test_reflect_pad_matches_numpy_pad(shape, pads, rng):
    x = rng.standard_normal(shape).astype(np.float32)
    y = gpuops.reflect_pad(x, pads)
    ref = reflect_pad_ref(x, pads)
    assert y.shape == ref.shape
    np.testing.assert_array_equal(y, ref.astype(np.float32))
