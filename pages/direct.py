"""Direct convolution: pick an output pixel (or an input cell) on the images and see its receptive
field, the products that sum to it, the window sliding over your image, and the block and thread
that computed it. Index maps come from gpuops.maps.conv2d, figures from viz.conv2d."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pyarrow as pa
import streamlit as st

import gpuops
from gpuops import filters
from gpuops.maps import conv2d as maps
from ui import budget, navigation, pick, state
from ui.common import (
    backend_name,
    compare,
    cuda_source,
    figure,
    lazy_expander,
    session_cached,
    shown_errors,
    style,
)
from ui.fit_images import fit_images
from ui.images import png_bytes, to_display
from ui.kernel_param import KernelParam, as_cells, fit_to
from ui.records import Conv
from ui.sidebar import CAP_OPTIONS
from ui.state import Cell, Param
from viz import conv2d as viz
from viz.images import signed_to_display

navigation.through_app()  # a freshly started server may run this file alone (ui/navigation.py)

PRESET = Param("dc_preset", "box blur", "Kernel", "select", choices=(*filters.PRESETS, "custom"))
K = Param(
    "dc_k",
    3,
    "Size K",
    "slider",
    lo=1,
    hi=filters.MAX_KERNEL,
    help="Sharpen, Laplacian, Sobel and emboss are defined as 3 x 3.",
)
STRIDE = Param("dc_stride", 1, "Stride S", "slider", lo=1, hi=8)
PAD = Param("dc_pad", 1, "Padding P", "slider", lo=0, hi=15, help="Cells added on every side.")
MODE = Param(
    "dc_mode",
    "zeros",
    "Pad mode",
    "select",
    choices=("zeros", "reflect"),
    help="zeros: the padding reads 0. reflect: it copies the mirrored input cell.",
)
DIL = Param("dc_dil", 1, "Dilation D", "slider", lo=1, hi=5, help="Taps are D cells apart.")
MIX = Param(
    "dc_mix",
    False,
    "Mix channels",
    "toggle",
    help="Off: each colour channel is filtered on its own (groups = C). On: one filter spans all channels.",
)
ALGORITHMS = getattr(gpuops, "ALL_ALGORITHMS", gpuops.ALGORITHMS)  # fp32 ones, then tensor-core (TF32) ones
ALGO = Param(
    "dc_algo",
    gpuops.AUTO,
    "Algorithm",
    "select",
    choices=(gpuops.AUTO, *ALGORITHMS),
    help="auto: on the GPU, the fastest for this shape (timed once, like cuDNN's benchmark mode); "
    "on the CPU, direct.",
)
PICK = Param("dc_pick", None, "Picked cell", choices=("out", "in"))
CHANNEL = Param(
    "dc_ch",
    0,
    "Channel",
    "number",
    lo=0,
    hi=3,
    help="The channel the close-up, the table and the animation show.",
)
KERNEL = KernelParam("dc_kernel", None, "Custom kernel")
PARAMS = [PRESET, K, STRIDE, PAD, MODE, DIL, MIX, ALGO, PICK, CHANNEL, KERNEL]

state.use(PARAMS)
image = st.session_state["image"]
C, H, W = image.planes.shape
look = style()


def show(fig: go.Figure, name: str, caption: str = "", *, pickable: bool = False) -> None:
    """A figure with its caption; its HTML download goes to the Downloads expander at the end."""
    figure(fig, name, caption, pickable=pickable, download=False)
    st.session_state["_dc_figures"][name] = fig


# ---- settings ------------------------------------------------------------------------------------------
def upload_notice() -> None:
    if st.session_state.get("source") == "upload" and st.session_state.get("upload_file") is None:
        st.info(
            "This link was made with an uploaded image, which links cannot carry: upload one in the sidebar "
            "(Image source: Upload). Meanwhile the sample image is shown.",
            icon=":material/upload:",
        )


def fit_geometry(fixed: bool) -> None:
    """Keep K, padding and dilation inside what this image allows (ranges follow the geometry),
    saying why when a value had to move (a link, a smaller working size)."""
    k, pad, dil, mode = state.get(K), state.get(PAD), state.get(DIL), state.get(MODE)
    fitted = maps.fit_settings(
        H, W, k, pad, dil, mode, k_fixed=fixed, max_k=K.hi, max_pad=PAD.hi, max_dil=DIL.hi
    )
    if fitted == (k, pad, dil):
        return
    try:  # gpuops' own words for what does not fit
        gpuops.plan_conv2d((1, C, H, W), (1, C, k, k), None, 1, pad, dil, 1, mode)
        why = ""
    except ValueError as exc:
        why = f"{exc}: "
    moved = [
        (p, old, new) for p, old, new in ((K, k, fitted[0]), (PAD, pad, fitted[1]), (DIL, dil, fitted[2]))
    ]
    changes = ", ".join(
        f"{p.label.split(' ')[0].lower()} {old} -> {new}" for p, old, new in moved if old != new
    )
    st.warning(f"{why}{changes} to fit this {W} x {H} image.", icon=":material/straighten:")
    for p, _, new in moved:
        state.put(p, new)


def section_settings() -> tuple[str, int, int, int, str, int, bool, str]:
    """One compact row of settings above the images."""
    preset = state.get(PRESET)
    fixed = preset in filters.FIXED_3X3
    if fixed:
        state.put(K, 3)
    fit_geometry(fixed)
    lim = maps.setting_limits(
        H,
        W,
        state.get(K),
        state.get(PAD),
        state.get(DIL),
        state.get(MODE),
        max_k=K.hi,
        max_pad=PAD.hi,
        max_dil=DIL.hi,
    )
    cols = st.columns([1.15, 0.8, 0.8, 0.85, 0.9, 0.85, 1.35, 1.0], vertical_alignment="bottom")
    preset = state.widget(PRESET, container=cols[0])
    k = state.widget(K, container=cols[1], hi=lim.k_hi, disabled=fixed)
    stride = state.widget(STRIDE, container=cols[2])
    pad = state.widget(PAD, container=cols[3], lo=lim.pad_lo, hi=lim.pad_hi)
    mode = state.widget(MODE, container=cols[4])
    dil = state.widget(DIL, container=cols[5], hi=lim.dil_hi)
    mix = state.widget(MIX, container=cols[6])
    algo = state.widget(ALGO, container=cols[7])
    return preset, 3 if fixed else k, stride, pad, mode, dil, mix, algo


def custom_kernel(k: int) -> np.ndarray:
    """The custom kernel: an editable k x k grid, kept in the URL (dc_kernel). The editor starts
    afresh (a new key) whenever the kernel changes from outside it: a link, a new K."""
    cells = fit_to(state.get(KERNEL), k)
    version, base, last = st.session_state.get("_dc_kernel_editor", (0, None, None))
    if cells != last:
        version, base = version + 1, cells
    just_chosen = st.session_state.get("_dc_last_preset", "custom") != "custom"  # opened on choosing it
    with st.expander(
        f"Edit the custom kernel: {k} x {k} weights (numbers; no empty cells)", expanded=just_chosen
    ):
        edited = st.data_editor(
            pd.DataFrame(np.asarray(base, dtype=np.float64), columns=[str(j) for j in range(k)]),
            key=f"dc_kernel_editor_{version}",
            column_config={
                str(j): st.column_config.NumberColumn(format="%.3f", width="small") for j in range(k)
            },
        )
    now = as_cells(edited.to_numpy(dtype=np.float64, na_value=np.nan))
    state.put(KERNEL, now)
    st.session_state["_dc_kernel_editor"] = (version, base, now)
    return filters.check_custom_kernel(np.asarray(now))


def suggested_size(
    weight_shape: tuple, stride: int, pad: int, dil: int, groups: int, mode: str, algo: str
) -> str:
    """Advice for a step over the budget: the largest working size at which it fits."""
    for cap in sorted((c for c in CAP_OPTIONS if c < max(H, W)), reverse=True):
        h, w = max(1, H * cap // max(H, W)), max(1, W * cap // max(H, W))
        try:
            p = gpuops.plan_conv2d((1, C, h, w), weight_shape, None, stride, pad, dil, groups, mode).problem
        except ValueError:
            continue
        try:
            budget.check(budget.conv2d_cost(p, algo), "", "")
        except budget.OverBudgetError:
            continue
        return f"Lower the working size (sidebar) to {cap} px, or use a smaller kernel."
    return "Use a smaller kernel or a larger stride."


def within_budget(problem: gpuops.ConvProblem, algo: str, weight_shape: tuple, args: tuple) -> None:
    """Refuse a convolution over the rerun budget, advising the working size at which it fits."""
    cost = budget.conv2d_cost(problem, algo)
    try:
        budget.check(cost, f"The convolution ({algo})", "")
    except budget.OverBudgetError:
        budget.check(cost, f"The convolution ({algo})", suggested_size(weight_shape, *args, algo))


def compute(kernel: np.ndarray, stride: int, pad: int, mode: str, dil: int, mix: bool, algo: str) -> Conv:
    """Check, choose the algorithm, budget, run (cached per image and settings)."""
    weight, groups = filters.channel_weights(kernel, C, mix)
    args = (stride, pad, dil, groups, mode)
    key = (image.key, kernel.tobytes(), kernel.shape, *args, algo)
    cached = st.session_state.get("_dc_conv")
    if cached is not None and cached.key == key:
        return cached
    plan = gpuops.plan_conv2d((1, C, H, W), weight.shape, None, *args, gpuops.AUTO)
    within_budget(plan.problem, "direct", weight.shape, args)  # before auto times anything
    x, w = gpuops.asarray(image.planes[None]), gpuops.asarray(weight)
    ran = algo if algo != gpuops.AUTO else gpuops.resolve_algorithm(x, w, None, *args)
    launch = gpuops.plan_conv2d((1, C, H, W), weight.shape, None, *args, ran).launch
    within_budget(plan.problem, ran, weight.shape, args)
    with budget.gpu_work():
        out = gpuops.to_numpy(gpuops.conv2d(x, w, None, *args, ran))[0]
    shown, how = signed_to_display(out, "abs" if filters.is_edge_filter(kernel) else "clip")
    conv = Conv(kernel, weight, groups, plan.geometry, mode, ran, launch, out, to_display(shown), how, key)
    st.session_state["_dc_conv"] = conv
    return conv


def section_formula(
    stride: int, pad: int, dil: int, kh: int, kw: int, g: gpuops.WindowGeometry | None
) -> None:
    """The output size with its formula and values: one line, the full formula in the expander."""
    if g is None:
        label = "**Output size: invalid** (the formula with these values)"
    else:
        label = (
            f"**Output: {g.W_out} x {g.H_out}** · H_out = ⌊({H} + 2·{pad} − {dil}·({kh}−1) − 1) / {stride}⌋ "
            f"+ 1 = "
            f"{g.H_out} · W_out = ⌊({W} + 2·{pad} − {dil}·({kw}−1) − 1) / {stride}⌋ + 1 = {g.W_out}"
        )
    with st.expander(label, expanded=g is None):
        st.latex(
            rf"H_{{out}} = \left\lfloor \frac{{H + 2P - D(K-1) - 1}}{{S}} \right\rfloor + 1 = "
            rf"\left\lfloor \frac{{{H} + 2\cdot{pad} - {dil}\cdot({kh}-1) - 1}}{{{stride}}} \right\rfloor + "
            rf"1 = " + (str(g.H_out) if g else r"\text{invalid}")
        )
        st.latex(
            rf"W_{{out}} = \left\lfloor \frac{{{W} + 2\cdot{pad} - {dil}\cdot({kw}-1) - 1}}{{{stride}}} "
            rf"\right\rfloor"
            rf" + 1 = " + (str(g.W_out) if g else r"\text{invalid}")
        )


# ---- the pick ----------------------------------------------------------------------------------------------
CHARTS_OUT = ("conv_output", "dc_threads")
CHARTS_IN = ("conv_input", "dc_zoom", "dc_tile")


def click_to_cell(click: pick.Click | None, conv: Conv, detail: tuple[int, int]) -> Cell | None:
    """The cell a click picks (None: not a cell of ours). A padding cell of the zoomed figure picks
    the input cell it copies (reflect), or nothing (zeros). A step of the sliding window (paused
    or dragged there) picks the output it shows: the animation's crop around `detail`."""
    if click is None:
        return None
    if click.chart == "dc_window" and click.panel == "step":
        oh, ow = maps.animation_crop(conv.g, *detail).outputs
        i = min(max(click.row, 0), len(oh) - 1)
        return Cell("out", int(oh[i]), int(ow[i]))
    if click.chart in CHARTS_OUT:
        return Cell("out", *maps.clamp_cell("out", click.row, click.col, conv.g))
    if click.chart in CHARTS_IN:
        win = maps.padded_window(
            image.planes[0], conv.g, conv.mode, click.row, click.row + 1, click.col, click.col + 1
        )
        if win.source_rows[0, 0] < 0:
            return None
        return Cell("in", int(win.source_rows[0, 0]), int(win.source_cols[0, 0]))
    return None


