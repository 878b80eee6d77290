"""The hover rules (ui/hover_rules.js, built by ui/hover.py) in Chromium, without a server: what
hovering a cell of each figure outlines must be the cells the server's index maps name for the
same geometry (gpuops/maps/*), on random geometries with fixed seeds. The rules replace the
per-cell hover maps the pages used to send, so every figure is checked against the same maps."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpuops import lenet
from gpuops.checks import WindowGeometry
from gpuops.maps import channels, conv_backward, im2col, reflect_pad, unfold_fold
from gpuops.maps import conv2d as maps
from tests.browser.test_e2e_index_math_js import geometries
from tests.support import browser as web
from ui import hover, lenet_view
from viz.lenet import panel_id

pytestmark = [pytest.mark.e2e, pytest.mark.tour]

UI = Path(__file__).resolve().parents[2] / "ui"
Cells = dict[str, set[tuple[str, int, int]]]


@pytest.fixture(scope="module")
def outlines(playwright):
    """outlines(rules, chart, [(panel, row, col), ...]): what hovering each cell outlines,
    {chart: {(panel, row, col), ...}} per cell (an empty dict where the rules outline nothing)."""
    browser = playwright.chromium.launch(executable_path=web.chromium_path(), args=web.CHROMIUM_ARGS)
    page = browser.new_page()
    page.set_content("<html><body></body></html>")
    for name in ("index_math.js", "hover_rules.js"):
        page.add_script_tag(content=(UI / name).read_text(encoding="utf-8"))

    def ask(rules: hover.Rules, chart: str, cells: list[tuple[str, int, int]]) -> list[Cells]:
        answers = page.evaluate(
            "([rules, cells]) => cells.map(([p, r, c]) => HoverRules.cells(rules, p, r, c))",
            [rules[chart], [list(c) for c in cells]],
        )
        return [
            {name: {(p, int(r), int(c)) for p, r, c in found} for name, found in (got or {}).items()}
            for got in answers
        ]

    yield ask
    browser.close()


def test_direct_kernel_and_close_up(outlines):
    for g in geometries(20, seed=3):
        for mode in ("zeros", "reflect"):
            out = (g.H_out // 2, g.W_out // 2)
            rules = hover.kernel_and_window(
                g, mode, out, kernel=("k", "x"), around=("z", "x"), image=("i", "x")
            )
            rf = maps.receptive_field(g, *out, mode)
            taps = [(i, j) for i in range(g.KH) for j in range(g.KW)]
            got = outlines(rules, "k", [("x", i, j) for i, j in taps])
            for (i, j), found in zip(taps, got, strict=True):
                cell = {("x", int(rf.rows[i, j]), int(rf.cols[i, j]))}
                assert found == {"z": cell, "i": cell}, (g, mode, i, j)
            # every cell of the padded input: its weight when a tap reads it; a reflected padding cell
            # also the cell it copies
            cells = [
                ("x", r, c)
                for r in range(-g.pad_top, g.H + g.pad_bottom)
                for c in range(-g.pad_left, g.W + g.pad_right)
            ]
            got = outlines(rules, "z", cells)
            weight = {(int(rf.rows[i, j]), int(rf.cols[i, j])): (i, j) for i, j in taps}
            for (_, r, c), found in zip(cells, got, strict=True):
                want: Cells = {}
                if (r, c) in weight:
                    want["k"] = {("x", *weight[(r, c)])}
                if mode == "reflect" and not (0 <= r < g.H and 0 <= c < g.W):
                    win = maps.padded_window(np.zeros((g.H, g.W)), g, mode, r, r + 1, c, c + 1)
                    src = ("x", int(win.source_rows[0, 0]), int(win.source_cols[0, 0]))
                    want["z"], want["i"] = {src}, {src}
                assert found == want, (g, mode, r, c)


def test_im2col_inputs_x_unroll_and_y(outlines):
    for g in geometries(12, seed=5):
        C, M = 1 + g.W % 3, 2
        panels = [f"x{c + 1}" if c else "x" for c in range(C)]
        rules = hover.unroll(
            g, C, M, inputs="in", panels=panels, xunroll=("xu", "x"), ymat=("y", "x"), wmat=("w", "x")
        )
        cells = [(panels[c], i, j) for c in range(C) for i in range(g.H) for j in range(g.W)]
        for (p, i, j), found in zip(cells, outlines(rules, "in", cells), strict=True):
            copies = {("x", int(r), int(l)) for r, l in im2col.copies_of(C, g, panels.index(p), i, j)}
            assert found == ({"xu": copies} if copies else {}), (g, p, i, j)
        R = C * g.KH * g.KW
        for l in range(g.L):
            channel, rows, cols, inside = im2col.column_taps(C, g, l)
            read = {
                (panels[int(c)], int(r), int(q))
                for c, r, q, ok in zip(channel, rows, cols, inside, strict=True)
                if ok
            }
            column = {("x", r, l) for r in range(R)}
            x_side = outlines(rules, "xu", [("x", r, l) for r in range(R)])
            y_side = outlines(rules, "y", [("x", m, l) for m in range(M)])
            for found in x_side:
                assert found == {
                    **({"in": read} if read else {}),
                    "xu": column,
                    "y": {("x", m, l) for m in range(M)},
                }
            for m, found in enumerate(y_side):
                assert found == {
                    **({"in": read} if read else {}),
                    "xu": column,
                    "w": {("x", m, r) for r in range(R)},
                }
        assert outlines(rules, "xu", [("x", R, 0), ("x", 0, g.L)]) == [{}, {}]  # past the matrix: nothing


def test_unfold_close_up_and_matrix_window(outlines):
    for g in geometries(12, seed=9):
        C = 1 + g.H % 2
        window = unfold_fold.column_window(g, g.L // 2, 5)
        rules = hover.unfold_window(
            g, C, window, matrix=("m", "x2"), zoom=("z", "x"), image=("i", "x"), pixels=[("c", "x")]
        )
        region = (0, g.H - 1, 0, g.W - 1)
        copies = unfold_fold.copies_in_window(C, g, window, region)
        pixels = [("x", y, x) for y in range(g.H) for x in range(g.W)]
        on_zoom = outlines(rules, "z", pixels)
        for (_, y, x), found in zip(pixels, on_zoom, strict=True):
            want = {("x2", r, pos) for r, pos in copies.get((y, x), [])}
            assert found == ({"m": want} if want else {}), (g, y, x)
        assert outlines(rules, "i", pixels) == on_zoom and outlines(rules, "c", pixels) == on_zoom
        entries = [("x2", r, pos) for r in range(C * g.KH * g.KW) for pos in range(len(window))]
        source = {(r, pos): pixel for pixel, found in copies.items() for r, pos in found}
        for (_, r, pos), found in zip(entries, outlines(rules, "m", entries), strict=True):
            pixel = source.get((r, pos))
            assert found == ({"z": {("x", *pixel)}, "i": {("x", *pixel)}} if pixel else {}), (g, r, pos)


def test_reflect_padding_both_ways(outlines):
    rng = np.random.default_rng(21)
    for _ in range(20):
        H, W = (int(v) for v in rng.integers(1, 8, 2))
        pads = (*(int(v) for v in rng.integers(0, W, 2)), *(int(v) for v in rng.integers(0, H, 2)))
        rules = hover.reflect_pad(H, W, pads, padded=("g", "x2"), inputs=[("g", "x"), ("g", "x3")])
        rows, cols = reflect_pad.source_map(H, W, pads)
        padded = [("x2", oy, ox) for oy in range(rows.shape[0]) for ox in range(rows.shape[1])]
        for (_, oy, ox), found in zip(padded, outlines(rules, "g", padded), strict=True):
            src = (int(rows[oy, ox]), int(cols[oy, ox]))
            assert found == {"g": {("x", *src), ("x3", *src)}}, (H, W, pads, oy, ox)
        inputs = [(p, y, x) for p in ("x", "x3") for y in range(H) for x in range(W)]
        for (p, y, x), found in zip(inputs, outlines(rules, "g", inputs), strict=True):
            copies = {("x2", int(a), int(b)) for a, b in reflect_pad.copies_of(H, W, pads, y, x)}
            assert found == {"g": copies | {("x3" if p == "x" else "x", y, x)}}, (H, W, pads, p, y, x)


def test_backward_gather_scatter_weights_and_counts(outlines):
    for g in geometries(15, seed=23):
        rules = hover.combine(
            hover.backward(g, dy=("d", "x"), w=("d", "x2"), flipped=("d", "x3"), dx=("d", "x4")),
            hover.gradient_reach(g, on=("n", "x"), outputs=[("a", "x"), ("d", "x")]),
            hover.weight_gradient(g, x=("w", "x"), dy=("w", "x2"), dw=("w", "x3")),
        )
        inputs = [(i, j) for i in range(g.H) for j in range(g.W)]
        dx = outlines(rules, "d", [("x4", i, j) for i, j in inputs])
        counts = outlines(rules, "n", [("x", i, j) for i, j in inputs])
        fed = outlines(rules, "w", [("x", i, j) for i, j in inputs])
        for (i, j), gathered, reach, feeds in zip(inputs, dx, counts, fed, strict=True):
            s = conv_backward.gradient_sources(g, i, j)
            outs = {("x", int(a), int(b)) for a, b in s.outputs}
            taps = {("x2", int(a), int(b)) for a, b in s.taps}
            flipped = {("x3", int(a), int(b)) for a, b in s.flipped}
            assert gathered == ({"d": outs | taps | flipped} if outs else {}), (g, i, j)
            assert reach == ({"a": outs, "d": outs} if outs else {}), (g, i, j)
            assert feeds == (
                {"w": {("x2", *o[1:]) for o in outs} | {("x3", *t[1:]) for t in taps}} if outs else {}
            )
        outputs = [(oh, ow) for oh in range(g.H_out) for ow in range(g.W_out)]
        for (oh, ow), found in zip(outputs, outlines(rules, "d", [("x", *o) for o in outputs]), strict=True):
            t = conv_backward.scatter_targets(g, oh, ow)
            want = {("x4", int(a), int(b)) for a, b in t[:, :2]} | {
                ("x2", int(a), int(b)) for a, b in t[:, 2:]
            }
            assert found == ({"d": want} if want else {}), (g, oh, ow)
        taps = [(ki, kj) for ki in range(g.KH) for kj in range(g.KW)]
        for (ki, kj), found in zip(taps, outlines(rules, "w", [("x3", *t) for t in taps]), strict=True):
            p = conv_backward.weight_pairs(g, ki, kj)
            want = {("x2", int(a), int(b)) for a, b in p[:, :2]} | {
                ("x", int(a), int(b)) for a, b in p[:, 2:]
            }
            assert found == ({"w": want} if want else {}), (g, ki, kj)


def test_pool_windows_with_a_given_output_count(outlines):
    """ceil_mode: one more window than the formula, reaching past the input (outlined inside only)."""
    g = WindowGeometry(5, 5, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1)
    rules = hover.window(g, "zeros", outputs=("p", "x2"), inputs=("p", "x"), inside=True, counts=(3, 3))
    got = outlines(rules, "p", [("x2", 2, 2), ("x2", 0, 1), ("x", 4, 4), ("x", 1, 2), ("x2", 3, 0)])
    assert got == [
        {"p": {("x", 4, 4)}},
        {"p": {("x", 0, 2), ("x", 0, 3), ("x", 1, 2), ("x", 1, 3)}},
        {"p": {("x2", 2, 2)}},
        {"p": {("x2", 0, 1)}},
        {},
    ]
    padded = WindowGeometry(4, 4, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1)  # output (0, 0) taps (-1, -1) .. (0, 0)
    rules = hover.window(padded, "zeros", outputs=("p", "x2"), inputs=("p", "x"), inside=True)
    assert outlines(rules, "p", [("x2", 0, 0)]) == [{"p": {("x", 0, 0)}}]


def test_channel_groups(outlines):
    for c_in, c_out, groups in [(6, 4, 2), (4, 8, 4), (3, 2, 1)]:
        layout = channels.ChannelLayout(c_in, c_out, groups, 3)
        rules = hover.channel_groups(c_in, c_out, groups, chart="ch", panels=("x", "x2", "x3"))
        for m, found in enumerate(outlines(rules, "ch", [("x3", m, 0) for m in range(c_out)])):
            ins = layout.inputs_of(m)
            assert found == {"ch": {("x2", m, c) for c in ins} | {("x", 0, c) for c in ins}}
        bank = [("x2", m, c) for m in range(c_out) for c in range(c_in)]
        for (_, m, c), found in zip(bank, outlines(rules, "ch", bank), strict=True):
            ins = layout.inputs_of(m)
            lit = {("x2", m, k) for k in ins} | {("x", 0, k) for k in ins} | {("x3", m, 0)}
            assert found == ({"ch": lit} if c in ins else {}), (layout, m, c)
        for c, found in enumerate(outlines(rules, "ch", [("x", 0, c) for c in range(c_in)])):
            outs = layout.outputs_of(c)
            assert found == {"ch": {("x2", m, c) for m in outs} | {("x3", m, 0) for m in outs}}


def test_lenet_stages_outline_what_each_cell_reads(outlines):
    """Every cell of every stage, on two networks: the previous stage's cells it reads, as
    gpuops.lenet.reads names them (a convolution: every channel; a pool: its own)."""
    for cfg in (lenet.LeNetConfig(), lenet.LeNetConfig(size=12, c1=2, c2=3, k=3)):
        rules = lenet_view.hover_rules(cfg)
        shapes = cfg.shapes()
        for stage in lenet.CONV_STAGES:
            C, H, W = shapes[stage]
            cells = [(c, r, q) for c in range(C) for r in range(H) for q in range(W)]
            got = outlines(rules, f"lenet_{stage}", [(panel_id(c), r, q) for c, r, q in cells])
            for (c, r, q), found in zip(cells, got, strict=True):
                span = lenet.reads(cfg, stage, c, r, q)
                want = {
                    (panel_id(k), y, x)
                    for k in span.channels
                    for y in range(span.r0, span.r1 + 1)
                    for x in range(span.c0, span.c1 + 1)
                }
                assert found == {f"lenet_{span.stage}": want}, (cfg, stage, c, r, q)


def test_outputs_and_inputs_shown_in_several_figures(outlines):
    """Direct's output image and thread figure, its input image and shared tile: a hover on any of
    them outlines on every figure of the other side."""
    for g in geometries(8, seed=29):
        for mode in ("zeros", "reflect"):
            rules = hover.windows(g, mode, outputs=[("o", "x"), ("t", "x")], inputs=[("i", "x"), ("s", "x")])
            out = (g.H_out - 1, 0)
            rf = maps.receptive_field(g, *out, mode)
            cells = {("x", int(r), int(c)) for r, c in zip(rf.rows.ravel(), rf.cols.ravel(), strict=True)}
            cells |= {
                ("x", int(r), int(c))
                for r, c in zip(rf.source_rows.ravel(), rf.source_cols.ravel(), strict=True)
                if r >= 0
            }
            for chart in ("o", "t"):
                assert outlines(rules, chart, [("x", *out)]) == [{"i": cells, "s": cells}], (g, mode)
            readers = {("x", int(r[0]), int(r[1])) for r in maps.readers_of(g, 0, g.W - 1, mode)}
            for chart in ("i", "s"):
                want = {"o": readers, "t": readers} if readers else {}
                assert outlines(rules, chart, [("x", 0, g.W - 1)]) == [want], (g, mode)


def test_a_padded_image_outlines_the_source_and_its_copies(outlines):
    rng = np.random.default_rng(31)
    for _ in range(10):
        H, W = (int(v) for v in rng.integers(2, 9, 2))
        pads = (*(int(v) for v in rng.integers(0, W, 2)), *(int(v) for v in rng.integers(0, H, 2)))
        rules = hover.padded_copies(H, W, pads, on=("img", "x"))
        rows, cols = reflect_pad.source_map(H, W, pads)
        padded = [("x", oy, ox) for oy in range(rows.shape[0]) for ox in range(rows.shape[1])]
        for (_, oy, ox), found in zip(padded, outlines(rules, "img", padded), strict=True):
            copies = reflect_pad.copies_of(H, W, pads, int(rows[oy, ox]), int(cols[oy, ox]))
            assert found == {"img": {("x", int(a), int(b)) for a, b in copies}}, (H, W, pads, oy, ox)
            assert ("x", oy, ox) in found["img"]  # the hovered cell is one of the copies
