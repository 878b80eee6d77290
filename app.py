"""Conv Explorer: `streamlit run app.py` (or `python3 scripts/dev.py app`).

The entry point: page navigation, the sidebar every page shares, and the one URL update per run.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from ui import budget, classroom_ui, lanes, navigation, presenter, state
from ui.sidebar import PARAMS as SIDEBAR_PARAMS
from ui.sidebar import render_sidebar

# the tab icon is a file served by the app: a ":material/..." icon would be fetched from Google's CDN
ICON = Path(__file__).resolve().parent / "assets" / "icon.png"
st.set_page_config(page_title="Conv Explorer", page_icon=str(ICON), layout="wide")

# The lesson must fit the first screen of a 1366 x 768 laptop: less empty space above the title.
st.html(
    "<style>.block-container{padding-top:3rem;padding-bottom:2rem}"
    "h1{padding-top:0.2rem!important;padding-bottom:0.3rem!important}</style>"
)

PAGES = navigation.pages()
page = st.navigation(PAGES, position="hidden")  # the sidebar's menu is ours: its links keep the settings
menu = st.sidebar.container(key="page_menu")
budget.note_session()
state.begin_run(page.url_path)  # Back / Forward to a link of this session restores its settings
state.show_notices(state.init_params(SIDEBAR_PARAMS, restore=state.restoring()))
try:
    # classroom: join from a link, follow a room (may switch page), its sidebar part and mode line
    shared = classroom_ui.before_page(page, PAGES, SIDEBAR_PARAMS)
    queries = {p.url_path: state.link_query(p.url_path, SIDEBAR_PARAMS) for p in PAGES}
    navigation.links(menu, PAGES, page, queries)
    st.session_state[state.PAGE_KEY] = []  # the page registers its own settings (state.use)
    exploring = classroom_ui.mode() == "exploring"
    # under `serve`, a student exploring large images moves to workers of their own (ui.lanes);
    # in one process, such runs go one at a time (ui.budget)
    lanes.route(page.url_path, SIDEBAR_PARAMS, exploring=exploring)
    with budget.heavy_lane(st.session_state["cap"], in_class=not exploring):
        st.session_state["image"] = render_sidebar(shared or lanes.kept_upload())
        presenter.apply(bool(st.session_state.get("pres")), menu)  # projector text, keys for a remote
        with navigation.app_run(), classroom_ui.after_page(page, SIDEBAR_PARAMS):
            page.run()  # publish (instructor) / own change? (follower) afterwards
finally:  # also when the run stops early (st.stop, st.rerun): the link shows what is on screen
    classroom_ui.run_ended()
    if not lanes.moving():  # a move reloads the page with its link (one history entry)
        state.sync_query(SIDEBAR_PARAMS)
