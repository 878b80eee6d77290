"""im2col + GEMM: copy every receptive field into one column of X_unroll, then filters x X_unroll is one
matrix multiply. PMPP ch. 16's worked example, editable and clickable; then how big X_unroll gets for
your image. Index maps come from gpuops.maps.im2col, figures from viz.im2col."""

import numpy as np
import pandas as pd
import streamlit as st

import gpuops
from gpuops.maps import im2col as maps
from ui import budget, navigation, pick, state
from ui.common import backend_name, compare, cuda_source, figure, session_cached, shown_errors, style
from ui.state import Cell, Param
from viz import im2col as viz

navigation.through_app()  # a freshly started server may run this file alone (ui/navigation.py)

# PMPP ch. 16's worked example: 3 input maps of 3 x 3, 2 filters of 3 x 2 x 2, and the book's outputs.
BOOK_X = [
    [[1, 2, 0], [1, 1, 3], [0, 2, 2]],
    [[0, 2, 1], [0, 3, 2], [1, 1, 0]],
    [[1, 2, 1], [0, 1, 3], [3, 3, 2]],
]
BOOK_W = [
    [[[1, 1], [2, 2]], [[1, 1], [1, 1]], [[0, 1], [1, 0]]],
    [[[1, 0], [0, 1]], [[2, 1], [2, 1]], [[1, 2], [2, 0]]],
]
BOOK_Y = [[[14, 20], [15, 24]], [[12, 24], [17, 26]]]
CHARTS = ("inputs", "xunroll", "ymat", "wmat")  # pickable figures
KINDS = {"col": "column l", "out": "output Y[m, l]", "in": "input cell"}
HOVER_TARGETS = 10_000  # outlines per chart's hover map (~150 kB, sent with every rerun), at most

C_ = Param("im_c", 3, "Channels C", "number", lo=1, hi=3)
H_ = Param("im_h", 3, "Height H", "number", lo=2, hi=6)
W_ = Param("im_w", 3, "Width W", "number", lo=2, hi=6)
K_ = Param("im_k", 2, "Kernel K", "number", lo=1, hi=4, help="Range follows H, W, padding and dilation.")
M_ = Param("im_m", 2, "Filters M", "number", lo=1, hi=3)
S_ = Param("im_stride", 1, "Stride S", "number", lo=1, hi=3)
P_ = Param("im_pad", 0, "Padding P", "number", lo=0, hi=2)
D_ = Param("im_dil", 1, "Dilation D", "number", lo=1, hi=3, help="Range follows H, W, padding and K.")
PICK = Param("im_pick", Cell("out", 0, 0), choices=tuple(KINDS))  # col:0,l  out:m,l  in:i,j (+ im_pc)
PICK_C = Param("im_pc", 0, lo=0, hi=2)  # the channel of a picked input cell
IMG_K = Param("im_img_k", 3, "Kernel K for your image", "slider", lo=1, hi=7)
PARAMS = [C_, H_, W_, K_, M_, S_, P_, D_, PICK, PICK_C, IMG_K]
DEFAULTS = {p.key: p.default for p in PARAMS if p is not IMG_K}
state.use(PARAMS)
image = st.session_state["image"]
st_style = style()


def section_title() -> None:
    st.title("im2col + GEMM")
    st.caption(
        "Copy every receptive field into one column of X_unroll; then W × X_unroll is a single matrix "
        "multiply, what GPUs (cuBLAS) run fastest. Click any cell of the figures."
    )


def reset_to_book() -> None:
    for key, value in DEFAULTS.items():
        st.session_state[key] = value
    st.session_state["im2col_gen"] = st.session_state.get("im2col_gen", 0) + 1  # fresh editors
    st.session_state.pop("im2col_cells", None)


