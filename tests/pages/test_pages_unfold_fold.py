"""The Unfold / Fold page through AppTest, and the index maps it draws from.

What a pick highlights is checked against brute-force loops written here (every patch, every tap),
not against gpuops.maps. AppTest cannot click a figure: picks go in through session state and the
URL, and the highlight is read from the figures' own JSON.
"""

from __future__ import annotations

import io
import json
import re

import numpy as np
import pytest
from PIL import Image

import gpuops
from gpuops.maps import unfold_fold as maps
from tests.support.apptest import assert_clean, errors, expected_out, open_page
from tests.support.apptest import typed_array as arr
from tests.support.cases import ODD_GEOMETRIES
from tests.support.helpers import BACKENDS, on
from viz import unfold_fold as viz
from viz.style import HIGHLIGHT, READER, SECOND, SEQUENTIAL

PRESENTATION_MIN, NORMAL_TICK, NORMAL_TITLE = 20, 14, 16


pytestmark = pytest.mark.usefixtures("numpy_backend")


# ---- reading the page --------------------------------------------------------------------------------
def charts(at) -> dict[str, dict]:
    """Every Plotly figure of the run, by its name on the page."""
    out = {}
    for el in at.get("plotly_chart"):
        name = re.search(r"-(?:chart|fig)_(\w+)$", el.proto.id).group(1)
        out[name] = json.loads(el.proto.spec)
    return out


def outlined(fig: dict, colour: str, xref: str = "x") -> dict[tuple[float, float], dict]:
    """{(row, col) centre: shape} of the bright outlines (not their halos) of one colour."""
    found = {}
    for s in fig["layout"].get("shapes", []):
        if s.get("line", {}).get("color") == colour and s.get("xref", "x") == xref:
            found[((s["y0"] + s["y1"]) / 2, (s["x0"] + s["x1"]) / 2)] = s
    return found


def page_text(at) -> str:
    return " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption)


def number(at, label: str) -> int:
    return next(int(n.value) for n in at.number_input if n.label == label)


# ---- independent references: loops over every patch and tap ----------------------------------------
def taps_of(oh, ow, k, s, p, d) -> set[tuple[int, int]]:
    return {(oh * s - p + ki * d, ow * s - p + kj * d) for ki in range(k) for kj in range(k)}


def covering(H, W, k, s, p, d, y, x) -> list[int]:
    Ho, Wo = expected_out(H, k, s, p, d), expected_out(W, k, s, p, d)
    return sorted(
        {oh * Wo + ow for oh in range(Ho) for ow in range(Wo) if (y, x) in taps_of(oh, ow, k, s, p, d)}
    )


def copies(C, H, W, k, s, p, d, y, x) -> set[tuple[int, int]]:
    """(row, column) of every unfold-matrix entry holding pixel (y, x)."""
    Wo = expected_out(W, k, s, p, d)
    found = set()
    for oh in range(expected_out(H, k, s, p, d)):
        for ow in range(Wo):
            for ki in range(k):
                for kj in range(k):
                    if (oh * s - p + ki * d, ow * s - p + kj * d) == (y, x):
                        found |= {((c * k + ki) * k + kj, oh * Wo + ow) for c in range(C)}
    return found


def upload_noise(at, w: int, h: int):
    rgb = (np.random.default_rng(3).random((h, w, 3)) * 255).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, format="PNG")
    at.sidebar.file_uploader[0].set_value(("noise.png", buf.getvalue(), "image/png"))
    at.run()
    return at


# odd geometries: stride > kernel, dilation, padding at the limit (a corner patch all in the padding),
# and a non-square image
GEOMETRIES = {
    "stride-over-kernel": dict(size=(48, 48), k=2, s=5, p=1, d=1, patch=(3, 4), pixel=(16, 21)),
    "dilation": dict(size=(48, 48), k=3, s=2, p=0, d=3, patch=(2, 5), pixel=(20, 13)),
    "padding-at-limit": dict(size=(48, 48), k=3, s=1, p=4, d=1, patch=(0, 0), pixel=(0, 47)),
    "non-square": dict(size=(24, 40), k=4, s=3, p=2, d=2, patch=(2, 7), pixel=(11, 30)),
}


