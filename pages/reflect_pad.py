"""Reflect padding: which input cell each padded cell copies, and why it beats zeros at the edges."""

import numpy as np
import streamlit as st

import gpuops
from gpuops import filters
from gpuops.index_math import reflect_index
from gpuops.maps import reflect_pad as reflect_maps
from gpuops.reflect_pad import reflect_pad_launch
from ui import state
from ui.common import backend_name, cuda_source, figure, session_cached, shown_errors, time_call
from ui.images import to_display
from ui.state import Param, bound, clamp_state
from viz.grids import labelled_source_grid
from viz.images import image_figure, padded_figure

PARAMS = [
    Param("rp_h", 4, lo=1, hi=8),
    Param("rp_w", 5, lo=1, hi=8),
    Param("rp_left", 2, lo=0, hi=7),
    Param("rp_right", 2, lo=0, hi=7),
    Param("rp_top", 2, lo=0, hi=7),
    Param("rp_bottom", 1, lo=0, hi=7),
    Param("rp_img_pad", 24, lo=0, hi=256),
    Param("rp_blur", 9, lo=3, hi=15),
]
state.use(PARAMS)
image = st.session_state["image"]
C, H, W = image.planes.shape

st.title("Reflect padding")
st.caption("PyTorch's ReflectionPad2d mirrors the image at each edge without repeating the edge cell: "
           "for input 0 1 2 3, padding 2 on the left gives 2 1 | 0 1 2 3.")  # fmt: skip

st.header("A small grid: every padded cell names its source")
s1, s2 = st.columns(2)
with s1:
    h = bound(st.slider, "Grid height", "rp_h", min_value=1, max_value=8)
with s2:
    w = bound(st.slider, "Grid width", "rp_w", min_value=1, max_value=8)
cols = st.columns(4)
pads = []
for col, (key, label, side) in zip(cols, [("rp_left", "Left", w), ("rp_right", "Right", w), ("rp_top", "Top", h),
                                          ("rp_bottom", "Bottom", h)], strict=True):  # fmt: skip
    with col:
        clamp_state(key, 0, max(0, side - 1))
        pads.append(bound(st.slider, f"{label} pad (< {'width' if key in ('rp_left', 'rp_right') else 'height'} {side})",
                          key, min_value=0, max_value=max(side - 1, 1), disabled=side == 1))  # fmt: skip
pads = tuple(int(p) for p in pads)
with shown_errors("Reflect padding"):
    rows, colsrc = reflect_maps.source_map(h, w, pads)
    figure(labelled_source_grid(rows, colsrc, h, w, pads, f"Padded {h} x {w} grid: (row, col) of the input cell copied"),
           "reflect_grid", "Cells with the same colour copy the same input cell; the black box is the original grid.")  # fmt: skip
    left, right, top, bottom = pads
    o = st.number_input("Padded column o (0 = leftmost padded cell)", min_value=0, max_value=w + left + right - 1,
                        value=0, step=1)  # fmt: skip
    i = o - left
    src = int(reflect_index(i, w))
    st.latex(rf"x_{{in}} = |i| - |i - (W-1)| - i + (W-1), \qquad i = o - p_{{left}} = {o} - {left} = {i}")
    st.latex(rf"x_{{in}} = |{i}| - |{i} - {w - 1}| - ({i}) + {w - 1} = {src}")
    st.caption("The same abs() formula as PyTorch's CUDA kernel (gpuops/kernels/index_math.cuh): inside the image it "
               "returns i, left of it -i, right of it 2(W-1) - i. Rows work the same way with the top pad.")  # fmt: skip

st.header("Your image, padded")
p_img = bound(st.slider, "Pad on every side (pixels)", "rp_img_pad", min_value=0, max_value=256)
with shown_errors("Reflect padding of the image"):
    padded = session_cached(("reflect", image.key, p_img),
                            lambda: gpuops.to_numpy(gpuops.reflect_pad(gpuops.asarray(image.planes), p_img)))  # fmt: skip
    figure(padded_figure(to_display(padded), (p_img,) * 4, f"Reflect-padded by {p_img}: {W + 2 * p_img} x {H + 2 * p_img}"),
           "reflect_image", "Everything outside the cyan box is a mirror image of what is inside it.")  # fmt: skip
    x_dev = gpuops.asarray(image.planes)
    t = session_cached(
        ("reflect_time", image.key, p_img), lambda: time_call(lambda: gpuops.reflect_pad(x_dev, p_img))
    )
    moved = 4 * (image.planes.size + padded.size)
    m1, m2 = st.columns(2)
    m1.metric(f"Runtime ({backend_name()})", f"{t.median_ms:.3f} ms")
    m2.metric("Bandwidth (bytes read + written)", f"{moved / t.median_ms / 1e6:.1f} GB/s")

st.header("Zeros vs reflect: the same blur")
kb = bound(
    st.slider, "Box blur size K (padding K // 2 keeps the size)", "rp_blur", min_value=3, max_value=15, step=2
)
with shown_errors("The blur"):
    weight, groups = filters.channel_weights(filters.preset_kernel("box blur", kb), C, mix=False)

    def blur(mode: str) -> np.ndarray:
        y = gpuops.conv2d(gpuops.asarray(image.planes), gpuops.asarray(weight), padding=kb // 2, groups=groups,
                          padding_mode=mode)  # fmt: skip
        return gpuops.to_numpy(y)

    z1, z2 = st.columns(2)
    for column, mode in ((z1, "zeros"), (z2, "reflect")):
        with column:
            out = session_cached(("blur", image.key, kb, mode), lambda m=mode: blur(m))
            figure(image_figure(to_display(out), f"{kb} x {kb} box blur, padding_mode = '{mode}'"), f"blur_{mode}",
                   "A dark frame appears: the kernel averages in zeros at the border." if mode == "zeros" else
                   "No dark frame: the border averages mirrored pixels, which look like the image.")  # fmt: skip
cuda_source(reflect_pad_launch(C, H, W, (p_img,) * 4) if p_img < min(H, W) else None)
