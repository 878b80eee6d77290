"""NumPy twin of kernels/index_math.cuh: each index formula once, in Python.

Every function works on Python ints and on integer arrays alike, so the CPU path, the index
maps behind the pictures and the CUDA kernels all use the same formula; a GPU test runs the
CUDA versions on the same inputs and demands equal results.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def window_count(size: int, pad_before: int, pad_after: int, k: int, stride: int, dilation: int) -> int:
    """How many windows fit along one axis: floor((size + pads - dilation*(k-1) - 1)/stride) + 1."""
    return (size + pad_before + pad_after - dilation * (k - 1) - 1) // stride + 1


def input_coord(o: Any, stride: int, pad: int, k: Any, dilation: int) -> Any:
    """The input coordinate output o reads at tap k: o*stride - pad + k*dilation (may be padding)."""
    return o * stride - pad + k * dilation


def output_coord(i: Any, stride: int, pad: int, k: Any, dilation: int, count: int) -> Any:
    """The output o whose tap k reads input coordinate i, or -1 if there is none.

    Solves i = o*stride - pad + k*dilation: only when the division is exact and 0 <= o < count.
    """
    t = np.asarray(i + pad - k * dilation)
    o = np.floor_divide(t, stride)
    found = np.where((t >= 0) & (t % stride == 0) & (o < count), o, -1)
    return int(found) if found.ndim == 0 else found


def reflect_index(i: Any, size: int) -> Any:
    """Reflect coordinate i (at most size-1 outside the image) into [0, size), edge not repeated.

    |i| - |i - (size-1)| - i + (size-1): the abs() form used by PyTorch's CUDA kernel.
    """
    return abs(i) - abs(i - (size - 1)) - i + (size - 1)


def tap_slice(k: int, dilation: int, stride: int, count: int) -> slice:
    """Rows (or columns) of the PADDED input that tap k reads for outputs 0..count-1.

    In padded coordinates the padding is 0, so output o reads input_coord(o, stride, 0, k, dilation).
    """
    start = input_coord(0, stride, 0, k, dilation)
    return slice(start, input_coord(count - 1, stride, 0, k, dilation) + 1, stride)
