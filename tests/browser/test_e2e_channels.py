"""The Channels page in a real browser: clicking a filter's slice picks its output map and lights its
group's input channels; clicking an input channel lights the maps that read it. Screenshots at
1366 x 768 and 1920 x 1080 (tests/artifacts/channels_*.png)."""

from __future__ import annotations

import time

import pytest

from tests.support import browser as web

pytestmark = [pytest.mark.e2e, pytest.mark.tour]
HIGHLIGHT, READER = "#ff7f0e", "#d62728"


def boxes(page, colour: str) -> set[tuple[str, float, float]]:
    return {
        (s["xref"], s["y0"] + 0.5, s["x0"] + 0.5)
        for s in web.shapes_of(page, "channels")
        if s.get("line", {}).get("color") == colour and s.get("name") != "hover-hl"
    }


def test_click_a_filter_then_an_input_channel(server, browser):
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    page.goto(f"{server}/channels?channels_in=4&channels_out=6&channels_groups=2")
    web.wait_idle(page)
    web.no_exception(page)
    web.click_cell(
        page, "channels", 4, 3, panel="x2"
    )  # filter 4 (group 1: inputs 2, 3), its slice of input 3
    assert boxes(page, HIGHLIGHT) == {("x3", 4.0, 0.0)}
    assert {(p, c) for p, _, c in boxes(page, READER) if p == "x"} == {("x", 2.0), ("x", 3.0)}
    web.shot(page, "channels_1366x768")
    web.click_cell(page, "channels", 0, 0, panel="x")  # input 0: group 0, read by maps 0-2
    assert {r for p, r, _ in boxes(page, READER) if p == "x3"} == {0.0, 1.0, 2.0}
    assert "channels_pick=in" in web.current_url(page)
    page.close()


def test_projector_screenshot(server, browser):
    with web.reopened(
        browser, f"{server}/channels?channels_in=6&channels_out=6&channels_groups=6&pres=1", web.PROJECTOR
    ) as page:
        web.shot(page, "channels_1920x1080")


def test_hover_an_output_map_lights_its_inputs(server, browser):
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    page.goto(f"{server}/channels?channels_in=4&channels_out=6&channels_groups=2")
    web.wait_idle(page)
    web.hover_cell(page, "channels", 5, 0, panel="x3")  # map 5: group 1, inputs 2 and 3
    deadline = time.time() + 5
    while time.time() < deadline and len(web.highlighted_cells(page, "channels")) < 4:
        time.sleep(0.1)
    cells = set(web.highlighted_cells(page, "channels"))
    assert {(0.0, 2.0), (0.0, 3.0), (5.0, 2.0), (5.0, 3.0)} <= cells  # inputs 2, 3 and filter 5's slices
    assert (0.0, 0.0) not in cells and (5.0, 1.0) not in cells  # not group 0's
    page.close()
