"""A tiny app for the presenter keys' browser test (tests/browser/test_e2e_presentation.py): one
animated figure with the app's play / pause buttons and step slider (viz/animation.py), a number
input, and the keyboard control mounted as app.py mounts it. `ui` imports from the repository root
(tests/support/browser.py starts `python -m streamlit run` there)."""

import plotly.graph_objects as go
import streamlit as st

from ui import presenter
from viz import animation
from viz.style import NORMAL

LABELS = [f"step {i}" for i in range(12)]

presenter.apply(False, st.container())
st.number_input("A number", 0, 100, 50, key="number")
fig = go.Figure(
    data=[go.Scatter(x=[0], y=[0], mode="markers", marker=dict(size=20))],
    frames=[go.Frame(name=lab, data=[go.Scatter(x=[i], y=[0])]) for i, lab in enumerate(LABELS)],
)
controls = animation.controls(LABELS, NORMAL, animation.Controls(prefix="at ", ms=300, y=-0.15))
fig.update_layout(height=420, xaxis=dict(range=[-1, 12]), yaxis=dict(range=[-1, 1]), **controls)
st.plotly_chart(fig, key="animated")
