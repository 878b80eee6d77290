"""The custom-kernel editor: one text box validated as a whole, the reason beside it, and the last
valid kernel kept.

A half-typed kernel ("1 2 1; 2 x") never replaces the page: the box keeps what was typed, a
message beside it says what is wrong and where, and the figures go on showing the last valid
kernel until the text is one. The kernel's size is its own (K follows it); "normalise" and
"flip" act on the kernel in use and rewrite the box. The kernel is a `KernelParam`, so it is in
the link like every other setting.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from gpuops import filters
from ui import state
from ui.common import style
from ui.kernel_param import (
    Cells,
    KernelParam,
    as_cells,
    flipped,
    from_typed,
    identity,
    normalised,
    rounding_notes,
    to_typed,
)


def _keys(param: KernelParam) -> tuple[str, str, str, str]:
    """(text box, kernel the box shows, its message, its float32 notes) in st.session_state."""
    return f"w_{param.key}_text", f"_{param.key}_shown", f"_{param.key}_error", f"_{param.key}_notes"


def side(param: KernelParam) -> int | None:
    """K of the kernel in use (None before one exists): the page's K follows it."""
    cells = state.get(param)
    return len(cells) if cells else None


def _typed(param: KernelParam) -> None:
    """The box changed (Ctrl+Enter or leaving it): use its kernel if the whole text is one."""
    state.note_change()
    text_key, shown_key, error_key, notes_key = _keys(param)
    text = st.session_state[text_key]
    try:
        cells = from_typed(text)
    except ValueError as exc:
        st.session_state[error_key] = str(exc)
        return
    state.put(param, cells)
    st.session_state[shown_key] = cells  # the box already shows it, as typed
    st.session_state[error_key] = None
    st.session_state[notes_key] = rounding_notes(text)


def _apply(param: KernelParam, how: str) -> None:
    """A button: normalise or flip the kernel in use; the box is rewritten to show the result."""
    state.note_change()
    _, _, error_key, notes_key = _keys(param)
    try:
        cells = normalised(state.get(param)) if how == "normalise" else flipped(state.get(param))
    except ValueError as exc:
        st.session_state[error_key] = f"Not normalised: {exc}"
        return
    state.put(param, cells)
    st.session_state[error_key] = None
    st.session_state[notes_key] = []


def edit(param: KernelParam, k: int, *, start: Cells | np.ndarray | None = None) -> np.ndarray:
    """Draw the editor and return the kernel in use (float32, K x K).

    k: the size to start with when there is no kernel yet; start: its first weights (the
    preset that was on screen), else the k x k identity."""
    text_key, shown_key, error_key, notes_key = _keys(param)
    ss = st.session_state
    cells = state.get(param)
    if cells is None:
        cells = as_cells(start) if start is not None else identity(k)
        state.put(param, cells)
    if ss.get(shown_key) != cells:  # changed outside the box (a link, a button): the box shows it
        ss[text_key] = to_typed(cells)
        ss[shown_key] = cells
        ss[error_key] = None
        ss[notes_key] = []
    size = len(cells)
    with st.container(border=True, key=f"{param.key}_editor"):
        box, beside = st.columns([1, 2])
        line = 32 if style().presentation else 22  # px per row of the box: all K rows in view
        box.text_area(
            f"Custom kernel, {size} x {size}",
            key=text_key,
            on_change=_typed,
            args=(param,),
            height=min(max(68, 2 * line + line * size), 12 * line),
            help=(
                f"One row per line (or rows split by ;), numbers such as 0.5, -2, 1e-3 or 1/16 separated by "
                f"spaces or commas; any K x K up to {filters.MAX_KERNEL} x {filters.MAX_KERNEL}. Ctrl+Enter "
                "or a click outside applies it."
            ),
        )
        with beside:
            error = ss.get(error_key)
            if error:
                st.error(
                    f"{error}. Still using the last valid kernel ({size} x {size}).",
                    icon=":material/edit_off:",
                )
            else:
                total = float(np.sum(np.asarray(cells, dtype=np.float64)))
                notes = "; ".join(ss.get(notes_key) or [])
                scale = ""
                if not filters.is_edge_filter(np.asarray(cells)) and abs(total - 1) > 1e-6:
                    scale = f" A flat region comes out {total:.3g} times as bright; normalise to keep it."
                st.caption(
                    f"In use: {size} x {size}, weights sum to {total:.6g}.{scale}"
                    + (f" {notes}." if notes else "")
                )
            left, right = st.columns(2)
            left.button(
                "Normalise (sum 1)",
                key=f"{param.key}_normalise",
                on_click=_apply,
                args=(param, "normalise"),
                help="Divide every weight by their sum: a blur then keeps the image's brightness.",
            )
            right.button(
                "Flip (true convolution)",
                key=f"{param.key}_flip",
                on_click=_apply,
                args=(param, "flip"),
                help="Rotate by 180 degrees. The page computes a correlation (like PyTorch's conv2d); "
                "with the flipped kernel it is the convolution of the textbook.",
            )
    return filters.check_custom_kernel(np.asarray(cells))
