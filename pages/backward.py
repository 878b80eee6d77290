"""Backward & transposed convolution: where a convolution layer's gradients go, and why the
transposed convolution is the same computation. Click a cell of dX to see the output gradients it
gathers (through the flipped kernel), a cell of dY to see where it scatters; watch conv_transpose2d
stamp the kernel; check the adjoint identity with numbers; pick a weight to see what its gradient
sums; fold a reflect pad's gradients back."""

import streamlit as st

import gpuops
from gpuops.maps import conv_backward as maps
from ui import backward_view as view
from ui import navigation, pick, picking, state
from ui.common import backend_name, compare, cuda_source, figure, session_cached, shown_errors, style
from ui.records import Example
from ui.state import Cell, Param
from viz import conv_backward as viz

navigation.through_app()  # a freshly started server may run this file alone (ui/navigation.py)

H = Param("backward_h", 7, "Input H", "slider", lo=2, hi=10)
W = Param("backward_w", 8, "Input W", "slider", lo=2, hi=10)
K = Param("backward_k", 3, "Kernel K", "slider", lo=1, hi=5)
S = Param("backward_stride", 2, "Stride S", "slider", lo=1, hi=4)
P = Param("backward_pad", 1, "Padding P", "slider", lo=0, hi=3, help="Zeros; at most D x (K - 1).")
D = Param("backward_dil", 1, "Dilation D", "slider", lo=1, hi=3)
CROPPED = (
    "Small whole numbers (seeded), or x cropped from your image with dY = y = conv(x, w), the gradient of "
)
CROPPED += "L = ½ Σ y²."
NUMBERS = Param("backward_nums", "integers", "Numbers", "select", choices=("integers", "image"), help=CROPPED)
SEED = Param("backward_seed", 1, "Seed", "number", lo=0, hi=999, help="Another seed draws other numbers.")
ALG = Param("backward_alg", "gather", "grad_input kernel", "radio", choices=gpuops.GRAD_INPUT_ALGORITHMS)
WALG = Param("backward_walg", "direct", "grad_weight kernel", "radio", choices=gpuops.GRAD_WEIGHT_ALGORITHMS)
PICK = Param("backward_pick", Cell("dx", 3, 3), choices=("dx", "dy"))  # in the URL as dx:3,3 or dy:1,2
WPICK = Param("backward_wpick", Cell("w", 1, 1), choices=("w", "x"))
RP_H = Param("backward_rp_h", 4, "Grid H", "slider", lo=1, hi=8)
RP_W = Param("backward_rp_w", 5, "Grid W", "slider", lo=1, hi=8)
RP_L = Param("backward_rp_left", 2, "Left pad", "slider", lo=0, hi=7, help="At most W - 1.")
RP_R = Param("backward_rp_right", 1, "Right pad", "slider", lo=0, hi=7, help="At most W - 1.")
RP_T = Param("backward_rp_top", 1, "Top pad", "slider", lo=0, hi=7, help="At most H - 1.")
RP_B = Param("backward_rp_bottom", 2, "Bottom pad", "slider", lo=0, hi=7, help="At most H - 1.")
RALGS = gpuops.REFLECT_BACKWARD_ALGORITHMS
RALG = Param("backward_ralg", "scatter", "reflect_pad_backward kernel", "radio", choices=RALGS)
RP_PICK = Param("backward_rp_pick", Cell("in", 1, 1), choices=("in", "pad"))
EXAMPLE = [H, W, K, S, P, D, NUMBERS, SEED, ALG, WALG, PICK, WPICK]
PARAMS = [*EXAMPLE, RP_H, RP_W, RP_L, RP_R, RP_T, RP_B, RALG, RP_PICK]
CHARTS = ("backward_dx", "backward_anim", "backward_count", "backward_dw", "backward_reflect")
DX_CHART, ANIM_CHART, COUNT_CHART, DW_CHART, RP_CHART = CHARTS
NAMES = view.ALG_NAMES

state.use(PARAMS)
image = st.session_state["image"]
sty = style()

st.title("Backward & transposed convolution")
st.caption(view.INTRO)


def settings() -> gpuops.WindowGeometry | None:
    """One row; slider ranges follow the geometry."""
    row = st.columns([1, 1, 1, 1, 1, 1, 1.15, 0.85], vertical_alignment="bottom")
    h = state.widget(H, container=row[0])
    w = state.widget(W, container=row[1])
    side, asked_k = min(h, w), state.get(K)
    k_max = maps.largest_kernel(side, state.get(P), state.get(D), K.hi)
    k = state.widget(K, container=row[2], hi=k_max)
    stride = state.widget(S, container=row[3])
    pad = state.widget(P, container=row[4], hi=maps.largest_padding(k, state.get(D), P.hi))
    dil = state.widget(D, container=row[5], hi=maps.largest_dilation(side, k, pad, D.hi))
    state.widget(NUMBERS, container=row[6])
    state.widget(SEED, container=row[7])
    if asked_k > k_max:
        st.info(
            f"K is at most {k_max} here: a {asked_k}-tap window with dilation {state.get(D)} does not fit an "
            f"input side of {side} padded by {state.get(P)}. Raise H and W or lower the dilation.",
            icon=":material/straighten:",
        )
    with shown_errors("The example"):
        return gpuops.window_geometry(h, w, k, stride, pad, dil)
    return None


