"""The one colour policy (viz/style.py) as the built figures carry it: images on a fixed [0, 1]
scale, signed data diverging at 0 even when one sign is absent, counts from 0, and a hover
outline whose colour no pick, tap or region outline uses.

Expectations are written here from the policy's words (numbers, colour names), never read back
from the module under test.
"""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import pytest

from tests.support.apptest import open_page
from ui.state import Cell
from viz import conv2d as viz
from viz import conv_backward
from viz import style as sty


def _stops(scale) -> list:
    """A colour scale as [[position, colour], ...], names resolved as Plotly's validation does."""
    if isinstance(scale, str):
        scale = go.Heatmap(colorscale=scale).colorscale
    return [[round(float(a), 6), _rgb(b)] for a, b in scale]


def _rgb(colour: str) -> tuple[int, int, int]:
    """'#053061' and 'rgb(5,48,97)' alike as (5, 48, 97)."""
    if colour.startswith("#"):
        return tuple(int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return tuple(round(float(v)) for v in colour[colour.index("(") + 1 : -1].split(","))


VIRIDIS, RDBU_R = _stops("Viridis"), _stops("RdBu_r")


def is_image_scale(trace: dict) -> bool:
    return trace["zmin"] == 0 and trace["zmax"] == 1 and _stops(trace["colorscale"]) == VIRIDIS


def is_signed_scale(trace: dict) -> bool:
    return (
        trace.get("zmid") == 0
        and trace["zmin"] == -trace["zmax"]
        and trace["zmax"] > 0
        and _stops(trace["colorscale"]) == RDBU_R
    )


# ---- the policy itself ---------------------------------------------------------------------------------
def test_image_scale_is_fixed_whatever_the_values():
    for values in (np.full((4, 4), 0.78), np.linspace(0, 0.3, 9), None):
        s = sty.scale_for(sty.IMAGE, values)
        assert (s["zmin"], s["zmax"], s["colorscale"]) == (0.0, 1.0, "Viridis")
        assert "zmid" not in s


@pytest.mark.parametrize(
    "values, top",
    [(np.array([0.5, 2.0, 1.0]), 2.0), (np.array([-3.0, -1.0]), 3.0), (np.array([-1.0, 4.0]), 4.0)],
)
def test_signed_data_is_diverging_at_zero_also_with_one_sign(values, top):
    s = sty.scale_for(sty.SIGNED, values)
    assert (s["zmid"], s["zmin"], s["zmax"], s["colorscale"]) == (0.0, -top, top, "RdBu_r")


def test_signed_all_zero_or_empty_still_has_a_range():
    for values in (np.zeros(5), np.array([np.nan]), np.array([])):
        s = sty.scale_for(sty.SIGNED, values)
        assert (s["zmin"], s["zmax"], s["zmid"]) == (-1.0, 1.0, 0.0)


def test_counts_run_from_zero_and_unknown_kinds_are_refused():
    assert sty.scale_for(sty.COUNT, np.array([0, 3, 7]))["zmax"] == 7
    assert sty.scale_for(sty.COUNT, np.array([0, 0]))["zmax"] == 1
    with pytest.raises(ValueError, match="colour kind 'grey'"):
        sty.scale_for("grey", np.ones(2))


def test_output_kind_follows_the_weights_not_the_values():
    image = np.random.default_rng(0).random((5, 5))
    assert sty.output_kind(np.ones((3, 3)) / 9, image) == sty.IMAGE
    # a Sobel output that happens to be all positive is still signed data
    sobel = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], float)
    assert sty.output_kind(sobel, np.abs(image) + 0.1) == sty.SIGNED
    assert sty.output_kind(np.ones((3, 3)), image * 9) == sty.COUNT  # unnormalised sums above 1


def test_hover_outline_colour_differs_from_every_outline_colour():
    outlines = {sty.HIGHLIGHT, sty.SECOND, sty.READER, viz.MIRROR}
    for look in (sty.NORMAL, sty.PRESENTATION):
        hover = look.outline_style()
        assert hover["color"] not in outlines
        assert hover["color"].lower() == "#ff00ff"


# ---- on built figures ------------------------------------------------------------------------------------
def test_a_uniform_region_has_one_colour_in_every_direct_figure():
    """Pixel values sit on one fixed [0, 1] scale in the close-up and the sliding window, so 0.78
    has the same colour in both (before, each figure scaled to its own maximum)."""
    at = open_page(
        "pages/direct.py", state=dict(cap=32, direct_preset="box blur", direct_pick=Cell("out", 5, 5))
    )
    figs = {
        c.proto.id.split("-", 2)[-1].removeprefix("chart_").removeprefix("fig_"): json.loads(c.proto.spec)
        for c in at.get("plotly_chart")
    }
    zoom, window = figs["direct_zoom"], figs["direct_window"]
    assert is_image_scale(zoom["data"][0])
    assert is_image_scale(window["data"][0])  # the input side of the sliding window
    assert is_image_scale(window["data"][2])  # a box blur's output stays an image
    assert is_signed_scale(figs["direct_kernel"]["data"][0])  # a filter, though every weight is positive


def test_edge_filter_outputs_are_signed_and_per_channel_filtering_is_said():
    at = open_page(
        "pages/direct.py", state=dict(cap=32, direct_preset="Sobel x", direct_pick=Cell("out", 5, 5))
    )
    figs = {
        c.proto.id.split("-", 2)[-1].removeprefix("chart_").removeprefix("fig_"): json.loads(c.proto.spec)
        for c in at.get("plotly_chart")
    }
    assert is_signed_scale(figs["direct_window"]["data"][2])
    title = figs["conv_output"]["layout"]["title"]["text"]
    assert "each colour channel filtered on its own" in title
    assert at.session_state["image"].planes.shape[0] == 3
    # no figure outline uses the hover colour
    for name, fig in figs.items():
        for shape in fig["layout"].get("shapes", []):
            assert shape.get("line", {}).get("color", "").lower() != "#ff00ff", name


def test_one_signed_gradient_keeps_the_diverging_palette():
    dy = np.linspace(0.1, 2.0, 12).reshape(3, 4)  # every value positive
    counts = np.array([[0.0, 1, 2], [1, 4, 2]])
    fig = conv_backward.panels_figure(
        [
            conv_backward.Panel(dy, "dY 4 x 3", "dY", "ow", "oh"),
            conv_backward.Panel(counts, "count", "count", "x", "y", kind=sty.COUNT),
            conv_backward.Panel(np.full((2, 2), 0.78), "x", "x", "x", "y", kind=sty.IMAGE),
        ],
        "t",
    ).to_dict()
    heatmaps = [t for t in fig["data"] if t["type"] == "heatmap"]
    assert is_signed_scale(heatmaps[0]) and heatmaps[0]["zmax"] == pytest.approx(2.0)
    assert heatmaps[1]["zmin"] == 0 and heatmaps[1]["zmax"] == 4 and "zmid" not in heatmaps[1]
    assert is_image_scale(heatmaps[2])
    assert conv_backward.input_kind(np.full((2, 2), 0.78)) == sty.IMAGE
    assert conv_backward.input_kind(np.array([[0.0, 4.0]])) == sty.COUNT
