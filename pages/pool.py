"""Pooling: the window of each output, the max's winner, and where the gradient goes back."""

import streamlit as st

from gpuops import pool
from ui import hover, navigation, pick, picking, state
from ui import pool_view as view
from ui.common import backend_name, cuda_source, figure, shown_errors, style
from ui.picking import Grid
from ui.state import Cell, Param
from viz import pool as viz

navigation.through_app()  # a freshly started server may run this file alone (ui/navigation.py)

MODE = Param("pool_mode", "max", "Pooling", "radio", choices=("max", "avg"))
GRID_H = Param("pool_h", 6, "Input height H", "slider", lo=1, hi=10)
GRID_W = Param("pool_w", 7, "Input width W", "slider", lo=1, hi=10)
KERNEL = Param("pool_k", 3, "Kernel size", "slider", lo=1, hi=5)
STRIDE = Param("pool_s", 2, "Stride", "slider", lo=1, hi=4)
PAD = Param("pool_p", 1, "Padding", "slider", lo=0, hi=2, help="PyTorch allows at most kernel size // 2.")
DILATION = Param("pool_d", 1, "Dilation (max only)", "slider", lo=1, hi=3)
CEIL = Param(
    "pool_ceil",
    False,
    "ceil_mode",
    "toggle",
    help="Round the output size up: one more window when the last one still starts inside the input "
    "or its left/top padding.",
)
INCLUDE_PAD = Param(
    "pool_cip",
    True,
    "count_include_pad (avg)",
    "toggle",
    help="Divide by the whole window (padding included) or by its cells inside the input.",
)
SEED = Param("pool_seed", 3, "Values (seed)", "number", lo=0, hi=999, help="Small integers: ties are common.")
PICK = Param("pool_pick", Cell("out", 0, 0), choices=("out", "in"))
PARAMS = [MODE, GRID_H, GRID_W, KERNEL, STRIDE, PAD, DILATION, CEIL, INCLUDE_PAD, SEED, PICK]
CHART = "pool_grid"

state.use(PARAMS)
sty = style()
st.title("Pooling")
st.caption(
    "Max pooling keeps the largest value of each window, average pooling their mean: PMPP's "
    "subsampling layer of LeNet-5 (2 x 2 windows, stride 2). The gradient of a max goes to the "
    "window's winner only; an average shares it over the window. PyTorch's F.max_pool2d / "
    "F.avg_pool2d semantics, to the element."
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
    include_pad = bool(state.widget(INCLUDE_PAD, container=b, disabled=mode != "avg"))
    rule = pool.check_avg_rule(include_pad, None)
    seed = int(state.widget(SEED, container=c))
    return mode, pool.pool_geometry(h, w, k, s, p, d, ceil), rule, seed


def section_grid(p: view.Pooled, cell: Cell) -> None:
    """The input and output grids with the pick's marks, the gradient beside them, and the pick's
    sentence."""
    left, right = (st.container(), st.container()) if sty.presentation else st.columns([1.6, 1])
    with left:
        figure(
            viz.pool_figure(view.grids(p), sty, view.marks(p, cell)),
            CHART,
            "Blue wash: padding, and with ceil_mode the cells past it that a last window covers "
            "(never a value). Cyan: the picked output's window; orange fill: its winner. Red: the "
            "outputs that read the picked input cell; dotted orange: those whose gradient it receives.",
            pickable=True,
        )
    with right:
        figure(
            viz.gradient_figure(
                p.dx,
                "Gradient to each input (every dy = 1)",
                sty,
                (cell.row, cell.col) if cell.space == "in" else None,
            ),
            "pool_gradient",
            "Max: how many windows each cell won. Average: the sum of 1/divisor of its windows.",
        )
    if cell.space == "out":
        st.markdown(view.output_text(p, cell))
        st.caption(view.thread_text(view.launches(p.mode, p.g, p.rule)[0], cell))
    else:
        st.markdown(view.input_text(p, cell))


def section_source(mode: str, g: pool.PoolGeometry, rule: pool.AvgRule) -> None:
    """The forward and backward kernels that ran, their spans of pool.cu."""
    st.caption(f"Computed by gpuops on {backend_name()}.")
    forward, backward = view.launches(mode, g, rule)
    cuda_source(forward, key="src_pool_fwd")
    cuda_source(backward, key="src_pool_bwd")


with shown_errors("Pooling"):
    mode, g, rule, seed = settings()
    counts = (g.H_out, g.W_out)  # ceil_mode may count one more window than the formula
    rules = hover.window(
        g.window, "zeros", outputs=(CHART, "x2"), inputs=(CHART, "x"), inside=True, counts=counts
    )
    grids = {
        (CHART, "x"): Grid(PICK, "in", g.in_hw),
        (CHART, "x2"): Grid(PICK, "out", (g.H_out, g.W_out)),
    }
    picking.click_cell(pick.bridge(rules=rules, style=sty.outline_style()), grids)
    cell = picking.fitted(PICK, {"in": g.in_hw, "out": (g.H_out, g.W_out)})
    section_grid(view.run(mode, g, rule, view.values(g, seed)), cell)
    section_source(mode, g, rule)
