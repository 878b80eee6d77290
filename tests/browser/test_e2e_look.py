"""The figures in headless Chromium: the sliding window plays from the pick and keeps both panels
readable, and a two-line title stays inside its figure. Screenshots at 1366 x 768 and
1920 x 1080 go to tests/artifacts/ (look_*.png)."""

from __future__ import annotations

import time

import pytest

from tests.support import browser as web
from viz.style import HALO, HIGHLIGHT, HOVER

pytestmark = [pytest.mark.e2e, pytest.mark.tour]

BIG_WINDOW = "/direct?cap=128&direct_k=15&direct_stride=8&direct_pad=15&direct_dil=5"
_PLOT = "document.querySelector('.st-key-pick-{chart} .js-plotly-plot')"


def _click_button(page, chart, text: str) -> None:
    button = chart.locator(".updatemenu-button", has_text=text).first
    button.scroll_into_view_if_needed()  # a tall figure's buttons may lie below the viewport
    box = button.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)


@pytest.mark.parametrize("size, mode", [(web.LAPTOP, "&pres=1"), (web.PROJECTOR, "")])
def test_the_sliding_window_plays_from_the_pick_and_both_panels_stay_readable(browser, server, size, mode):
    with web.reopened(browser, server + BIG_WINDOW + mode, size) as page:
        chart = page.locator(".st-key-pick-direct_window")
        chart.scroll_into_view_if_needed()
        gd = _PLOT.format(chart="direct_window")
        shown = page.evaluate(
            f"""() => {{ const gd = {gd}; window._played = [];
              gd.on('plotly_animatingframe', (e) => window._played.push(e.name));
              const s = gd.layout.sliders[0]; return s.steps[s.active].label; }}"""
        )
        # both panels at least 0.3 of the plot's width, on screen (px), at this viewport
        widths = page.evaluate(
            f"""() => {{ const gd = {gd};
              const area = (s) => gd.querySelector(`.nsewdrag[data-subplot="${{s}}"]`);
              const w = (s) => area(s).getBoundingClientRect().width;
              return [w("xy"), w("x2y2"), gd.getBoundingClientRect().width]; }}"""
        )
        assert min(widths[:2]) >= 0.25 * widths[2] and min(widths[:2]) > 150, widths
        # the panels' titles lie inside the figure (the output's was cut to "Output: g")
        edges = page.evaluate(
            f"""() => {{ const gd = {gd}; const r = gd.getBoundingClientRect();
              return [...gd.querySelectorAll('.annotation-text')].map((a) => {{
                const q = a.getBoundingClientRect(); return [q.left - r.left, r.right - q.right]; }}); }}"""
        )
        assert len(edges) == 2 and all(left >= 0 and right >= 0 for left, right in edges), edges
        web.shot(page, f"look_e2e_sweep_{size[0]}{mode.replace('&', '_').replace('=', '')}")
        _click_button(page, chart, "Play")
        time.sleep(1.2)
        played = page.evaluate("() => window._played")
        assert played and played[0] == shown, (shown, played)  # Play starts at the pick on screen
        web.wait_idle(page)


def test_a_two_line_title_stays_inside_its_figure(browser, server):
    with web.reopened(browser, server + "/direct?cap=128&direct_algo=im2col") as page:
        page.locator(".st-key-pick-direct_threads").scroll_into_view_if_needed()
        time.sleep(0.5)
        top, title_top, lines = page.evaluate(
            f"""() => {{ const gd = {_PLOT.format(chart="direct_threads")};
              const t = gd.querySelector('.gtitle');
              return [gd.getBoundingClientRect().top, t.getBoundingClientRect().top,
                      t.querySelectorAll('tspan.line').length]; }}"""
        )
        assert lines == 2 and title_top >= top, (top, title_top, lines)
        web.shot(page, "look_e2e_threads_1366")


def test_the_hover_outline_is_magenta_never_the_pick_orange(browser, server):
    """Hovering a weight outlines the cell it multiplies on the close-up: halo and magenta line,
    while the taps and the pick keep their own colours."""
    with web.reopened(browser, server + "/direct?cap=64") as page:
        web.hover_cell(page, "direct_kernel", 1, 1)
        deadline = time.time() + 5
        while time.time() < deadline and not web.highlighted_cells(page, "direct_zoom"):
            time.sleep(0.1)
        shapes = web.shapes_of(page, "direct_zoom")
        hover = {s["line"]["color"].lower() for s in shapes if s.get("name") == "hover-hl"}
        others = {s.get("line", {}).get("color", "").lower() for s in shapes if s.get("name") != "hover-hl"}
        assert hover == {HALO.lower(), HOVER.lower()}, hover
        assert HOVER.lower() not in others and HIGHLIGHT.lower() in others