def reflect_settings() -> tuple[int, int, tuple[int, int, int, int]]:
    row = st.columns([1, 1, 1, 1, 1, 1, 2.2], vertical_alignment="bottom")
    h = int(state.widget(RP_H, container=row[0]))
    w = int(state.widget(RP_W, container=row[1]))
    pads = tuple(
        int(state.widget(p, container=col, hi=side - 1))
        for p, col, side in zip((RP_L, RP_R, RP_T, RP_B), row[2:6], (w, w, h, h), strict=True)
    )
    state.widget(RALG, container=row[6])
    return h, w, pads


def section_grad_input(ex: Example, cell: Cell) -> None:
    """dE/dX: pick a dX cell (gather: its sources and the flipped taps they meet) or a dY cell
    (scatter: the dX cells it adds into)."""
    g, alg = ex.g, state.get(ALG)
    links, src = view.links_of(g, cell)
    figure(
        viz.grad_input_figure(ex, sty, picked=(cell.space, cell.row, cell.col), links=links),
        DX_CHART,
        view.DX_CAPTION,
        pickable=True,
    )
    row = st.columns([1.5, 0.8, 0.8, 2.4], vertical_alignment="bottom")
    picking.pick_inputs(
        PICK, cell, {"dx": ("dX cell", (g.H, g.W)), "dy": ("dY cell", (g.H_out, g.W_out))}, row
    )
    state.widget(ALG, container=row[3], format_func=NAMES.get)
    if cell.space == "dx":
        terms = maps.gradient_terms(ex.dy[None], ex.w[None, None], g, 0, cell.row, cell.col)
        st.latex(viz.gather_latex((cell.row, cell.col), src, terms, float(ex.dx[cell.row, cell.col])))
        st.caption(view.gather_caption(ex, cell, terms, alg))
    else:
        terms = maps.scatter_terms(ex.dy, ex.w, g, cell.row, cell.col)
        st.latex(viz.scatter_latex((cell.row, cell.col), terms))
        st.caption(view.scatter_caption(ex, cell, len(terms.targets), alg))
    if ex.note:
        st.caption(ex.note)
    launch = ex.plan.input_launch
    fold = "" if launch is None or launch.source == "conv_backward.cu" else " (the fold of GEMM + fold)"
    cuda_source(launch, fold, key="src_bw_dx")
    if launch is None and alg == "gemm_fold":
        st.caption(view.NOTHING_TO_FOLD)


def section_transposed(ex: Example) -> None:
    """conv_transpose2d as stamps, with the overlap count (checkerboard) and output_padding."""
    g, width = ex.g, viz.FULL_WIDTH[sty.name]
    st.subheader("The transposed convolution is the backward pass: stamp the kernel at each input cell")
    stamps = ("backward_anim", ex.key, sty.name)  # one figure for every pick
    fig = session_cached(stamps, lambda: view.stamps(ex, sty))
    figure(fig, ANIM_CHART, view.stamps_caption(g), pickable=True)
    left, right = (st.container(), st.container()) if sty.presentation else st.columns([1, 1.5], gap="medium")
    counts = maps.overlap_count(maps.transposed_of(g))
    with left:
        cell = state.get(PICK)
        picked = (cell.row, cell.col) if cell.space == "dx" else None
        fig = viz.overlap_figure(
            counts, sty, picked=picked, plot_width=width if sty.presentation else width // 2
        )
        figure(fig, COUNT_CHART, view.COUNT_CAPTION, pickable=True)
    with right:
        st.markdown(view.checkerboard_text(g, counts))
        st.markdown(view.output_padding_text(g))


def section_adjoint(g: gpuops.WindowGeometry) -> None:
    """<conv(x), y> = <x, conv_transpose(y)> with numbers, for the current settings."""
    st.subheader("Why: the adjoint identity ⟨conv(x), y⟩ = ⟨x, conv_transpose(y)⟩")
    lhs, rhs, text = view.adjoint(g, int(state.get(SEED)))
    cols = st.columns(3)
    cols[0].metric("⟨conv2d(x), y⟩", f"{lhs:.6f}")
    cols[1].metric("⟨x, conv_transpose2d(y)⟩", f"{rhs:.6f}")
    cols[2].metric(
        "difference", f"{lhs - rhs:.2e}", help="float32 rounding: the sums add in different orders"
    )
    st.markdown(text)


