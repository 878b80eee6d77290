"""The click-and-hover bridge (ui/pick.py) in a real browser, on a tiny app of its own: a click
lands on the exact cell of a heatmap, an image and a subplot; a hover outlines the mapped cell
in another chart (the outputs that read it) without a rerun; a slider rerun keeps the pick."""

from __future__ import annotations

import re
import time

import pytest

import gpuops
from gpuops.maps import conv2d as maps
from tests.support import browser as web

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def pick_app():
    port = web._free_port()
    proc = web.start_server(port, app=web.ROOT / "tests" / "support" / "apps" / "pick_app.py")
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=20)


def picked(page) -> str:
    return re.search(r"PICKED ([^\n]*)", page.inner_text("body")).group(1).strip()


def test_clicks_land_on_the_exact_cell_hover_needs_no_rerun_and_a_slider_keeps_the_pick(pick_app, browser):
    page = browser.new_page(viewport={"width": 1366, "height": 1400})
    page.goto(pick_app)
    web.wait_idle(page)
    # a hover outlines the mapped cell in the browser alone
    web.hover_cell(page, "grid", 1, 4)
    deadline = time.time() + 5
    while time.time() < deadline and not web.highlighted_cells(page, "panels"):
        time.sleep(0.1)
    readers = maps.readers_of(gpuops.window_geometry(6, 6, 2, 1, 0, 1), 1, 4)  # the app's 2 x 2 window
    assert web.highlighted_cells(page, "panels") == sorted({(float(r[0]), float(r[1])) for r in readers})
    assert (1.0, 4.0) in web.highlighted_cells(page, "grid")  # the hovered cell itself
    assert page.locator(web.RUNNING).count() == 0, "no rerun started"
    page.mouse.move(5, 5)
    time.sleep(0.5)
    assert web.highlighted_cells(page, "panels") == []
    # clicks land on the exact cell of a heatmap, an image and a subplot
    for chart, panel, row, col in [
        ("grid", "x", 4, 1),
        ("grid", "x", 0, 5),
        ("image", "x", 17, 203),
        ("image", "x", 250, 3),
        ("panels", "x", 3, 4),
        ("panels", "x2", 5, 0),
    ]:
        web.click_cell(page, chart, row, col, panel)
        assert picked(page) == f"{chart} {panel} {row},{col}"
    # a slider's rerun keeps the pick
    web.click_cell(page, "grid", 2, 3)
    slider = page.get_by_role("slider", name="A slider")
    slider.focus()
    slider.press("ArrowRight")
    web.wait_idle(page)
    assert picked(page) == "grid x 2,3"
    page.close()
