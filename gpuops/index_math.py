"""NumPy twin of kernels/index_math.cuh: each index formula once, in Python.

Every function works on Python ints and on integer arrays alike, so the CPU path, the index
maps behind the pictures and the CUDA kernels all use the same formula; a GPU test runs the
CUDA versions on the same inputs and demands equal results.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

INT32_MAX = 2**31 - 1  # the largest count or index a kernel's 32-bit int (or grid x) holds


def ceil_div(a: int, b: int) -> int:
    """a / b rounded up (blocks of b that cover a items), for non-negative a and positive b."""
    return -(-a // b)


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


def windows_covering(g: Any, ih: int, iw: int) -> list[tuple[int, int, int, int]]:
    """Twin of for_each_window: (ki, kj, oh, ow) of every window position (oh, ow) and tap
    (ki, kj) that reads input cell (ih, iw) of a window geometry g, in the kernels' order."""
    found = []
    for ki in range(g.KH):
        oh = output_coord(ih, g.stride_h, g.pad_top, ki, g.dil_h, g.H_out)
        if oh < 0:
            continue
        for kj in range(g.KW):
            ow = output_coord(iw, g.stride_w, g.pad_left, kj, g.dil_w, g.W_out)
            if ow >= 0:
                found.append((ki, kj, oh, ow))
    return found


def reflect_index(i: Any, size: int) -> Any:
    """Reflect coordinate i (at most size-1 outside the image) into [0, size), edge not repeated.

    |i| - |i - (size-1)| - i + (size-1): the abs() form used by PyTorch's CUDA kernel.
    """
    return abs(i) - abs(i - (size - 1)) - i + (size - 1)


def reflect_copies(i: Any, size: int, pad_before: int, pad_after: int) -> tuple[Any, Any, Any]:
    """Twin of reflect_copies in index_math.cuh: the padded coordinates (numbered like i) that
    copy input coordinate i, as three candidates (i, -i, 2(size-1) - i) and whether each is
    there: i always; -i for 1 <= i <= pad_before; 2(size-1) - i for size-1-pad_after <= i <= size-2.
    Returns (coordinates (3, ...), present (3, ...) bool)."""
    i = np.asarray(i)
    coords = np.stack([i, -i, 2 * (size - 1) - i])
    present = np.stack(
        [
            np.ones_like(i, dtype=bool),
            (i >= 1) & (i <= pad_before),
            (i <= size - 2) & (i >= size - 1 - pad_after),
        ]
    )
    return coords, present


def tap_slice(k: int, dilation: int, stride: int, count: int) -> slice:
    """Rows (or columns) of the PADDED input that tap k reads for outputs 0..count-1.

    In padded coordinates the padding is 0, so output o reads input_coord(o, stride, 0, k, dilation).
    """
    start = input_coord(0, stride, 0, k, dilation)
    return slice(start, input_coord(count - 1, stride, 0, k, dilation) + 1, stride)


def tap_slices(g: Any) -> Iterator[tuple[int, int, slice, slice]]:
    """(ki, kj, rows, cols) for every tap of window geometry g: the rows and columns of the
    PADDED input that tap reads for all outputs at once (the loop of every NumPy twin)."""
    for ki in range(g.KH):
        rows = tap_slice(ki, g.dil_h, g.stride_h, g.H_out)
        for kj in range(g.KW):
            yield ki, kj, rows, tap_slice(kj, g.dil_w, g.stride_w, g.W_out)