def section_settings() -> tuple[int, ...]:
    """The example's shape, one compact row; K and D ranges follow the padded input."""
    H, W, P = state.get(H_), state.get(W_), state.get(P_)
    K = state.clamp(K_, 1, min(K_.hi, maps.max_kernel(H, W, P, state.get(D_))))
    d_hi = maps.max_dilation(H, W, P, K)
    cols = st.columns([1] * 8 + [1.3], vertical_alignment="bottom")
    values = [
        state.widget(C_, container=cols[0]),
        state.widget(H_, container=cols[1]),
        state.widget(W_, container=cols[2]),
        state.widget(K_, container=cols[3], hi=min(K_.hi, maps.max_kernel(H, W, P, state.get(D_)))),
        state.widget(M_, container=cols[4]),
        state.widget(S_, container=cols[5]),
        state.widget(P_, container=cols[6]),
        state.widget(D_, container=cols[7], hi=D_.hi if d_hi is None else min(D_.hi, d_hi)),
    ]
    cols[8].button(
        "PMPP",
        on_click=reset_to_book,
        icon=":material/restart_alt:",
        help="C = 3 maps of 3 x 3, M = 2 filters of 2 x 2, stride 1, no padding (PMPP ch. 16)",
    )
    return tuple(int(v) for v in values)


# ---- the pick: a click, or the keyboard path (number inputs in sync) ---------------------------------------
def first_column(g: gpuops.WindowGeometry, C: int, c: int, i: int, j: int) -> int:
    reading = maps.columns_reading(C, g, c, i, j)
    return int(reading[0]) if reading.size else 0


def column_of_pick(p: Cell, g: gpuops.WindowGeometry, C: int) -> int:
    return first_column(g, C, state.get(PICK_C), p.row, p.col) if p.space == "in" else p.col


def fitted(p: Cell, g: gpuops.WindowGeometry, C: int, M: int) -> Cell:
    """The pick kept inside the current geometry (settings changed under it)."""
    if p.space == "in":
        state.clamp(PICK_C, 0, C - 1)
        return Cell("in", min(p.row, g.H - 1), min(p.col, g.W - 1))
    return Cell(p.space, min(p.row, M - 1) if p.space == "out" else 0, min(p.col, g.L - 1))


def apply_click(click: pick.Click | None, g: gpuops.WindowGeometry, C: int, M: int) -> None:
    if click is None:
        return
    if click.chart == "inputs":
        if 0 <= click.row < g.H and 0 <= click.col < g.W:
            state.put(PICK, Cell("in", click.row, click.col))
            state.put(PICK_C, min(viz.channel_of_panel(click.panel), C - 1))
        else:
            st.toast(
                f"({click.row}, {click.col}) is padding: a zero, not an input cell.", icon=":material/info:"
            )
    elif click.chart == "xunroll" and 0 <= click.col < g.L:
        state.put(PICK, Cell("col", 0, click.col))
    elif click.chart == "ymat" and 0 <= click.row < M and 0 <= click.col < g.L:
        state.put(PICK, Cell("out", click.row, click.col))
    elif click.chart == "wmat" and 0 <= click.row < M:
        state.put(PICK, Cell("out", click.row, column_of_pick(state.get(PICK), g, C)))


def _on_kind(g: gpuops.WindowGeometry, C: int) -> None:
    p, kind = state.get(PICK), st.session_state["w_im_kind"]
    l = column_of_pick(p, g, C)
    if kind == "in":
        channel, rows, cols, inside = maps.column_taps(C, g, l)
        at = int(np.argmax(inside)) if inside.any() else None
        state.put(PICK_C, int(channel[at]) if at is not None else 0)
        state.put(PICK, Cell("in", int(rows[at]), int(cols[at])) if at is not None else Cell("in", 0, 0))
    else:
        state.put(PICK, Cell(kind, 0, l))


def _on_number() -> None:
    p, ss = state.get(PICK), st.session_state
    if p.space == "in":
        state.put(PICK_C, int(ss["w_im_pc"]))
        state.put(PICK, Cell("in", int(ss["w_im_pi"]), int(ss["w_im_pj"])))
    else:
        state.put(
            PICK, Cell(p.space, int(ss.get("w_im_pm", 0)) if p.space == "out" else 0, int(ss["w_im_pl"]))
        )


def _number(container, label: str, key: str, value: int, hi: int) -> None:
    st.session_state[key] = value
    container.number_input(label, min_value=0, max_value=max(0, hi), step=1, key=key, on_change=_on_number)


