"""Direct convolution: which input cells an output reads, which outputs read an input cell,
the products that sum to one output, and where a block's shared-memory tile lies."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuops.checks import WindowGeometry
from gpuops.index_math import ceil_div, input_coord, output_coord, reflect_index
from gpuops.launch import Launch, ThreadRef
from gpuops.maps.limits import largest_dilation, largest_kernel


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


# ---- what the Direct page needs to draw a pick ---------------------------------------------------------
def detail_pixel(plane: np.ndarray, window: int = 9) -> tuple[int, int]:
    """(row, col) of an input cell where the image has detail: the centre of the window x window
    square with the most edge strength (sum of |horizontal| + |vertical| differences). A pick in
    a flat region (every value the same) teaches nothing."""
    plane = np.asarray(plane, dtype=np.float32)
    H, W = plane.shape
    h, w = min(window, H), min(window, W)
    edges = np.zeros((H, W), dtype=np.float64)
    edges[1:, :] += np.abs(np.diff(plane, axis=0))
    edges[:, 1:] += np.abs(np.diff(plane, axis=1))
    integral = np.pad(edges.cumsum(0).cumsum(1), ((1, 0), (1, 0)))
    sums = integral[h:, w:] - integral[:-h, w:] - integral[h:, :-w] + integral[:-h, :-w]
    if not np.any(sums > 0):  # a flat image: its centre
        return (H - 1) // 2, (W - 1) // 2
    r, c = np.unravel_index(int(np.argmax(sums)), sums.shape)
    return int(r) + (h - 1) // 2, int(c) + (w - 1) // 2


def output_near(g: WindowGeometry, ih: int, iw: int) -> tuple[int, int]:
    """The output whose window is centred nearest to input cell (ih, iw) (clamped to the output)."""

    def nearest(i: int, stride: int, pad: int, k: int, dil: int, count: int) -> int:
        # window centre of output o: input_coord(o, stride, pad, (k-1)/2, dil); solve for o, round
        o = round((i - input_coord(0, stride, pad, (k - 1) / 2, dil)) / stride)
        return int(min(max(o, 0), count - 1))

    return (
        nearest(ih, g.stride_h, g.pad_top, g.KH, g.dil_h, g.H_out),
        nearest(iw, g.stride_w, g.pad_left, g.KW, g.dil_w, g.W_out),
    )


def output_for_input(g: WindowGeometry, ih: int, iw: int, padding_mode: str = "zeros") -> tuple[int, int]:
    """The output to explain when input cell (ih, iw) is picked: of the outputs that read it, the
    one whose tap on it is nearest the kernel's centre (for stride 1: the output centred on the
    cell); when no output reads it (a stride skips it), the output centred nearest to it."""
    readers = readers_of(g, ih, iw, padding_mode)
    if len(readers) == 0:
        return output_near(g, ih, iw)
    off = np.abs(readers[:, 2] - (g.KH - 1) / 2) + np.abs(readers[:, 3] - (g.KW - 1) / 2)
    oh, ow = readers[int(np.argmin(off)), :2]
    return int(oh), int(ow)


def clamp_cell(space: str, row: int, col: int, g: WindowGeometry) -> tuple[int, int]:
    """A picked cell moved inside its space ("out": the output, "in": the input)."""
    rows, cols = (g.H_out, g.W_out) if space == "out" else (g.H, g.W)
    return min(max(int(row), 0), rows - 1), min(max(int(col), 0), cols - 1)


@dataclass(frozen=True)
class SettingLimits:
    """The ranges of the Direct page's sliders for an H x W input, so no slider can ask for a
    window that does not fit: D*(K-1) + 1 <= side + 2P, and reflect padding P < side."""

    k_hi: int
    pad_lo: int
    pad_hi: int
    dil_hi: int


def setting_limits(
    H: int,
    W: int,
    k: int,
    pad: int,
    dil: int,
    padding_mode: str,
    *,
    max_k: int = 15,
    max_pad: int = 15,
    max_dil: int = 5,
) -> SettingLimits:
    """Each setting's range given the others (the page clamps pad, then dilation, then K)."""
    side = min(H, W)
    pad_hi = max_pad if padding_mode != "reflect" else max(0, min(max_pad, side - 1))
    dil_hi = largest_dilation(side, k, pad, max_dil)
    k_hi = largest_kernel(side, pad, dil, max_k)
    pad_lo = max(0, ceil_div(dil * (k - 1) + 1 - side, 2))
    return SettingLimits(k_hi, min(pad_lo, pad_hi), pad_hi, dil_hi)


