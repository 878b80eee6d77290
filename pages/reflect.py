"""Reflect padding: which input cell each padded cell copies, and why it beats zeros at the edges."""

import streamlit as st

from gpuops.maps import reflect_pad as maps
from gpuops.reflect_pad import reflect_pad_launch
from ui import hover, navigation, pick, picking, reflect_view, state
from ui.common import backend_name, compare, cuda_source, figure, shown_errors, style
from ui.images import to_display
from ui.picking import Grid
from ui.state import Cell, Param
from viz import reflect_pad as viz

navigation.through_app()  # a freshly started server may run this file alone (ui/navigation.py)

GRID_H = Param("reflect_h", 4, "Grid height H", "slider", lo=1, hi=8)
GRID_W = Param("reflect_w", 5, "Grid width W", "slider", lo=1, hi=8)
LEFT = Param(
    "reflect_left",
    2,
    "Left pad",
    "slider",
    lo=0,
    hi=7,
    help="At most W - 1: reflection never repeats the edge.",
)
RIGHT = Param("reflect_right", 2, "Right pad", "slider", lo=0, hi=7, help="At most W - 1.")
TOP = Param("reflect_top", 2, "Top pad", "slider", lo=0, hi=7, help="At most H - 1.")
BOTTOM = Param("reflect_bottom", 1, "Bottom pad", "slider", lo=0, hi=7, help="At most H - 1.")
IMG_PAD = Param(
    "reflect_img_pad",
    24,
    "Image pad (px)",
    "slider",
    lo=0,
    hi=1023,
    help="On every side; at most the image's shorter side - 1.",
)
BLUR = Param(
    "reflect_blur",
    9,
    "Box blur size K",
    "slider",
    lo=3,
    hi=15,
    choices=(3, 5, 7, 9, 11, 13, 15),
    help="Both blurs pad K // 2 cells on each side, which keeps the image's size.",
)
PICK = Param("reflect_pick", Cell("pad", 0, 0), choices=("pad", "in"))  # a cell of the small grid
IMG_PICK = Param("reflect_img_pick", None, choices=("pad",))  # a pixel of the padded image
PARAMS = [GRID_H, GRID_W, LEFT, RIGHT, TOP, BOTTOM, IMG_PAD, BLUR, PICK, IMG_PICK]
GRID, IMAGE = "reflect_grid", "reflect_image"

state.use(PARAMS)
image = st.session_state["image"]
C, H, W = image.planes.shape
sty = style()

st.title("Reflect padding")
st.caption(
    "PyTorch's ReflectionPad2d mirrors the image at each edge without repeating the edge cell: for input 0 1 "
    "2 3, padding 2 on the left gives 2 1 | 0 1 2 3. **Click a cell** of the grid or a pixel of the image."
)


def settings() -> tuple[int, int, tuple[int, int, int, int], int]:
    """One row of sliders; each pad's range follows its side (a pad must be smaller than the side)."""
    cols = st.columns([1, 1, 1, 1, 1, 1, 1.5])
    h = state.widget(GRID_H, container=cols[0])
    w = state.widget(GRID_W, container=cols[1])
    pads = tuple(
        int(state.widget(p, container=col, hi=side - 1))
        for p, col, side in zip((LEFT, RIGHT, TOP, BOTTOM), cols[2:6], (w, w, h, h), strict=True)
    )
    hi = min(H, W) - 1
    if state.get(IMG_PAD) > hi:
        st.info(
            f"Image pad {state.get(IMG_PAD)} is more than this {W} x {H} image allows (at most {hi}, its "
            f"shorter side - 1); using {hi}.",
            icon=":material/straighten:",
        )
    p_img = int(state.widget(IMG_PAD, container=cols[6], hi=hi))
    return int(h), int(w), pads, p_img


def section_grid(h: int, w: int, pads: tuple[int, int, int, int], cell: Cell) -> None:
    """The small grid, the pick outlined, and the abs() formula (padded cell) or the copies (input cell)."""
    rows, cols = maps.source_map(h, w, pads)
    if cell.space == "pad":
        row_axis, col_axis = maps.source_of(h, w, pads, cell.row, cell.col)
        src = (row_axis.source, col_axis.source)
        marks = viz.GridMarks(("x2", cell.row, cell.col), (("x", *src),))
    else:
        copies = maps.copies_of(h, w, pads, cell.row, cell.col)
        mapped = tuple(("x2", int(r), int(c)) for r, c in copies)
        marks = viz.GridMarks(("x", cell.row, cell.col), mapped, viz.READER)
    fig = viz.grid_figure((rows, cols), pads, sty, marks)
    figure(
        fig,
        GRID,
        "Hover a cell: its source (or its copies) light up. Click to pick it. Black box: the "
        "original grid inside the padded one.",
        pickable=True,
    )
    spaces = {"pad": ("padded cell", maps.padded_shape(h, w, pads)), "in": ("input cell", (h, w))}
    picking.pick_inputs(PICK, cell, spaces, st.columns([1.6, 1, 1]))
    left, right, top, bottom = pads
    if cell.space == "pad":
        st.markdown(
            f"**Picked: padded cell ({cell.row}, {cell.col})**, which copies **input cell "
            f"({src[0]}, {src[1]})**. The kernel's formula, row and column apart:"
        )
        rows_at, cols_at = st.columns(2) if sty.presentation else (st.container(), st.container())
        rows_at.latex(viz.formula_latex(row_axis, "y", "top", "H"))
        cols_at.latex(viz.formula_latex(col_axis, "x", "left", "W"))
        st.caption(
            "The same abs() formula as PyTorch's CUDA kernel (gpuops/kernels/index_math.cuh): inside the "
            "input it returns i, before it -i, after it 2(W-1) - i."
        )
    else:
        along_rows = maps.axis_copies(h, top, bottom, cell.row)
        along_cols = maps.axis_copies(w, left, right, cell.col)
        st.markdown(
            f"**Picked: input cell ({cell.row}, {cell.col})**: **{len(copies)} padded cells** copy it "
            f"(red), {len(along_rows)} rows x {len(along_cols)} columns:"
        )
        st.latex(
            viz.copies_latex("y", cell.row, along_rows)
            + r", \qquad "
            + viz.copies_latex("x", cell.col, along_cols)
        )
        st.caption(
            "Each axis reflects on its own: a coordinate lands on itself (shifted by the pad) and on its "
            "mirror in each pad that reaches it. The backward pass sums the gradients of all these copies."
        )