def section_pick(g: gpuops.WindowGeometry, C: int, M: int) -> Cell:
    p = state.get(PICK)
    cols = st.columns([3.2, 1, 1, 1, 1.6], vertical_alignment="bottom")
    st.session_state["w_im_kind"] = p.space
    cols[0].radio(
        "Picked (click a figure, or type)",
        list(KINDS),
        format_func=KINDS.get,
        key="w_im_kind",
        horizontal=True,
        on_change=_on_kind,
        args=(g, C),
    )
    if p.space == "in":
        _number(cols[1], "channel c", "w_im_pc", state.get(PICK_C), C - 1)
        _number(cols[2], "row i", "w_im_pi", p.row, g.H - 1)
        _number(cols[3], "col j", "w_im_pj", p.col, g.W - 1)
    else:
        if p.space == "out":
            _number(cols[1], "filter m", "w_im_pm", p.row, M - 1)
        _number(cols[2], "column l", "w_im_pl", p.col, g.L - 1)
        cols[3].markdown(f"= output pixel **{maps.position_of(g, p.col)}**")
    return p


# ---- the example's numbers ---------------------------------------------------------------------------------
def section_values(C: int, H: int, W: int, K: int, M: int) -> tuple[np.ndarray, np.ndarray, bool]:
    """Input maps and filters: PMPP's at its shape, small random integers otherwise; editable."""
    shape = (C, H, W, K, M)
    is_book = shape == (3, 3, 3, 2, 2)
    cells = st.session_state.get("im2col_cells")
    if cells is None or cells[0] != shape:
        rng = np.random.default_rng(sum(shape))
        x0 = np.array(BOOK_X, np.float32) if is_book else rng.integers(0, 4, (C, H, W)).astype(np.float32)
        w0 = np.array(BOOK_W, np.float32) if is_book else rng.integers(0, 3, (M, C, K, K)).astype(np.float32)
        cells = (shape, x0, w0)
        st.session_state["im2col_cells"] = cells
    _, x, w = cells
    gen = (shape, st.session_state.get("im2col_gen", 0))
    x, w = x.copy(), w.copy()
    with st.expander("Edit the numbers: input maps and filters (PMPP's example at its shape)"):
        st.caption("Type into any cell; every figure follows.")
        edit_cols = st.columns(C)
        for c in range(C):
            with edit_cols[c]:
                st.markdown(f"channel c = {c}")
                df = st.data_editor(
                    pd.DataFrame(x[c]),
                    key=f"x_edit_{gen}_{c}",
                    column_config={str(j): st.column_config.NumberColumn(format="%g") for j in range(W)},
                )
                x[c] = np.nan_to_num(df.to_numpy(dtype=np.float64, na_value=0.0)).astype(np.float32)
        st.markdown(
            "Filter matrix W (M × C·K·K): row m is filter m, flattened channel by channel, row by row"
        )
        labels = [viz.row_label(t) for t in maps.row_labels(C, gpuops.window_geometry(K, K, K))]
        w_df = st.data_editor(
            pd.DataFrame(w.reshape(M, -1), columns=labels, index=[f"filter {m}" for m in range(M)]),
            key=f"w_edit_{gen}",
        )
        w = (
            np.nan_to_num(w_df.to_numpy(dtype=np.float64, na_value=0.0))
            .astype(np.float32)
            .reshape(M, C, K, K)
        )
    return x, w, is_book


# ---- the figures -------------------------------------------------------------------------------------------
def unroll_of(C: int, g: gpuops.WindowGeometry) -> viz.Unroll:
    """What X_unroll's entries, rows and columns hold, for its figures."""
    sources = maps.source_cells(C, g)
    return viz.Unroll(
        maps.unfold_source_map(C, g),
        sources,
        tuple(maps.row_labels(C, g)),
        maps.positions(g),
        C * g.H * g.W,
        g.KH * g.KW,
    )


def hover_maps(g: gpuops.WindowGeometry, C: int, M: int) -> dict:
    """Client-side outlines for the small example (no rerun): hovering an input cell outlines its
    copies in X_unroll; a column of X_unroll or of Y outlines the cells it reads and its output."""
    taps = [maps.column_taps(C, g, l) for l in range(g.L)]
    copies = {
        (c, i, j): maps.copies_of(C, g, c, i, j) for c in range(C) for i in range(g.H) for j in range(g.W)
    }
    pairs = viz.hover_pairs(copies, taps, M, CHARTS, max_targets=HOVER_TARGETS)
    return {name: pick.hover_map(chart_pairs) for name, chart_pairs in pairs.items()}


