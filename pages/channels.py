"""Channels and groups: C_in x K x K filters over the input volume make C_out maps; groups and
depthwise."""

import streamlit as st

from gpuops.maps.channels import ChannelLayout
from ui import channels_view as view
from ui import hover, navigation, pick, state
from ui.common import figure, shown_errors, style
from ui.state import Cell, Param
from viz import channels as viz

navigation.through_app()  # a freshly started server may run this file alone (ui/navigation.py)

C_IN = Param("channels_in", 6, "Input channels C_in", "slider", lo=1, hi=12)
C_OUT = Param(
    "channels_out", 16, "Filters C_out", "slider", lo=1, hi=16, help="Each filter makes one output map."
)
GROUPS = Param(
    "channels_groups",
    1,
    "groups",
    "select_slider",
    choices=tuple(range(1, 13)),
    help="Must divide C_in and C_out; groups = C_in = C_out is depthwise.",
)
KERNEL = Param("channels_k", 5, "Kernel size K", "slider", lo=1, hi=7)
PICK = Param("channels_pick", Cell("out", 0, 0), choices=("out", "in"))
PARAMS = [C_IN, C_OUT, GROUPS, KERNEL, PICK]
CHART = "channels"

state.use(PARAMS)
sty = style()
st.title("Channels and groups")
st.caption(
    "A convolution layer's filter is a C_in x K x K block: it slides over every input channel at "
    "once and sums them into ONE output map, so C_out filters make C_out maps (LeNet's conv2: 6 "
    "maps in, 16 filters of 6 x 5 x 5, 16 maps out). With groups = G the channels split into G "
    "groups and a filter sees only its group's C_in / G channels; groups = C_in = C_out is the "
    "depthwise convolution. **Click an output map, a filter or an input channel.**"
)


def settings() -> ChannelLayout:
    a, b, c, d = st.columns([1, 1, 1, 1])
    c_in = int(state.widget(C_IN, container=a))
    c_out = int(state.widget(C_OUT, container=b))
    allowed = view.allowed_groups(c_in, c_out)
    if state.get(GROUPS) not in allowed:
        state.put(GROUPS, view.nearest_groups(state.get(GROUPS), allowed))
    if len(allowed) > 1:  # the choices follow C_in and C_out, so the widget is built here
        st.session_state["w_channels_groups"] = state.get(GROUPS)
        groups = int(
            c.select_slider(
                GROUPS.label,
                options=allowed,
                key="w_channels_groups",
                help=GROUPS.help,
                on_change=lambda: state.put(GROUPS, st.session_state["w_channels_groups"]),
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


def section(layout: ChannelLayout) -> None:
    cell = state.get(PICK) or PICK.default
    if cell.space == "out":
        m = min(cell.row, layout.C_out - 1)
        state.put(PICK, Cell("out", m, 0))
        fig = viz.channel_figure(layout, sty, picked_output=m)
        text = view.output_text(layout, m)
    else:
        c = min(cell.col, layout.C_in - 1)
        state.put(PICK, Cell("in", 0, c))
        fig = viz.channel_figure(layout, sty, picked_input=c)
        text = view.input_text(layout, c)
    figure(fig, CHART, "Colour: the group. Orange: the pick; red: what it connects to.", pickable=True)
    st.markdown(text)
    if st.toggle("The same layer in 3-D", key="channels_3d"):
        m = cell.row if cell.space == "out" else layout.outputs_of(min(cell.col, layout.C_in - 1))[0]
        figure(
            viz.volume_figure(layout, sty, picked_output=min(m, layout.C_out - 1)),
            "channels_3d",
            "Input channels as stacked slabs, the picked filter as the orange block over the channels it "
            "sums, the output maps on the right. Drag to turn.",
        )
    st.caption(view.weights_text(layout))


with shown_errors("The channel view"):
    layout = settings()
    panels = (viz.INPUTS, viz.BANK, viz.OUTPUTS)
    rules = hover.channel_groups(layout.C_in, layout.C_out, layout.groups, chart=CHART, panels=panels)
    apply_click(pick.bridge(rules=rules, style=sty.outline_style()), layout)
    section(layout)