def detail_of(cell: Cell, conv: Conv) -> tuple[int, int]:
    """The output pixel the details follow: the pick, or for a picked input cell the output
    centred nearest to it."""
    if cell.space == "out":
        return cell.row, cell.col
    return maps.output_for_input(conv.g, cell.row, cell.col, conv.mode)


def resolve_pick(conv: Conv) -> tuple[Cell, tuple[int, int]]:
    """(the pick, the output pixel the details follow). No pick yet: an output where the image
    has detail. A picked input cell: the details follow the output centred nearest to it."""
    cell = state.get(PICK)
    if cell is None:
        plane = session_cached(("dc_detail", image.key), lambda: maps.detail_pixel(image.planes.mean(axis=0)))
        current = Cell("out", *maps.output_near(conv.g, *plane))
    else:
        current = Cell(cell.space, *maps.clamp_cell(cell.space, cell.row, cell.col, conv.g))
    clicked = click_to_cell(pick.pending(), conv, detail_of(current, conv))
    if clicked is not None or cell is not None:
        current = clicked or current
        state.put(PICK, current)
    return current, detail_of(current, conv)


def _set_pick_from_inputs() -> None:
    space = "out" if st.session_state["w_dc_pick_space"].startswith("output") else "in"
    st.session_state[PICK.key] = Cell(
        space, int(st.session_state["w_dc_pick_row"]), int(st.session_state["w_dc_pick_col"])
    )


