"""Browser tests of the whole app: Home opens; a bad upload is refused and the page works.

Per-page click tests live beside this file (tests/test_e2e_*.py); uploads and slider moves in
several sessions at once are tests/server/test_load_small.py; the harness is tests/support/browser.py.
"""

from __future__ import annotations

import pytest

from tests.support.browser import LAPTOP, PROJECTOR, no_exception, shot, upload_file, wait_idle

pytestmark = pytest.mark.e2e


# Home at both sizes, in one tab resized (one page load fewer); every other page is opened at the
# laptop size by its own browser test (tests/test_e2e_<page>.py), which reopens its shared link at
# the projector size.
def test_home_opens(server, browser):
    page = browser.new_page(viewport={"width": LAPTOP[0], "height": LAPTOP[1]})
    page.goto(f"{server}/")
    for size in (LAPTOP, PROJECTOR):
        page.set_viewport_size({"width": size[0], "height": size[1]})
        wait_idle(page)
        no_exception(page)
        assert page.locator("h1").count() >= 1
        shot(page, f"home_{size[0]}x{size[1]}")
    page.close()


def test_bad_upload_shows_a_message_and_the_page_works(server, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{server}/direct")
    upload_file(page, "notes.png", b"this is text, not a PNG")
    page.get_by_text("not an image Conv Explorer can read").wait_for(timeout=30000)
    page.get_by_text("Output: 256 x 256").first.wait_for(timeout=30000)  # the sample is used meanwhile
    shot(page, "direct_bad_upload")
    page.close()
