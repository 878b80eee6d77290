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
from viz.memo import figure_memo
from viz.style import HIGHLIGHT, NORMAL, READER, Pen, Style, base_layout, cell_colours, outline

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


@figure_memo
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
        shapes += outline((m, 0), style, Pen(HIGHLIGHT, panel=OUTPUTS))
        for c in L.inputs_of(m):
            shapes += outline((m, c), style, Pen(READER, panel=BANK))
            shapes += outline((0, c), style, Pen(READER, panel=INPUTS))
    if picked_input is not None:
        c = picked_input
        shapes += outline((0, c), style, Pen(HIGHLIGHT, panel=INPUTS))
        for m in L.outputs_of(c):
            shapes += outline((m, c), style, Pen(READER, panel=BANK))
            shapes += outline((m, 0), style, Pen(READER, panel=OUTPUTS))
    kind = "depthwise" if L.depthwise else f"{L.groups} group{'s' if L.groups > 1 else ''}"
    title = (
        f"{L.C_in} input channels -> {L.C_out} filters of {L.per_group_in} x {L.K} x {L.K} "
        f"-> {L.C_out} maps<br>({kind}: weight {tuple(L.weight_shape)}, {L.weights():,} weights)"
    )
    cell_px = 2.6 * style.font
    height = int((L.C_out + 1) * cell_px + 90 + 3 * style.title)  # a two-line title
    layout_dict = base_layout(title, 0, style)
    layout_dict["height"] = height
    fig.update_layout(**layout_dict, shapes=shapes)
    fig.update_xaxes(showticklabels=False, showgrid=False, zeroline=False, ticks="")
    fig.update_yaxes(showticklabels=False, showgrid=False, zeroline=False, ticks="", autorange="reversed")
    return fig


# ---- the same layer in 3-D: volumes of channels, the picked filter as a block ---------------------------
_BOX_I, _BOX_J, _BOX_K = (  # the 12 triangles of a box's 6 faces, over its 8 corners (x, y, z bits)
    [0, 0, 4, 4, 0, 0, 2, 2, 0, 0, 1, 1],
    [1, 3, 5, 7, 1, 5, 3, 7, 2, 6, 3, 7],
    [3, 2, 7, 6, 5, 4, 7, 6, 6, 4, 7, 5],
)


Point = tuple[float, float, float]


def _box(lo: Point, hi: Point, colour: str, opacity: float, name: str) -> go.Mesh3d:
    """A box from corner lo to corner hi (x, y, z), in one colour."""
    (x0, y0, z0), (x1, y1, z1) = lo, hi
    corners = [(x, y, z) for z in (z0, z1) for y in (y0, y1) for x in (x0, x1)]  # index = x + 2y + 4z bits
    xs, ys, zs = zip(*corners, strict=True)
    return go.Mesh3d(
        x=xs,
        y=ys,
        z=zs,
        i=_BOX_I,
        j=_BOX_J,
        k=_BOX_K,
        color=colour,
        opacity=opacity,
        flatshading=True,
        name=name,
        hovertemplate=f"{name}<extra></extra>",
        showscale=False,
    )


@figure_memo
def volume_figure(
    layout: ChannelLayout, style: Style = NORMAL, *, picked_output: int = 0, side: int = 8
) -> go.Figure:
    """The input volume (C_in slabs of side x side), the picked output's filter as a
    (C_in / G) x K x K block over the input channels it sums, and the C_out output maps, the
    picked one in orange; each slab in its group's colour. Drag to turn it."""
    L = layout
    colours = cell_colours(max(1, L.groups))
    inputs = set(L.inputs_of(picked_output))
    fig = go.Figure()
    gap = 1.6  # between slabs, along the channel axis
    for c in range(L.C_in):
        lit = c in inputs
        fig.add_trace(
            _box(
                (0, 0, c * gap),
                (side, side, c * gap + 0.4),
                colours[L.group_of_input(c)],
                0.9 if lit else 0.25,
                f"input channel {c}",
            )
        )
    lo, hi = min(inputs), max(inputs)
    k = min(L.K, side)
    fig.add_trace(
        _box(
            (1, 1, lo * gap - 0.2),
            (1 + k, 1 + k, hi * gap + 0.6),
            HIGHLIGHT,
            0.55,
            f"filter {picked_output}: {L.per_group_in} x {L.K} x {L.K}",
        )
    )
    offset = side + 6
    for m in range(L.C_out):
        picked = m == picked_output
        fig.add_trace(
            _box(
                (offset, 0, m * gap),
                (offset + side, side, m * gap + 0.4),
                HIGHLIGHT if picked else colours[L.group_of_output(m)],
                0.95 if picked else 0.3,
                f"output map {m}",
            )
        )
    hidden = dict(showticklabels=False, showgrid=False, zeroline=False, showbackground=False, title="")
    layout_dict = base_layout(
        f"In 3-D: filter {picked_output} spans input channels {lo}-{hi} (orange block), "
        f"makes output map {picked_output}",
        440,
        style,
    )
    layout_dict["margin"] = dict(l=0, r=0, t=40 + 2 * style.title, b=0)
    fig.update_layout(
        **layout_dict,
        showlegend=False,
        scene=dict(
            xaxis=hidden,
            yaxis=hidden,
            zaxis=hidden,
            aspectmode="data",
            camera=dict(eye=dict(x=-1.1, y=-1.6, z=0.9)),
        ),
    )
    return fig
