"""What the Unfold / Fold page computes, kept out of the page script: unfold and fold of the image,
where the pick lies in the patch grid and the matrix, the records its figures draw, its hover
rules, the timing candidates and the sentences built from the kernels' launches.

`Unfolding` binds the image and the geometry once per run, so the page asks it questions about
the pick (`unfolding.column_of(cell)`) instead of passing the geometry around.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import streamlit as st

import gpuops
from gpuops.launch import Launch
from gpuops.maps import unfold_fold as maps
from ui import budget, hover, pick
from ui.images import to_display
from ui.records import Folded
from ui.sidebar import SourceImage
from ui.state import Cell
from viz import unfold_fold as viz
from viz.style import Style

ZOOM = 16  # the patch view shows at least this many cells a side
PIXEL_CHARTS = ("folded", "count", "restored")  # a click on these always picks a pixel
CPU_BYTES_PER_S = 0.4e9  # NumPy unfold + fold on a 2-core CPU (writing the matrix the first time)
ASK = "_uf_ask"  # session_state: the keyboard input changed since the last run


def ask(what: str) -> None:
    """A keyboard input of the pick changed (on_change): applied by `Unfolding.fit` on the next run."""
    st.session_state[ASK] = what if what != "mode" else st.session_state["w_unfold_mode"]


@dataclass(frozen=True)
class Unfolding:
    """unfold / fold of one image with one geometry; `window`: matrix columns shown entry by entry."""

    image: SourceImage
    g: gpuops.WindowGeometry
    window: int

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, columns) of the unfold matrix: C*K*K x L."""
        return maps.matrix_shape(self.image.planes.shape[0], self.g)

    def check_budget(self) -> bool:
        """Refuse a matrix over the rerun budget, saying what makes it smaller (True: it fits)."""
        rows, cols = self.shape
        nbytes = 4 * rows * cols
        budget.check(
            budget.bytes_cost(nbytes, nbytes / CPU_BYTES_PER_S),
            f"Unfolding this image ({rows:,} x {cols:,} matrix)",
            "Raise the stride S (S = 2 keeps a quarter of the columns), use a smaller kernel K, or lower the "
            "working size in the sidebar.",
        )
        return True

    def compute(self) -> Folded:
        """unfold, fold, the overlap counts and x restored from them (the matrix itself is not kept)."""
        g, planes = self.g, self.image.planes
        x = gpuops.asarray(planes)
        cols = gpuops.unfold(x, g.KH, g.dil_h, g.pad_top, g.stride_h)
        folded = gpuops.to_numpy(gpuops.fold(cols, (g.H, g.W), g.KH, g.dil_h, g.pad_top, g.stride_h))
        overview = viz.block_mean(cols, 81, 600)
        del cols  # the window of it is gathered per pick
        counts = maps.overlap_count(g)
        covered = counts > 0
        restored = np.where(covered[None], folded / np.maximum(counts, 1)[None], 0).astype(np.float32)
        err = float(np.abs(restored - planes)[:, covered].max()) if covered.any() else 0.0
        return Folded(overview, folded, counts, restored, err, int((~covered).sum()))

    # ---- the pick ------------------------------------------------------------------------------------
    def fit(self, cell: Cell | None) -> Cell:
        """The pick inside the geometry (none yet: the patch where the image has most detail), then
        the keyboard input changed since the last run."""
        g = self.g
        if cell is None:
            cell = Cell("patch", *maps.nearest_patch(g, *viz.busiest_point(self.image.planes[0])))
        elif cell.space == "px":
            cell = Cell("px", *maps.clamp_pixel(g, cell.row, cell.col))
        else:
            cell = Cell("patch", *maps.clamp_patch(g, cell.row, cell.col))
        asked = st.session_state.pop(ASK, None)
        if asked == "patch" and cell.space == "px":
            return Cell("patch", *maps.nearest_patch(g, cell.row, cell.col))
        if asked == "px" and cell.space == "patch":
            return Cell("px", *maps.patch_centre(g, cell.row, cell.col))
        if asked == "column":
            return Cell("patch", *maps.patch_of_column(g, st.session_state["w_unfold_l"]))
        if asked == "pixel":
            return Cell(
                "px", *maps.clamp_pixel(g, st.session_state["w_unfold_y"], st.session_state["w_unfold_x"])
            )
        return cell

    def clicked(self, click: pick.Click, cell: Cell) -> Cell:
        """The pick a click makes: a matrix column picks its patch; a fold map picks the pixel; the
        image, the patch view and the animation pick a pixel or the nearest patch, as the Pick
        setting says."""
        g = self.g
        if click.chart == "matrix":
            if click.panel == "x2":  # the window: x is the position of the column in it
                window = self.window_of(cell)
                return Cell(
                    "patch", *maps.patch_of_column(g, window[min(max(click.col, 0), len(window) - 1)])
                )
            return Cell("patch", *maps.patch_of_column(g, click.col))
        if click.chart == "animation" and click.panel != "x":
            return cell
        if click.chart in PIXEL_CHARTS or cell.space == "px":
            return Cell("px", *maps.clamp_pixel(g, click.row, click.col))
        return Cell("patch", *maps.nearest_patch(g, click.row, click.col))

    def column_of(self, cell: Cell) -> int:
        """The picked patch's column, or for a pixel the column of the patch centred nearest to it."""
        g = self.g
        patch = (cell.row, cell.col) if cell.space == "patch" else maps.nearest_patch(g, cell.row, cell.col)
        return maps.column_of(g, *patch)

    def centre_of(self, cell: Cell) -> tuple[int, int]:
        """The picked pixel, or the picked patch's centre pixel."""
        return (cell.row, cell.col) if cell.space == "px" else maps.patch_centre(self.g, cell.row, cell.col)

    def window_of(self, cell: Cell) -> np.ndarray:
        """The matrix columns shown entry by entry: around the picked column, or the columns that
        copy the picked pixel."""
        covering = maps.covering_columns(self.g, cell.row, cell.col) if cell.space == "px" else []
        return (
            np.array(covering) if covering else maps.column_window(self.g, self.column_of(cell), self.window)
        )

    def zoom_region(self, cell: Cell) -> tuple[int, int, int, int]:
        """The cells the patch view shows: the picked patch, or every patch covering the picked pixel."""
        g = self.g
        if cell.space == "patch":
            return maps.region_around(g, maps.patch_box(g, cell.row, cell.col), ZOOM)
        return maps.region_around(g, maps.covering_box(g, cell.row, cell.col), ZOOM)

    def hover(self, cell: Cell) -> hover.Rules:
        """Hovering a pixel (patch view, image, fold maps) outlines its copies in the matrix window;
        hovering a matrix entry the pixel it copies (in the browser, without a rerun)."""
        return hover.unfold_window(
            self.g,
            self.image.planes.shape[0],
            self.window_of(cell),
            matrix=("matrix", "x2"),
            zoom=("zoom", "x"),
            image=("image", "x"),
            pixels=[(chart, "x") for chart in PIXEL_CHARTS],
        )

    # ---- what the figures draw ---------------------------------------------------------------------
    def views(self, cell: Cell, counts: np.ndarray) -> tuple[viz.Marks, viz.Marks, viz.Zoom, str]:
        """The image's marks, the patch view's marks and region, and what the zoom shows."""
        g, planes = self.g, self.image.planes
        region = self.zoom_region(cell)
        if cell.space == "patch":
            box = maps.patch_box(g, cell.row, cell.col)
            taps = maps.patch_cells(g, maps.column_of(g, cell.row, cell.col))
            image_marks = viz.Marks((box,), region=region)
            zoom_marks = viz.Marks(taps=taps, tap_inside=maps.inside(g, *taps))
            what = f"patch l = {maps.column_of(g, cell.row, cell.col):,}"
        else:
            covering = maps.covering_columns(g, cell.row, cell.col)
            boxes = tuple(maps.patch_box(g, *maps.position_of(g, col)) for col in covering)
            image_marks = viz.Marks(boxes, (cell.row, cell.col), region=region)
            zoom_marks = viz.Marks(boxes, (cell.row, cell.col))
            what = f"pixel in {len(boxes)} patch{'es' if len(boxes) != 1 else ''}"
        values, inside = maps.region_values(planes, g, region)
        in_view = maps.region_values(counts[None], g, region)[0][0]
        zoom = viz.Zoom(to_display(values), values, inside, in_view, region, maps.starts_in(g, region))
        return image_marks, zoom_marks, zoom, what

    def matrix(self, cell: Cell) -> tuple[viz.MatrixWindow, viz.MatrixMarks]:
        """The matrix columns shown entry by entry and what is marked on them and on the overview."""
        g, planes = self.g, self.image.planes
        C = planes.shape[0]
        window = self.window_of(cell)
        if cell.space == "patch":
            column = maps.column_of(g, cell.row, cell.col)
            marks = viz.MatrixMarks(int(np.searchsorted(window, column)), (), (column,))
        else:
            copies = maps.in_window(maps.entries_copying(C, g, cell.row, cell.col), window)
            marks = viz.MatrixMarks(None, tuple(copies), tuple(maps.covering_columns(g, cell.row, cell.col)))
        values = maps.column_values(planes, g, window)
        return viz.MatrixWindow(self.shape, tuple(maps.row_names(C, g)), values, window), marks

    def animation(self, block: tuple[int, int, int, int], look: Style) -> tuple:
        """(figure, region): patch after patch over a block of the patch grid, channel 0."""
        g, planes = self.g, self.image.planes
        region = maps.block_region(g, block)
        columns = maps.block_columns(g, block)
        values, inside = maps.region_values(planes[:1], g, region)
        top, bottom, left, right = region
        patches = viz.PatchFrames(
            values[0],
            inside,
            region,
            columns,
            maps.patch_taps(g, columns),
            maps.column_values(planes[:1], g, columns).T,
            tuple(maps.tap_names(g)),
        )
        n = len(columns)
        title = (
            f"{n} patch{'es' if n != 1 else ''} near the pick: rows {top}..{bottom}, "
            f"cols {left}..{right}, channel 0"
        )
        return viz.patch_animation(patches, title, look), region

    # ---- timing and the kernels ------------------------------------------------------------------------
    def timing_candidates(self) -> dict[str, Callable[[], object]]:
        """unfold and both folds; their inputs are built on the first timed call only (nothing is
        computed until Compare is pressed), within the budget."""
        g, planes = self.g, self.image.planes
        rows, cols = self.shape
        nbytes = 4 * rows * cols
        budget.check(
            budget.bytes_cost(2 * nbytes, 3 * max(0.25, nbytes / CPU_BYTES_PER_S)),
            "Timing unfold and fold",
            "Raise the stride S or lower K or the working size, then compare.",
        )
        args = (g.KH, g.dil_h, g.pad_top, g.stride_h)
        ready: dict = {}

        def inputs() -> tuple:
            if not ready:
                ready["x"] = gpuops.asarray(planes[None])
                ready["cols"] = gpuops.unfold(ready["x"], *args)
            return ready["x"], ready["cols"]

        return {
            "unfold": lambda: gpuops.unfold(inputs()[0], *args),
            "fold (scatter)": lambda: gpuops.fold(inputs()[1], (g.H, g.W), *args, variant="scatter"),
            "fold (gather)": lambda: gpuops.fold(inputs()[1], (g.H, g.W), *args, variant="gather"),
        }

    def kernels_text(self, cell: Cell, launches: tuple[Launch, Launch, Launch]) -> str:
        """Which block and thread of unfold, fold (gather) and fold (scatter) handle the pick."""
        unfold_k, gather_k, scatter_k = launches
        col, (y, x) = self.column_of(cell), self.centre_of(cell)
        tu, tg, ts = (
            unfold_k.thread_of(0, 0, col),
            gather_k.thread_of(0, 0, y, x),
            scatter_k.thread_of(0, 0, col),
        )
        return (
            f"**unfold**: {unfold_k.threads.describe()}; entry (row 0, column {col:,}) is written by "
            f"block {tu.block[0]}, thread ({tu.thread[0]}, {tu.thread[1]}). **fold, gather**: "
            f"{gather_k.threads.describe()}; pixel ({y}, {x}) of channel 0 is summed by block "
            f"{tg.block[0]}, thread ({tg.thread[0]}, {tg.thread[1]}). **fold, scatter**: "
            f"{scatter_k.threads.describe()}; entry (row 0, column {col:,}) is added by block "
            f"{ts.block[0]}, thread ({ts.thread[0]}, {ts.thread[1]})."
        )

    def summary(self, cell: Cell, counts: np.ndarray) -> str:
        """The pick in words: a patch's taps and its column, or a pixel's covering patches."""
        g = self.g
        if cell.space == "patch":
            col = maps.column_of(g, cell.row, cell.col)
            top, bottom, left, right = maps.patch_box(g, cell.row, cell.col)
            return (
                f"Picked **patch l = {col:,}** (patch row {cell.row}, col {cell.col}): its {g.KH} x {g.KW} "
                f"taps (dilation {g.dil_h}) span rows {top}..{bottom}, columns {left}..{right}; they fill "
                f"**column {col:,}** of the unfold matrix."
            )
        covering = maps.covering_columns(g, cell.row, cell.col)
        n = int(counts[cell.row, cell.col])
        listed = ", ".join(f"{c:,}" for c in covering[:10]) + (" ..." if len(covering) > 10 else "")
        return (
            f"Picked **pixel ({cell.row}, {cell.col})**: **covered by {n} patch{'es' if n != 1 else ''}**"
            f"{f' (columns {listed})' if covering else ''}; fold adds all {n} copies back: "
            f"fold(unfold(x)) = {n} · x there."
        )

    def pixel_text(self, result: Folded, pixel: tuple[int, int]) -> str:
        """unfold then fold at one pixel of channel 0, in numbers."""
        y, x = pixel
        n, value = int(result.counts[y, x]), float(self.image.planes[0, y, x])
        return (
            f"At pixel ({y}, {x}), channel 0: x = {value:.4f}; fold(unfold(x)) = "
            f"{float(result.folded[0, y, x]):.4f} = {n} x {value:.4f}; fold / count = "
            f"{float(result.restored[0, y, x]):.4f}."
        )

    def grown_note(self, region: tuple[int, int, int, int], crop: int) -> str:
        """Why the animated region is larger than asked (a dilated patch needs the room), or ""."""
        top, bottom, left, right = region
        grown = max(bottom - top, right - left) + 1
        if grown <= crop:
            return ""
        return (
            f" The region grew to {grown} cells a side: one patch ({self.g.KH} taps at dilation "
            f"{self.g.dil_h}) spans {maps.extent(self.g)[0]}."
        )