def section_first_row(x, w_mat, x_unroll, y_mat, g, C, M, p: Cell, is_book: bool, launch) -> None:
    """Input maps | Y with the pick written out: the lesson's first screen."""
    labels = maps.row_labels(C, g)
    positions = maps.positions(g)
    taps, picked, columns, cell, column = [], None, [], None, None
    if p.space == "in":
        c = state.get(PICK_C)
        picked, columns = (c, p.row, p.col), list(maps.columns_reading(C, g, c, p.row, p.col))
    else:
        channel, rows, cols, inside = maps.column_taps(C, g, p.col)
        taps = list(zip(channel, rows, cols, inside, strict=True))
        column, cell = (p.col, None) if p.space == "col" else (None, (p.row, p.col))
    beside = viz.inputs_beside(C, g.padded_hw[1])  # small maps: Y beside them; larger: Y below
    left, right = st.columns([0.57, 0.43]) if beside else (st.container(), None)
    with left:
        figure(
            viz.input_maps_figure(
                x,
                maps.padded_ids(C, g),
                st_style,
                viz.InputMarks(maps.copy_counts(C, g), tuple(taps), picked),
                width_px=viz.LEFT_WIDTH if beside else viz.FULL_WIDTH,
            ),
            "inputs",
            "One colour per input cell, the same wherever X_unroll copies it; white = zero padding "
            "(the dashed box is the input). Click a cell: its copies.",
            pickable=True,
        )
    if right is None:
        y_col, right = st.columns(2)
    else:
        y_col = right
    with y_col:
        figure(
            viz.output_figure(y_mat, positions, st_style, viz.OutputMarks(column, cell, tuple(columns))),
            "ymat",
            f"Row m reshaped to {g.H_out} × {g.W_out} is output map m. Click a cell: its sum.",
            pickable=True,
        )
    with right:
        section_explain(x_unroll, w_mat, g, C, M, p, labels, launch)
        if is_book and (g.stride_h, g.pad_top, g.dil_h) == (1, 0, 1):
            if np.array_equal(y_mat.reshape(np.shape(BOOK_Y)), np.array(BOOK_Y)):
                st.success(
                    "This is PMPP's example: Y is the book's [[14, 20], [15, 24]] and [[12, 24], [17, 26]]."
                )
            else:
                st.info(
                    "PMPP's shape with your numbers: the book's outputs were [[14, 20], [15, 24]] and "
                    "[[12, 24], [17, 26]]."
                )


def section_explain(x_unroll, w_mat, g, C, M, p: Cell, labels, launch) -> None:
    """The pick in words: the sum written out with values, or the copies of an input cell, and the
    GPU thread that writes each entry (from the unfold Launch im2col makes)."""
    if p.space == "in":
        c = state.get(PICK_C)
        copies = maps.copies_of(C, g, c, p.row, p.col)
        st.markdown(
            f"**Input cell (c, i, j) = ({c}, {p.row}, {p.col}) is copied {len(copies)} times** into "
            f"X_unroll (outlined there), feeding {len(maps.columns_reading(C, g, c, p.row, p.col))} output "
            f"pixels "
            f"(red in Y). Over all cells, X_unroll is {g.expansion_ratio:.2f} times the input (the expansion "
            "ratio)."
        )
        entries = [f"({r}, {l})" for r, l in copies[:8]]
        if len(copies):
            st.caption(f"Copies (row r, column l): {', '.join(entries)}{' …' if len(copies) > 8 else ''}")
        return
    l = p.col
    oh, ow = maps.position_of(g, l)
    filters = [p.row] if p.space == "out" else list(range(M))
    st.markdown(
        f"**Column l = {l}** is output pixel ({oh}, {ow}): it holds the {x_unroll.shape[0]} input values "
        "outlined, one per weight (c, ki, kj)."
    )
    for m in filters:
        lines = viz.product_terms(w_mat[m], x_unroll[:, l], labels)
        st.markdown(
            f"Y[{m}, {l}] = W row {m} · column {l} = **{float(w_mat[m] @ x_unroll[:, l]):g}**  \n"
            + "  \n".join(lines)
        )
    if launch is not None:
        refs = [launch.thread_of(0, r, l) for r in range(x_unroll.shape[0])]
        shown = "; ".join(
            f"r = {r}: block {t.block[0]}, thread ({t.thread[0]}, {t.thread[1]})"
            for r, t in list(enumerate(refs))[:3]
        )
        st.caption(
            f"On the GPU, {launch.describe()}. Column {l} of X_unroll: {shown}{' …' if len(refs) > 3 else ''}"
        )


