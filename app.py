"""Conv Explorer: `streamlit run app.py`.

The entry point: page navigation and the sidebar every page shares.
"""

from __future__ import annotations

import streamlit as st

from ui.sidebar import PARAMS as SIDEBAR_PARAMS
from ui.sidebar import render_sidebar
from ui.state import init_params, show_notices, sync_query

st.set_page_config(page_title="Conv Explorer", page_icon=":material/grid_on:", layout="wide")

PAGES = [
    st.Page("pages/home.py", title="Home", icon=":material/home:", default=True),
    st.Page(
        "pages/direct_convolution.py",
        title="Direct convolution",
        icon=":material/grid_on:",
        url_path="direct",
    ),
    st.Page("pages/im2col_gemm.py", title="im2col + GEMM", icon=":material/view_column:", url_path="im2col"),
    st.Page("pages/unfold_fold.py", title="Unfold / Fold", icon=":material/apps:", url_path="unfold"),
    st.Page("pages/reflect_padding.py", title="Reflect padding", icon=":material/flip:", url_path="reflect"),
    st.Page("pages/benchmarks.py", title="Benchmarks", icon=":material/speed:", url_path="benchmarks"),
]

page = st.navigation(PAGES)
show_notices(init_params(SIDEBAR_PARAMS))
st.session_state["image"] = render_sidebar()
sync_query(SIDEBAR_PARAMS)
page.run()
