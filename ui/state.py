"""Settings: one `Param` table per page gives every setting its widget, range and URL key.

Values live in st.session_state (under the Param's key) and in the URL query string, so a
shared link reproduces the view. Values from the URL are untrusted text: each is parsed against
its declared type and range, clamped or ignored with a notice, and never evaluated. A page:

    PARAMS = [Param("direct_k", 3, "Kernel size K", "slider", lo=1, hi=15), ...]
    state.use(PARAMS)                 # seed from the URL once, remember them for the URL sync
    k = state.widget(PARAMS[0], hi=7) # a widget bound to the setting; ranges may narrow per run

The browser's history: every change of the query string is a new history entry (Streamlit
pushes one), so app.py writes the URL once per run and only when it changed (`sync_query`), and
a setting at its default is left out (a page opened with its defaults adds no entry of its own).
The sidebar's page links carry the query their page will write (`link_query`), so a page visit
is one entry. Back / Forward reruns the page with the query string of an older link this session
wrote; `begin_run` notices it and the settings are restored from it. A request sent while a run
was still under way (a quick second click) also carries an older query string, the one its
browser had; but it carries a change (a widget's callback or a click has run: `note_change`),
and it waits for that run and starts the moment it ends, where a person pressing Back has seen
the page first: such a run restores nothing.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import streamlit as st

from ui import pick

_INT = re.compile(r"^-?\d{1,7}$")
_CELL = re.compile(r"^([a-z]{1,8}):(\d{1,5}),(\d{1,5})$")
MAX_RAW = 40  # longer query values are ignored unread
PAGE_KEY = "_page_params"  # session_state: the current page's Params (for the URL sync)
URL_EXTRAS = {"room"}  # query keys that are not settings but stay in the link (a classroom join code)
_RESTORE = "_url_restore"  # session_state: this run restores an older link (Back / Forward)
_WRITTEN = "_url_written"  # session_state: the (page, query) links this session's runs ended with
_LAST = "_url_last"  # session_state: (page, query, monotonic time) the last run ended with
_PAGE = "_url_page"  # session_state: the url_path of the page this run shows
_CHANGED = "_url_changed"  # session_state: a widget or a click changed a setting before this run
_VALUES = "_url_values"  # session_state: the plain values as the last run ended (`_widget_values`)
OWN_RERUN = "_url_own_rerun"  # session_state: the app itself asked for the next run (`rerun`)
MAX_WRITTEN = 200  # links remembered per session for Back / Forward
SETTLE_S = 0.3  # a run this soon after the last one ended was asked for before the URL update arrived
# Each setting's key starts with its page's URL path; links written when the prefixes were
# abbreviations (dc_k=5 for direct_k=5) still open the same view, and the next write drops them.
OLD_PREFIXES = {
    "direct_": "dc_",
    "backward_": "bw_",
    "benchmarks_": "bm_",
    "channels_": "ch_",
    "im2col_": "im_",
    "lenet_": "ln_",
    "pool_": "pl_",
    "reflect_": "rp_",
    "unfold_": "uf_",
}
_PARAMS_BY_PAGE: dict[str, list[Param]] = {}  # url_path -> its Params, once any session ran it


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
    pinned: bool = False  # written into the link even at its default (a default that changes over time)

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


Link = tuple[str, tuple[tuple[str, str], ...]]  # (url_path, sorted query items)


def _query_now() -> tuple[tuple[str, str], ...]:
    return tuple(sorted(st.query_params.to_dict().items()))


def begin_run(url_path: str, now: Callable[[], float] = time.monotonic) -> None:
    """Called by app.py first: notes the page, and whether the browser went Back or Forward to a
    link this session wrote (its query string differs from the one the last run ended with, and
    the person had time to see that run's page). `now`: the clock (tests inject one)."""
    ss = st.session_state
    link = (url_path, _query_now())
    last = ss.get(_LAST)
    ss[_PAGE] = url_path
    before = ss.get(_VALUES, {})  # a value changed since the last run ended (widgets of a page not shown go)
    moved = any(k in before and before[k] != v for k, v in _widget_values().items())
    own = ss.pop(OWN_RERUN, False)
    changed = ss.pop(_CHANGED, False) or own or pick.pending() is not None or moved
    ss[_RESTORE] = is_history_move(link, last, ss.get(_WRITTEN, ()), changed=changed, at=now())


_PLAIN = (bool, int, float, str, type(None), Cell, tuple)


def _widget_values() -> dict[str, Any]:
    """The plain values of st.session_state (widgets' and settings'; not the app's own entries,
    which start with "_"): the request for a run changes them before it starts when it carries
    a person's change (a widget moved, a button pressed), which Back / Forward does not."""
    ss = st.session_state
    values = {k: ss[k] for k in ss if not k.startswith("_")}  # the app's entries never read
    return {k: v for k, v in values.items() if isinstance(v, _PLAIN)}


def is_history_move(
    link: Link, last: tuple | None, written: Sequence[Link], *, changed: bool, at: float
) -> bool:
    """Whether a run's link (page, query) is Back / Forward to an older link of the session:
    not the one the last run ended with (`last`: page, query, time), one it wrote before, no
    setting changed by a person before the run, and not a run that started the moment the last
    one ended (a request that waited for it)."""
    if last is None or link == last[:2] or link not in written:
        return False
    return not changed and at - last[2] >= SETTLE_S


def rerun() -> NoReturn:
    """st.rerun for the app's own reasons: the run it starts is never Back / Forward.

    Streamlit folds a request the browser sent meanwhile into that run, with the query string
    the browser held when it sent it. A classroom follower's poll was seen (under load) to carry
    the link before the newest one: taken for Back, it restored the older settings over the
    instructor's newest ones, and a pick was lost."""
    st.session_state[OWN_RERUN] = True
    st.rerun()


def note_change() -> None:
    """A widget's callback changed a setting: this run answers a person's action, not Back."""
    st.session_state[_CHANGED] = True


def restoring() -> bool:
    """Whether this run shows an older link again (Back / Forward)."""
    return bool(st.session_state.get(_RESTORE, False))


def _from_url(key: str) -> str | None:
    """The URL's text for a setting, under its key or under the key it had before (OLD_PREFIXES)."""
    raw = st.query_params.get(key)
    if raw is not None:
        return raw
    new = next((n for n in OLD_PREFIXES if key.startswith(n)), None)
    return None if new is None else st.query_params.get(OLD_PREFIXES[new] + key[len(new) :])


def init_params(params: list[Param], restore: bool = False) -> list[str]:
    """Seed session_state from the URL once per session (restore: from this run's URL again, a
    setting missing there at its default); returns notices for bad URL values."""
    notices = []
    for p in params:
        if p.key in st.session_state and not restore:
            continue
        raw = _from_url(p.key)
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
    show_notices(init_params(params, restore=restoring()))
    st.session_state[PAGE_KEY] = params
    page = st.session_state.get(_PAGE)
    if page is not None:
        _PARAMS_BY_PAGE[page] = params


def _texts(params: list[Param], keep: set[str] | frozenset[str] = frozenset()) -> dict[str, str]:
    """The settings as link text: those at their default left out, unless pinned or in `keep`."""
    out = {}
    for p in params:
        text = p.text(st.session_state.get(p.key, p.default))
        if text and (p.pinned or p.key in keep or text != p.text(p.default)):
            out[p.key] = text
    return out


def link_query(url_path: str, sidebar: list[Param]) -> dict[str, str]:
    """The query string a link to another page carries: what that page will write into the URL
    (the sidebar's settings and that page's, as this session has them), so following the link
    is one history entry."""
    return _texts([*sidebar, *_PARAMS_BY_PAGE.get(url_path, [])])


def link_now(url_path: str, sidebar: list[Param]) -> dict[str, str]:
    """The query string of what this session shows, for a run that stops before its page runs
    (ui/lanes.py reloads the page with it): the URL the run began with, updated with the
    sidebar's settings and the page's (as any session of this process registered them) that this
    session holds. A setting the session never set keeps the URL's text, so a link opened in the
    first run keeps every setting it names, the page's too; Back / Forward (`restoring`) keeps
    the URL as it is (the page would have restored its settings from it)."""
    query = st.query_params.to_dict()
    if restoring():
        return query
    for p in [*sidebar, *_PARAMS_BY_PAGE.get(url_path, [])]:
        if p.key not in st.session_state:
            continue
        text = p.text(st.session_state[p.key])
        if text and (p.pinned or p.key in query or text != p.text(p.default)):
            query[p.key] = text
        else:
            query.pop(p.key, None)
    return query


def sync_query(sidebar: list[Param], now: Callable[[], float] = time.monotonic) -> None:
    """Write the sidebar's and the current page's settings into the URL (once per run, from
    app.py), so the address bar is always a shareable link of what is on screen. One write, and
    only when the link changed: each write is a history entry. A setting the URL names keeps its
    place even at its default (a link someone wrote stays as written)."""
    params = [*sidebar, *st.session_state.get(PAGE_KEY, [])]
    wanted = _texts(params, keep=set(st.query_params))
    wanted.update({k: st.query_params[k] for k in URL_EXTRAS if k in st.query_params})
    if st.query_params.to_dict() != wanted:
        st.query_params.from_dict(wanted)
    ss = st.session_state
    link = (ss.get(_PAGE, ""), _query_now())
    ss[_WRITTEN] = [*[w for w in ss.get(_WRITTEN, []) if w != link][-MAX_WRITTEN + 1 :], link]
    ss[_VALUES] = _widget_values()
    ss[_LAST] = (*link, now())


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
    note_change()


def widget(
    p: Param,
    *,
    container: Any = st,
    lo: int | None = None,
    hi: int | None = None,
    label: str | None = None,
    **kwargs: Any,
) -> Any:
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
