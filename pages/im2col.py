"""im2col + GEMM: unroll every receptive field into a column, then one matrix multiply."""

import numpy as np
import pandas as pd
import streamlit as st

import gpuops
from gpuops.maps import im2col as im2col_maps
from ui import state
from ui.common import backend_name, cuda_source, figure, session_cached, shown_errors, time_call
from ui.state import Param, bound
from viz.animations import column_animation
from viz.charts import expansion_figure, runtime_bars
from viz.matrices import matrix_figure

# PMPP ch. 16's worked example: 3 input maps of 3 x 3, 2 filters of 3 x 2 x 2.
BOOK_X = [
    [[1, 2, 0], [1, 1, 3], [0, 2, 2]],
    [[0, 2, 1], [0, 3, 2], [1, 1, 0]],
    [[1, 2, 1], [0, 1, 3], [3, 3, 2]],
]
BOOK_W = [
    [[[1, 1], [2, 2]], [[1, 1], [1, 1]], [[0, 1], [1, 0]]],
    [[[1, 0], [0, 1]], [[2, 1], [2, 1]], [[1, 2], [2, 0]]],
]

PARAMS = [
    Param("im_c", 3, lo=1, hi=3),
    Param("im_n", 3, lo=2, hi=6),
    Param("im_k", 2, lo=1, hi=4),
    Param("im_m", 2, lo=1, hi=3),
    Param("im_stride", 1, lo=1, hi=3),
    Param("im_pad", 0, lo=0, hi=2),
    Param("im_img_k", 3, lo=1, hi=7),
]
state.use(PARAMS)
image = st.session_state["image"]

st.title("im2col + GEMM")
st.caption("Copy each receptive field into one column of X_unroll; then filters x X_unroll is a single matrix "
           "multiply, the operation GPUs (cuBLAS) run fastest.")  # fmt: skip

st.header("A small example you can edit")
cols = st.columns(6)
names = [("im_c", "Channels C", 1, 3), ("im_n", "Input size H = W", 2, 6), ("im_k", "Kernel K", 1, 4),
         ("im_m", "Filters M", 1, 3), ("im_stride", "Stride S", 1, 3), ("im_pad", "Padding P", 0, 2)]  # fmt: skip
values = {}
for col, (key, label, lo, hi) in zip(cols, names, strict=True):
    with col:
        values[key] = bound(st.number_input, label, key, min_value=lo, max_value=hi, step=1)
C, n, K, M, S, P = (values[f"im_{k}"] for k in ("c", "n", "k", "m", "stride", "pad"))
is_book = (C, n, K, M) == (3, 3, 2, 2)
if st.button("Reset to PMPP's example (C=3, 3 x 3 maps, M=2 filters of 2 x 2)"):
    for key, v in (("c", 3), ("n", 3), ("k", 2), ("m", 2), ("stride", 1), ("pad", 0)):
        st.session_state[f"im_{key}"] = v
    st.session_state.pop("im2col_cells", None)
    st.rerun()

shape_key = (C, n, K, M)
cells = st.session_state.get("im2col_cells")
if cells is None or cells[0] != shape_key:
    rng = np.random.default_rng(sum(shape_key))
    x0 = np.array(BOOK_X, np.float32) if is_book else rng.integers(0, 4, (C, n, n)).astype(np.float32)
    w0 = np.array(BOOK_W, np.float32) if is_book else rng.integers(0, 3, (M, C, K, K)).astype(np.float32)
    cells = (shape_key, x0, w0)
    st.session_state["im2col_cells"] = cells
_, x_small, w_small = cells

st.markdown("**Input maps** (edit any cell)")
edit_cols = st.columns(C)
x_edit = x_small.copy()
for c in range(C):
    with edit_cols[c]:
        st.caption(f"channel {c}")
        df = st.data_editor(pd.DataFrame(x_small[c]), key=f"x_edit_{shape_key}_{c}",
                            column_config={str(j): st.column_config.NumberColumn(format="%g") for j in range(n)})  # fmt: skip
        x_edit[c] = np.nan_to_num(df.to_numpy(dtype=np.float64, na_value=0.0)).astype(np.float32)
st.markdown(
    "**Filter matrix W** (M x C·K·K): each row is one filter, flattened channel by channel, row by row"
)
labels = [f"c{c} ({i},{j})" for c, i, j in im2col_maps.row_labels(C, gpuops.window_geometry(K, K, K))]
w_df = st.data_editor(pd.DataFrame(w_small.reshape(M, -1), columns=labels, index=[f"filter {m}" for m in range(M)]),
                      key=f"w_edit_{shape_key}")  # fmt: skip
w_edit = np.nan_to_num(w_df.to_numpy(dtype=np.float64, na_value=0.0)).astype(np.float32).reshape(M, C, K, K)

