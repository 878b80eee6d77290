"""Backward & transposed convolution: where the gradients of a convolution layer go, and why the
transposed convolution is the same computation.

Click a cell of dX to see the output gradients it gathers (through the flipped kernel), a cell of
dY to see where it scatters; watch conv_transpose2d stamp the kernel; check the adjoint identity
with numbers; pick a weight to see what its gradient sums; fold a reflect pad's gradients back.
"""

import numpy as np
import streamlit as st

import gpuops
from gpuops.conv2d import check_conv2d
from gpuops.maps import conv_backward as maps
from gpuops.maps.reflect_pad import copies_of
from gpuops.reflect_pad import reflect_pad_backward_launch
from ui import budget, navigation, pick, state
from ui.common import backend_name, compare, cuda_source, figure, session_cached, shown_errors, style
from ui.records import Example
from ui.state import Cell, Param
from viz import conv_backward as viz

navigation.through_app()  # a freshly started server may run this file alone (ui/navigation.py)

H = Param("bw_h", 7, "Input H", "slider", lo=2, hi=10)
W = Param("bw_w", 8, "Input W", "slider", lo=2, hi=10)
K = Param("bw_k", 3, "Kernel K", "slider", lo=1, hi=5)
S = Param("bw_stride", 2, "Stride S", "slider", lo=1, hi=4)
P = Param("bw_pad", 1, "Padding P", "slider", lo=0, hi=3, help="Zeros; at most D x (K - 1).")
D = Param("bw_dil", 1, "Dilation D", "slider", lo=1, hi=3)
NUMBERS = Param(
    "bw_nums",
    "integers",
    "Numbers",
    "select",
    choices=("integers", "image"),
    help="Small whole numbers (seeded), or x cropped from your image with dY = y = conv(x, w), "
    "the gradient of L = ½ Σ y².",
)
SEED = Param("bw_seed", 1, "Seed", "number", lo=0, hi=999, help="Another seed draws other numbers.")
ALG = Param("bw_alg", "gather", "grad_input kernel", "radio", choices=gpuops.GRAD_INPUT_ALGORITHMS)
WALG = Param("bw_walg", "direct", "grad_weight kernel", "radio", choices=gpuops.GRAD_WEIGHT_ALGORITHMS)
PICK = Param("bw_pick", Cell("dx", 3, 3), choices=("dx", "dy"))  # in the URL as dx:3,3 or dy:1,2
WPICK = Param("bw_wpick", Cell("w", 1, 1), choices=("w", "x"))
RP_H = Param("bw_rp_h", 4, "Grid H", "slider", lo=1, hi=8)
RP_W = Param("bw_rp_w", 5, "Grid W", "slider", lo=1, hi=8)
RP_L = Param("bw_rp_left", 2, "Left pad", "slider", lo=0, hi=7, help="At most W - 1.")
RP_R = Param("bw_rp_right", 1, "Right pad", "slider", lo=0, hi=7, help="At most W - 1.")
RP_T = Param("bw_rp_top", 1, "Top pad", "slider", lo=0, hi=7, help="At most H - 1.")
RP_B = Param("bw_rp_bottom", 2, "Bottom pad", "slider", lo=0, hi=7, help="At most H - 1.")
RALG = Param(
    "bw_ralg", "scatter", "reflect_pad_backward kernel", "radio", choices=gpuops.REFLECT_BACKWARD_ALGORITHMS
)
RP_PICK = Param("bw_rp_pick", Cell("in", 1, 1), choices=("in", "pad"))
PARAMS = [
    H,
    W,
    K,
    S,
    P,
    D,
    NUMBERS,
    SEED,
    ALG,
    WALG,
    PICK,
    WPICK,
    RP_H,
    RP_W,
    RP_L,
    RP_R,
    RP_T,
    RP_B,
    RALG,
    RP_PICK,
]
DX_CHART, ANIM_CHART, COUNT_CHART, DW_CHART, RP_CHART = "bw_dx", "bw_anim", "bw_count", "bw_dw", "bw_reflect"
ALG_NAMES = {
    "scatter": "scatter (v1, atomicAdd)",
    "gather": "gather (v2)",
    "gemm_fold": "GEMM + fold",
    "direct": "direct (v3)",
    "gemm": "GEMM (unfold + cuBLAS)",
}
HOVER_BYTES = 150_000  # hover maps travel with every rerun: only for small grids

