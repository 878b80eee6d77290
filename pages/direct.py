"""Direct convolution: pick an output pixel (or an input cell) on the images and see its receptive
field, the products that sum to it, the window sliding over your image, and the block and thread
that computed it. Index maps come from gpuops.maps.conv2d, figures from viz.conv2d."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pyarrow as pa
import streamlit as st

import gpuops
from gpuops import filters
from gpuops.maps import conv2d as maps
from ui import budget, kernel_editor, navigation, pick, state
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
from ui.images import png_bytes, to_display
from ui.kernel_param import KernelParam
from ui.records import Conv
from ui.sidebar import CAP_OPTIONS
from ui.state import Cell, Param
from viz import conv2d as viz
from viz.images import signed_to_display

navigation.through_app()  # a freshly started server may run this file alone (ui/navigation.py)

PRESET = Param("dc_preset", "box blur", "Kernel", "select", choices=(*filters.PRESETS, "custom"))
K = Param("dc_k", 3, "Size K", "slider", lo=1, hi=filters.MAX_KERNEL,
          help="Sharpen, Laplacian, Sobel and emboss are defined as 3 x 3.")  # fmt: skip
STRIDE = Param("dc_stride", 1, "Stride S", "slider", lo=1, hi=8)
PAD = Param("dc_pad", 1, "Padding P", "slider", lo=0, hi=15, help="Cells added on every side.")
MODE = Param("dc_mode", "zeros", "Pad mode", "select", choices=("zeros", "reflect"),
             help="zeros: the padding reads 0. reflect: it copies the mirrored input cell.")  # fmt: skip
DIL = Param("dc_dil", 1, "Dilation D", "slider", lo=1, hi=5, help="Taps are D cells apart.")
MIX = Param("dc_mix", False, "Mix channels", "toggle",
            help="Off: each colour channel is filtered on its own (groups = C). On: one filter spans all channels.")  # fmt: skip
ALGORITHMS = getattr(gpuops, "ALL_ALGORITHMS", gpuops.ALGORITHMS)  # fp32 ones, then tensor-core (TF32) ones
ALGO = Param("dc_algo", gpuops.AUTO, "Algorithm", "select", choices=(gpuops.AUTO, *ALGORITHMS),
             help="auto: on the GPU, the fastest for this shape (timed once, like cuDNN's benchmark mode); "
             "on the CPU, direct.")  # fmt: skip
PICK = Param("dc_pick", None, "Picked cell", choices=("out", "in"))
CHANNEL = Param("dc_ch", 0, "Channel", "number", lo=0, hi=3,
                help="The channel the close-up, the table and the animation show.")  # fmt: skip
KERNEL = KernelParam("dc_kernel", None, "Custom kernel")
PARAMS = [PRESET, K, STRIDE, PAD, MODE, DIL, MIX, ALGO, PICK, CHANNEL, KERNEL]
CHANNEL_NAMES = {0: "red", 1: "green", 2: "blue"}

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
        st.info("This link was made with an uploaded image, which links cannot carry: upload one in the sidebar "
                "(Image source: Upload). Meanwhile the sample image is shown.", icon=":material/upload:")  # fmt: skip


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
    size = 3 if preset in filters.FIXED_3X3 else kernel_editor.side(KERNEL) if preset == "custom" else None
    fixed = size is not None  # K is the kernel's own: a 3 x 3 Sobel, a typed custom kernel
    if fixed:
        state.put(K, size)
    fit_geometry(fixed)
    lim = maps.setting_limits(H, W, state.get(K), state.get(PAD), state.get(DIL), state.get(MODE), max_k=K.hi,
                              max_pad=PAD.hi, max_dil=DIL.hi)  # fmt: skip
    cols = st.columns([1.15, 0.8, 0.8, 0.85, 0.9, 0.85, 1.35, 1.0], vertical_alignment="bottom")
    preset = state.widget(PRESET, container=cols[0])
    k = state.widget(K, container=cols[1], hi=lim.k_hi, disabled=fixed)
    stride = state.widget(STRIDE, container=cols[2])
    pad = state.widget(PAD, container=cols[3], lo=lim.pad_lo, hi=lim.pad_hi)
    mode = state.widget(MODE, container=cols[4])
    dil = state.widget(DIL, container=cols[5], hi=lim.dil_hi)
    mix = state.widget(MIX, container=cols[6])
    algo = state.widget(ALGO, container=cols[7])
    return preset, size if fixed else k, stride, pad, mode, dil, mix, algo


def custom_kernel(k: int) -> np.ndarray:
    """The custom kernel: typed as text (ui/kernel_editor.py), kept in the URL (dc_kernel); it
    starts as the preset that was on screen."""
    last = st.session_state.get("_dc_last_preset", "custom")
    start = filters.preset_kernel(last, k) if last != "custom" else None
    return kernel_editor.edit(KERNEL, k, start=start)


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
        label = (f"**Output: {g.W_out} x {g.H_out}** · H_out = ⌊({H} + 2·{pad} − {dil}·({kh}−1) − 1) / {stride}⌋ + 1 = "
                 f"{g.H_out} · W_out = ⌊({W} + 2·{pad} − {dil}·({kw}−1) − 1) / {stride}⌋ + 1 = {g.W_out}")  # fmt: skip
    with st.expander(label, expanded=g is None):
        st.latex(
            rf"H_{{out}} = \left\lfloor \frac{{H + 2P - D(K-1) - 1}}{{S}} \right\rfloor + 1 = "
            rf"\left\lfloor \frac{{{H} + 2\cdot{pad} - {dil}\cdot({kh}-1) - 1}}{{{stride}}} \right\rfloor + 1 = "
            + (str(g.H_out) if g else r"\text{invalid}")
        )
        st.latex(
            rf"W_{{out}} = \left\lfloor \frac{{{W} + 2\cdot{pad} - {dil}\cdot({kw}-1) - 1}}{{{stride}}} \right\rfloor"
            rf" + 1 = " + (str(g.W_out) if g else r"\text{invalid}")
        )


# ---- the pick -----------------------------------------------------------------------------------------------
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
        win = maps.padded_window(image.planes[0], conv.g, conv.mode, click.row, click.row + 1, click.col,
                                 click.col + 1)  # fmt: skip
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
    st.session_state[PICK.key] = Cell(space, int(st.session_state["w_dc_pick_row"]),
                                      int(st.session_state["w_dc_pick_col"]))  # fmt: skip


def section_pick_inputs(cell: Cell, conv: Conv) -> None:
    """The keyboard path: the pick as number inputs, in sync with clicks."""
    g = conv.g
    rows, cols = (g.H_out, g.W_out) if cell.space == "out" else (H, W)
    spaces = ["output pixel", "input cell"]
    st.session_state["w_dc_pick_space"] = spaces[0] if cell.space == "out" else spaces[1]
    st.session_state["w_dc_pick_row"] = cell.row
    st.session_state["w_dc_pick_col"] = cell.col
    a, b, c, d = st.columns([1.2, 1, 1, 1.3], vertical_alignment="bottom")
    a.selectbox("Pick", spaces, key="w_dc_pick_space", on_change=_set_pick_from_inputs,
                help="Or click a pixel of either image.")  # fmt: skip
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
    left, right = st.columns(2)
    with left:
        if cell.space == "out":
            fig = viz.input_figure(in_pixels, look, f"Input: {W} x {H}, {C} channel{'s' if C > 1 else ''}",
                                   pads=(g.pad_top, g.pad_bottom, g.pad_left, g.pad_right), taps=(rf.rows, rf.cols),
                                   inside=rf.inside, sources=(rf.source_rows, rf.source_cols), zoom=zoom)  # fmt: skip
            what = f"orange: the {g.KH} x {g.KW} taps output ({cell.row}, {cell.col}) reads"
        else:
            fig = viz.input_figure(in_pixels, look, f"Input: {W} x {H}, {C} channel{'s' if C > 1 else ''}",
                                   pads=(g.pad_top, g.pad_bottom, g.pad_left, g.pad_right), picked=(cell.row, cell.col),
                                   zoom=zoom)  # fmt: skip
            what = f"orange: the picked input cell ({cell.row}, {cell.col})"
        pad_note = "mirrored cells" if conv.mode == "reflect" else "zeros"
        show(fig, "conv_input", f"Click a pixel. {what}; blue band: padding ({pad_note}); dotted cyan: the close-up.",
               pickable=True)  # fmt: skip
    with right:
        if cell.space == "out":
            fig = viz.output_figure(conv.out_pixels, look, f"Output: {g.W_out} x {g.H_out}", picked=detail)
            what = f"orange: output ({cell.row}, {cell.col})"
        else:
            readers = maps.readers_of(g, cell.row, cell.col, conv.mode)
            fig = viz.output_figure(conv.out_pixels, look, f"Output: {g.W_out} x {g.H_out}", readers=readers[:, :2],
                                    detail=detail)  # fmt: skip
            what = (f"red: the {len(np.unique(readers[:, :2], axis=0))} outputs that read input ({cell.row}, "
                    f"{cell.col}); dotted: output {detail}, explained below")  # fmt: skip
        show(fig, "conv_output", f"Click a pixel. {what}. Shown as {conv.shown_as}.", pickable=True)


def pick_summary(cell: Cell, conv: Conv, detail: tuple[int, int], ch: int) -> None:
    g = conv.g
    m = 0 if conv.groups == 1 else ch
    if cell.space == "out":
        st.markdown(f"**Picked: output pixel ({cell.row}, {cell.col})** of channel {m}: value "
                    f"{float(conv.out[m, cell.row, cell.col]):.4f}, the sum of {conv.weight.shape[1] * g.KH * g.KW} "
                    "products (below).")  # fmt: skip
        return
    readers = maps.readers_of(g, cell.row, cell.col, conv.mode)
    outputs = len(np.unique(readers[:, :2], axis=0))
    reads = f"read by **{outputs} output pixel{'s' if outputs != 1 else ''}** ({len(readers)} taps)"
    if outputs == 0:
        reads = "read by **no output**: the stride steps over it"
    st.markdown(f"**Picked: input cell ({cell.row}, {cell.col})**, {reads}, outlined red on the output: what the "
                f"backward pass will sum for its gradient. Below: output {detail}, which reads it.")  # fmt: skip


# ---- the receptive field up close ------------------------------------------------------------------------------
def zoom_region(conv: Conv, detail: tuple[int, int]) -> tuple[int, int, int, int]:
    rf = maps.receptive_field(conv.g, *detail, conv.mode)
    return maps.around(rf.rows, rf.cols, conv.g, 1 if conv.g.KH * conv.g.dil_h > 9 else 2)


def reads_text(rf: maps.ReceptiveField) -> np.ndarray:
    text = np.empty(rf.rows.shape, dtype=object)
    for i, j in np.ndindex(rf.rows.shape):
        r, c, sr, sc = rf.rows[i, j], rf.cols[i, j], rf.source_rows[i, j], rf.source_cols[i, j]
        text[i, j] = (f"input ({r}, {c})" if rf.inside[i, j] else
                      f"padding ({r}, {c}) = copy of ({sr}, {sc})" if sr >= 0 else f"padding ({r}, {c}) = 0")  # fmt: skip
    return text


def section_receptive_field(conv: Conv, cell: Cell, detail: tuple[int, int], zoom: tuple[int, int, int, int],
                            ch: int) -> None:  # fmt: skip
    g, (oh, ow) = conv.g, detail
    rf = maps.receptive_field(g, oh, ow, conv.mode)
    st.subheader(f"Output ({oh}, {ow}) up close")
    left, right = st.columns([1.1, 1])
    with left:
        win = maps.padded_window(image.planes[ch], g, conv.mode, *zoom)
        fig = viz.receptive_field_figure(win.rows, win.cols, win.values, win.inside, win.source_rows, win.source_cols,
                                         rf.rows, rf.cols, conv.kernel, look,
                                         f"Receptive field of output ({oh}, {ow}), channel {ch}",
                                         picked=(cell.row, cell.col) if cell.space == "in" else None)  # fmt: skip
        pad_note = ("copies of mirrored cells (arrows, or hover a padding cell: the cell it copies)"
                    if conv.mode == "reflect" else "zeros")  # fmt: skip
        picked = "; red: the picked input cell" if cell.space == "in" else ""
        show(fig, "dc_zoom", f"The dotted cyan box on the input image. Orange: the taps (dashed in the padding)"
               f"{picked}; blue: padding, {pad_note}. Click a cell to pick it.", pickable=True)  # fmt: skip
    with right:
        mixed = conv.groups == 1
        kernel_title = f"Weights: {state.get(PRESET)}, {g.KH} x {g.KW}" + (
            f" (÷ {C} per channel)" if mixed else ""
        )
        fig = viz.weights_figure(conv.kernel, look, kernel_title, reads=reads_text(rf))
        show(fig, "dc_kernel", "Hover a weight: the cell it multiplies is outlined on the close-up and the image.",
               pickable=True)  # fmt: skip
    section_products(conv, rf, detail, ch)


def section_products(conv: Conv, rf: maps.ReceptiveField, detail: tuple[int, int], ch: int) -> None:
    g, (oh, ow) = conv.g, detail
    mixed = conv.groups == 1
    x_group = image.planes if mixed else image.planes[ch : ch + 1]
    filt = conv.weight[0] if mixed else conv.weight[ch]
    terms = maps.tap_products(x_group, filt, rf)
    channels = terms.channel if mixed else np.full(terms.channel.shape, ch)
    reads = reads_text(rf).ravel()
    table = pa.table({  # Arrow, what st.dataframe sends: a pandas frame cost 1.3 ms more per rerun
        "channel": channels, "tap (ki, kj)": [f"({i}, {j})" for i, j in zip(terms.ki, terms.kj, strict=True)],
        "reads": np.tile(reads, len(terms.channel) // max(1, len(reads))), "value": terms.value,
        "weight": terms.weight, "product": terms.product,
    })  # fmt: skip
    s, p, d = g.stride_h, g.pad_top, g.dil_h
    st.latex(
        rf"y[{oh},{ow}] = \sum_{{c,k_i,k_j}} x\big[c,\ {oh}\cdot{s} - {p} + {d}\,k_i,\ {ow}\cdot{g.stride_w} - "
        rf"{g.pad_left} + {g.dil_w}\,k_j\big]\; w[c,k_i,k_j] = {terms.total:.4f}"
    )
    a, b = st.columns([2.2, 1])
    with a:
        st.markdown(f"**The {len(table)} products that sum to output ({oh}, {ow})** "
                    f"(channel {'all, mixed' if mixed else ch})")  # fmt: skip
        st.dataframe(table, hide_index=True, height=260)
    with b:
        got = float(conv.out[0 if mixed else ch, oh, ow])
        st.metric("Sum of products", f"{terms.total:.5f}", help="Equals the output value the kernel wrote.")
        st.caption(f"The kernel wrote {got:.5f} at this pixel.")
        st.caption(f"Input rows read: {sorted(set(rf.rows[:, 0].tolist()))}; columns: "
                   f"{sorted(set(rf.cols[0].tolist()))} (outside 0..{H - 1} / 0..{W - 1}: padding).")  # fmt: skip


# ---- the sliding window ---------------------------------------------------------------------------------------
def section_sliding_window(conv: Conv, detail: tuple[int, int], ch: int) -> None:
    g = conv.g
    st.subheader("The window sliding over your image")
    crop = maps.animation_crop(g, *detail)
    oh, ow = crop.outputs
    m = 0 if conv.groups == 1 else ch
    win = maps.padded_window(image.planes[ch], g, conv.mode, crop.in_r0, crop.in_r1, crop.in_c0, crop.in_c1)
    tap_rows, tap_cols = maps.receptive_fields(g, oh, ow)
    out_values = conv.out[m, crop.out_r0 : crop.out_r1, crop.out_c0 : crop.out_c1]
    budget.check(budget.bytes_cost(60 * len(oh) * (6 * g.KH * g.KW + 30)), "The animation",
                 "Use a smaller kernel or a dilation of 1.")  # fmt: skip
    fig = viz.sliding_window_figure(
        win.rows, win.cols, win.values, ~win.inside & np.isfinite(win.values), np.arange(crop.out_r0, crop.out_r1),
        np.arange(crop.out_c0, crop.out_c1), out_values, tap_rows, tap_cols, conv.out[m][oh, ow],
        crop.index_of(*detail), look, f"Outputs {crop.out_r0}..{crop.out_r1 - 1} x {crop.out_c0}..{crop.out_c1 - 1}, "
        f"channel {ch}", conv.weight.shape[1] * g.KH * g.KW,
    )  # fmt: skip
    show(fig, "dc_window", f"{len(oh)} steps, one per output, starting at the pick. Play, pause, or drag the "
           "slider; grey outputs are not computed yet. A GPU computes them all at once, one thread each (below). "
           "Where you pause is the pick.", pickable=True)  # fmt: skip


# ---- which block and thread computed it ---------------------------------------------------------------------------
def filter_list(filters: tuple[int, ...] | range) -> str:
    filters = list(filters)
    if len(filters) == 1:
        return f"filter {filters[0]}"
    return f"{len(filters)} filters ({filters[0]}..{filters[-1]})"


def section_threads(conv: Conv, detail: tuple[int, int], ch: int) -> None:
    g, (oh, ow), launch = conv.g, detail, conv.launch
    st.subheader(f"Which block and thread computed output ({oh}, {ow}): {conv.ran}")
    if not gpuops.backend_info().gpu:
        st.caption("This machine has no GPU: the NumPy twin computed the output. The figure shows the launch the "
                   f"GPU makes for these settings ({launch.kernel}).")  # fmt: skip
    m = 0 if conv.groups == 1 else ch
    work = maps.computed_by(launch, g, oh, ow, m, channel=ch, C=C)
    per_thread = len(work.thread_pixels)
    if conv.ran == "im2col":
        title = f"{launch.kernel}: blockIdx {work.block}, threadIdx {work.thread}"
        what = (f"im2col first unfolds the input into X_unroll, then one cuBLAS GEMM computes y (no thread of ours "
                f"writes y). The unfold thread that copies {work.note} is outlined orange: it copies "
                f"{per_thread} of them in this row; its block (cyan) copies {len(work.block_pixels)}.")  # fmt: skip
    else:
        title = f"{launch.kernel}: blockIdx {work.block}, threadIdx {work.thread}"
        what = (f"This thread computes {per_thread} output pixel{'s' if per_thread != 1 else ''} (orange) for "
                f"{filter_list(work.thread_filters)}; its block computes the {len(work.block_pixels)} pixels outlined "
                f"cyan for {filter_list(work.block_filters)}.")  # fmt: skip
        if conv.groups > 1 and len(work.block_filters) == 1:
            what += (f" Here each channel is filtered on its own (groups = {conv.groups}, one filter per group), so "
                     "the kernel's filter slots for a group hold that one filter.")  # fmt: skip
    left, right = st.columns(2)
    with left:
        fig = viz.thread_figure(conv.out_pixels, work.block_pixels, work.thread_pixels, detail, look, title)
        show(fig, "dc_threads", "Cyan: the block's pixels; orange: this thread's. Click a pixel to pick it.",
               pickable=True)  # fmt: skip
    with right:
        st.markdown(f"`{launch.describe()}`")
        st.markdown(what)
        if conv.ran in ("tiled", "tiled_basic"):
            section_shared_tile(conv, detail, ch, work)


def section_shared_tile(conv: Conv, detail: tuple[int, int], ch: int, work: maps.ThreadWork) -> None:
    """The tiled kernels' shared-memory input tile (tile + halo) and what this thread reads of it."""
    g, launch = conv.g, conv.launch
    r0, r1, c0, c1 = maps.shared_tile(launch, g, *detail)
    win = maps.padded_window(image.planes[ch], g, conv.mode, *maps.around(np.array([r0, r1 - 1]),
                                                                          np.array([c0, c1 - 1]), g, 2))  # fmt: skip
    taps = [maps.receptive_field(g, int(r), int(c), conv.mode) for r, c in work.thread_pixels]
    cells = np.concatenate([np.stack([t.rows.ravel(), t.cols.ravel()], axis=1) for t in taps])
    fig = viz.shared_tile_figure(win.rows, win.cols, win.values, win.inside, (r0, r1, c0, c1), cells, look,
                                 f"Shared-memory tile: {r1 - r0} x {c1 - c0} input cells (tile + halo)")  # fmt: skip
    stage = dict(launch.args).get("cb_max", 1)  # v3 stages several channels per barrier; v2 and v6 one
    show(fig, "dc_tile", f"Cyan: the input tile the block copies to shared memory ({stage} channel(s) at a time, "
           f"{launch.shared_bytes:,} bytes) before any thread multiplies; orange: the cells this thread's "
           f"{len(work.thread_pixels)} pixel(s) read from it. Click a cell to pick it.", pickable=True)  # fmt: skip


