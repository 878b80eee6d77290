"""One look for every figure: text sizes per mode, one colour policy, highlights that stand out.

Two modes (the sidebar's "Presentation mode", kept in the URL):
  NORMAL        ticks >= 14 px, titles >= 16 px, cell labels >= 12 px or hidden
  PRESENTATION  all figure text >= 20 px, cell labels >= 14 px or hidden, thicker highlights
Colour policy (`scale_for`: the KIND of data decides, never the values that happen to be there):
  - IMAGE (pixel values, patches and X_unroll of an image): a sequential scale fixed to [0, 1], so a
    0.78 region has one colour in every figure of the app;
  - SIGNED (weights, gradients, outputs of a kernel with a negative weight): a diverging scale
    centred at 0, symmetric, so the sign reads as a change of hue and 0 as white, also when every
    value happens to have one sign (a one-signed dY keeps its palette);
  - COUNT (how many windows or stamps land on a cell): sequential from 0 to the largest count;
  - identity, not value: one colour per input cell wherever that cell appears (the input grid,
    X_unroll, patches, the padded grid), from `cell_colours`, with the value written on top;
  - highlights: a bright outline over a dark halo, readable on any image. The pick and the taps it
    reads are orange, the reverse direction red, regions cyan, and the browser's hover outline
    magenta (HOVER), so a hover never looks like a pick.
Sizes are written W x H (width first, as "1920 x 1080"), in every title and caption.
"""

from __future__ import annotations

import colorsys
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

HIGHLIGHT = "#ff7f0e"  # orange: the picked cell, and what it maps to
HOVER = "#ff00ff"  # magenta: the browser's hover outlines, unlike any pick, tap or region colour
HALO = "#111111"  # drawn under every highlight so it stands out on light and dark pixels alike
SECOND = "#17becf"  # cyan: a tile, a patch, the original region
READER = "#d62728"  # red: the reverse direction (outputs that read the picked input cell)
PADDING_COLOUR = "rgba(120,140,220,0.55)"  # blue-grey wash over padding cells
SEQUENTIAL = "Viridis"
DIVERGING = "RdBu_r"  # negative blue, 0 white, positive red


@dataclass(frozen=True)
class Style:
    """Text sizes (px) and line widths of one display mode."""

    name: str
    font: int  # axis titles, legends, annotations
    title: int
    tick: int
    label: int  # smallest cell label; smaller cells get no labels
    line: int  # highlight outline width
    height_scale: float  # figures grow with their text

    @property
    def presentation(self) -> bool:
        return self.name == "presentation"

    def outline_style(self) -> dict[str, Any]:
        """The bridge's hover outlines in this style."""
        return {"color": HOVER, "halo": HALO, "width": self.line}


NORMAL = Style("normal", font=15, title=17, tick=14, label=12, line=3, height_scale=1.0)
PRESENTATION = Style("presentation", font=21, title=24, tick=20, label=14, line=5, height_scale=1.25)


@dataclass(frozen=True)
class Pen:
    """How an outline is drawn: its colour, dash and width (None: the style's), the fill inside it,
    and the subplot it is drawn on ("x", "x2", ...: its x axis; the y axis has the same number)."""

    colour: str = HIGHLIGHT
    dash: str = "solid"
    width: int | None = None
    fill: str | None = None
    panel: str = "x"

    @property
    def yref(self) -> str:
        return "y" + self.panel[1:]


PEN = Pen()


def style_for(presentation: bool) -> Style:
    return PRESENTATION if presentation else NORMAL


def axis_text(title: str, style: Style = NORMAL) -> dict:
    """An axis title and tick labels at the style's sizes."""
    return dict(title=dict(text=title, font=dict(size=style.font)), tickfont=dict(size=style.tick))


def title_layout(title: str, style: Style, y: float = 0.98) -> dict:
    """A figure title at the top left, every line of it inside the figure. Plotly centres the
    lines of a title on where its first line would sit, so a two-line title anchored at the top
    pokes out above the figure by half a line (its first line was cut): pad.t moves it down by
    that much (LINE_SPACING 1.3 em: 0.65 em per extra line, and a few px of the glyphs' ascent)."""
    extra = title.count("<br>")
    return dict(
        text=title,
        font=dict(size=style.title),
        x=0,
        xanchor="left",
        y=y,
        yanchor="top",
        pad=dict(t=round((0.65 * style.title + 4) * extra)),
    )


def base_layout(title: str, height: int, style: Style = NORMAL) -> dict:
    """The figure-level settings every figure shares, as one dict: title, fonts, height, margins,
    and the mode bar vertical on the right, where it never covers the title. Figures built from
    dicts take it whole (one validation instead of `finish`'s property-by-property updates)."""
    return dict(
        title=title_layout(title, style),
        font=dict(size=style.font),
        height=int(height * style.height_scale),
        margin=dict(
            l=70, r=40, t=60 + 2 * style.title + (style.title if "<br>" in title else 0), b=60 + style.font
        ),
        modebar=dict(orientation="v"),
        hoverlabel=dict(font_size=style.font),
        legend=dict(font=dict(size=style.font)),  # the app's theme would shrink legends
    )  # no template: building one per figure costs ~30 ms, and Streamlit applies its own theme