def fit_settings(
    H: int,
    W: int,
    k: int,
    pad: int,
    dil: int,
    padding_mode: str,
    *,
    k_fixed: bool = False,
    max_k: int = 15,
    max_pad: int = 15,
    max_dil: int = 5,
) -> tuple[int, int, int]:
    """(k, pad, dil) moved the least so the window fits: padding into its range first, then the
    dilation lowered, then K (unless the kernel is fixed, e.g. a 3 x 3 Sobel), and last the
    padding raised (a fixed kernel on a tiny image)."""
    lim = setting_limits(H, W, k, pad, dil, padding_mode, max_k=max_k, max_pad=max_pad, max_dil=max_dil)
    pad = min(max(pad, 0), lim.pad_hi)
    lim = setting_limits(H, W, k, pad, dil, padding_mode, max_k=max_k, max_pad=max_pad, max_dil=max_dil)
    dil = min(max(dil, 1), lim.dil_hi)
    if not k_fixed:
        lim = setting_limits(H, W, k, pad, dil, padding_mode, max_k=max_k, max_pad=max_pad, max_dil=max_dil)
        k = min(max(k, 1), lim.k_hi)
    lim = setting_limits(H, W, k, pad, dil, padding_mode, max_k=max_k, max_pad=max_pad, max_dil=max_dil)
    return k, max(pad, lim.pad_lo), dil


@dataclass(frozen=True)
class PaddedWindow:
    """Rows r0..r1-1 and columns c0..c1-1 (input coordinates; negative or >= H/W = padding) of the
    input as the kernel sees it: padding filled with zeros or mirrored cells."""

    rows: np.ndarray  # (h,) input row of each window row
    cols: np.ndarray  # (w,)
    values: np.ndarray  # (h, w); NaN beyond the padded input
    inside: np.ndarray  # (h, w) bool: a real input cell
    source_rows: np.ndarray  # (h, w) the input row a padding cell copies (reflect), -1 for zeros/outside
    source_cols: np.ndarray


def padded_window(
    plane: np.ndarray, g: WindowGeometry, padding_mode: str, r0: int, r1: int, c0: int, c1: int
) -> PaddedWindow:
    """A window of the padded plane, computed for its cells only (no full padded copy)."""
    rows, cols = np.arange(r0, r1), np.arange(c0, c1)
    rr, cc = np.meshgrid(rows, cols, indexing="ij")
    in_extent = (
        (rr >= -g.pad_top) & (rr < g.H + g.pad_bottom) & (cc >= -g.pad_left) & (cc < g.W + g.pad_right)
    )
    inside = (rr >= 0) & (rr < g.H) & (cc >= 0) & (cc < g.W)
    if padding_mode == "reflect":
        src_r = np.where(in_extent, reflect_index(np.clip(rr, -(g.H - 1), 2 * (g.H - 1)), g.H), -1)
        src_c = np.where(in_extent, reflect_index(np.clip(cc, -(g.W - 1), 2 * (g.W - 1)), g.W), -1)
    else:
        src_r, src_c = np.where(inside, rr, -1), np.where(inside, cc, -1)
    ok = src_r >= 0
    values = np.where(ok, plane[np.maximum(src_r, 0), np.maximum(src_c, 0)], 0.0).astype(np.float64)
    values[~in_extent] = np.nan
    return PaddedWindow(rows, cols, values, inside, src_r, src_c)


