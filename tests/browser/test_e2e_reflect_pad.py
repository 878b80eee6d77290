"""The Reflect padding page in a real browser: click a padded cell and an input cell of the small
grid at their screen positions, and a pixel of the padded image; the pick shows in the text, the
URL and the figure's outlines; a new tab (a new session) reopens the same view; hovering the grid
outlines a cell's source without a rerun.

Defaults: a 4 x 5 grid padded (left 2, right 2, top 2, bottom 1); the 256 px sample padded by 24.
"""

from __future__ import annotations

import re
import time
from urllib.parse import unquote

import pytest

from tests.support import browser as web

pytestmark = [pytest.mark.e2e, pytest.mark.tour]
HIGHLIGHT, READER = "#ff7f0e", "#d62728"


def outlined(page, chart: str, colour: str, panel: str = "x") -> set[tuple[int, int]]:
    """(row, col) of the single cells the server outlined in `colour` on subplot `panel`."""
    return {
        (round((s["y0"] + s["y1"]) / 2), round((s["x0"] + s["x1"]) / 2))
        for s in web.shapes_of(page, chart)
        if s.get("line", {}).get("color") == colour
        and s.get("xref", "x") == panel
        and s.get("name") != "hover-hl"
        and abs(s["x1"] - s["x0"] - 1) < 1e-6
    }


def body(page) -> str:
    return page.inner_text("body")


def test_hover_then_clicks_both_ways_and_the_link_reproduces_the_pick(server, browser):
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(server + "/reflect?cap=32")
    web.wait_idle(page)
    # hover: padded (6, 8) lights up its source (row 6 - 2 = 4 -> 2, column 8 - 2 = 6 -> 2), no rerun
    web.hover_cell(page, "reflect_grid", 6, 8, panel="x2")
    deadline = time.time() + 5
    while time.time() < deadline and len(web.highlighted_cells(page, "reflect_grid")) < 2:
        time.sleep(0.1)
    assert set(web.highlighted_cells(page, "reflect_grid")) == {(6.0, 8.0), (2.0, 2.0)}
    assert page.locator(web.RUNNING).count() == 0, "no rerun started"

    # padded cell (1, 0): row 1 - top 2 = -1 mirrors to 1, column 0 - left 2 = -2 mirrors to 2
    web.click_cell(page, "reflect_grid", 1, 0, panel="x2")
    web.no_exception(page)
    assert "Picked: padded cell (1, 0), which copies input cell (1, 2)" in body(page)
    assert "reflect_pick=pad:1,0" in unquote(page.url)
    assert outlined(page, "reflect_grid", HIGHLIGHT, "x") == {(1, 2)}
    assert outlined(page, "reflect_grid", HIGHLIGHT, "x2") == {(1, 0)}
    # the reverse: input cell (0, 1) is copied to padded (2, 3) itself and to its mirror (2, 1)
    web.click_cell(page, "reflect_grid", 0, 1, panel="x")
    assert "Picked: input cell (0, 1): 2 padded cells copy it" in body(page)
    assert "reflect_pick=in:0,1" in unquote(page.url)
    assert outlined(page, "reflect_grid", READER, "x2") == {(2, 1), (2, 3)}
    assert (
        page.locator('[data-testid="stNumberInput"] input').nth(1).input_value() == "1"
    )  # the keyboard path follows

    # the image: a 32 px image padded by 24, a few screen pixels per pixel
    web.click_cell(page, "reflect_image", 2, 30)
    web.no_exception(page)
    # row 2 - 24 = -22 mirrors to 22, column 30 - 24 = 6 is inside; the source sits at padded (46, 30).
    # Row 22 is copied to padded rows 46, 2 and 24 + (2 * 31 - 22) = 64; column 6 to 30 and 18.
    assert re.search(r"Padded pixel \(2, 30\) copies input pixel \(22, 6\); 6 padded pixels", body(page))
    assert "reflect_img_pick=pad:2,30" in unquote(page.url)
    assert outlined(page, "reflect_image", HIGHLIGHT) == {(2, 30), (46, 30)}
    assert outlined(page, "reflect_image", READER) == {(2, 18), (46, 18), (64, 18), (64, 30)}
    url = page.url
    page.close()

    with web.reopened(browser, url, web.PROJECTOR) as again:  # the shared link, on the projector
        assert "Picked: input cell (0, 1): 2 padded cells copy it" in body(again)
        assert outlined(again, "reflect_grid", READER, "x2") == {(2, 1), (2, 3)}
        assert outlined(again, "reflect_image", READER) == {(2, 18), (46, 18), (64, 18), (64, 30)}
        web.shot(again, "reflect_1920x1080")
