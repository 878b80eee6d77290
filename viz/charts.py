"""Bar and line charts for runtimes, bandwidth and the expansion ratio."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from viz.style import HIGHLIGHT, finish


def runtime_bars(labels: Sequence[str], ms: Sequence[float], title: str, backend: str) -> go.Figure:
    """Median runtimes of alternatives on the same input, fastest first."""
    order = sorted(range(len(ms)), key=lambda i: ms[i])
    fig = go.Figure(go.Bar(
        x=[ms[i] for i in order], y=[labels[i] for i in order], orientation="h",
        text=[f"{ms[i]:.3f} ms" for i in order], textposition="auto", marker_color="#1f77b4",
    ))  # fmt: skip
    finish(
        fig,
        f"{title}<br><sub>median runtime on {backend}; shorter is faster</sub>",
        "milliseconds",
        "",
        120 + 60 * len(ms),
    )
    fig.update_yaxes(autorange="reversed")
    return fig


def grouped_bars(groups: Sequence[str], series: dict[str, Sequence[float | None]], title: str, y_title: str,
                 reference: float | None = None, reference_label: str = "", log: bool = False) -> go.Figure:  # fmt: skip
    """One bar group per shape, one bar per implementation; an optional ceiling line."""
    fig = go.Figure([go.Bar(name=name, x=list(groups), y=list(vals)) for name, vals in series.items()])
    if reference is not None:
        fig.add_hline(
            y=reference, line=dict(color=HIGHLIGHT, dash="dash", width=3), annotation_text=reference_label
        )
    finish(fig, title, "shape", y_title, 460)
    fig.update_layout(barmode="group", legend=dict(orientation="h", y=-0.25))
    if log:
        fig.update_yaxes(type="log")
    return fig


def lines(x: Sequence[float], series: dict[str, Sequence[float]], title: str, x_title: str, y_title: str,
          log_y: bool = False) -> go.Figure:  # fmt: skip
    fig = go.Figure(
        [go.Scatter(x=list(x), y=list(v), mode="lines+markers", name=k) for k, v in series.items()]
    )
    finish(fig, title, x_title, y_title, 440)
    if log_y:
        fig.update_yaxes(type="log")
    fig.update_layout(legend=dict(orientation="h", y=-0.25))
    return fig


def expansion_figure(
    sizes: Sequence[int], ratios: Sequence[float], k: int, current: tuple[int, float]
) -> go.Figure:
    """The expansion ratio against image size, approaching K*K (stride 1)."""
    fig = go.Figure(go.Scatter(x=list(sizes), y=list(ratios), mode="lines+markers", name="expansion ratio"))
    fig.add_hline(
        y=k * k, line=dict(color=HIGHLIGHT, dash="dash", width=3), annotation_text=f"K x K = {k * k}"
    )
    fig.add_trace(go.Scatter(x=[current[0]], y=[current[1]], mode="markers", name="this image",
                             marker=dict(size=16, color=HIGHLIGHT, symbol="star")))  # fmt: skip
    finish(fig, "X_unroll is up to K x K times larger than the input: the ratio grows toward K x K as images grow",
           "image side H = W (pixels)", "expansion ratio", 420)  # fmt: skip
    fig.update_xaxes(type="log")
    fig.update_layout(legend=dict(orientation="h", y=-0.3))
    return fig
