"""The Direct convolution page through streamlit.testing.v1.AppTest (CPU backend), and the index maps
behind its pictures (gpuops.maps.conv2d).

Expected cells come from brute-force loops written here (every output, every tap, np.pad for the
reflected coordinates), never from the index-map code the page uses. AppTest cannot click a figure:
picks are set through session_state or the URL, as a click would leave them.
"""

from __future__ import annotations

import json
import re
from collections import Counter

import numpy as np
import pytest

import gpuops
from gpuops.launch import kernel_span
from gpuops.maps import conv2d as maps
from tests.support.apptest import AppTest, errors, expected_out, latex_results, open_page, rerun, typed_array
from ui import pick
from ui.state import Cell
from viz import memo

PAGE = "pages/direct.py"
ALGORITHMS = gpuops.offered_algorithms()  # what the page offers on this machine
FIXED = ("sharpen", "Laplacian edge", "Sobel x", "Sobel y", "emboss")


pytestmark = pytest.mark.usefixtures("numpy_backend")


def array(value) -> np.ndarray:
    return typed_array(value, float)


def app(query: dict[str, str] | None = None, state: dict | None = None) -> AppTest:
    return open_page(PAGE, query, state)


def warnings(at: AppTest) -> str:
    return " ".join(w.value for w in at.main.warning)


def captions(at: AppTest) -> str:
    return " ".join(c.value for c in at.caption)


def figures(at: AppTest) -> dict[str, dict]:
    """Every Plotly figure of the run by its name (chart_<name> for pickable ones, fig_<name>)."""
    out = {}
    for c in at.get("plotly_chart"):
        key = c.proto.id.split("-", 2)[-1]
        out[key.removeprefix("chart_").removeprefix("fig_")] = json.loads(c.proto.spec)
    return out


# ---- independent references -------------------------------------------------------------------------
def taps_of(oh, ow, k, s, p, d):
    return [(oh * s - p + ki * d, ow * s - p + kj * d) for ki in range(k) for kj in range(k)]


def source(i: int, n: int, p: int, mode: str) -> int:
    """The real coordinate a padded coordinate i reads: np.pad's reflect, or -1 (a zero)."""
    if mode == "reflect":
        return int(np.pad(np.arange(n), p, mode="reflect")[i + p])
    return i if 0 <= i < n else -1


def readers_brute(ih, iw, H, W, k, s, p, d, mode):
    H_out, W_out = expected_out(H, k, s, p, d), expected_out(W, k, s, p, d)
    found = set()
    for oh in range(H_out):
        for ow in range(W_out):
            for r, c in taps_of(oh, ow, k, s, p, d):
                if (source(r, H, p, mode), source(c, W, p, mode)) == (ih, iw):
                    found.add((oh, ow))
    return found


def edges_drawn(fig: dict, name: str) -> Counter:
    """Unit edges of the path shapes named `name` (the bright line, not its halo)."""
    paths = [
        s["path"]
        for s in fig["layout"].get("shapes", [])
        if s.get("name") == name and s["line"]["color"] != "#111111"
    ]
    found = Counter()
    for path in paths:
        for x0, y0, x1, y1 in re.findall(r"M([-\d.]+),([-\d.]+)L([-\d.]+),([-\d.]+)", path):
            found[tuple(sorted([(float(x0), float(y0)), (float(x1), float(y1))]))] += 1
    return found


def outline(cells, union: bool) -> Counter:
    """Edges of cells: all four per cell, or (union) those belonging to exactly one cell."""
    count = Counter()
    for r, c in cells:
        for a, b in [
            ((c - 0.5, r - 0.5), (c + 0.5, r - 0.5)),
            ((c - 0.5, r + 0.5), (c + 0.5, r + 0.5)),
            ((c - 0.5, r - 0.5), (c - 0.5, r + 0.5)),
            ((c + 0.5, r - 0.5), (c + 0.5, r + 0.5)),
        ]:
            count[tuple(sorted([a, b]))] += 1
    return Counter({e: 1 for e, n in count.items() if n == 1}) if union else count


def cells(fig: dict, key: str) -> set[tuple[int, int]]:
    return {tuple(c) for c in fig["layout"].get("meta", {}).get(key, [])}