def section_image(p_img: int) -> None:
    """The image padded by the chosen amount; a clicked pixel, its source and the source's copies."""
    pads = (p_img,) * 4
    with shown_errors("Reflect padding of the image"):
        padded = reflect_view.padded_image(image, p_img)
        picked = None
        if state.get(IMG_PICK) is not None:
            cell = picking.fitted(IMG_PICK, {"pad": padded.shape[1:]})
            picked = maps.pick_padded(H, W, pads, cell.row, cell.col)
        fig = viz.padded_image_figure(to_display(padded), pads, sty, picked)
        figure(fig, IMAGE, "", pickable=True)
        if picked is None:
            st.caption(
                "Click a pixel: its source pixel (orange) and every other copy of it (red) are outlined."
            )
            return
        st.caption(reflect_view.pixel_text(picked, reflect_pad_launch(C, H, W, pads)))


def section_blur() -> None:
    """Zeros vs reflect: the same box blur, side by side."""
    st.subheader("Zeros vs reflect: the same blur")
    k = int(
        state.widget(
            BLUR,
            container=st.columns([1, 2])[0],
            step=2,
        )
    )
    with shown_errors("The blur"):
        outs = reflect_view.blurs(image, k)
        figure(
            viz.blur_figure(to_display(outs["zeros"]), to_display(outs["reflect"]), k, sty),
            "reflect_blur",
            "Left: a dark frame, the kernel averages in zeros at the border. Right: no frame, the border "
            "averages mirrored pixels, which look like the image. Zoom one side: both follow.",
        )


def section_kernel(p_img: int) -> None:
    """The kernel that pads the image: how its rows are written, runtime on request, its source."""
    st.subheader("The kernel")
    pads = (p_img,) * 4
    with shown_errors("The reflect kernel"):
        launch = reflect_pad_launch(C, H, W, pads)
        st.caption(reflect_view.rows_text(launch))
        candidates, moved = reflect_view.timing_candidates(image, p_img, launch)
        timings = compare(
            ("reflect", image.key, p_img, backend_name()), candidates, "Compare: time the kernel"
        )
        if timings:
            rates = reflect_view.bandwidth(timings, moved)
            for col, (name, t) in zip(st.columns(len(timings)), timings.items(), strict=True):
                col.metric(
                    name,
                    f"{t.median_ms:.3f} ms",
                    f"{rates[name]:.1f} GB/s",
                    delta_color="off",
                    delta_arrow="off",
                    help="Median of repeated runs; GB/s = bytes read + written / time.",
                )
            if len(rates) == 2:
                st.caption(
                    f"The kernel moves its bytes at {reflect_view.share(rates):.0%} of the rate of a plain "
                    "device copy (small images are dominated by the launch, not by memory)."
                )
    cuda_source(reflect_pad_launch(C, H, W, pads), key="src_rp")


h, w, pads, p_img = settings()
rules = hover.combine(
    hover.reflect_pad(h, w, pads, padded=(GRID, "x2"), inputs=[(GRID, "x")]),
    hover.padded_copies(H, W, (p_img,) * 4, on=(IMAGE, "x")),
)
grids = {
    (GRID, "x"): Grid(PICK, "in", (h, w)),
    (GRID, "x2"): Grid(PICK, "pad", maps.padded_shape(h, w, pads)),
    (IMAGE, "x"): Grid(IMG_PICK, "pad", maps.padded_shape(H, W, (p_img,) * 4)),
}
picking.click_cell(pick.bridge(rules=rules, style=sty.outline_style()), grids)
cell = picking.fitted(PICK, {"in": (h, w), "pad": maps.padded_shape(h, w, pads)})
# a laptop sees the grid and the image side by side; a projector one at a time, larger
left_col, right_col = (
    (st.container(), st.container()) if sty.presentation else st.columns([1.35, 1], gap="small")
)
with left_col, shown_errors("Reflect padding"):
    section_grid(h, w, pads, cell)
with right_col:
    section_image(p_img)
section_blur()
section_kernel(p_img)
