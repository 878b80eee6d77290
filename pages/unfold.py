"""Unfold / Fold: every sliding patch becomes a column; fold adds the columns back, summing overlaps.

Click a patch (on the image, or a column of the unfold matrix) to see its taps and its column;
click a pixel to see every patch that covers it: the count fold adds up.
"""

import streamlit as st

import gpuops
from gpuops.maps import unfold_fold as maps
from gpuops.unfold_fold import fold_launch, unfold_launch
from ui import navigation, picking, state
from ui.common import backend_name, compare, cuda_source, figure, session_cached, shown_errors, style
from ui.images import to_display
from ui.records import Folded
from ui.state import Cell, Param
from ui.unfold_view import Unfolding, ask
from viz import unfold_fold as viz

navigation.through_app()  # a freshly started server may run this file alone (ui/navigation.py)

K = Param("unfold_k", 3, "Kernel K", "slider", lo=1, hi=9)
S = Param("unfold_stride", 2, "Stride S", "slider", lo=1, hi=6)
P = Param("unfold_pad", 1, "Padding P (zeros)", "slider", lo=0, hi=4)
D = Param("unfold_dil", 1, "Dilation D", "slider", lo=1, hi=4)
GROWS = "It grows by itself when one patch needs more room."
CROP = Param("unfold_crop", 12, "Region animated (pixels a side)", "slider", lo=4, hi=24, help=GROWS)
PICK = Param("unfold_pick", None, choices=("patch", "px"))  # in the URL as patch:oh,ow or px:y,x
PARAMS = [K, S, P, D, CROP, PICK]
state.use(PARAMS)

image = st.session_state["image"]
C, H, W = image.planes.shape
sty = style()
WINDOW = 16 if sty.presentation else 24  # matrix columns shown entry by entry

st.title("Unfold / Fold")
st.caption(
    "`F.unfold` copies every sliding K x K patch into a column; `F.fold` adds the columns back onto "
    "the image, summing where patches overlap. Click a patch or a matrix column, or a pixel."
)


def settings() -> tuple[int, int, int, int, list]:
    row = st.columns([1, 1, 1, 1, 1.05, 1.45], vertical_alignment="bottom")
    side = min(H, W)
    asked_k = state.get(K)
    k_max = maps.largest_kernel(side, state.get(P), state.get(D), K.hi)
    k = state.widget(K, container=row[0], hi=k_max)
    stride = state.widget(S, container=row[1])
    pad = state.widget(P, container=row[2])
    dil = state.widget(D, container=row[3], hi=maps.largest_dilation(side, k, pad, D.hi))
    if asked_k > k_max:  # a link (or a dilation move) asked for more than this image allows
        try:
            gpuops.window_geometry(H, W, asked_k, stride, pad, dil)
        except ValueError as why:
            st.info(
                f"K is at most {k_max} here: {why}. Lower the dilation D or "
                f"raise the padding P for a larger K.",
                icon=":material/straighten:",
            )
    return k, stride, pad, dil, row


def pick_inputs(cell: Cell, row: list) -> None:
    """The keyboard path, in the settings row, in sync with clicks: patch or pixel, and its numbers."""
    st.session_state["w_unfold_mode"] = cell.space
    row[4].radio(
        "Pick",
        ("patch", "px"),
        key="w_unfold_mode",
        horizontal=True,
        on_change=ask,
        args=("mode",),
        format_func=lambda s: "patch" if s == "patch" else "pixel",
        help="What a click on the image picks: the nearest patch, or one pixel.",
    )
    with row[5]:
        if cell.space == "patch":
            st.session_state["w_unfold_l"] = unfolding.column_of(cell)
            st.number_input(
                "Column l (patch)", 0, L - 1, step=1, key="w_unfold_l", on_change=ask, args=("column",)
            )
        else:
            st.session_state["w_unfold_y"], st.session_state["w_unfold_x"] = cell.row, cell.col
            a, b = st.columns(2)
            a.number_input("Pixel row", 0, H - 1, step=1, key="w_unfold_y", on_change=ask, args=("pixel",))
            b.number_input("Pixel col", 0, W - 1, step=1, key="w_unfold_x", on_change=ask, args=("pixel",))


def section_views(cell: Cell, result: Folded) -> None:
    """The image with the pick, and the patch view: the cells around the pick, tap by tap."""
    image_marks, zoom_marks, zoom, what = unfolding.views(cell, result.counts)
    left_col, right_col = st.columns(2)
    with left_col:
        figure(
            viz.image_view(to_display(image.planes), f"Your image, {W} x {H}", sty, image_marks),
            "image",
            "Orange: the picked patch's extent (or the patches covering the picked pixel); cyan, dashed: "
            "the cells shown on the right. Click to pick.",
            pickable=True,
        )
    with right_col:
        figure(
            viz.patch_view(zoom, f"Zoom: {what}", sty, zoom_marks),
            "zoom",
            f"Dots: where each patch starts (every {stride} cells). Orange: the picked patch's taps "
            f"(dotted: a tap on the zero padding, blue). Cyan: the patches covering the picked pixel. "
            f"Hover for values and overlap counts.",
            pickable=True,
        )


