"""Presentation mode and the presenter keys in a real browser.

- At 1920 x 1080 with pres=1, every visible text element of every page's main area is at least
  20 px (computed font sizes, measured in the browser), and its body text 24 px. Figures are
  SVG drawn by Plotly, sized by viz/style.py and checked by the page tests; they are left out.
- Space plays and pauses the animation in view, the arrow keys step it; keys typed into an
  input stay there. Expected steps are read from the figure's own slider.
"""

from __future__ import annotations

import time

import pytest

from tests.support import browser as web

pytestmark = [pytest.mark.e2e, pytest.mark.tour]

PAGES = ["", "direct", "im2col", "unfold", "reflect", "backward", "benchmarks"]

# Every text node in the main area that a person can see: not inside an SVG figure, not an icon
# glyph, not MathML kept for screen readers, laid out with a size. [text, px, tag, testid, kind]:
# kind "body" for running text, "control" for labels, captions, buttons, tabs and expander titles.
TEXT_SIZES = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const out = [];
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const text = walker.currentNode.textContent.trim();
    const el = walker.currentNode.parentElement;
    if (!text || el.closest('svg, [data-testid="stIconMaterial"], .katex-mathml')) continue;
    const cs = getComputedStyle(el);
    if (cs.visibility === "hidden" || cs.display === "none" || parseFloat(cs.opacity) === 0) continue;
    const r = el.getBoundingClientRect();
    if (r.width <= 1 || r.height <= 1) continue;
    const testid = (el.closest("[data-testid]") || {}).dataset.testid;
    const control = el.closest(
      '[data-testid="stWidgetLabel"], [data-testid="stCaptionContainer"], ' +
        'button, summary, label, [role="tab"]'
    );
    out.push([text.slice(0, 60), parseFloat(cs.fontSize), el.tagName, testid, control ? "control" : "body"]);
  }
  return out;
}"""


@pytest.mark.parametrize("path", PAGES)
def test_presentation_text_is_projector_sized_at_1920(server, browser, path):
    with web.reopened(browser, f"{server}/{path}?pres=1", web.PROJECTOR) as page:
        texts = page.evaluate(TEXT_SIZES)
        assert len(texts) > 20, "the page has text to measure"
        small = [t for t in texts if t[1] < 20]
        assert not small, small[:10]
        body = [t for t in texts if t[2] in ("P", "LI") and t[3] == "stMarkdownContainer" and t[4] == "body"]
        assert body and min(t[1] for t in body) >= 24, sorted(body, key=lambda t: t[1])[:5]
        web.shot(page, f"presentation_{path or 'home'}_1920x1080")


def test_normal_mode_keeps_streamlit_sizes(server, browser):
    """The CSS is presentation mode's only: without pres=1 captions stay Streamlit's 14 px."""
    with web.reopened(browser, f"{server}/direct", web.PROJECTOR) as page:
        sizes = {t[1] for t in page.evaluate(TEXT_SIZES) if t[3] == "stCaptionContainer"}
        assert sizes and max(sizes) < 20


SHOWS = "(want) => document.querySelector('text.slider-label').textContent === want"
MOVED_ON = "() => /step ([4-9]|1[01])$/.test(document.querySelector('text.slider-label').textContent)"


@pytest.fixture(scope="module")
def keys_app():
    port = web._free_port()
    proc = web.start_server(port, app=web.ROOT / "tests" / "support" / "apps" / "keys_app.py")
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=20)


def test_keys_play_pause_and_step_the_animation_in_view(keys_app, browser):
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(keys_app)
    web.wait_idle(page)
    label = page.locator("text.slider-label").first  # the slider's current value: "at step i"
    assert label.text_content() == "at step 0"
    page.evaluate("document.activeElement && document.activeElement.blur()")  # keys go to the page
    for key, expected in [
        ("ArrowRight", 1),
        ("ArrowRight", 2),
        ("PageDown", 3),
        ("ArrowLeft", 2),
        ("PageUp", 1),
    ]:
        page.keyboard.press(key)
        page.wait_for_function(SHOWS, arg=f"at step {expected}", timeout=5000)
    page.keyboard.press(" ")  # play: 300 ms a step from step 1
    page.wait_for_function(MOVED_ON, timeout=10000)
    page.keyboard.press(" ")  # pause
    time.sleep(0.5)
    paused = label.text_content()
    time.sleep(1.0)
    assert label.text_content() == paused and paused != "at step 11", "paused before the end, and it stays"
    box = page.locator(".st-key-number input")  # typing into an input: the keys are its own
    box.click()
    page.keyboard.press("ArrowUp")
    assert label.text_content() == paused
    web.no_exception(page)
    page.close()


STEP_LABELS = """() => {
  const gd = [...document.querySelectorAll('.st-key-pick-direct_window .js-plotly-plot')]
    .find((g) => g.layout);
  return gd.layout.sliders[0].steps.map((s) => s.label);
}"""


def test_a_key_step_on_the_direct_page_picks_the_next_output(server, browser):
    """The sliding window on Direct: an arrow key steps the animation, and the step on screen
    becomes the pick (the page, the link and a following class see the same output)."""
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(f"{server}/direct?direct_pick=out:40,60")
    web.wait_idle(page)
    page.locator(".st-key-pick-direct_window").scroll_into_view_if_needed()
    steps = page.evaluate(STEP_LABELS)
    after = steps[steps.index("40,60") + 1]  # the figure's own next step
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press("ArrowRight")
    web.wait_idle(page)
    assert f"direct_pick=out:{after}" in web.current_url(page).replace("%3A", ":").replace("%2C", ",")
    assert page.get_by_text(f"Picked: output pixel ({after.replace(',', ', ')})").count() == 1
    web.no_exception(page)
    page.close()