def around(rows: np.ndarray, cols: np.ndarray, g: WindowGeometry, margin: int) -> tuple[int, int, int, int]:
    """(r0, r1, c0, c1), end exclusive: the cells given plus a margin, kept inside the padded input."""
    r0 = max(int(np.min(rows)) - margin, -g.pad_top)
    r1 = min(int(np.max(rows)) + margin + 1, g.H + g.pad_bottom)
    c0 = max(int(np.min(cols)) - margin, -g.pad_left)
    c1 = min(int(np.max(cols)) + margin + 1, g.W + g.pad_right)
    return r0, r1, c0, c1


@dataclass(frozen=True)
class Crop:
    """Outputs out_r0..out_r1-1 x out_c0..out_c1-1 and the input cells they read (padding
    included): the region the sliding-window animation shows."""

    out_r0: int
    out_r1: int
    out_c0: int
    out_c1: int
    in_r0: int
    in_r1: int
    in_c0: int
    in_c1: int

    @property
    def outputs(self) -> tuple[np.ndarray, np.ndarray]:
        """(oh, ow) of every output of the crop in raster order (the order the window visits)."""
        oh, ow = np.meshgrid(
            np.arange(self.out_r0, self.out_r1), np.arange(self.out_c0, self.out_c1), indexing="ij"
        )
        return oh.ravel(), ow.ravel()

    def index_of(self, oh: int, ow: int) -> int:
        """Position of output (oh, ow) in the raster order of `outputs`."""
        if not (self.out_r0 <= oh < self.out_r1 and self.out_c0 <= ow < self.out_c1):
            raise ValueError(f"output ({oh}, {ow}) is outside the crop")
        return (oh - self.out_r0) * (self.out_c1 - self.out_c0) + (ow - self.out_c0)


