"""Figures of the Direct convolution page: the input and output images with the pick, its
receptive field up close, the kernel's weights, the sliding window, and which block and thread
computed the pick.

Pure functions: arrays and a Style in, go.Figure out; no Streamlit, no kernels, no index maps
(the page passes the cells gpuops.maps.conv2d computed). Highlights are layout shapes named
after what they show ("pick", "taps", "padding-taps", "mirror-sources", "readers", "detail",
"zoom", "block", "thread", "tile"), each a halo under a bright line, drawn as a path of unit cell
edges so that many cells cost two shapes; `layout.meta` lists the cells behind each highlight.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import plotly.graph_objects as go

from viz import animation
from viz.cells import GridLook, value_grid
from viz.images import image_trace
from viz.memo import figure_memo
from viz.style import (
    HALO,
    HIGHLIGHT,
    IMAGE,
    PADDING_COLOUR,
    PEN,
    READER,
    SECOND,
    Pen,
    Style,
    axis_text,
    base_layout,
    scale_for,
)

IMAGE_WIDTH = 460  # px of an image column at 1366 x 768 with the sidebar open (two columns)
GRID_WIDTH = 520  # px a cell grid is drawn for (labels are sized for it)
PIXEL_SCALE = scale_for(IMAGE)  # input values are intensities in [0, 1]
PIXEL_GRID = GridLook(fmt=".2f", width_px=GRID_WIDTH, scale=PIXEL_SCALE)
COVER = "rgba(236,236,236,1)"  # outputs the window has not reached yet
MIRROR = "#5b2a86"  # arrows from a mirrored padding tap to the cell it copies
BOX = Pen(SECOND)  # boxes: a region (the zoom, a tile), cyan
DOTTED_BOX = Pen(SECOND, "dot")
DASHED, DOTTED = Pen(dash="dash"), Pen(dash="dot")  # taps in the padding, the cells mirrored taps copy
MIN_ROWS_PER_COLUMN = 3  # the thread figure shows at least one row per 3 columns (never a thin strip)
MIN_PANEL = 0.32  # neither panel of the sliding window gets less of the plot's width (its title fits)
MAX_ARROWS = 8  # more mirrored taps than this: no arrows (a tangle); hovering a padding cell shows its source


class Window(Protocol):
    """A region of the padded input as the kernel sees it (gpuops.maps.conv2d.PaddedWindow)."""

    rows: np.ndarray  # (h,) true input row of each window row (outside 0..H-1: padding)
    cols: np.ndarray  # (w,)
    values: np.ndarray  # (h, w); NaN beyond the padded input
    inside: np.ndarray  # (h, w) bool: a real input cell
    source_rows: np.ndarray  # (h, w) the input row a padding cell copies, -1 for a zero
    source_cols: np.ndarray


class ThreadPixels(Protocol):
    """Which outputs one thread and its block compute (gpuops.maps.conv2d.ThreadWork)."""

    thread_pixels: np.ndarray  # (k, 2) output pixels
    block_pixels: np.ndarray  # (k, 2)


class Taps(Protocol):
    """One output's KH x KW taps in input coordinates (gpuops.maps.conv2d.ReceptiveField)."""

    rows: np.ndarray
    cols: np.ndarray
    inside: np.ndarray  # the tap reads a real input cell
    source_rows: np.ndarray  # the input row it actually reads (reflected), -1 for a zero
    source_cols: np.ndarray


@dataclass(frozen=True)
class ImageMarks:
    """What an image figure outlines. pads (top, bottom, left, right): the padding band; taps: the
    picked output's receptive field, outlined (dashed in the padding; a mirrored tap's source
    dotted, with a line to it); picked: a picked cell (orange); readers: (n, 2) every output that
    reads a picked input cell (red: the reverse map); detail: the output the details follow
    (dotted); zoom (r0, r1, c0, c1): the region the receptive-field figure shows (cyan, dotted)."""

    pads: tuple[int, int, int, int] = (0, 0, 0, 0)
    taps: Taps | None = None
    picked: tuple[int, int] | None = None
    readers: np.ndarray | None = None
    detail: tuple[int, int] | None = None
    zoom: tuple[int, int, int, int] | None = None


NO_MARKS = ImageMarks()


@dataclass(frozen=True)
class Closeup:
    """One output's receptive field up close: the input region around it, its taps, the weights
    they multiply, and an input cell picked on the page (None: an output was picked)."""

    window: Window
    taps: Taps
    weights: np.ndarray
    picked: tuple[int, int] | None = None


@dataclass(frozen=True)
class Sweep:
    """The sliding window over a crop: the input region it reads (window), the outputs out_rows x
    out_cols with their values, each output's taps (tap_rows, tap_cols: (n, KH, KW), raster order)
    and value (sums: (n,), each the sum of `terms` products), the frame shown first (start), and
    the kind of data the outputs are (viz.style.output_kind: signed when a weight is negative)."""

    window: Window
    out_rows: np.ndarray
    out_cols: np.ndarray
    out_values: np.ndarray
    tap_rows: np.ndarray
    tap_cols: np.ndarray
    sums: np.ndarray
    start: int
    terms: int
    out_kind: str = IMAGE


