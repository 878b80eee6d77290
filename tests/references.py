"""Independent reference implementations, written differently from gpuops on purpose.

They loop over output positions in float64 with explicit bounds checks (no strided tricks,
no shared formulas), so a shared mistake is unlikely. Only for small shapes.
"""

from __future__ import annotations

import numpy as np


def _pad_reflect_np(x: np.ndarray, left: int, right: int, top: int, bottom: int) -> np.ndarray:
    pads = [(0, 0)] * (x.ndim - 2) + [(top, bottom), (left, right)]
    return np.pad(x, pads, mode="reflect")  # NumPy's "reflect" does not repeat the edge either


def conv2d_ref(
    x, w, b=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1, padding_mode="zeros"
) -> np.ndarray:
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    ph, pw = padding
    if padding_mode == "reflect":
        xp = _pad_reflect_np(x, pw, pw, ph, ph)
    else:
        xp = np.pad(x, [(0, 0), (0, 0), (ph, ph), (pw, pw)])
    N, _, Hp, Wp = xp.shape
    M, Cg, kh, kw = w.shape
    sh, sw = stride
    dh, dw = dilation
    Ho = (Hp - dh * (kh - 1) - 1) // sh + 1
    Wo = (Wp - dw * (kw - 1) - 1) // sw + 1
    Mg = M // groups
    out = np.zeros((N, M, Ho, Wo))
    for m in range(M):
        g = m // Mg
        chans = xp[:, g * Cg : (g + 1) * Cg]
        for i in range(Ho):
            for j in range(Wo):
                window = chans[
                    :, :, i * sh : i * sh + dh * (kh - 1) + 1 : dh, j * sw : j * sw + dw * (kw - 1) + 1 : dw
                ]
                out[:, m, i, j] = np.sum(window * w[m], axis=(1, 2, 3))
    if b is not None:
        out += np.asarray(b, np.float64)[None, :, None, None]
    return out


def unfold_ref(x, k, dilation, padding, stride) -> np.ndarray:
    """Six nested loops over (n, c, ki, kj, oh, ow) with explicit bounds checks."""
    N, C, H, W = x.shape
    kh, kw = k
    dh, dw = dilation
    ph, pw = padding
    sh, sw = stride
    Ho = (H + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    Wo = (W + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((N, C * kh * kw, Ho * Wo))
    for c in range(C):
        for a in range(kh):
            for bb in range(kw):
                row = c * kh * kw + a * kw + bb
                for i in range(Ho):
                    for j in range(Wo):
                        y, xx = i * sh - ph + a * dh, j * sw - pw + bb * dw
                        if 0 <= y < H and 0 <= xx < W:
                            out[:, row, i * Wo + j] = x[:, c, y, xx]
    return out


def fold_ref(cols, output_size, k, dilation, padding, stride) -> np.ndarray:
    """Scatter every column entry with np.add.at (overlaps add up)."""
    N, rows, L = cols.shape
    kh, kw = k
    C = rows // (kh * kw)
    H, W = output_size
    dh, dw = dilation
    ph, pw = padding
    sh, sw = stride
    Wo = (W + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((N, C, H + 2 * ph, W + 2 * pw))
    for r in range(rows):
        c, rem = divmod(r, kh * kw)
        a, bb = divmod(rem, kw)
        for l in range(L):
            i, j = divmod(l, Wo)
            np.add.at(out, (slice(None), c, i * sh + a * dh, j * sw + bb * dw), cols[:, r, l])
    return out[:, :, ph : ph + H, pw : pw + W]


def reflect_pad_ref(x, pads) -> np.ndarray:
    left, right, top, bottom = pads
    return _pad_reflect_np(np.asarray(x, np.float64), left, right, top, bottom)
