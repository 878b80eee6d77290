"""Home: what Conv Explorer teaches, what it runs on, and where to start."""

import numpy as np
import streamlit as st

import gpuops
from bench import reports
from gpuops import filters
from ui import navigation
from ui.common import style
from ui.images import to_display
from viz import home

navigation.through_app()  # a freshly started server may run this file alone (ui/navigation.py)

CARDS = [  # title, page file, one sentence, what the thumbnail shows
    ("Direct convolution", "direct", "Each output pixel is a weighted sum of the input cells under the kernel; "
     "see which GPU thread computes which pixel.", "edges of your image (3 x 3 Laplacian)"),
    ("im2col + GEMM", "im2col", "Copy every receptive field into a column of X_unroll, then one matrix multiply "
     "computes all outputs, at K x K times the memory.", "X_unroll of a 4 x 4 grid (3 x 3 kernel): one colour per input cell"),
    ("Unfold / Fold", "unfold", "unfold cuts sliding patches into columns (F.unfold); fold puts them back and "
     "sums where they overlap.", "fold(unfold(x)): overlaps summed, brighter"),
    ("Reflect padding", "reflect", "Grow the image by mirroring it at its edges, without repeating the edge "
     "pixel: no black frame for the convolution.", "your image reflect-padded (cyan: the original)"),
    ("Backward & transposed", "backward", "The gradients flow back through the same taps: dE/dX gathers through "
     "the flipped kernel, and the transposed convolution stamps it.", "your image through a stride-2 "
     "transposed convolution: twice the size"),
    ("Benchmarks", "benchmarks", "Every kernel timed next to PyTorch, cuDNN and cuBLAS on the same GPU, and "
     "the same suite run on this server.", "conv2d speed of our kernels relative to cuDNN, log scale "
     "(line: as fast)"),
]  # fmt: skip


def badge() -> None:
    """What the timings on every page are measured on."""
    info = gpuops.backend_info()
    if info.gpu:
        st.success(f"Running on the GPU: **{info.device}** (CuPy {info.cupy_version}). Timings are GPU timings.",
                   icon=":material/memory:")  # fmt: skip
    else:
        st.warning(f"Running on the CPU with NumPy: **timings are CPU timings**. Why: {info.reason}.",
                   icon=":material/computer:")  # fmt: skip


@st.cache_data(max_entries=8, show_spinner=False)
def thumbnails(key: str, _planes: np.ndarray) -> list[np.ndarray]:
    """Each operation run on a small copy of the image (at most 96 px a side): quick, and cached
    per image (key), so the Home page costs nothing after its first visit."""
    small = home.small_copy(_planes)
    c = small.shape[0]
    edges, groups = filters.channel_weights(filters.preset_kernel("Laplacian edge", 3), c, mix=False)
    conv = np.abs(gpuops.conv2d(small, edges, padding=1, groups=groups)) * 4
    cell_ids = (
        gpuops.unfold(np.arange(1, 17, dtype=np.float32).reshape(1, 4, 4), 3, padding=1) - 1
    )  # padding: -1
    k, stride = home.fold_window(small.shape)
    covered = home.covered_crop(small, k, stride)
    folded = gpuops.fold(gpuops.unfold(covered, k, stride=stride), covered.shape[1:], k, stride=stride) / 2
    pad = min(small.shape[1:]) // 3
    tent = np.outer([0.5, 1.0, 0.5], [0.5, 1.0, 0.5]).astype(np.float32)  # each pixel stamps it, 2 apart
    stamps = np.repeat(tent[None, None], c, axis=0)
    upsampled = gpuops.conv_transpose2d(small[None], stamps, stride=2, padding=1, output_padding=1, groups=c)[
        0
    ]
    return [
        home.rgb_thumbnail(to_display(conv)),
        home.identity_thumbnail(cell_ids.astype(np.int64)),
        home.rgb_thumbnail(to_display(folded)),
        home.padded_thumbnail(to_display(gpuops.reflect_pad(small, pad)), pad),
        home.rgb_thumbnail(to_display(upsampled)),
        home.bars_thumbnail(conv2d_speeds()),
    ]


@st.cache_data(max_entries=1, show_spinner=False)
def conv2d_speeds() -> np.ndarray:
    """Our conv2d kernels' speed relative to cuDNN on the first shape of the newest committed GPU
    run (peer time / our time), for the Benchmarks card; empty without such a run."""
    lease = reports.default_lease(reports.group_leases(reports.load_runs()))
    if lease is None or not lease.first.gpu:
        return np.zeros(0)
    rows = [r for r in reports.compare([lease.first], "conv2d") if reports.is_ours(r.impl)]
    shape = rows[0].shape if rows else None
    peer = next((p for p in reports.peers([lease.first], "conv2d") if "cudnn" in p), None)
    speeds = [r.vs.get(peer, (None,))[0] for r in rows if r.shape == shape]
    return np.array([v for v in speeds if v is not None])


def section_cards(image) -> None:
    st.subheader("The pages")
    thumbs = thumbnails(image.key, image.planes)
    per_row = 2 if style().presentation else 3  # a projector: fewer, larger cards
    cols = [c for _ in range(-(-len(CARDS) // per_row)) for c in st.columns(per_row)]
    for col, (title, page_file, text, shows), thumb in zip(cols, CARDS, thumbs, strict=True):
        with col.container(border=True):
            link = navigation.query_for(page_file)  # the settings travel along: one history entry
            st.page_link(
                f"pages/{page_file}.py",
                label=f"**{title}**",
                icon=":material/arrow_forward:",
                query_params=link,
            )
            st.image(thumb, width=320 if style().presentation else "stretch")
            st.markdown(f"*Above: {shows}.* {text}")


def section_start() -> None:
    st.subheader("Start here")
    st.markdown(
        "1. Pick a sample image or upload your own in the sidebar.\n"
        "2. **Click a cell** in any figure: an output pixel, a column of X_unroll, a padded cell. The page "
        "outlines where it comes from (its receptive field, its patch, its source) and fills in the formula "
        "with its numbers. Click an input cell for the way back: every output, column or copy that reads it. "
        "On small grids, hovering a cell shows the same without a click.\n"
        "3. **Direct convolution**: choose *box blur*, move *stride* and *padding*, watch the output size "
        "formula change, and see which block and thread computed the pixel you picked.\n"
        "4. **im2col + GEMM**, **Unfold / Fold**, **Reflect padding**: follow a cell through each copy; "
        "then the backward pass, and **Benchmarks** to time all of it on this machine.\n"
        "5. Teaching? Turn on **Presentation mode** in the sidebar: large text and thick outlines for a "
        "projector.\n\n"
        "Every setting and every picked cell is kept in the address bar: copy the link to share exactly what "
        "you see (a link to an uploaded image needs the upload again)."
    )


st.title("Conv Explorer")
st.markdown(
    "See **how a convolution layer runs on a GPU**: which thread computes which output pixel, how an image "
    "is unrolled into a matrix so a GEMM can do the work, and what padding really copies. Every picture comes "
    "from the same index formulas as the CUDA kernels, and every runtime is measured."
)
badge()
section_cards(st.session_state["image"])
section_start()
if style().presentation:  # the projector view: card text and steps at the figures' text size
    st.html(f"<style>[data-testid='stMain'] [data-testid='stMarkdownContainer'] :is(p, li)"
            f"{{font-size:{style().font}px}}</style>")  # fmt: skip