# ---- one-shot layouts ---------------------------------------------------------------------------------
def _axis(title: str, style: Style, **extra: Any) -> dict:
    return {**axis_text(title, style), **extra}


def _layout(title: str, x_title: str, y_title: str, height: int, style: Style, **extra: Any) -> dict:
    """viz.style.finish's layout as one dict: a figure built with it in one go costs ~2 ms
    instead of finish's ~30 ms of updates."""
    return dict(
        base_layout(title, height, style),
        xaxis=_axis(x_title, style),
        yaxis=_axis(y_title, style),
        showlegend=False,
        **extra,
    )


def _merge(layout: dict, **axes: dict) -> dict:
    """layout with extra keys merged into its axes (xaxis=dict(range=...), ...)."""
    out = dict(layout)
    for name, extra in axes.items():
        out[name] = {**out.get(name, {}), **extra}
    return out


def _image(pixels: np.ndarray, x0: int = 0, y0: int = 0, hover: str = "") -> go.Image:
    """viz.images.image_trace with this page's hover text."""
    trace = image_trace(pixels, x0, y0)
    if hover:
        trace.update(hovertemplate=hover)
    return trace


# ---- highlights -------------------------------------------------------------------------------------
def _as_cells(cells: Any) -> np.ndarray:
    return np.asarray(cells, dtype=np.int64).reshape(-1, 2)


def cell_edges(cells: Any, union: bool = True) -> list[tuple[float, float, float, float]]:
    """Unit edges (x0, y0, x1, y1) outlining cells (row, col): with union, only the edges between a
    cell of the set and one outside it (the outline of the region); without, every cell's four."""
    cells = _as_cells(cells)
    present = {(int(r), int(c)) for r, c in cells}
    edges = []
    for r, c in sorted(present):
        for dr, dc, edge in (
            (-1, 0, (c - 0.5, r - 0.5, c + 0.5, r - 0.5)),
            (1, 0, (c - 0.5, r + 0.5, c + 0.5, r + 0.5)),
            (0, -1, (c - 0.5, r - 0.5, c - 0.5, r + 0.5)),
            (0, 1, (c + 0.5, r - 0.5, c + 0.5, r + 0.5)),
        ):
            if not union or (r + dr, c + dc) not in present:
                edges.append(edge)
    return edges


def cells_path(cells: Any, union: bool = True) -> str:
    """An SVG path of the cells' outline in data coordinates (one shape for any number of cells)."""
    return " ".join(f"M{x0:g},{y0:g}L{x1:g},{y1:g}" for x0, y0, x1, y1 in cell_edges(cells, union))


def highlight(cells: Any, style: Style, name: str, pen: Pen = PEN, *, union: bool = True) -> list[dict]:
    """Two path shapes, a dark halo under a bright line, outlining the cells; [] for no cells."""
    path = cells_path(cells, union)
    if not path:
        return []
    line = pen.width or style.line
    common = dict(type="path", path=path, xref=pen.panel, yref=pen.yref, name=name, layer="above")
    return [
        {**common, "line": dict(color=HALO, width=line + 3)},
        {**common, "line": dict(color=pen.colour, width=line, dash=pen.dash)},
    ]


def box(extent: tuple[float, float, float, float], style: Style, name: str, pen: Pen = BOX) -> list[dict]:
    """A halo + line rectangle around rows r0..r1-1 and columns c0..c1-1 (extent = r0, r1, c0, c1)."""
    r0, r1, c0, c1 = extent
    rect = dict(
        type="rect",
        x0=c0 - 0.5,
        x1=c1 - 0.5,
        y0=r0 - 0.5,
        y1=r1 - 0.5,
        xref=pen.panel,
        yref=pen.yref,
        name=name,
    )
    line = dict(color=pen.colour, width=max(2, style.line - 1), dash=pen.dash)
    return [
        {**rect, "line": dict(color=HALO, width=style.line + 2), "fillcolor": "rgba(0,0,0,0)"},
        {**rect, "line": line, "fillcolor": pen.fill or "rgba(0,0,0,0)"},
    ]


def ring(r: float, c: float, style: Style, colour: str = HIGHLIGHT, size: int = 22) -> list[go.Scatter]:
    """A circle of fixed screen size around (r, c), halo under colour: finds a one-pixel pick on
    a 1024 px image at any zoom. Transparent to hover and clicks (the image under it answers)."""
    common = dict(x=[c], y=[r], mode="markers", hoverinfo="skip", showlegend=False, cliponaxis=False)
    return [
        go.Scatter(
            **common,
            marker=dict(symbol="circle-open", size=size + 4, line=dict(color=HALO, width=style.line + 3)),
        ),
        go.Scatter(
            **common,
            marker=dict(symbol="circle-open", size=size + 4, line=dict(color=colour, width=style.line)),
        ),
    ]


