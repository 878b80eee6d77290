"""The JavaScript twin of the index formulas (ui/index_math.js), run in Chromium against
gpuops/index_math.py and the index maps built on it (gpuops/maps/conv2d.py): the browser's hover
must outline exactly the cells a click computes on the server. Random geometries, fixed seed."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from gpuops import index_math as im
from gpuops.checks import WindowGeometry
from gpuops.maps import conv2d as maps
from tests.support import browser as web

pytestmark = pytest.mark.e2e

JS = (Path(__file__).resolve().parents[2] / "ui" / "index_math.js").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def js(playwright):
    """A blank Chromium page with the twin loaded: call(name, *args) runs ConvIndexMath[name]."""
    browser = playwright.chromium.launch(executable_path=web.chromium_path(), args=web.CHROMIUM_ARGS)
    page = browser.new_page()
    page.set_content("<html><body></body></html>")
    page.add_script_tag(content=JS)

    def many(name: str, cases: list) -> list:
        return page.evaluate(
            "([name, cases]) => cases.map((args) => ConvIndexMath[name](...args))", [name, cases]
        )

    yield many
    browser.close()


def geometries(n: int, seed: int = 7) -> list[WindowGeometry]:
    """Random valid geometries: reflect-legal pads (< size), windows that fit."""
    rng = np.random.default_rng(seed)
    found = []
    while len(found) < n:
        H, W = (int(v) for v in rng.integers(1, 12, 2))
        KH, KW = (int(v) for v in rng.integers(1, 5, 2))
        sh, sw, dh, dw = (int(v) for v in rng.integers(1, 4, 4))
        pt, pb = (int(v) for v in rng.integers(0, H, 2))
        pl, pr = (int(v) for v in rng.integers(0, W, 2))
        g = WindowGeometry(H, W, KH, KW, sh, sw, pt, pb, pl, pr, dh, dw)
        if g.H_out >= 1 and g.W_out >= 1:
            found.append(g)
    return found


def as_js(g: WindowGeometry) -> dict:
    return {f: getattr(g, f) for f in WindowGeometry.__dataclass_fields__}


def test_the_scalar_formulas_match(js):
    counts = list(
        itertools.product(range(1, 9), range(0, 3), range(0, 3), range(1, 4), range(1, 4), range(1, 3))
    )
    counts = [c for c in counts if c[0] + c[1] + c[2] >= c[4] * (c[3] - 1) + 1]  # a window fits
    assert js("windowCount", counts) == [im.window_count(*c) for c in counts]
    coords = list(itertools.product(range(-2, 7), range(1, 4), range(0, 3), range(0, 3), range(1, 3)))
    assert js("inputCoord", coords) == [im.input_coord(*c) for c in coords]
    params = list(
        itertools.product(range(1, 4), range(0, 3), range(0, 3), range(1, 3))
    )  # stride, pad, k, dil
    inverse = [(i, s, p, k, d, n) for i in range(-6, 20) for s, p, k, d in params for n in (3, 7)]
    assert js("outputCoord", inverse) == [im.output_coord(*c) for c in inverse]
    reflect = [(i, size) for size in range(2, 8) for i in range(-(size - 1), 2 * size - 1)]
    assert js("reflectIndex", reflect) == [int(im.reflect_index(*c)) for c in reflect]
    copies = [
        (i, size, b, a) for size in range(2, 7) for i in range(size) for b in range(size) for a in range(size)
    ]
    got = js("reflectCopies", copies)
    for case, triple in zip(copies, got, strict=True):
        coords_, present = im.reflect_copies(*case)
        assert triple == [[int(c), bool(p)] for c, p in zip(coords_, present, strict=True)], case


def test_windows_receptive_fields_and_readers_match_the_index_maps(js):
    for g in geometries(40):
        for mode in ("zeros", "reflect"):
            cells = [(ih, iw) for ih in range(g.H) for iw in range(g.W)]
            covering = js("windowsCovering", [(as_js(g), ih, iw) for ih, iw in cells])
            assert covering == [[list(t) for t in im.windows_covering(g, ih, iw)] for ih, iw in cells]
            outs = [(oh, ow) for oh in range(g.H_out) for ow in range(g.W_out)]
            fields = js("receptiveField", [(as_js(g), oh, ow, mode) for oh, ow in outs])
            for (oh, ow), taps in zip(outs, fields, strict=True):
                rf = maps.receptive_field(g, oh, ow, mode)
                want = np.stack([rf.rows, rf.cols, rf.source_rows, rf.source_cols], -1).reshape(-1, 4)
                assert taps == want.tolist(), (g, mode, oh, ow)
            readers = js("readers", [(as_js(g), ih, iw, mode) for ih, iw in cells])
            for (ih, iw), got in zip(cells, readers, strict=True):
                want = sorted({(int(r[0]), int(r[1])) for r in maps.readers_of(g, ih, iw, mode)})
                assert [tuple(x) for x in got] == want, (g, mode, ih, iw)