def section_pick_inputs(cell: Cell, conv: Conv) -> None:
    """The keyboard path: the pick as number inputs, in sync with clicks."""
    g = conv.g
    rows, cols = (g.H_out, g.W_out) if cell.space == "out" else (H, W)
    spaces = ["output pixel", "input cell"]
    st.session_state["w_dc_pick_space"] = spaces[0] if cell.space == "out" else spaces[1]
    st.session_state["w_dc_pick_row"] = cell.row
    st.session_state["w_dc_pick_col"] = cell.col
    a, b, c, d = st.columns([1.2, 1, 1, 1.3], vertical_alignment="bottom")
    a.selectbox(
        "Pick",
        spaces,
        key="w_dc_pick_space",
        on_change=_set_pick_from_inputs,
        help="Or click a pixel of either image.",
    )
    b.number_input("Row", 0, rows - 1, key="w_dc_pick_row", on_change=_set_pick_from_inputs)
    c.number_input("Column", 0, cols - 1, key="w_dc_pick_col", on_change=_set_pick_from_inputs)
    if C > 1 and conv.groups > 1:
        state.widget(CHANNEL, container=d, hi=C - 1)
    else:
        state.put(CHANNEL, 0)


# ---- the images --------------------------------------------------------------------------------------------
def section_images(conv: Conv, cell: Cell, detail: tuple[int, int], zoom: tuple[int, int, int, int]) -> None:
    g = conv.g
    rf = maps.receptive_field(g, *detail, conv.mode)
    in_pixels = session_cached(("dc_in_display", image.key), lambda: to_display(image.planes))
    pads = (g.pad_top, g.pad_bottom, g.pad_left, g.pad_right)
    left, right = st.columns(2)
    with left:
        if cell.space == "out":
            marks = viz.ImageMarks(pads, taps=rf, zoom=zoom)
            what = f"orange: the {g.KH} x {g.KW} taps output ({cell.row}, {cell.col}) reads"
        else:
            marks = viz.ImageMarks(pads, picked=(cell.row, cell.col), zoom=zoom)
            what = f"orange: the picked input cell ({cell.row}, {cell.col})"
        fig = viz.input_figure(in_pixels, look, f"Input: {W} x {H}, {C} channel{'s' if C > 1 else ''}", marks)
        pad_note = "mirrored cells" if conv.mode == "reflect" else "zeros"
        show(
            fig,
            "conv_input",
            f"Click a pixel. {what}; blue band: padding ({pad_note}); dotted cyan: the close-up.",
            pickable=True,
        )
    with right:
        if cell.space == "out":
            fig = viz.output_figure(
                conv.out_pixels, look, f"Output: {g.W_out} x {g.H_out}", viz.ImageMarks(picked=detail)
            )
            what = f"orange: output ({cell.row}, {cell.col})"
        else:
            readers = maps.readers_of(g, cell.row, cell.col, conv.mode)
            marks = viz.ImageMarks(readers=readers[:, :2], detail=detail)
            fig = viz.output_figure(conv.out_pixels, look, f"Output: {g.W_out} x {g.H_out}", marks)
            what = (
                f"red: the {len(np.unique(readers[:, :2], axis=0))} outputs that read input ({cell.row}, "
                f"{cell.col}); dotted: output {detail}, explained below"
            )
        show(fig, "conv_output", f"Click a pixel. {what}. Shown as {conv.shown_as}.", pickable=True)


