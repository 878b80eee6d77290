"""Filter presets and the checks on hand-edited kernels."""

import numpy as np
import pytest

from gpuops import filters


@pytest.mark.parametrize("name", filters.PRESETS)
def test_presets_have_the_documented_sums(name):
    k = filters.preset_kernel(name, 5)
    expected = {
        "identity": 1,
        "box blur": 1,
        "Gaussian": 1,
        "sharpen": 1,
        "Laplacian edge": 0,
        "Sobel x": 0,
        "Sobel y": 0,
        "emboss": 1,
    }[name]
    assert k.sum() == pytest.approx(expected, abs=1e-6)
    assert k.shape == ((3, 3) if name in filters.FIXED_3X3 else (5, 5))


@pytest.mark.parametrize(
    "cells,message",
    [
        ([[1, np.nan], [0, 1]], r"cell \(row 0, column 1\) is empty"),
        ([[1, 0], [np.inf, 1]], r"cell \(row 1, column 0\) is infinite"),
        ([[1, 0], [0, -np.inf]], r"cell \(row 1, column 1\) is infinite"),
        ([], "must be a non-empty 2-D grid"),
        ([["a", "b"]], "every kernel cell must be a number"),
        (np.ones((16, 16)), "larger than 15 x 15"),
        ([[1e9]], "between -1e6 and 1e6"),
    ],
)
def test_custom_kernel_rejects_bad_cells(cells, message):
    with pytest.raises(ValueError, match=message):
        filters.check_custom_kernel(cells)


def test_custom_kernel_of_the_largest_size_is_accepted():
    k = filters.check_custom_kernel(np.arange(225, dtype=float).reshape(15, 15))
    assert k.dtype == np.float32 and k.shape == (15, 15)


def test_channel_weights_depthwise_and_mixing():
    k = np.arange(9, dtype=np.float32).reshape(3, 3)
    w, groups = filters.channel_weights(k, 3, mix=False)
    assert w.shape == (3, 1, 3, 3) and groups == 3
    w, groups = filters.channel_weights(k, 3, mix=True)
    assert w.shape == (1, 3, 3, 3) and groups == 1
    np.testing.assert_allclose(w.sum(axis=1)[0], k)
