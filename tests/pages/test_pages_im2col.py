"""The im2col + GEMM page (pages/im2col.py), its figures (viz/im2col.py) and index maps
(gpuops/maps/im2col.py): driven through AppTest, every highlight checked against a brute-force
sliding window written here, independently of the index maps."""

from __future__ import annotations

import base64
import json
import re
from urllib.parse import parse_qsl

import numpy as np
import plotly.graph_objects as go
import pytest

import gpuops
from gpuops.maps import im2col as maps
from tests.support.apptest import AppTest, errors, open_page
from ui.state import Cell
from viz import im2col as viz
from viz.style import HIGHLIGHT, NORMAL, PRESENTATION, READER, SEQUENTIAL

PAGE = "pages/im2col.py"
BOOK_Y = [[14, 20, 15, 24], [12, 24, 17, 26]]  # PMPP ch. 16: the two output maps, row-major


pytestmark = pytest.mark.usefixtures("numpy_backend")


def app(query: dict[str, str] | None = None, state: dict | None = None) -> AppTest:
    return open_page(PAGE, query, state)


def decoded(value):
    """A figure spec with Plotly's typed arrays ({"dtype", "bdata", "shape"}) as nested lists."""
    if isinstance(value, dict) and "bdata" in value and "dtype" in value:
        flat = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = [int(n) for n in str(value.get("shape", len(flat))).split(",")]
        return flat.reshape(shape).tolist()
    if isinstance(value, dict):
        return {k: decoded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decoded(v) for v in value]
    return value


def figures(at: AppTest) -> dict[str, dict]:
    """Every figure of the page by the start of its title, validated in full by Plotly (the page
    builds them from dicts without property-by-property validation)."""
    out = {}
    for chart in at.get("plotly_chart"):
        spec = decoded(json.loads(chart.proto.spec))
        go.Figure(spec)  # raises on any invalid property
        out[spec["layout"]["title"]["text"]] = spec
    return out


def figure(at: AppTest, prefix: str) -> dict:
    found = [spec for title, spec in figures(at).items() if title.startswith(prefix)]
    assert len(found) == 1, (prefix, list(figures(at)))
    return found[0]


def outlines(spec: dict, colour: str = HIGHLIGHT) -> set[tuple[str, float, float, float, float]]:
    """(panel, row, col, rows tall, cols wide) of every outline drawn in `colour` (its halo skipped)."""
    return {
        (s.get("xref", "x"), s["y0"] + 0.5, s["x0"] + 0.5, s["y1"] - s["y0"], s["x1"] - s["x0"])
        for s in spec["layout"].get("shapes", [])
        if s.get("type") == "rect" and s["line"]["color"] == colour
    }


# ---- brute force: slide the window over the zero-padded input, count what it covers ------------------------
def windows(H: int, W: int, K: int, S: int, P: int, D: int) -> list[list[tuple[int, int]]]:
    """Column l of X_unroll = the l-th window position, row-major: its K x K cells (input
    coordinates, padding negative or beyond the side), tap by tap."""
    extent = D * (K - 1) + 1
    out = []
    for top in range(0, H + 2 * P - extent + 1, S):
        for left in range(0, W + 2 * P - extent + 1, S):
            out.append([(top + a * D - P, left + b * D - P) for a in range(K) for b in range(K)])
    return out


def copies(
    C: int, H: int, W: int, K: int, S: int, P: int, D: int, c: int, i: int, j: int
) -> set[tuple[int, int]]:
    """Every X_unroll entry (row r, column l) that holds input cell (c, i, j)."""
    found = set()
    for l, cells in enumerate(windows(H, W, K, S, P, D)):
        r = c * K * K
        for cell in cells:
            if cell == (i, j):
                found.add((r, l))
            r += 1
    return found


def panel(c: int) -> str:
    return "x" if c == 0 else f"x{c + 1}"


GEOMETRIES = {  # C, H, W, K, M, S, P, D
    "stride > kernel": (2, 5, 6, 2, 2, 3, 1, 1),
    "dilation": (1, 6, 5, 2, 2, 1, 1, 2),
    "padding at the limit": (3, 3, 4, 3, 3, 2, 2, 1),
}


def settings(C, H, W, K, M, S, P, D) -> dict:
    return dict(
        im2col_c=C,
        im2col_h=H,
        im2col_w=W,
        im2col_k=K,
        im2col_m=M,
        im2col_stride=S,
        im2col_pad=P,
        im2col_dil=D,
    )


