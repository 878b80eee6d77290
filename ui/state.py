"""Settings: one `Param` table per page gives every setting its widget, range and URL key.

Values live in st.session_state (under the Param's key) and in the URL query string, so a
shared link reproduces the view; app.py writes the URL once per run (`sync_query`). Values
from the URL are untrusted text: each is parsed against its declared type and range,
clamped or ignored with a notice, and never evaluated. A page:

    PARAMS = [Param("dc_k", 3, "Kernel size K", "slider", lo=1, hi=15), ...]
    state.use(PARAMS)                 # seed from the URL once, remember them for the URL sync
    k = state.widget(PARAMS[0], hi=7) # a widget bound to the setting; ranges may narrow per run
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import streamlit as st

_INT = re.compile(r"^-?\d{1,7}$")
_CELL = re.compile(r"^([a-z]{1,8}):(\d{1,5}),(\d{1,5})$")
MAX_RAW = 40  # longer query values are ignored unread
PAGE_KEY = "_page_params"  # session_state: the current page's Params (for the URL sync)
URL_EXTRAS = {"room"}  # query keys that are not settings but stay in the link (a classroom join code)


@dataclass(frozen=True)
class Cell:
    """A picked cell: which figure space it is in ("out", "in", "col", ...) and where."""

    space: str
    row: int
    col: int

    def __str__(self) -> str:
        return f"{self.space}:{self.row},{self.col}"


@dataclass(frozen=True)
class Param:
    """One setting: its key (widget key and query name), default, widget and allowed values.

    widget: "slider", "select_slider", "number", "select", "radio", "toggle", or "" for a
    setting without a widget of its own (a picked cell). For a cell, `choices` lists the
    allowed spaces and the default is a Cell or None.
    """

    key: str
    default: Any
    label: str = ""
    widget: str = ""
    lo: int | None = None
    hi: int | None = None
    choices: tuple[Any, ...] = ()
    help: str | None = None

    @property
    def is_cell(self) -> bool:
        return isinstance(self.default, Cell) or (self.default is None and bool(self.choices))

    def parse(self, raw: str) -> tuple[Any, str | None]:
        """(value, notice): the value to use for a raw query string, and why it changed."""
        # echo only harmless characters of untrusted text, and only a little of it
        shown = re.sub(r"[^A-Za-z0-9_.,:\-]", "?", raw[:20]) + ("…" if len(raw) > 20 else "")
        if len(raw) > MAX_RAW:
            return self.default, f"`{self.key}` in the link was too long and was ignored"
        if self.is_cell:
            match = _CELL.match(raw.strip())
            if match is None or match.group(1) not in self.choices:
                return self.default, f"`{self.key}={shown!r}` in the link is not a cell like out:3,5; ignored"
            return Cell(match.group(1), int(match.group(2)), int(match.group(3))), None
        if isinstance(self.default, bool):
            if raw.lower() in ("1", "true", "yes", "on"):
                return True, None
            if raw.lower() in ("0", "false", "no", "off"):
                return False, None
            return self.default, f"`{self.key}={shown!r}` in the link is not true/false; ignored"
        if isinstance(self.default, int):
            if not _INT.match(raw.strip()):
                return self.default, f"`{self.key}={shown!r}` in the link is not a whole number; ignored"
            value = int(raw)
            if self.choices and value not in self.choices:
                nearest = min(self.choices, key=lambda c: abs(c - value))
                return (
                    nearest,
                    f"`{self.key}={value}` in the link is not one of {self.choices}; using {nearest}",
                )
            lo = self.lo if self.lo is not None else value
            hi = self.hi if self.hi is not None else value
            clamped = min(max(value, lo), hi)
            if clamped != value:
                return (
                    clamped,
                    f"`{self.key}={value}` in the link is out of range {self.lo}..{self.hi}; using {clamped}",
                )
            return value, None
        if self.choices:
            if raw in self.choices:
                return raw, None
            return (
                self.default,
                f"`{self.key}={shown!r}` in the link is not one of {', '.join(self.choices)}; ignored",
            )
        return self.default, None

    def text(self, value: Any) -> str:
        """The value as it is written into the URL."""
        if isinstance(value, bool):
            return str(int(value))
        return "" if value is None else str(value)


def init_params(params: list[Param]) -> list[str]:
    """Seed session_state from the URL once per session; returns notices for bad URL values."""
    notices = []
    for p in params:
        if p.key in st.session_state:
            continue
        raw = st.query_params.get(p.key)
        if raw is None or raw == "":
            st.session_state[p.key] = p.default
            continue
        value, notice = p.parse(str(raw))
        st.session_state[p.key] = value
        if notice:
            notices.append(notice)
    return notices


def use(params: list[Param]) -> None:
    """A page's first call: seed its settings from the URL (with notices for bad values) and
    remember them, so app.py writes exactly these (and the sidebar's) into the URL."""
    show_notices(init_params(params))
    st.session_state[PAGE_KEY] = params


def sync_query(sidebar: list[Param]) -> None:
    """Write the sidebar's and the current page's settings into the URL (once per run, from
    app.py), so the address bar is always a shareable link of what is on screen."""
    params = [*sidebar, *st.session_state.get(PAGE_KEY, [])]
    wanted = {p.key: p.text(st.session_state.get(p.key, p.default)) for p in params}
    for key, text in wanted.items():
        if not text:
            if key in st.query_params:
                del st.query_params[key]
        elif st.query_params.get(key) != text:
            st.query_params[key] = text
    for key in list(st.query_params):  # settings of other pages do not belong in this link
        if key not in wanted and key not in URL_EXTRAS:
            del st.query_params[key]


def show_notices(notices: list[str]) -> None:
    for text in notices:
        st.warning(text, icon=":material/link:")


def get(p: Param) -> Any:
    return st.session_state.get(p.key, p.default)


def put(p: Param, value: Any) -> None:
    """Set a setting from code (a click, a reset button): the widget follows on this run."""
    st.session_state[p.key] = value


def clamp(p: Param, lo: int, hi: int) -> int:
    """Keep a numeric setting inside the range its widget allows this run (ranges follow the
    geometry: padding <= what the image allows, ...)."""
    value = min(max(int(st.session_state.get(p.key, p.default)), lo), hi)
    st.session_state[p.key] = value
    return value


def _copy(widget_key: str, key: str) -> None:
    st.session_state[key] = st.session_state[widget_key]


def widget(p: Param, *, container: Any = st, lo: int | None = None, hi: int | None = None,
           label: str | None = None, **kwargs: Any) -> Any:  # fmt: skip
    """Render p's widget bound to its setting and return the value.

    Streamlit forgets a widget's state when a page that lacks it runs; the setting itself is
    kept under p.key and copied into the widget each run, so it survives page switches. lo/hi
    narrow the range for this run (the stored value is clamped into it first).
    """
    lo = p.lo if lo is None else lo
    hi = p.hi if hi is None else hi
    if p.widget in ("slider", "number") and lo is not None and hi is not None:
        clamp(p, lo, max(lo, hi))
    widget_key = f"w_{p.key}"
    st.session_state[widget_key] = st.session_state.get(p.key, p.default)
    common = dict(key=widget_key, on_change=_copy, args=(widget_key, p.key), help=p.help, **kwargs)
    text = p.label if label is None else label
    if p.widget == "slider":
        if hi is not None and lo is not None and hi <= lo:  # one possible value: show it, disabled
            container.slider(text, min_value=lo, max_value=lo + 1, disabled=True, **common)
            return lo
        return container.slider(text, min_value=lo, max_value=hi, **common)
    if p.widget == "number":
        return container.number_input(text, min_value=lo, max_value=hi, step=1, **common)
    if p.widget == "select_slider":
        return container.select_slider(text, options=list(p.choices), **common)
    if p.widget == "select":
        return container.selectbox(text, options=list(p.choices), **common)
    if p.widget == "radio":
        return container.radio(text, options=list(p.choices), horizontal=True, **common)
    if p.widget == "toggle":
        return container.toggle(text, **common)
    raise ValueError(f"setting {p.key!r} has no widget")
