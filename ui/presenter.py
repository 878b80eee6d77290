"""Presentation mode and keyboard control: what app.py adds to every page for a projector.

- Presentation mode (the sidebar's toggle, `pres=1` in the link): ui/presentation.css sizes
  every text element of the main area for a projector (body text 24 px, the rest >= 20 px);
  figures size their own text (viz/style.py).
- Keys for a presenter remote, on every page: space plays or pauses the animation in view,
  the arrow keys and Page Up / Page Down step it (ui/presenter.js, a Components v2 component).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import streamlit as st

HERE = Path(__file__).resolve().parent
CSS = (HERE / "presentation.css").read_text(encoding="utf-8")
_keys = st.components.v2.component(
    "conv_explorer_keys", js=(HERE / "presenter.js").read_text(encoding="utf-8")
)


def apply(presentation: bool, container: Any) -> None:
    """The keyboard control (mounted invisibly in `container`) and, in presentation mode, its CSS."""
    with container:
        _keys(key="presenter_keys", height=0)
    if presentation:
        st.html(f"<style>{CSS}</style>")
