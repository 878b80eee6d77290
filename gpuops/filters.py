"""Classic image filters as conv2d weights, and checks for hand-edited ones."""

from __future__ import annotations

import numpy as np

FIXED_3X3 = {
    "sharpen": [[0, -1, 0], [-1, 5, -1], [0, -1, 0]],
    "Laplacian edge": [[0, 1, 0], [1, -4, 1], [0, 1, 0]],
    "Sobel x": [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]],
    "Sobel y": [[-1, -2, -1], [0, 0, 0], [1, 2, 1]],
    "emboss": [[-2, -1, 0], [-1, 1, 1], [0, 1, 2]],
}
SIZED = ("identity", "box blur", "Gaussian")
PRESETS = (*SIZED, *FIXED_3X3)
MAX_KERNEL = 15


def preset_kernel(name: str, size: int) -> np.ndarray:
    """(size, size) float32 weights; sharpen/Laplacian/Sobel/emboss exist only as 3x3."""
    if name in FIXED_3X3:
        return np.asarray(FIXED_3X3[name], dtype=np.float32)
    if not 1 <= size <= MAX_KERNEL:
        raise ValueError(f"kernel size {size} must be between 1 and {MAX_KERNEL}")
    if name == "identity":
        k = np.zeros((size, size), np.float32)
        k[(size - 1) // 2, (size - 1) // 2] = 1
        return k
    if name == "box blur":
        return np.full((size, size), 1.0 / (size * size), np.float32)
    if name == "Gaussian":
        sigma = max(size / 6.0, 0.5)
        t = np.arange(size) - (size - 1) / 2
        g = np.exp(-(t**2) / (2 * sigma**2))
        k = np.outer(g, g)
        return (k / k.sum()).astype(np.float32)
    raise ValueError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")


def is_edge_filter(kernel: np.ndarray) -> bool:
    """Weights summing to about 0 give signed outputs (edges): show them as |output|."""
    return abs(float(np.sum(kernel))) < 1e-6 * max(1.0, float(np.abs(kernel).sum()))


def check_custom_kernel(cells: object) -> np.ndarray:
    """A hand-edited grid as float32; ValueError naming the first empty or non-finite cell."""
    try:
        arr = np.asarray(cells, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("every kernel cell must be a number") from None
    if arr.ndim != 2 or arr.size == 0:
        raise ValueError(f"the custom kernel must be a non-empty 2-D grid, got shape {arr.shape}")
    if max(arr.shape) > MAX_KERNEL:
        raise ValueError(
            f"custom kernel {arr.shape[0]} x {arr.shape[1]} is larger than {MAX_KERNEL} x {MAX_KERNEL}"
        )
    bad = np.argwhere(~np.isfinite(arr))
    if bad.size:
        r, c = bad[0]
        what = "empty" if np.isnan(arr[r, c]) else "infinite"
        raise ValueError(f"custom kernel cell (row {r}, column {c}) is {what}; enter a finite number")
    if np.abs(arr).max() > 1e6:
        raise ValueError("custom kernel values must be between -1e6 and 1e6")
    return arr.astype(np.float32)


def channel_weights(kernel: np.ndarray, channels: int, mix: bool) -> tuple[np.ndarray, int]:
    """(weight, groups): the same 2-D kernel per channel (depthwise), or averaged across channels."""
    if mix:
        return np.repeat(kernel[None, None] / channels, channels, axis=1).astype(np.float32), 1
    return np.repeat(kernel[None, None], channels, axis=0).astype(np.float32), channels
