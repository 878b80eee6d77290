"""im2col + GEMM: copy every receptive field into one column of X_unroll, then filters x X_unroll is one
matrix multiply. PMPP ch. 16's worked example, editable and clickable; then how big X_unroll gets for
your image. Index maps come from gpuops.maps.im2col, figures from viz.im2col."""

import streamlit as st

import gpuops
from gpuops.maps import im2col as maps
from ui import im2col_view as view
from ui import navigation, pick, state
from ui.common import backend_name, compare, cuda_source, figure, session_cached, shown_errors, style
from ui.state import Cell, Param
from viz import im2col as viz

navigation.through_app()  # a freshly started server may run this file alone (ui/navigation.py)

KINDS = {"col": "column l", "out": "output Y[m, l]", "in": "input cell"}

C_ = Param("im2col_c", 3, "Channels C", "number", lo=1, hi=3)
H_ = Param("im2col_h", 3, "Height H", "number", lo=2, hi=6)
W_ = Param("im2col_w", 3, "Width W", "number", lo=2, hi=6)
K_ = Param("im2col_k", 2, "Kernel K", "number", lo=1, hi=4, help="Range follows H, W, padding and dilation.")
M_ = Param("im2col_m", 2, "Filters M", "number", lo=1, hi=3)
S_ = Param("im2col_stride", 1, "Stride S", "number", lo=1, hi=3)
P_ = Param("im2col_pad", 0, "Padding P", "number", lo=0, hi=2)
D_ = Param("im2col_dil", 1, "Dilation D", "number", lo=1, hi=3, help="Range follows H, W, padding and K.")
PICK = Param("im2col_pick", Cell("out", 0, 0), choices=tuple(KINDS))  # col:0,l  out:m,l  in:i,j (+ im2col_pc)
PICK_C = Param("im2col_pc", 0, lo=0, hi=2)  # the channel of a picked input cell
IMG_K = Param("im2col_img_k", 3, "Kernel K for your image", "slider", lo=1, hi=7)
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


def section_settings() -> tuple[int, ...]:
    """The example's shape, one compact row; K and D ranges follow the padded input."""
    H, W, P = state.get(H_), state.get(W_), state.get(P_)
    asked = state.get(K_)
    K = state.clamp(K_, 1, min(K_.hi, maps.max_kernel(H, W, P, state.get(D_))))
    if asked > K:
        st.info(view.shrunk_kernel(asked, K, f"{W} x {H} with padding {P}"), icon=":material/straighten:")
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
        on_click=view.reset,
        args=(DEFAULTS,),
        icon=":material/restart_alt:",
        help="C = 3 maps of 3 x 3, M = 2 filters of 2 x 2, stride 1, no padding (PMPP ch. 16)",
    )
    return tuple(int(v) for v in values)


def section_pick(picker: view.Picker) -> Cell:
    """The keyboard path, in sync with clicks: the kind of pick, then its numbers."""
    p = state.get(PICK)
    cols = st.columns([3.2, 1, 1, 1.6, 1], vertical_alignment="bottom")  # 3: "= output pixel (oh, ow)"
    st.session_state["w_im2col_kind"] = p.space
    cols[0].radio(
        "Picked (click a figure, or type)",
        list(KINDS),
        format_func=KINDS.get,
        key="w_im2col_kind",
        horizontal=True,
        on_change=picker.on_kind,
    )
    picker.inputs(p, cols)
    return p


def section_first_row(ex: view.Example, p: Cell) -> None:
    """Input maps | Y with the pick written out: the lesson's first screen."""
    g, channel = ex.g, state.get(PICK_C)
    input_marks, output_marks = view.first_row_marks(ex, p, channel)
    beside = viz.inputs_beside(ex.C, g.padded_hw[1])  # small maps: Y beside them; larger: Y below
    left, right = st.columns([0.57, 0.43]) if beside else (st.container(), None)
    with left:
        width = viz.LEFT_WIDTH if beside else viz.FULL_WIDTH
        figure(
            viz.input_maps_figure(ex.x, maps.padded_ids(ex.C, g), st_style, input_marks, width_px=width),
            "inputs",
            "One colour per input cell, the same wherever X_unroll copies it; white = zero padding "
            "(the dashed box is the input). Click a cell: its copies.",
            pickable=True,
        )
    y_col, right = st.columns(2) if right is None else (right, right)
    with y_col:
        figure(
            viz.output_figure(ex.y_mat, maps.positions(g), st_style, output_marks),
            "ymat",
            f"Row m reshaped to {g.W_out} × {g.H_out} (W x H) is output map m. Click a cell: its sum.",
            pickable=True,
        )
    with right:
        section_explain(ex, p, channel)
        note = view.book_note(ex)
        if note is not None:
            (st.success if note[0] else st.info)(note[1])


