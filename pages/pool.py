"""Pooling: the window of each output, the max's winner, and where the gradient goes back."""

import numpy as np
import streamlit as st

import gpuops
from gpuops import pool
from gpuops.maps import pool as maps
from ui import navigation, pick, state
from ui.common import backend_name, cuda_source, figure, shown_errors, style
from ui.state import Cell, Param
from viz import pool as viz

navigation.through_app()  # a freshly started server may run this file alone (ui/navigation.py)

MODE = Param("pl_mode", "max", "Pooling", "radio", choices=("max", "avg"))
GRID_H = Param("pl_h", 6, "Input height H", "slider", lo=1, hi=10)
GRID_W = Param("pl_w", 7, "Input width W", "slider", lo=1, hi=10)
KERNEL = Param("pl_k", 3, "Kernel size", "slider", lo=1, hi=5)
STRIDE = Param("pl_s", 2, "Stride", "slider", lo=1, hi=4)
PAD = Param("pl_p", 1, "Padding", "slider", lo=0, hi=2, help="PyTorch allows at most kernel size // 2.")
DILATION = Param("pl_d", 1, "Dilation (max only)", "slider", lo=1, hi=3)
CEIL = Param(
    "pl_ceil",
    False,
    "ceil_mode",
    "toggle",
    help="Round the output size up: one more window when the last one still starts inside the input "
    "or its left/top padding.",
)
INCLUDE_PAD = Param(
    "pl_cip",
    True,
    "count_include_pad (avg)",
    "toggle",
    help="Divide by the whole window (padding included) or by its cells inside the input.",
)
SEED = Param("pl_seed", 3, "Values (seed)", "number", lo=0, hi=999, help="Small integers: ties are common.")
PICK = Param("pl_pick", Cell("out", 0, 0), choices=("out", "in"))
PARAMS = [MODE, GRID_H, GRID_W, KERNEL, STRIDE, PAD, DILATION, CEIL, INCLUDE_PAD, SEED, PICK]
CHART = "pool_grid"

state.use(PARAMS)
sty = style()
st.title("Pooling")
st.caption(
    "Max pooling keeps the largest value of each window, average pooling their mean: PMPP's subsampling layer "
    "of LeNet-5 (2 x 2 windows, stride 2). The gradient of a max goes to the window's winner only; an average "
    "shares it over the window. PyTorch's F.max_pool2d / F.avg_pool2d semantics, to the element."
)


