"""Small pictures for the home page, one per operation (arrays in, RGB uint8 out)."""

from __future__ import annotations

import numpy as np


def matrix_thumbnail(mat: np.ndarray, size: int = 160) -> np.ndarray:
    """A matrix as a blue-white-red picture (for the X_unroll thumbnail)."""
    h, w = mat.shape
    ys = np.linspace(0, h - 1, min(h, size)).astype(int)
    xs = np.linspace(0, w - 1, min(w, size)).astype(int)
    m = mat[np.ix_(ys, xs)]
    lo, hi = float(m.min()), float(m.max())
    t = (m - lo) / (hi - lo) if hi > lo else np.zeros_like(m)
    rgb = np.stack([t, 0.3 + 0.4 * (1 - abs(2 * t - 1)), 1 - t], axis=-1)
    return (rgb * 255).astype(np.uint8)


def busiest_window(plane: np.ndarray, size: int) -> tuple[int, int]:
    """Top-left (row, col) of the size x size window with the most edges (for small crops).

    A flat crop teaches nothing; this finds one where patches visibly differ.
    """
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
