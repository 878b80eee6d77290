"""st.plotly_chart for the figures a classroom shares: serialised once per process, replayed after.

A figure from a @figure_memo builder is one object for every session that asks with the same
arguments (viz/memo.py), yet st.plotly_chart copies it to a dict, writes its JSON and hashes that
JSON again in each session's run. When thirty followers rerun after the instructor's change, that
was a fifth of each run on the Direct page at 256 px (py-spy, bench/rerun_cpu.py). A cached
function that draws elements has them replayed by st.cache_data (documented: "Using Streamlit
commands in cached functions"), so a chart shown through `plotly_chart` is built into a message
once per figure, chart name and process, and every later run sends that message as it is.

Only figures with a digest (content the memo names) go through the cache: any other figure is
drawn as before. Charts are not widgets here (clicks reach Python through ui/pick.py's bridge),
so nothing a session does is kept in the cache.
"""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from viz import memo

CONFIG = {"displaylogo": False}
CACHED_CHARTS = 64  # messages kept per process (as many as the memo keeps figures)


@st.cache_data(max_entries=CACHED_CHARTS, show_spinner=False)
def _shared(digest: str, key: str, _fig: go.Figure) -> None:
    """Draw the chart; st.cache_data replays it for the same (digest, key). _fig is not hashed
    (the leading underscore): the digest names its content."""
    st.plotly_chart(_fig, key=key, config=CONFIG)


def plotly_chart(fig: go.Figure, key: str) -> None:
    """st.plotly_chart(fig, key=key), from the process's cache when fig is a shared figure."""
    digest = memo.digest_of(fig)
    if digest is None:
        st.plotly_chart(fig, key=key, config=CONFIG)
    else:
        _shared(digest, key, fig)