state.use(PARAMS)
image = st.session_state["image"]
sty = style()

st.title("Backward & transposed convolution")
st.caption(
    "The backward pass sends each output gradient dY back along the taps that read the input: each input "
    "cell **gathers** the gradients of the outputs that read it, through the flipped kernel. **Click a "
    "cell** "
    "of dX or dY."
)


# ---- settings: one row; slider ranges follow the geometry ------------------------------------------------
def settings() -> gpuops.WindowGeometry | None:
    row = st.columns([1, 1, 1, 1, 1, 1, 1.15, 0.85], vertical_alignment="bottom")
    h = state.widget(H, container=row[0])
    w = state.widget(W, container=row[1])
    side = min(h, w)
    asked_k = state.get(K)
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


# ---- the example: x, w, dY and what the kernels compute from them ------------------------------------------
def _device(plane: np.ndarray):
    return gpuops.asarray(plane[None, None])


def example(g: gpuops.WindowGeometry) -> Example:
    nums, seed = state.get(NUMBERS), int(state.get(SEED))
    rng = np.random.default_rng(seed)
    w = rng.choice([-2.0, -1.0, 1.0, 2.0], size=(g.KH, g.KW)).astype(np.float32)
    args = dict(stride=(g.stride_h, g.stride_w), padding=(g.pad_top, g.pad_left), dilation=(g.dil_h, g.dil_w))
    if nums == "image":  # dY = y: the gradient of L = ½ Σ y² is y itself
        crop = maps.detail_crop(image.planes.mean(axis=0), g.H, g.W)
        x, fmt = np.round(crop.values, 1).astype(np.float32), ".1f"  # one decimal: dY and dX keep one too
        dy = gpuops.to_numpy(gpuops.conv2d(_device(x), _device(w), **args))[0, 0]
        note = (
            f"x: rows {crop.top}-{crop.bottom}, columns {crop.left}-{crop.right} of {image.name} (grey); "
            "dY = y = conv2d(x, w), the gradient of L = ½ Σ y²."
        )
    else:
        x, fmt, note = rng.integers(0, 5, size=(g.H, g.W)).astype(np.float32), ".3g", ""
        dy = rng.choice([-3.0, -2.0, -1.0, 1.0, 2.0, 3.0], size=(g.H_out, g.W_out)).astype(np.float32)
    alg, walg = state.get(ALG), state.get(WALG)
    dx = gpuops.conv2d_grad_input(_device(dy), (1, 1, g.H, g.W), _device(w), **args, algorithm=alg)
    dw = gpuops.conv2d_grad_weight(_device(dy), _device(x), (1, 1, g.KH, g.KW), **args, algorithm=walg)
    plan = gpuops.plan_conv2d_backward(
        (1, 1, g.H_out, g.W_out),
        (1, 1, g.H, g.W),
        (1, 1, g.KH, g.KW),
        **args,
        algorithm=alg,
        weight_algorithm=walg,
    )
    key = (g, nums, seed, image.key if nums == "image" else "")
    return Example(g, x, w, dy, gpuops.to_numpy(dx)[0, 0], gpuops.to_numpy(dw)[0, 0], plan, fmt, note, key)


# ---- clicks and the keyboard path ------------------------------------------------------------------------
def apply_click(click: pick.Click | None, g: gpuops.WindowGeometry) -> None:
    """A click picks a cell of the figure it landed on; the other settings stay as they are."""
    if click is None:
        return
    dx_shape, dy_shape, k_shape = (g.H, g.W), (g.H_out, g.W_out), (g.KH, g.KW)
    rp_shape = (state.get(RP_H), state.get(RP_W))
    rp_padded = maps.padded_shape(*rp_shape, tuple(state.get(p) for p in (RP_L, RP_R, RP_T, RP_B)))
    where = {
        (DX_CHART, "x"): (PICK, "dy", dy_shape),
        (DX_CHART, "x4"): (PICK, "dx", dx_shape),
        (ANIM_CHART, "x"): (PICK, "dy", dy_shape),
        (ANIM_CHART, "x3"): (PICK, "dx", dx_shape),
        (COUNT_CHART, "x"): (PICK, "dx", dx_shape),
        (DW_CHART, "x"): (WPICK, "x", dx_shape),
        (DW_CHART, "x3"): (WPICK, "w", k_shape),
        (RP_CHART, "x"): (RP_PICK, "pad", rp_padded),
        (RP_CHART, "x2"): (RP_PICK, "in", rp_shape),
        (RP_CHART, "x3"): (RP_PICK, "in", rp_shape),
    }
    target = where.get((click.chart, click.panel))
    if target is None:
        return
    param, space, shape = target
    if 0 <= click.row < shape[0] and 0 <= click.col < shape[1]:
        state.put(param, Cell(space, click.row, click.col))


