"""The Backward & transposed page through streamlit.testing.v1.AppTest: every section renders with
defaults and at extremes; the cells outlined for a pick equal a brute-force loop written here; the
numbers on the page (dX, dW, the sums, the adjoint identity) equal independent computations;
invalid geometry gives a message and the page lives on; settings and picks travel in the URL;
presentation-mode font sizes and the colour policy, read from the figure objects."""

from __future__ import annotations

import itertools
import json
import re

import numpy as np
import pytest

import gpuops
from tests.support.apptest import AppTest, expected_out, open_page, typed_array
from ui.records import Example
from viz.style import HIGHLIGHT, NORMAL, READER

PAGE = "pages/backward.py"
CHARTS = {"backward_dx", "backward_anim", "backward_count", "backward_dw", "backward_reflect"}
VIRIDIS_0 = "#440154"


pytestmark = pytest.mark.usefixtures("numpy_backend")


def array(value) -> np.ndarray:
    return typed_array(value, float)


def run_page(query: dict[str, str] | None = None) -> AppTest:
    return open_page(PAGE, query)


@pytest.fixture(scope="module")
def default_page() -> AppTest:
    return run_page()


# ---- reading the figures back ---------------------------------------------------------------------------
def specs(at: AppTest) -> dict[str, dict]:
    """Every Plotly chart of the page by its name (pick charts are keyed chart_<name>)."""
    out = {}
    for el in at.get("plotly_chart"):
        name = re.sub(r"^.*-(chart|fig)_", "", el.proto.id)
        out[name] = json.loads(el.proto.spec)
    return out


def panel_z(spec: dict, axis: str) -> np.ndarray:
    """The values of the (first) heatmap drawn on subplot `axis` ("x", "x2", ...)."""
    for trace in spec["data"]:
        if trace.get("type") == "heatmap" and trace.get("xaxis", "x") == axis:
            return array(trace["z"]).astype(np.float64)
    raise AssertionError(f"no heatmap on {axis}")


def outlined(spec: dict, colour: str, axis: str) -> set[tuple[int, int]]:
    """Centres (row, col) of the one-cell outlines of `colour` on subplot `axis`."""
    found = set()
    for s in spec["layout"].get("shapes", []):
        if s.get("xref") == axis and s["line"]["color"] == colour and abs(s["x1"] - s["x0"] - 1) < 1e-9:
            found.add((round((s["y0"] + s["y1"]) / 2), round((s["x0"] + s["x1"]) / 2)))
    return found


def latex_results(at: AppTest) -> list[float]:
    return [
        float(m.group(1)) for el in at.get("latex") if (m := re.search(r"&= \(?(-?[\d.]+)\)?\\end", el.value))
    ]


# ---- brute force, written independently of gpuops.maps -----------------------------------------------------


def forward_taps(H, W, K, S, P, D):
    """(oh, ow, ki, kj, ih, iw) of every tap of the forward convolution that reads a real input cell."""
    Ho, Wo = expected_out(H, K, S, P, D), expected_out(W, K, S, P, D)
    for oh, ow, ki, kj in itertools.product(range(Ho), range(Wo), range(K), range(K)):
        ih, iw = oh * S - P + ki * D, ow * S - P + kj * D
        if 0 <= ih < H and 0 <= iw < W:
            yield oh, ow, ki, kj, ih, iw


def brute_dx(dy, w, H, W, S, P, D):
    dx = np.zeros((H, W))
    for oh, ow, ki, kj, ih, iw in forward_taps(H, W, w.shape[0], S, P, D):
        dx[ih, iw] += dy[oh, ow] * w[ki, kj]
    return dx


def brute_dw(dy, x, K, S, P, D):
    dw = np.zeros((K, K))
    for oh, ow, ki, kj, ih, iw in forward_taps(*x.shape, K, S, P, D):
        dw[ki, kj] += dy[oh, ow] * x[ih, iw]
    return dw


