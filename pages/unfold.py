"""Unfold / Fold: every sliding patch becomes a column; fold adds the columns back, summing overlaps.

Click a patch (on the image, or a column of the unfold matrix) to see its taps and its column;
click a pixel to see every patch that covers it: the count fold adds up.
"""

import numpy as np
import streamlit as st

import gpuops
from gpuops.maps import unfold_fold as maps
from gpuops.unfold_fold import fold_launch, unfold_launch
from ui import budget, navigation, pick, state
from ui.common import backend_name, compare, cuda_source, figure, session_cached, shown_errors, style
from ui.images import to_display
from ui.records import Folded
from ui.state import Cell, Param
from viz import unfold_fold as viz

navigation.through_app()  # a freshly started server may run this file alone (ui/navigation.py)

K = Param("uf_k", 3, "Kernel K", "slider", lo=1, hi=9)
S = Param("uf_stride", 2, "Stride S", "slider", lo=1, hi=6)
P = Param("uf_pad", 1, "Padding P (zeros)", "slider", lo=0, hi=4)
D = Param("uf_dil", 1, "Dilation D", "slider", lo=1, hi=4)
CROP = Param(
    "uf_crop",
    12,
    "Region animated (pixels a side)",
    "slider",
    lo=4,
    hi=24,
    help="It grows by itself when one patch needs more room.",
)
PICK = Param("uf_pick", None, choices=("patch", "px"))  # in the URL as patch:oh,ow or px:y,x
PARAMS = [K, S, P, D, CROP, PICK]
state.use(PARAMS)

image = st.session_state["image"]
C, H, W = image.planes.shape
sty = style()
ZOOM = 16  # the patch view shows at least this many cells a side; hover maps up to this size
WINDOW = 16 if sty.presentation else 24  # matrix columns shown entry by entry
PIXEL_CHARTS = ("folded", "count", "restored")  # a click on these always picks a pixel
CPU_BYTES_PER_S = 0.4e9  # NumPy unfold + fold on a 2-core CPU (writing the matrix the first time)

st.title("Unfold / Fold")
st.caption(
    "`F.unfold` copies every sliding K x K patch into a column; `F.fold` adds the columns back onto "
    "the image, summing where patches overlap. Click a patch or a matrix column, or a pixel."
)


# ---- settings: slider ranges follow the geometry -----------------------------------------------------
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
                f"K is at most {k_max} here: {why}. Lower the dilation D or raise the padding P "
                "for a larger K.",
                icon=":material/straighten:",
            )
    return k, stride, pad, dil, row


k, stride, pad, dil, settings_row = settings()
g = gpuops.window_geometry(H, W, k, stride, pad, dil)  # the slider ranges keep it valid
ROWS, L = maps.matrix_shape(C, g)
within_budget = False
with shown_errors("Unfold / fold"):
    nbytes = 4 * ROWS * L
    budget.check(
        budget.bytes_cost(nbytes, nbytes / CPU_BYTES_PER_S),
        f"Unfolding this image ({ROWS:,} x {L:,} matrix)",
        "Raise the stride S (S = 2 keeps a quarter of the columns), use a smaller kernel K, or lower the "
        "working size in the sidebar.",
    )
    within_budget = True
if not within_budget:
    st.stop()


# ---- the pick: clicks, number inputs, and a default where the picture has detail ---------------------
def inside_geometry(cell: Cell | None) -> Cell:
    if cell is None:
        return Cell("patch", *maps.nearest_patch(g, *viz.busiest_point(image.planes[0])))
    if cell.space == "px":
        return Cell("px", *maps.clamp_pixel(g, cell.row, cell.col))
    return Cell("patch", *maps.clamp_patch(g, cell.row, cell.col))


def column_of(cell: Cell) -> int:
    """The picked patch's column, or for a pixel the column of the patch centred nearest to it."""
    patch = (cell.row, cell.col) if cell.space == "patch" else maps.nearest_patch(g, cell.row, cell.col)
    return maps.column_of(g, *patch)


def centre_of(cell: Cell) -> tuple[int, int]:
    """The picked pixel, or the picked patch's centre pixel."""
    return (cell.row, cell.col) if cell.space == "px" else maps.patch_centre(g, cell.row, cell.col)


