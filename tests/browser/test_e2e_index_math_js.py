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
from gpuops.maps import conv_backward as backward
from gpuops.maps import im2col
from gpuops.maps import reflect_pad as reflect
from gpuops.maps.channels import ChannelLayout
from tests.support import browser as web

pytestmark = [pytest.mark.e2e, pytest.mark.tour]

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


def test_tap_of_inverts_input_coord(js):
    cases = list(
        itertools.product(range(0, 4), range(1, 4), range(0, 3), range(-3, 12), range(1, 3), range(1, 4))
    )
    got = js("tapOf", cases)
    for (o, s, p, i, d, taps), k in zip(cases, got, strict=True):
        want = [t for t in range(taps) if im.input_coord(o, s, p, t, d) == i]
        assert k == (want[0] if want else -1), (o, s, p, i, d, taps)


def test_im2col_rows_columns_taps_and_copies_match_the_maps(js):
    for g in geometries(25, seed=11):
        C = 1 + g.H % 3
        rows = list(itertools.product(range(C), range(g.KH), range(g.KW)))
        numbers = js("unrollRow", [(as_js(g), *t) for t in rows])
        assert numbers == list(range(len(rows)))  # im2col.row_labels' order
        assert js("rowTap", [(as_js(g), r) for r in numbers]) == [list(t) for t in im2col.row_labels(C, g)]
        positions = [(oh, ow) for oh in range(g.H_out) for ow in range(g.W_out)]
        columns = js("unrollColumn", [(as_js(g), *p) for p in positions])
        assert columns == [im2col.column_of(g, *p) for p in positions]
        assert js("columnPosition", [(as_js(g), l) for l in columns]) == [list(p) for p in positions]
        taps = js("columnTaps", [(C, as_js(g), l) for l in columns])
        for l, got in zip(columns, taps, strict=True):
            want = np.stack(im2col.column_taps(C, g, l), -1).tolist()
            assert got == [[int(a), int(b), int(c), bool(d)] for a, b, c, d in want], (g, l)
        cells = [(c, ih, iw) for c in range(C) for ih in range(g.H) for iw in range(g.W)]
        copies = js("copiesOf", [(C, as_js(g), *cell) for cell in cells])
        for cell, got in zip(cells, copies, strict=True):
            assert sorted(map(tuple, got)) == sorted(map(tuple, im2col.copies_of(C, g, *cell).tolist())), cell


def test_backward_sources_targets_and_weight_pairs_match_the_maps(js):
    for g in geometries(25, seed=13):
        cells = [(ih, iw) for ih in range(g.H) for iw in range(g.W)]
        sources = js("gradientSources", [(as_js(g), *c) for c in cells])
        for cell, got in zip(cells, sources, strict=True):
            s = backward.gradient_sources(g, *cell)
            assert got == np.hstack([s.outputs, s.taps, s.flipped]).reshape(-1, 6).tolist(), (g, cell)
        outs = [(oh, ow) for oh in range(g.H_out) for ow in range(g.W_out)]
        targets = js("scatterTargets", [(as_js(g), *o) for o in outs])
        assert targets == [backward.scatter_targets(g, *o).tolist() for o in outs], g
        taps = [(ki, kj) for ki in range(g.KH) for kj in range(g.KW)]
        pairs = js("weightPairs", [(as_js(g), *t) for t in taps])
        assert pairs == [backward.weight_pairs(g, *t).tolist() for t in taps], g


def test_reflect_pad_sources_and_copies_match_the_maps(js):
    rng = np.random.default_rng(17)
    for _ in range(30):
        H, W = (int(v) for v in rng.integers(1, 9, 2))
        pads = (*(int(v) for v in rng.integers(0, W, 2)), *(int(v) for v in rng.integers(0, H, 2)))
        rows, cols = reflect.source_map(H, W, pads)
        padded = [(oy, ox) for oy in range(rows.shape[0]) for ox in range(rows.shape[1])]
        got = js("padSource", [(H, W, list(pads), *p) for p in padded])
        assert got == [[int(rows[p]), int(cols[p])] for p in padded], (H, W, pads)
        cells = [(y, x) for y in range(H) for x in range(W)]
        copies = js("padCopies", [(H, W, list(pads), *c) for c in cells])
        assert copies == [reflect.copies_of(H, W, pads, *c).tolist() for c in cells], (H, W, pads)


def test_a_given_output_count_wins_over_the_formula(js):
    """Pooling's ceil_mode counts one more window: readers and outputs use the count given."""
    g = WindowGeometry(5, 5, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1)
    given = {**as_js(g), "H_out": 3, "W_out": 3}
    assert js("outputs", [(as_js(g),), (given,)]) == [[2, 2], [3, 3]]
    assert js("readers", [(as_js(g), 4, 4, "zeros"), (given, 4, 4, "zeros")]) == [[], [[2, 2]]]


def test_group_members_match_the_channel_layout(js):
    for c_in, c_out, groups in [(6, 4, 2), (4, 8, 4), (3, 3, 1), (8, 2, 2), (6, 6, 6)]:
        layout = ChannelLayout(c_in, c_out, groups, 3)
        per_in, per_out = c_in // groups, c_out // groups
        assert js("groupMembers", [(m, per_out, per_in) for m in range(c_out)]) == [
            layout.inputs_of(m) for m in range(c_out)
        ]
        assert js("groupMembers", [(c, per_in, per_out) for c in range(c_in)]) == [
            layout.outputs_of(c) for c in range(c_in)
        ]
