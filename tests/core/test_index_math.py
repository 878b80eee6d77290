"""The NumPy twin of kernels/index_math.cuh, on examples and (-m gpu) against the CUDA functions."""

import numpy as np
import pytest

from gpuops.index_math import input_coord, output_coord, reflect_index, tap_slice, window_count


def test_reflect_index_formula_examples():
    # i = -1 -> 1, -2 -> 2, size -> size-2, interior unchanged
    assert [int(reflect_index(i, 4)) for i in (-3, -2, -1, 0, 3, 4, 5, 6)] == [3, 2, 1, 0, 3, 2, 1, 0]


def test_output_coord_inverts_input_coord():
    for stride, pad, dil, count in [(1, 0, 1, 7), (2, 1, 1, 5), (3, 2, 2, 4)]:
        for k in range(3):
            for o in range(count):
                assert output_coord(input_coord(o, stride, pad, k, dil), stride, pad, k, dil, count) == o
        hits = [output_coord(i, stride, pad, 0, dil, count) for i in range(-3, 20)]
        assert all(
            h == -1 or input_coord(h, stride, pad, 0, dil) == i
            for i, h in zip(range(-3, 20), hits, strict=True)
        )


def test_tap_slice_reads_the_padded_rows_of_input_coord():
    s = tap_slice(2, 3, 2, 4)  # tap 2, dilation 3, stride 2, 4 outputs
    assert list(range(100)[s]) == [input_coord(o, 2, 0, 2, 3) for o in range(4)]


def test_window_count_is_pytorchs_formula():
    assert window_count(7, 1, 1, 3, 2, 1) == 4 and window_count(5, 0, 0, 5, 1, 1) == 1


CUDA_PROBE = r"""
#include "index_math.cuh"
extern "C" __global__ void probe(const int* a, int n, int* out) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    const int i = a[5 * t], s = a[5 * t + 1], p = a[5 * t + 2], k = a[5 * t + 3], d = a[5 * t + 4];
    out[4 * t + 0] = input_coord(i, s, p, k, d);
    out[4 * t + 1] = output_coord(i, s, p, k, d, 9);
    out[4 * t + 2] = reflect_index(i, s + 7);
    out[4 * t + 3] = window_count(i + 20, p, p, k + 1, s, d);
}
"""


@pytest.mark.gpu
def test_cuda_functions_equal_their_numpy_twins(rng):
    import cupy as cp

    from gpuops.launch import KERNEL_DIR

    n = 5000
    a = np.stack(
        [
            rng.integers(-6, 14, n),
            rng.integers(1, 5, n),
            rng.integers(0, 4, n),
            rng.integers(0, 4, n),
            rng.integers(1, 4, n),
        ],
        axis=1,
    ).astype(np.int32)
    out = cp.zeros((n, 4), cp.int32)
    probe = cp.RawModule(code=CUDA_PROBE, options=("-std=c++17", f"-I{KERNEL_DIR}")).get_function("probe")
    probe(((n + 127) // 128,), (128,), (cp.asarray(a), np.int32(n), out))
    i, s, p, k, d = a.T
    expected = np.stack(
        [
            input_coord(i, s, p, k, d),
            [output_coord(*r, 9) for r in zip(i, s, p, k, d, strict=True)],
            reflect_index(i, s + 7),
            [window_count(*r) for r in zip(i + 20, p, p, k + 1, s, d, strict=True)],
        ],
        axis=1,
    )
    np.testing.assert_array_equal(out.get(), expected)
