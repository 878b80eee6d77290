"""A tiny app for the bridge's own browser test (tests/browser/test_e2e_pick.py): a heatmap, an image and
two subplots, each pickable; hovering the heatmap (the input of a 2 x 2 window, stride 1) outlines
the outputs that read the cell in the subplots' second panel.
`ui` imports from the repository root: tests/support/browser.py starts `python -m streamlit run` there, and
`python -m` puts the working directory on sys.path (an installed project needs nothing)."""

import numpy as np
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

import gpuops
from ui import hover, pick

WINDOW = gpuops.window_geometry(6, 6, 2, 1, 0, 1)  # H, W, K, stride, padding, dilation
click = pick.bridge(rules=hover.window(WINDOW, "zeros", outputs=("panels", "x2"), inputs=("grid", "x")))
if click is not None:
    st.session_state["last"] = click
last = st.session_state.get("last")
st.markdown(f"PICKED {last.chart} {last.panel} {last.row},{last.col}" if last else "PICKED none")
st.slider("A slider", 0, 10, 3, key="slider")

grid = go.Figure(go.Heatmap(z=np.arange(36).reshape(6, 6), x=np.arange(6), y=np.arange(6)))
grid.update_yaxes(autorange="reversed")
grid.update_layout(height=360, width=420)
pick.chart(grid, "grid")

rgb = (np.random.default_rng(0).random((256, 256, 3)) * 255).astype(np.uint8)
image = go.Figure(go.Image(z=rgb))
image.update_layout(height=420, width=420)
pick.chart(image, "image")

panels = make_subplots(rows=1, cols=2)
panels.add_trace(go.Heatmap(z=np.zeros((4, 5)), showscale=False), row=1, col=1)
panels.add_trace(go.Heatmap(z=np.ones((6, 6)), showscale=False), row=1, col=2)
panels.update_yaxes(autorange="reversed")
panels.update_layout(height=360, width=700)
pick.chart(panels, "panels")