def section_gemm(x_unroll, w_mat, g, C, p: Cell) -> None:
    st.subheader("The GEMM: W × X_unroll = Y")
    R = x_unroll.shape[0]
    entries, column, row = [], None, None
    if p.space == "in":
        entries = [tuple(e) for e in maps.copies_of(C, g, state.get(PICK_C), p.row, p.col)]
    else:
        column = p.col
        row = p.row if p.space == "out" else None
    st.markdown(
        f"X_unroll has **C·K·K = {C}·{g.KH}·{g.KW} = {R} rows** (one per filter weight) and "
        f"**H_out·W_out = {g.H_out}·{g.W_out} = {g.L} columns** (one per output pixel): "
        f"W ({w_mat.shape[0]} × {R}) × X_unroll ({R} × {g.L}) = Y ({w_mat.shape[0]} × {g.L})."
    )
    figure(
        viz.x_unroll_figure(x_unroll, unroll_of(C, g), st_style, column=column, entries=entries),
        "xunroll",
        "Each entry in the colour of the input cell it copies (white: a zero from the padding); black lines "
        "separate channels. Click a column: the cells it copies and its outputs.",
        pickable=True,
    )
    figure(
        viz.filter_figure(w_mat, unroll_of(C, g), st_style, row=row),
        "wmat",
        "Filter m flattened into row m, in X_unroll's row order: weight r multiplies row r of X_unroll. "
        "Click a row: that filter's sum.",
        pickable=True,
    )


def section_animation(x, x_unroll, y_mat, g, C) -> None:
    """The column-by-column animation: it does not depend on the pick, so a click reuses it."""
    st.subheader("Column by column")

    def build():
        taps = tuple(maps.column_taps(C, g, l) for l in range(g.L))
        steps = viz.Steps(x, maps.padded_ids(C, g), x_unroll, y_mat, taps)
        return viz.column_animation(steps, unroll_of(C, g), st_style)

    fig = session_cached(("im2col_animation", g, x.tobytes(), y_mat.tobytes(), st_style), build)
    figure(
        fig,
        "im2col_animation",
        "Press ▶ Play or drag the slider: the outlined input cells are copied into column "
        "l of X_unroll; W times that column gives column l of Y (the output pixel in the title).",
    )


def section_example() -> gpuops.WindowGeometry | None:
    C, H, W, K, M, S, P, D = section_settings()
    with shown_errors("The example"):
        g = gpuops.window_geometry(H, W, K, S, P, D)
        click = pick.bridge(hover=hover_maps(g, C, M), style=st_style.outline_style())
        apply_click(click, g, C, M)
        state.put(PICK, fitted(state.get(PICK), g, C, M))
        p = section_pick(g, C, M)
        top = st.container()
        x, w, is_book = section_values(C, H, W, K, M)
        plan = gpuops.plan_conv2d((1, C, H, W), (M, C, K, K), None, S, P, D, algorithm="im2col")
        x_unroll = gpuops.to_numpy(gpuops.unfold(gpuops.asarray(x), K, D, P, S))  # (C*K*K, L)
        y = gpuops.to_numpy(
            gpuops.conv2d(
                gpuops.asarray(x[None]),
                gpuops.asarray(w),
                stride=S,
                padding=P,
                dilation=D,
                algorithm="im2col",
            )
        )
        y_mat, w_mat = y.reshape(M, g.L), w.reshape(M, -1)
        with top:
            section_first_row(x, w_mat, x_unroll, y_mat, g, C, M, p, is_book, plan.launch)
        section_gemm(x_unroll, w_mat, g, C, p)
        section_animation(x, x_unroll, y_mat, g, C)
        cuda_source(
            plan.launch, ": builds X_unroll; cuBLAS (NumPy's matmul here) does the GEMM", key="src_im"
        )
        return g
    return None