# ---- moved from tests/pages/test_pages.py (checks kept) ----------------------------------------------------
def test_direct_presets_and_sliders_at_extremes():
    """Every preset at three geometries (smallest, largest, odd): the output size the page shows is
    the independent count of window positions; reflect at the largest works on 64 px."""
    at = app(state=dict(cap=64))
    keys = ("direct_k", "direct_stride", "direct_pad", "direct_dil", "direct_mode", "direct_mix")
    for geometry in [
        (1, 1, 0, 1, "zeros", False),
        (15, 8, 15, 5, "reflect", True),
        (4, 3, 2, 2, "zeros", False),
    ]:
        k, stride, pad, dil, _, _ = geometry
        for preset in ["identity", "box blur", "Gaussian", *FIXED]:
            rerun(at, direct_preset=preset, **dict(zip(keys, geometry, strict=True)))
            kk = 3 if preset in FIXED else k
            h = expected_out(64, kk, stride, pad, dil)
            assert not errors(at), (preset, k, errors(at))
            assert latex_results(at)[:2] == [str(h), str(h)], (preset, k)


def test_output_shape_formula_shows_independent_values():
    at = app(state=dict(cap=64, direct_k=5, direct_stride=2, direct_pad=1, direct_dil=2))
    h = expected_out(64, 5, 2, 1, 2)  # (64 + 2 - 9) // 2 + 1 = 29
    assert h == 29
    assert latex_results(at)[:2] == [str(h), str(h)]
    assert f"Output: {h} x {h}" in at.expander[0].label  # the one-line form above the images
    assert "Sum of products" in [m.label for m in at.metric]


def test_sum_of_products_equals_the_kernel_output():
    at = app(state=dict(cap=32, direct_preset="Sobel x", direct_pick=Cell("out", 5, 7)))
    total = float(at.metric[0].value)
    wrote = float(re.search(r"wrote (-?[\d.]+)", captions(at)).group(1))
    assert abs(total - wrote) < 1e-4
    # and both equal an independent sum: the Sobel x weights times the 3 x 3 window around (5, 7)
    x = at.session_state["image"].planes[0]
    w = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], dtype=np.float64)
    assert abs(total - float((x[4:7, 6:9] * w).sum())) < 1e-4
    # the table lists the 9 products (channel 0: the page shows one channel unless mixed)
    [table] = [d.value for d in at.dataframe if "product" in d.value.columns]
    assert len(table) == 9 and set(table["channel"]) == {0}
    assert abs(float(table["product"].sum()) - total) < 1e-4
    assert np.allclose(table["product"], table["value"] * table["weight"], atol=1e-6)


def test_invalid_geometry_is_fitted_with_the_reason_and_the_page_lives_on():
    """A link asking for a window larger than the image: the dilation is lowered, saying why in
    gpuops' words; the sliders cannot go back over the limit (their max follows the geometry)."""
    at = app(state=dict(cap=32, direct_k=15, direct_dil=5, direct_pad=0))
    assert "kernel height 15 with dilation 5 spans 71 cells" in warnings(at)
    assert not errors(at)
    assert at.session_state["direct_dil"] == 2  # 2 * 14 + 1 = 29 <= 32 < 3 * 14 + 1
    assert at.slider(key="w_direct_dil").max == 2
    assert latex_results(at)[:2] == [str(expected_out(32, 15, 1, 0, 2))] * 2
    rerun(at, cap=128)  # the sidebar still works; now dilation 5 fits again
    assert at.slider(key="w_direct_dil").max == 5 and not errors(at)


def test_reflect_padding_at_the_image_side_is_refused_with_a_message():
    at = app(state=dict(cap=32, direct_mode="reflect", direct_pad=15, direct_k=3))
    assert not errors(at)  # 15 < 32 is fine
    assert at.slider(key="w_direct_pad").max == 15
    at = app(
        state=dict(
            cap=32,
            grey=True,
            direct_mode="reflect",
            direct_pad=15,
            direct_k=1,
            source="sample",
            sample="checkerboard",
        )
    )
    assert not errors(at)