def _meta(**cells: Any) -> dict[str, list[list[int]]]:
    return {k: _as_cells(v).tolist() for k, v in cells.items() if v is not None}


# ---- the two images ---------------------------------------------------------------------------------
def _margins(style: Style, title: str = "") -> dict[str, int]:
    """Image panels: room for the title (every line of it), the tick labels and the axis titles."""
    lines = 1 + title.count("<br>")
    return dict(
        l=3 * style.tick // 2 + style.font + 24,
        r=34,
        t=lines * (style.title + 6) + 18,
        b=style.tick + style.font + 28,
    )


def _image_height(rows: int, cols: int, style: Style, width: int = IMAGE_WIDTH, title: str = "") -> int:
    """Height (before the style's scale) that lets an image of rows x cols fill a column `width`
    px wide, plus its title and axes."""
    m = _margins(style, title)
    plot_w = width - m["l"] - m["r"]
    plot_h = min(int(plot_w * rows / max(1, cols)), int(1.15 * plot_w))
    return int((max(plot_h, 60) + m["t"] + m["b"]) / style.height_scale)


def _image_layout(
    title: str,
    axis: str,
    style: Style,
    extent: tuple[int, int, int, int],
    width: int = IMAGE_WIDTH,
    **extra: Any,
) -> dict:
    """An image panel's layout: axes in true pixel coordinates over extent (r0, r1, c0, c1)."""
    r0, r1, c0, c1 = extent
    height = _image_height(r1 - r0, c1 - c0, style, width, title)
    layout = _layout(title, f"{axis} column", f"{axis} row", height, style, **extra)
    layout["margin"] = _margins(style, title)
    plain = dict(autorange=False, constrain="domain", showgrid=False, zeroline=False)
    return _merge(
        layout,
        xaxis=dict(range=[c0 - 0.5, c1 - 0.5], **plain),
        yaxis=dict(range=[r1 - 0.5, r0 - 0.5], scaleanchor="x", **plain),
    )


@figure_memo
def input_figure(pixels: np.ndarray, style: Style, title: str, marks: ImageMarks = NO_MARKS) -> go.Figure:
    """The input image and the padding band around it; marks: the taps of the picked output, or a
    picked input cell, and the close-up's region."""
    H, W = pixels.shape[:2]
    pads, zoom, picked = marks.pads, marks.zoom, marks.picked
    top, bottom, left, right = pads
    traces: list = [_image(pixels, hover="input row %{y}, col %{x}<br>RGB %{color}<extra></extra>")]
    shapes: list[dict] = []
    meta: dict[str, Any] = {}
    if any(pads):
        shapes.append(
            dict(
                type="rect",
                x0=-left - 0.5,
                x1=W + right - 0.5,
                y0=-top - 0.5,
                y1=H + bottom - 0.5,
                layer="below",
                line=dict(width=0),
                fillcolor=PADDING_COLOUR,
                name="padding",
            )
        )
    if zoom is not None:
        shapes += box(zoom, style, "zoom", DOTTED_BOX)
    if marks.taps is not None:
        taps = marks.taps
        rows, cols = np.asarray(taps.rows).ravel(), np.asarray(taps.cols).ravel()
        ins = np.asarray(taps.inside).ravel()
        cells = np.stack([rows, cols], axis=1)
        shapes += highlight(cells[ins], style, "taps")
        shapes += highlight(cells[~ins], style, "padding-taps", DASHED)
        meta.update(_meta(taps=cells[ins], padding_taps=cells[~ins]))
        traces += ring(float(rows.mean()), float(cols.mean()), style)
        src = np.stack([np.asarray(taps.source_rows).ravel(), np.asarray(taps.source_cols).ravel()], axis=1)
        mirrored = ~ins & (src[:, 0] >= 0)
        if mirrored.any():
            shapes += highlight(src[mirrored], style, "mirror-sources", DOTTED)
            meta.update(_meta(mirror_sources=src[mirrored]))
            traces.append(_links(cells[mirrored], src[mirrored], style))
    if picked is not None:
        shapes += highlight([picked], style, "pick")
        meta["pick"] = [list(picked)]
        traces += ring(*picked, style)
    layout = _image_layout(
        title, "input", style, (-top, H + bottom, -left, W + right), shapes=shapes, meta=meta
    )
    return go.Figure(traces, layout)


def _links(frm: np.ndarray, to: np.ndarray, style: Style) -> go.Scatter:
    """Thin lines from padding taps to the cells they copy (one trace, gaps between lines)."""
    xs: list[float | None] = []
    ys: list[float | None] = []
    for (r0, c0), (r1, c1) in zip(frm, to, strict=True):
        xs += [float(c0), float(c1), None]
        ys += [float(r0), float(r1), None]
    return go.Scatter(
        x=xs,
        y=ys,
        mode="lines",
        line=dict(color=HIGHLIGHT, width=max(1, style.line - 2), dash="dot"),
        hoverinfo="skip",
        showlegend=False,
    )


