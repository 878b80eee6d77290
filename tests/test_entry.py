"""ui/entry.py: a freshly started server whose first request names a page by its file name
(/benchmarks, /home, /im2col) still runs it through app.py: the app's navigation, the shared
sidebar, the turns. Streamlit ran such a file alone until some run had called st.navigation (a
menu of file names and no sidebar, for every session). Each case needs a server of its own: the
first request of the process is what is tested."""

from __future__ import annotations

import pytest

from tests.conftest import require


@pytest.mark.parametrize("path, title", [("benchmarks", "Benchmarks"), ("im2col", "im2col + GEMM")])
def test_first_request_for_a_page_file_goes_through_the_app(path: str, title: str) -> None:
    require("streamlit", "the entry check")
    from tests.browser import _free_port, start_server
    from tests.st_client import StClient

    port = _free_port()
    server = start_server(port)
    try:
        with StClient(f"http://127.0.0.1:{port}", path, timeout=120) as client:
            client.wait_idle()
            assert "direct" in client.pages and "conv2d" not in client.pages, (
                f"the menu is Streamlit's own, of file names: {sorted(client.pages)}"
            )
            assert any(title in t for t in client.texts(main_only=True)), "not the page the URL names"
            assert "Image source" in client.labels(), "the shared sidebar (app.py) did not run"
            assert not client.errors, client.errors
    finally:
        server.terminate()
        server.wait(timeout=20)