# ---- runtimes, source, downloads -------------------------------------------------------------------------------------
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
            fig = viz.runtime_figure(names, [results[n].median_ms for n in names], conv.ran, look,
                                     f"conv2d on {W} x {H} x {C}, {g.KH} x {g.KW} kernel, {backend_name()}")  # fmt: skip
            show(fig, "dc_runtimes", "Median of several runs (on the GPU after warm-up, CUDA events). On the "
                   "CPU the NumPy twins differ only in how the work is arranged.")  # fmt: skip


def section_source_and_downloads(conv: Conv) -> None:
    chosen = "auto's choice here" if state.get(ALGO) == gpuops.AUTO else "as selected"
    st.caption(f"The output above was computed by **{conv.ran}** ({chosen}) on {backend_name()}.")
    cuda_source(conv.launch, " then cuBLAS GEMM" if conv.ran == "im2col" else "", key="src_dc")
    with lazy_expander("Downloads: the filtered image, every figure as HTML", "downloads_dc") as shown:
        if not shown:
            return
        st.download_button("The filtered image (PNG)", lambda: png_bytes(conv.out_pixels), file_name="filtered.png",
                           mime="image/png", on_click="ignore", key="dl_dc_png")  # fmt: skip
        for name, fig in st.session_state["_dc_figures"].items():
            st.download_button(f"Figure {name}.html (opens offline)",
                               lambda fig=fig: fig.to_html(include_plotlyjs=True, full_html=True),
                               file_name=f"{name}.html", mime="text/html", key=f"dl_{name}", on_click="ignore")  # fmt: skip


