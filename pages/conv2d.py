"""Direct convolution: filters, the output-size formula, one pixel's receptive field, its thread."""

import numpy as np
import pandas as pd
import streamlit as st

import gpuops
from gpuops import filters
from gpuops.maps import conv2d as conv_maps
from ui import state
from ui.common import backend_name, cuda_source, figure, session_cached, shown_errors, time_call
from ui.images import png_bytes, to_display
from ui.state import Param, bound, clamp_state
from viz.charts import runtime_bars
from viz.grids import halo_figure, receptive_field_figure, thread_tile_figure
from viz.images import image_figure, signed_to_display

PARAMS = [
    Param("dc_preset", "box blur", choices=(*filters.PRESETS, "custom")),
    Param("dc_k", 3, lo=1, hi=filters.MAX_KERNEL),
    Param("dc_stride", 1, lo=1, hi=8),
    Param("dc_pad", 1, lo=0, hi=15),
    Param("dc_mode", "zeros", choices=("zeros", "reflect")),
    Param("dc_dil", 1, lo=1, hi=5),
    Param("dc_mix", False),
    Param("dc_algo", gpuops.AUTO, choices=(gpuops.AUTO, *gpuops.ALGORITHMS)),
    Param("dc_row", 0, lo=0, hi=4096),
    Param("dc_col", 0, lo=0, hi=4096),
]
state.use(PARAMS)
image = st.session_state["image"]
C, H, W = image.planes.shape

st.title("Direct convolution")
st.caption(
    "One GPU thread per output pixel: it multiplies the kernel with the input cells under it and sums."
)

# ---- settings -------------------------------------------------------------------------------
left, mid, right = st.columns(3)
with left:
    preset = bound(st.selectbox, "Kernel", "dc_preset", options=[*filters.PRESETS, "custom"])
    fixed = preset in filters.FIXED_3X3
    if fixed:
        st.session_state["dc_k"] = 3
    k = bound(st.slider, "Kernel size K", "dc_k", min_value=1, max_value=filters.MAX_KERNEL, disabled=fixed,
              help="sharpen, Laplacian, Sobel and emboss are defined as 3 x 3.")  # fmt: skip
with mid:
    stride = bound(st.slider, "Stride S", "dc_stride", min_value=1, max_value=8)
    pad = bound(st.slider, "Padding P", "dc_pad", min_value=0, max_value=15)
    mode = bound(st.radio, "Padding mode", "dc_mode", options=["zeros", "reflect"], horizontal=True)
with right:
    dil = bound(st.slider, "Dilation D", "dc_dil", min_value=1, max_value=5)
    mix = bound(st.toggle, "Mix channels (one output map)", "dc_mix",
                help="Off: each colour channel is filtered on its own (groups = C). On: one filter spans all channels.")  # fmt: skip
    algo = bound(st.radio, "Algorithm", "dc_algo", options=[gpuops.AUTO, *gpuops.ALGORITHMS], horizontal=True,
                 help="auto: on the GPU all four are timed once for this shape and the fastest is kept "
                 "(like cuDNN's benchmark mode); on the CPU, direct.")  # fmt: skip

kernel = None
with shown_errors("The kernel"):
    if preset == "custom":
        stored = st.session_state.get("custom_cells")
        if stored is None or len(stored) != k:
            stored = filters.preset_kernel("identity", k).tolist()
            st.session_state["custom_cells"] = stored
        st.markdown("**Custom kernel** (numbers only; empty cells are not allowed)")
        edited = st.data_editor(
            pd.DataFrame(stored, columns=[str(j) for j in range(k)]), key=f"custom_editor_{k}",
            column_config={str(j): st.column_config.NumberColumn(format="%.3f", width="small") for j in range(k)},
        )  # fmt: skip
        kernel = filters.check_custom_kernel(edited.to_numpy(dtype=np.float64, na_value=np.nan))
    else:
        kernel = filters.preset_kernel(preset, k)
if kernel is None:
    st.stop()

weight, groups = filters.channel_weights(kernel, C, mix)
kh, kw = kernel.shape

# ---- the formula and the result ----------------------------------------------------------------
plan = None
with shown_errors("The convolution"):
    plan = gpuops.plan_conv2d((1, C, H, W), weight.shape, None, stride, pad, dil, groups, mode, algo)