def pick_summary(cell: Cell, conv: Conv, detail: tuple[int, int], ch: int) -> None:
    g = conv.g
    m = 0 if conv.groups == 1 else ch
    if cell.space == "out":
        st.markdown(
            f"**Picked: output pixel ({cell.row}, {cell.col})** of channel {m}: value "
            f"{float(conv.out[m, cell.row, cell.col]):.4f}, the sum of {conv.weight.shape[1] * g.KH * g.KW} "
            "products (below)."
        )
        return
    readers = maps.readers_of(g, cell.row, cell.col, conv.mode)
    outputs = len(np.unique(readers[:, :2], axis=0))
    reads = f"read by **{outputs} output pixel{'s' if outputs != 1 else ''}** ({len(readers)} taps)"
    if outputs == 0:
        reads = "read by **no output**: the stride steps over it"
    st.markdown(
        f"**Picked: input cell ({cell.row}, {cell.col})**, {reads}, outlined red on the output: what the "
        f"backward pass will sum for its gradient. Below: output {detail}, which reads it."
    )


# ---- the receptive field up close --------------------------------------------------------------------------
def zoom_region(conv: Conv, detail: tuple[int, int]) -> tuple[int, int, int, int]:
    rf = maps.receptive_field(conv.g, *detail, conv.mode)
    return maps.around(rf.rows, rf.cols, conv.g, 1 if conv.g.KH * conv.g.dil_h > 9 else 2)


