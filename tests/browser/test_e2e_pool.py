"""The Pooling page in a real browser: a click on an output outlines its window and winner, a click
on an input cell outlines the outputs that read it; the pick goes into the URL. Screenshots at
1366 x 768 and 1920 x 1080 (tests/artifacts/pool_*.png)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from tests.support import browser as web

pytestmark = [pytest.mark.e2e, pytest.mark.tour]
HIGHLIGHT, READER, SECOND = "#ff7f0e", "#d62728", "#17becf"


def boxes(page, colour: str, panel: str) -> set[tuple[float, float]]:
    return {
        (s["y0"] + 0.5, s["x0"] + 0.5)
        for s in web.shapes_of(page, "pool_grid")
        if s.get("line", {}).get("color") == colour and s.get("xref") == panel and s["x1"] - s["x0"] == 1
    }


def test_click_an_output_then_an_input(server, browser):
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    page.goto(f"{server}/pool?pool_k=2&pool_s=2&pool_p=0&pool_h=6&pool_w=6&pool_seed=4")
    web.wait_idle(page)
    web.no_exception(page)
    web.click_cell(page, "pool_grid", 1, 2, panel="x2")  # output (1, 2): input rows 2-3, columns 4-5
    web.no_exception(page)
    assert boxes(page, SECOND, "x") == {(2.0, 4.0), (2.0, 5.0), (3.0, 4.0), (3.0, 5.0)}
    x = np.random.default_rng(4).integers(0, 10, (6, 6))
    window = [(2, 4), (2, 5), (3, 4), (3, 5)]
    first = next(c for c in window if x[c] == max(x[w] for w in window))
    assert (float(first[0]), float(first[1])) in boxes(page, HIGHLIGHT, "x")
    assert "pool_pick=out%3A1%2C2" in web.current_url(page) or "pool_pick=out:1,2" in web.current_url(page)
    web.shot(page, "pool_1366x768")
    web.click_cell(page, "pool_grid", 5, 0, panel="x")  # input (5, 0): read by output (2, 0) only
    assert boxes(page, READER, "x2") == {(2.0, 0.0)}
    assert "Input (5, 0) is read by 1 output" in page.inner_text("body")
    page.close()


def test_projector_screenshot(server, browser):
    with web.reopened(browser, f"{server}/pool?pool_mode=avg&pool_ceil=1&pres=1", web.PROJECTOR) as page:
        web.shot(page, "pool_1920x1080")


def test_hover_outlines_a_window_without_a_rerun(server, browser):
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    page.goto(f"{server}/pool?pool_k=3&pool_s=2&pool_p=1&pool_h=6&pool_w=7")
    web.wait_idle(page)
    web.hover_cell(page, "pool_grid", 1, 1, panel="x2")  # output (1, 1): input rows 1-3, columns 1-3
    deadline = time.time() + 5
    while time.time() < deadline and len(web.highlighted_cells(page, "pool_grid")) < 10:
        time.sleep(0.1)
    cells = set(web.highlighted_cells(page, "pool_grid"))
    assert {(float(r), float(c)) for r in range(1, 4) for c in range(1, 4)} <= cells
    page.close()
