"""unfold / fold: the cells of patch l, the patches that cover pixel (y, x), and how many do."""

from __future__ import annotations

import numpy as np

from gpuops.checks import WindowGeometry
from gpuops.index_math import input_coord, output_coord
from gpuops.maps.im2col import position_of


def patch_cells(g: WindowGeometry, l: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols), each (KH, KW): the input cells patch l reads (negative / beyond = padding)."""
    oh, ow = position_of(g, l)
    ki, kj = np.meshgrid(np.arange(g.KH), np.arange(g.KW), indexing="ij")
    return input_coord(oh, g.stride_h, g.pad_top, ki, g.dil_h), input_coord(
        ow, g.stride_w, g.pad_left, kj, g.dil_w
    )


def patch_starts(g: WindowGeometry) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols), each (H_out, W_out): the input cell of every patch's first tap (0, 0)."""
    oh, ow = np.meshgrid(np.arange(g.H_out), np.arange(g.W_out), indexing="ij")
    return input_coord(oh, g.stride_h, g.pad_top, 0, g.dil_h), input_coord(
        ow, g.stride_w, g.pad_left, 0, g.dil_w
    )


def all_patch_cells(g: WindowGeometry) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols), each (L, KH*KW): the taps of every patch, for animations."""
    oh, ow = np.divmod(np.arange(g.L), g.W_out)
    ki, kj = np.divmod(np.arange(g.KH * g.KW), g.KW)
    rows = input_coord(oh[:, None], g.stride_h, g.pad_top, ki[None], g.dil_h)
    cols = input_coord(ow[:, None], g.stride_w, g.pad_left, kj[None], g.dil_w)
    return rows, cols


def patches_covering(g: WindowGeometry, y: int, x: int) -> list[tuple[int, int, int]]:
    """(ki, kj, column l) of every column entry that fold adds onto pixel (y, x).

    The gather kernel's inversion: the output position whose tap ki reads row y is
    output_coord(y, stride, pad, ki, dilation), when that exists.
    """
    if not (0 <= y < g.H and 0 <= x < g.W):
        raise ValueError(f"pixel ({y}, {x}) is outside the image {g.H} x {g.W}")
    found = []
    for ki in range(g.KH):
        oh = output_coord(y, g.stride_h, g.pad_top, ki, g.dil_h, g.H_out)
        if oh < 0:
            continue
        for kj in range(g.KW):
            ow = output_coord(x, g.stride_w, g.pad_left, kj, g.dil_w, g.W_out)
            if ow >= 0:
                found.append((ki, kj, oh * g.W_out + ow))
    return found


def overlap_count(g: WindowGeometry) -> np.ndarray:
    """(H, W) how many window positions cover each pixel (fold of all-ones columns)."""
    y = np.arange(g.H)[:, None]
    x = np.arange(g.W)[None, :]
    count = np.zeros((g.H, g.W), dtype=np.int64)
    for ki in range(g.KH):
        on_rows = output_coord(y, g.stride_h, g.pad_top, ki, g.dil_h, g.H_out) >= 0
        for kj in range(g.KW):
            count += on_rows & (output_coord(x, g.stride_w, g.pad_left, kj, g.dil_w, g.W_out) >= 0)
    return count
