"""Pictures for the Home page's operation cards: square RGB thumbnails of one size, so the
cards line up, following the colour policy of viz/style.py (a non-negative matrix on the
sequential scale from 0; the original region of a padded image boxed in the highlight cyan).

Arrays in, RGB uint8 arrays out; no Streamlit, no kernels (the page computes, these draw).
"""

from __future__ import annotations

import functools

import numpy as np
import plotly.colors

from viz.style import HALO, SECOND, SEQUENTIAL, cell_colours

SIDE = 192  # px of every thumbnail
GRID_LINE = 150  # grey lines between matrix cells
SMALL = 96  # px: the longest side of the image copy the thumbnails are computed on


def small_copy(planes: np.ndarray, side: int = SMALL) -> np.ndarray:
    """(C, H, W) -> a copy with the longest side at most `side` (every n-th pixel: quick)."""
    step = max(1, -(-max(planes.shape[1:]) // side))
    return np.ascontiguousarray(planes[:, ::step, ::step])


def busiest_window(plane: np.ndarray, size: int) -> tuple[int, int]:
    """Top-left (row, col) of the size x size window with the most edges: a flat crop teaches
    nothing, this finds one where patches visibly differ."""
    H, W = plane.shape
    if size >= H and size >= W:
        return 0, 0
    edges = np.abs(np.diff(plane, axis=0, prepend=plane[:1])) + np.abs(
        np.diff(plane, axis=1, prepend=plane[:, :1])
    )
    integral = np.pad(edges.cumsum(0).cumsum(1), ((1, 0), (1, 0)))
    h, w = min(size, H), min(size, W)
    sums = integral[h:, w:] - integral[:-h, w:] - integral[h:, :-w] + integral[:-h, :-w]
    r, c = np.unravel_index(int(np.argmax(sums)), sums.shape)
    return int(r), int(c)


def fold_window(shape: tuple[int, ...]) -> tuple[int, int]:
    """(k, stride) of the fold thumbnail's patches: 12 x 12 every 8 px, smaller on a tiny image."""
    k = max(1, min(12, *shape[-2:]))
    return k, max(1, (2 * k) // 3)


def covered_crop(planes: np.ndarray, k: int, stride: int) -> np.ndarray:
    """The top-left crop of (C, H, W) planes that k x k windows at this stride cover exactly
    (no uncovered rim that fold would leave black)."""
    h, w = (k + stride * ((n - k) // stride) if n >= k else n for n in planes.shape[1:])
    return np.ascontiguousarray(planes[:, :h, :w])


def resize_nearest(pixels: np.ndarray, height: int, width: int) -> np.ndarray:
    """Nearest-neighbour resize of an (h, w, ...) array: cells stay crisp blocks."""
    h, w = pixels.shape[:2]
    rows = np.minimum((np.arange(height) * h) // height, h - 1)
    cols = np.minimum((np.arange(width) * w) // width, w - 1)
    return pixels[rows][:, cols]


def square(pixels: np.ndarray, side: int = SIDE, background: int = 255) -> np.ndarray:
    """An RGB image fitted into a side x side square, aspect kept, centred on a plain background."""
    h, w = pixels.shape[:2]
    scale = side / max(h, w)
    nh, nw = max(1, round(h * scale)), max(1, round(w * scale))
    out = np.full((side, side, 3), background, dtype=np.uint8)
    top, left = (side - nh) // 2, (side - nw) // 2
    out[top : top + nh, left : left + nw] = resize_nearest(pixels, nh, nw)
    return out


@functools.lru_cache(maxsize=4)
def _lut(scale: str = SEQUENTIAL) -> np.ndarray:
    """256 RGB colours of a Plotly colour scale."""
    colours = plotly.colors.sample_colorscale(plotly.colors.get_colorscale(scale), np.linspace(0, 1, 256))
    rgb = [[int(float(v)) for v in c[c.index("(") + 1 : -1].split(",")] for c in colours]
    return np.asarray(rgb, dtype=np.uint8)


def sequential_rgb(values: np.ndarray) -> np.ndarray:
    """A non-negative matrix on the sequential scale from 0 (0 = the scale's first colour)."""
    top = float(np.max(values)) if values.size else 0.0
    t = np.clip(values / top, 0, 1) if top > 0 else np.zeros_like(values, dtype=np.float64)
    return _lut()[np.round(t * 255).astype(np.int64)]


def matrix_thumbnail(mat: np.ndarray, side: int = SIDE) -> np.ndarray:
    """A matrix (X_unroll: one column per output pixel) stretched to a square, sequential colours."""
    return resize_nearest(sequential_rgb(mat), side, side)


def identity_thumbnail(cell_ids: np.ndarray, side: int = SIDE) -> np.ndarray:
    """A matrix of input-cell ids (-1: padding, white) drawn with one colour per input cell, as
    on the operation pages: the same colour in several columns is the same input cell, copied."""
    colours = cell_colours(int(cell_ids.max()) + 1 if cell_ids.size else 1)
    palette = np.array(
        [[255, 255, 255]] + [[int(c[k : k + 2], 16) for k in (1, 3, 5)] for c in colours], np.uint8
    )
    rows, cols = cell_ids.shape
    img = resize_nearest(palette[cell_ids + 1], side, side)
    grid_r = (np.arange(side) * rows) % side < rows  # the first pixel row of each cell: a grid line
    grid_c = (np.arange(side) * cols) % side < cols
    img[grid_r] = GRID_LINE
    img[:, grid_c] = GRID_LINE
    img[-1], img[:, -1] = GRID_LINE, GRID_LINE
    return img


def rgb_thumbnail(pixels: np.ndarray, side: int = SIDE) -> np.ndarray:
    """An RGB uint8 image as a square thumbnail."""
    return square(pixels, side)


def boxed(pixels: np.ndarray, corner: tuple[int, int], size: tuple[int, int], width: int = 2) -> np.ndarray:
    """A copy of an RGB image with h x w pixels from corner (top, left) outlined (size = h, w): a
    cyan line inside a dark halo, visible on light and dark pixels alike."""
    (top, left), (h, w) = corner, size
    out = pixels.copy()
    H, W = out.shape[:2]
    for colour, grow in ((HALO, width), (SECOND, 0)):
        rgb = np.array([int(colour[k : k + 2], 16) for k in (1, 3, 5)], dtype=np.uint8)
        y0, y1 = max(0, top - width - grow), min(H, top + h + width + grow)
        x0, x1 = max(0, left - width - grow), min(W, left + w + width + grow)
        t = width + grow
        out[y0 : min(H, y0 + t), x0:x1] = rgb
        out[max(y0, y1 - t) : y1, x0:x1] = rgb
        out[y0:y1, x0 : min(W, x0 + t)] = rgb
        out[y0:y1, max(x0, x1 - t) : x1] = rgb
    return out


def padded_thumbnail(padded: np.ndarray, pad: int, side: int = SIDE) -> np.ndarray:
    """A reflect-padded RGB image as a square thumbnail, the original image boxed."""
    H, W = padded.shape[0] - 2 * pad, padded.shape[1] - 2 * pad
    thumb = square(padded, side)
    scale = side / max(padded.shape[:2])
    top = (side - round(padded.shape[0] * scale)) // 2
    left = (side - round(padded.shape[1] * scale)) // 2
    corner = (top + round(pad * scale), left + round(pad * scale))
    return boxed(thumb, corner, (round(H * scale), round(W * scale)))


def bars_thumbnail(speeds: np.ndarray, side: int = SIDE) -> np.ndarray:
    """Speeds relative to a reference (1 = as fast) as horizontal bars on a log scale from 1/8 to
    8, with a dark line at 1: the Benchmarks card's picture of its chart. The faster, the further
    along the sequential scale; an empty array draws the line alone."""
    out = np.full((side, side, 3), 255, np.uint8)
    speeds = np.asarray(speeds, dtype=np.float64)
    ends = np.rint((np.log2(np.clip(np.append(speeds, 1.0), 1 / 8, 8)) + 3) / 6 * (side - 1)).astype(int)
    one = ends[-1]
    pitch = side / max(len(speeds), 1)
    colours = sequential_rgb(np.argsort(np.argsort(speeds)).astype(np.float64))
    for i, end in enumerate(ends[:-1]):
        y0, y1 = int(i * pitch + pitch * 0.15), int((i + 1) * pitch - pitch * 0.15)
        x0, x1 = min(one, end), max(one, end) + 1
        out[y0:y1, x0:x1] = colours[i]
    out[:, max(0, one - 1) : one + 2] = [int(HALO[k : k + 2], 16) for k in (1, 3, 5)]
    return out