@figure_memo
def output_figure(pixels: np.ndarray, style: Style, title: str, marks: ImageMarks = NO_MARKS) -> go.Figure:
    """The output image; marks: the output pixel picked, or the outputs that read a picked input
    cell and the output the details follow."""
    H, W = pixels.shape[:2]
    picked, readers, detail = marks.picked, marks.readers, marks.detail
    shapes: list[dict] = []
    meta: dict[str, Any] = {}
    if readers is not None:
        shapes += highlight(readers, style, "readers", Pen(READER))
        meta.update(_meta(readers=readers))
    rings = []
    if detail is not None:
        shapes += highlight([detail], style, "detail", DOTTED)
        meta["detail"] = [list(detail)]
        rings = ring(*detail, style)
    if picked is not None:
        shapes += highlight([picked], style, "pick")
        meta["pick"] = [list(picked)]
        rings = ring(*picked, style)
    trace = _image(pixels, hover="output row %{y}, col %{x}<br>RGB %{color}<extra></extra>")
    return go.Figure(
        [trace, *rings], _image_layout(title, "output", style, (0, H, 0, W), shapes=shapes, meta=meta)
    )


# ---- the receptive field up close, and the weights ----------------------------------------------------
def _grid_height(rows: int, cols: int, width: int = GRID_WIDTH, extra: int = 0) -> int:
    """Height (before the style's scale) for a grid of rows x cols square cells drawn `width` px wide."""
    cell = min(46, (width - 110) / max(1, cols))
    return int(rows * cell + 110 + extra)


def _grid_margins(style: Style, title: str) -> dict[str, int]:
    lines = 1 + title.count("<br>")
    return dict(
        l=3 * style.tick // 2 + style.font + 30,
        r=30,
        t=lines * (style.title + 8) + 22,
        b=style.tick + style.font + 34,
    )


def _square(
    rows: Sequence[int], cols: Sequence[int], style: Style, width: int = GRID_WIDTH
) -> dict[str, dict]:
    """Axes over cells rows x cols (true indices), square cells; a tick on every cell when the
    cells are large enough for their labels, else Plotly's own spacing."""
    cell = min(46, (width - 110) / max(1, len(cols)))
    every = cell >= 1.7 * style.tick
    plain = dict(showgrid=False, zeroline=False, constrain="domain")
    return dict(
        xaxis=dict(range=[cols[0] - 0.5, cols[-1] + 0.5], dtick=1 if every else None, **plain),
        yaxis=dict(
            range=[rows[-1] + 0.5, rows[0] - 0.5], dtick=1 if every else None, scaleanchor="x", **plain
        ),
    )


def _padding_wash(padding: np.ndarray, rows: np.ndarray, cols: np.ndarray, **axes: str) -> go.Heatmap:
    return go.Heatmap(
        z=np.where(padding, 1.0, np.nan),
        x=cols,
        y=rows,
        zmin=0,
        zmax=1,
        showscale=False,
        colorscale=[[0, PADDING_COLOUR], [1, PADDING_COLOUR]],
        hoverinfo="skip",
        **axes,
    )


