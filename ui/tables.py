"""Tables as the pages show them: a number format per column and "—" where a value is missing.

st.dataframe draws a missing cell as a grey "None" unless given a placeholder, whatever a
Styler's na_rep says: the pages pass `placeholder=MISSING` with the Styler. Numbers stay numeric
(right-aligned, sorted by value).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import streamlit as st

MISSING = "—"


def styled(frame: pd.DataFrame, formats: Sequence[tuple[str, str]]) -> Any:
    """frame as a Styler: each number column whose name starts with a key of `formats` (the first
    that matches) formatted with its spec; missing values as MISSING."""
    chosen = {}
    for column in frame.columns:
        spec = next((f for start, f in formats if str(column).startswith(start)), None)
        if spec is not None and frame[column].dtype.kind in "fi":
            chosen[column] = spec
    return frame.style.format(chosen, na_rep=MISSING)


PROJECTED_ROWS = 60  # longer tables stay scrolling data frames on the projector too


def show(
    data: Any,
    *,
    presentation: bool,
    key: str | None = None,
    height: int | None = None,
    column_config: dict | None = None,
) -> None:
    """A table as the pages show it: st.dataframe (sortable, scrolling), or on the projector
    (presentation mode) st.table, whose HTML text ui/presentation.css enlarges like every other
    text: st.dataframe draws its cells on a canvas that CSS cannot size. `data`: a pandas frame,
    its Styler (from `styled`) or an Arrow table; `height` and `column_config` are the data
    frame's."""
    frame = data.to_pandas() if hasattr(data, "to_pandas") else data
    rows = len(frame.data if hasattr(frame, "data") else frame)
    if not presentation or rows > PROJECTED_ROWS:
        extra = {} if height is None else {"height": height}
        st.dataframe(
            data, hide_index=True, key=key, placeholder=MISSING, column_config=column_config, **extra
        )
        return
    styler = frame if hasattr(frame, "hide") else frame.style.format(precision=4, na_rep=MISSING)
    st.table(styler.hide(axis="index"))