def fitted(param: Param, shapes: dict[str, tuple[int, int]]) -> Cell:
    """The pick of `param`, moved to the nearest cell when its grid has shrunk under it."""
    cell = state.get(param) or param.default
    cell = Cell(cell.space, *maps.clamp_cell(cell.row, cell.col, shapes[cell.space]))
    state.put(param, cell)
    return cell


def _typed(param: Param, prefix: str) -> None:
    state.put(
        param,
        Cell(
            st.session_state[f"{prefix}_space"],
            int(st.session_state[f"{prefix}_row"] or 0),
            int(st.session_state[f"{prefix}_col"] or 0),
        ),
    )


def pick_inputs(
    param: Param, cell: Cell, shapes: dict[str, tuple[int, int]], names: dict[str, str], row: list
) -> None:
    """The keyboard path, in sync with clicks: which grid, row and column."""
    prefix = f"w_{param.key}"
    st.session_state.update(
        {f"{prefix}_space": cell.space, f"{prefix}_row": cell.row, f"{prefix}_col": cell.col}
    )
    row[0].radio(
        "Picked",
        list(names),
        format_func=names.get,
        key=f"{prefix}_space",
        horizontal=True,
        on_change=_typed,
        args=(param, prefix),
    )
    shape = shapes[cell.space]
    row[1].number_input(
        "row", 0, shape[0] - 1, step=1, key=f"{prefix}_row", on_change=_typed, args=(param, prefix)
    )
    row[2].number_input(
        "column", 0, shape[1] - 1, step=1, key=f"{prefix}_col", on_change=_typed, args=(param, prefix)
    )


def _thread(ref: object) -> str:
    return f"block {tuple(ref.block)}, thread {tuple(ref.thread)}"


# ---- sections ---------------------------------------------------------------------------------------------
def section_grad_input(ex: Example, cell: Cell) -> None:
    """dE/dX: pick a dX cell (gather: its sources and the flipped taps they meet) or a dY cell
    (scatter: the dX cells it adds into)."""
    g = ex.g
    if cell.space == "dx":
        src = maps.gradient_sources(g, cell.row, cell.col)
        links = viz.Links(outputs=src.outputs, taps=src.taps, flipped=src.flipped)
    else:
        targets = maps.scatter_targets(g, cell.row, cell.col)
        links = viz.Links(taps=targets[:, 2:], inputs=targets[:, :2])
    fig = viz.grad_input_figure(ex, sty, picked=(cell.space, cell.row, cell.col), links=links)
    figure(
        fig,
        DX_CHART,
        "w flipped[a, b] = w[K-1-a, K-1-b] (rotated by 180°). Hover a cell of dX or dY: what it "
        "maps to lights up; click to pick it. Letters (where the cells have room) pair the two factors of "
        "each product.",
        pickable=True,
    )
    row = st.columns([1.5, 0.8, 0.8, 2.4], vertical_alignment="bottom")
    pick_inputs(
        PICK, cell, {"dx": (g.H, g.W), "dy": (g.H_out, g.W_out)}, {"dx": "dX cell", "dy": "dY cell"}, row
    )
    state.widget(ALG, container=row[3], format_func=ALG_NAMES.get)
    launch = ex.plan.input_launch
    if cell.space == "dx":
        terms = maps.gradient_terms(ex.dy[None], ex.w[None, None], g, 0, cell.row, cell.col)
        st.latex(viz.gather_latex((cell.row, cell.col), src, terms, float(ex.dx[cell.row, cell.col])))
        st.caption(
            f"Sum of {len(terms.product)} products = {terms.total:.6g}; the {ALG_NAMES[state.get(ALG)]} "
            f"kernel "
            f"computed dX[{cell.row}, {cell.col}] = {ex.dx[cell.row, cell.col]:.6g}. "
            + _who_gathers(ex, cell, src)
        )
    else:
        terms = maps.scatter_terms(ex.dy, ex.w, g, cell.row, cell.col)
        st.latex(viz.scatter_latex((cell.row, cell.col), terms))
        st.caption(_who_scatters(ex, cell, len(terms.targets)))
    if ex.note:
        st.caption(ex.note)
    cuda_source(
        launch,
        "" if launch is None or launch.source == "conv_backward.cu" else " (the fold of GEMM + fold)",
        key="src_bw_dx",
    )
    if launch is None and state.get(ALG) == "gemm_fold":
        st.caption(
            "GEMM + fold with a 1x1 kernel, stride 1 and no padding: cuBLAS writes dX itself, nothing to "
            "fold."
        )