def reads_text(rf: maps.ReceptiveField) -> np.ndarray:
    text = np.empty(rf.rows.shape, dtype=object)
    for i, j in np.ndindex(rf.rows.shape):
        r, c, sr, sc = rf.rows[i, j], rf.cols[i, j], rf.source_rows[i, j], rf.source_cols[i, j]
        text[i, j] = (
            f"input ({r}, {c})"
            if rf.inside[i, j]
            else f"padding ({r}, {c}) = copy of ({sr}, {sc})"
            if sr >= 0
            else f"padding ({r}, {c}) = 0"
        )
    return text


def section_receptive_field(
    conv: Conv, cell: Cell, detail: tuple[int, int], zoom: tuple[int, int, int, int], ch: int
) -> None:
    g, (oh, ow) = conv.g, detail
    rf = maps.receptive_field(g, oh, ow, conv.mode)
    st.subheader(f"Output ({oh}, {ow}) up close")
    left, right = st.columns([1.1, 1])
    with left:
        win = maps.padded_window(image.planes[ch], g, conv.mode, *zoom)
        closeup = viz.Closeup(win, rf, conv.kernel, (cell.row, cell.col) if cell.space == "in" else None)
        fig = viz.receptive_field_figure(
            closeup, look, f"Receptive field of output ({oh}, {ow}), channel {ch}"
        )
        pad_note = (
            "copies of mirrored cells (arrows, or hover a padding cell: the cell it copies)"
            if conv.mode == "reflect"
            else "zeros"
        )
        picked = "; red: the picked input cell" if cell.space == "in" else ""
        show(
            fig,
            "dc_zoom",
            f"The dotted cyan box on the input image. Orange: the taps (dashed in the padding)"
            f"{picked}; blue: padding, {pad_note}. Click a cell to pick it.",
            pickable=True,
        )
    with right:
        mixed = conv.groups == 1
        kernel_title = f"Weights: {state.get(PRESET)}, {g.KH} x {g.KW}" + (
            f" (÷ {C} per channel)" if mixed else ""
        )
        fig = viz.weights_figure(conv.kernel, look, kernel_title, reads=reads_text(rf))
        show(
            fig,
            "dc_kernel",
            "Hover a weight: the cell it multiplies is outlined on the close-up and the image.",
            pickable=True,
        )
    section_products(conv, rf, detail, ch)


