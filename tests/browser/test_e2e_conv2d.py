"""The Direct convolution page in a real browser: a click on the output picks that pixel (page text,
URL, keyboard inputs, outlines on both images), a click on the input outlines every output that
reads it, a shared link reproduces the pick, hovering a weight outlines the cell it multiplies
without a rerun, and the sliding window plays; the link opens on a projector-sized screen.
One test, one page: every fresh page load costs seconds of the browser's time on a small machine.

Expected cells are written out here (3 x 3 box blur, stride 1, padding 1 on the 256 px sample)."""

from __future__ import annotations

import re
import time
from urllib.parse import unquote

import pytest

from tests.support import browser as web

pytestmark = [pytest.mark.e2e, pytest.mark.tour]


def body(page) -> str:
    return page.inner_text("body")


def meta(page, chart: str) -> dict:
    """The cells behind a chart's highlights (layout.meta), as the browser holds them."""
    return page.evaluate(
        """(chart) => {
      const gd = [...document.querySelectorAll(`.st-key-pick-${chart} .js-plotly-plot`)]
          .find((g) => g.layout);
      return gd ? (gd.layout.meta || {}) : null;
    }""",
        chart,
    )


def outline_drawn(page, chart: str, name: str) -> set[tuple[float, float, float, float]]:
    """Unit edges of the path shapes named `name` on a chart."""
    edges = set()
    for s in web.shapes_of(page, chart):
        if s.get("name") == name:
            for x0, y0, x1, y1 in re.findall(r"M([-\d.]+),([-\d.]+)L([-\d.]+),([-\d.]+)", s["path"]):
                edges.add((float(x0), float(y0), float(x1), float(y1)))
    return edges


def square_outline(r0: int, c0: int, n: int) -> set[tuple[float, float, float, float]]:
    """The outline of the n x n block of cells from (r0, c0): its 4n unit edges."""
    top, bottom, left, right = r0 - 0.5, r0 + n - 0.5, c0 - 0.5, c0 + n - 0.5
    edges = set()
    for i in range(n):
        edges |= {
            (left + i, top, left + i + 1, top),
            (left + i, bottom, left + i + 1, bottom),
            (left, top + i, left, top + i + 1),
            (right, top + i, right, top + i + 1),
        }
    return edges


def test_clicks_hover_the_window_and_a_shared_link(server, browser):
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(f"{server}/direct")
    web.wait_idle(page)
    web.no_exception(page)
    web.click_cell(page, "conv_output", 40, 60)  # an output pixel -> its 3 x 3 taps on the input
    assert "Picked: output pixel (40, 60)" in body(page)
    assert "direct_pick=out:40,60" in unquote(page.url)
    assert outline_drawn(page, "conv_output", "pick") == square_outline(40, 60, 1)
    assert sorted(map(tuple, meta(page, "conv_input")["taps"])) == [
        (r, c) for r in (39, 40, 41) for c in (59, 60, 61)
    ]
    assert outline_drawn(page, "conv_input", "taps") == square_outline(39, 59, 3)
    assert page.locator(".st-key-w_direct_pick_row input").input_value() == "40"  # the keyboard path follows
    assert page.locator(".st-key-w_direct_pick_col input").input_value() == "60"
    row = page.locator(".st-key-w_direct_pick_row input")  # the keyboard path sets the pick (no stale click)
    row.fill("45")
    row.press("Enter")
    web.wait_idle(page)
    assert "Picked: output pixel (45, 60)" in body(page) and "direct_pick=out:45,60" in unquote(page.url)
    web.click_cell(page, "conv_input", 100, 30)  # an input cell -> the 9 outputs that read it
    assert "Picked: input cell (100, 30), read by 9 output pixels" in body(page)
    assert "direct_pick=in:100,30" in unquote(page.url)
    assert outline_drawn(page, "conv_output", "readers") == square_outline(99, 29, 3)
    assert outline_drawn(page, "conv_input", "pick") == square_outline(100, 30, 1)
    url = page.url
    web.shot(page, "direct_after_clicks")

    # hovering a weight outlines the input cell it multiplies, in the browser alone (no rerun)
    web.click_cell(page, "conv_output", 40, 60)
    web.hover_cell(page, "direct_kernel", 2, 0)  # tap (2, 0) of output (40, 60) reads input (41, 59)
    deadline = time.time() + 5
    while time.time() < deadline and not web.highlighted_cells(page, "direct_zoom"):
        time.sleep(0.1)
    assert web.highlighted_cells(page, "direct_zoom") == [(41.0, 59.0)]
    assert web.highlighted_cells(page, "conv_input") == [(41.0, 59.0)]
    assert page.locator(web.RUNNING).count() == 0, "no rerun started"
    # the sliding window: Play moves the slider off the picked output
    chart = page.locator(".stPlotlyChart").filter(has=page.locator("text.slider-label")).first
    chart.scroll_into_view_if_needed()
    label = chart.locator("text.slider-label").first  # the current value (the steps have labels too)
    assert "output 40,60" in label.text_content()
    web.press_play(page, chart, label, "output 40,60")
    assert "output 40,60" not in label.text_content(), "the window moved on"
    web.shot(page, "direct_window_playing")
    page.close()

    # the shared link, opened on the projector
    with web.reopened(browser, url, web.PROJECTOR) as again:
        assert "Picked: input cell (100, 30), read by 9 output pixels" in body(again)
        assert outline_drawn(again, "conv_output", "readers") == square_outline(99, 29, 3)
        web.shot(again, "direct_1920x1080")