g_ext = dil * (kh - 1) + 1
st.latex(
    rf"H_{{out}} = \left\lfloor \frac{{H + 2P - D(K-1) - 1}}{{S}} \right\rfloor + 1 = "
    rf"\left\lfloor \frac{{{H} + 2\cdot{pad} - {dil}\cdot({kh}-1) - 1}}{{{stride}}} \right\rfloor + 1 = "
    + (str(plan.geometry.H_out) if plan else r"\text{invalid}")
)
st.latex(
    rf"W_{{out}} = \left\lfloor \frac{{{W} + 2\cdot{pad} - {dil}\cdot({kw}-1) - 1}}{{{stride}}} \right\rfloor + 1 = "
    + (str(plan.geometry.W_out) if plan else r"\text{invalid}")
)
if plan is None:
    st.stop()
g = plan.geometry


def measure_all() -> dict[str, float]:
    x = gpuops.asarray(image.planes[None])
    w = gpuops.asarray(weight)
    return {
        a: time_call(lambda a=a: gpuops.conv2d(x, w, None, stride, pad, dil, groups, mode, a)).median_ms
        for a in gpuops.ALGORITHMS
    }


times: dict[str, float] = {}
with shown_errors("Timing"):
    times = session_cached(("times", image.key, kernel.shape, stride, pad, dil, mode, mix), measure_all)


def compute() -> tuple[np.ndarray, str]:
    """The output by the chosen algorithm. On the GPU "auto" takes the fastest of the runtimes
    just measured (the same rule as gpuops' auto, without timing twice); on the CPU, direct."""
    x = gpuops.asarray(image.planes[None])
    w = gpuops.asarray(weight)
    if algo != gpuops.AUTO:
        ran = algo
    elif gpuops.backend_info().gpu and times:
        ran = min(times, key=times.__getitem__)
    else:
        ran = gpuops.resolve_algorithm(x, w, None, stride, pad, dil, groups, mode)
    y = gpuops.conv2d(x, w, None, stride, pad, dil, groups, mode, ran)
    return gpuops.to_numpy(y)[0], ran


result = None
with shown_errors("The convolution"):
    result = session_cached(("conv", image.key, kernel.tobytes(), stride, pad, dil, mode, mix, algo), compute)
if result is None:
    st.stop()
out, ran = result
display_mode = "abs" if filters.is_edge_filter(kernel) else "clip"
shown, how = signed_to_display(out, display_mode)
out_pixels = to_display(shown)
in_pixels = session_cached(("display", image.key), lambda: to_display(image.planes))

a, b = st.columns(2)
with a:
    figure(image_figure(in_pixels, f"Input: {W} x {H}, {C} channel(s)"), "conv_input",
           "The image the kernel slides over (before padding).")  # fmt: skip
with b:
    figure(image_figure(out_pixels, f"Output: {g.W_out} x {g.H_out} ({how})", caption_axis="output"), "conv_output",
           f"Each output pixel sums a {kh} x {kw} window (spread {g_ext} cells by dilation {dil}), moved {stride} "
           "cell(s) at a time.")  # fmt: skip
    st.download_button("Download the filtered image (PNG)", lambda: png_bytes(out_pixels), file_name="filtered.png",
                       mime="image/png", on_click="ignore")  # fmt: skip

# ---- one output pixel ------------------------------------------------------------------------------
st.header("One output pixel")
clamp_state("dc_row", 0, g.H_out - 1)
clamp_state("dc_col", 0, g.W_out - 1)
p1, p2 = st.columns(2)
with p1:
    oh = bound(st.number_input, "Output row", "dc_row", min_value=0, max_value=g.H_out - 1, step=1)
with p2:
    ow = bound(st.number_input, "Output column", "dc_col", min_value=0, max_value=g.W_out - 1, step=1)
rf = conv_maps.receptive_field(g, oh, ow, mode)
channel = 0
padded_plane = gpuops.reflect_pad(image.planes[channel], (g.pad_left, g.pad_right, g.pad_top, g.pad_bottom)) \
    if mode == "reflect" else np.pad(image.planes[channel], ((g.pad_top, g.pad_bottom), (g.pad_left, g.pad_right)))  # fmt: skip
