"""Channels and groups: C_in x K x K filters over the input volume make C_out maps; groups and depthwise."""

import streamlit as st

from gpuops.maps.channels import ChannelLayout
from ui import navigation, pick, state
from ui.common import figure, shown_errors, style
from ui.state import Cell, Param
from viz import channels as viz

navigation.through_app()  # a freshly started server may run this file alone (ui/navigation.py)

C_IN = Param("ch_in", 6, "Input channels C_in", "slider", lo=1, hi=12)
C_OUT = Param("ch_out", 16, "Filters = output maps C_out", "slider", lo=1, hi=16)
GROUPS = Param(
    "ch_groups",
    1,
    "groups",
    "select_slider",
    choices=tuple(range(1, 13)),
    help="Must divide C_in and C_out; groups = C_in = C_out is depthwise.",
)
KERNEL = Param("ch_k", 5, "Kernel size K", "slider", lo=1, hi=7)
PICK = Param("ch_pick", Cell("out", 0, 0), choices=("out", "in"))
PARAMS = [C_IN, C_OUT, GROUPS, KERNEL, PICK]
CHART = "channels"

state.use(PARAMS)
sty = style()
st.title("Channels and groups")
st.caption(
    "A convolution layer's filter is a C_in x K x K block: it slides over every input channel at once and sums "
    "them into ONE output map, so C_out filters make C_out maps (LeNet's conv2: 6 maps in, 16 filters of "
    "6 x 5 x 5, 16 maps out). With groups = G the channels split into G groups and a filter sees only its "
    "group's C_in / G channels; groups = C_in = C_out is the depthwise convolution. **Click an output map, a "
    "filter or an input channel.**"
)


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def settings() -> ChannelLayout:
    a, b, c, d = st.columns([1, 1, 1, 1])
    c_in = int(state.widget(C_IN, container=a))
    c_out = int(state.widget(C_OUT, container=b))
    allowed = [g for g in divisors(c_in) if c_out % g == 0]
    if state.get(GROUPS) not in allowed:
        state.put(GROUPS, max(g for g in allowed if g <= state.get(GROUPS)))
    if len(allowed) > 1:  # the choices follow C_in and C_out, so the widget is built here
        st.session_state["w_ch_groups"] = state.get(GROUPS)
        groups = int(
            c.select_slider(
                GROUPS.label,
                options=allowed,
                key="w_ch_groups",
                help=GROUPS.help,
                on_change=lambda: state.put(GROUPS, st.session_state["w_ch_groups"]),
            )
        )
    else:
        groups = 1
        c.caption(f"groups: 1 (no other number divides both {c_in} and {c_out})")
    k = int(state.widget(KERNEL, container=d))
    return ChannelLayout(c_in, c_out, groups, k)


def apply_click(click: pick.Click | None, layout: ChannelLayout) -> None:
    if click is None or click.chart != CHART:
        return
    if click.panel in (viz.OUTPUTS, viz.BANK) and 0 <= click.row < layout.C_out:
        state.put(PICK, Cell("out", click.row, 0))
    elif click.panel == viz.INPUTS and 0 <= click.col < layout.C_in:
        state.put(PICK, Cell("in", 0, click.col))


def _span(channels: list[int]) -> str:
    return str(channels[0]) if len(channels) == 1 else f"{channels[0]}-{channels[-1]}"


def section(layout: ChannelLayout) -> None:
    cell = state.get(PICK) or PICK.default
    if cell.space == "out":
        m = min(cell.row, layout.C_out - 1)
        state.put(PICK, Cell("out", m, 0))
        fig = viz.channel_figure(layout, sty, picked_output=m)
        inputs = layout.inputs_of(m)
        text = (
            f"**Output map {m}** is filter {m} (group {layout.group_of_output(m)}) slid over input channels "
            f"**{_span(inputs)}**: each output pixel sums {len(inputs)} x {layout.K} x {layout.K} = "
            f"{len(inputs) * layout.K**2} products (+ bias)."
        )
    else:
        c = min(cell.col, layout.C_in - 1)
        state.put(PICK, Cell("in", 0, c))
        fig = viz.channel_figure(layout, sty, picked_input=c)
        outputs = layout.outputs_of(c)
        text = (
            f"**Input channel {c}** (group {layout.group_of_input(c)}) is read by filters and output maps "
            f"**{_span(outputs)}** ({len(outputs)} of {layout.C_out})."
        )
    figure(fig, CHART, "Colour: the group. Orange: the pick; red: what it connects to.", pickable=True)
    st.markdown(text)
    if st.toggle("The same layer in 3-D", key="ch_3d"):
        m = cell.row if cell.space == "out" else layout.outputs_of(min(cell.col, layout.C_in - 1))[0]
        figure(
            viz.volume_figure(layout, sty, picked_output=min(m, layout.C_out - 1)),
            "channels_3d",
            "Input channels as stacked slabs, the picked filter as the orange block over the channels it "
            "sums, the output maps on the right. Drag to turn.",
        )
    dense = layout.C_out * layout.C_in * layout.K**2
    st.caption(
        f"Weights: {layout.weights():,} = C_out {layout.C_out} x C_in/G {layout.per_group_in} x K {layout.K} x K "
        f"{layout.K}; without groups it would be {dense:,} ({dense // layout.weights()}x as many). The same "
        "number of multiply-adds per output pixel saved: groups make a layer cheaper and its channels independent."
    )


with shown_errors("The channel view"):
    layout = settings()
    hover = pick.hover_map(viz.hover_pairs(layout, CHART))
    apply_click(pick.bridge(hover={CHART: hover}, style=sty.outline_style()), layout)
    section(layout)
