"""The Channels page through AppTest: a picked output lights its filter row and the input channels of
its group, a picked input channel its column and its group's outputs (independent group arithmetic);
groups that do not divide both channel counts are moved to one that does."""

from __future__ import annotations

import json

import pytest

from tests.support.apptest import AppTest, open_page

PAGE = "pages/channels.py"
HIGHLIGHT, READER = "#ff7f0e", "#d62728"

pytestmark = pytest.mark.usefixtures("numpy_backend")


def app(query: dict[str, str]) -> AppTest:
    return open_page(PAGE, query)


def boxes(at: AppTest, colour: str) -> set[tuple[str, float, float]]:
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    return {
        (s["xref"], s["y0"] + 0.5, s["x0"] + 0.5)
        for s in spec["layout"].get("shapes", [])
        if s.get("line", {}).get("color") == colour
    }


def test_picked_output_lights_its_group():
    """6 inputs, 9 filters, 3 groups: filter 5 is in group 5 // 3 = 1, which sees inputs 2 and 3."""
    at = app({"channels_in": "6", "channels_out": "9", "channels_groups": "3", "channels_pick": "out:5,0"})
    assert boxes(at, HIGHLIGHT) == {("x3", 5.0, 0.0)}
    assert boxes(at, READER) == {("x2", 5.0, 2.0), ("x2", 5.0, 3.0), ("x", 0.0, 2.0), ("x", 0.0, 3.0)}
    assert "sums 2 x 5 x 5 = 50 products" in " ".join(m.value for m in at.markdown)


def test_picked_input_lights_its_readers():
    """4 inputs, 8 filters, 2 groups: input 1 is in group 0, read by filters 0-3."""
    at = app({"channels_in": "4", "channels_out": "8", "channels_groups": "2", "channels_pick": "in:0,1"})
    assert boxes(at, HIGHLIGHT) == {("x", 0.0, 1.0)}
    expected = {("x2", float(m), 1.0) for m in range(4)} | {("x3", float(m), 0.0) for m in range(4)}
    assert boxes(at, READER) == expected


def test_groups_that_do_not_divide_are_moved():
    at = app(
        {"channels_in": "6", "channels_out": "4", "channels_groups": "3"}
    )  # 3 does not divide 4: 2 does both
    assert at.session_state["channels_groups"] == 2
    assert (
        "weight (4, 3, 5, 5)" in json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]["title"]["text"]
    )


def test_the_3d_view_draws_every_slab_and_the_picked_filter():
    at = app({"channels_in": "6", "channels_out": "8", "channels_groups": "2", "channels_pick": "out:5,0"})
    at.toggle(key="channels_3d").set_value(True).run()
    spec = json.loads(at.get("plotly_chart")[1].proto.spec)
    names = [t["name"] for t in spec["data"]]
    assert len(names) == 6 + 1 + 8 and "filter 5: 3 x 5 x 5" in names
    orange = [t["name"] for t in spec["data"] if t["color"] == HIGHLIGHT]
    assert orange == ["filter 5: 3 x 5 x 5", "output map 5"]
    lit = [t["name"] for t in spec["data"] if t["name"].startswith("input") and t["opacity"] > 0.5]
    assert lit == ["input channel 3", "input channel 4", "input channel 5"]  # group 1
