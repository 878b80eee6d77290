"""Direct convolution: pick an output pixel (or an input cell) on the images and see its receptive
field, the products that sum to it, the window sliding over your image, and the block and thread
that computed it. Index maps come from gpuops.maps.conv2d, figures from viz.conv2d."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

import gpuops
from gpuops import filters
from gpuops.maps import conv2d as maps
from ui import direct_view as view
from ui import kernel_editor, navigation, padding_view, picking, state, tables
from ui import precision_view as precision
from ui.common import backend_name, compare, cuda_source, figure, lazy_expander, shown_errors, style
from ui.direct_view import Direct
from ui.fit_images import fit_images
from ui.kernel_param import KernelParam
from ui.records import Conv
from ui.state import Cell, Param
from viz import conv2d as viz

navigation.through_app()  # a freshly started server may run this file alone (ui/navigation.py)

HELP, ALGORITHMS = view.HELP, view.ALGORITHMS
PRESET = Param("direct_preset", "box blur", "Kernel", "select", choices=(*filters.PRESETS, "custom"))
K = Param("direct_k", 3, "Size K", "slider", lo=1, hi=filters.MAX_KERNEL, help=HELP["k"])
STRIDE = Param("direct_stride", 1, "Stride S", "slider", lo=1, hi=8)
PAD = Param("direct_pad", 1, "Padding P", "slider", lo=0, hi=15, help=view.PAD_HELP)
SAME = Param("direct_same", False, "same", "toggle")  # explained in PAD's help: the column is narrow
MODE = Param("direct_mode", "zeros", "Pad mode", "select", choices=("zeros", "reflect"), help=HELP["mode"])
DIL = Param("direct_dil", 1, "Dilation D", "slider", lo=1, hi=5, help="Taps are D cells apart.")
MIX = Param("direct_mix", False, "Mix channels", "toggle", help=HELP["mix"])
ALGO = Param(
    "direct_algo", gpuops.AUTO, "Algorithm", "select", choices=(gpuops.AUTO, *ALGORITHMS), help=HELP["algo"]
)
PICK = Param("direct_pick", None, "Picked cell", choices=("out", "in"))
CHANNEL = Param("direct_ch", 0, "Channel", "number", lo=0, hi=3, help=HELP["ch"])
KERNEL = KernelParam("direct_kernel", None, "Custom kernel")
SPEED = Param("direct_speed", 3, "Speed (steps per second)", "slider", lo=1, hi=12, help=view.SPEED_HELP)
PARAMS = [PRESET, K, STRIDE, PAD, SAME, MODE, DIL, MIX, ALGO, PICK, CHANNEL, KERNEL, SPEED]

state.use(PARAMS)
image = st.session_state["image"]
C, H, W = image.planes.shape
look = style()

st.title("Direct convolution")
st.caption(
    "Every output pixel is a sum of kernel weights x the input cells under the window. "
    "Click a pixel of either image."
)


def show(fig: go.Figure, name: str, caption: str = "", *, pickable: bool = False) -> None:
    """A figure with its caption; its HTML download goes to the Downloads expander at the end."""
    figure(fig, name, caption, pickable=pickable, download=False)
    st.session_state["_dc_figures"][name] = fig


def upload_notice() -> None:
    """Upload chosen (a link), but the sample shows: no upload here, nor one carried (ui/lanes.py)."""
    shown = getattr(st.session_state.get("image"), "name", "")
    if st.session_state.get("source") == "upload" and shown.startswith("sample:"):
        st.info(view.UPLOAD_NOTICE, icon=":material/upload:")


def section_settings() -> tuple[str, int, int, int | str, str, int, bool, str]:
    """One compact row of settings above the images; K, padding and dilation follow the image."""
    preset = state.get(PRESET)
    size = 3 if preset in filters.FIXED_3X3 else kernel_editor.side(KERNEL) if preset == "custom" else None
    fixed = size is not None  # K is the kernel's own: a 3 x 3 Sobel, a typed custom kernel
    if fixed:
        state.put(K, size)
    limits = dict(max_k=K.hi, max_pad=PAD.hi, max_dil=DIL.hi)
    asked = (state.get(K), state.get(PAD), state.get(DIL), state.get(MODE))
    fitted, moved = view.fit_geometry(image, asked, limits, fixed)
    if moved:
        st.warning(moved, icon=":material/straighten:")
        for p, value in zip((K, PAD, DIL), fitted, strict=True):
            state.put(p, value)
    lim = maps.setting_limits(H, W, *fitted, state.get(MODE), **limits)
    cols = st.columns([1.15, 0.8, 0.8, 0.85, 0.9, 0.85, 1.35, 1.0], vertical_alignment="bottom")
    preset = state.widget(PRESET, container=cols[0])
    k = state.widget(K, container=cols[1], hi=lim.k_hi, disabled=fixed)
    stride = state.widget(STRIDE, container=cols[2])
    pad = state.widget(PAD, container=cols[3], lo=lim.pad_lo, hi=lim.pad_hi, disabled=state.get(SAME))
    pad, refused = padding_view.choose(state.widget(SAME, container=cols[3]), stride, pad)
    if refused:
        st.error(refused, icon=":material/block:")
    mode = state.widget(MODE, container=cols[4])
    dil = state.widget(DIL, container=cols[5], hi=lim.dil_hi)
    mix = state.widget(MIX, container=cols[6])
    algo = state.widget(ALGO, container=cols[7])
    return preset, size if fixed else k, stride, pad, mode, dil, mix, algo


def section_kernel(preset: str, k: int) -> np.ndarray | None:
    """The preset's kernel, or the custom kernel's text editor (ui/kernel_editor.py)."""
    kernel = None
    with shown_errors("The kernel"):
        kernel = view.custom_kernel(KERNEL, k) if preset == "custom" else filters.preset_kernel(preset, k)
    if preset != "custom" and state.get(KERNEL) is not None:
        state.put(KERNEL, None)  # a preset's link carries no custom kernel
    st.session_state[view.LAST_PRESET] = preset
    return kernel


def section_formula(args: tuple[int, int, int], kernel: np.ndarray, g: gpuops.WindowGeometry | None) -> None:
    """The output size with its formula and values: one line, the full formula in the expander."""
    label, lines = view.formula(image, args, kernel.shape, g)
    with st.expander(label, expanded=g is None):
        for line in lines:
            st.latex(line)


def section_images(direct: Direct, cell: Cell, zoom: tuple[int, int, int, int]) -> None:
    (in_fig, in_caption), (out_fig, out_caption) = direct.images(cell, zoom, look)
    left, right = st.columns(2)
    with left:
        show(in_fig, "conv_input", in_caption, pickable=True)
    with right:
        show(out_fig, "conv_output", out_caption, pickable=True)


def section_receptive_field(direct: Direct, cell: Cell, zoom: tuple[int, int, int, int], ch: int) -> None:
    g, conv, (oh, ow) = direct.g, direct.conv, direct.detail_of(cell)
    st.subheader(f"Output ({oh}, {ow}) up close")
    closeup, reads = direct.closeup(cell, zoom, ch)
    left, right = st.columns([1.1, 1])
    with left:
        fig = viz.receptive_field_figure(
            closeup, look, f"Receptive field of output ({oh}, {ow})<br>channel {ch}"
        )
        show(fig, "direct_zoom", direct.closeup_caption(cell), pickable=True)
    with right:
        per_channel = f" (÷ {C} per channel)" if conv.groups == 1 else ""
        title = f"Weights: {state.get(PRESET)}, {g.KH} x {g.KW}{per_channel}"
        fig = viz.weights_figure(conv.kernel, look, title, reads=reads)
        hover = "Hover a weight: the cell it multiplies is outlined on the close-up and the image."
        show(fig, "direct_kernel", hover, pickable=True)
    section_products(direct, (oh, ow), ch)


def section_products(direct: Direct, detail: tuple[int, int], ch: int) -> None:
    latex, table, total, (title, wrote, read) = direct.products(detail, ch)
    st.latex(latex)
    a, b = st.columns([2.2, 1])
    with a:
        st.markdown(title)
        tables.show(table, presentation=look.presentation, height=260)
    with b:
        st.metric("Sum of products", f"{total:.5f}", help="Equals the output value the kernel wrote.")
        st.caption(wrote)
        st.caption(read)


def section_sliding_window(direct: Direct, detail: tuple[int, int], ch: int) -> None:
    st.subheader("The window sliding over your image")
    speed = state.widget(SPEED, container=st.columns([1, 2])[0])
    fig, steps = direct.sweep(detail, ch, look, speed)
    show(fig, "direct_window", view.sweep_caption(steps, speed), pickable=True)


def section_threads(direct: Direct, detail: tuple[int, int], ch: int) -> None:
    conv, launch = direct.conv, direct.conv.launch
    st.subheader(f"Which block and thread computed output ({detail[0]}, {detail[1]}): {conv.ran}")
    if not gpuops.backend_info().gpu:
        st.caption(f"{view.NO_GPU} ({launch.kernel}).")
    work, title, what = direct.threads(detail, ch)
    left, right = st.columns(2)
    with left:
        fig = viz.thread_figure(conv.out_pixels, work, detail, look, title)
        show(
            fig,
            "direct_threads",
            "Cyan: the block's pixels; orange: this thread's. Click a pixel to pick it.",
            pickable=True,
        )
    with right:
        st.markdown(f"`{launch.describe()}`")
        st.markdown(what)
        if conv.ran in ("tiled", "tiled_basic") and launch.shared_bytes:  # v15 stages no tile
            fig, caption = direct.shared_tile(detail, ch, work, look)
            show(fig, "direct_tile", caption, pickable=True)


def section_compare(direct: Direct) -> None:
    with st.expander("Compare algorithms (time every algorithm on this image and these settings)"):
        results = compare(("direct_compare", *direct.conv.key[:-1]), direct.candidates(ALGORITHMS))
        if results:
            ms = [t.median_ms for t in results.values()]
            fig = viz.runtime_figure(list(results), ms, direct.conv.ran, look, direct.runtime_title())
            show(fig, "direct_runtimes", view.RUNTIMES_CAPTION)


def section_precision(direct: Direct) -> None:
    """The layer in fp32 / TF32 / bf16 / fp16, timed only when asked (ui/precision_view.py)."""
    with st.expander("Precision ladder: this layer in fp32, TF32, bf16 and fp16 (time and error)"):
        precision.show_ladder(image.planes, direct.conv, look, show)


def section_source_and_downloads(conv: Conv) -> None:
    chosen = "auto's choice here" if state.get(ALGO) == gpuops.AUTO else "as selected"
    ran = f"**{conv.ran}** (kernel {precision.launch_text(conv.launch)}; {chosen})"
    st.caption(f"The output above was computed by {ran} on {backend_name()}.")
    cuda_source(conv.launch, " then cuBLAS GEMM" if conv.ran == "im2col" else "", key="src_dc")
    with lazy_expander("Downloads: the filtered image, every figure as HTML", "downloads_dc") as shown:
        if not shown:
            return
        view.downloads(conv.out_pixels, st.session_state["_dc_figures"])


upload_notice()
st.session_state["_dc_figures"] = {}
preset, k, stride, pad, mode, dil, mix, algo = section_settings()
kernel = section_kernel(preset, k)
if kernel is None:
    st.stop()
conv = None
with shown_errors("The convolution"):
    conv = view.compute(image, kernel, (stride, pad, dil, mode), mix, algo)
section_formula((stride, state.get(PAD), dil), kernel, conv.g if conv else None)
if conv is None:
    st.stop()
if pad == "same":
    st.caption(padding_view.same_note(conv.g))
direct = Direct(image, conv)
rules = picking.Rules(
    direct.fit, direct.clicked, direct.hover, keep_default=False, in_browser=direct.window_rules()
)
cell = picking.resolve(PICK, rules, look)
detail = direct.detail_of(cell)
zoom = direct.zoom(detail)
ch = min(state.get(CHANNEL), C - 1) if conv.groups > 1 else 0
section_images(direct, cell, zoom)
fit_images("conv_input", "conv_output", "direct_threads")
st.markdown(direct.summary(cell, ch))
direct.pick_inputs((PICK, CHANNEL), cell)
section_receptive_field(direct, cell, zoom, ch)
with shown_errors("The animation"):
    section_sliding_window(direct, detail, ch)
with shown_errors("The thread picture"):
    section_threads(direct, detail, ch)
section_compare(direct)
section_precision(direct)
section_source_and_downloads(conv)