def _who_gathers(ex: Example, cell: Cell, src: object) -> str:
    launch, alg = ex.plan.input_launch, state.get(ALG)
    if alg == "gather":
        return (
            f"On the GPU, {_thread(launch.thread_of(0, 0, cell.row, cell.col))} of "
            f"`{launch.kernel}` computes this cell alone, adding the products in a fixed order: no atomics."
        )
    if alg == "scatter":
        threads = [_thread(launch.thread_of(0, 0, int(oh), int(ow))) for oh, ow in src.outputs[:4]]
        more = "" if len(src.outputs) <= 4 else f" and {len(src.outputs) - 4} more"
        return (
            f"On the GPU, `{launch.kernel}` has no thread for this cell: the threads of its "
            f"{len(src.outputs)} "
            f"sources ({'; '.join(threads)}{more}) each atomicAdd their product into it, in any order."
        )
    if launch is None:
        return "cuBLAS computes this cell in the GEMM (1x1 kernel, stride 1, no padding: nothing to fold)."
    return (
        f"cuBLAS first computes cols = wᵀ · dY (one column per output, one row per tap); then "
        f"{_thread(launch.thread_of(0, 0, cell.row, cell.col))} of `{launch.kernel}` sums the column entries "
        "that belong to this cell."
    )


def _who_scatters(ex: Example, cell: Cell, n: int) -> str:
    launch, alg = ex.plan.input_launch, state.get(ALG)
    if alg == "scatter":
        return (
            f"On the GPU, {_thread(launch.thread_of(0, 0, cell.row, cell.col))} of `{launch.kernel}` reads "
            f"dY[{cell.row}, {cell.col}] once and makes these {n} atomicAdds; neighbouring threads add into "
            "the same cells at the same time, so the order (and the last bits) can change from run to run."
        )
    return (
        f"This is the scatter view: with the {ALG_NAMES[alg]} kernel no thread owns dY[{cell.row}, "
        f"{cell.col}]; "
        f"each of the {n} dX cells it feeds reads it while gathering (pick the scatter kernel to see its "
        f"thread)."
    )


def section_transposed(ex: Example) -> None:
    """conv_transpose2d as stamps, with the overlap count (checkerboard) and output_padding."""
    g = ex.g
    tg = maps.transposed_of(g)
    op_h, op_w = tg.output_padding
    st.subheader("The transposed convolution is the backward pass: stamp the kernel at each input cell")
    counts = maps.overlap_count(tg)
    width = viz.FULL_WIDTH[sty.name]

    def animation() -> object:
        return viz.stamp_animation(
            ex.dy, maps.stamp_frames(tg, ex.dy, ex.w), sty, fmt=ex.fmt, plot_width=width
        )

    fig = session_cached(("bw_anim", ex.key, sty.name), animation)  # the same for every pick: built once
    figure(
        fig,
        ANIM_CHART,
        f"Press Play, or step with the slider. conv_transpose2d(dY, w, stride {g.stride_h}, "
        f"padding {g.pad_top}, output_padding {_pair(tg.output_padding)}, dilation {g.dil_h}) stamps dY[i, "
        f"j] · w "
        f"with its top-left tap at (i·{g.stride_h} - {g.pad_top}, j·{g.stride_w} - {g.pad_left}); blue cells "
        f"fall "
        "outside the output (padding crops them); the last frame is dX above, cell for cell.",
        pickable=True,
    )
    left, right = (st.container(), st.container()) if sty.presentation else st.columns([1, 1.5], gap="medium")
    with left:
        cell = state.get(PICK)
        picked = (cell.row, cell.col) if cell.space == "dx" else None
        figure(
            viz.overlap_figure(
                counts, sty, picked=picked, plot_width=width // 2 if not sty.presentation else width
            ),
            COUNT_CHART,
            "How many stamps land on each output cell: the number of gradients each dX cell gathers. "
            "Click a cell to pick it above.",
            pickable=True,
        )
    with right:
        st.markdown(checkerboard_text(g, counts))
        st.markdown(output_padding_text(g, op_h, op_w))


