"""Home: what Conv Explorer teaches, what it runs on, and where to start."""

import streamlit as st

import gpuops
from ui import home_view, navigation
from ui.common import style

navigation.through_app()  # a freshly started server may run this file alone (ui/navigation.py)

CARDS = [  # title, page file, one sentence, what the thumbnail shows
    (
        "Direct convolution",
        "direct",
        "Each output pixel is a weighted sum of the input cells under the kernel; "
        "see which GPU thread computes which pixel.",
        "edges of your image (3 x 3 Laplacian)",
    ),
    (
        "im2col + GEMM",
        "im2col",
        "Copy every receptive field into a column of X_unroll, then one matrix multiply "
        "computes all outputs, at K x K times the memory.",
        "X_unroll of a 4 x 4 grid (3 x 3 kernel): one colour per input cell",
    ),
    (
        "Unfold / Fold",
        "unfold",
        "unfold cuts sliding patches into columns (F.unfold); fold puts them back and "
        "sums where they overlap.",
        "fold(unfold(x)): overlaps summed, brighter",
    ),
    (
        "Reflect padding",
        "reflect",
        "Grow the image by mirroring it at its edges, without repeating the edge "
        "pixel: no black frame for the convolution.",
        "your image reflect-padded (cyan: the original)",
    ),
    (
        "Backward & transposed",
        "backward",
        "Where a layer's gradients go: each input gathers them through the flipped kernel, and "
        "the transposed convolution is the same computation.",
        "your image upsampled 2x by a transposed convolution",
    ),
    (
        "Channels & groups",
        "channels",
        "A filter is C_in x K x K and sums every input channel into one map; groups and "
        "depthwise split the channels.",
        "filters x input channels of a 2-group layer: one colour per group",
    ),
    (
        "Pooling",
        "pool",
        "Max and average pooling: each output's window, the max's winner, and where the gradient goes back.",
        "your image max-pooled (4 x 4 windows)",
    ),
    (
        "LeNet-5",
        "lenet",
        "The network around the layer: train it here with these kernels, draw a digit, and "
        "click a feature map to see what it reads.",
        "your image as LeNet's 8 x 8 input",
    ),
    (
        "Benchmarks",
        "benchmarks",
        "Every kernel timed on the GPU next to PyTorch, cuDNN and cuBLAS, and a run on this machine.",
        "conv2d speed of our kernels relative to cuDNN, log scale (line: as fast)",
    ),
]


def badge() -> None:
    """What the timings on every page are measured on."""
    info = gpuops.backend_info()
    if info.gpu:
        st.success(
            f"Running on the GPU: **{info.device}** (CuPy {info.cupy_version}). Timings are GPU timings.",
            icon=":material/memory:",
        )
    else:
        st.warning(
            f"Running on the CPU with NumPy: **timings are CPU timings**. Why: {info.reason}.",
            icon=":material/computer:",
        )


def section_cards(image) -> None:
    st.subheader("The pages")
    thumbs = home_view.thumbnails(image.key, image.planes)
    per_row = 2 if style().presentation else 3  # a projector: fewer, larger cards
    rows = -(-len(CARDS) // per_row)
    cols = [c for _ in range(rows) for c in st.columns(per_row)]
    for col, (title, page_file, text, shows) in zip(cols, CARDS, strict=False):
        with col.container(border=True):
            link = navigation.query_for(page_file)  # the settings travel along: one history entry
            st.page_link(
                f"pages/{page_file}.py",
                label=f"**{title}**",
                icon=":material/arrow_forward:",
                query_params=link,
            )
            st.image(thumbs[page_file], width=320 if style().presentation else 240)
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
        "then the backward pass, **Channels & groups** and **Pooling**; **LeNet-5** puts them together "
        "in a network you train; **Benchmarks** times all of it on this machine.\n"
        "5. Teaching? Turn on **Presentation mode** in the sidebar: large text and thick outlines for a "
        "projector.\n\n"
        "Every setting and every picked cell is kept in the address bar: copy the link to share exactly what "
        "you see (a link to an uploaded image needs the upload again)."
    )


st.title("Conv Explorer")
st.markdown(
    "See **how a convolution layer runs on a GPU**: which thread computes which output pixel, how an image "
    "is unrolled into a matrix so a GEMM can do the work, and what padding really copies. Every picture "
    "comes from the same index formulas as the CUDA kernels, and every runtime is measured."
)
badge()
section_cards(st.session_state["image"])
section_start()
if style().presentation:  # the projector view: card text and steps at the figures' text size
    st.html(
        f"<style>[data-testid='stMain'] [data-testid='stMarkdownContainer'] :is(p, li)"
        f"{{font-size:{style().font}px}}</style>"
    )