def finish(
    fig: go.Figure, title: str, axes: tuple[str, str], height: int, style: Style = NORMAL
) -> go.Figure:
    """base_layout, and every axis's title and tick labels at the style's sizes; axes: the x and
    y axis titles."""
    x_title, y_title = axes
    fig.update_layout(**base_layout(title, height, style))
    fig.update_xaxes(**axis_text(x_title, style))
    fig.update_yaxes(**axis_text(y_title, style))
    fig.update_annotations(font_size=style.font)
    return fig


IMAGE, SIGNED, COUNT = "image", "signed", "count"  # the kinds of data a figure colours
KINDS = (IMAGE, SIGNED, COUNT)


def scale_for(kind: str, values: np.ndarray | None = None) -> dict[str, Any]:
    """Colour scale arguments (colorscale, zmin, zmax, and zmid for signed data) of a heatmap that
    shows data of `kind`: IMAGE fixed to [0, 1]; SIGNED diverging, symmetric about 0 (the largest
    magnitude of `values` at the ends, 1 when all are 0 or missing); COUNT sequential from 0 to
    the largest of `values` (at least 1)."""
    if kind not in KINDS:
        raise ValueError(f"colour kind {kind!r}: expected one of {', '.join(KINDS)}")
    if kind == IMAGE:
        return dict(colorscale=SEQUENTIAL, zmin=0.0, zmax=1.0)
    finite = np.asarray(values if values is not None else [], dtype=np.float64).ravel()
    finite = finite[np.isfinite(finite)]
    if kind == SIGNED:
        top = float(np.abs(finite).max()) if finite.size else 0.0
        top = top if top > 0 else 1.0
        return dict(colorscale=DIVERGING, zmid=0.0, zmin=-top, zmax=top)
    hi = float(finite.max()) if finite.size else 0.0
    return dict(colorscale=SEQUENTIAL, zmin=0.0, zmax=max(1.0, hi))


def output_kind(weights: np.ndarray, values: np.ndarray) -> str:
    """The kind of a convolution's output: SIGNED when a weight is negative (the output can be,
    whatever these values are), an IMAGE while it stays in [0, 1] (a blur of an image), else a
    non-negative amount coloured from 0 (COUNT's scale)."""
    if np.asarray(weights).size and float(np.min(weights)) < 0:
        return SIGNED
    finite = np.asarray(values, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    return IMAGE if not finite.size or float(finite.max()) <= 1.0 else COUNT


def data_kind(values: np.ndarray) -> str:
    """The kind of values that may be an image or not (pooling's input and output): SIGNED when
    one is negative, an IMAGE while they stay in [0, 1], else COUNT's scale from 0."""
    finite = np.asarray(values, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    if finite.size and float(finite.min()) < 0:
        return SIGNED
    return IMAGE if not finite.size or float(finite.max()) <= 1.0 else COUNT


def cell_colours(n: int) -> list[str]:
    """n light colours, one per input cell, that neighbours can tell apart (golden-angle hues,
    alternating lightness): dark text stays readable on every one of them."""
    colours = []
    for i in range(n):
        hue = (i * 0.618033988749895) % 1.0
        light = (0.80, 0.70, 0.88)[i % 3]
        r, g, b = colorsys.hls_to_rgb(hue, light, 0.65)
        colours.append(f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}")
    return colours


def label_size(cells_across: int, width_px: int, style: Style, chars: int = 3) -> int | None:
    """Font size for cell labels when `cells_across` cells share `width_px` pixels: as large as
    the cell allows up to the style's text size, or None (no labels) below the style's minimum."""
    cell = width_px / max(1, cells_across)
    size = int(min(style.font, cell / max(1.0, 0.62 * chars)))
    return size if size >= style.label else None


def outline(
    cell: tuple[float, float], style: Style = NORMAL, pen: Pen = PEN, *, size: tuple[float, float] = (1, 1)
) -> list[dict]:
    """Layout shapes outlining size = (h, w) cells from cell (r, c): a dark halo under a bright line."""
    (r, c), (h, w) = cell, size
    box = dict(
        type="rect", x0=c - 0.5, x1=c - 0.5 + w, y0=r - 0.5, y1=r - 0.5 + h, xref=pen.panel, yref=pen.yref
    )
    return [
        {**box, "line": dict(color=HALO, width=style.line + 3), "fillcolor": "rgba(0,0,0,0)"},
        {
            **box,
            "line": dict(color=pen.colour, width=pen.width or style.line, dash=pen.dash),
            "fillcolor": pen.fill or "rgba(0,0,0,0)",
        },
    ]
