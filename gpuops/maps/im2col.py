"""im2col: which input cells fill column l of X_unroll, and which entries copy one input cell
(the duplication behind the expansion ratio). Row r of X_unroll is (c, ki, kj) with
r = (c*KH + ki)*KW + kj; column l is output position (oh, ow) with l = oh*W_out + ow."""

from __future__ import annotations

import numpy as np

from gpuops.checks import WindowGeometry
from gpuops.index_math import input_coord
from gpuops.maps.conv2d import readers_of


def column_of(g: WindowGeometry, oh: int, ow: int) -> int:
    """Column l of X_unroll (and of unfold's output) for output position (oh, ow)."""
    return oh * g.W_out + ow


def position_of(g: WindowGeometry, column: int) -> tuple[int, int]:
    """Output position (oh, ow) of column l."""
    if not 0 <= column < g.L:
        raise ValueError(f"column {column} is outside 0..{g.L - 1}")
    oh, ow = divmod(column, g.W_out)
    return int(oh), int(ow)


def row_labels(C: int, g: WindowGeometry) -> list[tuple[int, int, int]]:
    """(c, ki, kj) of each row of X_unroll."""
    return [(c, ki, kj) for c in range(C) for ki in range(g.KH) for kj in range(g.KW)]


def source_cells(C: int, g: WindowGeometry) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(channel, row, col), each (C*KH*KW, L): the input cell every X_unroll entry copies,
    -1 in all three where the entry is zero padding."""
    c, ki, kj, oh, ow = np.meshgrid(
        np.arange(C), np.arange(g.KH), np.arange(g.KW), np.arange(g.H_out), np.arange(g.W_out), indexing="ij"
    )
    ih = input_coord(oh, g.stride_h, g.pad_top, ki, g.dil_h)
    iw = input_coord(ow, g.stride_w, g.pad_left, kj, g.dil_w)
    inside = (ih >= 0) & (ih < g.H) & (iw >= 0) & (iw < g.W)
    shape = (C * g.KH * g.KW, g.L)
    return tuple(np.where(inside, a, -1).reshape(shape) for a in (c, ih, iw))  # type: ignore[return-value]


def unfold_source_map(C: int, g: WindowGeometry) -> np.ndarray:
    """(C*KH*KW, L) flat input index (c*H*W + ih*W + iw) of every X_unroll entry, -1 for padding."""
    c, ih, iw = source_cells(C, g)
    return np.where(c >= 0, (c * g.H + ih) * g.W + iw, -1)


def copies_of(C: int, g: WindowGeometry, c: int, ih: int, iw: int) -> np.ndarray:
    """(k, 2) rows (row r, column l): every X_unroll entry that holds a copy of input cell (c, ih, iw).

    Each copy is one output position whose window covers the cell at tap (ki, kj): the
    same outputs and taps as the reverse map of the direct convolution.
    """
    if not 0 <= c < C:
        raise ValueError(f"channel {c} is outside 0..{C - 1}")
    readers = readers_of(g, ih, iw)  # (oh, ow, ki, kj)
    rows = (c * g.KH + readers[:, 2]) * g.KW + readers[:, 3]
    cols = readers[:, 0] * g.W_out + readers[:, 1]
    return np.stack([rows, cols], axis=1).reshape(-1, 2)