def _crop_axis(
    o: int, count: int, stride: int, span: int, max_outputs: int, max_cells: int
) -> tuple[int, int]:
    """How many outputs along one axis fit in max_cells input cells (at least min(4, count))."""
    n = (max_cells - span) // stride + 1
    n = max(min(4, count), min(n, max_outputs, count))
    start = min(max(o - n // 2, 0), count - n)  # the pick near the middle, the crop inside the output
    return start, start + n


# the animation's limits: outputs a side, input cells a side, dilated taps outlined in all frames
CROP_OUTPUTS, CROP_CELLS, CROP_TAP_OUTLINES = 16, 40, 6000


def animation_crop(g: WindowGeometry, oh: int, ow: int) -> Crop:
    """A region of outputs around (oh, ow) for the sliding-window animation: at most CROP_OUTPUTS a
    side, fewer when the windows they read would exceed CROP_CELLS input cells a side (a large or
    dilated kernel, a large stride), and fewer when dilated taps (drawn one by one, in every frame)
    would exceed CROP_TAP_OUTLINES in all. However large the window, the crop keeps a few outputs
    and grows its input region to hold them: the geometry changes the crop, never the lesson."""
    check_output(g, oh, ow)
    max_outputs = CROP_OUTPUTS
    if g.dil_h > 1 or g.dil_w > 1:  # dilated taps are drawn one by one: fewer frames for many taps
        max_outputs = max(2, min(max_outputs, int((CROP_TAP_OUTLINES / (g.KH * g.KW)) ** 0.5)))
    span_h, span_w = g.dil_h * (g.KH - 1) + 1, g.dil_w * (g.KW - 1) + 1
    r0, r1 = _crop_axis(oh, g.H_out, g.stride_h, span_h, max_outputs, CROP_CELLS)
    c0, c1 = _crop_axis(ow, g.W_out, g.stride_w, span_w, max_outputs, CROP_CELLS)
    return Crop(
        r0,
        r1,
        c0,
        c1,
        input_coord(r0, g.stride_h, g.pad_top, 0, g.dil_h),
        input_coord(r1 - 1, g.stride_h, g.pad_top, g.KH - 1, g.dil_h) + 1,
        input_coord(c0, g.stride_w, g.pad_left, 0, g.dil_w),
        input_coord(c1 - 1, g.stride_w, g.pad_left, g.KW - 1, g.dil_w) + 1,
    )


def receptive_fields(g: WindowGeometry, oh: np.ndarray, ow: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols), each (n, KH, KW): the taps of n outputs at once (padding coordinates kept)."""
    ki, kj = np.meshgrid(np.arange(g.KH), np.arange(g.KW), indexing="ij")
    oh, ow = np.asarray(oh)[:, None, None], np.asarray(ow)[:, None, None]
    rows = input_coord(oh, g.stride_h, g.pad_top, ki[None], g.dil_h)
    cols = input_coord(ow, g.stride_w, g.pad_left, kj[None], g.dil_w)
    return np.broadcast_to(rows, (oh.shape[0], g.KH, g.KW)), np.broadcast_to(cols, (oh.shape[0], g.KH, g.KW))


# ---- which block and thread computed an output, for every launch pattern ---------------------------------
@dataclass(frozen=True)
class ThreadWork:
    """What the thread that computed output (oh, ow) of filter m computes, and what its block
    computes, as output pixels of sample 0 (rows (oh, ow)); from the Launch's own thread map."""

    block: tuple[int, int, int]
    thread: tuple[int, int, int]
    thread_pixels: np.ndarray  # (k, 2) output pixels this thread computes (inside the output)
    block_pixels: np.ndarray  # (k, 2) output pixels its block computes
    block_filters: range = range(0)  # filters the block computes
    thread_filters: tuple[int, ...] = ()  # filters this thread computes (for each of its pixels)
    tile: tuple[int, int] | None = None  # the block's output tile (rows, columns), for tiled kernels
    note: str = ""  # what the pixels are when the kernel does not write y itself (im2col's unfold)


def _inside(pixels: np.ndarray, g: WindowGeometry) -> np.ndarray:
    pixels = np.asarray(pixels, dtype=np.int64).reshape(-1, 2)
    keep = (pixels[:, 0] >= 0) & (pixels[:, 0] < g.H_out) & (pixels[:, 1] >= 0) & (pixels[:, 1] < g.W_out)
    return pixels[keep]


def computed_by(
    launch: Launch, g: WindowGeometry, oh: int, ow: int, m: int = 0, *, channel: int = 0, C: int = 1
) -> ThreadWork:
    """The block and thread of `launch` that compute output (oh, ow) of filter m (sample 0), and
    the pixels and filters they compute. For im2col's unfold (which writes X_unroll, not y):
    the thread that copies tap (0, 0) of input channel `channel` (of C) into the pick's column."""
    from gpuops.conv2d import GemmMap, PixelRowMap, TileMap
    from gpuops.launch import RowMap
    from gpuops.maps.im2col import column_of, row_labels

    check_output(g, oh, ow)
    threads = launch.threads
    if isinstance(threads, RowMap):  # im2col: unfold copies tap (0, 0) of channel c into column l of X_unroll
        row, l = row_labels(C, g).index((channel, 0, 0)), column_of(g, oh, ow)
        ref = launch.thread_of(0, row, l)
        by = launch.block[1]
        cand = np.array(
            [(r, c) for r in range(max(0, oh - by), min(g.H_out, oh + by + 1)) for c in range(g.W_out)]
        )
        refs = [launch.thread_of(0, row, column_of(g, int(r), int(c))) for r, c in cand]
        same_block = np.array([x.block == ref.block and x.step[:1] == ref.step[:1] for x in refs])
        same_thread = np.array(
            [x.block == ref.block and x.thread == ref.thread and x.step[:1] == ref.step[:1] for x in refs]
        )
        note = f"the cells of X_unroll row {row} (channel {channel}, tap (0, 0)) for these output pixels"
        return ThreadWork(
            ref.block, ref.thread, thread_pixels=cand[same_thread], block_pixels=cand[same_block], note=note
        )
    ref = launch.thread_of(0, m, oh, ow)
    M = launch.arg("M")
    if isinstance(threads, PixelRowMap):
        L, first = g.L, ref.block[0] * threads.pixels
        p = np.arange(first, min(first + threads.pixels, L))
        block_pixels = np.stack([p // g.W_out, p % g.W_out], axis=1)
        start = ref.block[1] * threads.filters
        filters = range(start, min(start + threads.filters, M))
        return ThreadWork(
            ref.block,
            ref.thread,
            thread_pixels=np.array([[oh, ow]]),
            block_pixels=block_pixels,
            block_filters=filters,
            thread_filters=(m,),
        )
    if isinstance(threads, TileMap):
        th, tw = threads.tile
        r0, c0 = threads.tile_origin(oh, ow)
        rr, cc = np.meshgrid(np.arange(r0, r0 + th), np.arange(c0, c0 + tw), indexing="ij")
        block_pixels = _inside(np.stack([rr.ravel(), cc.ravel()], axis=1), g)
        filters = threads.filters_of_block(ref.block[1])
        mine = _inside(threads.pixels_of_thread(oh, ow), g)
        return ThreadWork(
            ref.block,
            ref.thread,
            thread_pixels=mine,
            block_pixels=block_pixels,
            block_filters=filters,
            thread_filters=tuple(filters),
            tile=(th, tw),
        )
    if isinstance(threads, GemmMap):
        block_pixels = threads.pixels_of_block(ref.block[0], 1)[:, 1:]
        mine = threads.pixels_of_thread(0, oh, ow)
        mine = mine[mine[:, 0] == 0][:, 1:]
        Mg = threads.filters_per_group
        m_blocks = ceil_div(Mg, threads.BM)
        group, mb = divmod(ref.block[1], m_blocks)
        start = group * Mg + mb * threads.BM
        block_filters = range(start, min(start + threads.BM, (group + 1) * Mg))
        # the thread's 8 filters: two runs of 4, half a block tile apart (rows tm*4.. and BM/2 + tm*4..)
        tm = ref.thread[0] // (threads.BN // 8)
        slots = [start + tm * 4 + j for j in range(4)] + [
            start + threads.BM // 2 + tm * 4 + j for j in range(4)
        ]
        return ThreadWork(
            ref.block,
            ref.thread,
            thread_pixels=_inside(mine, g),
            block_pixels=_inside(block_pixels, g),
            block_filters=block_filters,
            thread_filters=tuple(f for f in slots if f < block_filters.stop),
        )
    return _brute_force(launch, g, oh, ow, m, ref)


def _brute_force(launch: Launch, g: WindowGeometry, oh: int, ow: int, m: int, ref: ThreadRef) -> ThreadWork:
    """Any other thread map (e.g. the tensor-core kernel's warps): ask launch.thread_of about the
    outputs near the pick in raster order (a block of these kernels is a run of consecutive
    batch pixels) and about every filter."""
    p = oh * g.W_out + ow
    q = np.arange(max(0, p - 4096), min(g.L, p + 4097))
    cand = np.stack([q // g.W_out, q % g.W_out], axis=1)
    refs = [launch.thread_of(0, m, int(r), int(c)) for r, c in cand]
    block_pixels = cand[[x.block == ref.block for x in refs]]
    thread_pixels = cand[[x.block == ref.block and x.thread == ref.thread for x in refs]]
    filters = [f for f in range(launch.arg("M")) if launch.thread_of(0, f, oh, ow).block == ref.block]
    mine = tuple(f for f in filters if launch.thread_of(0, f, oh, ow).thread == ref.thread)
    return ThreadWork(
        ref.block,
        ref.thread,
        thread_pixels=thread_pixels,
        block_pixels=block_pixels,
        block_filters=range(min(filters), max(filters) + 1) if filters else range(0),
        thread_filters=mine,
    )