# ---- the old page tests, moved here ------------------------------------------------------------------------
def test_im2col_page_reproduces_pmpp_and_the_expansion_ratio():
    at = app(state=dict(cap=64, im2col_img_k=5))
    assert not errors(at)
    assert any("PMPP's example" in s.value for s in at.success)
    assert np.array_equal(figure(at, "Y = W")["data"][0]["z"], BOOK_Y)  # the book's numbers, in the figure
    assert "= **14**" in " ".join(m.value for m in at.markdown)  # the default pick: Y[0, 0], written out
    ratio = float(next(m.value for m in at.metric if m.label == "Expansion ratio"))
    # 64 x 64 image, K=5, padding 2, stride 1: H_out = W_out = 64, ratio = 25 * 64 * 64 / (64 * 64) = 25
    assert ratio == pytest.approx(25.0)
    unroll = next(m.value for m in at.metric if m.label == "X_unroll (float32)")
    assert unroll == f"{4 * 3 * 25 * 64 * 64 / 2**20:.2f} MiB"


def test_im2col_small_example_at_extremes():
    """The old check (an invalid K showed an error) became: K cannot be asked beyond the padded
    input; it is clamped there and the page computes."""
    for c, n, k, m, s, p in [(1, 2, 1, 1, 1, 0), (3, 6, 4, 3, 3, 2), (2, 2, 4, 1, 1, 0)]:
        at = app(
            state=dict(
                im2col_c=c, im2col_h=n, im2col_w=n, im2col_k=k, im2col_m=m, im2col_stride=s, im2col_pad=p
            )
        )
        assert not errors(at)
        fits = max(kk for kk in range(1, 5) if kk <= n + 2 * p)  # the largest window that fits
        assert at.session_state["im2col_k"] == min(k, fits)
        kk = at.session_state["im2col_k"]
        L = len(windows(n, n, kk, s, p, 1))
        assert figure(at, "X_unroll")["layout"]["title"]["text"].startswith(f"X_unroll ({c * kk * kk} × {L})")


# ---- picks: highlights equal the brute force ---------------------------------------------------------------
@pytest.mark.parametrize("name", list(GEOMETRIES))
def test_column_and_output_picks_outline_what_the_window_covers(name):
    C, H, W, K, M, S, P, D = GEOMETRIES[name]
    cols = windows(H, W, K, S, P, D)
    l = len(cols) // 2
    at = app(state={**settings(C, H, W, K, M, S, P, D), "im2col_pick": Cell("out", M - 1, l)})
    assert not errors(at)
    expected = {(panel(c), r, q) for c in range(C) for r, q in cols[l]}
    got = {(p, r, q) for p, r, q, h, w in outlines(figure(at, "Input maps")) if (h, w) == (1, 1)}
    assert got == expected
    R = C * K * K
    assert outlines(figure(at, "X_unroll")) == {("x", 0, l, R, 1)}
    assert outlines(figure(at, "Filter matrix W")) == {("x", M - 1, 0, 1, R)}
    assert outlines(figure(at, "Y = W")) == {("x", M - 1, l, 1, 1)}
    text = " ".join(m.value for m in at.markdown)
    y = figure(at, "Y = W")["data"][0]["z"][M - 1][l]
    assert f"Y[{M - 1}, {l}] = W row {M - 1} · column {l} = **{y:g}**" in text

    at.session_state["im2col_pick"] = Cell("col", 0, l)
    at.run()
    assert outlines(figure(at, "Y = W")) == {("x", 0, l, M, 1)}
    assert outlines(figure(at, "Filter matrix W")) == set()
    assert all(f"Y[{m}, {l}]" in " ".join(md.value for md in at.markdown) for m in range(M))


@pytest.mark.parametrize("name", list(GEOMETRIES))
def test_input_pick_outlines_every_copy_and_counts_them(name):
    C, H, W, K, M, S, P, D = GEOMETRIES[name]
    c, i, j = C - 1, H - 1, 1
    at = app(state={**settings(C, H, W, K, M, S, P, D), "im2col_pick": Cell("in", i, j), "im2col_pc": c})
    assert not errors(at)
    expected = copies(C, H, W, K, S, P, D, c, i, j)
    got = {(r, q) for _, r, q, h, w in outlines(figure(at, "X_unroll"))}
    assert got == expected
    assert f"is copied {len(expected)} times" in " ".join(m.value for m in at.markdown)
    fed = set()
    for _, _, first, _, count in outlines(figure(at, "Y = W"), READER):  # runs of consecutive columns
        fed |= set(range(int(first), int(first + count)))
    assert fed == {l for _, l in expected}  # the outputs it feeds, red in Y
    assert (panel(c), i, j, 1, 1) in outlines(figure(at, "Input maps"))


