"""One look for every figure: large fonts that stay readable on a projector."""

from __future__ import annotations

import plotly.graph_objects as go

FONT_SIZE = 16
HIGHLIGHT = "#ff7f0e"  # orange: the selected output / column / tap
SECOND = "#17becf"  # cyan: the tile, the patch, the original region
PADDING_COLOUR = "rgba(120,140,220,0.55)"  # blue-grey wash over padding cells
MAX_LABELLED = 24  # matrices larger than this per side get no per-cell text


def finish(fig: go.Figure, title: str, x_title: str, y_title: str, height: int = 480) -> go.Figure:
    """Title, axis labels, fonts and margins shared by all figures."""
    fig.update_layout(
        title=dict(text=title, font=dict(size=FONT_SIZE + 2)),
        font=dict(size=FONT_SIZE),
        height=height,
        margin=dict(l=60, r=20, t=70, b=60),
    )  # no template: building one per figure costs ~30 ms, and Streamlit applies its own theme
    fig.update_xaxes(title_text=x_title)
    fig.update_yaxes(title_text=y_title)
    return fig


def rect_shape(r: float, c: float, colour: str, width: int = 3, dash: str = "solid", fill: str | None = None,
               h: float = 1, w: float = 1) -> dict:  # fmt: skip
    """A layout shape outlining cell(s) from row r, column c (cell centres at integers)."""
    return dict(type="rect", x0=c - 0.5, x1=c - 0.5 + w, y0=r - 0.5, y1=r - 0.5 + h,
                line=dict(color=colour, width=width, dash=dash), fillcolor=fill or "rgba(0,0,0,0)")  # fmt: skip


def cell_rect(fig: go.Figure, r: float, c: float, colour: str, width: int = 3, dash: str = "solid",
              fill: str | None = None, h: float = 1, w: float = 1, **where) -> None:  # fmt: skip
    """Outline cell(s) starting at row r, column c on an existing figure."""
    fig.add_shape(**rect_shape(r, c, colour, width, dash, fill, h, w), **where)
