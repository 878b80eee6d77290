"""Reflect padding: which input cell every padded cell copies, and which padded cells copy one."""

from __future__ import annotations

import numpy as np

from gpuops.reflect_pad import reflect_source_rows


def source_map(H: int, W: int, pads: tuple[int, int, int, int]) -> tuple[np.ndarray, np.ndarray]:
    """For padding (left, right, top, bottom): (rows, cols), each (H_out, W_out), the input cell
    each padded cell copies (the kernel's reflect_index, row and column apart)."""
    left, right, top, bottom = pads
    rows = reflect_source_rows(H, top, bottom)
    cols = reflect_source_rows(W, left, right)
    shape = (rows.size, cols.size)
    return np.broadcast_to(rows[:, None], shape).copy(), np.broadcast_to(cols[None, :], shape).copy()


def copies_of(H: int, W: int, pads: tuple[int, int, int, int], y: int, x: int) -> np.ndarray:
    """(k, 2) rows (padded row, padded col): every padded cell that copies input cell (y, x),
    the cell itself included (padded coordinates: the input cell (0, 0) is (top, left))."""
    if not (0 <= y < H and 0 <= x < W):
        raise ValueError(f"input cell ({y}, {x}) is outside the input {H} x {W}")
    rows, cols = source_map(H, W, pads)
    return np.argwhere((rows == y) & (cols == x))
