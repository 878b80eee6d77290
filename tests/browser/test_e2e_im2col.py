"""The im2col + GEMM page in a real browser: clicks on Y, X_unroll and the input maps land on the
cell under the mouse, the pick goes into the page text, the URL and the highlights, a shared link
reproduces it (on a projector-sized screen), hovering outlines the mapping without a rerun, and the
column animation plays. One test, one page: a fresh page load costs seconds of browser time."""

from __future__ import annotations

import time
from urllib.parse import unquote

import pytest

from tests.support import browser as web

pytestmark = [pytest.mark.e2e, pytest.mark.tour]

HIGHLIGHT = "#ff7f0e"


def outlined(page, chart: str) -> set[tuple[float, float, float, float]]:
    """(row, col, rows tall, cols wide) of the server-drawn highlight outlines on a chart."""
    return {
        (s["y0"] + 0.5, s["x0"] + 0.5, s["y1"] - s["y0"], s["x1"] - s["x0"])
        for s in web.shapes_of(page, chart)
        if s.get("type") == "rect"
        and s.get("line", {}).get("color") == HIGHLIGHT
        and s.get("name") != "hover-hl"
    }


def body(page) -> str:
    return page.inner_text("body")


def windows_3x3_k2() -> list[list[tuple[int, int]]]:
    """PMPP's example (3 x 3 maps, K = 2, stride 1, no padding): the cells of each column l."""
    return [[(t + a, s + b) for a in range(2) for b in range(2)] for t in range(2) for s in range(2)]


def test_hover_the_animation_clicks_and_a_shared_link(server, browser):
    page = browser.new_page(viewport={"width": 1366, "height": 1400})
    page.goto(f"{server}/im2col")
    web.wait_idle(page)
    web.no_exception(page)
    # hovering outlines the mapping in the browser alone (no rerun)
    web.hover_cell(page, "xunroll", 5, 2)  # column 2 of X_unroll: the cells it copies, in every channel
    deadline = time.time() + 5
    while time.time() < deadline and not web.highlighted_cells(page, "inputs"):
        time.sleep(0.1)
    assert set(web.highlighted_cells(page, "inputs")) == {
        (float(r), float(c)) for r, c in windows_3x3_k2()[2]
    }
    assert (0.0, 2.0) in web.highlighted_cells(page, "ymat") and (1.0, 2.0) in web.highlighted_cells(
        page, "ymat"
    )
    web.hover_cell(page, "inputs", 1, 1)  # an input cell: its 4 copies in X_unroll
    deadline = time.time() + 5
    while time.time() < deadline and len(web.highlighted_cells(page, "xunroll")) != 4:
        time.sleep(0.1)
    assert set(web.highlighted_cells(page, "xunroll")) == {(3.0, 0.0), (2.0, 1.0), (1.0, 2.0), (0.0, 3.0)}
    assert page.locator(web.RUNNING).count() == 0, "no rerun started"

    # the column animation: Play advances the slider past 'column l = 0'
    chart = page.locator(".st-key-fig_im2col_animation .js-plotly-plot")
    chart.scroll_into_view_if_needed()
    label = chart.locator("text.slider-label", has_text="column l =")  # the slider's current-value label
    assert "column l = 0" in label.text_content()
    web.press_play(page, chart, label, "column l = 0", wait=2.5)
    assert "column l = 0" not in label.text_content(), "the frame advanced"
    web.shot(page, "im2col_animation_playing")

    # clicks pick cells both ways
    web.click_cell(page, "ymat", 1, 2)  # output Y[1, 2] -> its sum, its column, its filter row
    assert "Y[1, 2] = W row 1 · column 2 = 17" in body(page)  # PMPP's second map, pixel (1, 0)
    assert "im2col_pick=out:1,2" in unquote(page.url)
    assert (1, 2, 1, 1) in outlined(page, "ymat")
    assert (1, 0, 1, 12) in outlined(page, "wmat")
    assert {(r, c) for r, c, h, w in outlined(page, "inputs")} == set(windows_3x3_k2()[2])
    web.click_cell(page, "xunroll", 7, 3)  # a column of X_unroll -> the cells it copies
    assert "im2col_pick=col:0,3" in unquote(page.url)
    assert outlined(page, "xunroll") == {(0, 3, 12, 1)}
    assert page.locator(".st-key-w_im2col_pl input").input_value() == "3"  # the keyboard path follows
    web.click_cell(page, "inputs", 1, 1, panel="x2")  # input cell (1, 1, 1) -> its copies in X_unroll
    assert "Input cell (c, i, j) = (1, 1, 1) is copied 4 times" in body(page)
    assert "im2col_pick=in:1,1" in unquote(page.url) and "im2col_pc=1" in page.url
    expected = {
        (4 + 2 * a + b, l)
        for l, cells in enumerate(windows_3x3_k2())
        for (a, b) in [(0, 0), (0, 1), (1, 0), (1, 1)]
        if cells[2 * a + b] == (1, 1)
    }
    assert {(r, c) for r, c, _, _ in outlined(page, "xunroll")} == expected
    url = page.url
    web.shot(page, "im2col_after_clicks")
    page.close()

    # the shared link, opened on the projector
    with web.reopened(browser, url, web.PROJECTOR) as again:
        assert "Input cell (c, i, j) = (1, 1, 1) is copied 4 times" in body(again)
        assert {(r, c) for r, c, _, _ in outlined(again, "xunroll")} == expected
        web.shot(again, "im2col_1920x1080")
