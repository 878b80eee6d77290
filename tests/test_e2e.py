"""Browser tests of the whole app: every page opens, uploads, sliders, the animation.

Per-page click tests live beside this file (tests/test_e2e_*.py); the harness is tests/browser.py.
"""

from __future__ import annotations

import time

import pytest

from tests.browser import _png, no_exception, shot, upload_file, wait_idle

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("path", ["", "direct", "im2col", "unfold", "reflect", "backward", "benchmarks"])
@pytest.mark.parametrize("size", [(1280, 800), (1920, 1080)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_every_page_opens(server, browser, path, size):
    page = browser.new_page(viewport={"width": size[0], "height": size[1]})
    page.goto(f"{server}/{path}")
    wait_idle(page)
    no_exception(page)
    assert page.locator("h1").count() >= 1
    if path not in ("", "benchmarks"):
        page.locator(".js-plotly-plot").first.wait_for(timeout=30000)  # the figures are drawn
        time.sleep(1)
    shot(page, f"{path or 'home'}_{size[0]}x{size[1]}")
    page.close()


def test_upload_then_move_a_slider_changes_the_output(server, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page.goto(f"{server}/direct")
    upload_file(page, "gradient.png", _png(120, 80))
    page.get_by_text("your upload: 120 x 80 px").wait_for(timeout=30000)
    page.get_by_text("Output: 120 x 80").first.wait_for(timeout=30000)
    shot(page, "direct_after_upload")
    # move the stride slider one step with the keyboard, as a user would
    slider = page.get_by_role("slider", name="Stride S")
    slider.focus()
    slider.press("ArrowRight")
    wait_idle(page)
    no_exception(page)
    page.get_by_text("Output: 60 x 40").first.wait_for(timeout=30000)
    shot(page, "direct_stride_2")
    page.close()


def test_bad_upload_shows_a_message_and_the_page_works(server, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{server}/direct")
    upload_file(page, "notes.png", b"this is text, not a PNG")
    page.get_by_text("not an image Conv Explorer can read").wait_for(timeout=30000)
    page.get_by_text("Output: 256 x 256").first.wait_for(timeout=30000)  # the sample is used meanwhile
    shot(page, "direct_bad_upload")
    page.close()
