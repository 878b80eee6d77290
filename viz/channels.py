"""The channel view of a convolution layer: input channels along the top, the filter bank below them
(one row per filter, one column per input channel: a K x K slice where the filter sees that channel,
empty where its group does not), the output maps on the right, each in the colour of its group. The
picked output lights its filter row and the input channels it sums; a picked input channel its column
and the outputs that read it."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from gpuops.maps.channels import ChannelLayout
from viz.style import HIGHLIGHT, NORMAL, READER, Style, base_layout, cell_colours, outline

INPUTS, BANK, OUTPUTS = "x", "x2", "x3"  # subplot ids: top left, bottom left, bottom right


def _stepped(groups: int) -> list:
    """A stepped colour scale: z = g + 1 -> group g's colour, z = 0 (no connection) white."""
    colours = ["#ffffff", *cell_colours(max(1, groups))]
    steps = len(colours)
    scale = []
    for i, c in enumerate(colours):
        scale += [[i / steps, c], [(i + 1) / steps, c]]
    return scale


def _tiles(ids: np.ndarray, text: np.ndarray, groups: int, style: Style, hover: str) -> go.Heatmap:
    return go.Heatmap(
        z=ids + 1,
        zmin=0,
        zmax=groups + 1,
        colorscale=_stepped(groups),
        showscale=False,
        text=text,
        texttemplate="%{text}",
        textfont=dict(size=style.tick, color="#111111"),
        hovertemplate=hover + "<extra></extra>",
        xgap=3,
        ygap=3,
    )


def channel_figure(
    layout: ChannelLayout,
    style: Style = NORMAL,
    *,
    picked_output: int | None = None,
    picked_input: int | None = None,
) -> go.Figure:
    L = layout
    connections = L.connections()
    fig = make_subplots(
        rows=2,
        cols=2,
        specs=[[{}, None], [{}, {}]],
        row_heights=[1, L.C_out],
        column_widths=[L.C_in, 1.4],
        horizontal_spacing=0.03,
        vertical_spacing=0.04,
    )
    in_ids = np.array([[L.group_of_input(c) for c in range(L.C_in)]])
    fig.add_trace(
        _tiles(in_ids, np.array([[f"in {c}" for c in range(L.C_in)]]), L.groups, style, "input channel %{x}"),
        1,
        1,
    )
    slice_text = np.where(connections >= 0, f"{L.K}x{L.K}", "")
    fig.add_trace(
        _tiles(
            connections, slice_text, L.groups, style, "filter %{y}, input channel %{x}<br>%{text} weights"
        ),
        2,
        1,
    )
    out_ids = np.array([[L.group_of_output(m)] for m in range(L.C_out)])
    fig.add_trace(
        _tiles(out_ids, np.array([[f"out {m}"] for m in range(L.C_out)]), L.groups, style, "output map %{y}"),
        2,
        2,
    )
    shapes: list[dict] = []
    if picked_output is not None:
        m = picked_output
        shapes += outline(m, 0, style, HIGHLIGHT, xref=OUTPUTS, yref="y3")
        for c in L.inputs_of(m):
            shapes += outline(m, c, style, READER, xref=BANK, yref="y2")
            shapes += outline(0, c, style, READER, xref=INPUTS, yref="y")
    if picked_input is not None:
        c = picked_input
        shapes += outline(0, c, style, HIGHLIGHT, xref=INPUTS, yref="y")
        for m in L.outputs_of(c):
            shapes += outline(m, c, style, READER, xref=BANK, yref="y2")
            shapes += outline(m, 0, style, READER, xref=OUTPUTS, yref="y3")
    kind = "depthwise" if L.depthwise else f"{L.groups} group{'s' if L.groups > 1 else ''}"
    title = (
        f"{L.C_in} input channels -> {L.C_out} filters of {L.per_group_in} x {L.K} x {L.K} -> {L.C_out} maps "
        f"({kind}: weight {tuple(L.weight_shape)}, {L.weights():,} weights)"
    )
    cell_px = 2.6 * style.font
    height = int((L.C_out + 1) * cell_px + 90 + 2 * style.title)
    layout_dict = base_layout(title, 0, style)
    layout_dict["height"] = height
    fig.update_layout(**layout_dict, shapes=shapes)
    fig.update_xaxes(showticklabels=False, showgrid=False, zeroline=False, ticks="")
    fig.update_yaxes(showticklabels=False, showgrid=False, zeroline=False, ticks="", autorange="reversed")
    return fig


def hover_pairs(
    layout: ChannelLayout, chart: str
) -> dict[tuple[str, int, int], list[tuple[str, str, int, int]]]:
    """Hover maps for ui.pick: an output map (or its filter's row) lights the filter row and the
    input channels it sums; an input channel its column and the maps that read it."""
    pairs: dict[tuple[str, int, int], list[tuple[str, str, int, int]]] = {}
    for m in range(layout.C_out):
        inputs = layout.inputs_of(m)
        lit = [(chart, BANK, m, c) for c in inputs] + [(chart, INPUTS, 0, c) for c in inputs]
        pairs[(OUTPUTS, m, 0)] = lit
        for c in inputs:
            pairs[(BANK, m, c)] = [*lit, (chart, OUTPUTS, m, 0)]
    for c in range(layout.C_in):
        outputs = layout.outputs_of(c)
        pairs[(INPUTS, 0, c)] = [(chart, BANK, m, c) for m in outputs] + [
            (chart, OUTPUTS, m, 0) for m in outputs
        ]
    return pairs
