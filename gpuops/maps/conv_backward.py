"""The backward pass and the transposed convolution: which output gradients flow into an input
cell (and which flipped weights they meet), where a transposed convolution stamps the kernel for
an input cell, how many stamps overlap on each output cell (the checkerboard), and how many
padded cells send their gradient to each input cell of a reflect pad."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuops.checks import WindowGeometry
from gpuops.conv_backward import TransposeGeometry, transpose_geometry
from gpuops.index_math import input_coord, output_coord, reflect_index
from gpuops.maps.conv2d import readers_of, receptive_field
from gpuops.maps.limits import largest_dilation as largest_dilation  # the page's slider ranges
from gpuops.maps.limits import largest_kernel as largest_kernel
from gpuops.maps.reflect_pad import copies_of as reflect_copies_of
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


# ---- the page's settings: ranges that follow the geometry ------------------------------------------------
def largest_padding(k: int, dilation: int, cap: int) -> int:
    """Padding beyond the window's reach minus one (dilation*(k-1)) would add windows that read
    padding only; the page stops there (and at cap)."""
    return max(0, min(cap, dilation * (k - 1)))


def clamp_cell(row: int, col: int, shape: tuple[int, int]) -> tuple[int, int]:
    """The cell of a grid of `shape` nearest to (row, col): a pick kept when the grid shrinks."""
    return min(max(int(row), 0), shape[0] - 1), min(max(int(col), 0), shape[1] - 1)


# ---- dE/dX seen from an output gradient: the scatter view ------------------------------------------------
def scatter_targets(g: WindowGeometry, oh: int, ow: int) -> np.ndarray:
    """(k, 4) rows (ih, iw, ki, kj): the input cells output gradient dy[oh, ow] is added into
    (times w[ki, kj]): the cells its forward window read, padding left out. One thread of the
    scatter kernel (grad_input_v1) does exactly these atomicAdds."""
    rf = receptive_field(g, oh, ow)
    ki, kj = np.nonzero(rf.inside)
    return np.stack([rf.rows[ki, kj], rf.cols[ki, kj], ki, kj], axis=1).astype(np.int64).reshape(-1, 4)


@dataclass(frozen=True)
class ScatterTerms:
    """What one output gradient adds into the input cells (one channel, one filter)."""

    targets: np.ndarray  # (k, 4) (ih, iw, ki, kj)
    grad: float  # dy[oh, ow]
    weight: np.ndarray  # (k,) w[ki, kj]
    product: np.ndarray  # (k,) dy * w[ki, kj]: added onto dx[ih, iw]


def scatter_terms(dy: np.ndarray, w: np.ndarray, g: WindowGeometry, oh: int, ow: int) -> ScatterTerms:
    """dy (H_out, W_out), w (KH, KW) of one channel and filter: the additions dy[oh, ow] makes."""
    targets = scatter_targets(g, oh, ow)
    grad = np.float32(dy[oh, ow])
    weight = w[targets[:, 2], targets[:, 3]].astype(np.float32)
    return ScatterTerms(targets, float(grad), weight, grad * weight)


# ---- the transposed convolution is the backward pass ------------------------------------------------------
def output_padding(g: WindowGeometry) -> tuple[int, int]:
    """(rows, cols) of the padded input that lie past the last window's last tap: the forward
    convolution never reads them (the floor in its output size), so a transposed convolution
    from the output's size comes back that many rows / columns short. It is the
    output_padding that conv_transpose2d needs to give back the input's size exactly."""
    Hp, Wp = g.padded_hw
    last_row = input_coord(g.H_out - 1, g.stride_h, 0, g.KH - 1, g.dil_h)  # padded coordinates
    last_col = input_coord(g.W_out - 1, g.stride_w, 0, g.KW - 1, g.dil_w)
    return int(Hp - 1 - last_row), int(Wp - 1 - last_col)


def transposed_of(g: WindowGeometry) -> TransposeGeometry:
    """The transposed convolution that takes the forward output's shape back to the input's:
    same kernel, stride, padding and dilation, with output_padding(g)."""
    return transpose_geometry(
        g.H_out,
        g.W_out,
        (g.KH, g.KW),
        (g.stride_h, g.stride_w),
        (g.pad_top, g.pad_left),
        output_padding(g),
        (g.dil_h, g.dil_w),
    )


