"""Streamlit-side helpers shared by the pages: the sidebar, settings in the URL, image loading."""
