"""Figures of the Unfold / Fold page: the image with the pick, the patch view (the cells around the
pick, tap by tap), the unfold matrix (all of it aggregated, and a readable window of true columns),
the fold maps, the step-by-step patch animation and the runtime bars.

Pure functions: arrays and a Style in, go.Figure out; no Streamlit, no kernels, no index formulas
(the cells to outline come from gpuops.maps.unfold_fold).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

import gpuops
from viz.animation import Controls, controls
from viz.images import image_trace
from viz.memo import figure_memo
from viz.style import (
    COUNT,
    HALO,
    HIGHLIGHT,
    IMAGE,
    NORMAL,
    PADDING_COLOUR,
    PEN,
    READER,
    SECOND,
    Pen,
    Style,
    finish,
    outline,
    scale_for,
)

Box = tuple[int, int, int, int]  # (top, bottom, left, right), inclusive cell coordinates
FULL_WIDTH = 760  # px of plot area a full-width figure gets there
MAX_FRAMES = 144
PAD_SOLID = "#c4cdec"  # padding cells over a value scale: a light blue-grey no sequential scale uses
HEIGHT = 470  # px of a whole-image or patch figure (before the style's scale)


class Overview(NamedTuple):
    """A matrix averaged over fy x fx blocks (block_mean), small enough to draw."""

    means: np.ndarray
    fy: int
    fx: int


@dataclass(frozen=True)
class Marks:
    """The pick on the image figures: the patches it covers or is (boxes), the picked pixel, the
    picked patch's taps (rows, cols) with tap_inside False where a tap reads padding (dotted), and
    the region the patch view shows (the image figure boxes it)."""

    boxes: Sequence[Box] = ()
    pixel: tuple[int, int] | None = None
    taps: tuple[np.ndarray, np.ndarray] | None = None
    tap_inside: np.ndarray | None = None
    region: Box | None = None


NO_MARKS = Marks()


@dataclass(frozen=True)
class Zoom:
    """A region (top, bottom, left, right) of the padded image around the pick: rgb (h, w, 3) and
    values (C, h, w) (zero in the padding), inside (h, w) False on padding cells, counts (h, w)
    patches covering each cell, and starts (rows, cols, column l) of the patches whose first tap
    is in view."""

    rgb: np.ndarray
    values: np.ndarray
    inside: np.ndarray
    counts: np.ndarray
    region: Box
    starts: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None


@dataclass(frozen=True)
class MatrixWindow:
    """The unfold matrix's shape (rows, L), its row names (c, ki, kj), and the entries of some of
    its columns: values (rows, n) of the true columns `cols`."""

    shape: tuple[int, int]
    row_names: tuple[str, ...]
    values: np.ndarray
    cols: np.ndarray


@dataclass(frozen=True)
class MatrixMarks:
    """picked: the window position of the picked column; copies: (row, position) entries that
    hold the picked pixel; marked: true columns marked on the overview."""

    picked: int | None = None
    copies: tuple[tuple[int, int], ...] = ()
    marked: tuple[int, ...] = ()


@dataclass(frozen=True)
class PatchFrames:
    """Patch after patch over a region (top, bottom, left, right) of one channel: values (h, w)
    (0 in padding), inside (h, w), the true column l of each frame (columns (n,)), each patch's
    taps (rows, cols) each (n, KK), its column of the unfold matrix (column_values (n, KK)),
    and the taps' names."""

    values: np.ndarray
    inside: np.ndarray
    region: Box
    columns: np.ndarray
    taps: tuple[np.ndarray, np.ndarray]
    column_values: np.ndarray
    tap_names: tuple[str, ...]


# ---- small helpers ---------------------------------------------------------------------------------
def busiest_point(plane: np.ndarray, size: int = 16) -> tuple[int, int]:
    """The centre (row, col) of the size x size window with the most edges: a default pick where
    the picture has detail (a flat region teaches nothing)."""
    H, W = plane.shape
    h, w = min(size, H), min(size, W)
    edges = np.abs(np.diff(plane, axis=0, prepend=plane[:1])) + np.abs(
        np.diff(plane, axis=1, prepend=plane[:, :1])
    )
    integral = np.pad(edges.cumsum(0).cumsum(1), ((1, 0), (1, 0)))
    sums = integral[h:, w:] - integral[:-h, w:] - integral[h:, :-w] + integral[:-h, :-w]
    r, c = np.unravel_index(int(np.argmax(sums)), sums.shape)
    return int(r) + h // 2, int(c) + w // 2


