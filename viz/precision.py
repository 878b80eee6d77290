"""The precision ladder as one figure: fp32 / TF32 / bf16 / fp16 side by side, our kernel next to
its peer (cuDNN), speed on the left and error against a float64 reference on the right.

Both pages draw it: the Direct page for the layer on screen (one group), the Benchmarks page for
each shape of a committed report (one group a shape). Records in, go.Figure out; no Streamlit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.memo import figure_memo
from viz.style import NORMAL, Style, base_layout

OURS_COLOUR, PEER_COLOUR = "#1f77b4", "#8c8c8c"
GIGA_BELOW = 0.5  # TFLOP/s: rates below this everywhere are drawn in GFLOP/s (CPU twins)


class LadderRow(NamedTuple):
    """One precision of one layer: our rate and error, and the peer's (None: not measured)."""

    group: str  # the layer: a benchmark shape, or the page's layer
    precision: str  # "fp32", "tf32", "bf16", "fp16"
    ours_tflops: float | None
    peer_tflops: float | None
    ours_error: float | None  # ||y - y64|| / ||y64||
    peer_error: float | None


def precision_label(precision: str) -> str:
    """ "tf32" -> "TF32": how the pages write a precision."""
    return precision.upper()


def _keys(rows: Sequence[LadderRow]) -> tuple[list[str], list[str], list[str]]:
    """Row categories, the full category order (a bold header per group when there are several)
    and the tick text of that order."""
    groups = list(dict.fromkeys(r.group for r in rows))
    keys = [f"{r.group} · {r.precision}" for r in rows]
    if len(groups) == 1:
        return keys, keys, [precision_label(r.precision) for r in rows]
    order, text = [], []
    for r, key in zip(rows, keys, strict=True):
        header = f"<b>{r.group}</b>"
        if header not in order:
            order += [header]
            text += [header]
        order.append(key)
        text.append(precision_label(r.precision))
    return keys, order, text


@figure_memo
def ladder_figure(rows: Sequence[LadderRow], *, peer: str, title: str, style: Style = NORMAL) -> go.Figure:
    """Left: the rate of ours and of `peer` per row (horizontal bars, longer is faster); right:
    their relative error against float64 (log axis). Rows in the order given."""
    keys, order, text = _keys(rows)
    rates = [v for r in rows for v in (r.ours_tflops, r.peer_tflops) if v is not None]
    giga = bool(rates) and max(rates) < GIGA_BELOW
    scale, unit = (1000.0, "GFLOP/s") if giga else (1.0, "TFLOP/s")
    fig = make_subplots(
        rows=1,
        cols=2,
        shared_yaxes=True,
        column_widths=[0.62, 0.38],
        horizontal_spacing=0.03,
    )
    for name, colour, rate_of, error_of, symbol in (
        ("ours", OURS_COLOUR, lambda r: r.ours_tflops, lambda r: r.ours_error, "circle"),
        (peer, PEER_COLOUR, lambda r: r.peer_tflops, lambda r: r.peer_error, "diamond-open"),
    ):
        values = [None if rate_of(r) is None else rate_of(r) * scale for r in rows]
        if all(v is None for v in values) and all(error_of(r) is None for r in rows):
            continue  # not measured at all (no cuDNN on this server): no legend entry either
        fig.add_trace(
            go.Bar(
                x=values,
                y=keys,
                orientation="h",
                name=name,
                marker=dict(color=colour),
                text=["" if v is None else f"{v:.3g}" for v in values],
                textposition="outside",
                textfont=dict(size=style.tick),
                cliponaxis=False,
                hovertemplate=f"%{{y}}<br>{name}: %{{x:.4g}} {unit}<extra></extra>",
                legendgroup=name,
            ),
            row=1,
            col=1,
        )
        fig.add_trace(
            go.Scatter(
                x=[error_of(r) for r in rows],
                y=keys,
                mode="markers",
                name=name,
                marker=dict(color=colour, size=10 + 2 * style.line, symbol=symbol, line=dict(width=2)),
                hovertemplate=f"%{{y}}<br>{name}: relative error %{{x:.2e}}<extra></extra>",
                legendgroup=name,
                showlegend=False,
            ),
            row=1,
            col=2,
        )
    height = 90 + 2 * style.title + 2 * (style.tick + 14) * max(len(order), 2) + 2 * style.font
    fig.update_layout(**base_layout(title, height, style))
    fig.update_layout(
        barmode="group",
        title=dict(yref="container", y=1, yanchor="top", pad=dict(t=12)),  # pixels from the top: a
        # fraction of a tall chart's height put the title over the top axis's tick labels
        height=int(height * style.height_scale),
        legend=dict(
            orientation="h", yref="container", y=0, yanchor="bottom", x=0, font=dict(size=style.font)
        ),
        margin=dict(l=10, r=20, t=40 + 2 * style.title, b=40 + 3 * style.font + style.tick),
    )
    fig.update_yaxes(
        type="category",
        categoryorder="array",
        categoryarray=order,
        tickvals=order,
        ticktext=text,
        range=[len(order) - 0.5, -0.5],
        automargin=True,
        tickfont=dict(size=style.tick),
    )
    fig.update_xaxes(tickfont=dict(size=style.tick), showgrid=True, zeroline=False)
    fig.update_xaxes(title=dict(text=f"{unit} (longer is faster)", font=dict(size=style.font)), row=1, col=1)
    fig.update_xaxes(title=dict(text="error vs float64 (log)", font=dict(size=style.font)), row=1, col=2)
    fig.update_yaxes(title=dict(text="", font=dict(size=style.font)))
    top = max(rates, default=1.0) * scale
    fig.update_xaxes(range=[0, 1.3 * top], row=1, col=1)  # room for the values written beside the bars
    fig.update_xaxes(type="log", exponentformat="power", dtick=1, row=1, col=2)
    return fig