def window_of(cell: Cell) -> np.ndarray:
    """The matrix columns shown entry by entry: around the picked column, or the columns that
    copy the picked pixel."""
    covering = maps.covering_columns(g, cell.row, cell.col) if cell.space == "px" else []
    return np.array(covering) if covering else maps.column_window(g, column_of(cell), WINDOW)


def zoom_region(cell: Cell) -> tuple[int, int, int, int]:
    """The cells the patch view shows: the picked patch, or every patch covering the picked pixel."""
    if cell.space == "patch":
        return maps.region_around(g, maps.patch_box(g, cell.row, cell.col), ZOOM)
    return maps.region_around(g, maps.covering_box(g, cell.row, cell.col), ZOOM)


def clicked(click: pick.Click, cell: Cell) -> Cell:
    """The pick a click makes: a matrix column picks its patch; a fold map picks the pixel; the image,
    the patch view and the animation pick a pixel or the nearest patch, as the Pick setting says."""
    if click.chart == "matrix":
        if click.panel == "x2":  # the window: x is the position of the column in it
            window = window_of(cell)
            return Cell("patch", *maps.patch_of_column(g, window[min(max(click.col, 0), len(window) - 1)]))
        return Cell("patch", *maps.patch_of_column(g, click.col))
    if click.chart == "animation" and click.panel != "x":
        return cell
    if click.chart in PIXEL_CHARTS or cell.space == "px":
        return Cell("px", *maps.clamp_pixel(g, click.row, click.col))
    return Cell("patch", *maps.nearest_patch(g, click.row, click.col))


def _ask(what: str) -> None:
    st.session_state["_uf_ask"] = what if what != "mode" else st.session_state["w_uf_mode"]


def requested(cell: Cell) -> Cell:
    """Apply the number input or Pick setting changed since the last run."""
    ask = st.session_state.pop("_uf_ask", None)
    if ask == "patch" and cell.space == "px":
        return Cell("patch", *maps.nearest_patch(g, cell.row, cell.col))
    if ask == "px" and cell.space == "patch":
        return Cell("px", *maps.patch_centre(g, cell.row, cell.col))
    if ask == "column":
        return Cell("patch", *maps.patch_of_column(g, st.session_state["w_uf_l"]))
    if ask == "pixel":
        return Cell("px", *maps.clamp_pixel(g, st.session_state["w_uf_y"], st.session_state["w_uf_x"]))
    return cell


def hover_maps(cell: Cell) -> dict:
    """On a small patch view: hovering a pixel outlines its copies in the matrix window; hovering a
    matrix entry outlines the pixel it copies (in the browser, without a rerun)."""
    region = zoom_region(cell)
    top, bottom, left, right = region
    if (bottom - top + 1) * (right - left + 1) > ZOOM * ZOOM:
        return {}
    window = window_of(cell)
    copies = maps.copies_in_window(C, g, window, region)
    zoom = {("x", y, x): [("matrix", "x2", r, pos) for r, pos in found] for (y, x), found in copies.items()}
    entries = {
        ("x2", r, pos): [("zoom", "x", y, x), ("image", "x", y, x)]
        for (y, x), found in copies.items()
        for r, pos in found
    }
    out = {"zoom": pick.hover_map(zoom), "matrix": pick.hover_map(entries)}
    return out if pick.size_of(out) <= 80_000 else {}


def pick_inputs(cell: Cell) -> None:
    """The keyboard path, in the settings row, in sync with clicks: patch or pixel, and its numbers."""
    st.session_state["w_uf_mode"] = cell.space
    settings_row[4].radio(
        "Pick",
        ("patch", "px"),
        key="w_uf_mode",
        horizontal=True,
        on_change=_ask,
        args=("mode",),
        format_func=lambda s: "patch" if s == "patch" else "pixel",
        help="What a click on the image picks: the nearest patch, or one pixel.",
    )
    with settings_row[5]:
        if cell.space == "patch":
            st.session_state["w_uf_l"] = maps.column_of(g, cell.row, cell.col)
            st.number_input(
                "Column l (patch)", 0, L - 1, step=1, key="w_uf_l", on_change=_ask, args=("column",)
            )
        else:
            st.session_state["w_uf_y"], st.session_state["w_uf_x"] = cell.row, cell.col
            a, b = st.columns(2)
            a.number_input("Pixel row", 0, H - 1, step=1, key="w_uf_y", on_change=_ask, args=("pixel",))
            b.number_input("Pixel col", 0, W - 1, step=1, key="w_uf_x", on_change=_ask, args=("pixel",))


