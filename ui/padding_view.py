"""The Direct page's padding "same" (PyTorch's F.conv2d(padding="same")): the output keeps the
input's size. PyTorch's rules hold: stride 1 only, and dilation * (K - 1) cells per axis, half
of them (rounded down) before, the rest after, so an odd total pads one more on the bottom / right.
gpuops.conv2d takes the string itself; this module says what it did, or why it cannot apply.
"""

from __future__ import annotations

from typing import Any

from gpuops.checks import WindowGeometry

HELP = (
    "pads so the output keeps the input's size, as PyTorch's padding='same' (stride 1 only; an odd "
    "total puts the extra row / column on the bottom / right)."
)


def padding_arg(g: WindowGeometry) -> Any:
    """The conv2d padding that gives g's pads: (top, left) when each axis is symmetric, else
    "same" (the only setting of the page with one more cell on the bottom / right)."""
    if (g.pad_top, g.pad_left) == (g.pad_bottom, g.pad_right):
        return (g.pad_top, g.pad_left)
    return "same"


def pads_text(before: int, after: int, *, latex: bool = False) -> str:
    """The padding of one axis in the output-size formula: "2·P" when both sides pad alike, else
    "before + after"."""
    times = r"\cdot" if latex else "·"
    return f"2{times}{before}" if before == after else f"{before} + {after}"


def choose(same: bool, stride: int, pad: int) -> tuple[Any, str]:
    """The padding to compute with, and a refusal to show ("" if none): "same" where it applies;
    with a stride over 1 it cannot (PyTorch refuses it too), so the slider's P is used, and said."""
    if not same:
        return pad, ""
    if stride != 1:
        return pad, (
            f"**Padding 'same' needs stride 1** (PyTorch refuses padding='same' for strided "
            f"convolutions: with stride {stride} no padding keeps the input's size). The page uses "
            f"the slider's padding P = {pad} instead; set S = 1 for 'same'."
        )
    return "same", ""


def same_note(g: WindowGeometry) -> str:
    """What padding 'same' did here: the pads of each side, and why they differ where they do."""
    pads = f"{g.pad_top} top, {g.pad_bottom} bottom, {g.pad_left} left, {g.pad_right} right"
    uneven = [
        f"{axis}: D·(K−1) = {total} is odd, so the extra {what} goes on the {side}"
        for axis, total, what, side in (
            ("rows", g.pad_top + g.pad_bottom, "row", "bottom"),
            ("columns", g.pad_left + g.pad_right, "column", "right"),
        )
        if total % 2
    ]
    if not uneven:
        return f"Padding 'same': {pads}; the output is the input's size."
    return (
        f"**Padding 'same' is asymmetric here**: {pads} ({'; '.join(uneven)}, as PyTorch pads). "
        "The output is the input's size."
    )