def test_reflect_padding_slider_stops_below_the_side(monkeypatch):
    """On a 6 x 9 image reflect padding may be at most 5 (PyTorch's rule): the slider's max."""
    small_image(monkeypatch, 6, 9)
    at = app(state=dict(direct_mode="reflect", direct_pad=15, direct_k=3))
    assert at.slider(key="w_direct_pad").max == 5 and at.session_state["direct_pad"] == 5
    assert not errors(at)


def test_custom_kernel_with_an_empty_cell_is_rejected():
    cells_ = ((0.0, 1.0, 0.0), (1.0, float("nan"), 1.0), (0.0, 1.0, 0.0))
    at = app(state=dict(direct_preset="custom", direct_k=3, direct_kernel=cells_))
    assert any("custom kernel cell (row 1, column 1) is empty" in e for e in errors(at))


def test_hostile_query_parameters_are_ignored_or_clamped_with_a_notice():
    at = app(
        query={
            "direct_k": "<script>alert(1)</script>",
            "direct_stride": "-4",
            "direct_pad": "9999999",
            "direct_mode": "circular",
            "direct_preset": "x" * 500,
            "cap": "abc",
            "direct_pick": "out:1e9,2",
            "direct_kernel": "1,2_import os",
        }
    )
    notices = warnings(at)
    assert "not a whole number" in notices and "out of range" in notices and "too long" in notices
    assert "not a cell" in notices and "not a kernel" in notices
    assert "<script>" not in notices  # the value is quoted, never rendered as HTML
    assert at.session_state["direct_stride"] == 1 and at.session_state["direct_pad"] == 15


def test_settings_travel_in_the_url():
    at = app(query={"direct_k": "5", "direct_stride": "2", "direct_mode": "reflect"})
    assert at.session_state["direct_k"] == 5 and at.session_state["direct_mode"] == "reflect"
    assert at.query_params["direct_k"] in (["5"], "5")


def test_direct_page_runs_every_algorithm_and_names_the_one_that_ran():
    """Every algorithm (the list from gpuops) runs; the caption names the one that ran (auto on
    the CPU is direct), and the thread caption names the pixels per thread of its Launch, counted
    here by asking launch.thread_of about every output."""
    at = app(state=dict(cap=48))
    for algo in ("auto", *ALGORITHMS):
        rerun(at, direct_algo=algo, direct_pick=Cell("out", 20, 17))
        ran = "direct" if algo == "auto" else algo
        assert any(f"**{ran}**" in c.value for c in at.caption), algo
        launch = gpuops.plan_conv2d((1, 3, 48, 48), (3, 1, 3, 3), None, 1, 1, 1, 3, "zeros", ran).launch
        text = " ".join(m.value for m in at.markdown)
        assert launch.describe() in text, algo
        if ran == "im2col":
            continue  # its unfold copies X_unroll; the caption says so
        ref = launch.thread_of(0, 0, 20, 17)
        mine = [(r, c) for r in range(48) for c in range(48) if launch.thread_of(0, 0, r, c) == ref]
        n = len(mine)
        assert f"computes {n} output pixel{'s' if n != 1 else ''}" in text, (algo, n)
        fig = figures(at)["direct_threads"]
        assert cells(fig, "thread") == set(mine)


# ---- picks: the highlighted cells equal a brute-force calculation ------------------------------------------
def small_image(monkeypatch, h: int, w: int) -> np.ndarray:
    """Replace the sample image with an h x w one (AppTest cannot upload): a ramp with detail."""
    import ui.sidebar

    y, x = np.mgrid[0:h, 0:w]
    pixels = np.stack([(x * 37 + y * 11) % 256, (x * y * 7) % 256, (y * 53) % 256], -1).astype(np.uint8)
    monkeypatch.setattr(ui.sidebar, "_sample_pixels", lambda filename, cap: (pixels, ()))
    return pixels


GEOMETRIES = [  # (H, W, K, S, P, D, mode): stride > kernel, dilation, padding at the limit, non-square
    (24, 17, 2, 3, 1, 1, "zeros"),
    (20, 20, 3, 1, 2, 3, "zeros"),
    (9, 13, 3, 2, 8, 1, "reflect"),
    (16, 10, 4, 2, 15, 2, "zeros"),
]


