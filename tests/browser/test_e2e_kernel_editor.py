"""The custom-kernel editor in a real browser: letters, an empty cell and 1e30 typed into the box
each get a message beside it, and the figures and the link keep the last valid kernel; a valid
text afterwards is used. Expected weights are the typed numbers."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

from tests.support import browser as web

pytestmark = [pytest.mark.e2e, pytest.mark.tour]


def weights(page) -> list | None:
    """The kernel figure's weights as the browser holds them (Plotly's public gd.data)."""
    return web.trace_array(page, "direct_kernel", 0, "z")


def kernel_in_link(page) -> str:
    return parse_qs(urlparse(web.current_url(page)).query).get("direct_kernel", [""])[0]


def type_kernel(page, text: str) -> None:
    box = page.locator(".st-key-w_direct_kernel_text textarea")
    box.fill(text)
    box.press("Control+Enter")  # Streamlit's "apply" for a text area
    web.wait_idle(page)
    web.no_exception(page)


def test_bad_text_gets_a_message_and_the_last_valid_kernel_stays(server, browser):
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(f"{server}/direct?direct_preset=custom")
    web.wait_idle(page)
    web.no_exception(page)
    type_kernel(page, "1 2 1; 2 4 2; 1 2 1")
    good = [[1, 2, 1], [2, 4, 2], [1, 2, 1]]
    assert weights(page) == good
    assert kernel_in_link(page) == "1,2,1_2,4,2_1,2,1"
    editor = page.locator(".st-key-direct_kernel_editor")
    for bad, why in [
        ("1 2 1; 2 abc 2; 1 2 1", "'abc' is not a number"),
        ("1,2,1; 2,,2; 1,2,1", "row 2, value 2 is empty"),
        ("1e30 2 1; 2 4 2; 1 2 1", "'1e30' is outside -1e6 .. 1e6"),
    ]:
        type_kernel(page, bad)
        text = editor.inner_text()
        assert why in text and "Still using the last valid kernel (3 x 3)" in text, text
        assert page.locator(".st-key-w_direct_kernel_text textarea").input_value() == bad  # kept, to be fixed
        assert weights(page) == good
        assert kernel_in_link(page) == "1,2,1_2,4,2_1,2,1"
        assert page.locator("h1", has_text="Direct convolution").is_visible()  # the page is still there
    web.shot(page, "kernel_editor_error_1366")
    type_kernel(page, "0 0 0; 0 0 1; 0 0 0")  # fixed: used at once
    assert weights(page) == [[0, 0, 0], [0, 0, 1], [0, 0, 0]]
    assert kernel_in_link(page) == "0,0,0_0,0,1_0,0,0"
    assert "Still using" not in editor.inner_text()
    page.close()