def settings() -> tuple[str, pool.PoolGeometry, pool.AvgRule, int]:
    cols = st.columns([1, 1, 1, 1, 1, 1, 1])
    mode = state.widget(MODE, container=cols[0])
    h = int(state.widget(GRID_H, container=cols[1]))
    w = int(state.widget(GRID_W, container=cols[2]))
    k = int(state.widget(KERNEL, container=cols[3]))
    s = int(state.widget(STRIDE, container=cols[4]))
    p = int(state.widget(PAD, container=cols[5], hi=k // 2))
    d = int(state.widget(DILATION, container=cols[6])) if mode == "max" else 1
    a, b, c = st.columns([1, 1.4, 1])
    ceil = bool(state.widget(CEIL, container=a))
    rule = pool.check_avg_rule(bool(state.widget(INCLUDE_PAD, container=b, disabled=mode != "avg")), None)
    seed = int(state.widget(SEED, container=c))
    return mode, pool.pool_geometry(h, w, k, s, p, d, ceil), rule, seed


def apply_click(click: pick.Click | None, g: pool.PoolGeometry) -> None:
    if click is None or click.chart != CHART:
        return
    H, W = g.in_hw
    if click.panel == "x" and 0 <= click.row < H and 0 <= click.col < W:
        state.put(PICK, Cell("in", click.row, click.col))
    elif click.panel == "x2" and 0 <= click.row < g.H_out and 0 <= click.col < g.W_out:
        state.put(PICK, Cell("out", click.row, click.col))


def current_pick(g: pool.PoolGeometry) -> Cell:
    cell = state.get(PICK) or PICK.default
    H, W = (g.H_out, g.W_out) if cell.space == "out" else g.in_hw
    fitted = Cell(cell.space, min(max(cell.row, 0), H - 1), min(max(cell.col, 0), W - 1))
    state.put(PICK, fitted)
    return fitted


def section_grid(mode: str, g: pool.PoolGeometry, rule: pool.AvgRule, x: np.ndarray, cell: Cell) -> None:
    w = g.window
    args = (w.KH, w.stride_h, w.pad_top)
    xd = gpuops.asarray(x[None, None])  # on the app's backend: the GPU kernels when there is one
    if mode == "max":
        y, index = gpuops.max_pool2d(xd, *args, w.dil_h, g.ceil_mode, return_indices=True)
        index = gpuops.to_numpy(index)[0, 0]
        dx = gpuops.max_pool2d_backward(gpuops.default_xp().ones_like(y), xd, *args, w.dil_h, g.ceil_mode)
    else:
        y = gpuops.avg_pool2d(xd, *args, g.ceil_mode, rule.count_include_pad)
        index = None
        dy = gpuops.default_xp().ones_like(y)
        dx = gpuops.avg_pool2d_backward(dy, xd.shape, *args, g.ceil_mode, rule.count_include_pad)
    y, dx = gpuops.to_numpy(y)[0, 0], gpuops.to_numpy(dx)[0, 0]
    marks: dict = {}
    if cell.space == "out":
        taps = maps.window_taps(g, cell.row, cell.col)
        marks["window"] = [(t.ih, t.iw) for t in taps]
        if index is not None:
            marks["winner"] = maps.winner(index, w.W, cell.row, cell.col)
    else:
        marks["readers"] = maps.outputs_reading(g, cell.row, cell.col)
        if index is not None:
            marks["routes"] = maps.routes_to(g, index, cell.row, cell.col)
    padding_text = "-inf" if mode == "max" else "0"
    picked = ("x2" if cell.space == "out" else "x", cell.row, cell.col)
    left, right = (st.container(), st.container()) if sty.presentation else st.columns([1.6, 1])
    with left:
        fig = viz.pool_figure(
            x, y, maps.padding_extent(g), sty, padding_text=padding_text, picked=picked, **marks
        )
        figure(
            fig,
            CHART,
            "Blue wash: padding, and with ceil_mode the cells past it that a last window covers (never a value). Cyan: the picked output's window; orange fill: "
            "its winner. Red: the outputs that read the picked input cell; dotted orange: those whose "
            "gradient it receives.",
            pickable=True,
        )
    with right:
        title = "Gradient to each input (every dy = 1)"
        figure(
            viz.gradient_figure(dx, title, sty, (cell.row, cell.col) if cell.space == "in" else None),
            "pool_gradient",
            "Max: how many windows each cell won. Average: the sum of 1/divisor of its windows.",
        )
    explain(mode, g, rule, x, y, dx, index, cell)


def explain(
    mode: str,
    g: pool.PoolGeometry,
    rule: pool.AvgRule,
    x: np.ndarray,
    y: np.ndarray,
    dx: np.ndarray,
    index: np.ndarray | None,
    cell: Cell,
) -> None:
    if cell.space == "out":
        taps = maps.window_taps(g, cell.row, cell.col)
        numbers = maps.window_values(g, x, cell.row, cell.col)
        values = ", ".join(f"{v:g}" for v in numbers)
        if mode == "max":
            r, c = maps.winner(index, g.window.W, cell.row, cell.col)
            ties = maps.ties_with_winner(g, x, index, cell.row, cell.col)
            st.markdown(
                f"**Output ({cell.row}, {cell.col})** = max of its {len(numbers)} input cells ({values}) = "
                f"**{y[cell.row, cell.col]:g}**, taken from input **({r}, {c})**"
                + (
                    f": {ties} cells tie, and the first in scan order (row by row) wins, as in PyTorch."
                    if ties > 1
                    else "."
                )
                + f" {len(taps) - len(numbers)} taps fall in the padding (-inf: they never win)."
            )
        else:
            divisor = rule.divisors(g)[cell.row, cell.col]
            st.markdown(
                f"**Output ({cell.row}, {cell.col})** = ({' + '.join(values.split(', '))}) / {divisor:g} = "
                f"**{y[cell.row, cell.col]:.4g}**: the divisor counts "
                + (
                    "the window's cells up to the end of the padding."
                    if rule.count_include_pad
                    else "only the window's cells inside the input."
                )
            )
        launch = (
            pool.max_pool2d_launch if mode == "max" else lambda n, gg: pool.avg_pool2d_launch(n, gg, rule)
        )(1, g)
        t = launch.thread_of(0, cell.row, cell.col)
        st.caption(f"On the GPU, `{launch.kernel}` block {t.block[0]}, thread {t.thread[:2]} computes it.")
    else:
        readers = maps.outputs_reading(g, cell.row, cell.col)
        routed = maps.routes_to(g, index, cell.row, cell.col) if index is not None else readers
        what = "won" if mode == "max" else "cover it"
        st.markdown(
            f"**Input ({cell.row}, {cell.col})** is read by {len(readers)} output(s) {readers or ''}; "
            f"{len(routed)} of them {what}, so its gradient (every dy = 1) is **{dx[cell.row, cell.col]:.4g}**."
        )


with shown_errors("Pooling"):
    mode, g, rule, seed = settings()
    hover = pick.hover_map(viz.hover_pairs(CHART, maps.all_windows(g), maps.all_readers(g)))
    apply_click(pick.bridge(hover={CHART: hover}, style=sty.outline_style()), g)
    cell = current_pick(g)
    x = np.random.default_rng(seed).integers(0, 10, g.in_hw).astype(np.float32)
    section_grid(mode, g, rule, x, cell)
    st.caption(f"Computed by gpuops on {backend_name()}.")
    if mode == "max":
        cuda_source(pool.max_pool2d_launch(1, g), key="src_pool_fwd")
        cuda_source(pool.max_pool2d_backward_launch(1, g, "gather"), key="src_pool_bwd")
    else:
        cuda_source(pool.avg_pool2d_launch(1, g, rule), key="src_pool_fwd")
        cuda_source(pool.avg_pool2d_backward_launch(1, g, rule), key="src_pool_bwd")
