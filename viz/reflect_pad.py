"""Figures of the Reflect padding page: the small labelled grid (input and padded side by side, one
colour per input cell), the padded image, and the same blur with zeros and reflect padding.

Arrays and a Style in, go.Figure (or formula text) out; no Streamlit, no kernels.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from gpuops.maps.reflect_pad import AxisSource, PixelPick
from viz.cells import GridLook, identity_grid
from viz.images import image_trace
from viz.memo import figure_memo
from viz.style import HIGHLIGHT, NORMAL, READER, SECOND, Pen, Style, cell_colours, finish, label_size, outline

ORIGINAL_LINE = "#111111"  # the original grid inside the padded one
Cells = Iterable[tuple[str, int, int]]  # (panel "x" input / "x2" padded, row, col)
# the least plotting width (px) each figure gets at 1280 px with the sidebar open, per style: labels
# sized for it always fit; the padded image also keeps to a height (plot width, max height)
GRID_WIDTH = {"normal": 360, "presentation": 680}
IMAGE_FIT = {"normal": (250, 420), "presentation": (680, 520)}
BLUR_FIT = (680, 380)


@dataclass(frozen=True)
class GridMarks:
    """The grid's pick: picked (panel, row, col), outlined orange, and the cells it maps to
    (mapped), outlined in `colour`."""

    picked: tuple[str, int, int] | None = None
    mapped: tuple[tuple[str, int, int], ...] = ()
    colour: str = HIGHLIGHT


# ---- one colour per input cell, neighbours clearly apart --------------------------------------------
def _lab(hex_colour: str) -> np.ndarray:
    """CIE L*a*b* of an sRGB colour (D65), to measure how different two colours look."""
    rgb = np.array([int(hex_colour[k : k + 2], 16) / 255 for k in (1, 3, 5)])
    lin = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ lin
    xyz /= np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def neighbour_contrast(ids: np.ndarray, n_cells: int) -> float:
    """The smallest colour difference (CIE76 delta E) between two input cells that touch
    (side or corner), with colours from viz.style.cell_colours by id."""
    lab = np.array([_lab(c) for c in cell_colours(n_cells)])
    H, W = ids.shape
    worst = np.inf
    for dy, dx in ((0, 1), (1, 0), (1, 1), (1, -1)):
        x0, x1 = max(0, -dx), W - max(0, dx)
        a, b = ids[: H - dy, x0:x1], ids[dy:, x0 + dx : x1 + dx]
        if a.size:
            worst = min(worst, float(np.linalg.norm(lab[a] - lab[b], axis=-1).min()))
    return worst if np.isfinite(worst) else 100.0


@functools.lru_cache(maxsize=64)
def source_ids(H: int, W: int) -> tuple[np.ndarray, int]:
    """Colour ids of the input cells, (H, W), and how many colours of viz.style.cell_colours
    they draw from: one colour per cell (the ids differ), and cells that touch (side or corner)
    as different as the palette allows.

    Row by row, each cell takes the unused colour farthest (CIE76 delta E) from its neighbours
    already coloured. Numbering the cells y * W + x instead leaves, for some widths, a cell
    nearly the colour of the cell below it (delta E ~10 at W = 7 or 8; ~40 this way)."""
    n = max(4 * H * W, 8)
    lab = np.array([_lab(c) for c in cell_colours(n)])
    distance = np.linalg.norm(lab[:, None, :] - lab[None, :, :], axis=-1)
    ids = np.full((H, W), -1, dtype=np.int64)
    free = np.ones(n, dtype=bool)
    for y in range(H):
        for x in range(W):
            near = [
                ids[y + dy, x + dx]
                for dy, dx in ((0, -1), (-1, -1), (-1, 0), (-1, 1))
                if y + dy >= 0 and 0 <= x + dx < W
            ]
            score = distance[near].min(axis=0) if near else np.full(n, 100.0)
            k = int(np.argmax(np.where(free, score, -1.0)))
            ids[y, x], free[k] = k, False
    ids.setflags(write=False)
    return ids, int(ids.max()) + 1


# ---- the small grid ---------------------------------------------------------------------------------
def _pair_labels(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    return np.char.add(np.char.add(rows.astype(str), ","), cols.astype(str))


def _tick_step(cell_px: float, style: Style) -> int:
    """Label every axis cell when two-digit ticks fit, else every 2nd or 5th."""
    for step in (1, 2, 5):
        if cell_px * step >= 1.5 * style.tick:
            return step
    return 10


def _panel_titles(fig: go.Figure, titles: Sequence[str], style: Style) -> None:
    """A title over each panel, centred on the panel as drawn (its axis domain after the square
    cells have narrowed it), not on the space the panel was given."""
    for k, text in enumerate(titles, start=1):
        ref = "" if k == 1 else str(k)
        fig.add_annotation(
            text=text,
            xref=f"x{ref} domain",
            yref=f"y{ref} domain",
            x=0.5,
            y=1,
            yanchor="bottom",
            yshift=4,
            showarrow=False,
            font=dict(size=style.font),
        )


def _margins(style: Style, title_lines: int = 1, subplot_titles: bool = False) -> dict:
    """Margins that fit the text of this style, no more: the lesson must fit a laptop screen."""
    top = int(1.5 * style.title * title_lines + (1.6 * style.font if subplot_titles else 0) + 14)
    return dict(
        l=int(style.tick * 1.4 + style.font * 1.3 + 14),
        r=40,
        t=top,
        b=int(style.tick + style.font * 1.4 + 24),
    )


@figure_memo
def grid_figure(
    source: tuple[np.ndarray, np.ndarray], pads: tuple[int, int, int, int], style: Style, marks: GridMarks
) -> go.Figure:
    """The input grid (panel x) and the padded grid (panel x2), every cell coloured by the input
    cell it holds and labelled with that cell's (row, col): same colour = same source.

    source: the padded grid's source map (rows, cols), each (H_out, W_out); pads (left, right,
    top, bottom). Axes carry the true indices: input (y, x) on the left, padded (row, col) on
    the right. Cells, labels and height are sized for the least width (px) the two panels get
    in this style (a wider column leaves the cells square and as sized: the height decides)."""
    rows, cols = source
    left, right, top, bottom = pads
    H_out, W_out = rows.shape
    H, W = H_out - top - bottom, W_out - left - right
    picked, mapped, mapped_colour = marks.picked, marks.mapped, marks.colour
    plot_width = GRID_WIDTH[style.name]
    ids, n = source_ids(H, W)
    gap_px = 1.5 * style.tick + 16  # between the panels: the padded panel's row numbers sit there
    cell_px = min(2.8 * style.font, (plot_width - gap_px) / (W + W_out))
    fig = make_subplots(rows=1, cols=2, column_widths=[W, W_out], horizontal_spacing=gap_px / plot_width)
    panels = [
        (ids, _pair_labels(*np.mgrid[0:H, 0:W]), "input row %{y}, col %{x}<br>input cell (%{text})"),
        (
            ids[rows, cols],
            _pair_labels(rows, cols),
            "padded row %{y}, col %{x}<br>copies input cell (%{text})",
        ),
    ]
    for k, (grid_ids, labels, hover) in enumerate(panels, start=1):
        w = grid_ids.shape[1]
        look = GridLook(n_cells=n, width_px=int(cell_px * w))
        trace = identity_grid(grid_ids, np.zeros(grid_ids.shape), style, look=look)
        labelled = label_size(w, int(cell_px * w), style) is not None
        trace.update(
            text=labels, texttemplate="%{text}" if labelled else None, hovertemplate=hover + "<extra></extra>"
        )
        fig.add_trace(trace, row=1, col=k)
    finish(fig, "Same colour = same source", ("column", "row"), 300, style)
    _panel_titles(fig, (f"input {W} x {H}", f"padded {W_out} x {H_out}"), style)
    margin = _margins(style, subplot_titles=True)
    fig.update_layout(margin=margin, height=int(H_out * cell_px + margin["t"] + margin["b"] + 4))
    step = _tick_step(cell_px, style)
    fig.update_xaxes(dtick=step, showgrid=False, zeroline=False, constrain="domain")
    fig.update_yaxes(
        dtick=step,
        showgrid=False,
        zeroline=False,
        autorange="reversed",
        constrain="domain",
        constraintoward="top",
    )
    fig.update_layout(
        xaxis_constraintoward="right",
        xaxis2_constraintoward="left",  # the panels side by side
        xaxis_title_text="column",
        yaxis_title_text="row",
        xaxis2_title_text="column",
        yaxis2_title_text="",
        yaxis_scaleanchor="x",
        yaxis2_scaleanchor="x2",
    )
    shapes = outline((top, left), style, Pen(ORIGINAL_LINE, panel="x2"), size=(H, W))
    for panel, r, c in [*mapped, *([picked] if picked else [])]:
        colour = HIGHLIGHT if (panel, r, c) == picked else mapped_colour
        shapes += outline((r, c), style, Pen(colour, panel=panel))
    fig.update_layout(shapes=shapes)
    return fig


# ---- the formula, filled in -------------------------------------------------------------------------
def _n(v: int) -> str:
    return f"({v})" if v < 0 else str(v)


def formula_latex(axis: AxisSource, name: str, pad_name: str, size_name: str) -> str:
    """i = o - p, then |i| - |i - (S-1)| - i + (S-1) with the numbers of one axis filled in
    (three short lines: they fit half a laptop screen)."""
    a, b, minus_i, s1 = axis.terms
    i = axis.i
    return (
        r"\small\begin{aligned}"
        rf"i &= o - p_{{\mathrm{{{pad_name}}}}} = {axis.o} - {axis.pad} = {i} \\"
        rf"{name}_{{in}} &= |i| - |i - ({size_name}-1)| - i + ({size_name}-1) \\"
        rf"&= |{i}| - |{i} - {axis.size - 1}| - {_n(i)} + {s1} = {a} - {b} + {_n(minus_i)} + {s1} = "
        rf"{axis.source}"
        r"\end{aligned}"
    )


def copies_latex(name: str, coordinate: int, copies: Sequence[int]) -> str:
    """The padded coordinates along one axis that copy input coordinate `coordinate`."""
    return rf"{name} = {coordinate}: \quad o_{name} \in \{{{', '.join(str(int(c)) for c in copies)}\}}"


# ---- the padded image and the blur ------------------------------------------------------------------
@figure_memo
def padded_image_figure(
    pixels: np.ndarray, pads: tuple[int, int, int, int], style: Style, picked: PixelPick | None = None
) -> go.Figure:
    """The reflect-padded image in padded coordinates, the original image boxed (cyan); a picked
    pixel and its source (orange) and every other padded pixel that copies the source (red)."""
    left, right, top, bottom = pads
    Hp, Wp = pixels.shape[:2]
    H, W = Hp - top - bottom, Wp - left - right
    plot_width, max_height = IMAGE_FIT[style.name]
    cell, source = (picked.cell, picked.source_at) if picked else (None, None)
    copies = picked.copies if picked else ()
    fig = go.Figure(image_trace(pixels))
    fig.data[0].hovertemplate = "padded row %{y}, col %{x}<extra></extra>"
    shapes = outline((top, left), style, Pen(SECOND), size=(H, W))
    for r, c in copies:
        if (r, c) != cell and (r, c) != source:
            shapes += outline((r, c), style, Pen(READER))
    for marked in (source, cell):
        if marked is not None:
            shapes += outline(marked, style, Pen(HIGHLIGHT))
    finish(fig, f"Padded by {top}: {Wp} x {Hp}", ("padded column", "padded row"), 300, style)
    margin = _margins(style)
    plot_h = min(max_height, plot_width * Hp / max(Wp, 1))
    fig.update_layout(shapes=shapes, margin=margin, height=int(plot_h + margin["t"] + margin["b"]))
    fig.update_yaxes(autorange="reversed", scaleanchor="x", constrain="domain", constraintoward="top")
    fig.update_xaxes(constrain="domain", range=[-0.5, Wp - 0.5])
    return fig


@figure_memo
def blur_figure(zeros: np.ndarray, reflect: np.ndarray, k: int, style: Style = NORMAL) -> go.Figure:
    """The same k x k box blur with padding_mode 'zeros' and 'reflect', side by side; zooming
    one panel zooms both (matched axes), so the borders can be compared up close."""
    plot_width, max_height = BLUR_FIT
    H, W = zeros.shape[:2]
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.06)
    for col, pixels in ((1, zeros), (2, reflect)):
        trace = image_trace(pixels)
        trace.hovertemplate = "row %{y}, col %{x}<extra></extra>"
        fig.add_trace(trace, row=1, col=col)
    finish(fig, f"The same {k} x {k} box blur, padding {k // 2}", ("column", "row"), 300, style)
    _panel_titles(fig, ("padding_mode = 'zeros'", "padding_mode = 'reflect'"), style)
    margin = _margins(style, subplot_titles=True)
    plot_h = min(max_height, 0.47 * plot_width * H / max(W, 1))
    fig.update_layout(margin=margin, height=int(plot_h + margin["t"] + margin["b"]))
    fig.update_yaxes(autorange="reversed", constrain="domain", constraintoward="top")
    fig.update_xaxes(constrain="domain")
    fig.update_layout(
        yaxis_scaleanchor="x",
        yaxis2_scaleanchor="x2",
        xaxis2_matches="x",
        yaxis2_matches="y",
        xaxis_constraintoward="right",
        xaxis2_constraintoward="left",
    )
    return fig