cell = requested(inside_geometry(state.get(PICK)))
peeked = pick.pending()
if peeked is not None:
    cell = clicked(peeked, cell)
hover = hover_maps(cell)
click = pick.bridge(hover=hover, style=sty.outline_style())
if click is not None and peeked is None:  # the click could not be read before mounting
    cell = clicked(click, cell)
    if hover_maps(cell) != hover:  # mount again with hover maps that fit the new pick
        state.put(PICK, cell)
        st.rerun()
state.put(PICK, cell)
pick_inputs(cell)


# ---- computing: unfold, fold and the counts, kept per image and settings ------------------------------
def unfold_and_fold() -> Folded:
    x = gpuops.asarray(image.planes)
    cols = gpuops.unfold(x, k, dil, pad, stride)
    folded = gpuops.to_numpy(gpuops.fold(cols, (H, W), k, dil, pad, stride))
    overview = viz.block_mean(cols, 81, 600)
    del cols  # the matrix itself is not kept: the window of it is gathered per pick
    counts = maps.overlap_count(g)
    covered = counts > 0
    restored = np.where(covered[None], folded / np.maximum(counts, 1)[None], 0).astype(np.float32)
    err = float(np.abs(restored - image.planes)[:, covered].max()) if covered.any() else 0.0
    return Folded(overview, folded, counts, restored, err, int((~covered).sum()))


# ---- sections ------------------------------------------------------------------------------------
def pick_summary(cell: Cell, counts: np.ndarray) -> None:
    if cell.space == "patch":
        l = maps.column_of(g, cell.row, cell.col)
        top, bottom, left, right = maps.patch_box(g, cell.row, cell.col)
        st.markdown(
            f"Picked **patch l = {l:,}** (patch row {cell.row}, col {cell.col}): its {k} x {k} taps "
            f"(dilation {dil}) span rows {top}..{bottom}, columns {left}..{right}; they fill **column "
            f"{l:,}** of the unfold matrix."
        )
        return
    covering = maps.covering_columns(g, cell.row, cell.col)
    n = int(counts[cell.row, cell.col])
    listed = ", ".join(f"{c:,}" for c in covering[:10]) + (" ..." if len(covering) > 10 else "")
    st.markdown(
        f"Picked **pixel ({cell.row}, {cell.col})**: **covered by {n} patch{'es' if n != 1 else ''}**"
        f"{f' (columns {listed})' if covering else ''}; fold adds all {n} copies back: "
        f"fold(unfold(x)) = {n} · x there."
    )


def section_views(cell: Cell, result: dict) -> None:
    """The image with the pick, and the patch view: the cells around the pick, tap by tap."""
    region = zoom_region(cell)
    taps = tap_inside = pixel = None
    if cell.space == "patch":
        boxes = [maps.patch_box(g, cell.row, cell.col)]
        taps = maps.patch_cells(g, maps.column_of(g, cell.row, cell.col))
        tap_inside = maps.inside(g, *taps)
        what = f"patch l = {maps.column_of(g, cell.row, cell.col):,}"
    else:
        boxes = [
            maps.patch_box(g, *maps.position_of(g, l)) for l in maps.covering_columns(g, cell.row, cell.col)
        ]
        pixel = (cell.row, cell.col)
        what = f"pixel in {len(boxes)} patch{'es' if len(boxes) != 1 else ''}"
    values, inside = maps.region_values(image.planes, g, region)
    counts = maps.region_values(result.counts[None], g, region)[0][0]
    left_col, right_col = st.columns(2)
    with left_col:
        figure(
            viz.image_view(
                to_display(image.planes),
                f"Your image, {W} x {H}",
                sty,
                viz.Marks(boxes, pixel, region=region),
            ),
            "image",
            "Orange: the picked patch's extent (or the patches covering the picked pixel); cyan, dashed: "
            "the cells shown on the right. Click to pick.",
            pickable=True,
        )
    with right_col:
        figure(
            viz.patch_view(
                viz.Zoom(to_display(values), values, inside, counts, region, maps.starts_in(g, region)),
                f"Zoom: {what}",
                sty,
                viz.Marks(boxes if taps is None else (), pixel, taps, tap_inside),
            ),
            "zoom",
            f"Dots: where each patch starts (every {stride} cells). Orange: the picked patch's taps (dotted: "
            f"a "
            "tap on the zero padding, blue). Cyan: the patches covering the picked pixel. Hover for values "
            "and overlap counts.",
            pickable=True,
        )


