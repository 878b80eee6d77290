"""What the Pooling page computes, kept out of the page script: the seeded grid, the pooled output,
the max's indices and the gradient through gpuops on the app's backend, the marks of a pick, the
kernels that ran, and the sentences that describe a pick."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import gpuops
from gpuops import pool
from gpuops.launch import Launch
from gpuops.maps import pool as maps
from ui.state import Cell
from viz.pool import PoolGrids, PoolMarks


@dataclass(frozen=True)
class Pooled:
    """One run of the page's pooling: the output y, the max's flat indices (None for avg), and the
    gradient dx each input cell gets when every output's gradient is 1."""

    mode: str
    g: pool.PoolGeometry
    rule: pool.AvgRule
    x: np.ndarray
    y: np.ndarray
    index: np.ndarray | None
    dx: np.ndarray


def values(g: pool.PoolGeometry, seed: int) -> np.ndarray:
    """The seeded input grid: small integers, so ties are common."""
    return np.random.default_rng(seed).integers(0, 10, g.in_hw).astype(np.float32)


def run(mode: str, g: pool.PoolGeometry, rule: pool.AvgRule, x: np.ndarray) -> Pooled:
    """Forward and backward (every dy = 1) on the app's backend: the GPU kernels when there is one."""
    w = g.window
    args = (w.KH, w.stride_h, w.pad_top)
    xd = gpuops.asarray(x[None, None])
    xp = gpuops.default_xp()
    if mode == "max":
        y, index = gpuops.max_pool2d(xd, *args, w.dil_h, g.ceil_mode, return_indices=True)
        dx = gpuops.max_pool2d_backward(xp.ones_like(y), xd, *args, w.dil_h, g.ceil_mode)
        index = gpuops.to_numpy(index)[0, 0]
    else:
        y = gpuops.avg_pool2d(xd, *args, g.ceil_mode, rule.count_include_pad)
        dx = gpuops.avg_pool2d_backward(xp.ones_like(y), xd.shape, *args, g.ceil_mode, rule.count_include_pad)
        index = None
    return Pooled(mode, g, rule, x, gpuops.to_numpy(y)[0, 0], index, gpuops.to_numpy(dx)[0, 0])


def grids(p: Pooled) -> PoolGrids:
    """The figure's grids: the input with the reach of the windows, and the output."""
    return PoolGrids(p.x, p.y, maps.padding_extent(p.g), "-inf" if p.mode == "max" else "0")


def marks(p: Pooled, cell: Cell) -> PoolMarks:
    """A picked output: its window (and the max's winner); a picked input cell: the outputs that
    read it (and those whose gradient it receives)."""
    if cell.space == "out":
        window = [(t.ih, t.iw) for t in maps.window_taps(p.g, cell.row, cell.col)]
        won = maps.winner(p.index, p.g.window.W, cell.row, cell.col) if p.index is not None else None
        return PoolMarks(("x2", cell.row, cell.col), window=window, winner=won)
    readers = maps.outputs_reading(p.g, cell.row, cell.col)
    routes = maps.routes_to(p.g, p.index, cell.row, cell.col) if p.index is not None else ()
    return PoolMarks(("x", cell.row, cell.col), readers=readers, routes=routes)


def launches(mode: str, g: pool.PoolGeometry, rule: pool.AvgRule) -> tuple[Launch, Launch]:
    """The forward and backward launches of one plane (the page's grid)."""
    if mode == "max":
        return pool.max_pool2d_launch(1, g), pool.max_pool2d_backward_launch(1, g, "gather")
    return pool.avg_pool2d_launch(1, g, rule), pool.avg_pool2d_backward_launch(1, g, rule)


def output_text(p: Pooled, cell: Cell) -> str:
    """A picked output: the values of its window and how the max or the mean makes it."""
    r0, c0 = cell.row, cell.col
    taps = maps.window_taps(p.g, r0, c0)
    numbers = maps.window_values(p.g, p.x, r0, c0)
    shown = ", ".join(f"{v:g}" for v in numbers)
    if p.mode == "max":
        r, c = maps.winner(p.index, p.g.window.W, r0, c0)
        ties = maps.ties_with_winner(p.g, p.x, p.index, r0, c0)
        tie_text = (
            f": {ties} cells tie, and the first in scan order (row by row) wins, as in PyTorch."
            if ties > 1
            else "."
        )
        return (
            f"**Output ({r0}, {c0})** = max of its {len(numbers)} input cells ({shown}) = "
            f"**{p.y[r0, c0]:g}**, taken from input **({r}, {c})**{tie_text} "
            f"{len(taps) - len(numbers)} taps fall in the padding (-inf: they never win)."
        )
    divisor = p.rule.divisors(p.g)[r0, c0]
    counted = (
        "the window's cells up to the end of the padding."
        if p.rule.count_include_pad
        else "only the window's cells inside the input."
    )
    return (
        f"**Output ({r0}, {c0})** = ({' + '.join(shown.split(', '))}) / {divisor:g} = "
        f"**{p.y[r0, c0]:.4g}**: the divisor counts {counted}"
    )


def thread_text(launch: Launch, cell: Cell) -> str:
    """The block and thread of the forward launch that compute a picked output."""
    t = launch.thread_of(0, cell.row, cell.col)
    return f"On the GPU, `{launch.kernel}` block {t.block[0]}, thread {t.thread[:2]} computes it."


def input_text(p: Pooled, cell: Cell) -> str:
    """A picked input cell: the outputs that read it, those that send it gradient, its gradient."""
    readers = maps.outputs_reading(p.g, cell.row, cell.col)
    routed = maps.routes_to(p.g, p.index, cell.row, cell.col) if p.index is not None else readers
    what = "won" if p.mode == "max" else "cover it"
    return (
        f"**Input ({cell.row}, {cell.col})** is read by {len(readers)} output(s) {readers or ''}; "
        f"{len(routed)} of them {what}, so its gradient (every dy = 1) is "
        f"**{p.dx[cell.row, cell.col]:.4g}**."
    )
