"""Home: what Conv Explorer teaches and where to start."""

import numpy as np
import streamlit as st

import gpuops
from gpuops import filters
from ui.images import to_display
from viz.thumbnails import matrix_thumbnail

st.title("Conv Explorer")
st.markdown(
    "See **how a convolution layer runs on a GPU**: which thread computes which output pixel, "
    "how an image is unrolled into a matrix so a GEMM can do the work, and what padding really copies. "
    "Every picture comes from the same index formulas as the CUDA kernels, and every runtime is measured."
)
info = gpuops.backend_info()
if info.gpu:
    st.success(f"Running on the GPU: **{info.device}** (CuPy {info.cupy_version}). Timings are GPU timings.")
else:
    st.warning(f"Running on the CPU with NumPy: **timings are CPU timings**. Why: {info.reason}.")

image = st.session_state["image"]


@st.cache_data(max_entries=4, show_spinner=False)
def thumbnails(key: str, planes: np.ndarray) -> list[np.ndarray]:
    """Each operation applied to a small copy of the image (the copy is at most 96 px)."""
    step = max(1, max(planes.shape[1:]) // 96)
    small = np.ascontiguousarray(planes[:, ::step, ::step])
    c = small.shape[0]
    edges, groups = filters.channel_weights(filters.preset_kernel("Laplacian edge", 3), c, mix=False)
    conv = np.abs(gpuops.conv2d(small, edges, padding=1, groups=groups)) * 4
    cols = gpuops.unfold(small[:, :12, :12], 3, padding=1)
    pad = min(small.shape[1:]) // 3
    return [to_display(conv), matrix_thumbnail(cols), to_display(gpuops.fold(gpuops.unfold(small, 5, stride=2),
            small.shape[1:], 5, stride=2) / 9), to_display(gpuops.reflect_pad(small, pad))]  # fmt: skip


thumbs = thumbnails(image.key, image.planes)

st.subheader("The four operations")
cards = [
    ("Direct convolution", "conv2d", "Each output pixel is a weighted sum of the input cells under the kernel; "
     "one GPU thread computes one output pixel, and a tiled kernel shares input tiles through shared memory."),
    ("im2col + GEMM", "im2col", "Copy every receptive field into a column of a big matrix X_unroll, then one "
     "matrix multiply (cuBLAS) computes all outputs at once, at the price of K x K times more memory."),
    ("Unfold / Fold", "unfold_fold", "unfold extracts sliding patches as columns (PyTorch's F.unfold); fold puts "
     "columns back and sums where patches overlap."),
    ("Reflect padding", "reflect_pad", "Grow the image by mirroring it at its edges (without repeating the edge "
     "pixel), so a convolution sees no artificial black border."),
]  # fmt: skip
cols = st.columns(4)
for col, (title, page_file, text), thumb in zip(cols, cards, thumbs, strict=True):
    with col:
        st.markdown(f"**{title}**")
        st.image(thumb, width="stretch")
        st.caption(text)
        st.page_link(f"pages/{page_file}.py", label=f"Open {title}", icon=":material/arrow_forward:")

st.subheader("Start here")
st.markdown(
    "1. Pick a sample image or upload your own in the sidebar.\n"
    "2. **Direct convolution**: choose *box blur*, then move *stride* and *padding* and watch the output shape "
    "formula change. Pick an output pixel and see its receptive field and the thread that computed it.\n"
    "3. **im2col + GEMM**: step through PMPP's small example column by column, then look at how big X_unroll "
    "gets for your image.\n"
    "4. **Unfold / Fold** and **Reflect padding**: see where every cell comes from.\n"
    "5. **Benchmarks**: measure all of it on this machine.\n\n"
    "Settings are kept in the address bar: copy the link to share exactly what you see."
)
