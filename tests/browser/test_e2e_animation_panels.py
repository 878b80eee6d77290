"""Two things the pick bridge and the animation controls must do on real pages, in a real browser:

- the sliding window on Direct plays, pauses, plays again and follows a slider dragged while it
  plays, with nothing about Plotly.animate in the console (Pause used to log "API call to
  Plotly.animate rejected" and an unhandled rejection), and each stop picks the step on screen;
- a hover and a click on a later subplot panel (channel 1 of im2col's input maps, panel x2) land
  on that panel's cell: the outlines and the pick match indices computed here from im2col's
  definition (PMPP's example: 3 channels of 3 x 3, K = 2, stride 1, no padding).

Screenshots of both hovers at 1366 x 768 go to tests/artifacts/."""

from __future__ import annotations

import re
import time
from urllib.parse import parse_qs, urlparse

import pytest

from tests.support import browser as web

pytestmark = [pytest.mark.e2e, pytest.mark.tour]

NOISY = ("error", "warning", "trace")  # Plotly's Lib.warn writes with console.trace


def picked_output(page) -> str:
    return parse_qs(urlparse(web.current_url(page)).query).get("direct_pick", [""])[0]


def shown_output(label) -> str:
    """The output the slider's current-value label names ("output 40,60" -> "out:40,60")."""
    found = re.search(r"output (\d+),(\d+)", label.text_content())
    assert found, label.text_content()
    return f"out:{found[1]},{found[2]}"


def click_button(page, chart, word: str) -> None:
    box = chart.locator(".updatemenu-button", has_text=word).first.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)


def wait_pick_is(page, want: str, timeout: float = 30) -> None:
    """The page's rerun after a step report has put `want` into the link."""
    deadline = time.time() + timeout
    while time.time() < deadline and picked_output(page) != want:
        time.sleep(0.2)
    web.wait_idle(page)
    assert picked_output(page) == want


def test_play_pause_play_and_drag_log_nothing_and_each_stop_picks_its_step(server, browser):
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    page.goto(f"{server}/direct?direct_pick=out:40,60")
    web.wait_idle(page)
    web.no_exception(page)
    web.hover_cell(page, "conv_output", 40, 62)  # the instant hover, looked at in the screenshot
    web.shot(page, "direct_hover_1366x768")
    heard: list[tuple[str, str]] = []
    page.on("console", lambda m: heard.append((m.type, m.text)))
    page.on("pageerror", lambda e: heard.append(("pageerror", str(e))))

    chart = page.locator(".st-key-pick-direct_window")
    chart.scroll_into_view_if_needed()
    label = chart.locator("text.slider-label").first  # the current value (the steps' labels are hidden)
    assert shown_output(label) == "out:40,60"
    web.press_play(page, chart, label, "output 40,60")
    click_button(page, chart, "Pause")
    time.sleep(0.6)
    paused = label.text_content()
    assert paused != "output 40,60"
    wait_pick_is(page, shown_output(label))  # the paused step became the pick
    time.sleep(1.0)
    assert label.text_content() == paused, "paused: the window stays"

    label = chart.locator("text.slider-label").first
    web.press_play(page, chart, label, paused)  # Play after Pause
    rail = chart.locator(".slider-rail-rect").first.bounding_box()
    grip = chart.locator(".slider-grip-rect").first.bounding_box()
    y = grip["y"] + grip["height"] / 2
    page.mouse.move(grip["x"] + grip["width"] / 2, y)
    page.mouse.down()  # drag the slider while it plays, across a third of the rail
    for f in (0.2, 0.25, 0.3, 0.35):
        page.mouse.move(rail["x"] + f * rail["width"], y, steps=4)
        time.sleep(0.1)
    page.mouse.up()
    time.sleep(0.6)
    dragged = label.text_content()
    wait_pick_is(page, shown_output(label))  # the released slider's step became the pick
    time.sleep(1.0)
    label = chart.locator("text.slider-label").first
    assert label.text_content() == dragged, "the drag stopped the play"

    # an unhandled rejection (Plotly's re-thrown interruption) is a page error whose text is
    # only "undefined": every page error counts, and every console complaint about animate
    errors = [text for kind, text in heard if kind == "pageerror"]
    noisy = [(kind, text) for kind, text in heard if kind in NOISY and re.search("animat|reject", text, re.I)]
    assert not errors and not noisy, heard
    web.no_exception(page)
    page.close()


def copies_in_x_unroll(c: int, i: int, j: int, C: int = 3, H: int = 3, W: int = 3, K: int = 2):
    """(row, column) of X_unroll holding input cell (c, i, j): row c*K*K + a*K + b is the tap
    (a, b) of channel c, column t*W_out + s the window at (t, s); stride 1, no padding."""
    W_out = W - K + 1
    return {
        (c * K * K + a * K + b, (i - a) * W_out + (j - b))
        for a in range(K)
        for b in range(K)
        if 0 <= i - a <= H - K and 0 <= j - b <= W - K
    }


def hover_shapes(page, chart: str) -> set[tuple[str, str, int, int]]:
    """(xref, yref, row, col) of the hover outlines on a chart."""
    return {
        (s["xref"], s["yref"], round((s["y0"] + s["y1"]) / 2), round((s["x0"] + s["x1"]) / 2))
        for s in web.shapes_of(page, chart)
        if s.get("name") == "hover-hl"
    }


def test_a_hover_and_a_click_on_a_later_panel_land_on_its_cell(server, browser):
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    page.goto(f"{server}/im2col")
    web.wait_idle(page)
    web.no_exception(page)
    expected = copies_in_x_unroll(1, 2, 1)
    assert len(expected) == 2  # a bottom-row cell: two windows read it
    web.hover_cell(page, "inputs", 2, 1, "x2")  # channel 1, cell (2, 1)
    deadline = time.time() + 5
    while time.time() < deadline and not hover_shapes(page, "xunroll"):
        time.sleep(0.1)
    assert {(r, c) for _, _, r, c in hover_shapes(page, "xunroll")} == expected
    assert hover_shapes(page, "inputs") == {("x2", "y2", 2, 1)}  # the hovered cell, on its own panel
    assert page.locator(web.RUNNING).count() == 0, "hovering starts no rerun"
    web.shot(page, "im2col_hover_1366x768")

    web.click_cell(page, "inputs", 2, 1, "x2")
    query = parse_qs(urlparse(web.current_url(page)).query)
    assert query["im2col_pick"] == ["in:2,1"] and query["im2col_pc"] == ["1"]
    assert "Input cell (c, i, j) = (1, 2, 1) is copied 2 times" in page.inner_text("body")
    page.close()