def section_matrix(cell: Cell, result: dict) -> None:
    window = window_of(cell)
    values = maps.column_values(image.planes, g, window)
    if cell.space == "patch":
        l = maps.column_of(g, cell.row, cell.col)
        picked, copies, marked = int(np.searchsorted(window, l)), [], [l]
    else:
        picked = None
        copies = maps.in_window(maps.entries_copying(C, g, cell.row, cell.col), window)
        marked = maps.covering_columns(g, cell.row, cell.col)
    figure(
        viz.matrix_view(
            result.overview,
            viz.MatrixWindow((ROWS, L), tuple(maps.row_names(C, g)), values, window),
            sty,
            viz.MatrixMarks(picked, tuple(copies), tuple(marked)),
        ),
        "matrix",
        f"Row (c, ki, kj) holds tap (ki, kj) of channel c; column l holds patch l, patches taken row by row "
        f"({g.W_out} per row). Each row is the image again, sampled every {stride} pixels: the matrix has "
        f"{g.expansion_ratio:.2f}x the entries of the image. Click a column to pick its patch.",
        pickable=True,
    )
    st.markdown(
        f"**{g.H_out} x {g.W_out} = {L:,} patches**, each of C·K·K = {C}·{k}·{k} = {ROWS} values: "
        f"unfold gives a **{ROWS:,} x {L:,}** matrix (PyTorch: `F.unfold(x, {k}, dilation={dil}, "
        f"padding={pad}, stride={stride})`)."
    )


