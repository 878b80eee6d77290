"""Plotly charts that update in place: a click or a slider move redraws what changed, not the page.

st.plotly_chart derives an element's identity from its figure, so every rerun that changes a
figure (a new pick outline, a new stride) makes it a new element: Streamlit's frontend unmounts
the chart (Plotly.purge), mounts a fresh one and draws it in full, then once more when it applies
its theme. On a 2-core machine's headless Chromium a click on the Direct page cost about 2.7 CPU
seconds of drawing that way. Here every chart is a component (Components v2, no shadow DOM, so
ui.pick and the tests find `.js-plotly-plot` as before) keyed by its name: the same element from
run to run, drawn with Plotly.react, which redraws only what differs. Traces whose JSON did not
change keep their objects, so a new pick outline is a layout update of the shapes alone.

Plotly's JavaScript and Streamlit's chart theme come from one small, invisible st.plotly_chart
per page (`mount_plotly`, called by app.py before the page): Streamlit loads Plotly for it and
themes its figure, and every chart here draws with that Plotly and that theme (the template its
frontend built), so charts look as st.plotly_chart draws them, in a light or dark theme alike.
"""

from __future__ import annotations

import json
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio
import streamlit as st

LOADER = "plotly_loader"  # st.container(key=LOADER): CSS class st-key-plotly_loader
CHART_CLASS = "cx-chart"  # the div Plotly draws into, one per chart, kept across reruns

_JS = r"""
export default function (component) {
  const { data, parentElement } = component;
  const spec = JSON.parse(new TextDecoder().decode(data));
  let gd = parentElement.querySelector(":scope > .cx-chart");
  if (!gd) {
    gd = document.createElement("div");
    gd.className = "cx-chart";
    parentElement.appendChild(gd);
  }
  gd.__cxSpec = spec;  // the newest figure: a draw still waiting for Plotly draws this one
  const theme = () => {  // Plotly and Streamlit's chart template, from the page's loader chart
    const loader = document.querySelector(".st-key-plotly_loader .js-plotly-plot");
    return window.Plotly && loader && loader.layout && loader.layout.template ? loader.layout.template : null;
  };
  // a trace (or frame list) whose JSON did not change keeps its object: Plotly.react then leaves it alone
  const same = (name, value) => {
    const text = JSON.stringify(value ?? null), old = gd.__cxKept?.[name];
    if (old && old.text === text) return old.value;
    (gd.__cxKept ??= {})[name] = { text, value };
    return value;
  };
  const draw = () => {
    const template = theme();
    if (!template) return false;
    const { figure, config } = gd.__cxSpec;
    const layout = { ...figure.layout, template, width: Math.max(parentElement.clientWidth, 150),
                     height: gd.__cxFitHeight ?? figure.layout.height ?? 450 };
    const title = layout.title;  // Streamlit's theme sets titles in bold
    if (title && typeof title.text === "string" && title.text && !title.text.startsWith("<b>"))
      layout.title = { ...title, text: `<b>${title.text}</b>` };
    const traces = (figure.data || []).map((t, i) => same(`trace${i}`, t));
    const frames = same("frames", figure.frames || null);
    window.Plotly.react(gd, { data: traces, layout, frames: frames || undefined,
                              config: { displaylogo: false, ...config } });
    return true;
  };
  clearInterval(gd.__cxWait);
  if (!draw()) gd.__cxWait = setInterval(() => { if (draw()) clearInterval(gd.__cxWait); }, 50);
  if (!gd.__cxResize) {  // the column's width, sidebar open or not
    gd.__cxResize = new ResizeObserver(() => {
      const w = Math.max(parentElement.clientWidth, 150);
      if (gd._fullLayout && Math.abs(gd._fullLayout.width - w) > 1) window.Plotly.relayout(gd, { width: w });
    });
    gd.__cxResize.observe(parentElement);
  }
}
"""

_chart = st.components.v2.component("conv_explorer_chart", js=_JS, isolate_styles=False)
# Off screen, not hidden: Streamlit draws no chart of zero width, and then there would be no theme to read.
# Its wrapper leaves the page's flow too (an empty in-flow box would still get the column's gap).
LOADER_CSS = (f".st-key-{LOADER}{{position:absolute;left:-10000px;width:320px;height:40px;overflow:hidden}}"
              f"[data-testid=stLayoutWrapper]:has(> .st-key-{LOADER}){{position:absolute}}")  # fmt: skip
_LOADER_FIGURE = go.Figure(layout=dict(height=40, margin=dict(l=0, r=0, t=0, b=0)))


def mount_plotly() -> None:
    """Once per run, before the page's charts: the loader chart (see the module docstring)."""
    st.html(f"<style>{LOADER_CSS}</style>")  # a style-only st.html takes no room on the page
    with st.container(key=LOADER):
        st.plotly_chart(_LOADER_FIGURE, key=f"{LOADER}_chart", config={"staticPlot": True})


def payload(fig: go.Figure | dict, config: dict[str, Any] | None = None) -> bytes:
    """What a chart sends: the figure's JSON (a memoised figure's is encoded once, viz/memo.py)."""
    figure = pio.to_json(fig, validate=False)
    return b'{"figure":' + figure.encode() + b',"config":' + json.dumps(config or {}).encode() + b"}"


def show(fig: go.Figure, key: str, config: dict[str, Any] | None = None) -> None:
    """Draw `fig` in the element keyed `key` (CSS class st-key-<key>), updating it in place."""
    _chart(key=key, data=payload(fig, config))


def spec_of(data: bytes) -> dict:
    """The figure a chart's payload carries (for tests and downloads)."""
    return json.loads(data)["figure"]