@figure_memo
def receptive_field_figure(closeup: Closeup, style: Style, title: str) -> go.Figure:
    """Input cells around one output's receptive field (true input coordinates, padding included),
    values written on the cells, the taps outlined (orange; dashed in the padding), mirrored
    padding linked to the cell it copies, and a cyan frame: the dotted cyan box on the input image.
    A picked input cell is outlined red (the reverse direction's colour)."""
    win, weights, picked = closeup.window, closeup.weights, closeup.picked
    rows, cols, values, inside = win.rows, win.cols, win.values, win.inside
    source_rows, source_cols = win.source_rows, win.source_cols
    tap_rows, tap_cols = closeup.taps.rows, closeup.taps.cols
    h, w = values.shape
    padding = ~inside & np.isfinite(values)
    KH, KW = tap_rows.shape
    tap_at = {(int(tap_rows[i, j]), int(tap_cols[i, j])): (i, j) for i in range(KH) for j in range(KW)}
    notes = np.empty((h, w), dtype=object)
    for a in range(h):
        for b in range(w):
            r, c = int(rows[a]), int(cols[b])
            what = "input cell" if inside[a, b] else "beyond the padding"
            if padding[a, b]:
                sr, sc = int(source_rows[a, b]), int(source_cols[a, b])
                what = f"padding: copy of input ({sr}, {sc})" if sr >= 0 else "padding: zero"
            if (r, c) in tap_at:
                i, j = tap_at[(r, c)]
                what += f"<br>tap ({i}, {j}), weight {float(weights[i, j]):.4g}"
            notes[a, b] = what
    grid = value_grid(values, style, origin=(int(rows[0]), int(cols[0])), look=PIXEL_GRID)
    grid.update(
        customdata=notes,
        hovertemplate="input row %{y}, col %{x}<br>value %{z:.4f}<br>%{customdata}<extra></extra>",
    )
    traces: list = [grid, _padding_wash(padding, rows, cols)]
    taps = np.stack([tap_rows.ravel(), tap_cols.ravel()], axis=1)
    a, b = taps[:, 0] - rows[0], taps[:, 1] - cols[0]
    seen = (a >= 0) & (a < h) & (b >= 0) & (b < w)
    tap_inside = np.zeros(len(taps), bool)
    tap_inside[seen] = inside[a[seen], b[seen]]
    shapes = box((rows[0], rows[-1] + 1, cols[0], cols[-1] + 1), style, "zoom", DOTTED_BOX)
    shapes += highlight(taps[tap_inside], style, "taps", union=False)
    shapes += highlight(taps[~tap_inside], style, "padding-taps", DASHED, union=False)
    meta = _meta(taps=taps[tap_inside], padding_taps=taps[~tap_inside])
    mirrored = ~tap_inside & seen
    mirrored[seen] &= source_rows[a[seen], b[seen]] >= 0
    arrows = []
    if mirrored.any():  # an arrow from each mirrored tap to the real cell it copies (few: else hover)
        src = np.stack([source_rows[a[mirrored], b[mirrored]], source_cols[a[mirrored], b[mirrored]]], axis=1)
        meta.update(_meta(mirror_sources=src))
        arrows = [
            dict(
                x=int(sc),
                y=int(sr),
                ax=int(tc),
                ay=int(tr),
                xref="x",
                yref="y",
                axref="x",
                ayref="y",
                showarrow=True,
                arrowhead=2,
                arrowsize=1.2,
                arrowwidth=max(1.5, style.line / 2),
                arrowcolor=MIRROR,
                standoff=4,
                startstandoff=4,
                text="",
            )
            for (tr, tc), (sr, sc) in zip(taps[mirrored], src, strict=True)
        ]
        arrows = arrows if len(arrows) <= MAX_ARROWS else []
    if picked is not None:
        shapes += highlight([picked], style, "pick", Pen(READER, width=style.line + 1), union=False)
        meta["pick"] = [list(picked)]
    layout = _layout(
        title,
        "input column (outside the image: padding)",
        "input row",
        _grid_height(h, w),
        style,
        shapes=shapes,
        meta=meta,
        annotations=arrows,
    )
    layout["margin"] = _grid_margins(style, title)
    return go.Figure(traces, _merge(layout, **_square(rows.tolist(), cols.tolist(), style)))