def test_number_inputs_follow_the_pick_and_ranges_follow_the_geometry():
    at = app(state={**settings(2, 2, 3, 2, 2, 1, 0, 1), "im2col_pick": Cell("in", 1, 2), "im2col_pc": 1})
    inputs = {n.label: n for n in at.number_input}
    assert (inputs["channel c"].value, inputs["row i"].value, inputs["col j"].value) == (1, 1, 2)
    assert (inputs["channel c"].max, inputs["row i"].max, inputs["col j"].max) == (1, 1, 2)
    assert inputs["Kernel K"].max == 2  # H = 2, no padding: a larger window does not fit
    assert inputs["Dilation D"].max == 1  # K = 2 spans D + 1 <= 2 cells
    # switching the kind keeps a related cell: a column that holds the picked input cell
    at.radio(key="w_im2col_kind").set_value("col").run()
    p = at.session_state["im2col_pick"]
    assert p.space == "col" and any(q == p.col for _, q in copies(2, 2, 3, 2, 1, 0, 1, 1, 1, 2))
    at.number_input(key="w_im2col_pl").set_value(0).run()
    assert at.session_state["im2col_pick"] == Cell("col", 0, 0)
    at.number_input(key="w_im2col_k").set_value(
        1
    ).run()  # a smaller kernel: the pick stays inside the geometry
    assert at.session_state["im2col_pick"].col < len(windows(2, 3, 1, 1, 0, 1))
    assert {n.label: n for n in at.number_input}["Dilation D"].max == 3  # K = 1: any dilation


def test_every_setting_and_the_pick_come_from_the_url():
    link = (
        "im2col_c=2&im2col_h=5&im2col_w=4&im2col_k=3&im2col_m=1&im2col_stride=2&im2col_pad=1&im2col_dil=1&im2col_pick=in:3,2&im2col_pc=1"
        "&im2col_img_k=5&cap=32"
    )
    query = dict(parse_qsl(link))  # a shared link's query, as the page receives it
    at = app(query=query)
    assert not errors(at)
    for key, raw in query.items():
        if key not in ("im2col_pick", "cap"):
            assert at.session_state[key] == int(raw), key
    assert at.session_state["im2col_pick"] == Cell("in", 3, 2)
    assert (viz.input_panel(1), 3, 2, 1, 1) in outlines(figure(at, "Input maps"))
    bad = app(query=dict(im2col_pick="nowhere:1,2", im2col_k="9"))
    notices = " ".join(w.value for w in bad.warning)
    assert "not a cell" in notices and "out of range" in notices
    assert bad.session_state["im2col_pick"] == Cell("out", 0, 0)


# ---- figures: sizes, colours, true axes --------------------------------------------------------------------
def font_sizes(spec: dict) -> dict[str, list[float]]:
    lay = spec["layout"]
    axes = [v for k, v in lay.items() if k.startswith(("xaxis", "yaxis"))]
    sizes = {
        "title": [lay["title"]["font"]["size"]],
        "text": [lay["font"]["size"]]
        + [a["font"]["size"] for a in lay.get("annotations", [])]
        + [a["title"]["font"]["size"] for a in axes if a.get("title", {}).get("text")],
        "tick": [a["tickfont"]["size"] for a in axes],
        "label": [t["textfont"]["size"] for t in spec["data"] if t.get("texttemplate")],
    }
    for s in lay.get("sliders", []):
        sizes["text"] += [s["currentvalue"]["font"]["size"]]
        sizes["tick"] += [s["font"]["size"]]
    for m in lay.get("updatemenus", []):
        sizes["text"] += [m["font"]["size"]]
    return sizes


def test_presentation_mode_text_is_20_px_and_normal_mode_is_readable():
    big = {**settings(3, 6, 6, 4, 3, 1, 2, 1), "im2col_pick": Cell("in", 2, 2)}
    for state in ({}, big):
        pres = figures(app(state={**state, "pres": True}))
        assert len(pres) == 6
        for title, spec in pres.items():
            sizes = font_sizes(spec)
            assert min(sizes["title"] + sizes["text"] + sizes["tick"]) >= 20, title
            assert all(s >= 14 for s in sizes["label"]), title  # cell labels >= 14 px or hidden
    for title, spec in figures(app(state=big)).items():
        sizes = font_sizes(spec)
        assert min(sizes["tick"]) >= 14 and min(sizes["title"]) >= 16, title
        assert all(s >= 12 for s in sizes["label"]), title


