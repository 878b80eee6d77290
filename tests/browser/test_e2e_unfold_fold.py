"""The Unfold / Fold page in a real browser: clicks at known screen positions pick cells (in the page
text, the number inputs and the URL, with the highlight drawn), both directions; a reopened link
shows the same pick (on a projector-sized screen); hovering outlines a mapping without a rerun; the
step-by-step animation runs in the browser."""

from __future__ import annotations

import time
from urllib.parse import parse_qs, urlparse

import pytest

from tests.support import browser as web
from viz.style import HIGHLIGHT, READER

pytestmark = [pytest.mark.e2e, pytest.mark.tour]

K, S, P, D = 3, 2, 1, 1  # the page's defaults, on the 256 x 256 sample
W_OUT = (256 + 2 * P - D * (K - 1) - 1) // S + 1


def picked(page) -> str:
    """The pick in the address bar (read from the page: Playwright's page.url can lag a same-page
    URL update)."""
    return parse_qs(urlparse(page.evaluate("location.href")).query)["unfold_pick"][0]


def outlines(page, chart: str, colour: str, xref: str = "x") -> set[tuple[float, float]]:
    return {
        ((s["y0"] + s["y1"]) / 2, (s["x0"] + s["x1"]) / 2)
        for s in web.shapes_of(page, chart)
        if s.get("line", {}).get("color") == colour
        and s.get("xref", "x") == xref
        and s.get("name") != "hover-hl"
    }


def window_columns(page) -> list[int]:
    """The true column index of every position of the matrix window, as the browser holds it."""
    customdata = web.trace_array(page, "matrix", 1, "customdata")
    return [int(v) for v in customdata[0]]


