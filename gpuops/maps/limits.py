"""How far a window setting may go on an input side before the window no longer fits: a K-tap
window with dilation D spans D*(K-1) + 1 cells, and it must fit in side + 2*pad (the check of
gpuops.checks, solved for K and for D). The pages' sliders stop there."""

from __future__ import annotations


def largest_kernel(side: int, pad: int, dilation: int, cap: int | None = None) -> int:
    """The largest kernel size K (at most cap, at least 1) whose window, dilation*(K-1) + 1
    cells, fits a side of `side` cells padded by `pad` on each end."""
    k = (side + 2 * pad - 1) // max(1, dilation) + 1
    return max(1, k if cap is None else min(cap, k))


def largest_dilation(side: int, k: int, pad: int, cap: int | None = None) -> int | None:
    """The largest dilation (at most cap, at least 1) at which a k-tap window fits side + 2*pad
    cells. A 1-tap window fits at any dilation: then cap (None when there is none)."""
    if k <= 1:
        return cap
    d = (side + 2 * pad - 1) // (k - 1)
    return max(1, d if cap is None else min(cap, d))
