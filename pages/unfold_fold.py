"""Unfold / Fold: sliding patches as columns, and folding them back with overlaps summed."""

import numpy as np
import streamlit as st

import gpuops
from gpuops.maps import unfold_fold as unfold_maps
from gpuops.unfold_fold import fold_launch, unfold_launch
from ui import state
from ui.common import backend_name, cuda_source, figure, session_cached, shown_errors, time_call
from ui.images import to_display
from ui.state import Param, bound
from viz.animations import patch_animation
from viz.charts import runtime_bars
from viz.grids import count_map_figure
from viz.images import image_figure
from viz.matrices import matrix_figure
from viz.style import HIGHLIGHT
from viz.thumbnails import busiest_window

PARAMS = [
    Param("uf_k", 3, lo=1, hi=9),
    Param("uf_stride", 2, lo=1, hi=6),
    Param("uf_pad", 1, lo=0, hi=4),
    Param("uf_dil", 1, lo=1, hi=4),
    Param("uf_crop", 12, lo=4, hi=24),
]
state.use(PARAMS)
image = st.session_state["image"]
C, H, W = image.planes.shape

st.title("Unfold / Fold")
st.caption("F.unfold copies every sliding K x K patch into a column; F.fold adds columns back onto the image, "
           "summing where patches overlap.")  # fmt: skip
c1, c2, c3, c4 = st.columns(4)
with c1:
    k = bound(st.slider, "Kernel K", "uf_k", min_value=1, max_value=9)
with c2:
    stride = bound(st.slider, "Stride S", "uf_stride", min_value=1, max_value=6)
with c3:
    pad = bound(st.slider, "Padding P (zeros)", "uf_pad", min_value=0, max_value=4)
with c4:
    dil = bound(st.slider, "Dilation D", "uf_dil", min_value=1, max_value=4)

g = None
with shown_errors("Unfold"):
    g = gpuops.window_geometry(H, W, k, stride, pad, dil)
if g is None:
    st.stop()
st.markdown(
    f"**{g.H_out} x {g.W_out} = {g.L} patches**, each of C·K·K = {C}·{k}·{k} = {C * k * k} values: "
    f"unfold gives a **{C * k * k} x {g.L}** matrix (PyTorch: `F.unfold(x, {k}, dilation={dil}, padding={pad}, "
    f"stride={stride})`)."
)


def unfold_and_fold() -> tuple[np.ndarray, np.ndarray]:
    x = gpuops.asarray(image.planes)
    cols = gpuops.unfold(x, k, dil, pad, stride)
    back = gpuops.fold(cols, (H, W), k, dil, pad, stride)
    return gpuops.to_numpy(cols), gpuops.to_numpy(back)