def run_page(geo: dict, pick):
    H, W = geo["size"]
    state = dict(
        cap=48,
        unfold_k=geo["k"],
        unfold_stride=geo["s"],
        unfold_pad=geo["p"],
        unfold_dil=geo["d"],
        unfold_pick=pick,
    )
    if H == W:
        return open_page("unfold", state=state)
    return upload_noise(open_page("unfold", state=dict(state, source="upload")), W, H)


@pytest.mark.parametrize("name", list(GEOMETRIES))
def test_picks_outline_what_independent_loops_find(name):
    """A patch: its taps (dotted on the padding), its column; a pixel: every patch covering it, its
    copies in the matrix, its count. Both against loops over every patch and tap."""
    from ui.state import Cell

    geo = GEOMETRIES[name]
    (H, W), k, s, p, d = geo["size"], geo["k"], geo["s"], geo["p"], geo["d"]
    Wo = expected_out(W, k, s, p, d)
    oh, ow = geo["patch"]
    at = run_page(geo, Cell("patch", oh, ow))
    assert_clean(at)
    assert not errors(at)
    figs = charts(at)
    drawn = outlined(figs["zoom"], HIGHLIGHT)
    assert set(drawn) == {(float(r), float(c)) for r, c in taps_of(oh, ow, k, s, p, d)}
    for (r, c), shape in drawn.items():  # a tap on the padding is drawn as padding (dotted)
        assert (shape["line"]["dash"] == "dot") == (not (0 <= r < H and 0 <= c < W))
    l = oh * Wo + ow
    assert number(at, "Column l (patch)") == l
    column = outlined(figs["matrix"], HIGHLIGHT, "x2")
    assert len(column) == 1
    window = arr(figs["matrix"]["data"][1]["customdata"])[0]
    assert int(window[int(next(iter(column))[1])]) == l  # the outlined column is the true column l
    assert f"patch l = {l:,}" in page_text(at)
    per = "4 neighbouring cells (one 16-byte store)" if Wo % 4 == 0 else "one cell"  # the Launch's caption
    assert (
        f"**unfold**: one thread row per output row of {Wo} cells; each thread writes {per} per step"
        in page_text(at)
    )

    y, x = geo["pixel"]
    at.session_state["unfold_pick"] = Cell("px", y, x)
    at.run()
    assert_clean(at)
    figs = charts(at)
    expected = covering(H, W, k, s, p, d, y, x)
    n = len(expected)
    assert f"covered by {n} patch{'es' if n != 1 else ''}" in page_text(at)
    assert (number(at, "Pixel row"), number(at, "Pixel col")) == (y, x)
    boxes = {
        (b["y0"] + 0.5, b["y1"] - 0.5, b["x0"] + 0.5, b["x1"] - 0.5)
        for b in figs["zoom"]["layout"]["shapes"]
        if b["line"]["color"] == SECOND
    }
    assert boxes == {
        ((l // Wo) * s - p, (l // Wo) * s - p + (k - 1) * d, (l % Wo) * s - p, (l % Wo) * s - p + (k - 1) * d)
        for l in expected
    }
    window = arr(figs["matrix"]["data"][1]["customdata"])[0]
    if expected:
        assert sorted(window.tolist()) == expected  # the window holds exactly the covering columns
        drawn = {(int(r), int(window[int(pos)])) for r, pos in outlined(figs["matrix"], READER, "x2")}
        assert drawn == copies(3, H, W, k, s, p, d, y, x)
    assert int(arr(figs["count"]["data"][0]["z"])[y, x]) == n  # the count map says the same number


def test_unfold_page_counts_patches_independently():
    at = open_page("unfold", state=dict(cap=48, unfold_k=4, unfold_stride=3, unfold_pad=2, unfold_dil=2))
    assert_clean(at)
    n = expected_out(48, 4, 3, 2, 2)
    text = " ".join(md.value for md in at.markdown)
    assert f"{n} x {n} = {n * n} patches" in text
    assert next(m.value for m in at.metric if m.label.startswith("Max |restored")) == "0.00e+00"


def test_unfold_page_extremes_and_invalid():
    # K=9, D=4 spans 33 cells: the page's own animation region grows instead of failing on its crop
    at = open_page("unfold", state=dict(cap=32, unfold_k=9, unfold_stride=6, unfold_pad=4, unfold_dil=4))
    assert_clean(at)
    assert not errors(at)
    assert "The region grew to 33 cells a side" in page_text(at)
    # without padding a 33-cell patch does not fit the 32-pixel image: K stops at 8 and says why
    at.session_state["unfold_pad"] = 0
    at.session_state["unfold_k"] = 9
    at.run()
    assert_clean(at)
    assert not errors(at)
    assert any("spans 33 cells" in i.value for i in at.info)
    kmax = max(k for k in range(1, 10) if 4 * (k - 1) + 1 <= 32)  # the slider cannot ask for more
    assert at.session_state["unfold_k"] == kmax == next(s for s in at.slider if s.label == "Kernel K").max
    for key, value in dict(unfold_k=9, unfold_dil=1, unfold_pad=0, unfold_stride=1, unfold_crop=24).items():
        at.session_state[key] = value
    at.run()
    assert_clean(at)
    dmax = max(d for d in range(1, 5) if d * 8 + 1 <= 32)
    assert next(s for s in at.slider if s.label == "Dilation D").max == dmax
    for key, value in dict(unfold_k=1, unfold_stride=1, unfold_pad=0, unfold_dil=1, unfold_crop=24).items():
        at.session_state[key] = value
    at.run()
    assert_clean(at)
    assert not errors(at)


def test_url_round_trip_of_every_setting_and_the_pick():
    query = dict(
        unfold_k="5",
        unfold_stride="3",
        unfold_pad="2",
        unfold_dil="2",
        unfold_crop="16",
        unfold_pick="px:10,20",
        cap="64",
    )
    at = open_page("unfold", query=query)
    assert_clean(at)
    assert {k: at.query_params[k] for k in query} == query
    assert (number(at, "Pixel row"), number(at, "Pixel col")) == (10, 20)


def test_keyboard_path_and_the_pick_setting():
    at = open_page("unfold", state=dict(cap=48))
    Wo = expected_out(48, 3, 2, 1, 1)
    at.number_input(key="w_unfold_l").set_value(37).run()
    assert at.query_params["unfold_pick"] == f"patch:{37 // Wo},{37 % Wo}"
    at.radio(key="w_unfold_mode").set_value("px").run()  # a patch becomes the pixel at its middle tap
    assert at.query_params["unfold_pick"] == f"px:{(37 // Wo) * 2 - 1 + 1},{(37 % Wo) * 2 - 1 + 1}"
    at.number_input(key="w_unfold_x").set_value(5).run()
    assert (
        at.query_params["unfold_pick"].endswith(",5") and at.session_state["unfold_k"] == 3
    )  # nothing else reset


def _fonts(node, path=""):
    """(path, size) of every font size set in a figure's JSON."""
    if isinstance(node, dict):
        for key, value in node.items():
            if (
                key == "size"
                and path.endswith(("font", "tickfont", "textfont"))
                and isinstance(value, (int, float))
            ):
                yield path, value
            elif isinstance(value, (dict, list)):
                yield from _fonts(value, f"{path}.{key}")
    elif isinstance(node, list):
        for item in node:
            yield from _fonts(item, path)


def test_presentation_mode_text_is_projector_sized():
    at = open_page("unfold", state=dict(cap=48, pres=True))
    assert_clean(at)
    for name, fig in charts(at).items():
        for path, size in _fonts(fig):
            least = 14 if path.endswith("textfont") else PRESENTATION_MIN  # cell labels: 14 px or none
            assert size >= least, (name, path, size)


def test_normal_mode_true_axes_sequential_colours_and_launch_captions():
    from gpuops.unfold_fold import unfold_launch

    at = open_page("unfold", state=dict(cap=64, unfold_k=3, unfold_stride=1, unfold_pad=1, unfold_dil=1))
    assert_clean(at)
    figs = charts(at)
    for name, fig in figs.items():  # normal mode: ticks >= 14 px, titles >= 16 px, labels >= 12 px
        layout = fig["layout"]
        assert layout["title"]["font"]["size"] >= NORMAL_TITLE, name
        for axis in (k for k in layout if k.startswith(("xaxis", "yaxis"))):
            assert layout[axis]["tickfont"]["size"] >= NORMAL_TICK, (name, axis)
        for path, size in _fonts(fig):
            assert size >= 12, (name, path, size)
    L = expected_out(64, 3, 1, 1, 1) ** 2
    matrix = figs["matrix"]
    assert matrix["layout"]["xaxis"]["range"] == [-0.5, L - 0.5]  # the overview spans every true column
    titles = " ".join(a["text"] for a in matrix["layout"]["annotations"])
    assert f"each cell averages 1 x {-(-L // 600)} entries" in titles
    cols = arr(matrix["data"][1]["customdata"])[0]
    ticks = arr(matrix["layout"]["xaxis2"]["tickvals"])
    assert [int(t.replace(",", "")) for t in matrix["layout"]["xaxis2"]["ticktext"]] == [
        int(cols[int(v)]) for v in ticks
    ]
    for trace in matrix["data"]:  # image data is >= 0: a sequential scale from 0
        assert trace["zmin"] == 0 and trace["colorscale"][0][1] == _first_colour(SEQUENTIAL)
    count = figs["count"]["data"][0]  # whole-number counts get whole-number ticks, one per count
    assert count["zmin"] == 0 and count["colorscale"][0][1] == _first_colour(SEQUENTIAL)
    assert arr(count["colorbar"]["tickvals"]).tolist() == list(range(int(arr(count["z"]).max()) + 1))
    g = gpuops.window_geometry(64, 64, 3, 1, 1, 1)
    pick = at.session_state["unfold_pick"]
    l = pick.row * expected_out(64, 3, 1, 1, 1) + pick.col
    t = unfold_launch(g, 1, 3).thread_of(0, 0, l)
    assert (
        f"entry (row 0, column {l:,}) is written by block {t.block[0]}, thread ({t.thread[0]}, {t.thread[1]})"
        in page_text(at)
    )


def _first_colour(name: str) -> str:
    import plotly.colors

    return plotly.colors.get_colorscale(name)[0][1]


def test_over_budget_says_what_to_change_and_compare_is_cached():
    at = open_page("unfold", state=dict(cap=1024, unfold_k=9, unfold_stride=1, unfold_pad=4, unfold_dil=1))
    assert_clean(at)
    assert any("Raise the stride S" in w.value for w in at.warning)
    assert not charts(at)
    at.session_state["cap"] = 32
    at.run()
    assert "fold_runtimes" not in charts(at)  # nothing is timed until asked
    at.button(key=next(b.key for b in at.button if b.label == "Compare unfold and both folds")).click().run()
    bars = charts(at)["fold_runtimes"]["data"][0]
    assert sorted(bars["y"]) == ["fold (gather)", "fold (scatter)", "unfold"]
    at.run()  # cached: shown again, without timing again
    assert "fold_runtimes" in charts(at)
    assert not [b for b in at.button if b.label == "Compare unfold and both folds"]


def test_downloaded_html_is_offline():

    fig = viz.count_map(np.arange(12).reshape(3, 4), "count")
    html = fig.to_html(include_plotlyjs=True, full_html=True)  # as ui.common.figure builds the download
    assert not re.search(r"<script[^>]+src=[\"']https?:", html)


# ---- the index maps the page draws from ---------------------------------------------------------------


@pytest.mark.parametrize("H,W,k,s,p,d", ODD_GEOMETRIES)
def test_column_values_are_unfold_columns(H, W, k, s, p, d, rng):
    x = rng.random((2, H, W)).astype(np.float32)
    g = gpuops.window_geometry(H, W, k, s, p, d)
    cols = gpuops.unfold(x, k, d, p, s)
    pick = rng.choice(g.L, size=min(5, g.L), replace=False)
    np.testing.assert_array_equal(maps.column_values(x, g, pick), cols[:, pick])


@pytest.mark.parametrize("H,W,k,s,p,d", ODD_GEOMETRIES)
def test_region_maps_against_loops(H, W, k, s, p, d):
    g = gpuops.window_geometry(H, W, k, s, p, d)
    Ho, Wo = expected_out(H, k, s, p, d), expected_out(W, k, s, p, d)
    region = maps.region_around(g, maps.patch_box(g, Ho // 2, Wo // 2), 6)
    top, bottom, left, right = region
    assert -p <= top and bottom <= H - 1 + p and -p <= left and right <= W - 1 + p
    assert taps_of(Ho // 2, Wo // 2, k, s, p, d) <= {
        (r, c) for r in range(top, bottom + 1) for c in range(left, right + 1)
    }
    rows, cols, ls = maps.starts_in(g, region)
    expected = {
        (oh * s - p, ow * s - p, oh * Wo + ow)
        for oh in range(Ho)
        for ow in range(Wo)
        if top <= oh * s - p <= bottom and left <= ow * s - p <= right
    }
    assert set(zip(rows.tolist(), cols.tolist(), ls.tolist(), strict=True)) == expected
    window = maps.column_window(g, (Ho // 2) * Wo, 6)
    found = maps.copies_in_window(2, g, window, region)
    for y in range(max(top, 0), min(bottom, H - 1) + 1):
        for x in range(max(left, 0), min(right, W - 1) + 1):
            want = {(r, list(window).index(l)) for r, l in copies(2, H, W, k, s, p, d, y, x) if l in window}
            assert set(found.get((y, x), [])) == want
    for y, x in [(0, 0), (H - 1, W - 1), (H // 2, W // 3)]:
        assert maps.covering_columns(g, y, x) == covering(H, W, k, s, p, d, y, x)
        oh, ow = maps.nearest_patch(g, y, x)  # no patch centre lies nearer
        centre = lambda a, b: ((a * s - p + (k - 1) * d / 2), (b * s - p + (k - 1) * d / 2))  # noqa: E731
        best = (
            min(abs(centre(a, 0)[0] - y) for a in range(Ho)),
            min(abs(centre(0, b)[1] - x) for b in range(Wo)),
        )
        assert (abs(centre(oh, ow)[0] - y), abs(centre(oh, ow)[1] - x)) == best


def test_patch_block_fits_the_region_or_holds_one_patch():
    g = gpuops.window_geometry(32, 32, 9, 6, 4, 4)  # one patch spans 33 cells
    block = maps.patch_block(g, 1, 1, 12, 12)
    assert block[1] - block[0] == 0 and block[3] - block[2] == 0
    top, bottom, left, right = maps.block_region(g, block)
    assert bottom - top + 1 == 33
    g = gpuops.window_geometry(64, 64, 3, 1, 1, 1)
    top, bottom, left, right = maps.block_region(g, maps.patch_block(g, 30, 30, 12, 12))
    assert bottom - top + 1 <= 12 and right - left + 1 <= 12
    assert maps.largest_kernel(32, 0, 4, 9) == 8 and maps.largest_dilation(32, 9, 0, 4) == 3


@pytest.mark.parametrize("xp", BACKENDS, indirect=True)
@pytest.mark.parametrize("shape", [(243, 10007), (9, 500), (1, 1)])
def test_the_matrix_overview_averages_each_block_where_the_matrix_lives(xp, shape, rng):
    mat = rng.standard_normal(shape).astype(np.float32)
    means, fy, fx = viz.block_mean(on(xp, mat)[0], 81, 600)
    assert isinstance(means, np.ndarray) and means.shape[0] <= 81 and means.shape[1] <= 600
    expected = [
        [mat[r : r + fy, c : c + fx].mean() for c in range(0, shape[1], fx)] for r in range(0, shape[0], fy)
    ]
    np.testing.assert_allclose(means, expected, rtol=1e-5, atol=1e-6)