@figure_memo
def weights_figure(
    kernel: np.ndarray, style: Style, title: str, reads: np.ndarray | None = None
) -> go.Figure:
    """The kernel as a labelled grid of weights (diverging colours centred at 0 when they have
    both signs, sequential from 0 otherwise); reads: (KH, KW) text of the cell each tap reads."""
    KH, KW = kernel.shape
    width = min(GRID_WIDTH, 60 * KW + 160)
    integral = bool(np.all(kernel == np.round(kernel)))
    # one width for every label, so the size chosen fits them all
    grid = value_grid(
        kernel.astype(np.float64), style, look=GridLook("weight", ".0f" if integral else ".3f", width)
    )
    hover = "tap (%{y}, %{x})<br>weight %{z:.4g}"
    if reads is not None:
        grid.update(customdata=reads)
        hover += "<br>reads %{customdata}"
    grid.update(hovertemplate=hover + "<extra></extra>", showscale=True, colorbar=dict(thickness=12, len=0.9))
    cell = min(46, max(18, 320 // max(KH, KW)))
    layout = _layout(title, "kernel column kj", "kernel row ki", KH * cell + 120, style)
    layout["margin"] = {**_grid_margins(style, title), "r": 90}  # the colour bar, clear of the mode bar
    return go.Figure([grid], _merge(layout, **_square(list(range(KH)), list(range(KW)), style, width)))


# ---- the sliding window ---------------------------------------------------------------------------------
class FramedFigure(go.Figure):
    """A figure whose animation frames (and the slider that steps through them) are kept as plain,
    JSON-ready dicts: building hundreds of validated frames and slider steps costs ~1 ms each, too
    much for a rerun after every click. Streamlit and to_html read to_dict(), which adds them."""

    def __init__(
        self, *args: Any, raw_frames: list[dict] | None = None, raw_layout: dict | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self._raw_frames = raw_frames or []
        self._raw_layout = raw_layout or {}

    def to_dict(self) -> dict:
        out = super().to_dict()
        out["frames"] = self._raw_frames
        out["layout"] = {**out.get("layout", {}), **self._raw_layout}
        return out

    def to_plotly_json(self) -> dict:
        return self.to_dict()


def _tap_squares(rows: np.ndarray, cols: np.ndarray) -> tuple[list, list]:
    """x, y of one square per tap (None between them): a dilated window's taps do not touch."""
    xs: list = []
    ys: list = []
    for r, c in zip(rows.ravel().tolist(), cols.ravel().tolist(), strict=True):
        xs += [c - 0.5, c + 0.5, c + 0.5, c - 0.5, c - 0.5, None]
        ys += [r - 0.5, r - 0.5, r + 0.5, r + 0.5, r - 0.5, None]
    return xs, ys


def _cover(i: int, out_rows: Sequence[int], out_cols: Sequence[int]) -> tuple[list, list]:
    """The outputs after step i in raster order (not computed yet), as one polygon."""
    R1, C0, C1 = out_rows[-1], out_cols[0], out_cols[-1]
    a, b = divmod(i, len(out_cols))
    r, c = out_rows[a], out_cols[b]
    if r == R1 and c == C1:
        return [], []
    xs = [c + 0.5, C1 + 0.5, C1 + 0.5, C0 - 0.5, C0 - 0.5, c + 0.5, c + 0.5]
    ys = [r - 0.5, r - 0.5, R1 + 0.5, R1 + 0.5, r + 0.5, r + 0.5, r - 0.5]
    return xs, ys


def _box(r0: float, r1: float, c0: float, c1: float) -> tuple[list, list]:
    """x, y of the outline of cells r0..r1 x c0..c1 (inclusive)."""
    top, bottom, left, right = r0 - 0.5, r1 + 0.5, c0 - 0.5, c1 + 0.5
    return [left, right, right, left, left], [top, top, bottom, bottom, top]


def panel_split(in_cols: int, out_cols: int, gap: float) -> float:
    """Where the input panel ends (a fraction of the width): shared in proportion to the cells
    across, but neither panel below MIN_PANEL (a few outputs of a large dilated window would
    otherwise get ~30 px, their title cut)."""
    raw = (1 - gap) * in_cols / max(1, in_cols + out_cols)
    return min(max(raw, MIN_PANEL), 1 - gap - MIN_PANEL)


def window_step_label(oh: int, ow: int) -> str:
    """The sliding window's step (and frame) name for output (oh, ow): "oh,ow"."""
    return f"{oh},{ow}"


def window_step_output(label: str) -> tuple[int, int] | None:
    """The output a step label of the sliding window names (None: not such a label). A stopped
    animation reports its step by this name: an index would depend on the crop, which moves with
    the pick, so a second report read against the next run's crop would name another output."""
    found = re.fullmatch(r"(\d+),(\d+)", label)
    return (int(found[1]), int(found[2])) if found else None


@figure_memo
def sliding_window_figure(sweep: Sweep, style: Style, title: str, *, ms: int = 350) -> FramedFigure:
    """The window moving over a region of the input (left), the output filling in (right), one
    frame per output in raster order, played in the browser (Play / Pause / a step slider), ms
    per step; Play starts at sweep.start (the pick)."""
    win, out_rows, out_cols, out_values = sweep.window, sweep.out_rows, sweep.out_cols, sweep.out_values
    in_rows, in_cols, in_values = win.rows, win.cols, win.values
    in_padding = ~win.inside & np.isfinite(win.values)
    tap_rows, tap_cols, sums, start, terms = (
        sweep.tap_rows,
        sweep.tap_cols,
        sweep.sums,
        sweep.start,
        sweep.terms,
    )
    n, nr, nc = len(sums), len(out_rows), len(out_cols)
    ni, nj = len(in_rows), len(in_cols)
    gap = 0.08
    split = panel_split(nj, nc, gap)
    in_look = GridLook(fmt=".2f", width_px=int(2 * GRID_WIDTH * split), scale=PIXEL_SCALE)
    in_grid = value_grid(in_values, style, origin=(int(in_rows[0]), int(in_cols[0])), look=in_look)
    in_grid.update(hovertemplate="input row %{y}, col %{x}<br>value %{z:.4f}<extra></extra>")
    out_look = GridLook("output", ".2f", int(2 * GRID_WIDTH * (1 - gap - split)), kind=sweep.out_kind)
    out_grid = value_grid(out_values, style, origin=(int(out_rows[0]), int(out_cols[0])), look=out_look)
    out_grid.update(
        hovertemplate="output row %{y}, col %{x}<br>value %{z:.4f}<extra></extra>", xaxis="x2", yaxis="y2"
    )
    KH, KW = tap_rows.shape[1:]
    touching = KH * KW == 1 or bool(
        np.all(np.diff(tap_rows[0], axis=0) == 1) and np.all(np.diff(tap_cols[0], axis=1) == 1)
    )

    # per-frame values as Python numbers, once: formatting or indexing NumPy scalars frame by frame
    # costs more than the rest of the figure (up to 256 frames, on every rerun)
    o_rows, o_cols, sum_list = out_rows.tolist(), out_cols.tolist(), sums.tolist()
    if touching:  # each window's bounding box, all frames at once
        boxes = np.stack(
            [
                tap_rows.min(axis=(1, 2)),
                tap_rows.max(axis=(1, 2)),
                tap_cols.min(axis=(1, 2)),
                tap_cols.max(axis=(1, 2)),
            ],
            axis=1,
        ).tolist()

    def dynamic(i: int) -> list[dict]:
        if touching:
            wx, wy = _box(*boxes[i])
        else:
            wx, wy = _tap_squares(tap_rows[i], tap_cols[i])
        cx, cy = _cover(i, o_rows, o_cols)
        r, c = o_rows[i // nc], o_cols[i % nc]
        px, py = _box(r, r, c, c)
        return [
            dict(type="scatter", x=wx, y=wy),
            dict(type="scatter", x=wx, y=wy),
            dict(type="scatter", x=cx, y=cy),
            dict(type="scatter", x=px, y=py),
            dict(type="scatter", x=px, y=py),
        ]

    first = dynamic(start)
    common = dict(mode="lines", hoverinfo="skip", showlegend=False)
    line, halo = dict(color=HIGHLIGHT, width=style.line), dict(color=HALO, width=style.line + 3)
    on_out = dict(xaxis="x2", yaxis="y2")
    traces = [
        in_grid,
        _padding_wash(in_padding, in_rows, in_cols),
        out_grid,
        go.Scatter(x=first[0]["x"], y=first[0]["y"], line=halo, **common),
        go.Scatter(x=first[1]["x"], y=first[1]["y"], line=line, **common),
        go.Scatter(
            x=first[2]["x"],
            y=first[2]["y"],
            fill="toself",
            fillcolor=COVER,
            line=dict(width=0),
            **common,
            **on_out,
        ),
        go.Scatter(x=first[3]["x"], y=first[3]["y"], line=halo, **common, **on_out),
        go.Scatter(x=first[4]["x"], y=first[4]["y"], line=line, **common, **on_out),
    ]

    def caption(i: int) -> str:
        r, c = o_rows[i // nc], o_cols[i % nc]
        return f"{title}<br>output ({r}, {c}) = sum of {terms} products = <b>{sum_list[i]:.4f}</b>"

    labels = [window_step_label(o_rows[i // nc], o_cols[i % nc]) for i in range(n)]
    frames = [
        dict(
            name=labels[i],
            data=dynamic(i),
            traces=list(range(3, 8)),
            layout=dict(title=dict(text=caption(i))),
        )
        for i in range(n)
    ]
    how = animation.Controls(
        prefix="output ",
        ms=ms,
        slider_x=0.25,
        active=start,
        buttons_pad=style.font + 34,
        slider_pad=style.font + 22,
        step_labels=False,
        current_right=True,
    )
    controls = animation.controls(labels, style, how)
    in_px, out_px = 2 * GRID_WIDTH * split, 2 * GRID_WIDTH * (1 - gap - split)
    height = int(max(in_px * ni / nj, out_px * nr / nc)) + 200
    layout = _layout(caption(start), "input column", "input row", height, style)
    layout["margin"] = dict(l=70, r=30, t=2 * style.title + 60, b=style.font * 3 + 90)
    left = _square(in_rows.tolist(), in_cols.tolist(), style, int(2 * GRID_WIDTH * split))
    right = _square(out_rows.tolist(), out_cols.tolist(), style, int(2 * GRID_WIDTH * (1 - gap - split)))
    layout = _merge(
        layout, xaxis={**left["xaxis"], "domain": [0, split]}, yaxis={**left["yaxis"], "anchor": "x"}
    )
    layout["xaxis2"] = {
        **right["xaxis"],
        **_axis("output column", style),
        "domain": [split + gap, 1],
        "anchor": "y2",
    }
    layout["yaxis2"] = {**right["yaxis"], **_axis("output row", style), "anchor": "x2", "scaleanchor": "x2"}
    layout["annotations"] = [
        dict(
            text=text,
            x=x,
            y=1,
            xref="paper",
            yref="paper",
            xanchor="left",
            yanchor="bottom",
            showarrow=False,
            font=dict(size=style.font),
        )
        for text, x in (("Input: the window (orange)", 0), ("Output (grey: not yet)", split + gap))
    ]
    return FramedFigure(traces, layout, raw_frames=frames, raw_layout=controls)


# ---- which block and thread computed it --------------------------------------------------------------------
def _bbox(cells: np.ndarray, margin: int, rows: int, cols: int) -> tuple[int, int, int, int]:
    return (
        max(0, int(cells[:, 0].min()) - margin),
        min(rows, int(cells[:, 0].max()) + margin + 1),
        max(0, int(cells[:, 1].min()) - margin),
        min(cols, int(cells[:, 1].max()) + margin + 1),
    )


@figure_memo
def thread_figure(
    out_pixels: np.ndarray, work: ThreadPixels, picked: tuple[int, int], style: Style, title: str
) -> go.Figure:
    """The output around one block's pixels: the block's pixels (cyan outline), the thread's
    pixels (orange, each outlined) and the pick (thick orange)."""
    block_pixels, thread_pixels = work.block_pixels, work.thread_pixels
    H, W = out_pixels.shape[:2]
    cells = np.concatenate([_as_cells(block_pixels), _as_cells(thread_pixels), _as_cells([picked])])
    r0, r1, c0, c1 = _bbox(cells, 4, H, W)
    # some context around a thin block: at least 24 columns, and rows a third of the columns (a
    # 256-pixel row of im2col's unfold was drawn 9 rows high: a squashed strip)
    grow_c = max(0, 24 - (c1 - c0)) // 2
    grow_r = max(0, max(12, (c1 - c0 + 2 * grow_c) // MIN_ROWS_PER_COLUMN) - (r1 - r0)) // 2
    r0, r1, c0, c1 = max(0, r0 - grow_r), min(H, r1 + grow_r), max(0, c0 - grow_c), min(W, c1 + grow_c)
    shapes = highlight(block_pixels, style, "block", Pen(SECOND))
    shapes += highlight(thread_pixels, style, "thread", Pen(width=max(2, style.line - 1)), union=False)
    shapes += highlight([picked], style, "pick")
    trace = _image(out_pixels[r0:r1, c0:c1], c0, r0, hover="output row %{y}, col %{x}<extra></extra>")
    layout = _image_layout(
        title,
        "output",
        style,
        (r0, r1, c0, c1),
        width=IMAGE_WIDTH + 100,
        shapes=shapes,
        meta=_meta(block=block_pixels, thread=thread_pixels, pick=[picked]),
    )
    return go.Figure([trace], layout)


@figure_memo
def shared_tile_figure(
    win: Window, tile: tuple[int, int, int, int], taps: np.ndarray, style: Style, title: str
) -> go.Figure:
    """The input around a block's shared-memory tile (r0, r1, c0, c1: tile + halo, cyan), the
    cells the thread's taps read (orange), padding washed blue."""
    rows, cols, values, inside = win.rows, win.cols, win.values, win.inside
    padding = ~inside & np.isfinite(values)
    grid = value_grid(values, style, origin=(int(rows[0]), int(cols[0])), look=PIXEL_GRID)
    grid.update(hovertemplate="input row %{y}, col %{x}<br>value %{z:.4f}<extra></extra>")
    t0, t1, u0, u1 = tile
    shapes = box(tile, style, "tile", Pen(SECOND, fill="rgba(23,190,207,0.12)"))
    shapes += highlight(taps, style, "taps", Pen(width=max(2, style.line - 1)), union=False)
    layout = _layout(
        title,
        "input column",
        "input row",
        _grid_height(len(rows), len(cols)),
        style,
        shapes=shapes,
        meta=_meta(taps=taps, tile=[[t0, u0], [t1 - 1, u1 - 1]]),
    )
    layout["margin"] = _grid_margins(style, title)
    axes = _square(rows.tolist(), cols.tolist(), style)
    return go.Figure([grid, _padding_wash(padding, rows, cols)], _merge(layout, **axes))


# ---- runtimes -------------------------------------------------------------------------------------------
def runtime_figure(
    names: Sequence[str], ms: Sequence[float], ran: str, style: Style, title: str
) -> go.Figure:
    """Median runtimes on a linear axis, fastest first; the algorithm that produced the page's
    output is orange, the others blue; the title names the fastest."""
    order = sorted(range(len(ms)), key=lambda i: ms[i])
    names = [names[i] for i in order]
    ms = [ms[i] for i in order]
    bars = go.Bar(
        x=ms,
        y=names,
        orientation="h",
        text=[f"{v:.2f} ms" for v in ms],
        textposition="auto",
        marker_color=[HIGHLIGHT if n == ran else "#1f77b4" for n in names],
        hovertemplate="%{y}: %{x:.3f} ms<extra></extra>",
    )
    layout = _layout(
        f"{title}<br>fastest: {names[0]} ({ms[0]:.2f} ms); orange: the one that ran above",
        "median runtime (ms, linear axis)",
        "",
        150 + 46 * len(ms),
        style,
    )
    layout["margin"]["l"] = 30 + style.tick * max(len(n) for n in names) * 6 // 10
    return go.Figure([bars], _merge(layout, yaxis=dict(autorange="reversed"), xaxis=dict(rangemode="tozero")))


__all__ = [
    "Closeup",
    "FramedFigure",
    "ImageMarks",
    "Sweep",
    "cell_edges",
    "cells_path",
    "highlight",
    "input_figure",
    "output_figure",
    "receptive_field_figure",
    "runtime_figure",
    "shared_tile_figure",
    "sliding_window_figure",
    "thread_figure",
    "weights_figure",
]
