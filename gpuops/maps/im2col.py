"""im2col: which input cells fill column l of X_unroll, and which entries copy one input cell
(the duplication behind the expansion ratio). Row r of X_unroll is (c, ki, kj) with
r = (c*KH + ki)*KW + kj; column l is output position (oh, ow) with l = oh*W_out + ow."""

from __future__ import annotations

import numpy as np

from gpuops.checks import WindowGeometry
from gpuops.index_math import input_coord
from gpuops.maps.conv2d import readers_of
from gpuops.maps.limits import largest_dilation, largest_kernel


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


# ---- what the im2col page draws ------------------------------------------------------------------------
def max_kernel(H: int, W: int, pad: int, dil: int) -> int:
    """The largest K whose dilated window fits in both padded sides (gpuops.maps.limits)."""
    return largest_kernel(min(H, W), pad, dil)


def max_dilation(H: int, W: int, pad: int, k: int) -> int | None:
    """The largest dilation a K x K window may have on the padded input (None: any, when K = 1)."""
    return largest_dilation(min(H, W), k, pad)


def input_ids(C: int, g: WindowGeometry) -> np.ndarray:
    """(C, H, W): the id of every input cell, c*H*W + ih*W + iw, as in unfold_source_map."""
    return np.arange(C * g.H * g.W).reshape(C, g.H, g.W)


def padded_ids(C: int, g: WindowGeometry) -> tuple[np.ndarray, int, int]:
    """(ids, row0, col0): the zero-padded planes' cell ids (C, H + pads, W + pads), -1 on the
    padding, and the input coordinates (row0, col0) of their top-left cell (minus the pads)."""
    ids = np.pad(
        input_ids(C, g), ((0, 0), (g.pad_top, g.pad_bottom), (g.pad_left, g.pad_right)), constant_values=-1
    )
    return ids, -g.pad_top, -g.pad_left


def positions(g: WindowGeometry) -> np.ndarray:
    """(L, 2): the output position (oh, ow) of every column l, in column order."""
    return np.array([position_of(g, l) for l in range(g.L)], dtype=np.int64).reshape(-1, 2)


def column_taps(
    C: int, g: WindowGeometry, column: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(channel, row, col, inside), each (C*KH*KW,) in X_unroll's row order: where every entry of
    column l reads, padding cells included (inside False there: the entry is a zero)."""
    oh, ow = position_of(g, column)
    ki, kj = np.meshgrid(np.arange(g.KH), np.arange(g.KW), indexing="ij")
    rows = np.broadcast_to(input_coord(oh, g.stride_h, g.pad_top, ki, g.dil_h), (C, g.KH, g.KW)).ravel()
    cols = np.broadcast_to(input_coord(ow, g.stride_w, g.pad_left, kj, g.dil_w), (C, g.KH, g.KW)).ravel()
    channel = np.repeat(np.arange(C), g.KH * g.KW)
    inside = (rows >= 0) & (rows < g.H) & (cols >= 0) & (cols < g.W)
    return channel, rows, cols, inside


def copy_counts(C: int, g: WindowGeometry) -> np.ndarray:
    """(C, H, W): how many entries of X_unroll copy each input cell."""
    src = unfold_source_map(C, g)
    return np.bincount(src[src >= 0], minlength=C * g.H * g.W).reshape(C, g.H, g.W)


def columns_reading(C: int, g: WindowGeometry, c: int, ih: int, iw: int) -> np.ndarray:
    """The columns l (sorted, unique) whose window holds input cell (c, ih, iw): the outputs it feeds."""
    return np.unique(copies_of(C, g, c, ih, iw)[:, 1])
