"""The Reflect padding page through streamlit.testing.v1.AppTest: slider ranges that follow the
geometry, picks checked against an independent np.pad calculation, the URL, the figures' text
sizes and axes, the kernel's caption, the compute budget and "Compare".

AppTest cannot click a figure: picks are driven through session_state and query parameters
(tests/browser/test_e2e_reflect_pad.py clicks in a real browser).
"""

from __future__ import annotations

import base64
import json
import re

import numpy as np
import plotly.graph_objects as go
import pytest

from tests.support.apptest import AppTest, open_page
from ui.state import Cell
from viz.reflect_pad import neighbour_contrast, source_ids

PAGE = "pages/reflect.py"
HIGHLIGHT, READER, SECOND = "#ff7f0e", "#d62728", "#17becf"


pytestmark = pytest.mark.usefixtures("numpy_backend")


def app(query: dict[str, str] | None = None, state: dict | None = None) -> AppTest:
    return open_page(PAGE, query, state)


def _decoded(node):
    """Plotly's JSON with its typed arrays ({"dtype", "bdata", "shape"}) as NumPy arrays."""
    if isinstance(node, dict):
        if "bdata" in node and "dtype" in node:
            flat = np.frombuffer(base64.b64decode(node["bdata"]), dtype=node["dtype"])
            shape = node.get("shape")
            return flat.reshape([int(n) for n in str(shape).split(",")]) if shape else flat
        return {k: _decoded(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_decoded(v) for v in node]
    return node


def figures(at: AppTest) -> dict[str, dict]:
    """The page's Plotly figures as JSON (arrays decoded), by title text."""
    out = {}
    for el in at.get("plotly_chart"):
        spec = _decoded(json.loads(el.proto.spec))
        out[spec["layout"]["title"]["text"]] = spec
    return out


def grid(at: AppTest) -> dict:
    return figures(at)["Same colour = same source"]


def image_fig(at: AppTest) -> dict:
    return next(f for t, f in figures(at).items() if t.startswith("Padded by"))


def outlined(fig: dict, colour: str, panel: str = "x") -> set[tuple[int, int]]:
    """(row, col) of the single cells outlined in `colour` on subplot `panel`."""
    cells = set()
    for s in fig["layout"].get("shapes", []):
        if s["line"]["color"] == colour and s.get("xref", "x") == panel and abs(s["x1"] - s["x0"] - 1) < 1e-9:
            cells.add((round((s["y0"] + s["y1"]) / 2), round((s["x0"] + s["x1"]) / 2)))
    return cells


def text(at: AppTest) -> str:
    return " ".join([m.value for m in at.markdown] + [c.value for c in at.caption])


# ---- an independent reference: np.pad of the coordinates themselves ----------------------------------
def reference_sources(h: int, w: int, pads: tuple[int, int, int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Source row and column of every padded cell, from NumPy's own reflect mode."""
    left, right, top, bottom = pads
    rows = np.pad(np.arange(h), (top, bottom), mode="reflect")
    cols = np.pad(np.arange(w), (left, right), mode="reflect")
    return np.repeat(rows[:, None], cols.size, 1), np.repeat(cols[None, :], rows.size, 0)


def brute_force_copies(
    h: int, w: int, pads: tuple[int, int, int, int], y: int, x: int
) -> set[tuple[int, int]]:
    rows, cols = reference_sources(h, w, pads)
    found = set()
    for r in range(rows.shape[0]):
        for c in range(rows.shape[1]):
            if rows[r, c] == y and cols[r, c] == x:
                found.add((r, c))
    return found


def grid_state(h: int, w: int, pads: tuple[int, int, int, int], pick: Cell, **more) -> dict:
    l, r, t, b = pads
    return dict(
        reflect_h=h,
        reflect_w=w,
        reflect_left=l,
        reflect_right=r,
        reflect_top=t,
        reflect_bottom=b,
        reflect_pick=pick,
        cap=32,
        **more,
    )


# ---- moved from tests/pages/test_pages.py ------------------------------------------------------------------
@pytest.mark.parametrize("h,w,pads", [(1, 1, (0, 0, 0, 0)), (8, 8, (7, 7, 7, 7)), (4, 5, (4, 2, 2, 1))])
def test_reflect_page_grid_extremes(h, w, pads):
    at = app(state=grid_state(h, w, pads, Cell("pad", 0, 0), reflect_img_pad=256))
    assert not at.error
    # each pad slider stops at its side - 1 (disabled when only 0 is possible), the image pad at
    # the 32 px image's side - 1: pad 256 on a 32 px image can no longer be asked for
    sliders = {s.key: s for s in at.slider}
    for key, side in (("reflect_left", w), ("reflect_right", w), ("reflect_top", h), ("reflect_bottom", h)):
        if side == 1:
            assert sliders[f"w_{key}"].disabled and at.session_state[key] == 0
        else:
            assert sliders[f"w_{key}"].max == side - 1
    assert sliders["w_reflect_img_pad"].max == 31 and at.session_state["reflect_img_pad"] == 31
    assert image_fig(at)["layout"]["title"]["text"] == "Padded by 31: 94 x 94"


def test_a_link_asking_for_more_padding_than_the_image_has_is_clamped_with_a_notice():
    at = app(query={"cap": "32", "reflect_img_pad": "256"})
    assert at.session_state["reflect_img_pad"] == 31
    assert any("256" in i.value and "at most 31" in i.value for i in at.info)
    assert not at.error
    assert at.query_params["reflect_img_pad"] == "31"


def test_reflect_formula_matches_numpy_reflect():
    at = app(state=dict(reflect_w=5, reflect_left=3, reflect_pick=Cell("pad", 0, 0)))
    row_formula, col_formula = (el.value for el in at.get("latex"))
    # padded column 0 with left pad 3 is input column 3 (np.pad mirrors without the edge)
    src_col = int(np.pad(np.arange(5), (3, 0), mode="reflect")[0])
    src_row = int(np.pad(np.arange(4), (2, 1), mode="reflect")[0])  # default H 4, top pad 2
    assert re.search(r"=\s*(-?\d+)\s*\\end\{aligned\}", col_formula).group(1) == str(src_col)
    assert re.search(r"=\s*(-?\d+)\s*\\end\{aligned\}", row_formula).group(1) == str(src_row)
    assert "0 - 3 = -3" in col_formula and r"|-3| - |-3 - 4| - (-3) + 4" in col_formula


# ---- picks against a brute-force calculation --------------------------------------------------------------
ODD = [
    (3, 7, (6, 0, 2, 1)),  # left pad at its limit W - 1, no right pad
    (8, 1, (0, 0, 7, 7)),  # one column, both row pads at the limit
    (2, 5, (4, 4, 1, 1)),  # non-square, wide pads on both sides
]


@pytest.mark.parametrize("h,w,pads", ODD)
def test_a_picked_padded_cell_outlines_the_input_cell_it_copies(h, w, pads):
    rows, cols = reference_sources(h, w, pads)
    at = app(state=grid_state(h, w, pads, Cell("pad", 0, 0)))
    for oy, ox in [(0, 0), (rows.shape[0] - 1, cols.shape[1] - 1), (rows.shape[0] // 2, 1 % cols.shape[1])]:
        at.session_state["reflect_pick"] = Cell("pad", oy, ox)
        at.run()
        fig = grid(at)
        assert outlined(fig, HIGHLIGHT, "x2") == {(oy, ox)}
        assert outlined(fig, HIGHLIGHT, "x") == {(rows[oy, ox], cols[oy, ox])}
        assert f"copies **input cell ({rows[oy, ox]}, {cols[oy, ox]})**" in text(at)
        # the keyboard path shows the same pick
        assert (
            at.number_input(key="w_reflect_pick_row").value == oy
            and at.number_input(key="w_reflect_pick_col").value == ox
        )


@pytest.mark.parametrize("h,w,pads", ODD)
def test_a_picked_input_cell_outlines_every_padded_copy(h, w, pads):
    at = app(state=grid_state(h, w, pads, Cell("in", 0, 0)))
    for y, x in [(0, 0), (h - 1, w - 1), (h // 2, w // 2)]:
        at.session_state["reflect_pick"] = Cell("in", y, x)
        at.run()
        fig = grid(at)
        expected = brute_force_copies(h, w, pads, y, x)
        assert outlined(fig, READER, "x2") == expected
        assert outlined(fig, HIGHLIGHT, "x") == {(y, x)}
        assert f"**{len(expected)} padded cells** copy it" in text(at)


def test_typing_a_cell_picks_it_and_keeps_the_other_settings():
    at = app(state=grid_state(4, 5, (2, 2, 2, 1), Cell("pad", 0, 0), reflect_img_pad=7))
    at.number_input(key="w_reflect_pick_col").set_value(8).run()
    assert at.session_state["reflect_pick"] == Cell("pad", 0, 8)
    at.radio(key="w_reflect_pick_space").set_value("in").run()
    assert at.session_state["reflect_pick"].space == "in"
    assert at.session_state["reflect_pick"] == Cell("in", 0, 4)  # moved into the 4 x 5 input
    assert at.session_state["reflect_img_pad"] == 7 and at.session_state["reflect_left"] == 2


def test_a_picked_image_pixel_outlines_its_source_and_all_copies():
    p = 24
    at = app(state=dict(reflect_img_pad=p, reflect_img_pick=Cell("pad", 2, 3)))
    H = W = 256
    rows = np.pad(np.arange(H), (p, p), mode="reflect")
    cols = np.pad(np.arange(W), (p, p), mode="reflect")
    sy, sx = rows[2], cols[3]
    copies = {(int(r), int(c)) for r in np.flatnonzero(rows == sy) for c in np.flatnonzero(cols == sx)}
    fig = image_fig(at)
    orange = outlined(fig, HIGHLIGHT)
    assert (2, 3) in orange and (sy + p, sx + p) in orange  # the pick and its source (inside the box)
    assert outlined(fig, READER) | orange == copies
    assert f"copies input pixel ({sy}, {sx}); {len(copies)} padded pixels" in text(at)


# ---- the URL -----------------------------------------------------------------------------------------------
def test_every_setting_and_both_picks_travel_in_the_url():
    query = {
        "reflect_h": "6",
        "reflect_w": "3",
        "reflect_left": "2",
        "reflect_right": "1",
        "reflect_top": "5",
        "reflect_bottom": "4",
        "reflect_img_pad": "9",
        "reflect_blur": "5",
        "reflect_pick": "in:4,1",
        "reflect_img_pick": "pad:3,40",
    }
    at = app(query=query)
    assert at.session_state["reflect_pick"] == Cell("in", 4, 1)
    assert at.session_state["reflect_img_pick"] == Cell("pad", 3, 40)
    for key, value in query.items():
        assert at.query_params[key] == value, key
    assert outlined(grid(at), HIGHLIGHT, "x") == {(4, 1)}


# ---- the figures: text sizes, colours, axes, downloads -----------------------------------------------------
def _sizes(fig: dict) -> dict[str, list[float]]:
    lay = fig["layout"]
    ticks = [v["tickfont"]["size"] for k, v in lay.items() if k.startswith(("xaxis", "yaxis"))]
    axis_titles = [v["title"]["font"]["size"] for k, v in lay.items() if k.startswith(("xaxis", "yaxis"))]
    labels = [t["textfont"]["size"] for t in fig["data"] if t.get("texttemplate")]
    notes = [a["font"]["size"] for a in lay.get("annotations", [])]
    return dict(
        title=[lay["title"]["font"]["size"]],
        ticks=ticks,
        text=[lay["font"]["size"], *axis_titles, *notes],
        labels=labels,
    )


@pytest.mark.parametrize("pres", [False, True])
def test_text_sizes_in_normal_and_presentation_mode(pres):
    at = app(state=dict(pres=pres))  # the defaults (the Reflect part of test_every_page_runs_with_defaults)
    assert not at.error and at.title[0].value == "Reflect padding"
    figs = figures(at)
    assert len(figs) == 3
    for title, fig in figs.items():
        s = _sizes(fig)
        if pres:
            assert min(s["title"] + s["ticks"] + s["text"]) >= 20, title
            assert all(size >= 14 for size in s["labels"]), title
        else:
            assert min(s["ticks"]) >= 14 and min(s["title"]) >= 16, title
            assert all(size >= 12 for size in s["labels"]), title
        assert fig["layout"]["modebar"]["orientation"] == "v"
    assert _sizes(grid(at))["labels"], "the default grid is labelled"


def test_same_colour_means_same_source_and_neighbours_differ():
    h, w, pads = 3, 7, (6, 0, 2, 1)
    fig = grid(app(state=grid_state(h, w, pads, Cell("pad", 0, 0))))
    inp, padded = fig["data"]
    z_in, z_pad = np.array(inp["z"]), np.array(padded["z"])
    rows, cols = reference_sources(h, w, pads)
    assert np.array_equal(z_pad, z_in[rows, cols])  # every copy has its source's colour
    assert len(np.unique(z_in)) == h * w  # one colour per input cell
    scale = inp["colorscale"]
    colour_of = {int(v): scale[2 * int(v)][1] for v in np.unique(z_in)}  # stepped scale: id k -> entry 2k
    assert len(set(colour_of.values())) == h * w
    for H in range(1, 9):
        for W in range(1, 9):
            ids, n = source_ids(H, W)
            assert len(np.unique(ids)) == H * W
            assert neighbour_contrast(ids, n) >= 30, (H, W)  # CIE76 delta E between touching cells


def test_axes_carry_the_true_indices():
    at = app(state=grid_state(3, 7, (6, 0, 2, 1), Cell("pad", 0, 0), reflect_img_pad=5))
    inp, padded = grid(at)["data"]
    assert list(inp["x"]) == list(range(7)) and list(inp["y"]) == list(range(3))
    assert list(padded["x"]) == list(range(13)) and list(padded["y"]) == list(range(6))
    img = image_fig(at)
    assert img["layout"]["xaxis"]["range"] == [-0.5, 41.5]  # 32 + 2 * 5 padded columns, from 0
    box = next(s for s in img["layout"]["shapes"] if s["line"]["color"] == SECOND)
    assert (box["x0"], box["x1"], box["y0"], box["y1"]) == (4.5, 36.5, 4.5, 36.5)  # the original 32 x 32


def test_downloaded_figures_carry_plotly_and_no_external_script():
    for spec in figures(app()).values():
        html = go.Figure(spec).to_html(include_plotlyjs=True, full_html=True)
        assert not re.search(r"<script[^>]+src=[\"']https?:", html)


# ---- the kernel: its caption from the Launch, Compare, the budget ------------------------------------------
def test_kernel_caption_counts_head_groups_and_tail_from_the_launch():
    at = app(
        state=dict(reflect_img_pad=25)
    )  # 256 + 50 = 306 cells a row: rows start 0 or 2 cells past a boundary
    W_out = 306
    parts = []
    for row in (0, 1):  # independent: a row's first cell sits at element row * W_out of the plane
        head = (4 - (row * W_out) % 4) % 4
        parts.append(
            f"row {row}: {head} head + {(W_out - head) // 4} groups of 4 + {(W_out - head) % 4} tail"
        )
    caption = next(c.value for c in at.caption if "float4" in c.value)
    assert "; ".join(parts) in caption and "306 cells" in caption


def test_runtime_only_after_compare_and_then_cached():
    at = app(state=dict(cap=32))
    assert not at.metric
    next(b for b in at.button if "Compare" in b.label).click().run()
    assert len(at.metric) == 1 and "GB/s" in at.metric[0].delta
    at.run()  # an unrelated rerun keeps the measured result without timing again
    assert len(at.metric) == 1 and not [b for b in at.button if "Compare" in b.label]


def test_a_blur_over_the_budget_is_refused_with_advice():
    at = app(state=dict(cap=1024, reflect_blur=15, reflect_img_pad=0))
    assert any("smaller blur size K" in w.value for w in at.warning)
    assert not at.error and len(figures(at)) == 2  # the grid and the image still show


# ---- the index maps behind the page (gpuops/maps/reflect_pad.py), against np.pad ---------------------------
def test_axis_copies_and_the_formula_terms_agree_with_numpy_reflect():
    from gpuops.maps import reflect_pad as maps

    for size in range(1, 7):
        for before in range(size):
            for after in range(size):
                padded = np.pad(np.arange(size), (before, after), mode="reflect")
                for i in range(size):
                    assert list(maps.axis_copies(size, before, after, i)) == list(np.flatnonzero(padded == i))
                for o in range(padded.size):
                    axis = maps.axis_source(o, size, before, after)
                    a, b, minus_i, s1 = axis.terms
                    assert axis.source == a - b + minus_i + s1 == padded[o]
    with pytest.raises(ValueError, match="outside"):
        maps.axis_source(9, 5, 2, 2)


def test_pick_padded_names_the_source_and_its_copies():
    from gpuops.maps import reflect_pad as maps

    h, w, pads = 5, 3, (2, 1, 4, 0)
    for oy in range(h + 4):
        for ox in range(w + 3):
            p = maps.pick_padded(h, w, pads, oy, ox)
            rows, cols = reference_sources(h, w, pads)
            assert p.source == (rows[oy, ox], cols[oy, ox])
            assert set(p.copies) == brute_force_copies(h, w, pads, *p.source)
            assert p.source_at in p.copies and p.is_source == (p.cell == p.source_at)


def test_row_stores_split_each_row_as_the_kernel_does():
    from gpuops.maps import reflect_pad as maps
    from gpuops.reflect_pad import reflect_pad_launch

    for W, pad in [(5, 1), (6, 2), (9, 3), (2, 1), (1, 0)]:
        launch = reflect_pad_launch(2, 3, W, (pad,) * 4)
        W_out = W + 2 * pad
        for row in range(3 + 2 * pad):
            s = maps.row_stores(launch, row)
            head = min(W_out, (4 - (row * W_out) % 4) % 4)  # cells up to the next 16-byte boundary
            expected = (head, (W_out - head) // 4, (W_out - head) % 4)
            assert (s.head, s.groups, s.tail) == expected, (W, pad, row)