def section_explain(ex: view.Example, p: Cell, channel: int) -> None:
    """The pick in words: the sum written out with values, or the copies of an input cell, and the
    GPU thread that writes each entry (from the unfold Launch im2col makes)."""
    if p.space == "in":
        text, listed = view.input_cell_text(ex, p, channel)
        st.markdown(text)
        if listed:
            st.caption(listed)
        return
    for text in view.column_texts(ex, p):
        st.markdown(text)
    if ex.launch is not None:
        st.caption(view.threads_text(ex, p.col))


def section_gemm(ex: view.Example, p: Cell) -> None:
    st.subheader("The GEMM: W × X_unroll = Y")
    entries, column, row = view.gemm_marks(ex, p, state.get(PICK_C))
    st.markdown(view.gemm_text(ex))
    unroll = view.unroll_of(ex.C, ex.g)
    figure(
        viz.x_unroll_figure(ex.x_unroll, unroll, st_style, column=column, entries=entries),
        "xunroll",
        "Each entry in the colour of the input cell it copies (white: a zero from the padding); black lines "
        "separate channels. Click a column: the cells it copies and its outputs.",
        pickable=True,
    )
    figure(
        viz.filter_figure(ex.w_mat, unroll, st_style, row=row),
        "wmat",
        "Filter m flattened into row m, in X_unroll's row order: weight r multiplies row r of X_unroll. "
        "Click a row: that filter's sum.",
        pickable=True,
    )


def section_animation(ex: view.Example) -> None:
    """The column-by-column animation: it does not depend on the pick, so a click reuses it."""
    st.subheader("Column by column")
    key = ("im2col_animation", ex.g, ex.x.tobytes(), ex.y_mat.tobytes(), st_style)
    fig = session_cached(
        key, lambda: viz.column_animation(view.steps_of(ex), view.unroll_of(ex.C, ex.g), st_style)
    )
    figure(
        fig,
        "im2col_animation",
        "Press ▶ Play or drag the slider: the outlined input cells are copied into column "
        "l of X_unroll; W times that column gives column l of Y (the output pixel in the title).",
    )


def section_example() -> None:
    C, H, W, K, M, S, P, D = section_settings()
    with shown_errors("The example"):
        g = gpuops.window_geometry(H, W, K, S, P, D)
        picker = view.Picker(PICK, PICK_C, g, C, M)
        picker.apply(pick.bridge(rules=view.hover_rules(g, C, M), style=st_style.outline_style()))
        picker.fitted()
        p = section_pick(picker)
        top = st.container()
        ex = view.compute(*view.edited_numbers((C, H, W, K, M)), g)
        with top:
            section_first_row(ex, p)
        section_gemm(ex, p)
        section_animation(ex)
        cuda_source(ex.launch, ": builds X_unroll; cuBLAS (NumPy's matmul here) does the GEMM", key="src_im")


# ---- how big X_unroll gets for your image ------------------------------------------------------------------
def section_expansion() -> None:
    st.header("How big X_unroll gets for your image")
    Ci, H, W = image.planes.shape
    asked = state.get(IMG_K)
    k = state.widget(IMG_K, hi=min(IMG_K.hi, H, W))
    if k < asked:
        st.info(view.shrunk_kernel(asked, k, f"this {W} x {H} image"), icon=":material/straighten:")
    with shown_errors("The expansion ratio"):
        plan = view.image_plan(image, k)
        gi, in_bytes, unroll_bytes = plan.geometry, image.planes.nbytes, plan.x_unroll_bytes_per_sample
        st.latex(view.ratio_latex(image, k, gi))
        m1, m2, m3 = st.columns(3)
        m1.metric("Input (float32)", f"{in_bytes / 2**20:.2f} MiB")
        m2.metric("X_unroll (float32)", f"{unroll_bytes / 2**20:.2f} MiB")
        m3.metric("Expansion ratio", f"{gi.expansion_ratio:.3f}", help=f"Approaches K x K = {k * k}")
        st.caption(
            f"Padding K // 2 = {k // 2}, stride 1: the output is {gi.W_out} × {gi.H_out}, as large as the "
            "input, so every input pixel is copied K × K times (fewer at the border)."
        )
        sizes, ratios = view.expansion_curves(k)
        figure(
            viz.expansion_figure(sizes, ratios, k, (max(H, W), gi.expansion_ratio), st_style),
            "expansion",
            "Without padding H_out = H - K + 1, so the ratio K²(H-K+1)²/H² climbs toward K² as H grows.",
        )

    st.subheader("Runtime split on your image (16 filters)")
    with shown_errors("The runtime split"):
        view.check_split(image, k, plan)
        times = compare(
            ("im2col_split", image.key, k),
            view.split_candidates(image, k),
            "Compare: unroll, GEMM, im2col, direct",
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
