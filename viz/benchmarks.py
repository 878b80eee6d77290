"""Figures of the Benchmarks page: ratios to the peers measured in the same run, and time vs
image size with the spread of repeated runs. Pure functions: numbers and a Style in, go.Figure out.

Axes are linear; a chart switches to a log axis only when its values span more than LOG_RANGE
(then the axis title says "log scale").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import plotly.graph_objects as go

from viz.memo import figure_memo
from viz.style import HALO, HIGHLIGHT, NORMAL, Style, finish

LOG_RANGE = 30.0  # max / min above this: a log axis
TALL_ROWS = 12  # ratio charts with more rows repeat their x axis along the top
RUN_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2")
RUN_SYMBOLS = (
    "circle-open",
    "diamond",
    "square",
    "triangle-up",
    "x",
    "star",
)  # run 1 a ring: run 2 shows inside it
LINE_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def log_ticks(values: Sequence[float]) -> dict:
    """Tick values and plain-number labels for a log axis over `values`: 1-2-5 steps, or whole
    decades when the values span more than three of them (never unlabelled minor ticks)."""
    lo, hi = min(values), max(values)
    steps = (1,) if hi / lo > 1000 else (1, 2, 5)
    ticks = [m * 10.0**e for e in range(-6, 7) for m in steps if lo / 1.5 <= m * 10.0**e <= hi * 1.5]
    return dict(tickvals=ticks, ticktext=[f"{t:g}" for t in ticks])


def needs_log(values: Sequence[float | None]) -> bool:
    """True when the positive values span more than LOG_RANGE (max / min)."""
    got = [float(v) for v in values if v is not None and v > 0]
    return bool(got) and max(got) / min(got) > LOG_RANGE


class RatioRow(NamedTuple):
    """One (shape, impl) row of a ratio figure: the reference's time / this impl's, per run."""

    shape: str
    impl: str
    ratios: Sequence[float | None]


def row_key(shape: str, impl: str) -> str:
    """The category of one (shape, impl) row of a ratio figure (its tick label is the impl)."""
    return f"{shape} · {impl}"


@figure_memo
def ratio_figure(
    rows: Sequence[RatioRow], reference: str, run_names: Sequence[str], title: str, style: Style = NORMAL
) -> go.Figure:
    """Speed relative to `reference` per (shape, impl) row: one marker per run, a line between
    the runs' values (their spread), a vertical line at 1 (as fast as the reference).

    rows[i].ratios[k]: reference time / impl time in run k (> 1: faster than the reference).
    Rows are grouped by shape: a bold header row names the shape, its impls follow.
    """
    shapes, impls, ratios = [r.shape for r in rows], [r.impl for r in rows], [r.ratios for r in rows]
    keys = [row_key(s, i) for s, i in zip(shapes, impls, strict=True)]
    order, text = [], []
    for shape, impl, key in zip(shapes, impls, keys, strict=True):
        if f"<b>{shape}</b>" not in order:
            order.append(f"<b>{shape}</b>")
            text.append(f"<b>{shape}</b>")
        order.append(key)
        text.append(impl)
    values = [v for row in ratios for v in row]
    positive = [v for v in values if v is not None and v > 0]
    log = needs_log([*positive, 1.0])
    fig = go.Figure()
    if len(run_names) > 1:  # the spread between runs: one segment per row
        xs, ys = [], []
        for key, row in zip(keys, ratios, strict=True):
            got = [v for v in row if v is not None]
            if len(got) > 1:
                xs += [min(got), max(got), None]
                ys += [key, key, None]
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines",
                name="spread between runs",
                line=dict(color="#888888", width=2 + style.line // 2),
                hoverinfo="skip",
            )
        )
    for k, name in enumerate(run_names):
        fig.add_trace(
            go.Scatter(
                x=[row[k] for row in ratios],
                y=keys,
                mode="markers",
                name=name,
                marker=dict(
                    size=(18 if k == 0 else 11) + style.line,
                    symbol=RUN_SYMBOLS[k % len(RUN_SYMBOLS)],
                    color=RUN_COLOURS[k % len(RUN_COLOURS)],
                    line=dict(color=RUN_COLOURS[0], width=2 + style.line // 2)
                    if k == 0
                    else dict(color=HALO, width=1),
                ),
                customdata=[[s, i] for s, i in zip(shapes, impls, strict=True)],
                hovertemplate=f"%{{customdata[0]}} · %{{customdata[1]}}<br>{name}: %{{x:.3f}}x {reference}"
                "<extra></extra>",
            )
        )
    fig.add_vline(x=1.0, line=dict(color=HIGHLIGHT, width=style.line, dash="dash"))
    fig.add_trace(
        go.Scatter(
            x=[None],
            y=[None],
            mode="lines",
            name=f"1 = {reference} (the reference)",
            line=dict(color=HIGHLIGHT, width=style.line, dash="dash"),
        )
    )  # the line's legend entry
    scale = " (log scale)" if log else ""
    finish(
        fig,
        title,
        (f"speed relative to {reference}: its time ÷ this time (> 1 = faster){scale}", ""),
        400,
        style,
    )
    fig.update_yaxes(
        type="category",
        categoryorder="array",
        categoryarray=order,
        tickvals=order,
        ticktext=text,
        range=[len(order) - 0.5, -0.5],
        automargin=True,
        showgrid=True,
    )
    axis = dict(type="log" if log else "linear", zeroline=False, showgrid=True)
    if log:  # ticks at 1-2-5 steps, written as ratios, instead of every minor decade tick
        axis |= log_ticks([*positive, 1.0])
    else:
        axis |= dict(rangemode="tozero")
    fig.update_xaxes(**axis)
    tall = len(order) > TALL_ROWS
    if tall:  # the same scale along the top: a tall chart is read from its top rows too
        fig.update_layout(
            xaxis2=dict(
                axis, overlaying="x", matches="x", side="top", showgrid=False, tickfont=dict(size=style.tick)
            )
        )
        fig.add_trace(
            go.Scatter(
                x=[1.0],
                y=[keys[0]],
                xaxis="x2",
                mode="markers",
                marker=dict(opacity=0),
                showlegend=False,
                hoverinfo="skip",
            )
        )
    top = 30 + 2 * style.title + (style.tick + 10) * tall
    bottom = 40 + 2 * style.font + (style.font + 12)
    fig.update_layout(
        height=top + bottom + (style.tick + 12) * max(len(order), 2),  # sized for its rows
        margin=dict(l=10, t=top, b=bottom),
        title=dict(yref="container", y=1, yanchor="top", pad=dict(t=12)),  # pixels from the top: a
        # fraction of a tall chart's height put the title over the top axis's tick labels
        legend=dict(
            orientation="h", yref="container", y=0, yanchor="bottom", x=0, font=dict(size=style.font)
        ),
    )
    return fig


@figure_memo
def sweep_figure(
    sizes: Sequence[int],
    series: dict[str, Sequence[tuple[float, float, float, int, bool] | None]],
    clock: str,
    style: Style = NORMAL,
) -> go.Figure:
    """conv2d time vs image side: per algorithm the median of repeated runs (markers and line)
    with error bars from the fastest to the slowest run; noisy points drawn hollow.

    series[algorithm][i] = (median, min, max, runs, noisy) for sizes[i], or None (not run).
    """
    fig = go.Figure()
    values = []
    for j, (name, points) in enumerate(series.items()):
        colour = LINE_COLOURS[j % len(LINE_COLOURS)]
        got = [(s, p) for s, p in zip(sizes, points, strict=True) if p is not None]
        if not got:
            continue
        xs = [s for s, _ in got]
        med = [p[0] for _, p in got]
        values += [v for _, p in got for v in (p[1], p[2])]
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=med,
                mode="lines+markers",
                name=name,
                line=dict(color=colour, width=2 + style.line // 2),
                marker=dict(
                    size=8 + 2 * style.line,
                    color=[("white" if p[4] else colour) for _, p in got],
                    line=dict(color=colour, width=2),
                    symbol="circle",
                ),
                error_y=dict(
                    type="data",
                    symmetric=False,
                    array=[p[2] - p[0] for _, p in got],
                    arrayminus=[p[0] - p[1] for _, p in got],
                    color=colour,
                    thickness=2,
                    width=6,
                ),
                customdata=[
                    [p[1], p[2], p[3], "noisy: spread > 30% of the median" if p[4] else ""] for _, p in got
                ],
                hovertemplate=(
                    f"{name} at %{{x}} px<br>median %{{y:.3g}} ms<br>min %{{customdata[0]:.3g}} - "
                    "max %{customdata[1]:.3g} ms (%{customdata[2]} runs)<br>%{customdata[3]}<extra></extra>"
                ),
            )
        )
    log = needs_log(values)
    finish(
        fig,
        f"conv2d time vs image size ({clock})",
        ("image side H = W (pixels)", "milliseconds" + (" (log scale)" if log else "")),
        460,
        style,
    )
    fig.update_xaxes(tickvals=list(sizes), type="linear")
    fig.update_yaxes(type="log" if log else "linear")
    if log:
        fig.update_yaxes(**log_ticks([v for v in values if v > 0]))
    else:
        fig.update_yaxes(rangemode="tozero")
    rows = 1 + len(series) // 5  # legend rows
    fig.update_layout(
        legend=dict(
            orientation="h", yref="container", y=0, yanchor="bottom", x=0, font=dict(size=style.font)
        ),
        margin=dict(b=40 + 2 * style.font + rows * (style.font + 12)),
    )
    return fig
