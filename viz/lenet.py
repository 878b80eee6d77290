"""Figures of the LeNet page: training curves, first-layer filters, every stage's feature maps with
the picked cell and what it reads, the ten probabilities, time per layer. Records in, go.Figure out.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from gpuops.lenet import Span
from viz.memo import figure_memo
from viz.style import (
    DIVERGING,
    HIGHLIGHT,
    NORMAL,
    READER,
    SECOND,
    SIGNED,
    Pen,
    Style,
    axis_text,
    base_layout,
    outline,
    scale_for,
)

MAPS_PER_ROW = 8
GREYS = "Greys_r"  # black = 0, white = the most ink: the digits as scikit-learn stores them


def panel_id(index: int) -> str:
    """Plotly's axis id of subplot `index` (0-based, row-major): "x", "x2", ..."""
    return "x" if index == 0 else f"x{index + 1}"


def panel_index(panel: str) -> int | None:
    """The subplot index of an axis id ("x" -> 0, "x7" -> 6); None for anything else."""
    if panel == "x":
        return 0
    if panel.startswith("x") and panel[1:].isdigit():
        return int(panel[1:]) - 1
    return None


@figure_memo
def curves_figure(history: Sequence[dict[str, float]], style: Style = NORMAL) -> go.Figure:
    """Loss (left) and accuracy on the training batches and the held-out test set (right), per epoch."""
    fig = make_subplots(
        rows=1, cols=2, subplot_titles=("Loss (cross-entropy)", "Accuracy"), horizontal_spacing=0.12
    )
    epochs = [r["epoch"] for r in history]
    fig.add_trace(
        go.Scatter(x=epochs, y=[r["loss"] for r in history], mode="lines+markers", name="training loss"), 1, 1
    )
    for key, name, dash in (
        ("train_accuracy", "training batches", "dot"),
        ("test_accuracy", "test set", "solid"),
    ):
        fig.add_trace(
            go.Scatter(
                x=epochs, y=[r[key] for r in history], mode="lines+markers", name=name, line=dict(dash=dash)
            ),
            1,
            2,
        )
    fig.add_hline(y=0.95, line=dict(color="#888888", dash="dash"), row=1, col=2)
    fig.update_xaxes(**axis_text("epoch", style), dtick=1 if len(epochs) <= 12 else None)
    fig.update_yaxes(tickfont=dict(size=style.tick))
    fig.update_yaxes(range=[0, 1.02], tickformat=".0%", row=1, col=2)
    fig.update_annotations(font_size=style.font)
    layout = base_layout("Training, epoch by epoch", 380, style)
    layout["margin"]["b"] += 2 * style.font + 10  # the legend's row, under the axis titles
    fig.update_layout(**layout)
    fig.update_layout(
        legend=dict(orientation="h", yref="container", y=0.0, yanchor="bottom", font=dict(size=style.font))
    )
    return fig


def _size(span: Span) -> tuple[int, int]:
    return span.r1 - span.r0 + 1, span.c1 - span.c0 + 1


def _grid_axes(fig: go.Figure, count: int) -> None:
    """Square cells, row 0 at the top, no ticks: every panel is a small map."""
    for i in range(count):
        suffix = "" if i == 0 else str(i + 1)
        fig.layout[f"yaxis{suffix}"].update(
            autorange="reversed", scaleanchor=f"x{suffix}", constrain="domain"
        )
        fig.layout[f"xaxis{suffix}"].update(constrain="domain")
    bare = dict(showticklabels=False, showgrid=False, zeroline=False, ticks="", showline=False)
    fig.update_xaxes(**bare)
    fig.update_yaxes(**bare)


def _maps_layout(title: str, height: int, style: Style) -> dict:
    """base_layout with tight margins: small maps need the room more than axis titles (they have none)."""
    layout = base_layout(title, height, style)
    layout["margin"] = dict(l=10, r=10, t=40 + 2 * style.title, b=10)
    return layout


