"""unfold / fold: the cells of patch l, the patches that cover pixel (y, x), and how many do."""

from __future__ import annotations

import numpy as np

from gpuops.checks import WindowGeometry
from gpuops.index_math import ceil_div, input_coord, output_coord, windows_covering
from gpuops.maps.im2col import column_of as im2col_column_of
from gpuops.maps.im2col import copies_of, position_of, row_labels
from gpuops.maps.limits import largest_dilation as largest_dilation  # the page's slider ranges
from gpuops.maps.limits import largest_kernel as largest_kernel


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
    return [(ki, kj, oh * g.W_out + ow) for ki, kj, oh, ow in windows_covering(g, y, x)]


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


# ---- what the Unfold / Fold page draws: patches, pixels, regions and columns around a pick ----------
def extent(g: WindowGeometry) -> tuple[int, int]:
    """(rows, cols) one patch spans from its first tap to its last: dilation*(K-1) + 1."""
    return input_coord(0, 1, 0, g.KH - 1, g.dil_h) + 1, input_coord(0, 1, 0, g.KW - 1, g.dil_w) + 1


def column_of(g: WindowGeometry, oh: int, ow: int) -> int:
    """Column l of the unfold matrix that holds patch (oh, ow) (row-major over patch positions)."""
    return im2col_column_of(g, oh, ow)


def clamp_patch(g: WindowGeometry, oh: int, ow: int) -> tuple[int, int]:
    """The nearest patch position that exists in this geometry."""
    return min(max(int(oh), 0), g.H_out - 1), min(max(int(ow), 0), g.W_out - 1)


def clamp_pixel(g: WindowGeometry, y: int, x: int) -> tuple[int, int]:
    """The nearest pixel of the image (a click on a padding cell picks the edge pixel next to it)."""
    return min(max(int(y), 0), g.H - 1), min(max(int(x), 0), g.W - 1)


def _nearest(i: int, stride: int, pad: int, k: int, dil: int, count: int) -> int:
    centre0 = input_coord(0, stride, pad, (k - 1) / 2, dil)  # centre of the first window
    return min(max(round((i - centre0) / stride), 0), count - 1)


def nearest_patch(g: WindowGeometry, y: int, x: int) -> tuple[int, int]:
    """The patch (oh, ow) whose centre lies nearest to cell (y, x) (what a click on the image picks)."""
    return (
        _nearest(y, g.stride_h, g.pad_top, g.KH, g.dil_h, g.H_out),
        _nearest(x, g.stride_w, g.pad_left, g.KW, g.dil_w, g.W_out),
    )


