"""Conv Explorer: `streamlit run app.py` (or `python3 scripts/dev.py app`).

The entry point: page navigation, the sidebar every page shares, and the one URL update per run.
"""

from __future__ import annotations

import time

import streamlit as st

from ui import budget, classroom_ui, fair_share, server_tuning, state
from ui.sidebar import PARAMS as SIDEBAR_PARAMS
from ui.sidebar import render_sidebar
from viz import memo

RUN_STARTED = time.monotonic()  # the imports are loaded once per process: a rerun starts here

st.set_page_config(page_title="Conv Explorer", page_icon=":material/grid_on:", layout="wide")
server_tuning.tune_process()  # once per process
memo.enable()  # the figure builders' process-wide memo (viz/memo.py)

# The lesson must fit the first screen of a 1366 x 768 laptop: less empty space above the title.
st.html(
    "<style>.block-container{padding-top:3rem;padding-bottom:2rem}"
    "h1{padding-top:0.2rem!important;padding-bottom:0.3rem!important}</style>"
)

PAGES = [
    st.Page("pages/home.py", title="Home", icon=":material/home:", default=True),
    st.Page("pages/conv2d.py", title="Direct convolution", icon=":material/grid_on:", url_path="direct"),
    st.Page("pages/im2col.py", title="im2col + GEMM", icon=":material/view_column:", url_path="im2col"),
    st.Page("pages/unfold_fold.py", title="Unfold / Fold", icon=":material/apps:", url_path="unfold"),
    st.Page("pages/reflect_pad.py", title="Reflect padding", icon=":material/flip:", url_path="reflect"),
    st.Page(
        "pages/conv_backward.py", title="Backward & transposed", icon=":material/undo:", url_path="backward"
    ),
    st.Page("pages/benchmarks.py", title="Benchmarks", icon=":material/speed:", url_path="benchmarks"),
]

WAIT_NOTICE_S = 3.0  # a run that waited longer than this for its turn says why

# Every run takes a turn of one process-wide queue: light sessions first, heavy ones one at a time
# (ui/fair_share.py), so no session's largest kernel stalls the class.
with fair_share.script_turn(RUN_STARTED) as turn:
    if turn is not None and turn.waited_s > WAIT_NOTICE_S:
        st.toast(f"Waited {turn.waited_s:.0f} s for a turn: the server is busy"
                 + (" and serves sessions with lighter recent work first." if turn.heavy else "."),
                 icon=":material/hourglass_top:")  # fmt: skip
    page = st.navigation(PAGES)
    budget.note_session()
    state.show_notices(state.init_params(SIDEBAR_PARAMS))
    # classroom: join from a link, follow a room (may switch page), its sidebar part and mode line
    shared = classroom_ui.before_page(page, PAGES, SIDEBAR_PARAMS)
    st.session_state[state.PAGE_KEY] = []  # the page registers its own settings (state.use)
    st.session_state["image"] = render_sidebar(shared)
    try:
        with classroom_ui.after_page(page, SIDEBAR_PARAMS):  # publish (instructor) / own change? (follower)
            page.run()
    finally:  # also when the page stops early (st.stop): the link always shows what is on screen
        state.sync_query(SIDEBAR_PARAMS)