# ---- hover maps (small grids: the weights and the close-up) --------------------------------------------------------------
def hover_maps(conv: Conv, detail: tuple[int, int], zoom: tuple[int, int, int, int]) -> dict:
    g = conv.g
    rf = maps.receptive_field(g, *detail, conv.mode)
    kernel_map = {("x", i, j): [("dc_zoom", "x", int(rf.rows[i, j]), int(rf.cols[i, j])),
                                ("conv_input", "x", int(rf.rows[i, j]), int(rf.cols[i, j]))]
                  for i, j in np.ndindex(rf.rows.shape)}  # fmt: skip
    zoom_map = {("x", int(rf.rows[i, j]), int(rf.cols[i, j])): [("dc_kernel", "x", i, j)]
                for i, j in np.ndindex(rf.rows.shape)}  # fmt: skip
    if conv.mode == "reflect":  # a padding cell of the close-up -> the cell it copies
        win = maps.padded_window(image.planes[0], g, conv.mode, *zoom)
        for a, b in zip(*np.nonzero(~win.inside & (win.source_rows >= 0)), strict=True):
            src = (int(win.source_rows[a, b]), int(win.source_cols[a, b]))
            zoom_map.setdefault(("x", int(win.rows[a]), int(win.cols[b])), []).extend(
                [("dc_zoom", "x", *src), ("conv_input", "x", *src)])  # fmt: skip
    maps_out = {"dc_kernel": pick.hover_map(kernel_map), "dc_zoom": pick.hover_map(zoom_map)}
    return maps_out if pick.size_of(maps_out) < 60_000 else {}


