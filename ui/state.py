"""Page settings that live in st.session_state and in the URL query string.

An instructor shares a link; a student opening it lands on the same settings. Values from the
URL are untrusted text: each is parsed against its declared type and range, clamped or
ignored with a notice, and never evaluated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import streamlit as st

_INT = re.compile(r"^-?\d{1,7}$")
MAX_RAW = 40  # longer query values are ignored unread


@dataclass(frozen=True)
class Param:
    """One setting: its key (widget key and query name), default and allowed values."""

    key: str
    default: Any
    lo: int | None = None
    hi: int | None = None
    choices: tuple[str, ...] = ()

    def parse(self, raw: str) -> tuple[Any, str | None]:
        """(value, notice): the value to use for a raw query string, and why it changed."""
        # echo only harmless characters of untrusted text, and only a little of it
        shown = re.sub(r"[^A-Za-z0-9_.\-]", "?", raw[:20]) + ("…" if len(raw) > 20 else "")
        if len(raw) > MAX_RAW:
            return self.default, f"`{self.key}` in the link was too long and was ignored"
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
            clamped = min(
                max(value, self.lo if self.lo is not None else value),
                self.hi if self.hi is not None else value,
            )
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


def init_params(params: list[Param]) -> list[str]:
    """Seed session_state from the URL once per session; returns notices for bad URL values."""
    notices = []
    for p in params:
        if p.key in st.session_state:
            continue
        raw = st.query_params.get(p.key)
        if raw is None:
            st.session_state[p.key] = p.default
            continue
        value, notice = p.parse(str(raw))
        st.session_state[p.key] = value
        if notice:
            notices.append(notice)
    return notices


def clamp_state(key: str, lo: int, hi: int) -> None:
    """Keep a dependent setting inside the range its widget allows now (e.g. padding <= kernel)."""
    if key in st.session_state and isinstance(st.session_state[key], int):
        st.session_state[key] = min(max(st.session_state[key], lo), hi)


def sync_query(params: list[Param]) -> None:
    """Write the current settings into the URL so the address bar is a shareable link."""
    for p in params:
        value = st.session_state.get(p.key, p.default)
        text = str(int(value)) if isinstance(value, bool) else str(value)
        if st.query_params.get(p.key) != text:
            st.query_params[p.key] = text


def show_notices(notices: list[str]) -> None:
    for text in notices:
        st.warning(text, icon=":material/link:")


def _copy(widget_key: str, key: str) -> None:
    st.session_state[key] = st.session_state[widget_key]


def bound(factory: Any, label: str, key: str, **kwargs: Any) -> Any:
    """Render widget `factory` bound to the persistent setting `key`.

    Streamlit forgets a widget's state when a page that lacks it runs; the setting itself is
    kept under `key` and copied into the widget each run, so it survives page switches.
    """
    widget_key = f"w_{key}"
    st.session_state[widget_key] = st.session_state[key]
    return factory(label, key=widget_key, on_change=_copy, args=(widget_key, key), **kwargs)
