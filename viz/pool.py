"""Figures of the Pooling page: the input with its padding and the pooled output side by side, the
picked output's window and winner, or the picked input cell's readers and where the max routes its
gradient; and the gradient each input cell receives. Records in, go.Figure out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.memo import figure_memo
from viz.style import (
    HIGHLIGHT,
    NORMAL,
    PADDING_COLOUR,
    READER,
    SECOND,
    SIGNED,
    Pen,
    Style,
    base_layout,
    data_kind,
    outline,
    scale_for,
)

Cells = Sequence[tuple[int, int]]
WINNER_FILL = "rgba(255,127,14,0.35)"  # the highlight's orange, washed: the max's winner


@dataclass(frozen=True)
class PoolGrids:
    """What the pooling figure shows: the input x (H, W), the output y, how far the windows reach
    past the input (rows before, rows after, columns before, columns after), and the text those
    padding cells carry ("-inf" for max, "0" for avg)."""

    x: np.ndarray
    y: np.ndarray
    extent: tuple[int, int, int, int]
    padding_text: str


@dataclass(frozen=True)
class PoolMarks:
    """The pick and what it maps to. picked (panel, row, col): orange; window: the picked output's
    taps inside the input (cyan); winner: the max's winner (orange, filled); readers: the outputs
    that read the picked input cell (red); routes: those whose gradient it gets (dotted orange)."""

    picked: tuple[str, int, int] | None = None
    window: Cells = ()
    winner: tuple[int, int] | None = None
    readers: Cells = ()
    routes: Cells = ()


def _labels(values: np.ndarray, blank: str, fmt: str = ".3g") -> np.ndarray:
    return np.vectorize(lambda v: blank if not np.isfinite(v) else format(v, fmt))(values.astype(np.float64))


@figure_memo
def pool_figure(grids: PoolGrids, style: Style = NORMAL, marks: PoolMarks = PoolMarks()) -> go.Figure:
    """Panel x: the input and the cells around it that windows reach, those labelled with the
    padding's text; panel x2: the output. Coordinates are the true indices (padding rows are
    negative or >= H). The marks outlined as PoolMarks says."""
    x, y, padding_text = grids.x, grids.y, grids.padding_text
    top, bottom, left, right = grids.extent
    H, W = x.shape
    grid = np.full((H + top + bottom, W + left + right), np.nan)
    grid[top : top + H, left : left + W] = x
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[grid.shape[1], y.shape[1]],
        horizontal_spacing=0.08,
        subplot_titles=(f"input {H} x {W} (padding: {padding_text})", f"output {y.shape[0]} x {y.shape[1]}"),
    )
    both = np.concatenate([x.ravel(), y.ravel()])
    scale = scale_for(data_kind(both), both)
    for k, (values, row0, col0, blank, name) in enumerate(
        ((grid, -top, -left, padding_text, "input"), (y, 0, 0, "", "output")), start=1
    ):
        fig.add_trace(
            go.Heatmap(
                z=values,
                x=np.arange(col0, col0 + values.shape[1]),
                y=np.arange(row0, row0 + values.shape[0]),
                text=_labels(values, blank),
                texttemplate="%{text}",
                textfont=dict(size=style.font),
                showscale=False,
                xgap=1,
                ygap=1,
                hovertemplate=f"{name} row %{{y}}, col %{{x}}<br>%{{text}}<extra></extra>",
                **scale,
            ),
            1,
            k,
        )
    shapes = [
        dict(
            type="rect",
            xref="x",
            yref="y",
            x0=-left - 0.5,
            x1=W + right - 0.5,
            y0=-top - 0.5,
            y1=H + bottom - 0.5,
            fillcolor=PADDING_COLOUR,
            line=dict(width=0),
            layer="below",
        ),
        *outline((0, 0), style, Pen("#222222"), size=(H, W)),
    ]
    for cell in marks.window:
        shapes += outline(cell, style, Pen(SECOND))
    for cell in marks.readers:
        shapes += outline(cell, style, Pen(READER, panel="x2"))
    for cell in marks.routes:
        shapes += outline(cell, style, Pen(HIGHLIGHT, dash="dot", panel="x2"))
    if marks.winner is not None:
        shapes += outline(marks.winner, style, Pen(HIGHLIGHT, fill=WINNER_FILL))
    if marks.picked is not None:
        panel, r, c = marks.picked
        shapes += outline((r, c), style, Pen(HIGHLIGHT, panel=panel))
    cell_px = 2.4 * style.font
    layout = base_layout("Click an output: its window. Click an input cell: who reads it.", 0, style)
    layout["height"] = int(grid.shape[0] * cell_px + 140 + 2 * style.title)
    fig.update_layout(**layout, shapes=shapes)
    fig.update_xaxes(
        showgrid=False, zeroline=False, tickfont=dict(size=style.tick), dtick=1, constrain="domain"
    )
    fig.update_yaxes(
        showgrid=False,
        zeroline=False,
        tickfont=dict(size=style.tick),
        dtick=1,
        autorange="reversed",
        constrain="domain",
        constraintoward="top",
    )
    fig.update_layout(yaxis_scaleanchor="x", yaxis2_scaleanchor="x2")
    fig.update_annotations(font_size=style.font)
    return fig


@figure_memo
def gradient_figure(
    dx: np.ndarray, title: str, style: Style = NORMAL, picked: tuple[int, int] | None = None
) -> go.Figure:
    """The gradient each input cell receives when every output's gradient is 1 (sequential from 0)."""
    fig = go.Figure(
        go.Heatmap(
            z=dx,
            text=_labels(dx, "", ".2g"),
            texttemplate="%{text}",
            textfont=dict(size=style.font if np.allclose(dx, np.round(dx)) else style.tick - 2),
            showscale=False,
            xgap=1,
            ygap=1,
            hovertemplate="input row %{y}, col %{x}<br>gradient %{z:.3g}<extra></extra>",
            **scale_for(SIGNED, dx),  # a gradient: diverging at 0 whatever its signs
        )
    )
    shapes = outline(picked, style, Pen(HIGHLIGHT)) if picked is not None else []
    layout = base_layout(title, 0, style)
    layout["height"] = int(dx.shape[0] * 2.4 * style.font + 120 + 2 * style.title)
    fig.update_layout(**layout, shapes=shapes)
    fig.update_xaxes(
        showgrid=False, zeroline=False, dtick=1, tickfont=dict(size=style.tick), constrain="domain"
    )
    fig.update_yaxes(
        showgrid=False,
        zeroline=False,
        dtick=1,
        tickfont=dict(size=style.tick),
        autorange="reversed",
        scaleanchor="x",
        constrain="domain",
        constraintoward="top",
    )
    return fig
