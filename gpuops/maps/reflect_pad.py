"""Reflect padding: which input cell every padded cell copies, and which padded cells copy one."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from gpuops.index_math import reflect_index
from gpuops.launch import Launch
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
    the cell itself included (padded coordinates: the input cell (0, 0) is (top, left)), in
    row-major order. Rows and columns reflect apart, so the copies are every pair of a row copy
    and a column copy (1 to 9 of them): no full map is built, even for a large image."""
    if not (0 <= y < H and 0 <= x < W):
        raise ValueError(f"input cell ({y}, {x}) is outside the input {H} x {W}")
    left, right, top, bottom = pads
    rows, cols = axis_copies(H, top, bottom, y), axis_copies(W, left, right, x)
    return np.stack(np.meshgrid(rows, cols, indexing="ij"), axis=-1).reshape(-1, 2)


def padded_shape(H: int, W: int, pads: tuple[int, int, int, int]) -> tuple[int, int]:
    """(H_out, W_out) of the padded grid."""
    left, right, top, bottom = pads
    return H + top + bottom, W + left + right


@dataclass(frozen=True)
class AxisSource:
    """How padded coordinate `o` finds its source along one axis, term by term, so a page can
    write the kernel's abs() formula with the numbers filled in."""

    o: int  # padded coordinate (0 = the first padded cell)
    pad: int  # the pad before the input (left or top)
    size: int  # the input's width (or height)

    @property
    def i(self) -> int:
        """o - pad: the coordinate in input numbering (negative before the input, >= size after it)."""
        return self.o - self.pad

    @property
    def terms(self) -> tuple[int, int, int, int]:
        """|i|, |i - (size-1)|, -i, size-1: the four terms of reflect_index, summed."""
        i = self.i
        return abs(i), abs(i - (self.size - 1)), -i, self.size - 1

    @property
    def source(self) -> int:
        return int(reflect_index(self.i, self.size))


def axis_source(o: int, size: int, pad_before: int, pad_after: int) -> AxisSource:
    """The formula's terms for padded coordinate o along an axis of `size` input cells."""
    if not 0 <= o < size + pad_before + pad_after:
        raise ValueError(f"padded coordinate {o} is outside 0..{size + pad_before + pad_after - 1}")
    return AxisSource(int(o), int(pad_before), int(size))


def source_of(
    H: int, W: int, pads: tuple[int, int, int, int], oy: int, ox: int
) -> tuple[AxisSource, AxisSource]:
    """(row, column) formula terms for padded cell (oy, ox); .source of each is the input cell."""
    left, right, top, bottom = pads
    return axis_source(oy, H, top, bottom), axis_source(ox, W, left, right)


def axis_copies(size: int, pad_before: int, pad_after: int, i: int) -> np.ndarray:
    """Padded coordinates along one axis whose source is input coordinate i (i itself, shifted
    by the pad, and its mirror images in the pads): 1 to 3 of them."""
    if not 0 <= i < size:
        raise ValueError(f"input coordinate {i} is outside 0..{size - 1}")
    return np.flatnonzero(reflect_source_rows(size, pad_before, pad_after) == i)


def inside(H: int, W: int, pads: tuple[int, int, int, int], oy: int, ox: int) -> tuple[int, int] | None:
    """The input cell a padded cell IS (not a copy of) when it lies in the original region, else None."""
    left, _, top, _ = pads
    y, x = oy - top, ox - left
    return (y, x) if 0 <= y < H and 0 <= x < W else None


@dataclass(frozen=True)
class PixelPick:
    """A picked padded cell, where its value comes from, and every padded cell that holds the same."""

    cell: tuple[int, int]  # padded (row, col)
    source: tuple[int, int]  # the input cell it copies, input coordinates
    source_at: tuple[int, int]  # that input cell in padded coordinates (inside the original region)
    copies: tuple[tuple[int, int], ...]  # padded cells copying the source, the source_at cell included
    is_source: bool  # the picked cell lies in the original region (it is the source itself)


def pick_padded(H: int, W: int, pads: tuple[int, int, int, int], oy: int, ox: int) -> PixelPick:
    """What a click on padded cell (oy, ox) shows: its source and all the source's copies."""
    left, _, top, _ = pads
    row, col = source_of(H, W, pads, oy, ox)
    y, x = row.source, col.source
    copies = tuple((int(r), int(c)) for r, c in copies_of(H, W, pads, y, x))
    return PixelPick(
        (int(oy), int(ox)), (y, x), (y + top, x + left), copies, inside(H, W, pads, oy, ox) is not None
    )


def nearest_cell(row: int, col: int, shape: tuple[int, int]) -> tuple[int, int]:
    """The cell of a grid of `shape` nearest to (row, col): a pick that outlived a smaller grid."""
    return min(max(int(row), 0), shape[0] - 1), min(max(int(col), 0), shape[1] - 1)


@dataclass(frozen=True)
class RowStores:
    """How one output row of the reflect kernel is written (from its Launch's thread map): single
    head cells up to a 16-byte boundary, 4-cell groups (one float4 store each), single tail cells."""

    row: int
    head: int
    groups: int
    tail: int


@functools.lru_cache(maxsize=32)
def row_patterns(launch: Launch) -> tuple[RowStores, ...]:
    """The distinct ways rows 0..3 are written (the pattern repeats every 4 rows: a row starts
    16-byte aligned or 1-3 cells after a boundary), first row of each."""
    seen: dict[tuple[int, int, int], RowStores] = {}
    for row in range(min(4, launch.threads.shape[1])):
        s = row_stores(launch, row)
        seen.setdefault((s.head, s.groups, s.tail), s)
    return tuple(seen.values())


def row_stores(launch: Launch, row: int) -> RowStores:
    """Count the head cells, 4-cell groups and tail cells of padded row `row` of plane 0, by asking
    the launch which thread and which step (phase 0 head, 1 groups, 2 tail) writes each cell."""
    _, _, W_out = launch.threads.shape
    phases = [launch.thread_of(0, row, ox).step[1] for ox in range(W_out)]
    return RowStores(row, phases.count(0), phases.count(1) // 4, phases.count(2))