with shown_errors("Unfold / fold"):
    cols, folded = session_cached(("unfold", image.key, k, stride, pad, dil), unfold_and_fold)
    counts = unfold_maps.overlap_count(g)

    # patch grid: the top-left tap of every patch, and the outline of the first patches
    a, b = st.columns(2)
    with a:
        fig = image_figure(to_display(image.planes), "Patch grid: where each patch starts")
        oh, ow = np.meshgrid(np.arange(g.H_out), np.arange(g.W_out), indexing="ij")
        step = max(1, int(np.ceil(np.sqrt(g.L / 400))))  # at most ~400 markers
        ys = (oh * stride - pad)[::step, ::step].ravel()
        xs = (ow * stride - pad)[::step, ::step].ravel()
        fig.add_scatter(x=xs, y=ys, mode="markers", marker=dict(color=HIGHLIGHT, size=4), name="patch start",
                        hovertemplate="patch starts at row %{y}, col %{x}<extra></extra>")  # fmt: skip
        ext = dil * (k - 1) + 1
        fig.add_shape(type="rect", x0=-pad - 0.5, y0=-pad - 0.5, x1=-pad + ext - 0.5, y1=-pad + ext - 0.5,
                      line=dict(color="red", width=3))  # fmt: skip
        fig.update_layout(showlegend=False)
        figure(fig, "patch_grid", f"Orange dots: the first cell of each patch ({'every ' + str(step) + 'th shown' if step > 1 else 'all shown'}); "
               f"red box: patch 0 spans {ext} x {ext} cells (dilation {dil}). Starts left of / above 0 are in the padding.")  # fmt: skip
    with b:
        figure(matrix_figure(cols, "The unfold matrix", "column l = patch (row-major)", "row = (channel, ki, kj)"),
               "unfold_matrix", "Column l holds patch l, channel by channel; rows repeat the image K·K times.")  # fmt: skip

    st.header("Fold puts the columns back")
    f1, f2, f3 = st.columns(3)
    with f1:
        top = float(folded.max()) or 1.0
        figure(image_figure(to_display(folded / top), "fold(unfold(x)), scaled"), "folded",
               "Overlapping patches add up: pixels covered by many patches get brighter.")  # fmt: skip
    with f2:
        figure(count_map_figure(counts, "Overlap count: patches covering each pixel"), "overlap_count", f"From 0 (no patch reads the pixel) to {counts.max()}. With stride < K·D patches overlap.")  # fmt: skip
    with f3:
        covered = counts > 0
        restored = np.where(covered[None], folded / np.maximum(counts, 1)[None], 0)
        err = float(np.abs(restored - image.planes)[:, covered].max()) if covered.any() else 0.0
        figure(image_figure(to_display(restored), "fold(unfold(x)) / count"), "restored",
               f"Dividing by the count gives x back wherever a patch covers it: max error {err:.2e}; "
               f"{int((~covered).sum())} pixel(s) are in no patch (shown black).")  # fmt: skip
        st.metric("Max |restored - x| on covered pixels", f"{err:.2e}")

    st.header("Patch extraction, step by step")
    crop = bound(st.slider, "Region shown (pixels per side, channel 0)", "uf_crop", min_value=4, max_value=24)
    ch, cw = min(crop, H), min(crop, W)
    r0, c0 = busiest_window(image.planes[0], crop)
    region = image.planes[0, r0 : r0 + ch, c0 : c0 + cw]
    gr = gpuops.window_geometry(ch, cw, k, stride, pad, dil)
    padded = np.pad(region, pad)
    taps, tapc = unfold_maps.all_patch_cells(gr)
    figure(patch_animation(padded, taps, tapc, (pad, pad), f"Patch l of a {ch} x {cw} region (image rows {r0}-{r0 + ch - 1}, cols {c0}-{c0 + cw - 1})"),
           "patch_animation", "Press ▶ Play: the orange squares are the cells copied into column l; padding cells "
           "(negative rows/columns) contribute zeros.")  # fmt: skip

st.header("Fold: atomic scatter vs gather")


def fold_times() -> dict[str, float]:
    x = gpuops.asarray(image.planes[None])
    c = gpuops.unfold(x, k, dil, pad, stride)
    out = {}
    for variant in ("scatter", "gather"):
        out[f"fold ({variant})"] = time_call(
            lambda v=variant: gpuops.fold(c, (H, W), k, dil, pad, stride, variant=v)
        ).median_ms
    out["unfold"] = time_call(lambda: gpuops.unfold(x, k, dil, pad, stride)).median_ms
    return out


with shown_errors("Timing"):
    times = session_cached(("fold_times", image.key, k, stride, pad, dil), fold_times)
    figure(runtime_bars(list(times), list(times.values()), f"unfold and fold on {W} x {H} x {C}", backend_name()),
           "fold_runtimes", "Scatter: one thread per column entry, atomicAdd onto the pixel (order varies run to run). "
           "Gather: one thread per pixel sums the entries that cover it (no atomics, deterministic)."
           + ("" if gpuops.backend_info().gpu else " On the CPU both run the same NumPy code."))  # fmt: skip
cuda_source(unfold_launch(g, 1, C))
cuda_source(fold_launch(g, 1, C, "gather"))
cuda_source(fold_launch(g, 1, C, "scatter"))