def _pair(p: tuple[int, int]) -> str:
    return str(p[0]) if p[0] == p[1] else f"({p[0]}, {p[1]})"


def checkerboard_text(g: gpuops.WindowGeometry, counts: np.ndarray) -> str:
    phases = maps.stamps_per_phase(g.KH, g.stride_h, g.dil_h)
    found = ", ".join(str(int(v)) for v in sorted(set(counts.ravel().tolist()), reverse=True))
    if len(set(phases.tolist())) == 1:
        return (
            f"**Even overlap.** With K = {g.KH}, stride {g.stride_h} and dilation {g.dil_h}, every output "
            f"cell away "
            f"from the border receives {int(phases[0]) ** 2} stamps ({int(phases[0])} per axis): no "
            f"checkerboard. "
            f"(Counts here: {found}; fewer at the border.) Try K = 3 with stride 2."
        )
    seq = ", ".join(str(int(v)) for v in phases)
    return (
        f"**Checkerboard.** K = {g.KH} taps with stride {g.stride_h} (dilation {g.dil_h}): the taps do not "
        f"spread "
        f"evenly over the stride's {g.stride_h} phases, so along each axis output cells away from the border "
        f"receive {seq}, {seq}, … stamps in turn, and in 2-D the counts alternate ({found} here). A "
        f"transposed "
        "convolution used for upsampling paints this pattern into its output unless its weights make up for "
        "it."
    )


def output_padding_text(g: gpuops.WindowGeometry, op_h: int, op_w: int) -> str:
    if op_h == 0 and op_w == 0:
        return (
            f"**output_padding = 0 here.** The last window reaches the last padded row and column, so "
            f"conv_transpose2d from {g.H_out} x {g.W_out} gives back exactly {g.H} x {g.W}."
        )
    parts = [(op_h, "row", "bottom"), (op_w, "column", "right")]
    left_out = " and ".join(f"{n} {what}{'s' * (n != 1)}" for n, what, _ in parts if n)
    added = " and ".join(f"{n} {what}{'s' * (n != 1)} at the {side}" for n, what, side in parts if n)
    return (
        f"**output_padding = {_pair((op_h, op_w))} matters here.** The last window stops short of the padded "
        f"input by {left_out} (the floor in the output-size formula), so inputs of several sizes give the "
        f"same "
        f"{g.H_out} x {g.W_out} output. From {g.H_out} x {g.W_out}, conv_transpose2d would give "
        f"{g.H - op_h} x {g.W - op_w}; output_padding adds {added} to give back {g.H} x {g.W} "
        f"(it must be smaller than the stride or the dilation)."
    )


def section_adjoint(g: gpuops.WindowGeometry) -> None:
    """<conv(x), y> = <x, conv_transpose(y)> with numbers, for the current settings."""
    st.subheader("Why: the adjoint identity ⟨conv(x), y⟩ = ⟨x, conv_transpose(y)⟩")
    rng = np.random.default_rng(1000 + int(state.get(SEED)))
    C, M = 2, 3
    x = rng.standard_normal((1, C, g.H, g.W)).astype(np.float32)
    y = rng.standard_normal((1, M, g.H_out, g.W_out)).astype(np.float32)
    w = rng.standard_normal((M, C, g.KH, g.KW)).astype(np.float32)
    lhs, rhs = gpuops.adjoint_identity(
        gpuops.asarray(x),
        gpuops.asarray(y),
        gpuops.asarray(w),
        stride=g.stride_h,
        padding=g.pad_top,
        dilation=g.dil_h,
    )
    cols = st.columns(3)
    cols[0].metric("⟨conv2d(x), y⟩", f"{lhs:.6f}")
    cols[1].metric("⟨x, conv_transpose2d(y)⟩", f"{rhs:.6f}")
    cols[2].metric(
        "difference", f"{lhs - rhs:.2e}", help="float32 rounding: the sums add in different orders"
    )
    st.markdown(
        f"Random x ({C} x {g.H} x {g.W}), y ({M} x {g.H_out} x {g.W_out}) and w ({M} x {C} x {g.KH} x "
        f"{g.KW}), "
        "the current kernel, stride, padding and dilation. Both sides add the same products "
        "x[c, ih, iw] · w[m, c, ki, kj] · y[m, oh, ow], one for every tap of every window, grouped once by "
        "output "
        "and once by input. So conv_transpose2d is the transpose (the adjoint) of the convolution's matrix, "
        "and "
        "by the chain rule dE/dX = Wᵀ · dE/dY: **the transposed convolution of dY IS the backward pass of "
        "the "
        "convolution with respect to its input.**"
    )