def check_grad_input(spec, geometry, pick):
    """The outlines of the dE/dX figure for a pick, and dX itself, against the brute force."""
    H, W, K, S, P, D = geometry
    taps = list(forward_taps(H, W, K, S, P, D))
    space, r, c = pick
    if space == "dx":
        src = [t for t in taps if t[4:] == (r, c)]
        assert outlined(spec, HIGHLIGHT, "x4") == {(r, c)}
        assert outlined(spec, HIGHLIGHT, "x") == {t[:2] for t in src}
        assert outlined(spec, HIGHLIGHT, "x2") == {t[2:4] for t in src}
        assert outlined(spec, HIGHLIGHT, "x3") == {(K - 1 - t[2], K - 1 - t[3]) for t in src}
    else:
        hit = [t for t in taps if t[:2] == (r, c)]
        assert outlined(spec, HIGHLIGHT, "x") == {(r, c)}
        assert outlined(spec, READER, "x4") == {t[4:] for t in hit}
        assert outlined(spec, READER, "x2") == {t[2:4] for t in hit}
    dy, w, w_flipped, dx = (panel_z(spec, a) for a in ("x", "x2", "x3", "x4"))
    np.testing.assert_array_equal(w_flipped, w[::-1, ::-1])
    np.testing.assert_allclose(dx, brute_dx(dy, w, H, W, S, P, D), atol=1e-4)
    return dy, w, dx


def check_grad_weight(spec, geometry, pick):
    H, W, K, S, P, D = geometry
    taps = list(forward_taps(H, W, K, S, P, D))
    space, r, c = pick
    if space == "w":
        pairs = [t for t in taps if t[2:4] == (r, c)]
        assert outlined(spec, HIGHLIGHT, "x3") == {(r, c)}
        assert outlined(spec, HIGHLIGHT, "x") == {t[4:] for t in pairs}
        assert outlined(spec, HIGHLIGHT, "x2") == {t[:2] for t in pairs}
    else:
        pairs = [t for t in taps if t[4:] == (r, c)]
        assert outlined(spec, HIGHLIGHT, "x") == {(r, c)}
        assert outlined(spec, READER, "x2") == {t[:2] for t in pairs}
        assert outlined(spec, READER, "x3") == {t[2:4] for t in pairs}
    x, dy, dw = (panel_z(spec, a) for a in ("x", "x2", "x3"))
    np.testing.assert_allclose(dw, brute_dw(dy, x, K, S, P, D), atol=1e-3)


# ---- the tests ---------------------------------------------------------------------------------------------
def test_defaults_render_every_section_and_the_sums_are_right(default_page):
    at = default_page
    assert not at.error and at.title[0].value == "Backward & transposed convolution"
    heads = " ".join(h.value for h in at.subheader)
    for words in (
        "transposed convolution is the backward pass",
        "adjoint identity",
        "dE/dW",
        "Reflect-pad backward",
        "Runtimes",
    ):
        assert words in heads
    charts = specs(at)
    assert set(charts) == CHARTS, "no runtime chart before Compare is pressed"
    geometry = (7, 8, 3, 2, 1, 1)
    _, _, dx = check_grad_input(charts["backward_dx"], geometry, ("dx", 3, 3))
    sums = latex_results(at)
    assert sums[0] == pytest.approx(dx[3, 3])  # the written-out sum ends at the kernel's value
    check_grad_weight(charts["backward_dw"], geometry, ("w", 1, 1))
    assert sums[1] == pytest.approx(panel_z(charts["backward_dw"], "x3")[1, 1])
    # the caption names the thread of the launch that ran (gather: one thread per dX cell)
    plan = gpuops.plan_conv2d_backward((1, 1, 4, 4), (1, 1, 7, 8), (1, 1, 3, 3), 2, 1, 1, algorithm="gather")
    t = plan.input_launch.thread_of(0, 0, 3, 3)
    assert any(f"block {t.block}, thread {t.thread}" in c.value for c in at.caption)
    # the count map: how many stamps land on each output cell = how many gradients each dX cell gathers
    counts = panel_z(charts["backward_count"], "x")
    brute = np.zeros((7, 8))
    for *_, ih, iw in forward_taps(*geometry):
        brute[ih, iw] += 1
    np.testing.assert_array_equal(counts, brute)
    assert outlined(charts["backward_count"], HIGHLIGHT, "x") == {(3, 3)}
    assert "Checkerboard" in " ".join(m.value for m in at.markdown)
    assert "output_padding = (0, 1) matters here" in " ".join(m.value for m in at.markdown)


