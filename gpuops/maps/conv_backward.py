"""The backward pass and the transposed convolution: which output gradients flow into an input
cell (and which flipped weights they meet), where a transposed convolution stamps the kernel for
an input cell, how many stamps overlap on each output cell (the checkerboard), and how many
padded cells send their gradient to each input cell of a reflect pad."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuops.checks import WindowGeometry
from gpuops.conv_backward import TransposeGeometry
from gpuops.index_math import input_coord, output_coord
from gpuops.maps.conv2d import readers_of
from gpuops.reflect_pad import reflect_source_rows


@dataclass(frozen=True)
class GradientSources:
    """The output gradients that flow into one input cell, one row per (output, tap)."""

    outputs: np.ndarray  # (k, 2) (oh, ow): the output gradient dy[oh, ow]
    taps: np.ndarray  # (k, 2) (ki, kj): the weight w[ki, kj] it meets (the forward tap that read the cell)
    flipped: np.ndarray  # (k, 2) (KH-1-ki, KW-1-kj): the same weight in the flipped filter

    def __len__(self) -> int:
        return len(self.outputs)


def gradient_sources(g: WindowGeometry, ih: int, iw: int, padding_mode: str = "zeros") -> GradientSources:
    """dx[ih, iw] = sum over these rows of dy[oh, ow] * w[ki, kj] (per channel pair): every output
    whose window read the cell (readers_of: mirror images too in reflect mode). Seen from the
    input cell, the taps run backwards, which is the flipped filter of PMPP fig. 16.9."""
    readers = readers_of(g, ih, iw, padding_mode)
    taps = readers[:, 2:4]
    flipped = np.stack([g.KH - 1 - taps[:, 0], g.KW - 1 - taps[:, 1]], axis=1).reshape(-1, 2)
    return GradientSources(readers[:, 0:2], taps, flipped)


@dataclass(frozen=True)
class GradientTerms:
    """The products that sum to one input gradient dx[c, ih, iw] (for the page's table)."""

    filter: np.ndarray  # (k,) m
    oh: np.ndarray
    ow: np.ndarray
    ki: np.ndarray
    kj: np.ndarray
    grad: np.ndarray  # dy[m, oh, ow]
    weight: np.ndarray  # w[m, c within the group, ki, kj]
    product: np.ndarray

    @property
    def total(self) -> float:
        return float(self.product.astype(np.float64).sum())


def gradient_terms(
    dy: np.ndarray,
    w: np.ndarray,
    g: WindowGeometry,
    c: int,
    ih: int,
    iw: int,
    groups: int = 1,
    padding_mode: str = "zeros",
) -> GradientTerms:
    """dy (M, H_out, W_out) of one sample, w (M, C/groups, KH, KW): every term of dx[c, ih, iw]."""
    M, Cg = w.shape[:2]
    if not 0 <= c < Cg * groups:
        raise ValueError(f"channel {c} is outside 0..{Cg * groups - 1}")
    group, cg = divmod(c, Cg)
    filters = np.arange(group * (M // groups), (group + 1) * (M // groups))
    src = gradient_sources(g, ih, iw, padding_mode)
    m = np.repeat(filters, len(src))
    oh, ow = np.tile(src.outputs[:, 0], filters.size), np.tile(src.outputs[:, 1], filters.size)
    ki, kj = np.tile(src.taps[:, 0], filters.size), np.tile(src.taps[:, 1], filters.size)
    grad = dy[m, oh, ow].astype(np.float32)
    weight = w[m, cg, ki, kj].astype(np.float32)
    return GradientTerms(m, oh, ow, ki, kj, grad, weight, grad * weight)


def _check_input_cell(tg: TransposeGeometry, i: int, j: int) -> None:
    if not (0 <= i < tg.H_in and 0 <= j < tg.W_in):
        raise ValueError(f"input cell ({i}, {j}) is outside the input {tg.H_in} x {tg.W_in}")


def stamp_positions(tg: TransposeGeometry, i: int, j: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, cols, inside), each (KH, KW): where input cell (i, j) of a transposed convolution
    stamps tap (ki, kj) of its filters on the output: input_coord(i, stride, padding, ki, dilation),
    the forward formula read backwards. Stamps of neighbouring cells are `stride` apart; cells
    of the stamp outside the output (inside False) are cut off by padding."""
    _check_input_cell(tg, i, j)
    g = tg.forward
    ki, kj = np.meshgrid(np.arange(g.KH), np.arange(g.KW), indexing="ij")
    rows = input_coord(i, g.stride_h, g.pad_top, ki, g.dil_h)
    cols = input_coord(j, g.stride_w, g.pad_left, kj, g.dil_w)
    inside = (rows >= 0) & (rows < g.H) & (cols >= 0) & (cols < g.W)
    return rows, cols, inside


def all_stamps(tg: TransposeGeometry) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols), each (H_in*W_in, KH*KW): the stamp of every input cell in row-major order
    (the frames of the page's animation; cells outside the output included, as in stamp_positions)."""
    g = tg.forward
    i, j = np.divmod(np.arange(tg.H_in * tg.W_in), tg.W_in)
    ki, kj = np.divmod(np.arange(g.KH * g.KW), g.KW)
    rows = input_coord(i[:, None], g.stride_h, g.pad_top, ki[None], g.dil_h)
    cols = input_coord(j[:, None], g.stride_w, g.pad_left, kj[None], g.dil_w)
    return rows, cols


def _axis_count(out_size: int, in_size: int, k: int, stride: int, pad: int, dilation: int) -> np.ndarray:
    o = np.arange(out_size)
    return sum((output_coord(o, stride, pad, t, dilation, in_size) >= 0).astype(np.int64) for t in range(k))


def overlap_count(tg: TransposeGeometry) -> np.ndarray:
    """(H_out, W_out): how many stamps (input cell, tap) land on each output cell, i.e. the
    transposed convolution of an all-ones input with an all-ones 1-channel kernel. Along an
    axis a cell gets one stamp per tap ki with an input i solving o = i*stride - pad + ki*dilation;
    when the kernel size is not a multiple of the stride, neighbouring cells get different
    counts: the checkerboard of strided transposed convolutions."""
    g = tg.forward
    rows = _axis_count(g.H, tg.H_in, g.KH, g.stride_h, g.pad_top, g.dil_h)
    cols = _axis_count(g.W, tg.W_in, g.KW, g.stride_w, g.pad_left, g.dil_w)
    return rows[:, None] * cols[None, :]


def reflect_backward_count(H: int, W: int, pads: tuple[int, int, int, int]) -> np.ndarray:
    """(H, W): how many padded cells copy each input cell, so how many gradients its backward
    pass adds up (1 inside, up to 3 x 3 near a corner): the padded cells per axis that
    reflect_index sends to it, row count times column count."""
    left, right, top, bottom = pads
    rows = np.bincount(reflect_source_rows(H, top, bottom), minlength=H)
    cols = np.bincount(reflect_source_rows(W, left, right), minlength=W)
    return rows[:, None] * cols[None, :]