def test_weights_diverge_at_zero_sums_of_positive_weights_run_from_zero_identity_follows_the_cell():
    """The colour policy: weights are signed data (diverging at 0 even when all are positive, as in
    PMPP's example); Y of non-negative weights cannot be negative: sequential from 0."""
    at = app()
    viridis = go.Figure(go.Heatmap(colorscale=SEQUENTIAL)).data[0].colorscale
    y = figure(at, "Y = W")["data"][0]
    assert np.min(y["z"]) >= 0 and y["zmin"] == 0 and "zmid" not in y
    assert [c for _, c in y["colorscale"]] == [c for _, c in viridis]
    w = figure(at, "Filter matrix W")["data"][0]
    assert np.min(w["z"]) >= 0 and w["zmid"] == 0 and w["zmin"] == -w["zmax"]
    # identity: every X_unroll entry has the colour id of the input cell it copies (the brute force)
    xu = figure(at, "X_unroll")["data"][0]
    inputs = figure(at, "Input maps")["data"]
    for l, cells in enumerate(windows(3, 3, 2, 1, 0, 1)):
        for c in range(3):
            for t, (i, j) in enumerate(cells):
                assert xu["z"][c * 4 + t][l] == inputs[c]["z"][i][j]
    # signed weights: a diverging scale centred at 0
    w = -np.array(np.arange(24), np.float32).reshape(2, 3, 2, 2)
    x = np.ones((3, 3, 3), np.float32)
    at = app(state={"im2col_cells": ((3, 3, 3, 2, 2), x, w)})
    trace = figure(at, "Filter matrix W")["data"][0]
    assert trace["zmid"] == 0 and trace["zmin"] == -trace["zmax"]


def test_matrix_axes_carry_true_indices_and_their_labels_never_overlap():
    for pres in (True,):  # the tallest text: row labels are thinned, and the axis says so
        at = app(state={**settings(3, 6, 6, 4, 3, 1, 2, 1), "pres": pres})
        spec = figure(at, "X_unroll")
        trace, lay = spec["data"][0], spec["layout"]
        R, L = np.shape(trace["z"])
        assert (R, L) == (48, len(windows(6, 6, 4, 1, 2, 1))) == (48, 49)
        assert list(trace["y"]) == list(range(48)) and list(trace["x"]) == list(range(49))
        labels = [f"({c},{a},{b})" for c in range(3) for a in range(4) for b in range(4)]
        ticks = lay["yaxis"]["tickvals"]
        assert lay["yaxis"]["ticktext"] == [labels[r] for r in ticks]  # the true (c, ki, kj) of each row
        plot_px = lay["height"] - lay["margin"]["t"] - lay["margin"]["b"]
        spacing = plot_px / R * (ticks[1] - ticks[0])
        assert spacing >= lay["yaxis"]["tickfont"]["size"], "row labels overlap"
        if ticks[1] - ticks[0] > 1:
            assert "labelled" in lay["yaxis"]["title"]["text"]
    y = figure(at, "Y = W")
    assert y["layout"]["xaxis"]["title"]["text"].startswith("column l = output pixel (oh, ow)")
    assert y["data"][0]["customdata"][0][8] == f"({8 // 7},{8 % 7})"  # column 8 of a 7-wide output


def test_thread_caption_comes_from_the_launch_that_builds_x_unroll():
    at = app(state=dict(im2col_pick=Cell("col", 0, 3)))
    launch = gpuops.plan_conv2d((1, 3, 3, 3), (2, 3, 2, 2), None, 1, 0, 1, algorithm="im2col").launch
    caption = next(c.value for c in at.caption if c.value.startswith("On the GPU"))
    assert launch.describe() in caption and "one cell per step" in caption
    t = launch.thread_of(0, 1, 3)
    assert f"r = 1: block {t.block[0]}, thread ({t.thread[0]}, {t.thread[1]})" in caption
    source = [e for e in at.expander if "CUDA source" in e.label]
    assert source and launch.kernel in source[0].label