@figure_memo
def filters_figure(weight: np.ndarray, style: Style = NORMAL) -> go.Figure:
    """The first layer's filters (C1, 1, k, k) side by side, on one diverging scale centred at 0."""
    count = weight.shape[0]
    top = float(np.abs(weight).max()) or 1.0
    fig = make_subplots(
        rows=1, cols=count, horizontal_spacing=0.02, subplot_titles=[f"filter {m}" for m in range(count)]
    )
    for m in range(count):
        fig.add_trace(
            go.Heatmap(
                z=weight[m, 0],
                colorscale=DIVERGING,
                zmid=0,
                zmin=-top,
                zmax=top,
                showscale=m == count - 1,
                hovertemplate=f"filter {m}<br>row %{{y}}, col %{{x}}<br>weight %{{z:.3f}}<extra></extra>",
            ),
            1,
            m + 1,
        )
    _grid_axes(fig, count)
    fig.update_traces(
        colorbar=dict(thickness=12, len=0.9, tickfont=dict(size=style.tick)), selector=dict(showscale=True)
    )
    fig.update_layout(**_maps_layout("conv1's filters (blue < 0 < red)", 230, style))
    fig.update_annotations(font_size=style.tick)
    return fig


@figure_memo
def maps_figure(
    maps: np.ndarray,
    title: str,
    style: Style = NORMAL,
    *,
    picked: tuple[int, int, int] | None = None,
    read: Span | None = None,
) -> go.Figure:
    """One stage's maps (C, H, W) in rows of MAPS_PER_ROW panels on one colour scale; `picked`
    (channel, row, col) outlined in orange; `read`: the cells the pick in the next stage reads,
    outlined in red on each of its channels."""
    C = maps.shape[0]
    cols = min(C, MAPS_PER_ROW)
    rows = -(-C // cols)
    scale = scale_for(SIGNED, maps)  # activations and pre-activations: diverging at 0
    fig = make_subplots(
        rows=rows,
        cols=cols,
        horizontal_spacing=0.015,
        vertical_spacing=0.16 if rows > 1 else 0.0,
        subplot_titles=[f"{c}" for c in range(C)],
    )
    for c in range(C):
        fig.add_trace(
            go.Heatmap(
                z=maps[c],
                showscale=c == C - 1,
                **scale,
                hovertemplate=f"map {c}<br>row %{{y}}, col %{{x}}<br>value %{{z:.3f}}<extra></extra>",
            ),
            c // cols + 1,
            c % cols + 1,
        )
    _grid_axes(fig, C)
    shapes = []
    if read is not None:
        for c in read.channels:
            pen = Pen(READER, panel=panel_id(c))
            shapes += outline((read.r0, read.c0), style, pen, size=_size(read))
    if picked is not None:
        c, r, col = picked
        shapes += outline((r, col), style, Pen(HIGHLIGHT, panel=panel_id(c)))
    per_row = 200 if cols < MAPS_PER_ROW else 150
    fig.update_traces(
        colorbar=dict(thickness=12, tickfont=dict(size=style.tick)), selector=dict(showscale=True)
    )
    fig.update_layout(**_maps_layout(title, 60 + rows * per_row, style), shapes=shapes)
    fig.update_annotations(font_size=style.tick)
    return fig


@figure_memo
def digit_figure(image: np.ndarray, style: Style = NORMAL, read: Span | None = None) -> go.Figure:
    """The network's input (size x size, values in [0, 1]) in grey; `read`: its rows and columns
    outlined (its channels are the input's one)."""
    fig = go.Figure(
        go.Heatmap(
            z=image,
            colorscale=GREYS,
            zmin=0,
            zmax=1,
            showscale=False,
            hovertemplate="row %{y}, col %{x}<br>value %{z:.2f}<extra></extra>",
        )
    )
    shapes = []
    if read is not None:
        shapes = outline((read.r0, read.c0), style, Pen(READER), size=_size(read))
    fig.update_layout(**base_layout("Input (16 x 16)", 300, style), shapes=shapes)
    _grid_axes(fig, 1)
    return fig


@figure_memo
def drawing_figure(grid: np.ndarray, style: Style = NORMAL) -> go.Figure:
    """The 8 x 8 drawing canvas: ink (0..16) in grey, thin gaps so each cell reads as a button."""
    fig = go.Figure(
        go.Heatmap(
            z=grid,
            colorscale=GREYS,
            zmin=0,
            zmax=16,
            showscale=False,
            xgap=2,
            ygap=2,
            hovertemplate="row %{y}, col %{x}<extra>click to ink / erase</extra>",
        )
    )
    fig.update_layout(**_maps_layout("Draw a digit (8 x 8)", 300, style))
    _grid_axes(fig, 1)
    fig.update_layout(plot_bgcolor="#bbbbbb")
    return fig


@figure_memo
def dense_figure(hidden: np.ndarray, logits: np.ndarray, style: Style = NORMAL) -> go.Figure:
    """The dense layers for one digit: fc1's units after the activation, and fc2's ten logits
    (before the softmax), each on its own scale (diverging at 0 where signs mix)."""
    fig = make_subplots(
        rows=2,
        cols=1,
        vertical_spacing=0.5,
        subplot_titles=(f"fc1 + activation: {hidden.size} units", "fc2: 10 logits (digits 0-9)"),
    )
    for row, values, name in ((1, hidden, "unit"), (2, logits, "digit")):
        fig.add_trace(
            go.Heatmap(
                z=values[None, :],
                showscale=False,
                xgap=1,
                **scale_for(SIGNED, values),
                hovertemplate=f"{name} %{{x}}: %{{z:.3f}}<extra></extra>",
            ),
            row,
            1,
        )
    fig.update_xaxes(showgrid=False, zeroline=False, tickfont=dict(size=style.tick))
    fig.update_xaxes(dtick=1, row=2, col=1)
    fig.update_yaxes(showticklabels=False, showgrid=False, zeroline=False)
    fig.update_layout(**_maps_layout("Dense layers", 300, style))
    fig.update_annotations(font_size=style.tick)
    return fig


@figure_memo
def probabilities_figure(probs: np.ndarray, label: int | None, style: Style = NORMAL) -> go.Figure:
    """The ten softmax outputs as bars; the prediction in orange, the true label (when known) named."""
    best = int(np.argmax(probs))
    colours = [HIGHLIGHT if d == best else SECOND for d in range(len(probs))]
    fig = go.Figure(
        go.Bar(
            x=list(range(len(probs))),
            y=probs,
            marker_color=colours,
            text=[f"{p:.0%}" for p in probs],
            textposition="outside",
            textfont=dict(size=style.tick),
            hovertemplate="digit %{x}: %{y:.3f}<extra></extra>",
        )
    )
    known = "" if label is None else f" (label {label})"
    fig.update_layout(**base_layout(f"Prediction: {best}{known}", 300, style))
    fig.update_xaxes(**axis_text("digit", style), dtick=1)
    fig.update_yaxes(**axis_text("probability", style), range=[0, 1.15], tickformat=".0%")
    return fig


@figure_memo
def layer_times_figure(
    ours: dict[str, float], reference: dict[str, float] | None, backend: str, style: Style = NORMAL
) -> go.Figure:
    """Milliseconds per training step (forward + backward) by layer; PyTorch's beside it when timed."""
    layers = list(ours)
    fig = go.Figure(
        go.Bar(
            y=layers,
            x=[ours[k] for k in layers],
            orientation="h",
            name=f"gpuops ({backend})",
            marker_color=HIGHLIGHT,
            hovertemplate="%{y}: %{x:.2f} ms<extra></extra>",
        )
    )
    if reference:
        fig.add_trace(
            go.Bar(
                y=layers,
                x=[reference.get(k, 0.0) for k in layers],
                orientation="h",
                name="PyTorch (same network)",
                marker_color=SECOND,
                hovertemplate="%{y}: %{x:.2f} ms<extra></extra>",
            )
        )
    fig.update_layout(**base_layout("Time per training step, by layer", 300, style), barmode="group")
    fig.update_xaxes(**axis_text("ms per step (forward + backward)", style))
    fig.update_yaxes(autorange="reversed", tickfont=dict(size=style.tick))
    return fig