# ---- images that scale with their column ------------------------------------------------------------------------
_FIT_JS = r"""
export default function (component) {
  const reg = (window.__dcFitImages ??= {});
  reg.data = component.data;
  const fit = () => {
    for (const [name, spec] of Object.entries(reg.data.charts || {})) {
      const gd = [...document.querySelectorAll(`.st-key-pick-${name} .js-plotly-plot`)].find((g) => g._fullLayout);
      if (!gd || !window.Plotly) continue;
      const L = gd._fullLayout, m = L.margin;
      const span = (a) => Math.abs(a.range[1] - a.range[0]);
      const aspect = spec.aspect ?? span(L.yaxis) / span(L.xaxis);  // the figure's own extent
      const plot = Math.min((gd.clientWidth - m.l - m.r) * aspect, window.innerHeight * spec.screen);
      const want = Math.round(Math.max(plot, 80) + m.t + m.b);
      // Streamlit fixes the height of the chart's boxes from the figure's: follow them up to the element
      for (let el = gd.parentElement; el; el = el.parentElement) {
        if (el.style.height !== `${want}px`) el.style.height = `${want}px`;
        if (el.classList.contains("stElementContainer")) { el.style.flex = `0 0 ${want}px`; break; }
      }
      if (Math.abs(L.height - want) > 3) window.Plotly.relayout(gd, { height: want });
    }
  };
  reg.resize?.disconnect();
  reg.resize = new ResizeObserver(() => requestAnimationFrame(fit));
  reg.mutation?.disconnect();
  reg.mutation = new MutationObserver(() => {
    for (const el of document.querySelectorAll('[class*="st-key-pick-"] .stPlotlyChart')) reg.resize.observe(el);
    requestAnimationFrame(fit);
  });
  reg.mutation.observe(document.body, { childList: true, subtree: true });
  fit();
}
"""
_fit_images = st.components.v2.component("dc_fit_images", js=_FIT_JS)


def fit_images(*names: str) -> None:
    """Make the named pickable image charts as tall as their column width allows (height = width x
    rows / columns of their axes' ranges, at most 62% of the window): images scale with the
    column, sidebar open or not. (A shared `pick.chart(..., fit=True)` would do it for every page.)"""
    charts = {name: {"screen": 0.62} for name in names}
    _fit_images(key="dc_fit_images", data={"charts": charts}, height=0)


# ---- the page ------------------------------------------------------------------------------------------------------
st.title("Direct convolution")
st.caption("Every output pixel is a sum of kernel weights x the input cells under the window. Click a pixel of "
           "either image.")  # fmt: skip
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

applied = pick.pending()  # this run's click, applied by resolve_pick (a step maps through the old crop)
cell, detail = resolve_pick(conv)
zoom = zoom_region(conv, detail)
# hovering either image outlines its window / its readers, computed in the browser (no rerun)
rules = pick.window_rules(conv.g, conv.mode, outputs="conv_output", inputs="conv_input")
clicked = click_to_cell(
    pick.bridge(hover=hover_maps(conv, detail, zoom), style=look.outline_style(), rules=rules), conv, detail
)
if applied is None and clicked is not None and clicked != cell:  # a click pending() could not read
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