def test_the_animation_stamps_every_input_cell_and_ends_at_dx(default_page):
    at = default_page
    fig = at.get("plotly_chart")[[n for n in specs(at)].index("backward_anim")]
    spec = json.loads(fig.proto.spec)
    frames = spec["frames"]
    assert len(frames) == 4 * 4 + 1 and frames[0]["name"] == "no stamp yet"
    assert [s["label"] for s in spec["layout"]["sliders"][0]["steps"]] == [f["name"] for f in frames]
    dy = panel_z(spec, "x")
    canvas = array(frames[-1]["data"][1]["z"]).astype(np.float64)
    x_axis, y_axis = spec["layout"]["xaxis3"]["range"], spec["layout"]["yaxis3"]["range"]
    top, left = round(y_axis[1] + 0.5), round(x_axis[0] + 0.5)
    assert (top, left) == (-1, -1)  # true output coordinates: padding 1 crops one row / column
    output = canvas[-top : -top + 7, -left : -left + 8]
    np.testing.assert_allclose(
        output, brute_dx(dy, panel_z(specs(at)["backward_dx"], "x2"), 7, 8, 2, 1, 1), atol=1e-4
    )
    np.testing.assert_allclose(output, panel_z(specs(at)["backward_dx"], "x4"), atol=1e-4)


def test_adjoint_identity_numbers_agree_with_a_float64_loop(default_page):
    """The page's two sides against loops in float64 over the page's random x, y, w (seed 1000 + seed):
    <conv(x), y> sums x * w * y over every tap grouped by output, <x, conv_T(y)> grouped by input."""
    values = {m.label: float(m.value) for m in default_page.metric}
    lhs, rhs, diff = values["⟨conv2d(x), y⟩"], values["⟨x, conv_transpose2d(y)⟩"], values["difference"]
    rng = np.random.default_rng(1000 + 1)
    x = rng.standard_normal((2, 7, 8)).astype(np.float32).astype(np.float64)
    y = rng.standard_normal((3, 4, 4)).astype(np.float32).astype(np.float64)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32).astype(np.float64)
    conv = np.zeros((3, 4, 4))
    back = np.zeros((2, 7, 8))
    for oh, ow, ki, kj, ih, iw in forward_taps(7, 8, 3, 2, 1, 1):
        conv[:, oh, ow] += w[:, :, ki, kj] @ x[:, ih, iw]
        back[:, ih, iw] += w[:, :, ki, kj].T @ y[:, oh, ow]
    assert lhs == pytest.approx(float((conv * y).sum()), abs=2e-5)
    assert rhs == pytest.approx(float((x * back).sum()), abs=2e-5)
    assert abs(diff) < 1e-4 and diff == pytest.approx(lhs - rhs, abs=2e-6)