# ---- how big X_unroll gets for your image ------------------------------------------------------------------
def largest_side(Ci: int, k: int, side: int) -> int | None:
    """The largest working size (the sidebar's choices) whose runtime comparison fits the budget."""
    from ui.sidebar import CAP_OPTIONS

    for s in sorted((o for o in CAP_OPTIONS if o < side and o >= k), reverse=True):
        plan = gpuops.plan_conv2d((1, Ci, s, s), (16, Ci, k, k), None, 1, k // 2, algorithm="im2col")
        try:
            budget.check(budget.conv2d_cost(plan.problem, "im2col"), "", "")
        except budget.OverBudgetError:
            continue
        return s
    return None


def split_candidates(k: int) -> dict:
    """im2col's two steps, im2col whole and the direct kernel, on the image with 16 filters."""
    x = gpuops.asarray(image.planes)
    w = gpuops.asarray(
        np.random.default_rng(0).standard_normal((16, image.planes.shape[0], k, k)).astype(np.float32)
    )
    w_mat = w.reshape(16, -1)
    unrolled = {}

    def unroll():
        unrolled["cols"] = gpuops.unfold(x, k, 1, k // 2, 1)
        return unrolled["cols"]

    return {
        "unroll kernel (unfold)": unroll,
        "GEMM (cuBLAS / NumPy matmul)": lambda: gpuops.gemm(
            w_mat, unrolled["cols"] if "cols" in unrolled else unroll()
        ),
        "im2col total": lambda: gpuops.conv2d(x, w, padding=k // 2, algorithm="im2col"),
        "direct conv": lambda: gpuops.conv2d(x, w, padding=k // 2, algorithm="direct"),
    }


def section_expansion() -> None:
    st.header("How big X_unroll gets for your image")
    Ci, H, W = image.planes.shape
    k = state.widget(IMG_K, hi=min(IMG_K.hi, H, W))
    with shown_errors("The expansion ratio"):
        plan = gpuops.plan_conv2d((1, Ci, H, W), (16, Ci, k, k), None, 1, k // 2, algorithm="im2col")
        gi = plan.geometry
        in_bytes, unroll_bytes = image.planes.nbytes, plan.x_unroll_bytes_per_sample
        st.latex(
            rf"\text{{ratio}} = \frac{{C K^2 H_{{out}} W_{{out}}}}{{C H W}} = "
            rf"\frac{{{Ci}\cdot{k}^2\cdot{gi.H_out}\cdot{gi.W_out}}}{{{Ci}\cdot{H}\cdot{W}}} = "
            rf"{gi.expansion_ratio:.3f}"
        )
        m1, m2, m3 = st.columns(3)
        m1.metric("Input (float32)", f"{in_bytes / 2**20:.2f} MiB")
        m2.metric("X_unroll (float32)", f"{unroll_bytes / 2**20:.2f} MiB")
        m3.metric("Expansion ratio", f"{gi.expansion_ratio:.3f}", help=f"Approaches K x K = {k * k}")
        st.caption(
            f"Padding K // 2 = {k // 2}, stride 1: the output is {gi.W_out} × {gi.H_out}, as large as the "
            "input, so every input pixel is copied K × K times (fewer at the border)."
        )
        sizes = [s for s in (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096) if s >= k]
        no_pad = [gpuops.window_geometry(s, s, k, 1, 0).expansion_ratio for s in sizes]
        same = [gpuops.window_geometry(s, s, k, 1, k // 2).expansion_ratio for s in sizes]
        figure(
            viz.expansion_figure(sizes, (no_pad, same), k, (max(H, W), gi.expansion_ratio), st_style),
            "expansion",
            "Without padding H_out = H - K + 1, so the ratio K²(H-K+1)²/H² climbs toward K² as H grows.",
        )

    st.subheader("Runtime split on your image (16 filters)")
    with shown_errors("The runtime split"):
        side = largest_side(Ci, k, max(H, W))
        advice = (
            f"Lower the working size in the sidebar to {side} px, or use a smaller K."
            if side
            else "Use a smaller K or a smaller working size."
        )
        budget.check(
            budget.conv2d_cost(plan.problem, "im2col"),
            f"im2col on {W} × {H} with K = {k} (X_unroll {unroll_bytes / 2**20:,.0f} MiB)",
            advice,
        )
        times = compare(
            ("im2col_split", image.key, k), split_candidates(k), "Compare: unroll, GEMM, im2col, direct"
        )
        if times is None:
            st.caption("Timed only when asked: a classroom server shares its CPU or GPU.")
        else:
            figure(
                viz.runtime_figure(
                    list(times),
                    [t.median_ms for t in times.values()],
                    f"im2col's steps vs direct, {W} × {H} × {Ci}, K = {k}",
                    backend_name(),
                    st_style,
                ),
                "im2col_split",
                "The unroll moves K² times the input through memory; the GEMM does the arithmetic.",
            )


section_title()
section_example()
section_expansion()