@pytest.mark.parametrize("H,W,K,S,P,D,mode", GEOMETRIES)
def test_highlighted_cells_equal_a_brute_force_calculation(monkeypatch, H, W, K, S, P, D, mode):
    small_image(monkeypatch, H, W)
    H_out = expected_out(H, K, S, P, D)
    oh, ow = H_out - 1, 0  # a corner: padding taps (and mirrored ones in reflect mode)
    at = app(
        state=dict(
            direct_preset="box blur",
            direct_k=K,
            direct_stride=S,
            direct_pad=P,
            direct_dil=D,
            direct_mode=mode,
            direct_pick=Cell("out", oh, ow),
        )
    )
    assert (at.session_state["direct_pad"], at.session_state["direct_dil"]) == (P, D), warnings(at)
    assert not errors(at)
    figs = figures(at)
    taps = taps_of(oh, ow, K, S, P, D)
    inside = {t for t in taps if 0 <= t[0] < H and 0 <= t[1] < W}
    padding = set(taps) - inside
    assert cells(figs["conv_input"], "taps") == inside
    assert cells(figs["conv_input"], "padding_taps") == padding
    assert edges_drawn(figs["conv_input"], "taps") == outline(inside, union=True)
    assert edges_drawn(figs["direct_zoom"], "taps") == outline(inside, union=False)
    assert cells(figs["conv_output"], "pick") == {(oh, ow)}
    assert edges_drawn(figs["conv_output"], "pick") == outline({(oh, ow)}, union=True)
    if mode == "reflect":  # a mirrored tap shows the real cell it reads
        mirrored = {(source(r, H, P, mode), source(c, W, P, mode)) for r, c in padding}
        assert cells(figs["conv_input"], "mirror_sources") == mirrored
    # the reverse direction: an input cell -> every output that reads it
    ih, iw = H // 2, 1
    rerun(at, direct_pick=Cell("in", ih, iw))
    figs = figures(at)
    expected = readers_brute(ih, iw, H, W, K, S, P, D, mode)
    assert cells(figs["conv_output"], "readers") == expected
    assert edges_drawn(figs["conv_output"], "readers") == outline(expected, union=True)
    assert cells(figs["conv_input"], "pick") == {(ih, iw)}
    count = len(expected)
    assert f"read by **{count} output pixel" in " ".join(m.value for m in at.markdown) or count == 0


def test_the_default_pick_is_where_the_image_has_detail():
    at = app()
    g = gpuops.window_geometry(256, 256, 3, 1, 1, 1)
    fig = figures(at)["conv_output"]
    ((oh, ow),) = cells(fig, "pick")
    assert (oh, ow) != (0, 0)
    plane = at.session_state["image"].planes.mean(axis=0)
    window = plane[max(0, oh - 4) : oh + 5, max(0, ow - 4) : ow + 5]
    assert window.max() - window.min() > 0.3, "the default pick sits where the image changes"
    assert 0 <= oh < g.H_out and 0 <= ow < g.W_out


def test_keyboard_inputs_follow_the_pick_and_set_it():
    at = app(state=dict(cap=64, direct_pick=Cell("out", 10, 12)))
    assert at.number_input(key="w_direct_pick_row").value == 10
    assert at.number_input(key="w_direct_pick_col").value == 12
    at.number_input(key="w_direct_pick_col").set_value(30).run()
    assert at.session_state["direct_pick"] == Cell("out", 10, 30)
    assert cells(figures(at)["conv_output"], "pick") == {(10, 30)}
    assert at.number_input(key="w_direct_pick_col").max == 63  # ranges follow the output


# ---- links, looks, budget ----------------------------------------------------------------------------------
def test_url_round_trip_of_every_setting_the_pick_and_the_custom_kernel():
    query = {
        "direct_preset": "custom",
        "direct_k": "3",
        "direct_stride": "2",
        "direct_pad": "2",
        "direct_mode": "reflect",
        "direct_dil": "2",
        "direct_mix": "1",
        "direct_algo": "tiled",
        "direct_pick": "in:9,4",
        "direct_ch": "0",
        "direct_kernel": "0,-1,0_-1,4.5,-1_0,-1,0",
        "cap": "64",
    }
    at = app(query=query)
    assert not errors(at) and not warnings(at)
    state = at.session_state
    assert (
        state["direct_k"],
        state["direct_stride"],
        state["direct_pad"],
        state["direct_mode"],
        state["direct_dil"],
    ) == (
        3,
        2,
        2,
        "reflect",
        2,
    )
    assert (
        state["direct_mix"] is True
        and state["direct_algo"] == "tiled"
        and state["direct_pick"] == Cell("in", 9, 4)
    )
    weights = array(figures(at)["direct_kernel"]["data"][0]["z"])
    assert np.allclose(weights, [[0, -1, 0], [-1, 4.5, -1], [0, -1, 0]])
    for key, value in query.items():  # app.py writes the URL back: the same link
        assert at.query_params[key] in ([value], value), (key, at.query_params[key])


