"""Tables as the pages show them: a number format per column and "—" where a value is missing.

st.dataframe draws a missing cell as a grey "None" unless given a placeholder, whatever a
Styler's na_rep says: the pages pass `placeholder=MISSING` with the Styler. Numbers stay numeric
(right-aligned, sorted by value).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

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
