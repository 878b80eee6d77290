"""Click a cell of a figure, see where it comes from: the bridge between Plotly charts and Python.

Plotly heatmaps and images cannot be selected through st.plotly_chart, but in the browser they
do fire click and hover events. A small Streamlit component (Components v2, inline JavaScript)
listens to those events on every chart the page shows through `pick.chart(fig, name)`:

- a click becomes a one-run trigger {chart, panel, row, col}: the cell Plotly hit, from the
  click's event data (the point's x and y, rounded: cells are unit squares centred on whole
  data coordinates; the panel is the trace's x axis), so it is exact on a zoomed image too;
- an animation that stops (paused, played to its end, its slider released) becomes the trigger
  {chart, panel: "step", row: the step's index, label: its label}: the page picks what that step
  shows (by its label, which does not depend on the run), so the pick (and a classroom following
  it) is the step on screen;
- hovering a cell outlines the cells it maps to, in the same or other charts, without a rerun
  (layout shapes, drawn by Plotly.relayout): the page sends `rules` (ui/hover.py), a geometry and
  where to draw, and the browser computes the cells (ui/hover_rules.js, with the index formulas'
  JavaScript twin ui/index_math.js), so a grid of any size answers every hover without Python.

A page mounts the bridge once (`pick.bridge(...)`) before drawing, and applies the click to its
settings before computing anything, so every figure of the run shows the new pick.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from ui import charts

PREFIX = "pick-"  # charts live in st.container(key=PREFIX + name): CSS class st-key-pick-<name>

_BRIDGE_JS = r"""
export default function (component) {
  const { data, setTriggerValue } = component;
  const reg = (window.__convExplorerPick ??= { charts: new WeakSet() });
  reg.observer?.disconnect();                  // mounted again with new data: replace the old watcher
  reg.data = data;
  reg.setTriggerValue = setTriggerValue;
  const PREFIX = "st-key-pick-";
  const nameOf = (el) => { const c = [...el.classList]
      .find((k) => k.startsWith(PREFIX)); return c ? c.slice(PREFIX.length) : null; };
  const chartOf = (name) => [...document.querySelectorAll(`.${PREFIX}${name} .js-plotly-plot`)]
      .find((g) => Array.isArray(g.data) && g.layout);
  // the cell Plotly hit, from the event's documented point data: its x and y rounded (every
  // pickable figure draws cells as unit squares centred on whole data coordinates), in the
  // subplot of the trace that was hit (its x axis: "x", "x2", ...; Plotly's default is "x")
  const cellAt = (ev) => {
    const pt = (ev.points || [])[0];
    if (!pt || !Number.isFinite(+pt.x) || !Number.isFinite(+pt.y)) return null;
    return { panel: (pt.data && pt.data.xaxis) || "x", row: Math.round(pt.y), col: Math.round(pt.x) };
  };
  // the y axis of panel "xN": its layout's anchor (make_subplots sets it), else the y axis of a
  // trace drawn on it
  const yOf = (gd, panel) => {
    const axis = gd.layout[panel === "x" ? "xaxis" : "xaxis" + panel.slice(1)] || {};
    const trace = gd.data.find((t) => (t.xaxis || "x") === panel) || {};
    return (axis.anchor && axis.anchor !== "free" ? axis.anchor : null) || trace.yaxis || "y";
  };
  const outline = (gd, cells) => {            // halo + bright line, named so our shapes can be found
    const keep = (gd.layout.shapes || []).filter((s) => s.name !== "hover-hl");
    const st = reg.data.style || {};
    const add = [];
    for (const [panel, r, c] of cells) {
      const yref = yOf(gd, panel);
      const pens = [[st.halo || "black", (st.width || 3) + 3], [st.color || "#ff7f0e", st.width || 3]];
      for (const [color, width] of pens)
        add.push({ type: "rect", name: "hover-hl", xref: panel, yref,
                   x0: c - 0.5, x1: c + 0.5, y0: r - 0.5, y1: r + 0.5, line: { color, width } });
    }
    window.Plotly.relayout(gd, { shapes: keep.concat(add) });
  };
  reg.painted ??= new Set();
  const paint = (targets) => {                // targets: {chartName: [[panel, row, col], ...]}
    for (const name of new Set([...reg.painted, ...Object.keys(targets)])) {
      const gd = chartOf(name);
      if (gd && window.Plotly) outline(gd, targets[name] || []);
    }
    reg.painted = new Set(Object.keys(targets));
  };
  const bind = (gd, name) => {
    if (reg.charts.has(gd)) return;
    reg.charts.add(gd);
    gd.on("plotly_click", (ev) => {
      const c = ev && ev.event && cellAt(ev);
      if (!c) return;
      reg.setTriggerValue("click", { chart: name, panel: c.panel, row: c.row, col: c.col });
    });
    let last = "";
    gd.on("plotly_hover", (ev) => {
      const rules = (reg.data.rules || {})[name];
      const c = rules && ev && ev.event && cellAt(ev);
      if (!c) return;
      const id = `${c.panel}:${c.row},${c.col}`;
      if (id === last) return;
      last = id;
      const hit = HoverRules.cells(rules, c.panel, c.row, c.col);
      paint(hit ? { ...hit, [name]: [[c.panel, c.row, c.col], ...(hit[name] || [])] } : {});
    });
    gd.on("plotly_unhover", () => {
      if ((reg.data.rules || {})[name]) { last = ""; paint({}); }
    });
    // an animation paused, played to its end or its slider released: the step it shows is a pick
    // {chart, panel: "step", row: step index, label: step label}, so a classroom follows the
    // instructor's step. "Shows" is the slider's `active` (Plotly sets it and redraws the
    // current-value label together), read two frames after the stop: the frame an animation was
    // starting when Pause interrupted it can be a step ahead of the screen. One stop fires several
    // of these events: they make one report, and the same step again within a second none.
    let pending = false, lastStep = "", lastAt = 0;
    const stepped = () => {
      if (pending) return;
      pending = true;
      requestAnimationFrame(() => requestAnimationFrame(() => {
        pending = false;
        const slider = ((gd.layout || {}).sliders || [])[0];
        const i = slider ? slider.active : -1;
        const step = slider && Number.isInteger(i) ? (slider.steps || [])[i] : null;
        if (!step) return;
        const label = String(step.label), now = performance.now();
        if (label === lastStep && now - lastAt < 1000) return;
        [lastStep, lastAt] = [label, now];
        reg.setTriggerValue("click", { chart: name, panel: "step", row: i, col: 0, label });
      }));
    };
    for (const ev of ["plotly_animationinterrupted", "plotly_animated", "plotly_sliderend"])
      gd.on(ev, stepped);
  };
  const scan = () => {
    for (const el of document.querySelectorAll(`[class*="${PREFIX}"]`)) {
      const name = nameOf(el), gd = name && chartOf(name);
      if (gd) bind(gd, name);
    }
  };
  reg.observer = new MutationObserver(scan);  // charts mount later, and are replaced on reruns
  reg.observer.observe(document.body, { childList: true, subtree: true });
  scan();
}
"""

# the index formulas' JavaScript twin and the hover rules first (plain scripts), then the bridge's module
_HERE = Path(__file__).resolve().parent
_JS = (
    "".join((_HERE / f).read_text(encoding="utf-8") for f in ("index_math.js", "hover_rules.js")) + _BRIDGE_JS
)
_bridge = st.components.v2.component("conv_explorer_pick", js=_JS)
KEY = "pick_bridge"  # the bridge's state in st.session_state


@dataclass(frozen=True)
class Click:
    """A click on a cell: the chart (its `pick.chart` name), the subplot ("x", "x2", ...) and
    the cell in that subplot's data coordinates (row = y, column = x); or a stopped animation's
    step (panel "step", row = its index, label = its label)."""

    chart: str
    panel: str
    row: int
    col: int
    label: str = ""  # a stopped animation's step: its label


def bridge(*, rules: dict | None = None, style: dict | None = None) -> Click | None:
    """Mount the bridge for this page's charts; return the cell clicked since the last run.

    rules: what hovering each chart outlines, computed in the browser ({chart: [rule, ...]},
    built by ui/hover.py); style: {"color", "halo", "width"} of the outlines.
    """
    data = {"style": style or {}, "rules": rules or {}}
    result = _bridge(key=KEY, data=data, height=0, on_click_change=lambda: None)
    return _as_click(getattr(result, "click", None))


def pending() -> Click | None:
    """This run's click, read before the bridge is mounted: a page whose hover rules follow the
    pick needs the new pick before it can mount the bridge with them."""
    raw = st.session_state.get(KEY)
    return _as_click(raw.get("click") if isinstance(raw, dict) else None)


def _as_click(event: Any) -> Click | None:
    if not isinstance(event, dict):
        return None
    try:
        chart, panel, label = str(event["chart"]), str(event.get("panel", "x")), str(event.get("label", ""))
        return Click(chart, panel, int(event["row"]), int(event["col"]), label)
    except (KeyError, TypeError, ValueError):  # a malformed event: ignore it rather than fail the page
        return None


def chart(fig: go.Figure, name: str) -> None:
    """Show a figure whose cells answer clicks (and hover rules) through the bridge."""
    with st.container(key=PREFIX + name):
        charts.plotly_chart(fig, f"chart_{name}")