def section_grad_weight(ex: Example, cell: Cell) -> None:
    """dE/dW: the input cells and output gradients one weight sums over (PMPP fig. 16.11), and back."""
    g = ex.g
    st.subheader("dE/dW: what one weight's gradient sums")
    if cell.space == "w":
        terms = maps.weight_terms(ex.dy, ex.x, g, cell.row, cell.col)
        pairs = terms.pairs
    else:
        src = maps.gradient_sources(g, cell.row, cell.col)
        pairs = np.hstack([src.outputs, src.taps]).reshape(-1, 4)
    fig = viz.grad_weight_figure(ex, sty, picked=(cell.space, cell.row, cell.col), pairs=pairs)
    figure(
        fig,
        DW_CHART,
        "Hover or click a weight of dW (the cells it sums light up) or an input cell of x "
        "(the weights it feeds). Letters (where the cells have room) pair the two factors of each product.",
        pickable=True,
    )
    row = st.columns([1.5, 0.8, 0.8, 2.4], vertical_alignment="bottom")
    pick_inputs(WPICK, cell, {"w": (g.KH, g.KW), "x": (g.H, g.W)}, {"w": "weight", "x": "input cell"}, row)
    state.widget(WALG, container=row[3], format_func=ALG_NAMES.get)
    launch = ex.plan.weight_launch
    if cell.space == "w":
        st.latex(viz.weight_latex((cell.row, cell.col), terms, float(ex.dw[cell.row, cell.col])))
        how = (
            f"On the GPU, block {launch.thread_of(0, 0, cell.row, cell.col).block[0]} of `{launch.kernel}` "
            f"sums these products for this one weight (its threads split them, a shared-memory tree adds the "
            f"shares)"
            if state.get(WALG) == "direct"
            else "With GEMM, unfold copies the input cells of every window into columns, and cuBLAS "
            "multiplies dY (one row) by them: this weight is one entry of that product"
        )
        st.caption(
            f"The input cells tap ({cell.row}, {cell.col}) read form a grid {g.stride_h} apart: dY slides "
            f"over x "
            f"like a convolution with stride {g.dil_h} (the dilation) and dilation {g.stride_h} (the "
            f"stride). "
            f"Sum = {terms.total:.6g}; the kernel computed {ex.dw[cell.row, cell.col]:.6g}. {how}."
        )
    else:
        st.caption(
            f"x[{cell.row}, {cell.col}] was read by {len(pairs)} (output, tap) pairs: it adds "
            f"dY[oh, ow] · x[{cell.row}, {cell.col}] to each of those weights' gradients."
        )
    cuda_source(
        launch,
        "" if launch is None or launch.source == "conv_backward.cu" else " (the unfold of GEMM)",
        key="src_bw_dw",
    )


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


