"""Pooling: the window of an output, the outputs that read an input cell, and where a max sends
its gradient, from the formulas the kernels use (gpuops.pool, gpuops.index_math)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuops.index_math import input_coord, output_coord
from gpuops.pool import PoolGeometry


@dataclass(frozen=True)
class Tap:
    """One tap of a pooling window: its place in the window and the input cell it lands on
    (which may be padding: inside False)."""

    ki: int
    kj: int
    ih: int
    iw: int
    inside: bool


def _check_output(g: PoolGeometry, oh: int, ow: int) -> None:
    if not (0 <= oh < g.H_out and 0 <= ow < g.W_out):
        raise ValueError(f"output cell ({oh}, {ow}) is outside the pooled output {g.H_out} x {g.W_out}")


def _check_input(g: PoolGeometry, ih: int, iw: int) -> None:
    H, W = g.in_hw
    if not (0 <= ih < H and 0 <= iw < W):
        raise ValueError(f"input cell ({ih}, {iw}) is outside the input {H} x {W}")


def window_taps(g: PoolGeometry, oh: int, ow: int) -> list[Tap]:
    """The KH x KW taps of output (oh, ow)'s window in the kernels' scan order (row by row)."""
    _check_output(g, oh, ow)
    w = g.window
    taps = []
    for ki in range(w.KH):
        ih = int(input_coord(oh, w.stride_h, w.pad_top, ki, w.dil_h))
        for kj in range(w.KW):
            iw = int(input_coord(ow, w.stride_w, w.pad_left, kj, w.dil_w))
            taps.append(Tap(ki, kj, ih, iw, 0 <= ih < w.H and 0 <= iw < w.W))
    return taps


def outputs_reading(g: PoolGeometry, ih: int, iw: int) -> list[tuple[int, int]]:
    """Every output whose window covers input cell (ih, iw), in the gather kernels' order
    (for_each_window: tap row, then tap column)."""
    _check_input(g, ih, iw)
    w = g.window
    found = []
    for ki in range(w.KH):
        oh = output_coord(ih, w.stride_h, w.pad_top, ki, w.dil_h, g.H_out)
        if oh < 0:
            continue
        for kj in range(w.KW):
            ow = output_coord(iw, w.stride_w, w.pad_left, kj, w.dil_w, g.W_out)
            if ow >= 0:
                found.append((int(oh), int(ow)))
    return found


def winner(indices: np.ndarray, W: int, oh: int, ow: int) -> tuple[int, int]:
    """The input cell (ih, iw) whose value output (oh, ow) of one plane took (max_pool2d's index)."""
    return divmod(int(indices[oh, ow]), W)


def routes_to(g: PoolGeometry, indices: np.ndarray, ih: int, iw: int) -> list[tuple[int, int]]:
    """The outputs of one plane whose gradient the max sends to input cell (ih, iw): those of
    outputs_reading whose winner it is (what the gather kernel sums)."""
    _check_input(g, ih, iw)
    me = ih * g.window.W + iw
    return [(oh, ow) for oh, ow in outputs_reading(g, ih, iw) if int(indices[oh, ow]) == me]


def wins_per_cell(g: PoolGeometry, indices: np.ndarray) -> np.ndarray:
    """(H, W) int: how many outputs of one plane each input cell won (0: it gets no gradient)."""
    H, W = g.in_hw
    return np.bincount(np.asarray(indices).ravel(), minlength=H * W).reshape(H, W)


def coverage(g: PoolGeometry) -> np.ndarray:
    """(H, W) int: how many windows cover each input cell (pooling without overlap: 0 or 1)."""
    H, W = g.in_hw
    return np.array([[len(outputs_reading(g, ih, iw)) for iw in range(W)] for ih in range(H)], dtype=int)


def padding_extent(g: PoolGeometry) -> tuple[int, int, int, int]:
    """(top, bottom, left, right): how far windows reach outside the input, the padding and the
    cells past it that a ceil_mode window may cover (neither ever counts as a value)."""
    w = g.window
    reach_h = int(input_coord(g.H_out - 1, w.stride_h, w.pad_top, w.KH - 1, w.dil_h)) - (w.H - 1)
    reach_w = int(input_coord(g.W_out - 1, w.stride_w, w.pad_left, w.KW - 1, w.dil_w)) - (w.W - 1)
    return w.pad_top, max(w.pad_bottom, reach_h), w.pad_left, max(w.pad_right, reach_w)


def window_values(g: PoolGeometry, x: np.ndarray, oh: int, ow: int) -> list[float]:
    """The values of one plane x that output (oh, ow)'s window reads, in scan order (padding left out)."""
    return [float(x[t.ih, t.iw]) for t in window_taps(g, oh, ow) if t.inside]


def ties_with_winner(g: PoolGeometry, x: np.ndarray, indices: np.ndarray, oh: int, ow: int) -> int:
    """How many cells of output (oh, ow)'s window hold its winner's value (1: no tie)."""
    r, c = winner(indices, g.window.W, oh, ow)
    return sum(1 for v in window_values(g, x, oh, ow) if v == x[r, c])