def test_a_link_that_needs_an_upload_says_so():
    at = app(query={"source": "upload"})
    assert any("uploaded image" in i.value for i in at.info)


@pytest.mark.parametrize("pres", [False, True])
def test_font_sizes_colour_scales_and_true_axes(pres):
    at = app(state=dict(cap=64, pres=pres, direct_preset="Sobel x", direct_pick=Cell("out", 3, 40)))
    figs = figures(at)
    assert {
        "conv_input",
        "conv_output",
        "direct_zoom",
        "direct_kernel",
        "direct_window",
        "direct_threads",
    } <= set(figs)
    title_min, tick_min = (20, 20) if pres else (16, 14)
    for name, fig in figs.items():
        layout = fig["layout"]
        assert layout["title"]["font"]["size"] >= title_min, name
        for axis in [k for k in layout if k.startswith(("xaxis", "yaxis"))]:
            assert layout[axis]["tickfont"]["size"] >= tick_min, (name, axis)
            assert layout[axis]["title"]["font"]["size"] >= (20 if pres else 14), (name, axis)
        assert layout["modebar"]["orientation"] == "v", name
    # colours: input values on the fixed [0, 1] image scale; signed Sobel weights diverging at 0
    zoom = figs["direct_zoom"]["data"][0]
    assert zoom["zmin"] == 0 and zoom["zmax"] == 1 and "zmid" not in zoom
    kernel = figs["direct_kernel"]["data"][0]
    assert kernel.get("zmid") == 0 and kernel["zmin"] == -kernel["zmax"]
    # true axes: the input shows its padding band, the close-up the true rows and columns around (3, 40)
    assert figs["conv_input"]["layout"]["xaxis"]["range"] == [-1.5, 64.5]
    x0, x1 = figs["direct_zoom"]["layout"]["xaxis"]["range"]
    y1, y0 = figs["direct_zoom"]["layout"]["yaxis"]["range"]
    assert x0 < 39 and x1 > 41 and y0 < 2 and y1 > 4 and y0 >= -1.5  # padding rows at most


def test_box_blur_weights_stay_diverging_at_zero():
    """Weights are signed data: a filter whose weights happen to be all positive keeps the
    diverging scale centred at 0 (a preset switch never changes the palette's meaning)."""
    at = app(state=dict(cap=32, direct_preset="box blur", direct_k=5))
    kernel = figures(at)["direct_kernel"]["data"][0]
    assert kernel["zmid"] == 0 and kernel["zmin"] == -kernel["zmax"] == pytest.approx(-1 / 25)


def test_the_animation_crop_changes_for_a_large_kernel_and_downloads_work_offline():
    """K = 15 with dilation 5 on 128 px: the animation shows fewer outputs over a larger input region
    (never an error about the page's crop); its HTML carries Plotly and its frames."""
    at = app(
        state=dict(
            cap=128, direct_k=15, direct_dil=5, direct_stride=4, direct_pad=15, direct_pick=Cell("out", 5, 5)
        )
    )
    assert not errors(at)
    fig = at.session_state["_dc_figures"]["direct_window"]
    frames = fig.to_dict()["frames"]
    assert 1 <= len(frames) <= 32 * 32
    html = fig.to_html(include_plotlyjs=True, full_html=True)
    assert not re.search(r"<script[^>]+src=[\"']https?:", html)
    assert '"frames"' in html or "frames" in html
    sums = [f["layout"]["title"]["text"] for f in frames]
    assert all("sum of 225 products" in s for s in sums)
    assert not at.get("download_button")  # the Downloads expander is closed: nothing built for it
    at.session_state["downloads_dc"] = True  # opened (a click on it reruns the page)
    at.run()
    downloads = {d.proto.label for d in at.get("download_button")}
    assert "The filtered image (PNG)" in downloads
    assert {f"Figure {name}.html (opens offline)" for name in figures(at)} <= downloads