filt = weight[0] if mix else weight[channel]
c1, c2 = st.columns([1, 1])
with c1:
    figure(receptive_field_figure(image.planes[channel], padded_plane, rf.rows, rf.cols, kernel, (g.pad_top, g.pad_left),
                                  f"Receptive field of output ({oh}, {ow}), channel {channel}"), "receptive_field",
           "Orange squares: the input cells this output reads. Blue-grey cells: padding "
           f"({'copies of mirrored cells' if mode == 'reflect' else 'zeros'}).")  # fmt: skip
with c2:
    x_group = image.planes if mix else image.planes[channel : channel + 1]
    terms = conv_maps.tap_products(x_group, filt, rf)
    table = pd.DataFrame({"channel": terms.channel, "tap (ki, kj)": [f"({i}, {j})" for i, j in zip(terms.ki, terms.kj, strict=True)],
                          "input cell": [f"({r}, {c})" if r >= 0 else "padding (0)" for r, c in zip(terms.input_row, terms.input_col, strict=True)],
                          "value": terms.value, "weight": terms.weight, "product": terms.product})  # fmt: skip
    st.markdown(f"**The products that sum to output ({oh}, {ow})** (channel {'all' if mix else channel})")
    st.dataframe(table, hide_index=True, height=320)
    got = float(out[0 if mix else channel, oh, ow])
    st.metric("Sum of products", f"{terms.total:.5f}", help="Equals the output value the kernel wrote.")
    st.caption(f"The kernel wrote {got:.5f} at this pixel.")

# ---- which thread computed it -------------------------------------------------------------------------
st.header("Which block and thread computed it")
m = 0 if mix else channel
t1, t2 = st.columns(2)
for column, algorithm in ((t1, "tiled_basic"), (t2, "tiled")):
    with column, shown_errors(f"The {algorithm} launch"):
        launch = gpuops.plan_conv2d(
            (1, C, H, W), weight.shape, None, stride, pad, dil, groups, mode, algorithm
        ).launch
        ref = launch.thread_of(0, m, oh, ow)
        figure(thread_tile_figure(out_pixels, launch.threads.tile, oh, ow, ref.block, ref.thread, launch.kernel),
               f"threads_{algorithm}", f"Red: output ({oh}, {ow}); orange: its block's tile; cyan: tile edges. "
               + launch.describe())  # fmt: skip
        if algorithm == "tiled":
            r0, r1, c0, c1 = conv_maps.shared_tile(launch, g, oh, ow)
            pads4 = g.pads
            padded_pixels = session_cached(("padded_display", image.key, pads4, mode), lambda pads4=pads4: to_display(
                gpuops.reflect_pad(image.planes, pads4) if mode == "reflect" else
                np.pad(image.planes, ((0, 0), (g.pad_top, g.pad_bottom), (g.pad_left, g.pad_right)))))  # fmt: skip
            figure(halo_figure(padded_pixels, (g.pad_top, g.pad_left), (r0, r1), (c0, c1), rf.rows, rf.cols,
                               f"The block's shared-memory tile: {r1 - r0} x {c1 - c0} input cells (tile + halo)"), "halo",
                   f"Cyan: the input tile the block copies to shared memory ({launch.arg('cb_max')} channel(s) at a "
                   f"time, {launch.shared_bytes:,} bytes). Orange: this thread's taps inside it.")  # fmt: skip

# ---- runtimes ---------------------------------------------------------------------------------------------
st.header("Runtime on this image")
if times:
    figure(runtime_bars(list(times), list(times.values()), f"conv2d on {W} x {H} x {C}, {kh} x {kw} kernel", backend_name()),
           "conv_runtimes", "Median of several runs after warm-up. On the CPU they all use NumPy and differ "
           "only in how the work is arranged (implicit_gemm runs the tap-by-tap loop there).")  # fmt: skip
    chosen = f"auto chose **{ran}**" if algo == gpuops.AUTO else f"**{ran}**"
    st.caption(f"The output above was computed by {chosen}: {times[ran]:.3f} ms on {backend_name()}.")

cuda_source(
    gpuops.plan_conv2d((1, C, H, W), weight.shape, None, stride, pad, dil, groups, mode, ran).launch,
    " then cuBLAS GEMM" if ran == "im2col" else "",
)
