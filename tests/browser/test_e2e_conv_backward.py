"""The Backward & transposed page in a real browser: hover a dX cell (its sources light up without a
rerun), click it and see its gradient sources outlined (page text, URL, shapes), click a dY cell and
see where it scatters, play the stamp animation, and reopen the link in a fresh context."""

from __future__ import annotations

import itertools
import time
from urllib.parse import parse_qs, urlparse

import numpy as np
import pytest

from tests.support import browser as web
from viz.style import HIGHLIGHT, READER

pytestmark = [pytest.mark.e2e, pytest.mark.tour]
GEOMETRY = (7, 8, 3, 2, 1, 1)  # the page's defaults: H, W, K, stride, padding, dilation


def taps(H, W, K, S, P, D):
    """(oh, ow, ki, kj, ih, iw) of every forward tap that reads a real input cell (brute force)."""
    Ho, Wo = (H + 2 * P - D * (K - 1) - 1) // S + 1, (W + 2 * P - D * (K - 1) - 1) // S + 1
    for oh, ow, ki, kj in itertools.product(range(Ho), range(Wo), range(K), range(K)):
        ih, iw = oh * S - P + ki * D, ow * S - P + kj * D
        if 0 <= ih < H and 0 <= iw < W:
            yield oh, ow, ki, kj, ih, iw


def outlined(page, chart: str, colour: str, axis: str) -> set[tuple[int, int]]:
    """Cells outlined in `colour` on subplot `axis`, as the browser draws them."""
    return {
        (round((s["y0"] + s["y1"]) / 2), round((s["x0"] + s["x1"]) / 2))
        for s in web.shapes_of(page, chart)
        if s.get("xref") == axis and s.get("line", {}).get("color") == colour and s.get("name") != "hover-hl"
    }


def pick_in_url(page) -> str:
    """The pick the address bar means: a setting at its default (dx:3,3) is left out of the link."""
    return parse_qs(urlparse(page.url).query).get("backward_pick", ["dx:3,3"])[0]


# Plotly's public animation event names the traces each frame replaces (ev.frame.traces): keep them
LISTEN = """() => {
  const gd = [...document.querySelectorAll('.st-key-pick-backward_anim .js-plotly-plot')]
      .find((g) => g.layout);
  window.__framesSeen = [];
  gd.on('plotly_animatingframe', (ev) => window.__framesSeen.push((ev.frame && ev.frame.traces) || []));
}"""

# whether each heatmap the frames replaced holds a plain array in gd.data (Plotly's public figure
# data): Plotly.animate leaves a typed-array spec undecoded, and draws nothing from it
ANIMATED_HEATMAPS = """() => {
  const gd = [...document.querySelectorAll('.st-key-pick-backward_anim .js-plotly-plot')]
      .find((g) => g.layout);
  const moved = new Set(window.__framesSeen.flat());
  return [...moved].filter((i) => gd.data[i].type === 'heatmap').map((i) => Array.isArray(gd.data[i].z));
}"""


def play_the_animation(page) -> None:
    """Press Play on the stamp animation: the slider's current value moves on from the first frame."""
    chart = page.locator(".st-key-pick-backward_anim")
    chart.scroll_into_view_if_needed()
    label = chart.locator("text.slider-label").first  # the current value (the steps' own labels follow)
    label.wait_for(timeout=30000)
    assert "no stamp yet" in label.text_content()
    page.evaluate(LISTEN)
    web.press_play(page, chart, label, "no stamp yet")
    assert "stamped" in label.text_content(), label.text_content()
    drawn = page.evaluate(ANIMATED_HEATMAPS)
    assert drawn and all(drawn), (
        "the animated heatmaps hold arrays (Plotly.animate leaves typed-array specs undecoded)"
    )
    web.shot(page, "backward_animation_playing")


def test_hover_clicks_both_ways_animation_and_the_shared_link(server, browser):
    """One page load (the server is shared and slow): hover, click dX, click dY, play, reopen the link."""
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    page.goto(f"{server}/backward")
    web.wait_idle(page)
    # hover a dX cell: its sources, taps and flipped taps light up in the browser, no rerun, no pick
    web.hover_cell(page, "backward_dx", 1, 1, "x4")
    deadline = time.time() + 5
    while time.time() < deadline and len(web.highlighted_cells(page, "backward_dx")) < 2:
        time.sleep(0.1)
    src = [t for t in taps(*GEOMETRY) if t[4:] == (1, 1)]
    expected = {(1, 1)} | {t[:2] for t in src} | {t[2:4] for t in src} | {(2 - t[2], 2 - t[3]) for t in src}
    assert set(web.highlighted_cells(page, "backward_dx")) == {(float(r), float(c)) for r, c in expected}
    assert page.locator(web.RUNNING).count() == 0 and pick_in_url(page) == "dx:3,3"
    # click a dX cell: the gather view
    web.click_cell(page, "backward_dx", 4, 5, "x4")
    web.no_exception(page)
    assert "dX[4, 5] gathers" in page.inner_text("body") and pick_in_url(page) == "dx:4,5"
    src = [t for t in taps(*GEOMETRY) if t[4:] == (4, 5)]
    assert outlined(page, "backward_dx", HIGHLIGHT, "x") == {t[:2] for t in src}
    assert outlined(page, "backward_dx", HIGHLIGHT, "x3") == {
        (2 - t[2], 2 - t[3]) for t in src
    }  # flipped taps
    web.shot(page, "backward_click_dx_1366x768")
    # click a dY cell: the scatter view, the reverse direction
    web.click_cell(page, "backward_dx", 2, 1, "x")
    assert "dY[2, 1] scatters into" in page.inner_text("body") and pick_in_url(page) == "dy:2,1"
    assert outlined(page, "backward_dx", READER, "x4") == {t[4:] for t in taps(*GEOMETRY) if t[:2] == (2, 1)}
    # reflect-pad backward: click an input cell of the count map -> the padded cells whose gradients it sums
    web.click_cell(page, "backward_reflect", 1, 0, "x2")
    assert "Input cell (1, 0) sums the gradients of" in page.inner_text("body")
    assert parse_qs(urlparse(page.url).query)["backward_rp_pick"] == ["in:1,0"]
    ids = np.pad(np.arange(20).reshape(4, 5), ((1, 2), (2, 1)), mode="reflect")  # the default grid and pads
    assert outlined(page, "backward_reflect", HIGHLIGHT, "x") == {
        tuple(c) for c in np.argwhere(ids == 5).tolist()
    }
    link = page.url
    play_the_animation(page)
    page.close()
    with web.reopened(browser, link, web.PROJECTOR) as again:  # the shared link, on the projector
        assert "dY[2, 1] scatters into" in again.inner_text("body") and pick_in_url(again) == "dy:2,1"
        assert "Input cell (1, 0) sums the gradients of" in again.inner_text("body")
        web.shot(again, "backward_1920x1080")
