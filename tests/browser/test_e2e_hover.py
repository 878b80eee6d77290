"""Instant hover on the Direct page's main images, in a real browser: hovering an output pixel
outlines the input cells its window reads, hovering an input cell the outputs that read it,
computed in the browser from the geometry (no rerun, the pick unchanged). Expected cells come
from the server's index maps (gpuops/maps/conv2d.py) for the same geometry."""

from __future__ import annotations

import time
from urllib.parse import parse_qs, urlparse

import pytest

from gpuops.checks import WindowGeometry
from gpuops.maps import conv2d as maps
from tests.support import browser as web

pytestmark = [pytest.mark.e2e, pytest.mark.tour]


def outlined(page, chart: str) -> set[tuple[int, int]]:
    """Cells outlined by the hover on a chart, waiting briefly for Plotly to draw them."""
    deadline = time.time() + 5
    while time.time() < deadline:
        cells = web.highlighted_cells(page, chart)
        if cells:
            break
        time.sleep(0.1)
    return {(int(r), int(c)) for r, c in web.highlighted_cells(page, chart)}


def pick_in_link(page) -> str:
    return parse_qs(urlparse(web.current_url(page)).query).get("direct_pick", [""])[0]


@pytest.mark.parametrize(
    ("query", "geometry"),
    [
        (
            "",
            WindowGeometry(256, 256, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1),
        ),  # the defaults: 3 x 3 box blur, padding 1
        (
            "?direct_k=3&direct_stride=2&direct_pad=2&direct_dil=2&direct_mode=reflect",
            WindowGeometry(256, 256, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2),
        ),
    ],
    ids=["defaults", "strided_dilated_reflect"],
)
def test_hover_outlines_the_window_and_the_readers_without_a_rerun(server, browser, query, geometry):
    mode = "reflect" if "reflect" in query else "zeros"
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(f"{server}/direct{query}&direct_pick=out:5,5".replace("direct&", "direct?"))
    web.wait_idle(page)
    web.no_exception(page)
    assert pick_in_link(page) == "out:5,5"

    web.hover_cell(page, "conv_output", 0, 1)  # an output at the edge: its window reaches the padding
    rf = maps.receptive_field(geometry, 0, 1, mode)
    taps = {(int(r), int(c)) for r, c in zip(rf.rows.ravel(), rf.cols.ravel(), strict=True)}
    sources = {
        (int(r), int(c))
        for r, c in zip(rf.source_rows.ravel(), rf.source_cols.ravel(), strict=True)
        if r >= 0
    }
    assert outlined(page, "conv_input") == taps | sources
    assert outlined(page, "conv_output") == {(0, 1)}

    web.hover_cell(page, "conv_input", 100, 30)  # an input cell: every output that reads it
    readers = {(int(r[0]), int(r[1])) for r in maps.readers_of(geometry, 100, 30, mode)}
    assert readers and outlined(page, "conv_output") == readers
    assert outlined(page, "conv_input") == {(100, 30)}
    assert page.locator(web.RUNNING).count() == 0, "no rerun"
    assert pick_in_link(page) == "out:5,5", "hovering picks nothing"
    page.close()
