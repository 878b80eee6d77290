"""Figures of the Pooling page: the input with its padding and the pooled output side by side, the
picked output's window and winner, or the picked input cell's readers and where the max routes its
gradient; and the gradient each input cell receives. Records in, go.Figure out."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.style import (
    HIGHLIGHT,
    NORMAL,
    PADDING_COLOUR,
    READER,
    SECOND,
    Style,
    base_layout,
    outline,
    value_scale,
)

Cells = Sequence[tuple[int, int]]


def _labels(values: np.ndarray, blank: str, fmt: str = ".3g") -> np.ndarray:
    return np.vectorize(lambda v: blank if not np.isfinite(v) else format(v, fmt))(values.astype(np.float64))


def pool_figure(
    x: np.ndarray,
    y: np.ndarray,
    extent: tuple[int, int, int, int],
    style: Style = NORMAL,
    *,
    padding_text: str,
    picked: tuple[str, int, int] | None = None,
    window: Cells = (),
    winner: tuple[int, int] | None = None,
    readers: Cells = (),
    routes: Cells = (),
) -> go.Figure:
    """Panel x: the input (H, W) and the cells around it that windows reach (extent: rows before,
    rows after, columns before, columns after), those labelled `padding_text`; panel x2: the output.
    Coordinates are the true indices (padding rows are negative or >= H). picked (panel, row, col)
    in orange; window: its taps inside the input (cyan); winner: the max's winner (orange, filled);
    readers: outputs that read the picked input cell (red); routes: those whose gradient it gets
    (orange)."""
    top, bottom, left, right = extent
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
    scale = value_scale(np.concatenate([x.ravel(), y.ravel()]))
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
        *outline(0, 0, style, "#222222", h=H, w=W),
    ]
    for r, c in window:
        shapes += outline(r, c, style, SECOND)
    for r, c in readers:
        shapes += outline(r, c, style, READER, xref="x2", yref="y2")
    for r, c in routes:
        shapes += outline(r, c, style, HIGHLIGHT, xref="x2", yref="y2", dash="dot")
    if winner is not None:
        shapes += outline(*winner, style, HIGHLIGHT, fill="rgba(255,127,14,0.35)")
    if picked is not None:
        panel, r, c = picked
        shapes += outline(r, c, style, HIGHLIGHT, xref=panel, yref="y" + panel[1:])
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
            **value_scale(dx),
        )
    )
    shapes = outline(*picked, style, HIGHLIGHT) if picked is not None else []
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


def hover_pairs(
    chart: str, windows: dict[tuple[int, int], Cells], readers: dict[tuple[int, int], Cells]
) -> dict[tuple[str, int, int], list[tuple[str, str, int, int]]]:
    """Hover maps for ui.pick: an output cell lights its window's input cells, an input cell the
    outputs that read it."""
    pairs: dict[tuple[str, int, int], list[tuple[str, str, int, int]]] = {}
    for (oh, ow), cells in windows.items():
        pairs[("x2", oh, ow)] = [(chart, "x", r, c) for r, c in cells]
    for (ih, iw), cells in readers.items():
        pairs[("x", ih, iw)] = [(chart, "x2", r, c) for r, c in cells]
    return pairs