def section_matrix(cell: Cell, result: Folded) -> None:
    columns, marks = unfolding.matrix(cell)
    figure(
        viz.matrix_view(result.overview, columns, sty, marks),
        "matrix",
        f"Row (c, ki, kj) holds tap (ki, kj) of channel c; column l holds patch l, patches taken row by row "
        f"({g.W_out} per row). Each row is the image again, sampled every {stride} pixels: the matrix has "
        f"{g.expansion_ratio:.2f}x the entries of the image. Click a column to pick its patch.",
        pickable=True,
    )
    st.markdown(
        f"**{g.W_out} x {g.H_out} = {L:,} patches**, each of C·K·K = {C}·{k}·{k} = {ROWS} values: "
        f"unfold gives a **{ROWS:,} x {L:,}** matrix (PyTorch: `F.unfold(x, {k}, dilation={dil}, "
        f"padding={pad}, stride={stride})`)."
    )


def section_fold(cell: Cell, result: Folded) -> None:
    st.header("Fold puts the columns back")
    counts = result.counts
    y, x = unfolding.centre_of(cell)
    # the two images do not depend on the pick: built once per image and settings
    folded, restored = session_cached(
        ("unfold_fold_figures", image.key, k, stride, pad, dil, sty.name),
        lambda: (
            viz.pixel_image(
                to_display(result.folded / (float(result.folded.max()) or 1.0)),
                "fold(unfold(x)), scaled to its maximum",
                sty,
            ),
            viz.pixel_image(to_display(result.restored), "fold(unfold(x)) / count = x", sty),
        ),
    )
    a, b = st.columns(2)
    with a:
        figure(
            folded,
            "folded",
            "Overlapping patches add up: a pixel covered by k patches comes back k times "
            "as bright. Click a pixel to pick it.",
            pickable=True,
        )
    with b:
        figure(
            viz.count_map(counts, "Overlap count:<br>patches covering each pixel", sty, pixel=(y, x)),
            "count",
            f"From {int(counts.min())} to {int(counts.max())} patches; pixel ({y}, {x}) is covered by "
            f"{int(counts[y, x])}. Click a pixel to see its patches.",
            pickable=True,
        )
    c, d = st.columns(2)
    with c:
        figure(
            restored,
            "restored",
            f"Dividing by the count gives x back wherever a patch covers it; "
            f"{result.uncovered} pixel(s) lie in no patch (shown black).",
            pickable=True,
        )
    with d:
        st.metric("Max |restored - x| on covered pixels", f"{result.err:.2e}")
        st.markdown(unfolding.pixel_text(result, (y, x)))


def section_animation(cell: Cell) -> None:
    st.header("Patch extraction, step by step")
    crop = state.widget(CROP)
    block = maps.patch_block(g, *maps.patch_of_column(g, unfolding.column_of(cell)), crop, 12, tiled=True)
    key = (image.key, k, stride, pad, dil, block, sty.name)
    kept = st.session_state.get("_uf_animation")
    if kept is None or kept[0] != key:  # picks in the same block share the figure (frames are costly)
        kept = (key, unfolding.animation(block, sty))
        st.session_state["_uf_animation"] = kept
    fig, region = kept[1]
    note = unfolding.grown_note(region, crop)
    figure(
        fig,
        "animation",
        "Press ▶ Play or drag the slider: the orange squares are the cells patch l copies "
        f"into column l, in tap order (ki, kj); blue-grey cells are the zero padding.{note}",
        pickable=True,
    )


def section_compare() -> None:
    st.header("Fold: atomic scatter vs gather")
    st.caption(
        "Scatter: one thread per column entry adds it onto its pixel with atomicAdd (the "
        "order varies from run to run). Gather: one thread per pixel sums the entries that "
        "cover it (no atomics, deterministic)."
        + ("" if gpuops.backend_info().gpu else " On this CPU both run the same NumPy code.")
    )
    with shown_errors("Timing"):
        times = compare(
            ("unfold_times", image.key, k, stride, pad, dil, backend_name()),
            unfolding.timing_candidates(),
            "Compare unfold and both folds",
        )
        if times:
            ms, title = [t.median_ms for t in times.values()], f"unfold and fold on {W} x {H} x {C}"
            figure(viz.runtime_bars(list(times), ms, title, backend_name(), sty), "fold_runtimes")


def section_kernels(cell: Cell) -> None:
    """The kernels that run on a GPU, with captions from their Launch."""
    launches = (unfold_launch(g, 1, C), fold_launch(g, 1, C, "gather"), fold_launch(g, 1, C, "scatter"))
    st.subheader("The CUDA kernels")
    st.caption(unfolding.kernels_text(cell, launches))
    for launch, name in zip(launches, ("unfold", "gather", "scatter"), strict=True):
        cuda_source(launch, key=f"src_uf_{name}")


k, stride, pad, dil, settings_row = settings()
g = gpuops.window_geometry(H, W, k, stride, pad, dil)  # the slider ranges keep it valid
unfolding = Unfolding(image, g, WINDOW)
ROWS, L = unfolding.shape
result = within_budget = None
with shown_errors("Unfold / fold"):
    within_budget = unfolding.check_budget()
if within_budget is None:
    st.stop()
cell = picking.resolve(PICK, picking.Rules(unfolding.fit, unfolding.clicked, unfolding.hover), sty)
pick_inputs(cell, settings_row)
with shown_errors("Unfold / fold"):
    result = session_cached(("unfold", image.key, k, stride, pad, dil), unfolding.compute)
if result is not None:
    st.markdown(unfolding.summary(cell, result.counts))
    section_views(cell, result)
    section_matrix(cell, result)
    section_fold(cell, result)
    section_animation(cell)
section_compare()
section_kernels(cell)