def section_fold(cell: Cell, result: dict) -> None:
    st.header("Fold puts the columns back")
    counts = result.counts
    y, x = centre_of(cell)
    # the two images do not depend on the pick: built once per image and settings
    folded, restored = session_cached(
        ("uf_fold_figures", image.key, k, stride, pad, dil, sty.name),
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
            viz.count_map(counts, "Overlap count: patches covering each pixel", sty, pixel=(y, x)),
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
        n, value = int(counts[y, x]), float(image.planes[0, y, x])
        st.markdown(
            f"At pixel ({y}, {x}), channel 0: x = {value:.4f}; fold(unfold(x)) = "
            f"{float(result.folded[0, y, x]):.4f} = {n} x {value:.4f}; fold / count = "
            f"{float(result.restored[0, y, x]):.4f}."
        )


def section_animation(cell: Cell) -> None:
    st.header("Patch extraction, step by step")
    crop = state.widget(CROP)
    block = maps.patch_block(g, *maps.patch_of_column(g, column_of(cell)), crop, 12, tiled=True)
    key = (image.key, k, stride, pad, dil, block, sty.name)
    kept = st.session_state.get("_uf_animation")
    if kept is None or kept[0] != key:  # picks in the same block share the figure (frames are costly)
        kept = (key, animation_figure(block))
        st.session_state["_uf_animation"] = kept
    fig, region = kept[1]
    top, bottom, left, right = region
    grown = max(bottom - top, right - left) + 1
    note = (
        f" The region grew to {grown} cells a side: one patch ({k} taps at dilation {dil}) spans "
        f"{maps.extent(g)[0]}."
        if grown > crop
        else ""
    )
    figure(
        fig,
        "animation",
        "Press ▶ Play or drag the slider: the orange squares are the cells patch l copies "
        f"into column l, in tap order (ki, kj); blue-grey cells are the zero padding.{note}",
        pickable=True,
    )


def animation_figure(block: tuple[int, int, int, int]) -> tuple:
    region = maps.block_region(g, block)
    columns = maps.block_columns(g, block)
    values, inside = maps.region_values(image.planes[:1], g, region)
    top, bottom, left, right = region
    n = len(columns)
    patches = viz.PatchFrames(
        values[0],
        inside,
        region,
        columns,
        maps.patch_taps(g, columns),
        maps.column_values(image.planes[:1], g, columns).T,
        tuple(maps.tap_names(g)),
    )
    title = (
        f"{n} patch{'es' if n != 1 else ''} near the pick: rows {top}..{bottom}, cols {left}..{right}, "
        "channel 0"
    )
    fig = viz.patch_animation(patches, title, sty)
    return fig, region


def section_compare() -> None:
    st.header("Fold: atomic scatter vs gather")
    st.caption(
        "Scatter: one thread per column entry adds it onto its pixel with atomicAdd (the order varies "
        "from run to run). Gather: one thread per pixel sums the entries that cover it (no atomics, "
        "deterministic)."
        + ("" if gpuops.backend_info().gpu else " On this CPU both run the same NumPy code.")
    )
    ready: dict = {}

    def inputs() -> tuple:
        if not ready:  # built on the first timed call only: nothing is computed until Compare is pressed
            ready["x"] = gpuops.asarray(image.planes[None])
            ready["cols"] = gpuops.unfold(ready["x"], k, dil, pad, stride)
        return ready["x"], ready["cols"]

    candidates = {
        "unfold": lambda: gpuops.unfold(inputs()[0], k, dil, pad, stride),
        "fold (scatter)": lambda: gpuops.fold(inputs()[1], (H, W), k, dil, pad, stride, variant="scatter"),
        "fold (gather)": lambda: gpuops.fold(inputs()[1], (H, W), k, dil, pad, stride, variant="gather"),
    }
    with shown_errors("Timing"):
        nbytes = 4 * ROWS * L
        budget.check(
            budget.bytes_cost(2 * nbytes, 3 * max(0.25, nbytes / CPU_BYTES_PER_S)),
            "Timing unfold and fold",
            "Raise the stride S or lower K or the working size, then compare.",
        )
        times = compare(
            ("uf_times", image.key, k, stride, pad, dil, backend_name()),
            candidates,
            "Compare unfold and both folds",
        )
        if times:
            names = list(times)
            figure(
                viz.runtime_bars(
                    names,
                    [times[n].median_ms for n in names],
                    f"unfold and fold on {W} x {H} x {C}",
                    backend_name(),
                    sty,
                ),
                "fold_runtimes",
            )


def section_kernels(cell: Cell) -> None:
    """The kernels that run on a GPU, with captions from their Launch."""
    unfold_k, gather_k, scatter_k = (
        unfold_launch(g, 1, C),
        fold_launch(g, 1, C, "gather"),
        fold_launch(g, 1, C, "scatter"),
    )
    l, (y, x) = column_of(cell), centre_of(cell)
    tu, tg, ts = unfold_k.thread_of(0, 0, l), gather_k.thread_of(0, 0, y, x), scatter_k.thread_of(0, 0, l)
    st.subheader("The CUDA kernels")
    st.caption(
        f"**unfold**: {unfold_k.threads.describe()}; entry (row 0, column {l:,}) is written by block "
        f"{tu.block[0]}, thread ({tu.thread[0]}, {tu.thread[1]}). **fold, gather**: "
        f"{gather_k.threads.describe()}; pixel ({y}, {x}) of channel 0 is summed by block {tg.block[0]}, "
        f"thread ({tg.thread[0]}, {tg.thread[1]}). **fold, scatter**: {scatter_k.threads.describe()}; entry "
        f"(row 0, column {l:,}) is added by block {ts.block[0]}, thread ({ts.thread[0]}, {ts.thread[1]})."
    )
    cuda_source(unfold_k, key="src_uf_unfold")
    cuda_source(gather_k, key="src_uf_gather")
    cuda_source(scatter_k, key="src_uf_scatter")


result = None
with shown_errors("Unfold / fold"):
    result = session_cached(("unfold", image.key, k, stride, pad, dil), unfold_and_fold)
if result is not None:
    pick_summary(cell, result.counts)
    section_views(cell, result)
    section_matrix(cell, result)
    section_fold(cell, result)
    section_animation(cell)
section_compare()
section_kernels(cell)