def section_products(conv: Conv, rf: maps.ReceptiveField, detail: tuple[int, int], ch: int) -> None:
    g, (oh, ow) = conv.g, detail
    mixed = conv.groups == 1
    x_group = image.planes if mixed else image.planes[ch : ch + 1]
    filt = conv.weight[0] if mixed else conv.weight[ch]
    terms = maps.tap_products(x_group, filt, rf)
    channels = terms.channel if mixed else np.full(terms.channel.shape, ch)
    reads = reads_text(rf).ravel()
    table = pa.table(
        {  # Arrow, what st.dataframe sends: a pandas frame cost 1.3 ms more per rerun
            "channel": channels,
            "tap (ki, kj)": [f"({i}, {j})" for i, j in zip(terms.ki, terms.kj, strict=True)],
            "reads": np.tile(reads, len(terms.channel) // max(1, len(reads))),
            "value": terms.value,
            "weight": terms.weight,
            "product": terms.product,
        }
    )
    s, p, d = g.stride_h, g.pad_top, g.dil_h
    st.latex(
        rf"y[{oh},{ow}] = \sum_{{c,k_i,k_j}} x\big[c,\ {oh}\cdot{s} - {p} + {d}\,k_i,\ {ow}\cdot{g.stride_w} "
        rf"- "
        rf"{g.pad_left} + {g.dil_w}\,k_j\big]\; w[c,k_i,k_j] = {terms.total:.4f}"
    )
    a, b = st.columns([2.2, 1])
    with a:
        st.markdown(
            f"**The {len(table)} products that sum to output ({oh}, {ow})** "
            f"(channel {'all, mixed' if mixed else ch})"
        )
        st.dataframe(table, hide_index=True, height=260)
    with b:
        got = float(conv.out[0 if mixed else ch, oh, ow])
        st.metric("Sum of products", f"{terms.total:.5f}", help="Equals the output value the kernel wrote.")
        st.caption(f"The kernel wrote {got:.5f} at this pixel.")
        st.caption(
            f"Input rows read: {sorted(set(rf.rows[:, 0].tolist()))}; columns: "
            f"{sorted(set(rf.cols[0].tolist()))} (outside 0..{H - 1} / 0..{W - 1}: padding)."
        )


# ---- the sliding window ------------------------------------------------------------------------------------
def section_sliding_window(conv: Conv, detail: tuple[int, int], ch: int) -> None:
    g = conv.g
    st.subheader("The window sliding over your image")
    crop = maps.animation_crop(g, *detail)
    oh, ow = crop.outputs
    m = 0 if conv.groups == 1 else ch
    win = maps.padded_window(image.planes[ch], g, conv.mode, crop.in_r0, crop.in_r1, crop.in_c0, crop.in_c1)
    tap_rows, tap_cols = maps.receptive_fields(g, oh, ow)
    out_values = conv.out[m, crop.out_r0 : crop.out_r1, crop.out_c0 : crop.out_c1]
    budget.check(
        budget.bytes_cost(60 * len(oh) * (6 * g.KH * g.KW + 30)),
        "The animation",
        "Use a smaller kernel or a dilation of 1.",
    )
    sweep = viz.Sweep(
        win,
        np.arange(crop.out_r0, crop.out_r1),
        np.arange(crop.out_c0, crop.out_c1),
        out_values,
        tap_rows,
        tap_cols,
        conv.out[m][oh, ow],
        crop.index_of(*detail),
        conv.weight.shape[1] * g.KH * g.KW,
    )
    title = f"Outputs {crop.out_r0}..{crop.out_r1 - 1} x {crop.out_c0}..{crop.out_c1 - 1}, channel {ch}"
    fig = viz.sliding_window_figure(sweep, look, title)
    show(
        fig,
        "dc_window",
        f"{len(oh)} steps, one per output, starting at the pick. Play, pause, or drag the "
        "slider; grey outputs are not computed yet. A GPU computes them all at once, one thread each "
        "(below). "
        "Where you pause is the pick.",
        pickable=True,
    )


# ---- which block and thread computed it --------------------------------------------------------------------
def filter_list(filters: tuple[int, ...] | range) -> str:
    filters = list(filters)
    if len(filters) == 1:
        return f"filter {filters[0]}"
    return f"{len(filters)} filters ({filters[0]}..{filters[-1]})"


def section_threads(conv: Conv, detail: tuple[int, int], ch: int) -> None:
    g, (oh, ow), launch = conv.g, detail, conv.launch
    st.subheader(f"Which block and thread computed output ({oh}, {ow}): {conv.ran}")
    if not gpuops.backend_info().gpu:
        st.caption(
            "This machine has no GPU: the NumPy twin computed the output. The figure shows the launch the "
            f"GPU makes for these settings ({launch.kernel})."
        )
    m = 0 if conv.groups == 1 else ch
    work = maps.computed_by(launch, g, oh, ow, m, channel=ch, C=C)
    per_thread = len(work.thread_pixels)
    if conv.ran == "im2col":
        title = f"{launch.kernel}: blockIdx {work.block}, threadIdx {work.thread}"
        what = (
            f"im2col first unfolds the input into X_unroll, then one cuBLAS GEMM computes y (no thread of "
            f"ours "
            f"writes y). The unfold thread that copies {work.note} is outlined orange: it copies "
            f"{per_thread} of them in this row; its block (cyan) copies {len(work.block_pixels)}."
        )
    else:
        title = f"{launch.kernel}: blockIdx {work.block}, threadIdx {work.thread}"
        what = (
            f"This thread computes {per_thread} output pixel{'s' if per_thread != 1 else ''} (orange) for "
            f"{filter_list(work.thread_filters)}; its block computes the {len(work.block_pixels)} pixels "
            f"outlined "
            f"cyan for {filter_list(work.block_filters)}."
        )
        if conv.groups > 1 and len(work.block_filters) == 1:
            what += (
                f" Here each channel is filtered on its own (groups = {conv.groups}, one filter per group), "
                f"so "
                "the kernel's filter slots for a group hold that one filter."
            )
    left, right = st.columns(2)
    with left:
        fig = viz.thread_figure(conv.out_pixels, work, detail, look, title)
        show(
            fig,
            "dc_threads",
            "Cyan: the block's pixels; orange: this thread's. Click a pixel to pick it.",
            pickable=True,
        )
    with right:
        st.markdown(f"`{launch.describe()}`")
        st.markdown(what)
        if conv.ran in ("tiled", "tiled_basic"):
            section_shared_tile(conv, detail, ch, work)


def section_shared_tile(conv: Conv, detail: tuple[int, int], ch: int, work: maps.ThreadWork) -> None:
    """The tiled kernels' shared-memory input tile (tile + halo) and what this thread reads of it."""
    g, launch = conv.g, conv.launch
    r0, r1, c0, c1 = maps.shared_tile(launch, g, *detail)
    win = maps.padded_window(
        image.planes[ch], g, conv.mode, *maps.around(np.array([r0, r1 - 1]), np.array([c0, c1 - 1]), g, 2)
    )
    taps = [maps.receptive_field(g, int(r), int(c), conv.mode) for r, c in work.thread_pixels]
    cells = np.concatenate([np.stack([t.rows.ravel(), t.cols.ravel()], axis=1) for t in taps])
    title = f"Shared-memory tile: {r1 - r0} x {c1 - c0} input cells (tile + halo)"
    fig = viz.shared_tile_figure(win, (r0, r1, c0, c1), cells, look, title)
    stage = dict(launch.args).get("cb_max", 1)  # v3 stages several channels per barrier; v2 and v6 one
    show(
        fig,
        "dc_tile",
        f"Cyan: the input tile the block copies to shared memory ({stage} channel(s) at a time, "
        f"{launch.shared_bytes:,} bytes) before any thread multiplies; orange: the cells this thread's "
        f"{len(work.thread_pixels)} pixel(s) read from it. Click a cell to pick it.",
        pickable=True,
    )


# ---- runtimes, source, downloads ---------------------------------------------------------------------------
def section_compare(conv: Conv, stride: int, pad: int, dil: int) -> None:
    g = conv.g
    with st.expander("Compare algorithms (time every algorithm on this image and these settings)"):
        x, w = gpuops.asarray(image.planes[None]), gpuops.asarray(conv.weight)
        args = (stride, pad, dil, conv.groups, conv.mode)
        problem = gpuops.plan_conv2d((1, C, H, W), conv.weight.shape, None, *args).problem

        def run(a: str):
            def go() -> object:
                budget.check(
                    budget.conv2d_cost(problem, a), a, "Lower the working size or use a smaller kernel."
                )
                return gpuops.conv2d(x, w, None, *args, a)

            return go

        results = compare(("dc_compare", *conv.key[:-1]), {a: run(a) for a in ALGORITHMS})
        if results:
            names = list(results)
            fig = viz.runtime_figure(
                names,
                [results[n].median_ms for n in names],
                conv.ran,
                look,
                f"conv2d on {W} x {H} x {C}, {g.KH} x {g.KW} kernel, {backend_name()}",
            )
            show(
                fig,
                "dc_runtimes",
                "Median of several runs (on the GPU after warm-up, CUDA events). On the "
                "CPU the NumPy twins differ only in how the work is arranged.",
            )


def section_source_and_downloads(conv: Conv) -> None:
    chosen = "auto's choice here" if state.get(ALGO) == gpuops.AUTO else "as selected"
    st.caption(f"The output above was computed by **{conv.ran}** ({chosen}) on {backend_name()}.")
    cuda_source(conv.launch, " then cuBLAS GEMM" if conv.ran == "im2col" else "", key="src_dc")
    with lazy_expander("Downloads: the filtered image, every figure as HTML", "downloads_dc") as shown:
        if not shown:
            return
        st.download_button(
            "The filtered image (PNG)",
            lambda: png_bytes(conv.out_pixels),
            file_name="filtered.png",
            mime="image/png",
            on_click="ignore",
            key="dl_dc_png",
        )
        for name, fig in st.session_state["_dc_figures"].items():
            st.download_button(
                f"Figure {name}.html (opens offline)",
                lambda fig=fig: fig.to_html(include_plotlyjs=True, full_html=True),
                file_name=f"{name}.html",
                mime="text/html",
                key=f"dl_{name}",
                on_click="ignore",
            )


# ---- hover maps (small grids: the weights and the close-up) ------------------------------------------------
def hover_maps(conv: Conv, detail: tuple[int, int], zoom: tuple[int, int, int, int]) -> dict:
    g = conv.g
    rf = maps.receptive_field(g, *detail, conv.mode)
    kernel_map = {
        ("x", i, j): [
            ("dc_zoom", "x", int(rf.rows[i, j]), int(rf.cols[i, j])),
            ("conv_input", "x", int(rf.rows[i, j]), int(rf.cols[i, j])),
        ]
        for i, j in np.ndindex(rf.rows.shape)
    }
    zoom_map = {
        ("x", int(rf.rows[i, j]), int(rf.cols[i, j])): [("dc_kernel", "x", i, j)]
        for i, j in np.ndindex(rf.rows.shape)
    }
    if conv.mode == "reflect":  # a padding cell of the close-up -> the cell it copies
        win = maps.padded_window(image.planes[0], g, conv.mode, *zoom)
        for a, b in zip(*np.nonzero(~win.inside & (win.source_rows >= 0)), strict=True):
            src = (int(win.source_rows[a, b]), int(win.source_cols[a, b]))
            zoom_map.setdefault(("x", int(win.rows[a]), int(win.cols[b])), []).extend(
                [("dc_zoom", "x", *src), ("conv_input", "x", *src)]
            )
    maps_out = {"dc_kernel": pick.hover_map(kernel_map), "dc_zoom": pick.hover_map(zoom_map)}
    return maps_out if pick.size_of(maps_out) < 60_000 else {}


# ---- the page ----------------------------------------------------------------------------------------------
st.title("Direct convolution")
st.caption(
    "Every output pixel is a sum of kernel weights x the input cells under the window. Click a pixel of "
    "either image."
)
upload_notice()
st.session_state["_dc_figures"] = {}
preset, k, stride, pad, mode, dil, mix, algo = section_settings()

kernel: np.ndarray | None = None
with shown_errors("The kernel"):  # (a custom kernel: its editor, collapsed unless just chosen)
    kernel = custom_kernel(k) if preset == "custom" else filters.preset_kernel(preset, k)
if preset != "custom" and state.get(KERNEL) is not None:
    state.put(KERNEL, None)  # a preset's link carries no custom kernel
st.session_state["_dc_last_preset"] = preset
if kernel is None:
    st.stop()

conv = None
with shown_errors("The convolution"):
    conv = compute(kernel, stride, pad, mode, dil, mix, algo)
section_formula(stride, pad, dil, kernel.shape[0], kernel.shape[1], conv.g if conv else None)
if conv is None:
    st.stop()

cell, detail = resolve_pick(conv)
zoom = zoom_region(conv, detail)
clicked = click_to_cell(
    pick.bridge(hover=hover_maps(conv, detail, zoom), style=look.outline_style()), conv, detail
)
if clicked is not None and clicked != cell:  # the same click as pending_click; kept as a safety net
    state.put(PICK, clicked)
    cell, detail = resolve_pick(conv)
    zoom = zoom_region(conv, detail)
ch = min(state.get(CHANNEL), C - 1) if conv.groups > 1 else 0

section_images(conv, cell, detail, zoom)
fit_images("conv_input", "conv_output", "dc_threads")
pick_summary(cell, conv, detail, ch)
section_pick_inputs(cell, conv)
section_receptive_field(conv, cell, detail, zoom, ch)
with shown_errors("The animation"):
    section_sliding_window(conv, detail, ch)
with shown_errors("The thread picture"):
    section_threads(conv, detail, ch)
section_compare(conv, stride, pad, dil)
section_source_and_downloads(conv)
