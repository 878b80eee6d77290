"""What the Reflect padding page computes, kept out of the page script: the padded image, the two
blurs (zeros and reflect), the kernel's timing candidates, and the sentences that describe them."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import gpuops
from gpuops import filters
from gpuops.conv2d import check_conv2d
from gpuops.launch import Launch
from gpuops.maps import reflect_pad as maps
from gpuops.timing import Timing
from ui import budget
from ui.common import backend_name, session_cached
from ui.sidebar import SourceImage

MODES = ("zeros", "reflect")
STORES = ("a single head cell", "part of a 4-cell float4 store", "a single tail cell")


def padded_image(image: SourceImage, p_img: int) -> np.ndarray:
    """The image reflect-padded by p_img on every side (within the rerun budget; per session)."""
    C, H, W = image.planes.shape
    Hp, Wp = maps.padded_shape(H, W, (p_img,) * 4)
    budget.check(
        budget.bytes_cost(4 * C * (Hp * Wp + H * W)),
        "Padding the image",
        "Use a smaller pad or a smaller working size.",
    )
    return session_cached(
        ("reflect", image.key, p_img),
        lambda: gpuops.to_numpy(gpuops.reflect_pad(gpuops.asarray(image.planes), p_img)),
    )


def blurs(image: SourceImage, k: int) -> dict[str, np.ndarray]:
    """The same k x k box blur with zero and with reflect padding k // 2 (both within one budget)."""
    C = image.planes.shape[0]
    weight, groups = filters.channel_weights(filters.preset_kernel("box blur", k), C, mix=False)
    x, wt = gpuops.asarray(image.planes), gpuops.asarray(weight)
    problems = {mode: check_conv2d(x.shape, wt.shape, None, 1, k // 2, 1, groups, mode) for mode in MODES}
    costs = [budget.conv2d_cost(p, "direct") for p in problems.values()]  # both blurs in this one rerun
    budget.check(
        budget.Cost(sum(c.seconds for c in costs), max(c.bytes for c in costs)),
        f"The two {k} x {k} blurs",
        "Use a smaller blur size K or a smaller working size.",
    )
    return {
        mode: session_cached(
            ("blur", image.key, k, mode),
            lambda m=mode: gpuops.to_numpy(
                gpuops.conv2d(x, wt, padding=k // 2, groups=groups, padding_mode=m)
            ),
        )
        for mode in MODES
    }


def timing_candidates(
    image: SourceImage, p_img: int, launch: Launch
) -> tuple[dict[str, Callable[[], object]], dict[str, int]]:
    """What "Compare" times: the kernel, and on a GPU a plain device copy of the padded image (the
    bandwidth reference); with the bytes each reads and writes."""
    padded = padded_image(image, p_img)
    x_dev = gpuops.asarray(image.planes)
    kernel = f"{launch.kernel} ({backend_name()})"
    candidates: dict[str, Callable[[], object]] = {kernel: lambda: gpuops.reflect_pad(x_dev, p_img)}
    moved = {kernel: 4 * (image.planes.size + padded.size)}  # bytes read + written
    if gpuops.backend_info().gpu:
        y_dev, reference = gpuops.asarray(padded), "device copy of the padded image (bandwidth reference)"
        candidates[reference], moved[reference] = (lambda: y_dev.copy()), 8 * padded.size
    return candidates, moved


def rows_text(launch: Launch) -> str:
    """How the kernel writes its rows: head cells, float4 groups, tail cells."""
    per_row = "; ".join(
        f"row {r.row}: {r.head} head + {r.groups} groups of 4 + {r.tail} tail"
        for r in maps.row_patterns(launch)
    )
    return (
        f"`{launch.kernel}`, grid {launch.grid}, block {launch.block}: one thread row per padded row of "
        f"{launch.threads.shape[2]} cells. Each row writes single head cells up to a 16-byte boundary, "
        f"then 4-cell groups (one float4 store each), then single tail cells ({per_row})."
    )


def pixel_text(picked: maps.PixelPick, launch: Launch) -> str:
    """A picked padded pixel: where it comes from, its copies, and the thread that writes it."""
    t = launch.thread_of(0, *picked.cell)
    what = "is input pixel" if picked.is_source else "copies input pixel"
    return (
        f"Padded pixel {picked.cell} {what} {picked.source}; {len(picked.copies)} padded pixels hold that "
        f"input pixel (orange: the source, red: its mirror copies). On the GPU, block {t.block[0]}, "
        f"thread {t.thread[:2]} writes it, as {STORES[t.step[1]]}."
    )


def bandwidth(timings: dict[str, Timing], moved: dict[str, int]) -> dict[str, float]:
    """GB/s of each timed candidate: the bytes it reads and writes over its median time."""
    return {name: moved[name] / t.median_ms / 1e6 for name, t in timings.items()}


def share(rates: dict[str, float]) -> float:
    """The kernel's rate as a share of the device copy's (the first candidate over the second)."""
    kernel, copy = rates.values()
    return kernel / copy
