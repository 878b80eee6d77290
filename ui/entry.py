"""Every page runs inside app.py: its navigation, the shared sidebar, the turns, the classroom and
the URL sync all live there.

Streamlit keeps its first multipage design alive for an app with a pages/ folder: until some run
in the server process has called st.navigation, it runs each request through a navigation of its
own made from the folder's file names, so a freshly started server whose first visitor opens
/benchmarks, /home or /im2col (a page's file name) ran that file alone, with a menu of file
names, no sidebar and no turn of the queue, for every session until someone opened another URL.
"""

from __future__ import annotations

import streamlit as st


def through_app() -> None:
    """Called first by every page: when Streamlit ran the page's file on its own, switch the
    process to app.py's navigation (the flag st.navigation clears when app.py calls it) and run
    the request again, through app.py; the URL names the same page there."""
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()