def section_reflect(h: int, w: int, pads: tuple[int, int, int, int], cell: Cell) -> None:
    """Reflect-pad backward: every padded cell's gradient goes back to the input cell it copied."""
    rng = np.random.default_rng(2004 + int(state.get(SEED)))
    dy = rng.choice([-3.0, -2.0, -1.0, 1.0, 2.0, 3.0], size=maps.padded_shape(h, w, pads)).astype(np.float32)
    alg = state.get(RALG)
    dx = gpuops.to_numpy(gpuops.reflect_pad_backward(gpuops.asarray(dy), pads, algorithm=alg))
    counts = maps.reflect_backward_count(h, w, pads)
    if cell.space == "in":
        terms = maps.reflect_terms(dy, pads, cell.row, cell.col)
        cells = terms.cells
    else:
        cells = np.array([maps.reflect_receiver(h, w, pads, cell.row, cell.col)])
    grads = viz.PadGrads(dy, counts, dx, pads)
    fig = viz.reflect_backward_figure(grads, sty, picked=(cell.space, cell.row, cell.col), cells=cells)
    figure(
        fig,
        RP_CHART,
        "Cyan box: the input inside the padded grid. Border cells were copied into the padding "
        "(mirrored, edge not repeated), so their gradient is a sum: the count map. Hover or click a cell.",
        pickable=True,
    )
    row = st.columns([1.6, 0.8, 0.8, 2.2], vertical_alignment="bottom")
    pick_inputs(
        RP_PICK,
        cell,
        {"in": (h, w), "pad": maps.padded_shape(h, w, pads)},
        {"in": "input cell", "pad": "padded cell"},
        row,
    )
    launch = reflect_pad_backward_launch(1, h, w, pads, alg)
    if cell.space == "in":
        st.latex(viz.reflect_latex((cell.row, cell.col), terms, float(dx[cell.row, cell.col])))
        if alg == "gather":
            who = (
                f"On the GPU, {_thread(launch.thread_of(0, cell.row, cell.col))} of `{launch.kernel}` reads "
                f"these "
                f"{len(terms.cells)} cells and writes the sum: deterministic."
            )
        else:
            who = (
                f"On the GPU (`{launch.kernel}`, as PyTorch's kernel), the threads of these "
                f"{len(terms.cells)} padded "
                "cells each atomicAdd their gradient into this cell, in any order."
            )
        st.caption(f"Sum = {terms.total:.6g}; the kernel computed {dx[cell.row, cell.col]:.6g}. {who}")
    else:
        y, x = cells[0]
        who = (
            f"{_thread(launch.thread_of(0, cell.row, cell.col))} of `{launch.kernel}` atomically adds it "
            f"there"
            if alg == "scatter"
            else f"the thread of input cell ({y}, {x}) reads it while gathering"
        )
        st.caption(
            f"Padded cell ({cell.row}, {cell.col}) copied input cell ({y}, {x}) in the forward pass, so its "
            f"gradient {dy[cell.row, cell.col]:.3g} is added to dX[{y}, {x}]: {who}."
        )
    cuda_source(launch, key="src_bw_pad")


def section_runtimes(g: gpuops.WindowGeometry, pads: tuple[int, int, int, int]) -> None:
    """Scatter vs gather vs GEMM + fold on the user's image, only when asked."""
    st.subheader("Runtimes on your image")
    C, Hi, Wi = image.planes.shape
    M = 8
    kw = dict(stride=g.stride_h, padding=g.pad_top, dilation=g.dil_h)
    with shown_errors("Timing"):
        ig = gpuops.window_geometry(Hi, Wi, g.KH, **kw)
        problem = check_conv2d((1, C, Hi, Wi), (M, C, g.KH, g.KW), None, **kw)
        budget.check(
            budget.conv2d_cost(problem, "im2col"),
            f"Timing the backward pass on this {Wi} x {Hi} image",
            "Use a smaller kernel K or a smaller working size in the sidebar.",
        )
        xp = gpuops.default_xp()
        x = gpuops.asarray(image.planes[None])
        dy = xp.full((1, M, ig.H_out, ig.W_out), 0.5, dtype=np.float32)
        w = xp.full((M, C, g.KH, g.KW), 0.25, dtype=np.float32)
        dyp = xp.full((C, *maps.padded_shape(Hi, Wi, pads)), 0.5, dtype=np.float32)
        groups = {
            "grad_input": {
                ALG_NAMES[a]: (lambda a=a: gpuops.conv2d_grad_input(dy, x.shape, w, **kw, algorithm=a))
                for a in gpuops.GRAD_INPUT_ALGORITHMS
            },
            "grad_weight": {
                ALG_NAMES[a]: (lambda a=a: gpuops.conv2d_grad_weight(dy, x, w.shape, **kw, algorithm=a))
                for a in gpuops.GRAD_WEIGHT_ALGORITHMS
            },
            "reflect_pad_backward": {
                ALG_NAMES[a]: (lambda a=a: gpuops.reflect_pad_backward(dyp, pads, algorithm=a))
                for a in gpuops.REFLECT_BACKWARD_ALGORITHMS
            },
        }
        candidates = {f"{op} · {name}": fn for op, fns in groups.items() for name, fn in fns.items()}
        key = ("bw_compare", image.key, g.KH, g.stride_h, g.pad_top, g.dil_h, pads, backend_name())
        st.caption(
            f"N = 1, C = {C}, {Hi} x {Wi} px, M = {M} filters of {g.KH} x {g.KW}, stride {g.stride_h}, "
            f"padding "
            f"{g.pad_top}, dilation {g.dil_h}; reflect_pad_backward with the pads above. Timed only when you "
            f"ask."
        )
        timings = compare(key, candidates, "Compare: time scatter, gather and GEMM")
        if timings:
            found = {
                op: {n: timings[f"{op} · {n}"].median_ms for n in fns if f"{op} · {n}" in timings}
                for op, fns in groups.items()
            }
            figure(viz.runtime_groups(found, backend_name(), sty), "bw_times", download=False)
    st.markdown(
        "PyTorch's backward kernels (`aten.convolution_backward`, `reflection_pad2d_backward`) are not timed "
        "here: the benchmark command (`python3 -m bench.suite`) times them next to ours in the same run on "
        "the GPU. See the measured results on the Benchmarks page."
    )
    st.page_link("pages/benchmarks.py", label="Benchmarks", icon=":material/speed:")