def window_copies(columns: list[int], pixel: tuple[int, int], geometry: tuple, w_out: int) -> set:
    """Every entry (row, column) of the matrix window that copies `pixel` (3 colour channels),
    from the sliding window itself: patch l reads (oh*S - P + ki*D, ow*S - P + kj*D)."""
    k, s, p, d = geometry
    found = set()
    for l in columns:
        for ki in range(k):
            for kj in range(k):
                if (l // w_out * s - p + ki * d, l % w_out * s - p + kj * d) == pixel:
                    found |= {((c * k + ki) * k + kj, l) for c in range(3)}
    return found


ANIMATION_STATE = """() => {
  const gd = [...document.querySelectorAll('.st-key-pick-animation .js-plotly-plot')]
      .find((g) => g.layout);
  const n = gd.data.length;  // the tap outline, then the column strip, are the last traces
  return {
    x: Array.from(gd.data[n - 2].x).slice(0, 10),
    z: Array.from(gd.data[n - 1].z, (r) => Array.from(r)[0]),
  };
}"""


def taps(oh: int, ow: int) -> set[tuple[float, float]]:
    return {(float(oh * S - P + ki * D), float(ow * S - P + kj * D)) for ki in range(K) for kj in range(K)}


def test_clicks_both_ways_hover_the_animation_and_a_shared_link(server, browser):
    page = browser.new_page(viewport={"width": 1366, "height": 1500})
    page.goto(f"{server}/unfold?unfold_pick=px:100,120")
    web.wait_idle(page)
    web.no_exception(page)
    # a pixel of the patch view -> that pixel, every patch covering it outlined
    web.click_cell(page, "zoom", 103, 118)
    assert picked(page) == "px:103,118"
    body = page.inner_text("body")
    n = sum(
        1
        for oh in range(W_OUT)
        for ow in range(W_OUT)
        if (103, 118) in {(int(r), int(c)) for r, c in taps(oh, ow)}
    )
    assert f"covered by {n} patch" in body.replace("\n", " ")
    assert (103.0, 118.0) in outlines(page, "zoom", READER)
    assert page.get_by_label("Pixel row").input_value() == "103"
    # a column of the matrix -> its patch: taps outlined on the patch view, column outlined in the matrix
    columns = window_columns(page)
    web.click_cell(page, "matrix", 5, 1, panel="x2")
    l = columns[1]
    assert picked(page) == f"patch:{l // W_OUT},{l % W_OUT}"
    assert f"patch l = {l:,}" in page.inner_text("body")
    assert outlines(page, "zoom", HIGHLIGHT) == taps(l // W_OUT, l % W_OUT)
    assert page.get_by_label("Column l (patch)").input_value() == str(l)
    assert outlines(page, "matrix", HIGHLIGHT, "x2")  # the picked column in the window
    # a pixel of the overlap-count map always picks the pixel
    web.click_cell(page, "count", 40, 200)
    assert picked(page) == "px:40,200"
    web.shot(page, "unfold_after_clicks")
    url = page.evaluate("location.href")

    # hovering outlines the copies in the browser alone (no rerun); the same tab, another pick
    page.goto(f"{server}/unfold?unfold_pick=patch:50,60")
    web.wait_idle(page)
    columns = window_columns(page)
    y, x = 50 * S - P + 1, 60 * S - P + 1  # the picked patch's middle tap
    web.hover_cell(page, "zoom", y, x)
    deadline = time.time() + 5
    while time.time() < deadline and not web.highlighted_cells(page, "matrix"):
        time.sleep(0.1)
    shown = {(int(r), columns[int(c)]) for r, c in web.highlighted_cells(page, "matrix")}
    expected = window_copies(columns, (y, x), (K, S, P, D), W_OUT)
    assert shown == expected and expected
    assert page.locator(web.RUNNING).count() == 0, "no rerun started"
    # and back: an entry of the matrix window outlines the pixel it copies
    l = 50 * W_OUT + 60
    web.hover_cell(page, "matrix", 0, columns.index(l), panel="x2")
    time.sleep(0.3)
    assert web.highlighted_cells(page, "zoom") == [(float(l // W_OUT * S - P), float(l % W_OUT * S - P))]

    # the step-by-step animation runs in the browser: frame 3 moves the taps and refills the column
    before = page.evaluate(ANIMATION_STATE)
    page.evaluate("""async () => {
      const gd = [...document.querySelectorAll('.st-key-pick-animation .js-plotly-plot')]
          .find((g) => g.layout);
      const frame = gd.layout.sliders[0].steps[3].args[0][0];  // the slider's step 3 names frame 3
      await window.Plotly.animate(gd, [frame], {frame: {duration: 0, redraw: true}, mode: "immediate"});
    }""")
    after = page.evaluate(ANIMATION_STATE)
    assert after["x"] != before["x"] and after["z"] != before["z"] and all(v is not None for v in after["z"])
    page.close()

    # the link reproduces the view in a new tab (a new session), on the projector
    with web.reopened(browser, url, web.PROJECTOR) as fresh:
        assert picked(fresh) == "px:40,200"
        assert fresh.get_by_label("Pixel col").input_value() == "200"
        assert "Picked pixel (40, 200)" in fresh.inner_text("body")
        web.shot(fresh, "unfold_1920x1080")


def test_a_patch_larger_than_the_close_up_has_hover_too(server, browser):
    """K = 9, D = 4: a patch spans 33 pixels, past the 16 x 16 the per-cell hover maps allowed; the
    rules answer hovers at any size, in the browser."""
    k, s, p, d = 9, 2, 1, 4
    w_out = (256 + 2 * p - d * (k - 1) - 1) // s + 1
    page = browser.new_page(viewport={"width": 1366, "height": 1500})
    page.goto(f"{server}/unfold?unfold_k={k}&unfold_dil={d}&unfold_pick=patch:20,30")
    web.wait_idle(page)
    web.no_exception(page)
    columns = window_columns(page)
    y, x = 20 * s - p + 4 * d, 30 * s - p + 4 * d  # the patch's middle tap
    web.hover_cell(page, "zoom", y, x)
    deadline = time.time() + 5
    while time.time() < deadline and not web.highlighted_cells(page, "matrix"):
        time.sleep(0.1)
    shown = {(int(r), columns[int(c)]) for r, c in web.highlighted_cells(page, "matrix")}
    expected = window_copies(columns, (y, x), (k, s, p, d), w_out)
    assert shown == expected and expected
    assert page.locator(web.RUNNING).count() == 0, "no rerun started"
    page.close()