def patch_centre(g: WindowGeometry, oh: int, ow: int) -> tuple[int, int]:
    """The image pixel at (or, for a patch centred in the padding, nearest to) patch (oh, ow)'s middle tap."""
    y = input_coord(oh, g.stride_h, g.pad_top, g.KH // 2, g.dil_h)
    x = input_coord(ow, g.stride_w, g.pad_left, g.KW // 2, g.dil_w)
    return clamp_pixel(g, y, x)


def patch_box(g: WindowGeometry, oh: int, ow: int) -> tuple[int, int, int, int]:
    """(top, bottom, left, right), inclusive: the cells from patch (oh, ow)'s first tap to its last."""
    return (
        input_coord(oh, g.stride_h, g.pad_top, 0, g.dil_h),
        input_coord(oh, g.stride_h, g.pad_top, g.KH - 1, g.dil_h),
        input_coord(ow, g.stride_w, g.pad_left, 0, g.dil_w),
        input_coord(ow, g.stride_w, g.pad_left, g.KW - 1, g.dil_w),
    )


def covering_columns(g: WindowGeometry, y: int, x: int) -> list[int]:
    """The columns l (patches) that hold a copy of pixel (y, x), ascending: fold adds this many values
    onto it (its overlap count)."""
    return sorted({l for _, _, l in patches_covering(g, y, x)})


def covering_box(g: WindowGeometry, y: int, x: int) -> tuple[int, int, int, int]:
    """(top, bottom, left, right): the cells spanned by all patches that cover pixel (y, x) (the pixel
    itself when none does)."""
    boxes = [patch_box(g, *position_of(g, l)) for l in covering_columns(g, y, x)]
    if not boxes:
        return y, y, x, x
    return (
        min(b[0] for b in boxes),
        max(b[1] for b in boxes),
        min(b[2] for b in boxes),
        max(b[3] for b in boxes),
    )


def _span(lo: int, hi: int, side: int, floor: int, ceil: int) -> tuple[int, int]:
    size = min(max(hi - lo + 1, side), ceil - floor + 1)
    start = (lo + hi + 1) // 2 - size // 2
    start = min(max(start, floor), ceil - size + 1)
    return start, start + size - 1


def region_around(
    g: WindowGeometry, box: tuple[int, int, int, int], side: int, *, padded: bool = True
) -> tuple[int, int, int, int]:
    """(top, bottom, left, right), inclusive: at least `side` cells a side (as far as the image
    allows), holding `box` and centred on it, inside the padded image (padded=True) or the image."""
    top, bottom, left, right = box
    pt, pb, pl, pr = (g.pad_top, g.pad_bottom, g.pad_left, g.pad_right) if padded else (0, 0, 0, 0)
    r0, r1 = _span(top, bottom, side, -pt, g.H - 1 + pb)
    c0, c1 = _span(left, right, side, -pl, g.W - 1 + pr)
    return r0, r1, c0, c1


def region_values(
    planes: np.ndarray, g: WindowGeometry, region: tuple[int, int, int, int]
) -> tuple[np.ndarray, np.ndarray]:
    """(values (C, h, w), inside (h, w)): the cells of a region of the padded image, zero where it is
    padding."""
    r0, r1, c0, c1 = region
    C = planes.shape[0]
    values = np.zeros((C, r1 - r0 + 1, c1 - c0 + 1), dtype=np.float32)
    inside = np.zeros(values.shape[1:], dtype=bool)
    y0, y1, x0, x1 = max(r0, 0), min(r1, g.H - 1), max(c0, 0), min(c1, g.W - 1)
    if y0 <= y1 and x0 <= x1:
        values[:, y0 - r0 : y1 - r0 + 1, x0 - c0 : x1 - c0 + 1] = planes[:, y0 : y1 + 1, x0 : x1 + 1]
        inside[y0 - r0 : y1 - r0 + 1, x0 - c0 : x1 - c0 + 1] = True
    return values, inside


def column_window(g: WindowGeometry, l: int, width: int) -> np.ndarray:
    """`width` consecutive columns around column l (fewer when the matrix is narrower)."""
    width = min(width, g.L)
    start = min(max(l - width // 2, 0), g.L - width)
    return np.arange(start, start + width)


def patch_taps(g: WindowGeometry, columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols), each (n, KH*KW): the cells read by the patches of the given columns, in tap order."""
    oh, ow = np.divmod(np.asarray(columns, dtype=np.int64), g.W_out)
    ki, kj = np.divmod(np.arange(g.KH * g.KW), g.KW)
    rows = input_coord(oh[:, None], g.stride_h, g.pad_top, ki[None], g.dil_h)
    cols = input_coord(ow[:, None], g.stride_w, g.pad_left, kj[None], g.dil_w)
    return rows, cols


def column_values(planes: np.ndarray, g: WindowGeometry, columns: np.ndarray) -> np.ndarray:
    """(C*KH*KW, n): the given columns of unfold(planes), gathered with the kernel's index formula
    (for a window of a matrix too large to keep)."""
    rows, cols = patch_taps(g, columns)  # (n, KK)
    inside = (rows >= 0) & (rows < g.H) & (cols >= 0) & (cols < g.W)
    picked = planes[:, np.clip(rows, 0, g.H - 1), np.clip(cols, 0, g.W - 1)] * inside  # (C, n, KK)
    return np.ascontiguousarray(picked.transpose(0, 2, 1).reshape(-1, len(rows)), dtype=np.float32)


def entries_copying(C: int, g: WindowGeometry, y: int, x: int) -> np.ndarray:
    """(k, 2) rows (r, l): every unfold-matrix entry that holds a copy of pixel (y, x), in any channel."""
    return np.concatenate([copies_of(C, g, c, y, x) for c in range(C)]).reshape(-1, 2)


def patch_block(
    g: WindowGeometry, oh: int, ow: int, side: int, most: int, *, tiled: bool = False
) -> tuple[int, int, int, int]:
    """(oh0, oh1, ow0, ow1), inclusive: a block of patch positions holding (oh, ow) whose cells fit
    in `side` cells a side (at least the one patch, at most `most` patches a side): centred on it,
    or (tiled) the tile of a fixed tiling of the patch grid that holds it, so that picks close to
    each other share one block."""
    eh, ew = extent(g)
    out = []
    for o, e, s, count in ((oh, eh, g.stride_h, g.H_out), (ow, ew, g.stride_w, g.W_out)):
        n = min(max((side - e) // s + 1, 1), most, count)
        start = (o // n) * n if tiled else o - (n - 1) // 2
        start = min(max(start, 0), count - n)
        out += [start, start + n - 1]
    return out[0], out[1], out[2], out[3]


def block_columns(g: WindowGeometry, block: tuple[int, int, int, int]) -> np.ndarray:
    """The columns l of a block of patch positions, row by row."""
    oh0, oh1, ow0, ow1 = block
    oh, ow = np.meshgrid(np.arange(oh0, oh1 + 1), np.arange(ow0, ow1 + 1), indexing="ij")
    return (oh * g.W_out + ow).ravel()


def block_region(g: WindowGeometry, block: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
    """(top, bottom, left, right): the cells the patches of a block span."""
    oh0, oh1, ow0, ow1 = block
    return (
        patch_box(g, oh0, ow0)[0],
        patch_box(g, oh1, ow1)[1],
        patch_box(g, oh0, ow0)[2],
        patch_box(g, oh1, ow1)[3],
    )


def matrix_shape(C: int, g: WindowGeometry) -> tuple[int, int]:
    """(rows, columns) of unfold's output for C channels: (C*KH*KW, L)."""
    return C * g.KH * g.KW, g.L


def row_names(C: int, g: WindowGeometry) -> list[str]:
    """The label "(c, ki, kj)" of every row of the unfold matrix."""
    return [f"({c}, {ki}, {kj})" for c, ki, kj in row_labels(C, g)]


def tap_names(g: WindowGeometry) -> list[str]:
    """The label "(ki, kj)" of every tap, in the order of a column's rows."""
    return [f"({ki}, {kj})" for ki in range(g.KH) for kj in range(g.KW)]


def patch_of_column(g: WindowGeometry, l: int) -> tuple[int, int]:
    """Patch (oh, ow) of column l, for any l (a click just past either end picks the end column)."""
    return position_of(g, min(max(int(l), 0), g.L - 1))


def in_window(entries: np.ndarray, window: np.ndarray) -> list[tuple[int, int]]:
    """(row, position in window) of the entries (row, column l) whose column is in the window."""
    where = {int(l): i for i, l in enumerate(window)}
    return [(int(r), where[int(l)]) for r, l in entries if int(l) in where]


def window_sources(
    C: int, g: WindowGeometry, window: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(channel, row, col), each (C*KH*KW, n): the pixel every entry of the window's columns copies,
    -1 in all three for a padding entry."""
    rows, cols = patch_taps(g, window)  # (n, KK)
    inside = (rows >= 0) & (rows < g.H) & (cols >= 0) & (cols < g.W)
    kk = g.KH * g.KW
    ch = np.repeat(np.arange(C), kk)[:, None] * np.ones((1, len(window)), dtype=np.int64)
    r = np.tile(np.where(inside, rows, -1).T, (C, 1))
    c = np.tile(np.where(inside, cols, -1).T, (C, 1))
    return np.where(r >= 0, ch, -1), r, c


def inside(g: WindowGeometry, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """True where (row, col) is a pixel of the image, False where it is padding."""
    return (rows >= 0) & (rows < g.H) & (cols >= 0) & (cols < g.W)


def starts_in(
    g: WindowGeometry, region: tuple[int, int, int, int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, cols, column l) of the patches whose first tap lies in the region: the patch grid there."""
    top, bottom, left, right = region
    first = [
        (max(ceil_div(lo + p, s), 0), min((hi + p) // s, count - 1))
        for lo, hi, p, s, count in (
            (top, bottom, g.pad_top, g.stride_h, g.H_out),
            (left, right, g.pad_left, g.stride_w, g.W_out),
        )
    ]
    oh, ow = np.meshgrid(
        np.arange(first[0][0], first[0][1] + 1), np.arange(first[1][0], first[1][1] + 1), indexing="ij"
    )
    rows = input_coord(oh, g.stride_h, g.pad_top, 0, g.dil_h).ravel()
    cols = input_coord(ow, g.stride_w, g.pad_left, 0, g.dil_w).ravel()
    return rows, cols, (oh * g.W_out + ow).ravel()


def copies_in_window(
    C: int, g: WindowGeometry, window: np.ndarray, region: tuple[int, int, int, int]
) -> dict[tuple[int, int], list[tuple[int, int]]]:
    """{pixel (y, x) of the region: [(row, position in window), ...]}: the window's entries that copy
    each pixel (the reverse of window_sources)."""
    top, bottom, left, right = region
    ch, ys, xs = window_sources(C, g, window)
    hit = (ch >= 0) & (ys >= top) & (ys <= bottom) & (xs >= left) & (xs <= right)
    found: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for r, pos in zip(*np.nonzero(hit), strict=True):
        found.setdefault((int(ys[r, pos]), int(xs[r, pos])), []).append((int(r), int(pos)))
    return found
