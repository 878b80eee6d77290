"""Every page through streamlit.testing.v1.AppTest with its defaults, and the sidebar's backend badge.
Each page's own behaviour (picks, extremes, URLs, figures) is tested in tests/test_pages_<page>.py."""

from __future__ import annotations

import pytest

from tests.support.apptest import PAGES, errors, open_page

pytestmark = pytest.mark.usefixtures("numpy_backend")


@pytest.mark.parametrize("page", [None, *PAGES])
def test_every_page_runs_with_defaults(page):
    at = open_page(page)
    assert not errors(at)
    assert at.title, "every page has a title"


def test_backend_badge_says_cpu_and_why():
    texts = " ".join(w.value for w in open_page().sidebar.warning)
    assert "CPU / NumPy" in texts and "timings are CPU timings" in texts
    assert "CONV_EXPLORER_BACKEND=numpy" in texts


def test_upload_of_a_non_image_shows_a_message_and_falls_back():
    from ui.images import ImageError, decode_image

    with pytest.raises(ImageError):
        decode_image(b"%PDF-1.4 not an image", 256)
