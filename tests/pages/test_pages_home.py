"""The Home page through AppTest (the backend badge, a card per page, "Start here"), and its
thumbnails (viz/home.py) checked against the colour policy."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.apptest import AppTest, open_page
from ui import navigation
from viz import home

pytestmark = pytest.mark.usefixtures("numpy_backend")


def app(state: dict | None = None) -> AppTest:
    return open_page(None, state=state)  # Home is the default page


def test_home_runs_with_defaults():  # the Home part of test_pages.py's test_every_page_runs_with_defaults
    at = app()
    assert not at.error
    assert at.title and at.title[0].value == "Conv Explorer"


def test_home_badge_says_cpu_and_why():
    texts = " ".join(w.value for w in app().main.warning)
    assert "CPU with NumPy" in texts and "timings are CPU timings" in texts
    assert "CONV_EXPLORER_BACKEND=numpy" in texts


def test_a_card_opens_each_page_and_start_here_says_how():
    """One card per page of the navigation but Home, in its order: three cards a row on a laptop."""
    at = app()
    links = [(el.proto.label.strip("*"), el.proto.page) for el in at.main.get("page_link")]
    assert links == [
        ("Direct convolution", "direct"),
        ("im2col + GEMM", "im2col"),
        ("Unfold / Fold", "unfold"),
        ("Reflect padding", "reflect"),
        ("Backward & transposed", "backward"),
        ("Channels & groups", "channels"),
        ("Pooling", "pool"),
        ("LeNet-5", "lenet"),
        ("Benchmarks", "benchmarks"),
    ]
    assert [stem for stem, _, _ in navigation.PAGES[1:]] == [page for _, page in links]
    assert [round(c.proto.weight, 2) for c in at.main.columns] == [0.33] * 9  # 3 rows of 3 cards
    assert len(at.main.get("image")) == 9  # every card has a thumbnail
    steps = at.main.markdown[-1].value
    assert "Click a cell" in steps and "hovering a cell" in steps and "Presentation mode" in steps
    assert "address bar" in steps


def test_presentation_mode_shows_two_larger_cards_a_row():
    at = app(state=dict(pres=True))
    assert [round(c.proto.weight, 2) for c in at.main.columns] == [0.5] * 10  # 5 rows of 2 cards


def test_thumbnails_are_computed_once_per_image(monkeypatch):
    import gpuops

    app()  # the first visit fills the cache (if no earlier test did)
    calls = []
    real = gpuops.conv2d
    monkeypatch.setattr(gpuops, "conv2d", lambda *a, **k: calls.append(1) or real(*a, **k))
    app()
    assert calls == []


# ---- the thumbnails (viz/home.py) ------------------------------------------------------------------
def test_matrix_thumbnail_is_sequential_from_zero():
    mat = np.array([[0.0, 1.0], [2.0, 4.0]])
    rgb = home.matrix_thumbnail(mat, side=4)
    assert rgb.shape == (4, 4, 3) and rgb.dtype == np.uint8
    assert tuple(rgb[0, 0]) == (
        0x44,
        0x01,
        0x54,
    )  # 0 -> Viridis' first colour, not the middle of a diverging scale
    assert tuple(rgb[-1, -1]) == (0xFD, 0xE7, 0x25)  # the maximum -> its last


def test_identity_thumbnail_gives_each_input_cell_one_colour():
    ids = np.array([[0, 1, -1], [1, 2, 0]])
    rgb = home.identity_thumbnail(ids, side=60)
    centre = lambda r, c: tuple(rgb[r * 30 + 15, c * 20 + 10])  # noqa: E731
    assert centre(0, 0) == centre(1, 2) and centre(0, 1) == centre(1, 0)  # same cell, same colour
    assert len({centre(0, 0), centre(0, 1), centre(1, 1)}) == 3
    assert centre(0, 2) == (255, 255, 255)  # padding


def test_padded_thumbnail_boxes_the_original_image():
    padded = np.zeros(
        (40, 40, 3), np.uint8
    )  # a 20 x 20 image padded by 10, shown at 80 px: the box at 20..60
    rgb = home.padded_thumbnail(padded, 10, side=80)
    cyan = np.all(rgb == (0x17, 0xBE, 0xCF), axis=-1)
    rows, cols = np.nonzero(cyan)
    assert (
        17 <= rows.min() <= 20
        and 59 <= rows.max() <= 62
        and 17 <= cols.min() <= 20
        and 59 <= cols.max() <= 62
    )
    assert not cyan[30:50, 30:50].any()  # the image itself is not painted over


def test_thumbnails_have_one_size_and_fit_any_image():
    for shape in [(3, 256, 256), (1, 5, 5), (3, 40, 200)]:
        small = home.small_copy(np.random.default_rng(0).random(shape, dtype=np.float32))
        assert max(small.shape[1:]) <= home.SMALL
        k, stride = home.fold_window(small.shape)
        crop = home.covered_crop(small, k, stride)
        assert (crop.shape[1] - k) % stride == 0 and (crop.shape[2] - k) % stride == 0
        thumb = home.rgb_thumbnail((small[:3].transpose(1, 2, 0) * 255).astype(np.uint8))
        assert thumb.shape == (home.SIDE, home.SIDE, 3)


def test_bars_thumbnail_puts_speed_1_at_the_middle_on_a_log_scale():
    rgb = home.bars_thumbnail(np.array([2.0, 0.5, 8.0]), side=97)  # log2 from -3 to 3 over 96 px
    background = np.array([255, 255, 255])
    dark = [c for c in range(97) if (rgb[:, c] < 40).all()]
    assert 48 in dark  # the line at speed 1
    row = lambda i: [c for c in range(97) if (rgb[int((i + 0.5) * 97 / 3), c] != background).any()]  # noqa: E731
    assert max(row(0)) == 48 + 16 and min(row(1)) == 48 - 16  # 2x: one third of the half to the right
    assert max(row(2)) == 96  # 8x: the right edge