with shown_errors("The example"):
    g = gpuops.window_geometry(n, n, K, S, P)
    x_unroll = gpuops.to_numpy(gpuops.unfold(gpuops.asarray(x_edit), K, 1, P, S))  # (CKK, L)
    y = gpuops.to_numpy(gpuops.conv2d(gpuops.asarray(x_edit), gpuops.asarray(w_edit), stride=S, padding=P,
                                      algorithm="im2col"))  # (M, H_out, W_out)  # fmt: skip
    y_mat = y.reshape(M, -1)
    src = im2col_maps.unfold_source_map(C, g).T  # (L, CKK) flat input index
    tap_channel = np.where(src >= 0, src // (n * n), -1)
    tap_rows = np.where(src >= 0, (src % (n * n)) // n, -1)
    tap_cols = np.where(src >= 0, src % n, -1)
    positions = np.array([im2col_maps.position_of(g, l) for l in range(g.L)])
    st.markdown(
        f"X_unroll has **C·K·K = {C}·{K}·{K} = {C * K * K} rows** (one per filter weight) and "
        f"**H_out·W_out = {g.H_out}·{g.W_out} = {g.L} columns** (one per output pixel). "
        f"The GEMM: W ({M} x {C * K * K}) x X_unroll ({C * K * K} x {g.L}) = Y ({M} x {g.L})."
    )
    figure(column_animation([x_edit[c] for c in range(C)], [f"input channel {c}" for c in range(C)], tap_rows, tap_cols,
                            tap_channel, [("X_unroll (C·K·K x L)", x_unroll), ("Y = W x X_unroll (M x L)", y_mat)],
                            positions, "Column by column: which input cells fill column l, and the output it gives"),
           "im2col_animation", "Press ▶ Play or drag the slider: orange squares mark the input cells copied into "
           "column l of X_unroll; the row-times-column product gives column l of Y (output pixel shown in the title).")  # fmt: skip
    a, b = st.columns(2)
    with a:
        figure(matrix_figure(w_edit.reshape(M, -1), "Filter matrix W", "column = (channel, ki, kj)", "filter m",
                             height=300), "filter_matrix", "Each filter flattened into one row.")  # fmt: skip
    with b:
        figure(matrix_figure(y_mat, "Output Y", "column l = output pixel (row-major)", "filter m", height=300),
               "output_matrix", "Row m reshaped to H_out x W_out is output map m.")  # fmt: skip
    if is_book and (S, P) == (1, 0):
        st.success(
            "This is PMPP's example: the book's outputs are [[14, 20], [15, 24]] and [[12, 24], [17, 26]]."
        )

# ---- expansion ratio on the real image ------------------------------------------------------------------
st.header("How big X_unroll gets for your image")
Ci, H, W = image.planes.shape
k_img = bound(st.slider, "Kernel K for the image", "im_img_k", min_value=1, max_value=7)
with shown_errors("The expansion ratio"):
    gi = gpuops.window_geometry(H, W, k_img, 1, k_img // 2)
    in_bytes, unroll_bytes = 4 * Ci * H * W, 4 * Ci * k_img * k_img * gi.L
    st.latex(
        rf"\text{{ratio}} = \frac{{C K^2 H_{{out}} W_{{out}}}}{{C H W}} = "
        rf"\frac{{{Ci}\cdot{k_img}^2\cdot{gi.H_out}\cdot{gi.W_out}}}{{{Ci}\cdot{H}\cdot{W}}} = {gi.expansion_ratio:.3f}"
    )
    m1, m2, m3 = st.columns(3)
    m1.metric("Input (float32)", f"{in_bytes / 2**20:.2f} MiB")
    m2.metric("X_unroll (float32)", f"{unroll_bytes / 2**20:.2f} MiB")
    m3.metric("Expansion ratio", f"{gi.expansion_ratio:.3f}", help=f"Approaches K x K = {k_img * k_img}")
    sizes = [8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
    ratios = [gpuops.window_geometry(s, s, k_img, 1, 0).expansion_ratio for s in sizes if s >= k_img]
    figure(expansion_figure([s for s in sizes if s >= k_img], ratios, k_img, (max(H, W), gi.expansion_ratio)),
           "expansion", "Without padding, H_out = H - K + 1, so the ratio K²(H-K+1)²/H² climbs toward K² as H grows.")  # fmt: skip

    st.subheader("Runtime split on this image (16 filters)")
    filters16 = np.random.default_rng(0).standard_normal((16, Ci, k_img, k_img)).astype(np.float32)

    def split() -> dict[str, float]:
        x = gpuops.asarray(image.planes)
        w = gpuops.asarray(filters16)
        cols_img = gpuops.unfold(x, k_img, 1, k_img // 2, 1)
        w_mat = w.reshape(16, -1)
        return {
            "unroll kernel (unfold)": time_call(lambda: gpuops.unfold(x, k_img, 1, k_img // 2, 1)).median_ms,
            "GEMM (cuBLAS / NumPy matmul)": time_call(lambda: gpuops.gemm(w_mat, cols_img)).median_ms,
            "im2col total": time_call(
                lambda: gpuops.conv2d(x, w, padding=k_img // 2, algorithm="im2col")
            ).median_ms,
            "direct conv": time_call(
                lambda: gpuops.conv2d(x, w, padding=k_img // 2, algorithm="direct")
            ).median_ms,
        }

    times = session_cached(("split", image.key, k_img), split)
    figure(runtime_bars(list(times), list(times.values()), f"im2col steps vs direct, {W} x {H} x {Ci}, K = {k_img}",
                        backend_name()), "im2col_split",
           "The unroll moves K² times the input through memory; the GEMM does the arithmetic.")  # fmt: skip

cuda_source(
    gpuops.plan_conv2d((1, Ci, H, W), (16, Ci, k_img, k_img), None, 1, k_img // 2, algorithm="im2col").launch,
    ": builds X_unroll; cuBLAS does the GEMM",
)