def section_grad_weight(ex: Example, cell: Cell) -> None:
    """dE/dW: the input cells and output gradients one weight sums over (PMPP fig. 16.11), and back."""
    g = ex.g
    st.subheader("dE/dW: what one weight's gradient sums")
    pairs, terms = view.weight_pairs(ex, cell)
    figure(
        viz.grad_weight_figure(ex, sty, picked=(cell.space, cell.row, cell.col), pairs=pairs),
        DW_CHART,
        view.DW_CAPTION,
        pickable=True,
    )
    row = st.columns([1.5, 0.8, 0.8, 2.4], vertical_alignment="bottom")
    picking.pick_inputs(WPICK, cell, {"w": ("weight", (g.KH, g.KW)), "x": ("input cell", (g.H, g.W))}, row)
    state.widget(WALG, container=row[3], format_func=NAMES.get)
    if cell.space == "w":
        st.latex(viz.weight_latex((cell.row, cell.col), terms, float(ex.dw[cell.row, cell.col])))
        st.caption(view.weight_caption(ex, cell, terms, state.get(WALG)))
    else:
        st.caption(
            f"x[{cell.row}, {cell.col}] was read by {len(pairs)} (output, tap) pairs: it adds "
            f"dY[oh, ow] · x[{cell.row}, {cell.col}] to each of those weights' gradients."
        )
    launch = ex.plan.weight_launch
    unfold = "" if launch is None or launch.source == "conv_backward.cu" else " (the unfold of GEMM)"
    cuda_source(launch, unfold, key="src_bw_dw")


def section_reflect(h: int, w: int, pads: tuple[int, int, int, int], cell: Cell) -> None:
    """Reflect-pad backward: every padded cell's gradient goes back to the input cell it copied."""
    alg = state.get(RALG)
    pe = view.pad_example((h, w), pads, cell, alg, int(state.get(SEED)))
    figure(
        viz.reflect_backward_figure(pe.grads, sty, picked=(cell.space, cell.row, cell.col), cells=pe.cells),
        RP_CHART,
        view.RP_CAPTION,
        pickable=True,
    )
    spaces = {"in": ("input cell", (h, w)), "pad": ("padded cell", maps.padded_shape(h, w, pads))}
    picking.pick_inputs(RP_PICK, cell, spaces, st.columns([1.6, 0.8, 0.8, 2.2], vertical_alignment="bottom"))
    if cell.space == "in":
        st.latex(viz.reflect_latex((cell.row, cell.col), pe.terms, float(pe.grads.dx[cell.row, cell.col])))
    st.caption(view.pad_caption(pe, cell, alg))
    cuda_source(pe.launch, key="src_bw_pad")


def section_runtimes(g: gpuops.WindowGeometry, pads: tuple[int, int, int, int]) -> None:
    """Scatter vs gather vs GEMM + fold on the user's image, only when asked."""
    st.subheader("Runtimes on your image")
    with shown_errors("Timing"):
        groups = view.runtime_groups(image, g, pads)
        candidates = {f"{op} · {name}": fn for op, fns in groups.items() for name, fn in fns.items()}
        key = ("backward_compare", image.key, g.KH, g.stride_h, g.pad_top, g.dil_h, pads, backend_name())
        st.caption(view.runtimes_caption(image, g))
        timings = compare(key, candidates, "Compare: time scatter, gather and GEMM")
        if timings:
            found = view.by_operation(groups, timings)
            figure(viz.runtime_groups(found, backend_name(), sty), "backward_times", download=False)
    st.markdown(view.BENCHMARK_NOTE)
    st.page_link("pages/benchmarks.py", label="Benchmarks", icon=":material/speed:")


g = settings()
rp_h, rp_w = int(state.get(RP_H)), int(state.get(RP_W))
rp_pads = tuple(int(state.get(p)) for p in (RP_L, RP_R, RP_T, RP_B))
rules = view.hover_rules(g, (rp_h, rp_w), rp_pads, CHARTS)
rp_shapes = {"in": (rp_h, rp_w), "pad": maps.padded_shape(rp_h, rp_w, rp_pads)}
grids = view.click_grids(g, rp_shapes, (PICK, WPICK, RP_PICK), CHARTS)
picking.click_cell(pick.bridge(rules=rules, style=sty.outline_style()), grids)
if g is not None:
    dx_cell = picking.fitted(PICK, {"dx": (g.H, g.W), "dy": (g.H_out, g.W_out)})
    w_cell = picking.fitted(WPICK, {"w": (g.KH, g.KW), "x": (g.H, g.W)})
    with shown_errors("The backward pass"):
        ex = view.example(
            image, g, (state.get(NUMBERS), int(state.get(SEED))), (state.get(ALG), state.get(WALG))
        )
        section_grad_input(ex, dx_cell)
        section_transposed(ex)
        section_adjoint(g)
        section_grad_weight(ex, w_cell)
st.subheader("Reflect-pad backward: border cells collect several gradients")
rp_h, rp_w, rp_pads = reflect_settings()
rp_shapes = {"in": (rp_h, rp_w), "pad": maps.padded_shape(rp_h, rp_w, rp_pads)}
with shown_errors("Reflect-pad backward"):
    section_reflect(rp_h, rp_w, rp_pads, picking.fitted(RP_PICK, rp_shapes))
if g is not None:
    section_runtimes(g, rp_pads)