def _padding_cells(inside: np.ndarray, top: int, left: int, colour: str, **extra: object) -> go.Heatmap:
    """One colour over the cells of a region (rows from top, columns from left) that are padding."""
    rows, cols = inside.shape
    return go.Heatmap(
        z=np.where(inside, np.nan, 1.0),
        x=np.arange(left, left + cols),
        y=np.arange(top, top + rows),
        showscale=False,
        colorscale=[[0, colour], [1, colour]],
        hoverongaps=False,
        hovertemplate="row %{y}, col %{x}<br>padding: reads 0<extra></extra>",
        **extra,
    )


def block_mean(mat, max_rows: int, max_cols: int) -> Overview:
    """(means, fy, fx): the matrix (NumPy or CuPy) averaged over fy x fx blocks so that it has at
    most max_rows x max_cols cells (the last blocks may be partial), as a NumPy array. A CuPy
    matrix is reduced where it lives: only the means cross to the host, not the matrix."""
    h, w = mat.shape
    fy, fx = max(1, -(-h // max_rows)), max(1, -(-w // max_cols))
    if fy == fx == 1:
        return Overview(gpuops.to_numpy(mat).astype(np.float32), 1, 1)
    starts_y, starts_x = np.arange(0, h, fy), np.arange(0, w, fx)
    if isinstance(mat, np.ndarray):
        # whole blocks as one reshaped sum: reduceat with a float64 accumulator was 28x slower
        full = w // fx * fx
        col_sums = mat[:, :full].reshape(h, -1, fx).sum(axis=2, dtype=np.float64)
        if full < w:
            col_sums = np.concatenate(
                [col_sums, mat[:, full:].sum(axis=1, dtype=np.float64, keepdims=True)], axis=1
            )
    else:  # CuPy has no reduceat: block sums are differences of one running sum along the row
        ends = (np.append(starts_x[1:], w) - 1).tolist()
        running = gpuops.to_numpy(mat.cumsum(axis=1, dtype=np.float64)[:, ends])
        col_sums = np.diff(running, axis=1, prepend=0.0)
    sums = np.add.reduceat(col_sums, starts_y, axis=0)
    counts = np.outer(np.diff(np.append(starts_y, h)), np.diff(np.append(starts_x, w)))
    return Overview((sums / counts).astype(np.float32), fy, fx)


def _label_size(cells: tuple[int, int], px: tuple[float, float], style: Style, chars: int) -> int | None:
    """Cell-label font size that fits both ways (cells = rows, columns over px = height, width),
    or None below the style's minimum (labels hidden)."""
    (cells_down, cells_across), (height_px, width_px) = cells, px
    across = width_px / max(1, cells_across) / max(1.0, 0.62 * chars)
    down = height_px / max(1, cells_down) / 1.25
    size = int(min(style.font, across, down))
    return size if size >= style.label else None


def _labels(values: np.ndarray, fmt: str) -> np.ndarray:
    return np.vectorize(lambda v: "" if not np.isfinite(v) else format(v, fmt))(values.astype(np.float64))


def _colorbar(style: Style, title: str, **extra) -> dict:
    return dict(title=dict(text=title, font=dict(size=style.font)), tickfont=dict(size=style.tick), **extra)


def _box_shapes(box: Box, style: Style, pen: Pen = PEN, *, halo: bool = True) -> list[dict]:
    top, bottom, left, right = box
    shapes = outline((top, left), style, pen, size=(bottom - top + 1, right - left + 1))
    return shapes if halo else shapes[1:]


def _tight(
    fig: go.Figure, style: Style, *, lines: int = 1, right: int = 20, bottom: int | None = None
) -> None:
    """Margins just large enough for the title (one or more lines), the tick labels and the axis
    titles: the figures of this page sit side by side on a laptop screen, where every pixel counts.
    A square image panel is as wide as its column: in presentation mode it grows only by its
    larger text (not by the style's height scale, which would leave empty bands above and below)."""
    if style.presentation:
        fig.update_layout(height=int(fig.layout.height / style.height_scale) + 3 * (style.font - NORMAL.font))
    fig.update_layout(
        margin=dict(
            t=24 + int(1.5 * style.title) * lines,
            l=30 + 3 * style.tick,
            r=right,
            b=bottom if bottom is not None else 30 + 2 * style.font,
        )
    )


def _ring(fig: go.Figure, pixel: tuple[int, int], style: Style, colour: str = READER) -> None:
    """A ring around one pixel that stays visible however small the pixel is drawn (a dark halo
    under a bright line), on top of its one-cell outline."""
    for line, width in ((HALO, style.line + 2), (colour, style.line)):
        fig.add_trace(
            go.Scatter(
                x=[pixel[1]],
                y=[pixel[0]],
                mode="markers",
                hoverinfo="skip",
                showlegend=False,
                marker=dict(
                    symbol="circle-open",
                    size=10 + 4 * style.line,
                    color=line,
                    line=dict(width=width, color=line),
                ),
            )
        )


def _image_axes(fig: go.Figure, box: Box | None = None) -> None:
    """Image-like axes: rows down, square cells, ticks on whole cells."""
    fig.update_yaxes(autorange="reversed" if box is None else None, scaleanchor="x", constrain="domain")
    fig.update_xaxes(constrain="domain")
    if box is not None:
        top, bottom, left, right = box
        fig.update_yaxes(range=[bottom + 0.5, top - 0.5])
        fig.update_xaxes(range=[left - 0.5, right + 0.5])


def _image_figure(
    fig: go.Figure, title: str, style: Style, pixel: tuple[int, int] | None, ring: str = READER
) -> go.Figure:
    """The finish every whole-image figure shares: the picked pixel ringed, the title, tight
    margins and image axes (true pixel coordinates, rows down)."""
    if pixel is not None:
        _ring(fig, pixel, style, ring)
    finish(fig, title, ("image column", "image row"), HEIGHT, style)
    _tight(fig, style)
    _image_axes(fig)
    return fig


# ---- the image and the patch view ------------------------------------------------------------------
@figure_memo
def image_view(pixels: np.ndarray, title: str, style: Style = NORMAL, marks: Marks = NO_MARKS) -> go.Figure:
    """The whole image (true pixel coordinates) with the pick: the picked patch's extent, or every
    patch covering the picked pixel (orange), and the region the patch view shows (cyan, dashed)."""
    boxes, region, pixel = marks.boxes, marks.region, marks.pixel
    fig = go.Figure(image_trace(pixels))
    shapes: list[dict] = []
    if region is not None:
        shapes += _box_shapes(region, style, Pen(SECOND, "dash"))
    for box in boxes:
        shapes += _box_shapes(box, style, Pen(HIGHLIGHT), halo=len(boxes) == 1)
    if pixel is not None:
        shapes += _box_shapes((pixel[0], pixel[0], pixel[1], pixel[1]), style, Pen(READER))
    fig.update_layout(shapes=shapes, showlegend=False)
    return _image_figure(fig, title, style, pixel)


@figure_memo
def patch_view(zoom: Zoom, title: str, style: Style = NORMAL, marks: Marks = NO_MARKS) -> go.Figure:
    """The cells of a region of the padded image around the pick, one square per pixel, padding
    washed blue, the patch grid's starts as dots; marks: the picked patch's taps (dotted where
    a tap reads padding), or the patches covering the picked pixel."""
    rgb, values, inside, counts, region, starts = (
        zoom.rgb,
        zoom.values,
        zoom.inside,
        zoom.counts,
        zoom.region,
        zoom.starts,
    )
    taps, tap_inside, boxes, pixel = marks.taps, marks.tap_inside, marks.boxes, marks.pixel
    top, _, left, _ = region
    h, w = inside.shape
    channels = " / ".join(["%{customdata[" + str(i) + "]:.3f}" for i in range(values.shape[0])])
    custom = np.concatenate([values.transpose(1, 2, 0), counts[..., None]], axis=-1)
    n = values.shape[0]
    fig = go.Figure(
        go.Image(
            z=rgb,
            x0=left,
            y0=top,
            customdata=custom,
            hovertemplate=f"row %{{y}}, col %{{x}}<br>value {channels}<br>covered by %{{customdata[{n}]}} "
            "patches<extra></extra>",
        )
    )
    if not inside.all():
        fig.add_trace(_padding_cells(inside, top, left, PADDING_COLOUR))
    shapes: list[dict] = []
    for box in boxes:
        shapes += _box_shapes(box, style, Pen(SECOND), halo=False)
    if taps is not None:
        flags = np.ones(taps[0].size, bool) if tap_inside is None else np.ravel(tap_inside)
        boxes_of_taps = [
            outline((int(r), int(c)), style, Pen(HIGHLIGHT, "solid" if real else "dot"))
            for r, c, real in zip(np.ravel(taps[0]), np.ravel(taps[1]), flags, strict=True)
        ]
        # every halo first, then every line: a neighbour's halo drawn later would cover the
        # shared edge of the tap before it and leave open, broken boxes
        shapes += [halo for halo, _ in boxes_of_taps] + [line for _, line in boxes_of_taps]
    if pixel is not None:
        shapes += outline(pixel, style, Pen(READER))
    if starts is not None and len(starts[0]):
        fig.add_trace(
            go.Scatter(
                x=starts[1],
                y=starts[0],
                mode="markers",
                customdata=starts[2],
                marker=dict(size=max(5, style.line + 3), color="white", line=dict(color=HALO, width=1.5)),
                hovertemplate="patch l = %{customdata} starts at row %{y}, col %{x}<extra></extra>",
                showlegend=False,
            )
        )
    # hoverdistance 1: a start dot is the hover's point only under the mouse (it sits inside its
    # own cell), never a neighbour's cell within Plotly's default 20 px; the pick bridge takes the
    # hit point's coordinates as the cell (ui/pick.py)
    fig.update_layout(shapes=shapes, showlegend=False, hoverdistance=1)
    finish(fig, title, ("column (image coordinates)", "row"), HEIGHT, style)
    _tight(fig, style)
    _image_axes(fig, region)
    step = max(1, int(np.ceil(max(h, w) / 8)))
    fig.update_xaxes(dtick=step)
    fig.update_yaxes(dtick=step)
    return fig


# ---- the unfold matrix ----------------------------------------------------------------------------
@figure_memo
def matrix_view(
    overview: Overview, columns: MatrixWindow, style: Style = NORMAL, marks: MatrixMarks = MatrixMarks()
) -> go.Figure:
    """The unfold matrix (rows (c, ki, kj), columns l = patches) in two panels with TRUE indices:
    top ("x"): all of it, averaged over fy x fx blocks when it is larger than the panel (the title
    says so); bottom ("x2"): the entries of `window_cols` (true column indices on the axis; the
    panel's x is the position 0..n-1 in the window). picked: position of the picked column in the
    window; copies: (row, position) entries that hold the picked pixel; marked: true columns to mark
    on the overview (the picked column, or the columns that copy the picked pixel)."""
    (overview, fy, fx), width_px = overview, FULL_WIDTH
    shape, window, window_cols, row_names = columns.shape, columns.values, columns.cols, columns.row_names
    picked, copies, marked = marks.picked, marks.copies, marks.marked
    rows, L = shape
    n = len(window_cols)
    scale = scale_for(IMAGE)  # an image's values, copied: the image's fixed scale
    panel_h = int(min(max(14 * rows, 170), 340) * style.height_scale)
    over_h = int(110 * style.height_scale)
    aggregated = fy > 1 or fx > 1
    top_title = (
        f"All {L:,} columns: each cell averages {fy} x {fx} entries" if aggregated else f"All {L:,} columns"
    )
    contiguous = n > 0 and bool(np.all(np.diff(window_cols) == 1))
    low_title = (
        f"Columns {window_cols[0]:,}-{window_cols[-1]:,} (every entry)"
        if contiguous
        else f"The {n} columns that copy the picked pixel (every entry)"
    )
    fig = make_subplots(
        rows=2,
        cols=1,
        row_heights=[over_h, panel_h],
        vertical_spacing=0.2,
        subplot_titles=(top_title, low_title),
    )
    fig.add_trace(
        go.Heatmap(
            z=overview,
            x0=(fx - 1) / 2,
            dx=fx,
            y0=(fy - 1) / 2,
            dy=fy,
            showscale=True,
            colorbar=_colorbar(style, "value", len=1.0, y=0.5, yanchor="middle"),
            hovertemplate=(
                f"columns near %{{x:.0f}}, rows near %{{y:.0f}}<br>mean of {fy} x {fx}: %{{z:.3f}}"
                if aggregated
                else "row %{y}, column %{x}<br>value %{z:.3f}"
            )
            + "<extra></extra>",
            **scale,
        ),
        row=1,
        col=1,
    )
    size = _label_size((rows, n), (panel_h, width_px), style, chars=4)
    names = np.array(row_names, dtype=object)
    fig.add_trace(
        go.Heatmap(
            z=window,
            x=np.arange(n),
            y=np.arange(rows),
            showscale=False,
            xgap=1 if n <= 48 else 0,
            ygap=1 if rows <= 48 else 0,
            text=_labels(window, ".2f") if size else None,
            texttemplate="%{text}" if size else None,
            textfont=dict(size=size or style.label),
            customdata=np.broadcast_to(np.asarray(window_cols)[None, :], window.shape),
            hovertemplate="row %{y}, column l = %{customdata}<br>value %{z:.3f}<extra></extra>",
            **scale,
        ),
        row=2,
        col=1,
    )
    shapes: list[dict] = []
    for l in marked:
        shapes += outline((0, l), style, Pen(HIGHLIGHT), size=(rows, 1))[1:]
    if contiguous:
        shapes += outline((0, int(window_cols[0])), style, Pen(SECOND, "dash"), size=(rows, n))[1:]
    if picked is not None:
        shapes += outline((0, picked), style, Pen(HIGHLIGHT, panel="x2"), size=(rows, 1))
    for r, pos in copies:
        shapes += outline((r, pos), style, Pen(READER, panel="x2"))
    fig.update_layout(shapes=shapes, showlegend=False)
    finish(fig, f"Unfold matrix: {rows:,} x {L:,}", ("", ""), over_h + panel_h + 200, style)
    fig.update_layout(height=over_h + panel_h + int(200 * style.height_scale))
    fig.update_xaxes(title_text="column l = patch (true index)", row=1, col=1, range=[-0.5, L - 0.5])
    fig.update_yaxes(title_text="row", row=1, col=1, range=[rows - 0.5, -0.5])
    step = max(1, int(np.ceil(n / max(1, width_px // (7 * style.tick)))))
    ticks = np.arange(0, n, step)
    fig.update_xaxes(
        title_text="column l = patch (true index)",
        row=2,
        col=1,
        tickvals=ticks,
        ticktext=[f"{window_cols[i]:,}" for i in ticks],
        range=[-0.5, n - 0.5],
    )
    row_step = max(1, int(np.ceil(rows / max(1, panel_h // (1.6 * style.tick)))))
    row_ticks = np.arange(0, rows, row_step)
    fig.update_yaxes(
        title_text="row (c, ki, kj)" if rows <= 64 else "row",
        row=2,
        col=1,
        tickvals=row_ticks,
        ticktext=[f"{names[i]}" if rows <= 64 else str(i) for i in row_ticks],
        range=[rows - 0.5, -0.5],
    )
    return fig


# ---- fold ----------------------------------------------------------------------------------------
@figure_memo
def pixel_image(
    pixels: np.ndarray, title: str, style: Style = NORMAL, *, pixel: tuple[int, int] | None = None
) -> go.Figure:
    """An image in true pixel coordinates with the picked pixel outlined."""
    fig = go.Figure(image_trace(pixels))
    if pixel is not None:
        fig.update_layout(shapes=outline(pixel, style, Pen(READER)))
    return _image_figure(fig, title, style, pixel)


@figure_memo
def count_map(
    counts: np.ndarray,
    title: str,
    style: Style = NORMAL,
    *,
    origin: tuple[int, int] = (0, 0),
    pixel: tuple[int, int] | None = None,
) -> go.Figure:
    """How many patches cover each pixel (what fold adds up), whole numbers on a sequential scale
    with one colour-bar tick per count; cells from origin (top, left) in true image coordinates."""
    (top, left), h, w = origin, *counts.shape
    most = int(counts.max()) if counts.size else 0
    step = max(1, int(np.ceil((most + 1) / 10)))
    fig = go.Figure(
        go.Heatmap(
            z=counts.astype(np.uint8 if most < 256 else np.int32),
            x=np.arange(left, left + w),
            y=np.arange(top, top + h),
            **scale_for(COUNT, counts),
            colorbar=_colorbar(style, "patches", tickvals=list(range(0, most + 1, step))),
            hovertemplate="row %{y}, col %{x}<br>covered by %{z} patches<extra></extra>",
        )
    )
    if pixel is not None:
        fig.update_layout(shapes=outline(pixel, style, Pen(READER)))
    return _image_figure(fig, title, style, pixel, ring="white")


# ---- the step-by-step animation ----------------------------------------------------------------------
def _tap_path(rows: np.ndarray, cols: np.ndarray) -> tuple[list, list]:
    """Closed squares around cells, as one line trace (None separates the squares)."""
    xs: list = []
    ys: list = []
    for r, c in zip(np.ravel(rows), np.ravel(cols), strict=True):
        xs += [c - 0.5, c + 0.5, c + 0.5, c - 0.5, c - 0.5, None]
        ys += [r - 0.5, r - 0.5, r + 0.5, r + 0.5, r - 0.5, None]
    return xs, ys


@figure_memo
def patch_animation(patches: PatchFrames, title: str, style: Style = NORMAL) -> go.Figure:
    """Patch after patch over a region of the image (left, true coordinates; padding washed blue):
    the taps of patch l outlined, and column l of the unfold matrix (channel 0's K*K entries) on
    the right. Frames run in the browser (play / pause / step)."""
    values, inside, region, columns = patches.values, patches.inside, patches.region, patches.columns
    taps, column_values, tap_names = patches.taps, patches.column_values, patches.tap_names
    channel, width_px = "channel 0", FULL_WIDTH
    top, bottom, left, right = region
    h, w = values.shape
    n, kk = column_values.shape
    frames_n = min(n, MAX_FRAMES)
    cell_px = 46 if style.presentation else 40
    plot_h = int(min(max(h * cell_px, 300), 600))
    below = 2 * style.tick + 16  # the tick labels under the plot
    top_px = 24 + int(1.5 * style.title) + 2 * style.font  # the title and the panels' titles
    bottom_px = below + 5 * style.font + 40  # the slider with its value, and the buttons
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.84, 0.16],
        horizontal_spacing=0.08,
        subplot_titles=("Patch l: its taps outlined", "Column l"),
    )
    size = _label_size((h, w), (plot_h, width_px * 0.75), style, chars=4)
    scale = scale_for(IMAGE)
    fig.add_trace(
        go.Heatmap(
            z=values,
            x=np.arange(left, right + 1),
            y=np.arange(top, bottom + 1),
            showscale=False,
            text=_labels(values, ".2f") if size else None,
            texttemplate="%{text}" if size else None,
            textfont=dict(size=size or style.label),
            xgap=1,
            ygap=1,
            hovertemplate=f"row %{{y}}, col %{{x}}<br>{channel} %{{z:.3f}}<extra></extra>",
            **scale,
        ),
        row=1,
        col=1,
    )
    if not inside.all():
        labelled = (
            dict(
                xgap=1,
                ygap=1,
                text=np.where(inside, "", "0"),
                texttemplate="%{text}",
                textfont=dict(size=size),
            )
            if size
            else dict(xgap=1, ygap=1)
        )
        fig.add_trace(_padding_cells(inside, top, left, PAD_SOLID, **labelled), row=1, col=1)
    xs, ys = _tap_path(taps[0][0], taps[1][0])
    fig.add_trace(
        go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=HALO, width=style.line + 3), hoverinfo="skip"),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=HIGHLIGHT, width=style.line), hoverinfo="skip"),
        row=1,
        col=1,
    )
    strip_size = _label_size((kk, 1), (plot_h, width_px * 0.12), style, chars=4)
    strip = column_values[:, :, None]  # (n, KK, 1)
    fig.add_trace(
        go.Heatmap(
            z=strip[0],
            x=[0],
            y=np.arange(kk),
            showscale=False,
            xgap=1,
            ygap=1,
            text=_labels(strip[0], ".2f") if strip_size else None,
            texttemplate="%{text}" if strip_size else None,
            textfont=dict(size=strip_size or style.label),
            zmin=scale["zmin"],
            zmax=scale["zmax"],
            colorscale=scale["colorscale"],
            hovertemplate="entry %{y} of the column<br>value %{z:.3f}<extra></extra>",
        ),
        row=1,
        col=2,
    )
    base = len(fig.data) - 3  # the halo, the line and the strip change from frame to frame
    labels = [f"{columns[i]:,}" for i in range(frames_n)]
    frames = []
    for i in range(frames_n):
        xs, ys = _tap_path(taps[0][i], taps[1][i])
        frames.append(
            go.Frame(
                name=labels[i],
                traces=[base, base + 1, base + 2],
                data=[
                    go.Scatter(x=xs, y=ys),
                    go.Scatter(x=xs, y=ys),
                    go.Heatmap(
                        z=strip[i].tolist(), text=_labels(strip[i], ".2f").tolist() if strip_size else None
                    ),
                ],
            )
        )
    fig.frames = frames
    fig.update_layout(
        **controls(
            labels,
            style,
            Controls(prefix="patch l = ", ms=600, buttons_pad=below + 2 * style.font, slider_pad=below),
        ),
        showlegend=False,
    )
    finish(fig, title, ("", ""), plot_h + top_px + bottom_px, style)
    fig.update_layout(
        height=plot_h + top_px + bottom_px, margin=dict(t=top_px, b=bottom_px, l=30 + 3 * style.tick, r=20)
    )
    fig.update_xaxes(range=[left - 0.5, right + 0.5], row=1, col=1, constrain="domain")
    fig.update_yaxes(
        title_text="row", range=[bottom + 0.5, top - 0.5], row=1, col=1, scaleanchor="x", constrain="domain"
    )
    every = max(1, int(np.ceil(kk / max(1, plot_h // (1.6 * style.tick)))))
    fig.update_xaxes(showticklabels=False, range=[-0.5, 0.5], row=1, col=2)
    fig.update_yaxes(
        range=[kk - 0.5, -0.5],
        tickvals=list(range(0, kk, every)),
        ticktext=[tap_names[i] for i in range(0, kk, every)],
        title_text="tap (ki, kj)",
        row=1,
        col=2,
    )
    return fig


# ---- runtimes --------------------------------------------------------------------------------------
def runtime_bars(
    labels: Sequence[str], ms: Sequence[float], title: str, backend: str, style: Style = NORMAL
) -> go.Figure:
    """Median runtimes of alternatives on the same input, fastest first, on a linear axis."""
    order = sorted(range(len(ms)), key=lambda i: ms[i])
    fig = go.Figure(
        go.Bar(
            x=[ms[i] for i in order],
            y=[labels[i] for i in order],
            orientation="h",
            text=[f"{ms[i]:.3f} ms" for i in order],
            textposition="auto",
            marker_color="#1f77b4",
            textfont=dict(size=style.font),
        )
    )
    finish(
        fig,
        f"{title}<br><sub>median on {backend}; shorter is faster</sub>",
        ("milliseconds", ""),
        140 + 70 * len(ms),
        style,
    )
    fig.update_yaxes(autorange="reversed")
    return fig
