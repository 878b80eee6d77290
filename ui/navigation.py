"""The app's pages in one list, and the way back to app.py for a page Streamlit ran on its own.

Streamlit keeps its first multipage design alive for an app with a pages/ folder: until some run
in the server process has called st.navigation, it runs a request for /direct (a page's file
name) through a menu of its own, made of the folder's file names, and runs that file alone: no
sidebar, no page config, no classroom. Every page therefore calls `through_app()` first. When
app.py is not running it, the page calls st.navigation with the app's pages (which ends that
design for the whole process, as Streamlit documents) and runs the request again, through app.py;
the URL names the same page there. Page files are named as their URL paths, so the request finds
its page in either design.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import streamlit as st

# (file stem = url path, title, icon); the first is the home page
PAGES = (
    ("home", "Home", ":material/home:"),
    ("direct", "Direct convolution", ":material/grid_on:"),
    ("im2col", "im2col + GEMM", ":material/view_column:"),
    ("unfold", "Unfold / Fold", ":material/apps:"),
    ("reflect", "Reflect padding", ":material/flip:"),
    ("backward", "Backward & transposed", ":material/undo:"),
    ("channels", "Channels & groups", ":material/layers:"),
    ("pool", "Pooling", ":material/filter_center_focus:"),
    ("lenet", "LeNet-5", ":material/neurology:"),
    ("benchmarks", "Benchmarks", ":material/speed:"),
)

ICONS = {"" if i == 0 else stem: icon for i, (stem, _title, icon) in enumerate(PAGES)}  # by url_path
_QUERIES = "_page_link_queries"  # session_state: url_path -> the query its links carry (this run)
_inside = threading.local()  # set while app.py runs a page (in the script's own thread)


def links(container, pages: list[st.Page], current: st.Page, queries: dict[str, dict[str, str]]) -> None:
    """The page menu: one link per page, each carrying the query string its page will write
    (ui/state.link_query), so a page visit is one history entry (Streamlit's own menu drops the
    query string, and the page's first run then wrote it as a second entry). The current page's
    link carries none: following it reruns the page as it is."""
    st.session_state[_QUERIES] = queries
    with container:
        for p in pages:
            query = None if p.url_path == current.url_path else queries[p.url_path]
            st.page_link(p, label=p.title, icon=ICONS[p.url_path], query_params=query, width="stretch")


def query_for(url_path: str) -> dict[str, str]:
    """The query a link to that page carries (`links`' own): a page's st.page_link passes it, so
    the visit is one history entry."""
    return dict(st.session_state.get(_QUERIES, {}).get(url_path, {}))


def pages() -> list[st.Page]:
    """The pages, without icons: Streamlit makes a page's icon the tab's icon, fetched from
    Google's CDN for a ":material/..." name; the menu (`links`) shows the icons from the bundled
    font, and the tab keeps the app's own icon (assets/icon.png)."""
    return [
        st.Page(f"pages/{stem}.py", title=title, url_path=stem, default=i == 0)
        for i, (stem, title, _icon) in enumerate(PAGES)
    ]


@contextlib.contextmanager
def app_run() -> Iterator[None]:
    """app.py runs the page inside this."""
    _inside.active = True
    try:
        yield
    finally:
        _inside.active = False


def through_app() -> None:
    """Called first by every page: outside app.py, hand the request to app.py's navigation."""
    if not getattr(_inside, "active", False):
        st.navigation(pages(), position="hidden")
        st.rerun()