def test_the_cuda_source_is_built_when_its_expander_is_opened():
    at = app(state=dict(cap=32, direct_algo="tiled"))
    [source] = [e for e in at.expander if e.label.startswith("CUDA source")]
    launch = at.session_state["_dc_conv"].launch
    assert launch.kernel in source.label and not at.code  # closed: no code sent
    at.session_state["src_dc"] = True
    at.run()
    span = kernel_span(launch.source, launch.kernel)
    assert at.code[0].value == span.text and "__global__" in span.text
    at.run()  # stays open on the next rerun
    assert at.code and at.code[0].value == span.text


def test_a_heavy_step_is_refused_with_advice_and_compare_times_every_algorithm():
    at = app(
        state=dict(cap=1024, direct_k=15, direct_algo="im2col")
    )  # X_unroll of 225 copies: ~8 s on this CPU
    assert "not computed" in warnings(at) and "Lower the working size (sidebar) to" in warnings(at)
    at = app(state=dict(cap=32))
    [button] = [b for b in at.button if b.label == "Compare algorithms"]
    button.click().run()
    runtimes = figures(at)["direct_runtimes"]
    names = runtimes["data"][0]["y"]
    assert sorted(names) == sorted(ALGORITHMS)
    ms = runtimes["data"][0]["x"]
    assert ms == sorted(ms) and f"fastest: {names[0]}" in runtimes["layout"]["title"]["text"]
    assert runtimes["layout"].get("xaxis", {}).get("type") in (None, "linear")
    rerun(at)  # cached: shown again without a new click
    assert "direct_runtimes" in figures(at)


