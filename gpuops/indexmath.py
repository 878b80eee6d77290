"""NumPy twins of the index arithmetic in kernels/index_math.cuh.

Each function works on Python ints and on integer arrays alike, so the CPU path, the index
maps behind the pictures and the CUDA kernels all use one formula.
"""

from __future__ import annotations

from typing import Any


def window_count(size: int, pad_before: int, pad_after: int, k: int, stride: int, dilation: int) -> int:
    """How many windows fit along one axis: floor((size + pads - dilation*(k-1) - 1)/stride) + 1."""
    return (size + pad_before + pad_after - dilation * (k - 1) - 1) // stride + 1


def reflect_index(i: Any, size: int) -> Any:
    """Reflect coordinate i (at most size-1 outside the image) into [0, size), edge not repeated.

    |i| - |i - (size-1)| - i + (size-1): the abs() form used by PyTorch's CUDA kernel.
    """
    absolute = abs(i)
    return absolute - abs(i - (size - 1)) - i + (size - 1)


def tap_start(k_index: int, dilation: int) -> int:
    """Padded-input offset of tap k: ih + pad = o*stride + k*dilation, so o=0 reads k*dilation."""
    return k_index * dilation


def tap_slice(k_index: int, dilation: int, stride: int, count: int) -> slice:
    """Rows (or columns) of the padded input that tap k reads for outputs 0..count-1."""
    start = tap_start(k_index, dilation)
    return slice(start, start + stride * (count - 1) + 1, stride)