def stamp_canvas(tg: TransposeGeometry) -> tuple[int, int, int, int]:
    """(top, bottom, left, right), inclusive, in output coordinates: the cells the stamps reach
    together with the output itself. Cells outside 0..H_out-1 are what `padding` crops off."""
    rows, cols = all_stamps(tg)
    return (
        int(min(0, rows.min())),
        int(max(tg.H_out - 1, rows.max())),
        int(min(0, cols.min())),
        int(max(tg.W_out - 1, cols.max())),
    )


@dataclass(frozen=True)
class StampFrames:
    """The transposed convolution stamp by stamp, on the canvas of stamp_canvas."""

    canvas: tuple[int, int, int, int]  # (top, bottom, left, right), output coordinates
    sums: np.ndarray  # (n + 1, canvas rows, canvas cols): the canvas before any stamp, then after each
    stamps: np.ndarray  # (n, KH, KW): x[i, j] * w, the stamp input cell (i, j) of frame k lays down
    rows: np.ndarray  # (n, KH*KW) output row of each tap of each stamp
    cols: np.ndarray  # (n, KH*KW)
    output_shape: tuple[int, int]  # (H_out, W_out)

    def cropped(self, frame: int = -1) -> np.ndarray:
        """A frame cut to the output (the last one: conv_transpose2d(x, w))."""
        top, _, left, _ = self.canvas
        h, w = self.output_shape
        return self.sums[frame, -top : -top + h, -left : -left + w]


def stamp_frames(tg: TransposeGeometry, x: np.ndarray, w: np.ndarray) -> StampFrames:
    """x (H_in, W_in) the transposed convolution's input, w (KH, KW) one filter: input cells in
    row-major order each add x[i, j] * w at their stamp positions; the canvas after each one."""
    top, bottom, left, right = stamp_canvas(tg)
    rows, cols = all_stamps(tg)
    n = rows.shape[0]
    stamps = x.reshape(n, 1, 1).astype(np.float32) * w[None].astype(np.float32)
    sums = np.zeros((n + 1, bottom - top + 1, right - left + 1), dtype=np.float32)
    canvas = sums[0].copy()
    for k in range(n):
        np.add.at(canvas, (rows[k] - top, cols[k] - left), stamps[k].ravel())
        sums[k + 1] = canvas
    return StampFrames((top, bottom, left, right), sums, stamps, rows, cols, (tg.H_out, tg.W_out))


def axis_overlap(tg: TransposeGeometry) -> tuple[np.ndarray, np.ndarray]:
    """(per row, per column): how many stamps land on each output row and column (the overlap
    count map is their outer product)."""
    g = tg.forward
    return (
        _axis_count(g.H, tg.H_in, g.KH, g.stride_h, g.pad_top, g.dil_h),
        _axis_count(g.W, tg.W_in, g.KW, g.stride_w, g.pad_left, g.dil_w),
    )


def stamps_per_phase(k: int, stride: int, dilation: int) -> np.ndarray:
    """(stride,) how many of a k-tap stamp's taps land on a canvas cell far from the border, by
    the cell's position modulo the stride: tap t lands there when the division in output_coord is
    exact. Unequal counts are the checkerboard; they are equal when the taps spread evenly over
    the stride's phases (k a multiple of the stride, with dilation 1)."""
    far = stride * dilation * k  # a canvas coordinate past every tap's reach, phase 0
    o = far + np.arange(stride)
    return sum((output_coord(o, stride, 0, t, dilation, 2 * far) >= 0).astype(np.int64) for t in range(k))


# ---- dE/dW: which input cells and output gradients one weight sums over -----------------------------------
def weight_pairs(g: WindowGeometry, ki: int, kj: int) -> np.ndarray:
    """(k, 4) rows (oh, ow, ih, iw): every output whose tap (ki, kj) read a real input cell, and
    that cell; dW[ki, kj] = sum over the rows of dy[oh, ow] * x[ih, iw] (PMPP fig. 16.11)."""
    if not (0 <= ki < g.KH and 0 <= kj < g.KW):
        raise ValueError(f"tap ({ki}, {kj}) is outside the {g.KH} x {g.KW} kernel")
    oh, ow = np.arange(g.H_out), np.arange(g.W_out)
    ih = input_coord(oh, g.stride_h, g.pad_top, ki, g.dil_h)
    iw = input_coord(ow, g.stride_w, g.pad_left, kj, g.dil_w)
    r, c = (ih >= 0) & (ih < g.H), (iw >= 0) & (iw < g.W)
    OH, OW = np.meshgrid(oh[r], ow[c], indexing="ij")
    IH, IW = np.meshgrid(ih[r], iw[c], indexing="ij")
    return np.stack([OH.ravel(), OW.ravel(), IH.ravel(), IW.ravel()], axis=1).astype(np.int64)