# ---- the index maps behind the pictures --------------------------------------------------------------------
@pytest.mark.parametrize("H,W,K,S,P,D,mode", GEOMETRIES)
def test_maps_padded_window_and_readers_match_numpy(H, W, K, S, P, D, mode, rng):
    plane = rng.random((H, W)).astype(np.float32)
    g = gpuops.window_geometry(H, W, K, S, P, D)
    win = maps.padded_window(plane, g, mode, -P, H + P, -P, W + P)
    padded = np.pad(plane, P, mode="reflect" if mode == "reflect" else "constant")
    assert np.allclose(win.values, padded)
    assert win.inside.sum() == H * W
    for ih, iw in [(0, 0), (H - 1, W // 2), (H // 3, W - 1)]:
        got = {tuple(r) for r in maps.readers_of(g, ih, iw, mode)[:, :2]}
        assert got == readers_brute(ih, iw, H, W, K, S, P, D, mode)
        oh, ow = maps.output_for_input(g, ih, iw, mode)
        assert (oh, ow) in got or not got


@pytest.mark.parametrize("H,W,K,S,P,D,mode", GEOMETRIES)
def test_maps_animation_crop_holds_the_pick_and_every_tap(H, W, K, S, P, D, mode):
    g = gpuops.window_geometry(H, W, K, S, P, D)
    for oh, ow in [(0, 0), (g.H_out - 1, g.W_out - 1), (g.H_out // 2, g.W_out // 2)]:
        crop = maps.animation_crop(g, oh, ow)
        assert crop.out_r0 <= oh < crop.out_r1 and crop.out_c0 <= ow < crop.out_c1
        assert crop.out_r1 - crop.out_r0 <= 32 and crop.out_c1 - crop.out_c0 <= 32
        rows, cols = crop.outputs
        assert crop.index_of(oh, ow) == list(zip(rows, cols, strict=True)).index((oh, ow))
        every = [t for r, c in zip(rows, cols, strict=True) for t in taps_of(r, c, K, S, P, D)]
        assert min(r for r, _ in every) == crop.in_r0 and max(r for r, _ in every) == crop.in_r1 - 1
        assert min(c for _, c in every) == crop.in_c0 and max(c for _, c in every) == crop.in_c1 - 1


def test_maps_setting_limits_never_allow_a_window_that_does_not_fit():
    for H, W in [(1, 1), (2, 7), (5, 5), (32, 20), (64, 64)]:
        for k in (1, 3, 7, 15):
            for mode in ("zeros", "reflect"):
                for pad in range(0, 16, 3):
                    for dil in (1, 2, 5):
                        k2, p2, d2 = maps.fit_settings(H, W, k, pad, dil, mode)
                        lim = maps.setting_limits(H, W, k2, p2, d2, mode)
                        assert k2 <= lim.k_hi and lim.pad_lo <= p2 <= lim.pad_hi and d2 <= lim.dil_hi
                        fits = d2 * (k2 - 1) + 1 <= min(H, W) + 2 * p2 and (mode == "zeros" or p2 < min(H, W))
                        assert fits, (H, W, k, pad, dil, mode)


def test_maps_detail_pixel_finds_the_edge():
    plane = np.zeros((40, 60), np.float32)
    plane[25:, 33:] = 1.0  # one corner of detail
    r, c = maps.detail_pixel(plane)
    assert abs(r - 25) <= 5 and abs(c - 33) <= 5
    assert maps.detail_pixel(np.ones((7, 9))) == (3, 4)  # flat: the centre


@pytest.mark.parametrize("algo", ALGORITHMS)
def test_maps_computed_by_matches_thread_of(algo):
    """The block's and the thread's pixels (and filters) equal what launch.thread_of says about
    every output of a small layer."""
    g = gpuops.window_geometry(20, 37, 3, 1, 1, 1)
    launch = gpuops.plan_conv2d((1, 3, 20, 37), (3, 1, 3, 3), None, 1, 1, 1, 3, "zeros", algo).launch
    for oh, ow, m in [(0, 0, 0), (7, 19, 1), (19, 36, 2)]:
        work = maps.computed_by(launch, g, oh, ow, m, channel=m, C=3)
        if algo == "im2col":
            row = m * 9
            ref = launch.thread_of(0, row, oh * g.W_out + ow)
            key = (ref.block, ref.thread, ref.step[:1])  # the same thread in the same pass of its loop
            same = {
                (r, c)
                for r in range(g.H_out)
                for c in range(g.W_out)
                if (lambda t: (t.block, t.thread, t.step[:1]))(launch.thread_of(0, row, r * g.W_out + c))
                == key
            }
            assert {tuple(p) for p in work.thread_pixels} == same
            continue
        ref = launch.thread_of(0, m, oh, ow)
        every = [(r, c) for r in range(g.H_out) for c in range(g.W_out)]
        block = {p for p in every if launch.thread_of(0, m, *p).block == ref.block}
        thread = {p for p in every if launch.thread_of(0, m, *p) == ref}
        assert {tuple(p) for p in work.block_pixels} == block
        assert {tuple(p) for p in work.thread_pixels} == thread
        assert set(work.thread_filters) == {f for f in range(3) if launch.thread_of(0, f, oh, ow) == ref}


def test_sessions_with_the_same_settings_share_the_figures_and_a_change_builds_anew():
    """A classroom: a second session with the instructor's settings gets the figures built for the
    first (viz.memo, process-wide), equal to them; another stride builds its own."""
    memo.clear()
    first = app(state=dict(cap=64, direct_stride=2))
    hits = memo.stats["hits"]
    second = app(state=dict(cap=64, direct_stride=2))
    assert memo.stats["hits"] - hits >= len(figures(second)) == len(figures(first)) >= 6
    assert figures(second) == figures(first)
    misses = memo.stats["misses"]
    rerun(second, direct_stride=1)
    assert memo.stats["misses"] > misses
    assert figures(second)["conv_output"] != figures(first)["conv_output"]


def test_the_sliding_window_plays_from_the_pick_at_the_chosen_speed():
    """Play's frame list starts at the picked output (the step on screen) and wraps round; the
    speed setting sets each frame's duration; the caption says both."""
    at = app(state=dict(cap=32, direct_pick=Cell("out", 7, 9), direct_speed=5))
    layout = figures(at)["direct_window"]["layout"]
    slider, [play, pause] = layout["sliders"][0], layout["updatemenus"][0]["buttons"]
    labels = [s["label"] for s in slider["steps"]]
    assert labels[slider["active"]] == "7,9"
    order, options = play["args"]
    assert order[0] == "7,9" and sorted(order) == sorted(labels)
    i = labels.index("7,9")
    assert order == labels[i:] + labels[:i]
    assert options["frame"]["duration"] == 200 and options["fromcurrent"] is True
    # Plotly only moves the controls: ui/presenter.js runs them and catches Pause's interruption
    assert all(c["execute"] is False for c in [play, pause, *slider["steps"]])
    assert "Play starts at the pick and runs 5 steps per second" in captions(at)


def test_a_stopped_sliding_window_picks_the_output_its_step_label_names():
    """A stop reports the step on screen by its label: the output it names is the pick, even when
    the report is read in a later run whose crop (it follows the pick) has moved, where the step's
    index would name another output. A label naming no output changes nothing."""
    at = app(state=dict(cap=64, direct_pick=Cell("out", 20, 20)))
    steps = figures(at)["direct_window"]["layout"]["sliders"][0]["steps"]
    i = [s["label"] for s in steps].index("20,26")
    for _ in range(2):  # the same stop reported again: the crop is now centred on 20,26
        at.session_state[pick.KEY] = {
            "click": {"chart": "direct_window", "panel": "step", "row": i, "col": 0, "label": "20,26"}
        }
        at.run()
        assert not errors(at)
        assert at.session_state["direct_pick"] == Cell("out", 20, 26)
        moved = [s["label"] for s in figures(at)["direct_window"]["layout"]["sliders"][0]["steps"]]
        assert moved[i] != "20,26"  # the index alone would now pick another output
    at.session_state[pick.KEY] = {
        "click": {"chart": "direct_window", "panel": "step", "row": i, "col": 0, "label": "Play"}
    }
    at.run()
    assert not errors(at)
    assert at.session_state["direct_pick"] == Cell("out", 20, 26)


def test_both_sliding_window_panels_stay_readable_for_a_large_dilated_window():
    """K = 15, S = 8, P = 15, D = 5: few outputs under a large input region. Each panel keeps at
    least 0.3 of the width, so the output panel and its title stay readable."""
    at = app(
        state=dict(
            cap=128, direct_k=15, direct_dil=5, direct_stride=8, direct_pad=15, direct_pick=Cell("out", 2, 2)
        )
    )
    assert not errors(at)
    layout = figures(at)["direct_window"]["layout"]
    (a0, a1), (b0, b1) = layout["xaxis"]["domain"], layout["xaxis2"]["domain"]
    assert a1 - a0 >= 0.3 and b1 - b0 >= 0.3 and a1 < b0
    notes = [n["text"] for n in layout["annotations"]]
    assert "Output (grey: not yet)" in notes


@pytest.mark.parametrize("k, pad, arrows", [(3, 1, 5), (7, 3, 0)])
def test_the_reflect_closeup_caption_promises_arrows_only_when_drawn(k, pad, arrows):
    """Output (0, 0) with reflect padding: 5 of a 3 x 3 window's taps are mirrored (arrows drawn),
    33 of a 7 x 7 window's (too many: no arrows, and the caption says hover instead)."""
    at = app(
        state=dict(cap=32, direct_mode="reflect", direct_k=k, direct_pad=pad, direct_pick=Cell("out", 0, 0))
    )
    drawn = [a for a in figures(at)["direct_zoom"]["layout"].get("annotations", []) if a.get("showarrow")]
    assert len(drawn) == arrows
    text = captions(at)
    assert ("arrows from each mirrored tap" in text) == (arrows > 0)
    assert "hover a padding cell" in text


def test_the_thread_figure_is_never_a_thin_strip_and_its_title_has_two_lines():
    """im2col's unfold thread covers a long row: the figure shows rows at least a third of its
    columns (it was 9 rows by 128 columns), and the title puts blockIdx/threadIdx on a line of its own."""
    at = app(state=dict(cap=128, direct_algo="im2col", direct_pick=Cell("out", 80, 90)))
    layout = figures(at)["direct_threads"]["layout"]
    (c0, c1), (r1, r0) = layout["xaxis"]["range"], layout["yaxis"]["range"]
    assert (r1 - r0) * 3 >= (c1 - c0) - 3
    title = layout["title"]["text"]
    assert title.startswith("unfold_v1<br>blockIdx (") and "threadIdx (" in title
