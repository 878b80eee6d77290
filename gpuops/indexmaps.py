"""Index maps behind the pictures, from the same formulas the kernels use.

"Output (i, j) reads these input cells", "column l of X_unroll holds these cells",
"these columns land on pixel (y, x)", "padded cell (i, j) copies input (y, x)".
All are small NumPy arrays, computed without running any kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuops.geometry import WindowGeometry
from gpuops.indexmath import reflect_index, tap_start
from gpuops.reflect import reflect_source_rows


@dataclass(frozen=True)
class ReceptiveField:
    """The KH x KW taps of one output position, in input and padded-input coordinates."""

    rows: np.ndarray  # (KH, KW) input row of each tap: oh*stride - pad + ki*dil (may be outside)
    cols: np.ndarray  # (KH, KW) input column of each tap
    inside: np.ndarray  # (KH, KW) bool: the tap reads a real input cell
    source_rows: np.ndarray  # (KH, KW) the input row actually read (reflected), -1 for a zero
    source_cols: np.ndarray

    @property
    def padded_rows(self) -> np.ndarray:
        """Rows in the padded picture (input row + pad_top)."""
        return self.rows + self._pad[0]

    @property
    def padded_cols(self) -> np.ndarray:
        return self.cols + self._pad[1]

    _pad: tuple[int, int] = (0, 0)


def receptive_field(g: WindowGeometry, oh: int, ow: int, padding_mode: str = "zeros") -> ReceptiveField:
    """Which input cells output (oh, ow) reads (the same for every channel and filter)."""
    if not (0 <= oh < g.H_out and 0 <= ow < g.W_out):
        raise ValueError(f"output position ({oh}, {ow}) is outside the output {g.H_out} x {g.W_out}")
    ki, kj = np.meshgrid(np.arange(g.KH), np.arange(g.KW), indexing="ij")
    rows = oh * g.stride_h - g.pad_top + tap_start(ki, g.dil_h)
    cols = ow * g.stride_w - g.pad_left + tap_start(kj, g.dil_w)
    inside = (rows >= 0) & (rows < g.H) & (cols >= 0) & (cols < g.W)
    if padding_mode == "reflect":
        src_r, src_c = reflect_index(rows, g.H), reflect_index(cols, g.W)
    else:
        src_r, src_c = np.where(inside, rows, -1), np.where(inside, cols, -1)
    return ReceptiveField(rows, cols, inside, src_r, src_c, (g.pad_top, g.pad_left))


def column_of(g: WindowGeometry, oh: int, ow: int) -> int:
    """Column l of X_unroll (and of unfold's output) for output position (oh, ow)."""
    return oh * g.W_out + ow


def position_of(g: WindowGeometry, column: int) -> tuple[int, int]:
    """Output position (oh, ow) of column l."""
    if not 0 <= column < g.L:
        raise ValueError(f"column {column} is outside 0..{g.L - 1}")
    return divmod(column, g.W_out)


def row_labels(C: int, g: WindowGeometry) -> list[tuple[int, int, int]]:
    """(c, ki, kj) of each row of X_unroll: row = (c*KH + ki)*KW + kj."""
    return [(c, ki, kj) for c in range(C) for ki in range(g.KH) for kj in range(g.KW)]


def unfold_source_map(C: int, g: WindowGeometry) -> np.ndarray:
    """(C*KH*KW, L) flat input index (c*H*W + ih*W + iw) of every X_unroll entry, -1 for padding."""
    c, ki, kj, oh, ow = np.meshgrid(
        np.arange(C),
        np.arange(g.KH),
        np.arange(g.KW),
        np.arange(g.H_out),
        np.arange(g.W_out),
        indexing="ij",
    )
    ih = oh * g.stride_h - g.pad_top + ki * g.dil_h
    iw = ow * g.stride_w - g.pad_left + kj * g.dil_w
    inside = (ih >= 0) & (ih < g.H) & (iw >= 0) & (iw < g.W)
    flat = np.where(inside, (c * g.H + ih) * g.W + iw, -1)
    return flat.reshape(C * g.KH * g.KW, g.L)


def fold_contributors(g: WindowGeometry, y: int, x: int) -> list[tuple[int, int, int]]:
    """(ki, kj, column l) of every column entry that fold adds onto pixel (y, x).

    The gather kernel's inversion: oh = (y + pad - ki*dil) / stride when that is exact.
    """
    found = []
    for ki in range(g.KH):
        th = y + g.pad_top - ki * g.dil_h
        if th < 0 or th % g.stride_h or th // g.stride_h >= g.H_out:
            continue
        for kj in range(g.KW):
            tw = x + g.pad_left - kj * g.dil_w
            if tw < 0 or tw % g.stride_w or tw // g.stride_w >= g.W_out:
                continue
            found.append((ki, kj, (th // g.stride_h) * g.W_out + tw // g.stride_w))
    return found


def overlap_count(g: WindowGeometry) -> np.ndarray:
    """(H, W) how many window positions cover each pixel (fold of all-ones columns)."""
    y = np.arange(g.H)[:, None]
    x = np.arange(g.W)[None, :]
    count = np.zeros((g.H, g.W), dtype=np.int64)
    for ki in range(g.KH):
        th = y + g.pad_top - ki * g.dil_h
        ok_h = (th >= 0) & (th % g.stride_h == 0) & (th // g.stride_h < g.H_out)
        for kj in range(g.KW):
            tw = x + g.pad_left - kj * g.dil_w
            ok_w = (tw >= 0) & (tw % g.stride_w == 0) & (tw // g.stride_w < g.W_out)
            count += ok_h & ok_w
    return count


def reflect_source_map(H: int, W: int, pads: tuple[int, int, int, int]) -> tuple[np.ndarray, np.ndarray]:
    """For padding (left, right, top, bottom): (rows, cols) arrays of shape (H_out, W_out)
    giving the input cell each padded cell copies."""
    left, right, top, bottom = pads
    rows = reflect_source_rows(H, top, bottom)
    cols = reflect_source_rows(W, left, right)
    return np.broadcast_to(rows[:, None], (rows.size, cols.size)).copy(), np.broadcast_to(
        cols[None, :], (rows.size, cols.size)
    ).copy()


@dataclass(frozen=True)
class TapProducts:
    """The multiply-adds behind one output value (for the page's products table)."""

    channel: np.ndarray  # (C*KH*KW,) input channel of each term
    ki: np.ndarray
    kj: np.ndarray
    input_row: np.ndarray  # input cell read (-1 where zero padding supplies 0)
    input_col: np.ndarray
    value: np.ndarray
    weight: np.ndarray
    product: np.ndarray

    @property
    def total(self) -> float:
        return float(self.product.astype(np.float64).sum())


def tap_products(x: np.ndarray, w: np.ndarray, rf: ReceptiveField) -> TapProducts:
    """Terms of output = sum over c, ki, kj of x[c, source(ki, kj)] * w[c, ki, kj].

    x: (C, H, W) input of the filter's group; w: (C, KH, KW) one filter.
    """
    C, KH, KW = w.shape
    ok = rf.source_rows >= 0
    vals = np.where(ok[None], x[:, np.maximum(rf.source_rows, 0), np.maximum(rf.source_cols, 0)], 0)
    c, ki, kj = np.meshgrid(np.arange(C), np.arange(KH), np.arange(KW), indexing="ij")
    rows = np.broadcast_to(rf.source_rows, (C, KH, KW))
    cols = np.broadcast_to(rf.source_cols, (C, KH, KW))
    prods = vals.astype(np.float32) * w.astype(np.float32)
    return TapProducts(c.ravel(), ki.ravel(), kj.ravel(), rows.ravel(), cols.ravel(),
                       vals.ravel(), w.ravel(), prods.ravel())  # fmt: skip