@dataclass(frozen=True)
class WeightTerms:
    """The products that sum to one weight gradient dW[ki, kj] (one channel, one filter)."""

    pairs: np.ndarray  # (k, 4) (oh, ow, ih, iw)
    grad: np.ndarray  # dy[oh, ow]
    value: np.ndarray  # x[ih, iw]
    product: np.ndarray

    @property
    def total(self) -> float:
        return float(self.product.astype(np.float64).sum())


def weight_terms(dy: np.ndarray, x: np.ndarray, g: WindowGeometry, ki: int, kj: int) -> WeightTerms:
    """dy (H_out, W_out), x (H, W): every term of dW[ki, kj]."""
    pairs = weight_pairs(g, ki, kj)
    grad = dy[pairs[:, 0], pairs[:, 1]].astype(np.float32)
    value = x[pairs[:, 2], pairs[:, 3]].astype(np.float32)
    return WeightTerms(pairs, grad, value, grad * value)


# ---- reflect-pad backward: where each padded cell's gradient goes ---------------------------------------
def padded_shape(H: int, W: int, pads: tuple[int, int, int, int]) -> tuple[int, int]:
    """(rows, cols) of an H x W grid padded by (left, right, top, bottom)."""
    left, right, top, bottom = pads
    return H + top + bottom, W + left + right


def reflect_receiver(H: int, W: int, pads: tuple[int, int, int, int], oy: int, ox: int) -> tuple[int, int]:
    """The input cell that padded cell (oy, ox) (padded coordinates) copied, so the cell its
    gradient is added to."""
    left, right, top, bottom = pads
    if not (0 <= oy < H + top + bottom and 0 <= ox < W + left + right):
        raise ValueError(
            f"padded cell ({oy}, {ox}) is outside the padded {H + top + bottom} x {W + left + right}"
        )
    return int(reflect_index(oy - top, H)), int(reflect_index(ox - left, W))


@dataclass(frozen=True)
class ReflectTerms:
    """The padded cells whose gradients one input cell sums, and their values."""

    cells: np.ndarray  # (k, 2) padded coordinates
    grad: np.ndarray  # (k,) dy at those cells

    @property
    def total(self) -> float:
        return float(self.grad.astype(np.float64).sum())


def reflect_terms(dy: np.ndarray, pads: tuple[int, int, int, int], y: int, x: int) -> ReflectTerms:
    """dy (H_out, W_out), the gradient of the padded grid: the terms of dx[y, x]."""
    left, right, top, bottom = pads
    H, W = dy.shape[0] - top - bottom, dy.shape[1] - left - right
    cells = reflect_copies_of(H, W, pads, y, x)
    return ReflectTerms(cells, dy[cells[:, 0], cells[:, 1]].astype(np.float32))


# ---- the page's example: a crop of the user's image where it has detail, the flipped kernel ---------------
@dataclass(frozen=True)
class Crop:
    """An h x w crop of an image plane: its values and where it lies (inclusive bounds)."""

    values: np.ndarray
    top: int
    left: int

    @property
    def bottom(self) -> int:
        return self.top + self.values.shape[0] - 1

    @property
    def right(self) -> int:
        return self.left + self.values.shape[1] - 1


def detail_crop(plane: np.ndarray, h: int, w: int) -> Crop:
    """The h x w window of `plane` with the most edges (sum of absolute differences between
    neighbours): a crop that is not flat (the whole plane when it is smaller)."""
    H, W = plane.shape
    h, w = min(h, H), min(w, W)
    edges = np.abs(np.diff(plane, axis=0, prepend=plane[:1])) + np.abs(
        np.diff(plane, axis=1, prepend=plane[:, :1])
    )
    integral = np.pad(edges.astype(np.float64).cumsum(0).cumsum(1), ((1, 0), (1, 0)))
    sums = integral[h:, w:] - integral[:-h, w:] - integral[h:, :-w] + integral[:-h, :-w]
    top, left = (int(v) for v in np.unravel_index(int(np.argmax(sums)), sums.shape))
    return Crop(plane[top : top + h, left : left + w], top, left)


def flipped(w: np.ndarray) -> np.ndarray:
    """The kernel rotated by 180 degrees: flipped[a, b] = w[KH-1-a, KW-1-b] (the taps that
    gradient_sources calls `flipped`)."""
    return np.ascontiguousarray(w[::-1, ::-1])