def test_downloaded_figure_html_needs_no_network():
    g = gpuops.window_geometry(3, 3, 2)
    ids, r0, c0 = maps.padded_ids(1, g)
    html = viz.input_maps_figure(np.ones((1, 3, 3)), (ids, r0, c0)).to_html(include_plotlyjs=True)
    assert not re.search(r"<script[^>]+src=[\"']https?://", html)


# ---- how big X_unroll gets: budget and Compare -------------------------------------------------------------
def test_runtime_split_only_on_compare_and_refused_over_the_budget():
    at = app(state=dict(cap=1024, im2col_img_k=7))
    warning = " ".join(w.value for w in at.warning)
    assert "not computed" in warning and "Lower the working size in the sidebar to" in warning
    # nothing is offered that would allocate gigabytes
    assert not [b for b in at.button if b.label.startswith("Compare")]

    at = app(state=dict(cap=32, im2col_img_k=3))
    assert len(figures(at)) == 6  # no timing on a plain rerun
    [compare] = [b for b in at.button if b.label.startswith("Compare")]
    compare.click().run()
    split = figure(at, "im2col's steps")
    assert set(split["data"][0]["y"]) == {
        "unroll kernel (unfold)",
        "GEMM (cuBLAS / NumPy matmul)",
        "im2col total",
        "direct conv",
    }
    at.run()  # cached: shown again without the button
    assert figure(at, "im2col's steps") and not [b for b in at.button if b.label.startswith("Compare")]


# ---- index maps -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(GEOMETRIES))
def test_index_maps_equal_the_sliding_window(name):
    C, H, W, K, _, S, P, D = GEOMETRIES[name]
    g = gpuops.window_geometry(H, W, K, S, P, D)
    cols = windows(H, W, K, S, P, D)
    assert len(cols) == g.L
    counts = np.zeros((C, H, W), int)
    for l, cells in enumerate(cols):
        channel, rows, qs, inside = maps.column_taps(C, g, l)
        assert list(zip(channel, rows, qs, strict=True)) == [(c, r, q) for c in range(C) for r, q in cells]
        assert list(inside) == [0 <= r < H and 0 <= q < W for _ in range(C) for r, q in cells]
        for r, q in cells:
            if 0 <= r < H and 0 <= q < W:
                counts[:, r, q] += 1
    assert np.array_equal(maps.copy_counts(C, g), counts)
    ids, r0, c0 = maps.padded_ids(C, g)
    assert (r0, c0) == (-P, -P) and ids[0, P, P] == 0 and (ids[:, :P] == -1).all()
    assert maps.max_kernel(H, W, P, D) == max(k for k in range(1, 20) if D * (k - 1) + 1 <= min(H, W) + 2 * P)
    if K > 1:
        assert maps.max_dilation(H, W, P, K) == max(
            d for d in range(1, 20) if d * (K - 1) + 1 <= min(H, W) + 2 * P
        )


def test_styles_of_both_modes_build_every_figure_without_labels_smaller_than_allowed():
    g = gpuops.window_geometry(6, 6, 1, 1, 2)  # 100 columns: labels hidden, ticks thinned
    x = np.arange(108, dtype=np.float32).reshape(3, 6, 6)
    xu = gpuops.unfold(x, 1, 1, 2, 1)
    for style in (NORMAL, PRESENTATION):
        ch, rr, cc = maps.source_cells(3, g)
        unroll = viz.Unroll(
            maps.unfold_source_map(3, g),
            (ch, rr, cc),
            tuple(maps.row_labels(3, g)),
            maps.positions(g),
            108,
            1,
        )
        fig = viz.x_unroll_figure(xu, unroll, style)
        go.Figure(fig.to_dict())
        assert fig.data[0].texttemplate in ("", None) or fig.data[0].textfont.size >= style.label
        assert "labelled" in fig.layout.xaxis.title.text  # thinned, and it says so


def test_a_kernel_shrunk_to_fit_says_so():
    """K = 4 asked of a 3 x 3 input without padding: K becomes 3, and a notice says why."""
    at = app(state=settings(1, 3, 3, 4, 1, 1, 0, 1))
    assert at.session_state["im2col_k"] == 3
    notices = " ".join(i.value for i in at.info)
    assert "Kernel K 4 -> 3" in notices and "3 x 3 with padding 0" in notices
    at.run()  # the notice belongs to the run that shrank K
    assert "Kernel K 4 -> 3" not in " ".join(i.value for i in at.info)
