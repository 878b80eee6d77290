"""Direct convolution: which input cells an output reads, which outputs read an input cell,
the products that sum to one output, and where a block's shared-memory tile lies."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuops.checks import WindowGeometry
from gpuops.index_math import input_coord, output_coord, reflect_index
from gpuops.launch import Launch


@dataclass(frozen=True)
class ReceptiveField:
    """The KH x KW taps of one output position, in input coordinates."""

    rows: np.ndarray  # (KH, KW) input row of each tap: may lie in the padding
    cols: np.ndarray  # (KH, KW) input column of each tap
    inside: np.ndarray  # (KH, KW) bool: the tap reads a real input cell
    source_rows: np.ndarray  # (KH, KW) the input row actually read (reflected), -1 for a zero
    source_cols: np.ndarray


def check_output(g: WindowGeometry, oh: int, ow: int) -> None:
    if not (0 <= oh < g.H_out and 0 <= ow < g.W_out):
        raise ValueError(f"output position ({oh}, {ow}) is outside the output {g.H_out} x {g.W_out}")


def receptive_field(g: WindowGeometry, oh: int, ow: int, padding_mode: str = "zeros") -> ReceptiveField:
    """Which input cells output (oh, ow) reads (the same for every channel and filter)."""
    check_output(g, oh, ow)
    ki, kj = np.meshgrid(np.arange(g.KH), np.arange(g.KW), indexing="ij")
    rows = input_coord(oh, g.stride_h, g.pad_top, ki, g.dil_h)
    cols = input_coord(ow, g.stride_w, g.pad_left, kj, g.dil_w)
    inside = (rows >= 0) & (rows < g.H) & (cols >= 0) & (cols < g.W)
    if padding_mode == "reflect":
        src_r, src_c = reflect_index(rows, g.H), reflect_index(cols, g.W)
    else:
        src_r, src_c = np.where(inside, rows, -1), np.where(inside, cols, -1)
    return ReceptiveField(rows, cols, inside, src_r, src_c)


def _mirror_images(i: int, size: int, padding_mode: str) -> list[int]:
    """The virtual (padded) coordinates whose padding rule fetches input coordinate i."""
    if padding_mode != "reflect":
        return [i]
    return sorted({i, -i, 2 * (size - 1) - i})  # itself, its left and its right mirror image


def readers_of(g: WindowGeometry, ih: int, iw: int, padding_mode: str = "zeros") -> np.ndarray:
    """(k, 4) rows (oh, ow, ki, kj): every output and tap that reads input cell (ih, iw).

    The reverse of receptive_field, and what the backward pass sums for grad_input (ih, iw).
    With reflect padding a cell is also read where a tap falls on one of its mirror images.
    """
    if not (0 <= ih < g.H and 0 <= iw < g.W):
        raise ValueError(f"input position ({ih}, {iw}) is outside the input {g.H} x {g.W}")
    found = []
    for vh in _mirror_images(ih, g.H, padding_mode):
        for ki in range(g.KH):
            oh = output_coord(vh, g.stride_h, g.pad_top, ki, g.dil_h, g.H_out)
            if oh < 0:
                continue
            for vw in _mirror_images(iw, g.W, padding_mode):
                for kj in range(g.KW):
                    ow = output_coord(vw, g.stride_w, g.pad_left, kj, g.dil_w, g.W_out)
                    if ow >= 0:
                        found.append((oh, ow, ki, kj))
    return np.array(sorted(set(found)), dtype=np.int64).reshape(-1, 4)


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
    return TapProducts(
        c.ravel(), ki.ravel(), kj.ravel(), rows.ravel(), cols.ravel(), vals.ravel(), w.ravel(), prods.ravel()
    )


def shared_tile(launch: Launch, g: WindowGeometry, oh: int, ow: int) -> tuple[int, int, int, int]:
    """(row0, row1, col0, col1), input coordinates, end exclusive: the input tile with halo that
    the block computing output (oh, ow) copies into shared memory (tiled kernels v2 and v3)."""
    tile_oh, tile_ow = launch.threads.tile_origin(oh, ow)
    r0 = input_coord(tile_oh, g.stride_h, g.pad_top, 0, g.dil_h)
    c0 = input_coord(tile_ow, g.stride_w, g.pad_left, 0, g.dil_w)
    return r0, r0 + launch.arg("in_h"), c0, c0 + launch.arg("in_w")