@pytest.mark.parametrize(
    "geometry,pick,wpick,rp",
    [  # (H, W, K, S, P, D): stride > kernel; dilation with padding at its limit D*(K-1); the largest grid
        ((5, 9, 2, 3, 1, 2), ("dy", 1, 2), ("x", 4, 8), ((1, 6), (0, 5, 0, 0), ("pad", 0, 2))),
        ((6, 4, 3, 1, 3, 2), ("dx", 0, 3), ("w", 2, 0), ((8, 2), (1, 0, 7, 7), ("in", 7, 1))),
        ((10, 10, 5, 1, 3, 1), ("dx", 9, 0), ("w", 4, 4), ((8, 8), (7, 7, 7, 7), ("in", 0, 0))),
    ],
)
def test_odd_geometries_outline_what_a_brute_force_loop_finds(geometry, pick, wpick, rp):
    H, W, K, S, P, D = geometry
    (rh, rw), pads, rpick = rp
    query = dict(
        backward_h=H,
        backward_w=W,
        backward_k=K,
        backward_stride=S,
        backward_pad=P,
        backward_dil=D,
        backward_pick="{}:{},{}".format(*pick),
        backward_wpick="{}:{},{}".format(*wpick),
        backward_rp_h=rh,
        backward_rp_w=rw,
        backward_rp_pick="{}:{},{}".format(*rpick),
        **dict(
            zip(
                ("backward_rp_left", "backward_rp_right", "backward_rp_top", "backward_rp_bottom"),
                pads,
                strict=True,
            )
        ),
    )
    at = run_page({k: str(v) for k, v in query.items()})
    assert not at.error and not at.warning[1:], [w.value for w in at.warning]
    charts = specs(at)
    check_grad_input(charts["backward_dx"], geometry, pick)
    check_grad_weight(charts["backward_dw"], geometry, wpick)
    anim = json.loads(at.get("plotly_chart")[list(charts).index("backward_anim")].proto.spec)
    cells = expected_out(H, K, S, P, D) * expected_out(
        W, K, S, P, D
    )  # one frame per input cell, at most 48 frames
    assert len(anim["frames"]) == -(-cells // -(-cells // 48)) + 1
    last = anim["frames"][-1]["data"][1]["z"]
    np.testing.assert_allclose(
        np.array(last)[P : P + H, P : P + W], panel_z(charts["backward_dx"], "x4"), atol=1e-4
    )
    # reflect: NumPy's reflect pad of the cell ids says which padded cell copies which input cell
    left, right, top, bottom = pads
    ids = np.pad(np.arange(rh * rw).reshape(rh, rw), ((top, bottom), (left, right)), mode="reflect")
    spec = charts["backward_reflect"]
    space, r, c = rpick
    if space == "in":
        assert outlined(spec, HIGHLIGHT, "x") == {tuple(a) for a in np.argwhere(ids == r * rw + c).tolist()}
    else:
        assert outlined(spec, READER, "x3") == {divmod(int(ids[r, c]), rw)}
    dy_pad, counts, dx = (panel_z(spec, a) for a in ("x", "x2", "x3"))
    np.testing.assert_array_equal(counts, np.bincount(ids.ravel(), minlength=rh * rw).reshape(rh, rw))
    np.testing.assert_allclose(
        dx, np.bincount(ids.ravel(), dy_pad.ravel(), rh * rw).reshape(rh, rw), atol=1e-5
    )


def test_invalid_geometry_shows_a_message_and_the_page_lives_on():
    at = run_page(
        {
            "backward_h": "2",
            "backward_w": "2",
            "backward_k": "5",
            "backward_dil": "3",
            "backward_pad": "0",
            "backward_stride": "99",
        }
    )
    assert any("K is at most 1" in i.value for i in at.info), [i.value for i in at.info]
    assert any("backward_stride=99" in w.value and "out of range" in w.value for w in at.warning)
    assert set(specs(at)) == CHARTS  # every section still drawn, with the geometry the sliders allow
    assert at.slider(key="w_backward_k").value == 1 and at.slider(key="w_backward_stride").value == 4


def test_slider_ranges_follow_the_geometry():
    at = run_page(
        {
            "backward_h": "3",
            "backward_w": "6",
            "backward_k": "3",
            "backward_pad": "0",
            "backward_dil": "1",
            "backward_rp_h": "2",
        }
    )
    assert at.slider(key="w_backward_k").max == 3  # a 4-tap window does not fit 3 rows without padding
    assert at.slider(key="w_backward_pad").max == 2  # D x (K - 1)
    dil = at.slider(key="w_backward_dil")
    assert dil.disabled and dil.value == 1  # dilation 2 spans 5 rows: one value left, shown disabled
    assert (
        at.slider(key="w_backward_rp_top").max == 1 and at.slider(key="w_backward_rp_left").max == 4
    )  # pads < side


def test_settings_and_picks_travel_in_the_url():
    query = dict(
        backward_h="6",
        backward_w="9",
        backward_k="2",
        backward_stride="3",
        backward_pad="1",
        backward_dil="2",
        backward_nums="image",
        backward_seed="7",
        backward_alg="scatter",
        backward_walg="gemm",
        backward_pick="dy:1,2",
        backward_wpick="x:2,5",
        backward_rp_h="3",
        backward_rp_w="6",
        backward_rp_left="4",
        backward_rp_right="0",
        backward_rp_top="2",
        backward_rp_bottom="1",
        backward_ralg="gather",
        backward_rp_pick="pad:0,1",
        pres="1",
    )
    at = run_page(query)
    assert not at.error
    assert {k: at.query_params[k] for k in query} == query
    charts = specs(at)
    assert charts["backward_dx"]["layout"]["title"]["text"].startswith("dY[1, 2] scatters into")
    assert charts["backward_dw"]["layout"]["title"]["text"].startswith("x[2, 5] feeds")
    assert charts["backward_reflect"]["layout"]["title"]["text"].startswith("Padded cell (0, 1) sends")
    assert any("of your image" in c.value or "of sample" in c.value for c in at.caption)  # x from the image
    geometry = (6, 9, 2, 3, 1, 2)
    check_grad_input(charts["backward_dx"], geometry, ("dy", 1, 2))
    # the scatter kernel ran: the caption names the thread of dY[1, 2] in its launch
    plan = gpuops.plan_conv2d_backward((1, 1, 2, 3), (1, 1, 6, 9), (1, 1, 2, 2), 3, 1, 2, algorithm="scatter")
    t = plan.input_launch.thread_of(0, 0, 1, 2)
    assert any(
        f"block {t.block}, thread {t.thread}" in c.value and "atomicAdd" in c.value for c in at.caption
    )
    # a click applied through session state (AppTest cannot click) moves the pick and the URL, nothing else
    from ui.state import Cell

    at.session_state["backward_pick"] = Cell("dx", 5, 8)
    at.run()
    assert at.query_params["backward_pick"] == "dx:5,8" and at.query_params["backward_k"] == "2"
    check_grad_input(specs(at)["backward_dx"], geometry, ("dx", 5, 8))


def _fonts(node, path=""):
    """Every (path, font size) in a figure spec, skipping invisible text."""
    if isinstance(node, dict):
        font = node.get("font") if isinstance(node.get("font"), dict) else None
        if font and "size" in font and "rgba(0,0,0,0)" not in str(font.get("color", "")):
            yield path + ".font", font["size"]
        for key, value in node.items():
            if key.endswith("font") and key != "font" and isinstance(value, dict) and "size" in value:
                yield f"{path}.{key}", value["size"]
            if key not in ("font", "data", "frames"):
                yield from _fonts(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _fonts(value, f"{path}[{i}]")


def _cell_label_sizes(spec):
    return [t["textfont"]["size"] for t in spec["data"] if t.get("type") == "heatmap" and "textfont" in t]


def test_presentation_mode_text_is_projector_sized():
    at = run_page({"pres": "1", "cap": "32"})
    at.button(key=next(b.key for b in at.button if b.label.startswith("Compare"))).click()
    at.run()  # the runtime chart too
    charts = specs(at)
    assert set(charts) == {*CHARTS, "backward_times"}
    for name, spec in charts.items():
        small = [(p, s) for p, s in _fonts(spec["layout"], name) if s < 20]
        assert not small, small
        assert all(s >= 14 for s in _cell_label_sizes(spec)), name
        for trace in spec["data"]:
            assert trace.get("textfont", {}).get("size", 20) >= 14, name


def test_normal_mode_fonts_colour_policy_and_true_axes(default_page):
    for name, spec in specs(default_page).items():
        lay = spec["layout"]
        assert lay["title"]["font"]["size"] >= 16, name
        for key, axis in lay.items():
            if key.startswith(("xaxis", "yaxis")):
                assert axis["tickfont"]["size"] >= 14 and axis["title"]["font"]["size"] >= 14, (name, key)
        assert all(s >= 12 for s in _cell_label_sizes(spec)), name
        for i, trace in enumerate(spec["data"]):
            if trace.get("type") != "heatmap" or "zmin" not in trace:
                continue  # washes: one flat colour
            z = array(trace["z"]).astype(np.float64).ravel()
            for frame in spec.get("frames", []):  # an animated trace: the scale covers every frame
                if i in frame["traces"]:
                    z = np.append(z, array(frame["data"][frame["traces"].index(i)]["z"]).ravel())
            if np.nanmin(z) >= 0:
                assert trace["zmin"] == 0 and trace["colorscale"][0][1] == VIRIDIS_0, (
                    name,
                    trace.get("hovertemplate"),
                )
            else:
                assert trace["zmid"] == 0 and trace["zmin"] == -trace["zmax"], name
    dx_spec = specs(default_page)["backward_dx"]["layout"]
    assert dx_spec["xaxis"]["range"] == [-0.5, 3.5] and dx_spec["xaxis4"]["range"] == [-0.5, 7.5]
    assert dx_spec["yaxis4"]["range"] == [6.5, -0.5]  # rows down, true indices 0..6


def test_runtimes_only_behind_compare_and_downloads_are_offline():
    at = run_page({"cap": "32"})
    assert not any(n.startswith("backward_time") for n in specs(at))
    assert "Benchmarks page" in " ".join(m.value for m in at.markdown)
    at.button(key=next(b.key for b in at.button if b.label.startswith("Compare"))).click()
    at.run()
    assert not at.exception and not at.error
    bars = specs(at)["backward_times"]["data"]
    every = (gpuops.GRAD_INPUT_ALGORITHMS, gpuops.GRAD_WEIGHT_ALGORITHMS, gpuops.REFLECT_BACKWARD_ALGORITHMS)
    assert [len(b["y"]) for b in bars] == [len(names) for names in every] == [4, 7, 2]
    assert all(list(b["x"]) == sorted(b["x"]) for b in bars)  # fastest first
    from viz import conv_backward as viz

    html = viz.overlap_figure(np.ones((3, 3))).to_html(include_plotlyjs=True, full_html=True)
    assert not re.search(r"<script[^>]+src=[\"']https?:", html)  # ui.common.figure's download: Plotly inline


def test_tags_pair_cells_in_every_panel_or_in_none():
    """The letters that pair dY cells with kernel taps are drawn in all three panels, or (values too
    wide for a cell) in none: a letter in one panel alone would pair with nothing."""
    from gpuops.maps import conv_backward as maps
    from viz import conv_backward as viz

    g = gpuops.window_geometry(7, 8, 3, 2, 1, 1)
    src = maps.gradient_sources(g, 3, 3)
    w = np.array([[-1, 1, 2], [2, -2, -2], [2, 2, -2]], np.float32)

    def tagged_panels(dy):
        ex = Example(g, np.zeros((7, 8)), w, dy, np.zeros((7, 8)), np.zeros_like(w), None, ".1f", "", ())
        links = viz.Links(outputs=src.outputs, taps=src.taps, flipped=src.flipped)
        fig = viz.grad_input_figure(ex, NORMAL, picked=("dx", 3, 3), links=links)
        return {
            t.xaxis for t in fig.data if t.text is not None and any("<b" in str(v) for v in np.ravel(t.text))
        }

    assert tagged_panels(np.ones((4, 4), np.float32)) == {"x", "x2", "x3"}
    assert tagged_panels(np.full((4, 4), -2.5, np.float32)) == set()


def test_the_flipped_conv_and_batch_gemm_kernels_run_on_the_page():
    """The newer algorithms of gpuops are accepted choices and run with a stride-2 geometry; the
    caption says that a forward convolution computes the picked dX cell."""
    query = dict(
        backward_stride="2",
        backward_pad="1",
        backward_alg="flipped_conv",
        backward_walg="batch_gemm",
        backward_pick="dx:2,3",
    )
    at = run_page(query)
    assert not at.exception and not at.error
    assert (at.query_params["backward_alg"], at.query_params["backward_walg"]) == (
        "flipped_conv",
        "batch_gemm",
    )
    assert any("forward convolution" in c.value and "dX[2, 3]" in c.value for c in at.caption)
    assert any("With GEMM, unfold copies" in c.value for c in at.caption)  # batch_gemm: unfold + cuBLAS too


def test_forward_conv_runs_on_the_page_and_says_what_it_computes():
    """grad_weight as a forward convolution: accepted from the URL, the picked weight's value is
    the brute-force sum, and the caption says conv2d computes it."""
    at = run_page(
        dict(backward_stride="2", backward_pad="1", backward_walg="forward_conv", backward_wpick="w:1,2")
    )
    assert not at.exception and not at.error
    assert at.query_params["backward_walg"] in ("forward_conv", ["forward_conv"])
    [caption] = [c.value for c in at.caption if "literally that convolution" in c.value]
    total, computed = re.search(r"Sum = (\S+); the kernel computed (\S+)\.", caption).groups()
    assert float(total) == float(computed)


@pytest.mark.parametrize(
    "walg, who",
    [
        ("direct_pairs", "warp 4 of block 0 of `grad_weight_v3_pairs` sums these products"),
        ("direct_pairs_shared", "the team of threads from thread 112 on sums these products"),
        ("direct_columns", "every thread of block 0 of `grad_weight_v5_columns` walks a column"),
    ],
)
def test_the_weight_caption_names_who_sums_the_picked_weight(walg, who):
    """grad_weight v3-v5 on a 9 x 9 layer at stride 2 (tap (1, 1) = tap 4): the caption names the
    warp, team or thread of the launch's map, and its stored tap, for the picked weight."""
    from gpuops.maps.conv_backward import weight_terms
    from ui import backward_view as view
    from ui.state import Cell

    g = gpuops.window_geometry(9, 9, 3, 2, 1)
    shapes = ((1, 1, g.H_out, g.W_out), (1, 1, 9, 9), (1, 1, 3, 3))
    plan = gpuops.plan_conv2d_backward(*shapes, stride=2, padding=1, weight_algorithm=walg)
    rng = np.random.default_rng(5)
    x, dy = rng.standard_normal((9, 9)), rng.standard_normal((g.H_out, g.W_out))
    terms = weight_terms(dy, x, g, 1, 1)
    ex = Example(
        g, x, np.ones((3, 3)), dy, np.zeros((9, 9)), np.full((3, 3), terms.total), plan, ".1f", "", ()
    )
    text = view.weight_caption(ex, Cell("w", 1, 1), terms, walg)
    assert who in text and f"Sum = {terms.total:.6g}" in text
    if walg == "direct_columns":
        assert "thread 4 stores this one" in text
    assert ("slices of the rows are added after the kernel" in text) == (plan.weight_launch.grid[1] > 1)