def hover_maps(g: gpuops.WindowGeometry | None, h: int, w: int, pads: tuple[int, int, int, int]) -> dict:
    """Client-side hover maps of every small grid on the page (dropped when they grow large)."""
    out = {}
    if g is not None:
        sources = {}
        for i in range(g.H):
            for j in range(g.W):
                s = maps.gradient_sources(g, i, j)
                sources[(i, j)] = (s.outputs, s.taps, s.flipped)
        targets = {(i, j): maps.scatter_targets(g, i, j) for i in range(g.H_out) for j in range(g.W_out)}
        by_weight = {(i, j): maps.weight_pairs(g, i, j) for i in range(g.KH) for j in range(g.KW)}
        by_input = {key: np.hstack([outs, taps]).reshape(-1, 4) for key, (outs, taps, _) in sources.items()}
        out[DX_CHART] = pick.hover_map(viz.grad_input_hover(DX_CHART, sources, targets))
        out[COUNT_CHART] = pick.hover_map(
            viz.counts_hover([(ANIM_CHART, "x"), (DX_CHART, "x")], {k: v[0] for k, v in sources.items()})
        )
        out[DW_CHART] = pick.hover_map(viz.grad_weight_hover(DW_CHART, by_weight, by_input))
    if all(p < side for p, side in zip(pads, (w, w, h, h), strict=True)):  # else the widgets fit them first
        copies = {(y, x): copies_of(h, w, pads, y, x) for y in range(h) for x in range(w)}
        out[RP_CHART] = pick.hover_map(viz.reflect_hover(RP_CHART, copies))
    return {name: m for name, m in out.items() if pick.size_of({name: m}) <= HOVER_BYTES}


# ---- the page -------------------------------------------------------------------------------------------
g = settings()
rp_h, rp_w = int(state.get(RP_H)), int(state.get(RP_W))
rp_pads = tuple(int(state.get(p)) for p in (RP_L, RP_R, RP_T, RP_B))
hover = session_cached(("bw_hover", g, rp_h, rp_w, rp_pads), lambda: hover_maps(g, rp_h, rp_w, rp_pads))
apply_click(pick.bridge(hover=hover, style=sty.outline_style()), g)
if g is not None:
    dx_cell = fitted(PICK, {"dx": (g.H, g.W), "dy": (g.H_out, g.W_out)})
    w_cell = fitted(WPICK, {"w": (g.KH, g.KW), "x": (g.H, g.W)})
    with shown_errors("The backward pass"):
        ex = example(g)
        section_grad_input(ex, dx_cell)
        section_transposed(ex)
        section_adjoint(g)
        section_grad_weight(ex, w_cell)
st.subheader("Reflect-pad backward: border cells collect several gradients")
rp_h, rp_w, rp_pads = reflect_settings()
rp_shapes = {"in": (rp_h, rp_w), "pad": maps.padded_shape(rp_h, rp_w, rp_pads)}
with shown_errors("Reflect-pad backward"):
    section_reflect(rp_h, rp_w, rp_pads, fitted(RP_PICK, rp_shapes))
if g is not None:
    section_runtimes(g, rp_pads)
