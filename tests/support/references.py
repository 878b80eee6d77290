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


def _mirror(i: int, n: int) -> int:
    """Reflect index i into 0..n-1 without repeating the edge, by cases (not the abs() formula)."""
    if i < 0:
        return -i
    if i >= n:
        return 2 * (n - 1) - i
    return i


def reflect_pad_backward_ref(grad_output, pads) -> np.ndarray:
    """Visit every padded cell and add its gradient onto the input cell it copied (float64)."""
    left, right, top, bottom = pads
    go = np.asarray(grad_output, np.float64)
    Hp, Wp = go.shape[-2:]
    H, W = Hp - top - bottom, Wp - left - right
    out = np.zeros((*go.shape[:-2], H, W))
    for a in range(Hp):
        for b in range(Wp):
            out[..., _mirror(a - top, H), _mirror(b - left, W)] += go[..., a, b]
    return out


def conv2d_backward_ref(
    dy, x, w, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1, padding_mode="zeros"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(grad_input, grad_weight, grad_bias) by the chain rule, output position by output position:
    each output's gradient is spread over the window it read (grad_input) and multiplies that
    window into its filter's gradient (grad_weight); float64, explicit loops."""
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    dy = np.asarray(dy, np.float64)
    ph, pw = padding
    if padding_mode == "reflect":
        xp = _pad_reflect_np(x, pw, pw, ph, ph)
    else:
        xp = np.pad(x, [(0, 0), (0, 0), (ph, ph), (pw, pw)])
    H, W = x.shape[-2:]
    M, Cg, kh, kw = w.shape
    sh, sw = stride
    dh, dw = dilation
    Mg = M // groups
    dxp = np.zeros_like(xp)
    dwt = np.zeros_like(w)
    for m in range(M):
        chans = slice((m // Mg) * Cg, (m // Mg + 1) * Cg)
        for i in range(dy.shape[2]):
            for j in range(dy.shape[3]):
                rows = slice(i * sh, i * sh + dh * (kh - 1) + 1, dh)
                cols = slice(j * sw, j * sw + dw * (kw - 1) + 1, dw)
                g = dy[:, m, i, j]
                dxp[:, chans, rows, cols] += g[:, None, None, None] * w[m][None]
                dwt[m] += np.tensordot(g, xp[:, chans, rows, cols], axes=(0, 0))
    if padding_mode == "reflect":  # each padded cell's gradient goes to the cell it mirrors
        dx = np.zeros_like(x)
        for a in range(H + 2 * ph):
            for b in range(W + 2 * pw):
                dx[:, :, _mirror(a - ph, H), _mirror(b - pw, W)] += dxp[:, :, a, b]
    else:
        dx = dxp[:, :, ph : ph + H, pw : pw + W]
    return dx, dwt, dy.sum(axis=(0, 2, 3))


def conv_transpose2d_ref(
    x, w, b=None, stride=(1, 1), padding=(0, 0), output_padding=(0, 0), groups=1, dilation=(1, 1)
) -> np.ndarray:
    """Every input cell stamps its filters, scaled by its value, onto a full-size canvas at
    (i*stride, j*stride); the canvas is then cropped by the padding (float64, explicit loops)."""
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    N, C_in, H, W = x.shape
    _, Cog, kh, kw = w.shape
    sh, sw = stride
    ph, pw = padding
    oh, ow = output_padding
    dh, dw = dilation
    Cig = C_in // groups
    full = np.zeros(
        (N, Cog * groups, (H - 1) * sh + dh * (kh - 1) + 1 + oh, (W - 1) * sw + dw * (kw - 1) + 1 + ow)
    )
    for c in range(C_in):
        g = c // Cig
        for i in range(H):
            for j in range(W):
                rows = slice(i * sh, i * sh + dh * (kh - 1) + 1, dh)
                cols = slice(j * sw, j * sw + dw * (kw - 1) + 1, dw)
                full[:, g * Cog : (g + 1) * Cog, rows, cols] += (
                    x[:, c, i, j][:, None, None, None] * w[c][None]
                )
    out = full[:, :, ph : full.shape[2] - ph, pw : full.shape[3] - pw]
    if b is not None:
        out = out + np.asarray(b, np.float64)[None, :, None, None]
    return out
