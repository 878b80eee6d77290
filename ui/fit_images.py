"""Pickable image charts as tall as their column allows: images scale with the column, sidebar
open or not. The JavaScript lives in assets/js/fit_images.js, read once at import."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

_JS = (Path(__file__).resolve().parent.parent / "assets" / "js" / "fit_images.js").read_text()
_fit_images = st.components.v2.component("direct_fit_images", js=_JS)


def fit_images(*names: str, screen: float = 0.62) -> None:
    """Make the named pickable image charts (ui.pick.chart) as tall as their column width allows:
    height = width x rows / columns of their axes' ranges, at most `screen` of the window."""
    charts = {name: {"screen": screen} for name in names}
    _fit_images(key="direct_fit_images", data={"charts": charts}, height=0)
